"""The SQLite writer queue (gedweb/db/sqlite3/base.py), with real threads and processes.

Every transaction takes the database's writer lock before BEGIN IMMEDIATE
and gives it back when it commits, rolls back or its connection closes; a
writer that cannot get it within the timeout fails as SQLite would.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import OperationalError, connection, connections, transaction

from gedweb.db.sqlite3.base import WriterLock, writer_lock_for
from memory import services
from memory.models import MemoryEntry
from tests.django_fixtures import run_in_threads

sqlite_only = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="the writer queue belongs to the SQLite backend"
)

HOLD_FLOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


def _held_elsewhere(lock: WriterLock) -> bool:
    """True when another thread or process holds the lock (probed from a new thread)."""
    outcome: list[bool] = []

    def probe() -> None:
        try:
            lock.acquire(timeout=0.05)
        except OperationalError:
            outcome.append(True)
        else:
            lock.release()
            outcome.append(False)

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    return outcome[0]


@sqlite_only
def test_the_sqlite_settings_use_the_queueing_backend():
    assert connection.settings_dict["ENGINE"] == "gedweb.db.sqlite3"
    assert connection.vendor == "sqlite"


@sqlite_only
def test_a_transaction_holds_the_lock_until_commit(live_db, make_project):
    lock = writer_lock_for(connection.settings_dict["NAME"])
    target = make_project("queue")
    assert not _held_elsewhere(lock)
    with transaction.atomic():
        services.memory_entry_create(project=target.project, author="t", category="note",
                                     content="inside")
        assert _held_elsewhere(lock)
    assert not _held_elsewhere(lock)
    assert MemoryEntry.objects.filter(project=target.project).count() == 1


@sqlite_only
def test_a_rolled_back_transaction_gives_the_lock_back_and_keeps_nothing(live_db, make_project):
    lock = writer_lock_for(connection.settings_dict["NAME"])
    target = make_project("queue")
    with pytest.raises(RuntimeError), transaction.atomic():
        services.memory_entry_create(project=target.project, author="t", category="note",
                                     content="rolled back")
        raise RuntimeError("abort")
    assert not _held_elsewhere(lock)
    assert MemoryEntry.objects.filter(project=target.project).count() == 0


@sqlite_only
def test_closing_the_connection_mid_transaction_gives_the_lock_back(live_db):
    lock = writer_lock_for(connection.settings_dict["NAME"])
    done = threading.Event()

    def abandon() -> None:
        own = connections["default"]
        transaction.atomic().__enter__()  # never exited: the connection closes instead
        own.close()
        done.set()

    thread = threading.Thread(target=abandon)
    thread.start()
    thread.join()
    assert done.is_set()
    assert not _held_elsewhere(lock)


@sqlite_only
def test_writers_wait_in_turn_and_none_fails(live_db, make_project):
    target = make_project("queue")
    spans: list[tuple[float, float]] = []
    spans_guard = threading.Lock()

    def write(index: int) -> int:
        with transaction.atomic():
            start = time.monotonic()
            result = services.memory_entry_create(
                project=target.project, author=f"w{index}", category="note", content=f"#{index}")
            time.sleep(0.01)  # hold the lock long enough for the others to queue
            end = time.monotonic()
        with spans_guard:
            spans.append((start, end))
        return result.entry.seq

    results = run_in_threads(write, 12)
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert sorted(results) == list(range(1, 13))
    # One writer at a time: no two transactions overlapped.
    ordered = sorted(spans)
    assert all(earlier[1] <= later[0] for earlier, later in zip(ordered, ordered[1:]))


def test_a_waiter_gives_up_after_the_timeout_like_sqlite(tmp_path: Path):
    lock = WriterLock(str(tmp_path / "db.sqlite3-writer"))
    lock.acquire(timeout=1)
    try:
        started = time.monotonic()
        outcome: list[BaseException] = []

        def wait() -> None:
            try:
                lock.acquire(timeout=0.2)
            except OperationalError as exc:
                outcome.append(exc)

        thread = threading.Thread(target=wait)
        thread.start()
        thread.join()
        assert [str(exc) for exc in outcome] == ["database is locked"]
        assert time.monotonic() - started >= 0.2
    finally:
        lock.release()
    lock.acquire(timeout=0.1)  # nothing was left held by the waiter that gave up
    lock.release()


def test_another_process_holds_writers_off_until_it_dies(tmp_path: Path):
    path = tmp_path / "db.sqlite3-writer"
    lock = WriterLock(str(path))
    holder = subprocess.Popen([sys.executable, "-c", HOLD_FLOCK, str(path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(OperationalError, match="database is locked"):
            lock.acquire(timeout=0.3)
    finally:
        holder.kill()  # SIGKILL: no cleanup code runs in the holder
        holder.wait()
    lock.acquire(timeout=5)  # the kernel released the dead process's flock
    lock.release()


def test_a_forked_child_takes_the_lock_with_its_own_file_description(tmp_path: Path):
    # The parent opened the lock file before the fork; a child that reused
    # that descriptor would share the parent's flock and not be held off.
    path = tmp_path / "db.sqlite3-writer"
    lock = WriterLock(str(path))
    lock.acquire(timeout=1)
    lock.release()
    script = (
        "import sys; sys.path.insert(0, sys.argv[2])\n"
        "from gedweb.db.sqlite3.base import WriterLock\n"
        "from django.db import OperationalError\n"
        "import os, threading\n"
        "lock = WriterLock(sys.argv[1])\n"
        "lock.acquire(timeout=1)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    lock._thread_lock = threading.Lock()\n"
        "    try:\n"
        "        lock.acquire(timeout=0.3)\n"
        "    except OperationalError:\n"
        "        os._exit(7)\n"
        "    os._exit(0)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(os.waitstatus_to_exitcode(status))\n"
    )
    repo = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", script, str(path), repo], capture_output=True,
                         text=True, timeout=30, check=True)
    assert out.stdout.strip() == "7", out.stderr
