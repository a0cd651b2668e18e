"""Per-token request rates for the API, shared by every worker and app server.

Two limits, both per bearer token (settings.GEDWEB_RATE_LIMITS): every
request, and the writing ones (POST, PUT, PATCH, DELETE). Each is a fixed
window: the first request of a window starts its count, and a request past
the limit is refused with 429 ``rate_limited`` and ``Retry-After`` (the
seconds until the window ends) without running the view or reading its body.

DRF's SimpleRateThrottle keeps the time of every request of the window in
one cache value, read and rewritten whole on each request: a read-modify-
write that concurrent workers race on, costing more the higher the rate. A
fixed window needs one atomic counter, kept where every app server of the
installation sees it:

- with REDIS_URL, Redis INCR through Django's Redis cache (``rate_limits``);
- on PostgreSQL, one upsert on memory.RateCounter, an UNLOGGED table (memory
  0017): a count is not worth a WAL flush, and a crash only forgets counts;
- on SQLite, one upsert in a SQLite file of its own beside the database
  (``<database>-rates``, counter_file_path()). SQLite has one writer lock
  per file: counted in the main database, every request, reads included,
  queued for that lock behind the appends (docs/performance.md). The file
  commits without fsync (WAL, synchronous=NORMAL): a power loss can forget
  the newest counts, which only lets a client send a few requests more in
  one window. Deleting the file (with the server stopped) resets every count.

Every app server of one SQLite installation runs on the machine that holds
its database file, so the file beside it is shared by all of them.

Fixed windows let a client spend one window's allowance at its end and the
next at the start of the next: twice the rate over a short span, never more.

Requests without a valid token never get here: DRF authenticates and checks
permissions first (401 and 403 come before any counting), and the pages and
the admin use sessions, whose password guessing django-axes throttles.
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol, cast

from django.conf import settings
from django.core.cache import caches
from django.db import connection
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from gedweb.db.sqlite3.base import make_database_private
from gedweb.exceptions import RateLimited
from gedweb.lib.rates import Rate

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# One statement on both engines (SQLite >= 3.35, PostgreSQL >= 9.5) counts
# every limit of a request: the counts after it, whoever else counted at the
# same moment. One row of VALUES per limit, in key order. {p} is the
# driver's placeholder: %s through Django, ? for the counter file.
_UPSERT = (
    "INSERT INTO {table} (counter_key, hits, expires_at) VALUES {rows} "
    "ON CONFLICT (counter_key) DO UPDATE SET hits = {table}.hits + 1 "
    "RETURNING counter_key, hits"
)
_DELETE_EXPIRED = "DELETE FROM {table} WHERE expires_at <= {p}"
COUNTER_TABLE = "gedweb_rate_counter"
# The counter file's schema: memory.RateCounter's columns.
_COUNTER_FILE_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {COUNTER_TABLE} (counter_key TEXT PRIMARY KEY NOT NULL, "
    "hits INTEGER NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID",
    f"CREATE INDEX IF NOT EXISTS {COUNTER_TABLE}_expires_at ON {COUNTER_TABLE} (expires_at)",
)
COUNTER_FILE_SUFFIX = "-rates"


# The last window whose expired rows this process deleted, per store and
# window length: each process clears a store once per window, not once per request.
_cleared_until: dict[tuple[str, int], int] = {}
_thread = threading.local()


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


IN_MEMORY = ":memory:"


def counter_file_path() -> str | None:
    """Where a SQLite installation keeps its counts; None on PostgreSQL.

    ``<database>-rates`` beside the database file (and its -wal and -shm).
    An in-memory database has no file beside it: its counts are kept in
    memory (IN_MEMORY), shared by the process's threads.
    """
    if connection.vendor != "sqlite":
        return None
    name = str(connection.settings_dict["NAME"])
    if name == ":memory:" or "mode=memory" in name:  # as Django's SQLite backend tells
        return IN_MEMORY
    return name + COUNTER_FILE_SUFFIX


def _open_counters(path: str, *, shared: bool) -> sqlite3.Connection:
    if path != IN_MEMORY:
        make_database_private(path)  # 0600 before SQLite writes anything to it
    counters = sqlite3.connect(
        path, isolation_level=None, check_same_thread=not shared,
        timeout=float(connection.settings_dict["OPTIONS"].get("timeout", 5)))
    try:
        counters.execute("PRAGMA journal_mode=WAL")
        counters.execute("PRAGMA synchronous=NORMAL")
        for statement in _COUNTER_FILE_SCHEMA:
            counters.execute(statement)
    except BaseException:
        counters.close()
        raise
    return counters


def _counter_file(path: str) -> sqlite3.Connection:
    """This thread's connection to the counter file, opened (and the file made) once."""
    opened: tuple[tuple[int, str], sqlite3.Connection] | None = getattr(_thread, "counters", None)
    if opened is not None and opened[0] == (os.getpid(), path):
        return opened[1]
    if opened is not None:
        opened[1].close()
    counters = _open_counters(path, shared=False)
    _thread.counters = ((os.getpid(), path), counters)
    return counters


# An in-memory database's counts: one connection of the process, used by one
# thread at a time. (SQLite's shared-cache memory databases lock whole
# tables and refuse a concurrent writer at once, with no busy timeout.)
_in_memory: tuple[int, sqlite3.Connection] | None = None
_in_memory_guard = threading.Lock()


@contextmanager
def _counters(path: str) -> Iterator[sqlite3.Connection]:
    global _in_memory
    if path != IN_MEMORY:
        yield _counter_file(path)
        return
    with _in_memory_guard:
        if _in_memory is None or _in_memory[0] != os.getpid():
            _in_memory = (os.getpid(), _open_counters(IN_MEMORY, shared=True))
        yield _in_memory[1]


def _run_counts(execute: Callable[[str, list[str | int]], list[tuple[str, int]]], store: str,
                placeholder: str, limits: list[tuple[str, Rate]],
                windows: list[tuple[str, int, int]]) -> dict[str, int]:
    """The one upsert of every limit, then, once per window, the expired rows' deletion."""
    ordered = sorted(windows)
    rows = ", ".join([f"({placeholder}, 1, {placeholder})"] * len(ordered))
    params: list[str | int] = [value for key, _, end in ordered for value in (key, end)]
    hits = dict(execute(_UPSERT.format(table=COUNTER_TABLE, rows=rows), params))
    for (_, rate), (_, window, end) in zip(limits, windows, strict=True):
        if _cleared_until.get((store, rate.seconds), 0) < end:
            execute(_DELETE_EXPIRED.format(table=COUNTER_TABLE, p=placeholder),
                    [window * rate.seconds])
            _cleared_until[(store, rate.seconds)] = end
    return {key: int(count) for key, count in hits.items()}


def count_requests(limits: list[tuple[str, Rate]], now: float) -> list[tuple[int, int]]:
    """Count one request against each (key, rate), in the window holding ``now``.

    Returns, per limit in the order given, (hits in this window including
    this one, Unix time the window ends).
    """
    windows = [_window(key, rate, now) for key, rate in limits]
    if settings.REDIS_URL:
        return [(_count_in_redis(key, end, int(now)), end) for key, _, end in windows]
    path = counter_file_path()
    if path is not None:
        # Autocommit: each statement is its own transaction in the counter
        # file, never a part of the caller's in the main database.
        with _counters(path) as counters:
            hits = _run_counts(lambda sql, params: counters.execute(sql, params).fetchall(),
                               path, "?", limits, windows)
    else:
        # PostgreSQL: one statement is its own transaction (memory 0017:
        # the table is UNLOGGED, so its commit waits for no WAL flush).
        with connection.cursor() as cursor:
            def execute(sql: str, params: list[str | int]) -> list[tuple[str, int]]:
                cursor.execute(sql, params)
                return list(cursor.fetchall()) if cursor.description else []
            hits = _run_counts(execute, connection.alias, "%s", limits, windows)
    return [(hits[key], end) for key, _, end in windows]


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
