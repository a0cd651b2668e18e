"""Django's SQLite backend with a writer queue in front of BEGIN IMMEDIATE.

SQLite admits one writer at a time. A connection that finds the write lock
taken waits in SQLite's busy handler, which sleeps 1, 2, 5, 10, 15, 20, 25,
... ms between tries without knowing when the lock comes free. Under
concurrent appends that leaves the machine idle while the lock is free
and lets an unlucky writer lose every round for a second or more.

Here every transaction that Django opens (``transaction.atomic``) first
queues for the database's writer lock, and SQLite is only asked once the
lock is ours, so its busy handler almost never runs:

- inside one process, a ``threading.Lock`` per database file hands over
  at once, in the order the kernel wakes threads;
- between processes (gunicorn workers, management commands), an
  ``flock`` on ``<database>-writer`` beside the database file. flock has no
  timeout, so it is polled, starting at 0.1 ms and backing off to 2 ms;
  only one thread per process polls, the others wait on the thread lock.

The wait is bounded by the connection's ``timeout`` option (seconds, as
for SQLite's own busy timeout); after it the transaction fails with
OperationalError("database is locked"), as SQLite would.
The lock is released when the transaction commits or rolls back, or when
the connection closes. A process that dies releases its flock with its
file descriptors, so a crash never leaves the queue stuck.

Statements outside ``atomic`` (autocommit) skip the queue and rely on
SQLite's busy timeout, as before. In-memory databases have no file to
lock and skip it too.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from pathlib import Path

from django.db import OperationalError
from django.db.backends.sqlite3 import base, creation

from gedweb.installation import make_private

FIRST_POLL_SECONDS = 0.0001
LONGEST_POLL_SECONDS = 0.002


class WriterLock:
    """One database file's writer lock: a thread lock, then a per-process flock."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._thread_lock = threading.Lock()
        self._fd: int | None = None
        self._fd_pid: int | None = None

    def _descriptor(self) -> int:
        # Opened once per process: after a fork the child needs its own open
        # file description, or parent and child would share one flock.
        # Called only by the thread that holds _thread_lock.
        if self._fd is None or self._fd_pid != os.getpid():
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                               0o600)
            self._fd_pid = os.getpid()
        return self._fd

    def acquire(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        if not self._thread_lock.acquire(timeout=max(timeout, 0)):
            raise OperationalError("database is locked")
        try:
            fd = self._descriptor()
            pause = FIRST_POLL_SECONDS
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return
                except OSError as error:
                    if error.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise OperationalError("database is locked")
                time.sleep(min(pause, remaining))
                pause = min(pause * 2, LONGEST_POLL_SECONDS)
        except BaseException:
            self._thread_lock.release()
            raise

    def release(self) -> None:
        try:
            if self._fd is not None and self._fd_pid == os.getpid():
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._thread_lock.release()


_locks: dict[str, WriterLock] = {}
_locks_guard = threading.Lock()


def writer_lock_for(database: str) -> WriterLock:
    path = os.path.abspath(database) + "-writer"
    with _locks_guard:
        lock = _locks.get(path)
        if lock is None:
            lock = _locks[path] = WriterLock(path)
        return lock


# SQLite gives a database's -wal and -shm files the permission bits of the
# database file, so a database created 0600 keeps all three private.
_DATABASE_FILE_SUFFIXES = ("", "-wal", "-shm", "-journal", "-writer")
# Files GedWeb keeps beside a database of its own: the writer queue's lock,
# and the rate counters' database (gedweb/throttling.py) with its WAL files.
_SIDE_FILE_SUFFIXES = ("-writer", "-rates", "-rates-wal", "-rates-shm", "-rates-journal")


def make_database_private(database: str) -> None:
    """Create the database file 0600 if it is missing; take group/other bits off its files.

    They hold session keys and every project's memory (docs/security.md).
    An existing database is never opened here: closing any descriptor of a
    file drops every POSIX lock this process holds on it, including the
    locks of SQLite connections open in other threads, which corrupts the
    database ("How To Corrupt An SQLite Database File", 2.2). O_EXCL only
    ever creates a file nobody has open yet.
    """
    try:
        fd = os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
    except FileExistsError:
        pass
    else:
        os.close(fd)
    for suffix in _DATABASE_FILE_SUFFIXES:
        make_private(Path(database + suffix))


class DatabaseCreation(creation.DatabaseCreation):
    """A test database goes with the files GedWeb kept beside it.

    Django removes only the database file; a test run's counts would
    otherwise outlive it, and meet the next run that reuses its name.
    """

    def _create_test_db(self, verbosity, autoclobber, keepdb=False):  # type: ignore[no-untyped-def]
        name = super()._create_test_db(verbosity, autoclobber, keepdb)  # type: ignore[misc]  # unstubbed
        if not keepdb:
            self._remove_side_files(name)
        return name

    def _destroy_test_db(self, test_database_name, verbosity):  # type: ignore[no-untyped-def]
        super()._destroy_test_db(test_database_name, verbosity)  # type: ignore[misc]  # unstubbed
        self._remove_side_files(test_database_name)

    def _remove_side_files(self, name: str) -> None:
        if name and not self.is_in_memory_db(name):
            for suffix in _SIDE_FILE_SUFFIXES:
                Path(name + suffix).unlink(missing_ok=True)


class DatabaseWrapper(base.DatabaseWrapper):
    creation_class = DatabaseCreation
    _writer_lock: WriterLock | None = None

    def get_new_connection(self, conn_params):  # type: ignore[no-untyped-def]
        name = str(self.settings_dict["NAME"])
        if name and not self.is_in_memory_db():
            make_database_private(name)
        return super().get_new_connection(conn_params)

    def _queue_for_writes(self) -> WriterLock | None:
        name = str(self.settings_dict["NAME"])
        if self.is_in_memory_db() or not name:
            return None
        return writer_lock_for(name)

    def _start_transaction_under_autocommit(self) -> None:
        lock = self._queue_for_writes()
        if lock is not None:
            lock.acquire(float(self.settings_dict["OPTIONS"].get("timeout", 5)))
            self._writer_lock = lock
        try:
            super()._start_transaction_under_autocommit()  # type: ignore[misc]  # unstubbed
        except BaseException:
            self._release_writer_lock()
            raise

    def _release_writer_lock(self) -> None:
        lock, self._writer_lock = self._writer_lock, None
        if lock is not None:
            lock.release()

    def _commit(self) -> None:
        try:
            super()._commit()  # type: ignore[misc]  # private: not in django-stubs
        finally:
            # A failed COMMIT leaves the transaction open; Django rolls it
            # back next (and _rollback releases nothing twice).
            if not self._transaction_open():
                self._release_writer_lock()

    def _rollback(self) -> None:
        try:
            super()._rollback()  # type: ignore[misc]  # private: not in django-stubs
        finally:
            self._release_writer_lock()

    def _close(self) -> None:
        try:
            super()._close()  # type: ignore[misc]  # private: not in django-stubs
        finally:
            self._release_writer_lock()

    def _transaction_open(self) -> bool:
        return self.connection is not None and self.connection.in_transaction
