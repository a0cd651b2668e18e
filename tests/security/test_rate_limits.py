"""Per-token request rates (issue 15 §3): 429 ``rate_limited`` with ``Retry-After``.

Two limits per bearer token (gedweb/throttling.py): every request, and the
writing ones. Without REDIS_URL the counters live in the database
(memory.RateCounter) on PostgreSQL and in a file of their own beside the
database on SQLite; with it, in Redis; each test that counts runs on both. The last
tests start two real app servers of two gunicorn workers each on one
database and show that the limit holds across all four processes.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext

from gedweb import throttling
from gedweb.lib.rates import Rate
from memory import services
from memory.models import MemoryEntry, RateCounter
from tests.django_fixtures import ADMIN_TOKEN, bearer_client, run_in_threads
from tests.live_server import LiveGunicorn
from tests.redis_support import REDIS_TEST_URL, require_redis

NO_LIMITS = {"requests": None, "writes": None}


@pytest.fixture
def redis_counters(settings: Any) -> Iterator[str]:
    """The counters in Redis db 15 under a prefix of this test's own, removed after."""
    client = require_redis()
    prefix = f"gedweb-test-{uuid.uuid4().hex}"
    settings.REDIS_URL = REDIS_TEST_URL
    settings.CACHES = {
        **settings.CACHES,
        "rate_limits": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_TEST_URL,
            "KEY_PREFIX": prefix,
        },
    }
    yield "redis"
    keys = list(client.scan_iter(f"{prefix}:*"))
    if keys:
        client.delete(*keys)
    client.close()


def stored_counts() -> dict[str, tuple[int, int]]:
    """Every counter row kept without Redis, read from outside: key -> (hits, expires_at)."""
    path = throttling.counter_file_path()
    if path is None:
        return {key: (hits, expires_at) for key, hits, expires_at
                in RateCounter.objects.values_list("counter_key", "hits", "expires_at")}
    if not os.path.exists(path):
        return {}
    with closing(sqlite3.connect(path)) as counters:
        return {key: (hits, expires_at) for key, hits, expires_at in counters.execute(
            f"SELECT counter_key, hits, expires_at FROM {throttling.COUNTER_TABLE}")}


def store_count(key: str, hits: int, expires_at: int) -> None:
    """A counter row put where the counts are kept without Redis."""
    path = throttling.counter_file_path()
    if path is None:
        RateCounter.objects.create(counter_key=key, hits=hits, expires_at=expires_at)
        return
    throttling._counter_file(path).execute(  # creates the file and its table
        f"INSERT INTO {throttling.COUNTER_TABLE} VALUES (?, ?, ?)", [key, hits, expires_at])


@pytest.fixture(params=["database", "redis"])
def counters(request: pytest.FixtureRequest, settings: Any) -> str:
    """Where the counters live: the suite's database (or the file beside it), or Redis."""
    if request.param == "redis":
        return request.getfixturevalue("redis_counters")
    settings.REDIS_URL = None
    return "database"


def limits(settings: Any, requests: Rate | None = None, writes: Rate | None = None) -> None:
    settings.GEDWEB_RATE_LIMITS = {"requests": requests, "writes": writes}


def append(client: Any, project: str, content: str = "a decision") -> Any:
    return client.post(f"/v1/projects/{project}/memory",
                       {"category": "decision", "content": content}, format="json")


def assert_rate_limited(response: Any, limit: str, window: int) -> int:
    assert response.status_code == 429
    assert response["Content-Type"] == "application/json"
    retry_after = int(response["Retry-After"])
    assert 1 <= retry_after <= window
    assert response.json() == {
        "code": "rate_limited",
        "message": f"more than {limit} for this token; retry after {retry_after} s",
    }
    return retry_after


def wait_for_a_fresh_window(seconds: int, room: float) -> None:
    """Sleep past the current window if less than ``room`` seconds of it are left."""
    left = seconds - time.time() % seconds
    if left < room:
        time.sleep(left + 0.01)


# --- one process ----------------------------------------------------------------------------


def test_the_defaults_are_generous_and_named(db):
    assert django_settings.GEDWEB_RATE_LIMITS == {
        "requests": Rate(3000, 60), "writes": Rate(600, 60),
    }
    assert "gedweb.throttling.TokenRateThrottle" in (
        django_settings.REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"]
    )


def test_a_token_past_its_request_rate_gets_429_with_retry_after(alpha, settings, counters):
    limits(settings, requests=Rate(3, 3600))
    wait_for_a_fresh_window(3600, 30)
    client = bearer_client(alpha.token)

    statuses = [client.get("/v1/projects/alpha/memory").status_code for _ in range(3)]
    refused = client.get("/v1/projects/alpha/memory")

    assert statuses == [200, 200, 200]
    retry_after = assert_rate_limited(refused, "3 requests per hour", 3600)
    assert abs(time.time() + retry_after - (time.time() // 3600 + 1) * 3600) <= 2
    # Refused requests count too: a client hammering on stays refused.
    assert client.get("/v1/projects/alpha/context").status_code == 429


def test_a_window_that_ends_within_the_second_says_retry_after_1(alpha, settings, counters):
    """Retry-After is at least one second, never more than the window has left."""
    limits(settings, requests=Rate(1, 1))
    client = bearer_client(alpha.token)
    # One request per second is allowed: the second of a pair in the same second is refused.
    for _ in range(50):
        response = client.get("/v1/projects/alpha/memory")
        if response.status_code == 429:
            break
    assert response.status_code == 429
    assert response["Retry-After"] == "1"


def test_a_refused_write_stores_nothing_and_reads_go_on(alpha, settings, counters):
    limits(settings, requests=Rate(100, 3600), writes=Rate(2, 3600))
    wait_for_a_fresh_window(3600, 30)
    client = bearer_client(alpha.token)

    written = [append(client, "alpha", f"entry {i}").status_code for i in range(2)]
    refused = append(client, "alpha", "one too many")

    assert written == [201, 201]
    assert_rate_limited(refused, "2 writes per hour", 3600)
    assert list(MemoryEntry.objects.filter(project_id="alpha").values_list("content", flat=True)
                .order_by("seq")) == ["entry 0", "entry 1"]
    assert client.get("/v1/projects/alpha/memory").status_code == 200
    # Every writing method counts as a write.
    assert client.put("/v1/projects/alpha/documents/PROJECT.md", {"content": "# P\n"},
                      format="json").status_code == 429


def test_a_delete_counts_as_a_write(alpha, settings, counters):
    """DELETE .../active-work spends the write rate like a POST (issue 34 §11)."""
    limits(settings, requests=Rate(100, 3600), writes=Rate(1, 3600))
    wait_for_a_fresh_window(3600, 30)
    client = bearer_client(alpha.token)
    url = "/v1/projects/alpha/sessions/s1/active-work"

    first = client.delete(url)
    second = client.delete(url)

    assert first.status_code != 429, first.content
    assert_rate_limited(second, "1 write per hour", 3600)
    assert client.get("/v1/projects/alpha/memory").status_code == 200  # reads go on


def test_the_rate_is_checked_before_the_body_is_read(alpha, settings, counters):
    limits(settings, writes=Rate(1, 3600))
    wait_for_a_fresh_window(3600, 30)
    client = bearer_client(alpha.token)
    assert append(client, "alpha").status_code == 201

    refused = client.post("/v1/projects/alpha/memory", data=b"{not json",
                          content_type="application/json")

    assert_rate_limited(refused, "1 write per hour", 3600)


def test_each_token_counts_on_its_own(alpha, make_project, settings, counters):
    limits(settings, requests=Rate(2, 3600))
    wait_for_a_fresh_window(3600, 30)
    first = bearer_client(alpha.token)
    _, raw = services.project_token_create(project=alpha.project, name="second-agent")
    second = bearer_client(raw)
    beta = make_project("beta")
    admin = bearer_client(ADMIN_TOKEN)

    assert [first.get("/v1/projects/alpha/memory").status_code for _ in range(3)] == [
        200, 200, 429,
    ]
    assert second.get("/v1/projects/alpha/memory").status_code == 200
    assert bearer_client(beta.token).get("/v1/projects/beta/memory").status_code == 200
    assert admin.get("/v1/projects/alpha/memory").status_code == 200
    assert admin.get("/v1/projects/alpha/memory").status_code == 200
    assert admin.get("/v1/projects/alpha/memory").status_code == 429


def test_the_next_window_lets_the_token_in_again(alpha, settings, counters):
    limits(settings, requests=Rate(2, 1))
    wait_for_a_fresh_window(1, 0.5)
    client = bearer_client(alpha.token)

    before = [client.get("/v1/projects/alpha/memory").status_code for _ in range(3)]
    time.sleep(1 - time.time() % 1 + 0.01)
    after = client.get("/v1/projects/alpha/memory")

    assert before == [200, 200, 429]
    assert after.status_code == 200


def test_requests_without_a_valid_token_are_401_and_never_counted(alpha, settings):
    settings.REDIS_URL = None
    limits(settings, requests=Rate(1, 3600), writes=Rate(1, 3600))
    anonymous = bearer_client(None)
    forged = bearer_client("gwp_" + "x" * 43)

    statuses = {anonymous.get("/v1/projects/alpha/memory").status_code for _ in range(5)}
    statuses |= {append(forged, "alpha").status_code for _ in range(5)}

    assert statuses == {401}
    assert not stored_counts()


def test_off_turns_a_limit_off_and_counts_nothing(alpha, settings):
    settings.REDIS_URL = None
    settings.GEDWEB_RATE_LIMITS = NO_LIMITS
    client = bearer_client(alpha.token)

    assert {append(client, "alpha", f"e{i}").status_code for i in range(30)} == {201}
    assert not stored_counts()


def test_the_health_check_is_never_counted(db, settings):
    settings.REDIS_URL = None
    limits(settings, requests=Rate(1, 3600))
    client = bearer_client(None)

    assert {client.get("/healthz").status_code for _ in range(5)} == {200}
    assert not stored_counts()


@pytest.mark.parametrize(("method", "limited"), [("GET", 1), ("POST", 2)])
def test_counting_costs_one_statement_for_every_limit(alpha, settings, method, limited):
    settings.REDIS_URL = None
    limits(settings, requests=Rate(1000, 86400), writes=Rate(1000, 86400))
    wait_for_a_fresh_window(86400, 60)
    client = bearer_client(alpha.token)
    append(client, "alpha", "warm-up: this process's clean-up of this window")
    path = throttling.counter_file_path()
    counted: list[str] = []
    if path is not None:
        throttling._counter_file(path).set_trace_callback(counted.append)

    try:
        with CaptureQueriesContext(connection) as queries:
            if method == "GET":
                response = client.get("/v1/projects/alpha/memory")
            else:
                response = append(client, "alpha")
    finally:
        if path is not None:
            throttling._counter_file(path).set_trace_callback(None)

    assert response.status_code in (200, 201)
    in_database = [q["sql"] for q in queries if "gedweb_rate_counter" in q["sql"]]
    if path is None:
        counted = in_database
    else:
        assert in_database == []  # SQLite: none in the database (next test)
    [counting] = counted
    assert counting.startswith("INSERT INTO gedweb_rate_counter (counter_key, hits, expires_at) "
                               "VALUES ")
    assert counting.count("), (") == limited - 1
    hits = {key.split(":")[0]: count for key, (count, _) in stored_counts().items()}
    # The warm-up counted once against both; this request against its limits.
    assert hits == {"requests": 2, "writes": 1 + (method == "POST")}


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_on_sqlite_counting_never_takes_the_databases_writer_lock(live_db, alpha, settings,
                                                                   method):
    """The counts are in a file of their own: a read writes nothing to the database."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's one writer lock; PostgreSQL counts in its own table")
    settings.REDIS_URL = None
    limits(settings, requests=Rate(1000, 86400), writes=Rate(1000, 86400))
    client = bearer_client(alpha.token)
    append(client, "alpha", "warm-up")

    with CaptureQueriesContext(connection) as queries:
        response = client.get("/v1/projects/alpha/memory") if method == "GET" else append(
            client, "alpha")

    assert response.status_code in (200, 201)
    statements = [q["sql"].split()[0] for q in queries]
    # A read is reads only; an append one transaction, its own.
    assert statements.count("BEGIN") == (method == "POST")
    assert not [s for s in statements if s == "PRAGMA"]
    assert sum(hits for hits, _ in stored_counts().values()) == 3 + (method == "POST")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA synchronous")
        assert cursor.fetchone()[0] == 2  # the database's commits stay FULL


def test_on_sqlite_the_counter_file_is_private_and_commits_without_fsync(live_db, alpha,
                                                                         settings):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's counter file")
    settings.REDIS_URL = None
    limits(settings, requests=Rate(1000, 86400))
    assert bearer_client(alpha.token).get("/v1/projects/alpha/memory").status_code == 200

    path = throttling.counter_file_path()
    assert path == connection.settings_dict["NAME"] + "-rates"
    for suffix in ("", "-wal", "-shm"):
        assert stat.S_IMODE(os.stat(path + suffix).st_mode) == 0o600, suffix
    counters = throttling._counter_file(path)
    assert counters.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert counters.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL


def test_a_new_counter_file_is_private_before_sqlite_writes_to_it(tmp_path):
    """The file is made 0600 first, whatever the umask; SQLite gives its WAL files that mode.

    (The test above reaches a file the suite's first request already opened.)
    """
    path = str(tmp_path / "db.sqlite3-rates")
    with closing(throttling._open_counters(path, shared=False)) as counters:
        counters.execute(f"INSERT INTO {throttling.COUNTER_TABLE} VALUES ('k', 1, 1)")
        for suffix in ("", "-wal", "-shm"):
            assert stat.S_IMODE(os.stat(path + suffix).st_mode) == 0o600, suffix


@pytest.mark.parametrize(("options", "milliseconds"), [({"timeout": 7}, 7000), ({}, 5000)])
def test_the_counter_file_waits_for_its_lock_as_long_as_the_database(tmp_path, monkeypatch,
                                                                     options, milliseconds):
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", options)
    with closing(throttling._open_counters(str(tmp_path / "rates"), shared=False)) as counters:
        assert counters.execute("PRAGMA busy_timeout").fetchone() == (milliseconds,)


def test_a_threads_own_counter_connection_is_refused_to_other_threads(tmp_path):
    """Only the in-memory store's one connection is shared (under its lock)."""
    own = throttling._open_counters(str(tmp_path / "rates"), shared=False)
    shared = throttling._open_counters(throttling.IN_MEMORY, shared=True)
    with closing(own), closing(shared), ThreadPoolExecutor(max_workers=1) as pool:
        with pytest.raises(sqlite3.ProgrammingError, match="same thread"):
            pool.submit(own.execute, "SELECT 1").result()
        assert pool.submit(lambda: shared.execute("SELECT 1").fetchone()).result() == (1,)


def test_a_thread_that_moves_to_another_counter_file_closes_the_first(tmp_path):
    first = throttling._counter_file(str(tmp_path / "a-rates"))
    second = throttling._counter_file(str(tmp_path / "b-rates"))
    assert second is not first
    assert throttling._counter_file(str(tmp_path / "b-rates")) is second
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        first.execute("SELECT 1")
    with ThreadPoolExecutor(max_workers=1) as pool:  # the thread's own, as above
        with pytest.raises(sqlite3.ProgrammingError, match="same thread"):
            pool.submit(second.execute, "SELECT 1").result()


def test_each_counter_file_of_a_process_has_its_expired_rows_deleted(tmp_path, settings,
                                                                      monkeypatch):
    """A process that counts in two files (two databases) clears each one's windows."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's counter files")
    settings.REDIS_URL = None
    monkeypatch.setattr(throttling, "_cleared_until", {})
    now = time.time()
    for name in ("one.sqlite3", "two.sqlite3"):
        monkeypatch.setitem(connection.settings_dict, "NAME", str(tmp_path / name))
        path = throttling.counter_file_path()
        counters = throttling._counter_file(path)
        counters.execute(f"INSERT INTO {throttling.COUNTER_TABLE} VALUES ('old', 1, 60)")
        assert throttling.count_request("requests:x", Rate(10, 60), now)[0] == 1
        keys = [key for (key,) in counters.execute(
            f"SELECT counter_key FROM {throttling.COUNTER_TABLE}")]
        assert keys == [f"requests:x:60:{int(now) // 60}"], name


def test_in_memory_counters_leave_no_file_behind(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with closing(throttling._open_counters(throttling.IN_MEMORY, shared=True)) as counters:
        counters.execute(f"INSERT INTO {throttling.COUNTER_TABLE} VALUES ('k', 1, 1)")
        assert counters.execute(f"SELECT hits FROM {throttling.COUNTER_TABLE}").fetchall() == [
            (1,)]
    assert list(tmp_path.iterdir()) == []


def test_each_process_deletes_the_rows_of_windows_that_are_over(alpha, settings, monkeypatch):
    settings.REDIS_URL = None
    limits(settings, requests=Rate(10, 60))
    # The window that ended as this one began, and one that ends after this one.
    window_start = int(time.time()) // 60 * 60
    store_count("requests:token:gone:60:1", 7, window_start)
    store_count("requests:token:later:60:1", 3, window_start + 120)
    monkeypatch.setattr(throttling, "_cleared_until", {})

    assert bearer_client(alpha.token).get("/v1/projects/alpha/memory").status_code == 200

    counts = stored_counts()
    assert "requests:token:gone:60:1" not in counts
    assert counts.pop("requests:token:later:60:1") == (3, window_start + 120)
    [(key, (hits, expires_at))] = counts.items()
    assert key.startswith("requests:token:")
    assert hits == 1
    assert expires_at == (int(time.time()) // 60 + 1) * 60


def test_the_database_counter_keys_on_the_token_hash_not_its_id(alpha, settings):
    settings.REDIS_URL = None
    limits(settings, requests=Rate(10, 60))

    bearer_client(alpha.token).get("/v1/projects/alpha/memory")

    token = alpha.project.tokens.get()
    [key] = stored_counts()
    assert key.startswith(f"requests:token:{token.token_hash[:24]}:60:")


def test_with_redis_the_counters_live_in_redis_and_expire(alpha, settings, redis_counters):
    limits(settings, requests=Rate(5, 60))
    bearer_client(alpha.token).get("/v1/projects/alpha/memory")

    assert not stored_counts()
    cache = caches["rate_limits"]
    token = alpha.project.tokens.get()
    key = f"requests:token:{token.token_hash[:24]}:60:{int(time.time()) // 60}"
    assert cache.get(key) == 1
    ttl = require_redis().ttl(cache.make_key(key))
    assert 0 < ttl <= 61


def test_a_redis_count_that_incr_started_gets_the_windows_expiry(redis_counters):
    """INCR of a key that expired after Django's check makes it anew, without a TTL.

    A key holding 0 with no TTL is what that leaves: the count of 1 that
    follows gives it the window's.
    """
    cache = caches["rate_limits"]
    cache.set("requests:racy", 0, timeout=None)
    now = int(time.time())
    assert throttling._count_in_redis("requests:racy", now + 1000, now) == 1
    ttl = cache._cache.get_client(write=False).ttl(cache.make_and_validate_key("requests:racy"))
    assert 990 <= ttl <= 1001
    assert throttling._count_in_redis("requests:racy", now + 1000, now) == 2


@pytest.mark.parametrize("rate", [Rate(1, 60), Rate(7, 3600)])
def test_rates_read_back_as_written(rate):
    assert Rate.parse(str(rate)) == rate
    assert Rate.parse(" OFF ") is None


@pytest.mark.parametrize("text", ["", "5", "5/", "/minute", "0/minute", "-1/second", "1.5/hour",
                                  "5/mango", "5/fortnight", "٥/minute", "5 /minute"])
def test_a_rate_that_is_not_n_per_period_is_refused(text):
    with pytest.raises(ValueError):
        Rate.parse(text)


# --- concurrency ------------------------------------------------------------------------------


def test_concurrent_requests_are_counted_exactly(live_db, settings, counters):
    threads, each = 8, 25
    rate = Rate(10_000, 3600)
    key = f"requests:race:{uuid.uuid4().hex}"
    now = time.time()

    def count(_: int) -> list[int]:
        return [throttling.count_request(key, rate, now)[0] for _ in range(each)]

    results = run_in_threads(count, threads)

    assert not [r for r in results if isinstance(r, BaseException)], results
    seen = sorted(hit for batch in results for hit in batch)
    assert seen == list(range(1, threads * each + 1))


@pytest.mark.parametrize(("name", "memory"), [
    (":memory:", True), ("file:rates?mode=memory&cache=shared", True),
    ("/srv/db.sqlite3", False),
])
def test_an_in_memory_database_is_told_by_its_name_or_its_uri(monkeypatch, name, memory):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's in-memory database")
    monkeypatch.setitem(connection.settings_dict, "NAME", name)
    expected = throttling.IN_MEMORY if memory else name + throttling.COUNTER_FILE_SUFFIX
    assert throttling.counter_file_path() == expected


def test_an_in_memory_database_counts_in_memory_shared_by_the_threads(db, settings,
                                                                     monkeypatch):
    """No file beside an in-memory database: the process's threads share one count."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's in-memory database")
    settings.REDIS_URL = None
    monkeypatch.setitem(connection.settings_dict, "NAME", ":memory:")
    path = throttling.counter_file_path()
    assert path == throttling.IN_MEMORY
    rate, key, now = Rate(100, 3600), f"requests:memory:{uuid.uuid4().hex}", time.time()
    # Each thread reads the main thread's connection settings (Django shares them).
    counts = [throttling.count_request(key, rate, now)[0]]
    with ThreadPoolExecutor(max_workers=4) as pool:
        counts += list(pool.map(lambda _: throttling.count_request(key, rate, now)[0], range(40)))
    assert sorted(counts) == list(range(1, 42))


# --- across workers and app servers -----------------------------------------------------------


@pytest.fixture(params=["database", "redis"])
def two_app_servers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[Any]]:
    """Two gunicorn app servers (two workers each) on one database, writes limited to 20/day."""
    extra = {"GEDWEB_WRITE_RATE_LIMIT": "20/day", "GEDWEB_RATE_LIMIT": "1000/day"}
    if request.param == "redis":
        require_redis().close()
        extra["REDIS_URL"] = REDIS_TEST_URL
    with LiveGunicorn.running(tmp_path / "a", **extra) as first:
        (tmp_path / "b").mkdir()
        second = LiveGunicorn(tmp_path / "b")
        second.admin_token = first.admin_token
        second.env = {**first.env, "PORT": str(second.port)}
        try:
            second.start()
            yield [first, second]
        finally:
            second.stop()


@pytest.mark.live_server
@pytest.mark.slow
def test_the_write_rate_holds_across_workers_and_app_servers(two_app_servers):
    first, second = two_app_servers
    wait_for_a_fresh_window(86400, 120)
    status, body, _ = first.request("POST", "/v1/projects", first.admin_token,
                                    {"id": "rated", "name": "Rated"})
    assert status == 201, body
    token = body["token"]

    def send(index: int) -> tuple[int, Any, dict[str, str]]:
        server = two_app_servers[index % 2]
        return server.request("POST", "/v1/projects/rated/memory", token,
                              {"category": "decision", "content": f"entry {index}"},
                              headers={"X-Memory-Token": first.memory_token})

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(send, range(40)))

    assert Counter(status for status, _, _ in answers) == {201: 20, 429: 20}
    for status, body, headers in answers:
        if status == 429:
            assert body["code"] == "rate_limited"
            assert body["message"].startswith("more than 20 writes per day for this token")
            assert 1 <= int(headers["retry-after"]) <= 86400
    stored = sorted(int(body["content"].split()[1]) for status, body, _ in answers
                    if status == 201)
    status, listed, _ = second.request("GET", "/v1/projects/rated/memory?limit=100", token)
    assert status == 200
    assert sorted(int(item["content"].split()[1]) for item in listed["items"]) == stored
    # Reads have a limit of their own, not yet reached.
    assert first.request("GET", "/v1/projects/rated/memory", token)[0] == 200
