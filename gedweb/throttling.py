"""Per-token request rates for the API, shared by every worker and app server.

Two limits, both per bearer token (settings.GEDWEB_RATE_LIMITS): every
request, and the writing ones (POST, PUT, PATCH, DELETE). Each is a fixed
window: the first request of a window starts its count, and a request past
the limit is refused with 429 ``rate_limited`` and ``Retry-After`` (the
seconds until the window ends) without running the view or reading its body.

DRF's SimpleRateThrottle keeps the time of every request of the window in
one cache value, read and rewritten whole on each request: a read-modify-
write that concurrent workers race on, costing more the higher the rate. A
fixed window needs one atomic counter:

- with REDIS_URL, Redis INCR through Django's Redis cache (``rate_limits``);
- otherwise the database every app server already shares: one upsert on
  memory.RateCounter, exact under concurrency on SQLite and PostgreSQL.

Fixed windows let a client spend one window's allowance at its end and the
next at the start of the next: twice the rate over a short span, never more.

Requests without a valid token never get here: DRF authenticates and checks
permissions first (401 and 403 come before any counting), and the pages and
the admin use sessions, whose password guessing django-axes throttles.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextlib import nullcontext as _no_transaction
from typing import Protocol, cast

from django.conf import settings
from django.core.cache import caches
from django.db import connection, transaction
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from gedweb.exceptions import RateLimited
from gedweb.lib.rates import Rate

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# One statement on both engines (SQLite >= 3.35, PostgreSQL >= 9.5) counts
# every limit of a request: the counts after it, whoever else counted at the
# same moment. One row of VALUES per limit, in key order.
_UPSERT = (
    "INSERT INTO gedweb_rate_counter (counter_key, hits, expires_at) VALUES {rows} "
    "ON CONFLICT (counter_key) DO UPDATE SET hits = gedweb_rate_counter.hits + 1 "
    "RETURNING counter_key, hits"
)
_DELETE_EXPIRED = "DELETE FROM gedweb_rate_counter WHERE expires_at <= %s"


# The last window whose expired rows this process deleted, per window length:
# each process clears the table once per window, not once per request.
_cleared_until: dict[int, int] = {}


def _count_in_redis(key: str, window_end: int, now: int) -> int:
    cache = caches["rate_limits"]
    ttl = window_end - now + 1
    try:
        hits = cache.incr(key)
    except ValueError:  # the window's first request (or the key just expired)
        if cache.add(key, 1, timeout=ttl):
            return 1
        hits = cache.incr(key)
    if hits == 1:
        # Django checks that the key exists before INCR; if it expired in
        # between, INCR created it again without a timeout. Give it one.
        cache.touch(key, timeout=ttl)
    return int(hits)


def _window(key: str, rate: Rate, now: float) -> tuple[str, int, int]:
    """(the key of the window holding ``now``, its index, the Unix time it ends)."""
    window = int(now) // rate.seconds
    return f"{key}:{rate.seconds}:{window}", window, (window + 1) * rate.seconds


def count_requests(limits: list[tuple[str, Rate]], now: float) -> list[tuple[int, int]]:
    """Count one request against each (key, rate), in the window holding ``now``.

    Returns, per limit in the order given, (hits in this window including
    this one, Unix time the window ends).
    """
    windows = [_window(key, rate, now) for key, rate in limits]
    if settings.REDIS_URL:
        return [(_count_in_redis(key, end, int(now)), end) for key, _, end in windows]
    ordered = sorted(windows)
    rows = ", ".join(["(%s, 1, %s)"] * len(ordered))
    params = [value for key, _, end in ordered for value in (key, end)]
    # On SQLite through the writer queue (gedweb/db/sqlite3), like every
    # write; on PostgreSQL one statement is its own transaction.
    with _counter_durability(), \
            transaction.atomic() if connection.vendor == "sqlite" else _no_transaction():
        with connection.cursor() as cursor:
            cursor.execute(_UPSERT.format(rows=rows), params)
            hits = dict(cursor.fetchall())
            for (_, rate), (_, window, end) in zip(limits, windows, strict=True):
                if _cleared_until.get(rate.seconds, 0) < end:
                    cursor.execute(_DELETE_EXPIRED, [window * rate.seconds])
                    _cleared_until[rate.seconds] = end
    return [(int(hits[key]), end) for key, _, end in windows]


@contextmanager
def _counter_durability() -> Iterator[None]:
    """On SQLite, commit the counters without waiting for the disk.

    A count is worth less than its fsync: every write of the database queues
    for its one writer lock (gedweb/db/sqlite3), and with synchronous=FULL a
    request held it for two fsyncs, its count's and its entry's. With
    synchronous=NORMAL for this one transaction, WAL mode still keeps the
    database consistent (SQLite's documented guarantee); a power loss can
    forget the newest counts, which only lets a client send a few requests
    more in one window. The next FULL commit syncs these frames too. The
    connection's own setting is put back, whatever happens. Inside a
    transaction someone else opened (SQLite refuses the change there), the
    count commits with it, as that transaction's setting says.
    """
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA synchronous")
        (level,) = cursor.fetchone()
        cursor.execute("PRAGMA synchronous=NORMAL")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA synchronous={int(level)}")


def count_request(key: str, rate: Rate, now: float) -> tuple[int, int]:
    """count_requests() for one limit."""
    return count_requests([(key, rate)], now)[0]


class _RatedPrincipal(Protocol):
    rate_key: str


class TokenRateThrottle(BaseThrottle):
    """DRF throttle for both limits.

    A refusal raises RateLimited itself, rather than returning False for
    DRF's generic Throttled, so the 429 can say which limit was reached.
    """

    def allow_request(self, request: Request, view: object) -> bool:
        # The API's authentication sets a principal with a rate key, or None on open views.
        principal = cast("_RatedPrincipal | None", request.user)
        if principal is None:  # a view open to everyone: /healthz, the schema
            return True
        who = principal.rate_key
        limits = settings.GEDWEB_RATE_LIMITS
        checks = [("requests", limits["requests"])]
        if request.method in WRITE_METHODS:
            checks.append(("writes", limits["writes"]))
        active = [(scope, rate) for scope, rate in checks if rate is not None]
        if not active:
            return True
        now = time.time()
        counted = count_requests([(f"{scope}:{who}", rate) for scope, rate in active], now)
        for (scope, rate), (hits, window_end) in zip(active, counted, strict=True):
            if hits > rate.requests:
                wait = max(1, math.ceil(window_end - now))
                raise RateLimited(wait, rate.describe(scope))
        return True
