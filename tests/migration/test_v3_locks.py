"""The v3 migration lock (gedpi-behaviour.md §6.2, scenarios 64-65, gap G-10).

Lock files keep GedPi's format so GedPi and GedWeb processes can share a
checkout. GedWeb adds a flock-held ``<token>.flock`` sidecar (ignored by
GedPi's ``^[a-f0-9-]{36}\\.json$`` pattern) and waits for a live holder
instead of failing after 2.5 s.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings

from gedweb.checkout import v3
from gedweb.checkout.v3 import lock as v3_lock
from tests.checkout.trees import REAL_GLOSSARY, pretty, scenario_tree, snapshot, write_tree

DEAD_PID = 2147483647
TOKEN = "00000000-0000-4000-8000-000000000000"


def lock_bytes(pid: int, token: str = TOKEN) -> str:
    return pretty({"schemaVersion": 1, "pid": pid, "token": token,
                   "startedAt": "2026-01-01T00:00:00.000Z"})


def place_lock(root: Path, pid: int, token: str = TOKEN, *, sidecar: bool = False) -> Path:
    path = root / v3.LOCKS_DIR / f"{token}.json"
    write_tree(root, {f"{v3.LOCKS_DIR}/{token}.json": lock_bytes(pid, token)})
    if sidecar:
        write_tree(root, {f"{v3.LOCKS_DIR}/{token}.flock": b""})
    old = time.time() - 3600  # older than any new lock, so it sorts first
    os.utime(path, (old, old))
    return path


def locks_left(root: Path) -> list[str]:
    directory = root / v3.LOCKS_DIR
    return sorted(os.listdir(directory)) if directory.exists() else []


def test_scenario_65_a_dead_pid_lock_is_quarantined_and_the_migration_completes(tmp_path):
    scenario_tree(tmp_path)
    place_lock(tmp_path, DEAD_PID)
    result = v3.migrate_v3(tmp_path)
    assert result.status == "completed"
    stale = tmp_path / v3.RUNTIME / f"STALE-{TOKEN}.json"
    assert stale.read_text() == lock_bytes(DEAD_PID)
    assert locks_left(tmp_path) == []


@pytest.fixture
def live_process():
    proc = subprocess.Popen(["sleep", "60"])
    yield proc.pid
    proc.kill()
    proc.wait()


def test_a_live_gedpi_lock_makes_a_second_caller_wait_then_fail_with_gedpis_message(
    tmp_path, live_process
):
    scenario_tree(tmp_path)
    place_lock(tmp_path, live_process)  # a GedPi-style lock (no sidecar) of another process
    before = snapshot(tmp_path)
    started = time.monotonic()
    with pytest.raises(v3.MigrationError, match=(
        r"^Ged durable-memory migration is already running or needs manual recovery\. "
        rf"Lock {TOKEN} is held by pid {live_process} since 2026-01-01T00:00:00.000Z\.$"
    )):
        v3.migrate_v3(tmp_path, wait_seconds=0.3)
    assert time.monotonic() - started >= 0.3  # it waited; a hang fails on the suite's timeout
    assert snapshot(tmp_path) == before  # only our own lock came and went
    assert locks_left(tmp_path) == [f"{TOKEN}.json"]


def test_a_waiting_caller_proceeds_once_the_live_holder_releases(tmp_path):
    scenario_tree(tmp_path)
    held = place_lock(tmp_path, os.getpid())
    timer = threading.Timer(0.4, held.unlink)
    timer.start()
    try:
        result = v3.migrate_v3(tmp_path, wait_seconds=10)
    finally:
        timer.join()
    assert result.status == "completed"
    assert locks_left(tmp_path) == []
    assert not (tmp_path / v3.RUNTIME / f"STALE-{TOKEN}.json").exists()


def test_a_holder_that_completes_and_releases_between_two_looks_leaves_us_already_complete(
    tmp_path, monkeypatch
):
    # The waiter reads "no completion record", then the holder writes it and
    # releases its lock, then the waiter lists the locks and finds itself
    # first: it must not run the migration again on a completed checkout.
    done = tmp_path / "done"
    scenario_tree(done)
    assert v3.migrate_v3(done).status == "completed"
    record = (done / v3.STATE_PATH).read_bytes()
    root = tmp_path / "checkout"
    scenario_tree(root)
    before = snapshot(root)
    held = place_lock(root, os.getpid(), sidecar=True)
    fd = os.open(root / v3.LOCKS_DIR / f"{TOKEN}.flock", os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    real_candidates = v3_lock.read_lock_candidates
    looks: list[int] = []

    def holder_completes_then_candidates(where: Path):
        if not looks:
            (root / v3.STATE_PATH).write_bytes(record)  # the holder completes...
            held.unlink()  # ...and releases
            (root / v3.LOCKS_DIR / f"{TOKEN}.flock").unlink()
            os.close(fd)
        looks.append(1)
        return real_candidates(where)

    monkeypatch.setattr(v3_lock, "read_lock_candidates", holder_completes_then_candidates)
    result = v3.migrate_v3(root, wait_seconds=5)

    assert result.status == "already-complete"
    assert result.entries == json.loads(record)["entries"]
    assert snapshot(root) == {**before, v3.STATE_PATH: record}  # we migrated nothing
    assert locks_left(root) == []


def test_a_gedweb_lock_whose_flock_is_free_is_stale_even_if_its_pid_is_alive(tmp_path):
    # PID reuse: the pid names a live process (this one) but nobody holds the flock.
    scenario_tree(tmp_path)
    place_lock(tmp_path, os.getpid(), sidecar=True)
    assert v3.migrate_v3(tmp_path, wait_seconds=0.5).status == "completed"
    assert (tmp_path / v3.RUNTIME / f"STALE-{TOKEN}.json").exists()
    assert locks_left(tmp_path) == []


def test_a_gedweb_lock_whose_flock_is_held_is_live_even_if_its_pid_is_gone(tmp_path):
    scenario_tree(tmp_path)
    place_lock(tmp_path, DEAD_PID, sidecar=True)
    fd = os.open(tmp_path / v3.LOCKS_DIR / f"{TOKEN}.flock", os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(v3.MigrationError, match="already running"):
            v3.migrate_v3(tmp_path, wait_seconds=0.2)
    finally:
        os.close(fd)
    assert v3.migrate_v3(tmp_path, wait_seconds=0.2).status == "completed"


def test_a_malformed_lock_aborts_and_our_lock_is_released(tmp_path):
    scenario_tree(tmp_path)
    write_tree(tmp_path, {f"{v3.LOCKS_DIR}/{TOKEN}.json": '{"schemaVersion": 1, "pid": 0}\n'})
    with pytest.raises(v3.MigrationError, match="Ged durable-memory migration lock is invalid."):
        v3.migrate_v3(tmp_path)
    assert locks_left(tmp_path) == [f"{TOKEN}.json"]
    assert not (tmp_path / "CONTEXT.md").exists()


def test_a_lock_named_for_another_token_aborts(tmp_path):
    scenario_tree(tmp_path)
    other = "11111111-1111-4111-8111-111111111111"
    write_tree(tmp_path, {f"{v3.LOCKS_DIR}/{other}.json": lock_bytes(DEAD_PID, TOKEN)})
    with pytest.raises(v3.MigrationError, match="lock token is invalid"):
        v3.migrate_v3(tmp_path)


def test_our_lock_file_has_gedpis_shape(tmp_path):
    scenario_tree(tmp_path)
    seen: list[dict] = []

    def look(source_path: str) -> None:
        for name in locks_left(tmp_path):
            if name.endswith(".json"):
                raw = (tmp_path / v3.LOCKS_DIR / name).read_text()
                seen.append(json.loads(raw))
                assert raw == pretty(seen[-1])

    v3.migrate_v3(tmp_path, hooks=v3.MigrationHooks(before_commit=look))
    owner = seen[0]
    assert list(owner) == ["schemaVersion", "pid", "token", "startedAt"]
    assert owner["pid"] == os.getpid() and owner["schemaVersion"] == 1
    assert locks_left(tmp_path) == []


def _wait_until_the_file_clock_passes(directory: Path, mtime_ns: int) -> None:
    """Return once a file written now gets an mtime later than ``mtime_ns``.

    Locks are ordered by mtime first; the file system's clock is coarse, so
    a lock published in the same tick could sort either way.
    """
    probe = directory / "clock-probe"
    probe.touch()
    deadline = time.monotonic() + 10
    while os.stat(probe).st_mtime_ns <= mtime_ns:
        assert time.monotonic() < deadline
        os.utime(probe)
    probe.unlink()


def test_scenario_64_two_concurrent_migrations_in_threads(tmp_path):
    scenario_tree(tmp_path)
    first_holds = threading.Event()
    second_waiting = threading.Event()
    results: dict[str, object] = {}
    errors: dict[str, BaseException] = {}

    def json_locks() -> list[str]:
        return [n for n in locks_left(tmp_path) if n.endswith(".json")]

    def hold_until_the_other_waits(source_path: str) -> None:
        # Runs inside the first migration, which holds the lock: the second
        # starts only now, and this one goes on only once the second waits.
        if source_path == ".ged/GLOSSARY.md" and not first_holds.is_set():
            first_holds.set()
            deadline = time.monotonic() + 10
            while len(json_locks()) < 2:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            second_waiting.set()

    def first() -> None:
        results["first"] = v3.migrate_v3(
            tmp_path, hooks=v3.MigrationHooks(before_commit=hold_until_the_other_waits))

    def second() -> None:
        assert first_holds.wait(10)
        [held] = json_locks()
        held_mtime = os.stat(tmp_path / v3.LOCKS_DIR / held).st_mtime_ns
        _wait_until_the_file_clock_passes(tmp_path, held_mtime)
        results["second"] = v3.migrate_v3(tmp_path)

    def run(name: str, target) -> None:
        try:
            target()
        except BaseException as exc:  # reported below, not lost in the thread
            errors[name] = exc

    threads = [threading.Thread(target=run, args=("first", first)),
               threading.Thread(target=run, args=("second", second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == {}
    assert second_waiting.is_set()
    assert (results["first"].status, results["second"].status) == (
        "completed", "already-complete")
    assert (tmp_path / "CONTEXT.md").read_text().count(REAL_GLOSSARY) == 1
    assert locks_left(tmp_path) == []


def _manage_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEDWEB_FAILPOINT")}
    env.setdefault("DJANGO_SETTINGS_MODULE", "gedweb.settings")
    return env


def test_scenario_64_two_concurrent_migration_processes(tmp_path):
    scenario_tree(tmp_path)
    command = [sys.executable, "manage.py", "ged_migrate_v3", str(tmp_path)]
    procs = [subprocess.Popen(command, cwd=settings.BASE_DIR, env=_manage_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outputs = [proc.communicate(timeout=60) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    statuses = sorted(out.splitlines()[1] for out, _ in outputs)
    assert statuses == ["durable-memory-v3: already-complete", "durable-memory-v3: completed"]
    assert (tmp_path / "CONTEXT.md").read_text().count(REAL_GLOSSARY) == 1
    assert locks_left(tmp_path) == []
