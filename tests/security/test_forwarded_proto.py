"""X-Forwarded-Proto counts only from a proxy the operator names (GEDWEB_TRUSTED_PROXIES).

Production redirects plain HTTP to HTTPS. A client talking to gunicorn
directly must not be able to make a plain request look secure by sending the
header itself; behind a named proxy, the proxy's header is what tells
gunicorn (and so Django's request.is_secure()) that TLS ended there.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.live_server import LiveGunicorn

pytestmark = [pytest.mark.live_server]

HTTPS = {"X-Forwarded-Proto": "https"}
# An API path: redirected before authentication, answered in JSON after it.
PATH = "/v1/projects"


def production(**extra: str) -> dict[str, str]:
    return {"GEDWEB_PRODUCTION": "true", "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
            "GEDWEB_SIGNING_KEY": secrets.token_urlsafe(64),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1", **extra}


@pytest.fixture(scope="module")
def untrusting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGunicorn]:
    with LiveGunicorn.running(tmp_path_factory.mktemp("proto"), **production()) as server:
        yield server


def test_a_client_cannot_make_a_plain_request_look_secure(untrusting: LiveGunicorn) -> None:
    status, _, headers = untrusting.request("GET", PATH, headers=HTTPS)
    assert status == 301
    assert headers["location"] == f"https://127.0.0.1:{untrusting.port}{PATH}"


def test_without_the_header_plain_http_is_redirected_too(untrusting: LiveGunicorn) -> None:
    status, _, headers = untrusting.request("GET", PATH)
    assert (status, headers["location"].startswith("https://")) == (301, True)


def test_the_named_proxy_is_believed(tmp_path: Path) -> None:
    with LiveGunicorn.running(tmp_path, **production(GEDWEB_TRUSTED_PROXIES="127.0.0.1")) as live:
        status, body, headers = live.request("GET", PATH, headers=HTTPS)
        assert (status, body["code"]) == (401, "unauthenticated"), (status, live.log_tail())
        assert headers["strict-transport-security"].startswith("max-age=")  # served as HTTPS
        plain, _, _ = live.request("GET", PATH)
        assert plain == 301  # the proxy's own plain request is still redirected


def test_a_malformed_proxy_list_stops_the_start(tmp_path: Path) -> None:
    server = LiveGunicorn(tmp_path, GEDWEB_TRUSTED_PROXIES="not-an-address")
    done = server.manage("check")
    assert done.returncode != 0
    assert "GEDWEB_TRUSTED_PROXIES must list IP addresses or networks" in done.stderr
