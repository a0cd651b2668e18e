"""Login throttling: the pieces django-axes asks the project for.

django-axes counts failed logins and refuses locked-out clients
(gedweb/settings.py, the "Logins" block; docs/security.md#logins). This
module gives it four things it cannot know by itself:

- ``client_ip_address``: the client's address, believing X-Forwarded-For only
  from the reverse proxies in ``settings.TRUSTED_PROXIES``;
- ``username``: the username to count under, kept apart from addresses;
- ``client_str``: how a login attempt is named in the log (never the password);
- ``lockout_response``: the one page a locked-out person sees, 429, the same
  for every username whether or not the account exists.

``ThrottledBackend`` refuses a locked-out login before the password is checked,
and the two handlers forget an account's failures when it logs in.
"""

from __future__ import annotations

import ipaddress
import json
import math
from datetime import timedelta
from functools import lru_cache
from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.handlers.cache import AxesCacheHandler
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_cool_off
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class ThrottledBackend(AxesStandaloneBackend):  # type: ignore[misc]  # axes is untyped
    """axes' backend, except for calls that carry no request.

    Every HTTP login (``/accounts/login/``, ``/admin/login/``) passes its
    request to ``authenticate()``. Only code inside the process calls it
    without one (the test client's ``login()``); axes would raise there, and
    there is no client to count.
    """

    def authenticate(self, request: HttpRequest | None, *args: Any, **kwargs: Any) -> None:
        if request is None:
            return None
        # axes' backend authenticates no one: it returns None, or raises when locked out.
        super().authenticate(request, *args, **kwargs)
        return None


class _ForgetTheAccountOnSuccess:
    """On a successful login, clear the account's counter, not the address's.

    axes' AXES_RESET_ON_SUCCESS also deletes every failure recorded from the
    address of the login, and in the database those rows are the failures
    against other accounts too: anyone with an account could guess 4 times
    at another one, log into their own, and guess again. Here only the
    username that logged in is forgotten; the address keeps its count until
    the cool-off.
    """

    def user_logged_in(self, sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
        super().user_logged_in(sender, request, user, **kwargs)  # type: ignore[misc]  # a mixin
        field = settings.AXES_USERNAME_FORM_FIELD  # type: ignore[misc]  # set by axes.conf
        name = username(request, {field: user.get_username()})
        self.reset_attempts(username=name)  # type: ignore[attr-defined]  # the axes handler's


class DatabaseHandler(
    _ForgetTheAccountOnSuccess, AxesDatabaseHandler,  # type: ignore[misc]  # axes is untyped
):
    """Counters in the database (without REDIS_URL)."""


class CacheHandler(_ForgetTheAccountOnSuccess, AxesCacheHandler):  # type: ignore[misc]  # untyped
    """Counters in the ``logins`` cache, Redis (with REDIS_URL)."""


def _address(text: str) -> IPAddress | None:
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


@lru_cache(maxsize=8)
def _networks(proxies: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(proxy, strict=False) for proxy in proxies)


def _trusted(address: IPAddress, networks: tuple[IPNetwork, ...]) -> bool:
    return any(address in network for network in networks)


def client_ip_address(request: HttpRequest) -> str | None:
    """REMOTE_ADDR, or the X-Forwarded-For client when REMOTE_ADDR is a trusted proxy.

    A trusted proxy appends the address it received the request from, so
    the chain is read from the right: past every trusted proxy, the first
    address is the client. Anything further left was written by the client
    and is never read. Without trusted proxies (the default) the header is
    ignored, so a client cannot choose the address it is counted under.
    """
    peer = request.META.get("REMOTE_ADDR", "")
    address = _address(peer)
    if address is None:
        return peer or None
    networks = _networks(tuple(settings.TRUSTED_PROXIES))
    if not _trusted(address, networks):
        return str(address)
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    for hop in reversed(forwarded.split(",") if forwarded.strip() else []):
        hop_address = _address(hop)
        if hop_address is None:
            # Not written by a trusted proxy: stop at the last hop that was.
            break
        address = hop_address
        if not _trusted(address, networks):
            break
    return str(address)


def username(request: HttpRequest, credentials: dict[str, Any] | None) -> str | None:
    """The username as typed, unless it reads as an IP address.

    axes' cache handler keys each counter by a hash of its value alone, so a
    username "203.0.113.7" would share the counter of the address 203.0.113.7,
    and anyone could lock that address out by guessing as that "user". No
    Django username contains a space, so the suffix cannot meet a real one.
    """
    field = settings.AXES_USERNAME_FORM_FIELD  # type: ignore[misc]  # set by axes.conf
    if credentials:
        value = credentials.get(field)
    else:
        value = getattr(request, "data", request.POST).get(field)
    if isinstance(value, str) and _address(value) is not None:
        return f"{value} (username)"
    return value


def client_str(
    username: str | None, ip_address: str | None, user_agent: str, path_info: Any,
    request: HttpRequest,
) -> str:
    """The client in a log line: username, address, user agent and path, JSON-quoted.

    Quoting keeps a newline typed into the username from starting a forged
    log line. The password is not among the arguments axes passes.
    """
    if isinstance(path_info, (tuple, list)):
        path_info = path_info[0] if path_info else ""
    fields = {
        "username": username,
        "ip_address": ip_address,
        "user_agent": user_agent,
        "path_info": path_info,
    }
    return "{" + ", ".join(f"{key}: {json.dumps(value)}" for key, value in fields.items()) + "}"


def lockout_response(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict[str, Any] | None = None,
) -> HttpResponse:
    """The lockout page (429) with the time from which a login is accepted again.

    Every refused attempt restarts the cool-off
    (AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT), so "now plus the
    cool-off" is when every counter that locked this attempt has expired.
    The page names no username and does not depend on whether the account
    exists, so it tells a guesser nothing about accounts.
    """
    cool_off = get_cool_off(request) or timedelta(0)
    minutes = max(1, math.ceil(cool_off.total_seconds() / 60))
    # Shown to the minute, rounded up: never earlier than the lock ends.
    expires = timezone.now() + cool_off
    retry_at = expires.replace(second=0, microsecond=0)
    if retry_at < expires:
        retry_at += timedelta(minutes=1)
    response = TemplateResponse(
        request,
        "registration/lockout.html",
        {"minutes": minutes, "retry_at": retry_at},
        status=settings.AXES_HTTP_RESPONSE_CODE,  # type: ignore[misc]  # set by axes.conf
    )
    response["Retry-After"] = str(minutes * 60)
    return response.render()
