"""GET /metrics: Prometheus figures for operators (docs/operations.md#metrics).

- ``RequestMetricsMiddleware``, first in MIDDLEWARE, times every request
  Django answers, by the route's URL pattern (``v1/projects/<project:
  project_id>/memory``, never the path, which holds project ids and seqs),
  method and status class; so the number of series is bounded by the
  routes, whatever clients send.
- memory.metrics counts appended entries and reads the state of the record
  (mirror lag, checkpoint age, quota use) when scraped.

Who may read them: the admin token (``Authorization: Bearer``, over HTTPS in
production) or a client address in GEDWEB_METRICS_ALLOW, by REMOTE_ADDR
alone (X-Forwarded-For can be sent by anyone). Anyone else gets the site's
own 404 page, the answer of a path that does not exist: the route is
outside /v1, so the API's JSON error shape does not apply, and a 401 would
tell a scanner that there is something to guess a token for.

Under gunicorn the workers are separate processes, each counting its own
requests: prometheus_client's multiprocess mode has each write its values
to files in PROMETHEUS_MULTIPROC_DIR (gunicorn.conf.py sets it, in the data
directory, and empties it at start), and a scrape adds up every worker's
files, so the figures do not depend on which worker answers it. Without
that variable (tests, manage.py, runserver) there is one process and the
values are read from memory: the same metrics, registered on the scrape's
registry directly.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.views.decorators.csrf import csrf_exempt
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector

from memory import metrics as memory_metrics
from memory.api.authentication import admin_token_matches, bearer_token

logger = logging.getLogger("gedweb.metrics")

# From a couple of milliseconds (a read, an append) to a slow verify.
LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
REQUEST_DURATION = Histogram(
    "gedweb_http_request_duration_seconds",
    "Time from the first middleware to the response, by URL pattern, method and status class",
    ["route", "method", "status"],
    buckets=LATENCY_BUCKETS,
    registry=None,
)
# A request no URL pattern matched (an unknown page, a static file, one
# refused before routing): one label value, whatever its path.
UNMATCHED = "(unmatched)"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestMetricsMiddleware:
    """Times each request into REQUEST_DURATION (a streamed body's sending is not included)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        elapsed = time.perf_counter() - started
        match = request.resolver_match
        method = request.method if request.method in METHODS else "other"
        try:
            REQUEST_DURATION.labels(
                route=match.route if match is not None else UNMATCHED,
                method=method,
                status=f"{response.status_code // 100}xx",
            ).observe(elapsed)
        except OSError:
            # The multiprocess directory is gone or full: the request was
            # answered, and a missing figure must not fail it.
            logger.warning("request metrics not recorded", exc_info=True)
        return response


@functools.cache
def _networks(
    allowed: tuple[str, ...],
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    # Validated at start (gedweb/settings.py); parsed once per list.
    return tuple(ipaddress.ip_network(value) for value in allowed)


def client_allowed(remote_addr: str) -> bool:
    """Whether REMOTE_ADDR is in GEDWEB_METRICS_ALLOW (an IPv4-mapped IPv6 address as IPv4)."""
    if not settings.METRICS_ALLOW:
        return False
    try:
        address = ipaddress.ip_address(remote_addr)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in network for network in _networks(tuple(settings.METRICS_ALLOW)))


def scrape_allowed(request: HttpRequest) -> bool:
    if client_allowed(request.META.get("REMOTE_ADDR", "")):
        return True
    raw = bearer_token(request.META.get("HTTP_AUTHORIZATION", ""))
    if raw is None:
        return False
    if settings.PRODUCTION and not request.is_secure():
        # /metrics is exempt from the HTTPS redirect for the allow-list's
        # scrapers on the app server's network; the admin token, which
        # can also create projects, is never taken over plain HTTP.
        return False
    return admin_token_matches(raw)


def scrape_registry() -> CollectorRegistry:
    """A registry for one scrape: every worker's values, then the state of the record.

    In multiprocess mode the values are read from every worker's files, so
    the scraped worker's own metric objects must not be registered as
    well; the state collector, computed now, is registered on this
    registry because it writes no files.
    """
    registry = CollectorRegistry()
    if settings.METRICS_MULTIPROCESS_DIR is not None:
        # prometheus_client types its metrics but not this constructor.
        MultiProcessCollector(  # type: ignore[no-untyped-call]
            registry, path=str(settings.METRICS_MULTIPROCESS_DIR)
        )
    else:
        registry.register(REQUEST_DURATION)
        registry.register(memory_metrics.APPENDS)
    registry.register(memory_metrics.MemoryStateCollector())
    return registry


# A stranger's POST would otherwise meet the CSRF check's 403, which only a
# route that exists gives; the view never changes anything.
@csrf_exempt
def metrics_view(request: HttpRequest) -> HttpResponse:
    """GET /metrics in Prometheus' text format; anyone not allowed gets the site's 404."""
    # Access before the method: a POST from a stranger must not learn, from
    # a 405, that the route exists.
    if not scrape_allowed(request):
        raise Http404
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD"])
    return HttpResponse(
        generate_latest(scrape_registry()),
        content_type=CONTENT_TYPE_PLAIN_0_0_4,
        headers={"Cache-Control": "no-store"},
    )
