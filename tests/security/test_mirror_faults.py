"""File-level faults of the MEMORY.md mirror (reliability catalogue C8, T43-T47).

The database is the source of truth; the file is a projection that must be,
after any fault, either the complete old bytes or the complete new bytes, and
must converge to ``render(DB)`` byte for byte on the next sync or rebuild.

Killed processes are real: a *zygote* child process sets Django up once and
forks one worker per trial (fork is milliseconds, a fresh ``manage.py`` is a
second). A worker either SIGKILLs itself at a named failpoint
(``GEDWEB_FAILPOINT``, gedweb/failpoints.py) or is SIGKILLed by the zygote
after a random delay. Before each step the worker reports what it is about to
do on a pipe, so the parent knows which states are legal after the kill:

- nothing in flight, or an entry committed in follower mode: the old file;
- a rebuild: the old file or the new one (rename is atomic);
- an append: the old file, the new one, or (a kernel may stop a write() on a
  fatal signal between pages) the old file plus a prefix of the new blocks,
  which ``check()`` reports and the next sync repairs. The old bytes are never
  changed in any case.

I/O errors are injected in-process by monkeypatching ``os`` functions, only
for file descriptors and paths under the test's mirror root.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import random
import signal
import subprocess
import sys
import threading
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command

from gedweb.lib.mirror import render_full
from memory import mirror, services
from memory.models import MemoryEntry
from tests.subprocesses import subprocess_database_url

PROJECT = "faulty"

# --- the zygote ---------------------------------------------------------------------------

ZYGOTE = r"""
import json, os, random, signal, sys, time, traceback
import django
django.setup()
from contextlib import contextmanager
from pathlib import Path
from django.conf import settings
from memory import mirror, services
from memory.models import Project

def say(fd, text):
    os.write(fd, (text + "\n").encode())

def add(project, inline, label):
    settings.MIRROR_WRITER = "inline" if inline else "follower"
    return services.memory_entry_create(project=project, author="zygote", category="note",
                                        content=label).entry.seq

def run(cmd, fd):
    settings.MEMORY_ROOT = Path(cmd["memory_root"])
    project = Project.objects.get(pk=cmd["project"])
    op = cmd["op"]
    if op == "add":
        say(fd, "A"); add(project, True, cmd.get("content", "added")); say(fd, "D")
    elif op == "add_follower":
        add(project, False, "follower")
    elif op == "rebuild":
        say(fd, "R"); mirror.rebuild(project); say(fd, "D")
    elif op == "loop":
        say(fd, "S")  # connected: the zygote starts the kill timer now
        # Alternate: an entry the writer does not mirror, then a rebuild (old file ->
        # new file by rename); an entry appended in place by the inline writer.
        index = 0
        while True:
            if index % 2 == 0:
                say(fd, "F"); seq = add(project, False, f"loop {index}")
                say(fd, "R"); mirror.rebuild(project)
            else:
                say(fd, "A"); seq = add(project, True, f"loop {index} ```")
            say(fd, f"D {seq}")
            index += 1
    elif op == "concurrent":
        real_locked = mirror._locked

        @contextmanager
        def timed(project_id, wait=None, directory=None):
            with real_locked(project_id, wait, directory) as directory:
                say(fd, f"enter {time.monotonic_ns()}")
                try:
                    yield directory
                finally:
                    say(fd, f"exit {time.monotonic_ns()}")

        mirror._locked = timed
        os.read(cmd["barrier"], 1)
        for index in range(cmd["count"]):
            add(project, True, f"worker {cmd['worker']} entry {index} ```")
            if index % 4 == 3:
                mirror.rebuild(project)
            else:
                mirror.sync(project)

def fork(cmd, **extra):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        code = 0
        try:
            if cmd.get("failpoint"):
                os.environ["GEDWEB_FAILPOINT"] = cmd["failpoint"]
            run({**cmd, **extra}, write_end)
        except BaseException:
            traceback.print_exc()
            code = 1
        os._exit(code)
    os.close(write_end)
    return pid, read_end

def collect(pid, read_end):
    _, status = os.waitpid(pid, 0)
    chunks = []
    while chunk := os.read(read_end, 65536):
        chunks.append(chunk)
    os.close(read_end)
    signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    return {"signal": signum, "exit": code,
            "progress": b"".join(chunks).decode().splitlines()}

for line in sys.stdin:
    cmd = json.loads(line)
    if cmd["op"] == "concurrent":
        barrier_read, barrier_write = os.pipe()
        children = [fork(cmd, worker=i, barrier=barrier_read) for i in range(cmd["workers"])]
        time.sleep(0.05)
        os.write(barrier_write, b"x" * cmd["workers"])
        reply = {"workers": [collect(*child) for child in children]}
        os.close(barrier_read); os.close(barrier_write)
    else:
        pid, read_end = fork(cmd)
        if cmd.get("delay") is not None:
            if cmd["op"] == "loop":
                assert os.read(read_end, 2) == b"S\n"
            time.sleep(cmd["delay"])
            os.kill(pid, signal.SIGKILL)
        reply = collect(pid, read_end)
    print(json.dumps(reply), flush=True)
"""


class Zygote:
    def __init__(self) -> None:
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("GEDWEB_", "DJANGO_", "DATABASE_URL"))}
        env.update(DATABASE_URL=subprocess_database_url(), GEDWEB_DEMO_PROJECT="false",
                   DJANGO_SETTINGS_MODULE="gedweb.settings")
        self.memory_root: Path | None = None
        self.proc = subprocess.Popen(
            [sys.executable, "-c", ZYGOTE], cwd=django_settings.BASE_DIR, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def run(self, **cmd) -> dict:
        cmd.setdefault("project", PROJECT)
        cmd["memory_root"] = str(self.memory_root)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"the zygote died (exit {self.proc.poll()})"
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # the zygote this test started, by its own handle
            self.proc.wait()


@pytest.fixture(scope="module")
def zygote_process(django_db_setup):
    # One per module: Django is set up once; every trial is a fork of it. Each
    # command names the test's database rows (live_db) and mirror root.
    zyg = Zygote()
    yield zyg
    zyg.close()


@pytest.fixture
def zygote(zygote_process, live_db, memory_root):
    zygote_process.memory_root = memory_root
    return zygote_process


@pytest.fixture
def faulty(make_project):
    target = make_project(PROJECT)
    services.memory_entry_create(project=target.project, author="ana", category="note",
                                 content="first ```")
    mirror.sync(target.project)  # idempotent; without live_db on_commit does not run
    return target


# --- helpers --------------------------------------------------------------------------------


def rows(project) -> list[dict]:
    return list(MemoryEntry.objects.for_project(project).chain_rows())


def render(project, count: int | None = None) -> bytes:
    all_rows = rows(project)
    return render_full(project.pk, all_rows[:count] if count is not None else all_rows).encode()


def path_of(project) -> Path:
    return mirror.mirror_path(project.pk)


def read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def temp_files(project) -> list[str]:
    directory = path_of(project).parent
    return sorted(p.name for p in directory.glob(f"{mirror.TMP_PREFIX}*")) if (
        directory.is_dir()) else []


def mirror_command(*args: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("memory", "mirror", *args, stdout=out, stderr=err)
    except CommandError as exc:
        return exc.returncode, out.getvalue(), err.getvalue() + str(exc)
    return 0, out.getvalue(), err.getvalue()


def assert_converged(project) -> None:
    data = path_of(project).read_bytes()
    assert data == render(project)
    for entry_uuid in MemoryEntry.objects.for_project(project).values_list("uuid", flat=True):
        assert data.count(f"| Entry: {entry_uuid} |".encode()) == 1
    assert mirror.check(project)


def rebuild_and_check_idempotent(project) -> None:
    """`memory mirror --rebuild` converges; a second rebuild and two checks change nothing."""
    assert mirror_command("--rebuild", "--project", project.pk)[0] == 0
    assert_converged(project)
    assert temp_files(project) == []
    directory = path_of(project).parent
    listing = sorted(os.listdir(directory))
    first = path_of(project).read_bytes()
    assert mirror_command("--rebuild", "--project", project.pk)[0] == 0
    assert path_of(project).read_bytes() == first
    assert sorted(os.listdir(directory)) == listing
    stat_before = path_of(project).stat()
    for _ in range(2):
        code, out, _ = mirror_command("--check", "--project", project.pk)
        assert (code, json.loads(out)["drifted"]) == (0, [])
    stat_after = path_of(project).stat()
    assert (stat_after.st_ino, stat_after.st_mtime_ns) == (stat_before.st_ino,
                                                           stat_before.st_mtime_ns)


# --- T43: a kill at each named failpoint ----------------------------------------------------

APPEND_FAILPOINTS = ("mirror.after_commit", "mirror.append.written", "mirror.append.torn",
                     "mirror.append.synced")
REBUILD_FAILPOINTS = ("mirror.rebuild.temp_written", "mirror.rebuild.before_rename",
                      "mirror.rebuild.renamed", "mirror.rebuild.dir_synced")


def test_the_failpoint_lists_cover_every_failpoint_and_every_one_is_reached(
    alpha, django_capture_on_commit_callbacks, monkeypatch
):
    assert set(APPEND_FAILPOINTS + REBUILD_FAILPOINTS) == set(mirror.FAILPOINTS)
    reached: list[str] = []
    monkeypatch.setattr(mirror, "failpoint", reached.append)
    for _ in range(2):  # the first append rebuilds (no file yet), the second appends
        with django_capture_on_commit_callbacks(execute=True):
            services.memory_entry_create(project=alpha.project, author="a", category="n",
                                         content="x")
    mirror.rebuild(alpha.project)
    # The torn write is simulated only when GEDWEB_FAILPOINT names it.
    assert set(reached) == set(mirror.FAILPOINTS) - {"mirror.append.torn"}


@pytest.mark.parametrize("name", APPEND_FAILPOINTS)
def test_a_writer_killed_at_an_append_failpoint_leaves_old_or_new_and_recovers(
    zygote, faulty, name
):
    old = path_of(faulty.project).read_bytes()
    assert old == render(faulty.project)

    reply = zygote.run(op="add", failpoint=name, content="killed while appending " * 20)

    assert reply["signal"] == signal.SIGKILL, reply
    assert len(rows(faulty.project)) == 2  # the entry committed before any mirror write
    data = path_of(faulty.project).read_bytes()
    new = render(faulty.project)
    if name == "mirror.append.torn":
        # The only non-old, non-new state, and only for an in-place append: the old
        # bytes are intact, the tail is a prefix of the new block, and it is reported.
        assert data.startswith(old) and new.startswith(data) and old != data != new
    else:
        expected = old if name == "mirror.after_commit" else new
        assert data == expected
    assert mirror.check(faulty.project) is (data == new)
    rebuild_and_check_idempotent(faulty.project)


@pytest.mark.parametrize("via", ["rebuild", "append-of-a-damaged-file", "first-file"])
@pytest.mark.parametrize("name", REBUILD_FAILPOINTS)
def test_a_writer_killed_at_a_rebuild_failpoint_leaves_old_or_new_and_recovers(
    zygote, faulty, name, via
):
    path = path_of(faulty.project)
    if via == "rebuild":
        assert zygote.run(op="add_follower")["exit"] == 0  # the file is now one entry behind
        old: bytes | None = path.read_bytes()
        reply = zygote.run(op="rebuild", failpoint=name)
    elif via == "append-of-a-damaged-file":
        with path.open("ab") as handle:
            handle.write(b"junk: the next write must rebuild\n")
        old = path.read_bytes()
        reply = zygote.run(op="add", failpoint=name)
    else:
        path.unlink()
        old = None
        reply = zygote.run(op="add", failpoint=name)

    assert reply["signal"] == signal.SIGKILL, reply
    data = read_or_none(path)
    new = render(faulty.project)
    before_rename = name in ("mirror.rebuild.temp_written", "mirror.rebuild.before_rename")
    assert data == (old if before_rename else new)
    # A temp file is left only by a kill before the rename; it is never the mirror.
    assert bool(temp_files(faulty.project)) is before_rename
    code, out, _ = mirror_command("--check", "--project", PROJECT)
    assert code == (1 if before_rename else 0)
    rebuild_and_check_idempotent(faulty.project)


# --- T43: kills at random moments -----------------------------------------------------------

RANDOM_KILLS = 30


def test_writers_killed_at_random_moments_leave_old_or_new_and_recover(zygote, faulty):
    rng = random.Random(8043)
    landed: dict[str, int] = {}
    torn = 0
    for trial in range(RANDOM_KILLS):
        last = len(rows(faulty.project))
        assert path_of(faulty.project).read_bytes() == render(faulty.project)
        delay = rng.uniform(0.0, 0.12)

        reply = zygote.run(op="loop", delay=delay)

        assert reply["signal"] == signal.SIGKILL, reply
        in_flight = None
        for line in reply["progress"]:
            if line.startswith("D "):
                last, in_flight = int(line.split()[1]), None
            else:
                in_flight = line
        count = len(rows(faulty.project))
        data = path_of(faulty.project).read_bytes()
        old, new = render(faulty.project, last), render(faulty.project, last + 1)
        landed[in_flight or "between steps"] = landed.get(in_flight or "between steps", 0) + 1
        context = f"trial {trial}, delay {delay:.4f}, in flight {in_flight}"
        if in_flight in ("A", "R"):  # an entry may have committed; the file is old or new
            assert count in (last, last + 1), context
            if data not in (old, new):
                # Only an in-place append may be cut short; the old bytes stay intact.
                assert in_flight == "A" and data.startswith(old) and new.startswith(data), \
                    context
                torn += 1
        else:  # nothing was writing the file
            assert count in (last, last + 1) and data == old, context
        assert mirror.check(faulty.project) is (data == render(faulty.project)), context
        # Recover alternately through the next sync and through `memory mirror --rebuild`.
        if trial % 2:
            mirror.sync(faulty.project)
        else:
            assert mirror_command("--rebuild", "--project", PROJECT)[0] == 0
            assert temp_files(faulty.project) == []
        assert_converged(faulty.project)
    print(f"random kills landed in: {landed}; torn appends: {torn}")
    assert len(rows(faulty.project)) > 2  # the writers made progress between kills
    rebuild_and_check_idempotent(faulty.project)


# --- T44: injected I/O errors ---------------------------------------------------------------


class Faults:
    """Make one ``os`` function fail with ``err`` on its ``nth`` matching call."""

    def __init__(self, monkeypatch, memory_root: Path) -> None:
        self.monkeypatch = monkeypatch
        self.root = str(memory_root)
        self.calls: dict[str, list[str]] = {}

    def fd_path(self, fd: int) -> str:
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return ""

    def inject(self, name: str, err: int, *, nth: int = 1, target: str = "") -> None:
        real = getattr(os, name)
        seen = self.calls.setdefault(name, [])

        def where(args) -> str:
            first = args[0]
            if name == "replace":
                return os.fspath(args[1])
            return self.fd_path(first) if isinstance(first, int) else os.fspath(first)

        def matches(path: str) -> bool:
            base = path.rsplit("/", 1)[-1]
            if target == DIRECTORY:
                return path == os.path.join(self.root, PROJECT)
            return base.startswith(target) if target.endswith("-") else base == target

        def fake(*args, **kwargs):
            path = where(args)
            if path.startswith(self.root) and matches(path):
                seen.append(path)
                if len(seen) == nth:
                    raise OSError(err, os.strerror(err), path)
            return real(*args, **kwargs)

        self.monkeypatch.setattr(os, name, fake)

    def short_writes(self, size: int = 7) -> None:
        real = os.write

        def write(fd, data):
            if self.fd_path(fd).startswith(self.root):
                return real(fd, bytes(data[:size]))
            return real(fd, data)

        self.monkeypatch.setattr(os, "write", write)

    def clear(self) -> None:
        self.monkeypatch.undo()


@pytest.fixture
def faults(monkeypatch, memory_root):
    return Faults(monkeypatch, memory_root)


@pytest.fixture
def appender(django_capture_on_commit_callbacks):
    def run(project, content="an entry"):
        with django_capture_on_commit_callbacks(execute=True):
            return services.memory_entry_create(project=project, author="ana", category="note",
                                                content=content).entry

    return run


def test_short_writes_are_completed(alpha, appender, faults):
    appender(alpha.project, "one")
    faults.short_writes(size=3)
    appender(alpha.project, "two, written three bytes at a time " * 10)
    mirror.rebuild(alpha.project)
    faults.clear()
    assert_converged(alpha.project)


DIRECTORY = "<the project's mirror directory>"
# (function, errno, which matching call fails, which file, which write path).
# The in-place append path: the file ends with the previous entry.
APPEND_FAULTS = [
    pytest.param("write", errno.ENOSPC, 1, "MEMORY.md", "append", id="append-write-ENOSPC"),
    pytest.param("write", errno.ENOSPC, 4, "MEMORY.md", "append",
                 id="append-write-ENOSPC-after-a-partial-write"),
    pytest.param("fsync", errno.EIO, 1, "MEMORY.md", "append", id="append-fsync-EIO"),
    pytest.param("open", errno.EACCES, 1, ".MEMORY.md.lock", "append", id="open-EACCES-lock"),
    pytest.param("open", errno.EACCES, 1, "MEMORY.md", "append", id="open-EACCES-mirror"),
]
# The rebuild path (a damaged tail forces it): temp file, fsync, rename, directory fsync.
REBUILD_FAULTS = [
    pytest.param("write", errno.ENOSPC, 1, ".MEMORY.md.tmp-", "rebuild",
                 id="rebuild-write-ENOSPC"),
    pytest.param("write", errno.ENOSPC, 3, ".MEMORY.md.tmp-", "rebuild",
                 id="rebuild-write-ENOSPC-after-a-partial-write"),
    pytest.param("fsync", errno.EIO, 1, ".MEMORY.md.tmp-", "rebuild", id="rebuild-fsync-EIO"),
    pytest.param("replace", errno.EIO, 1, "MEMORY.md", "rebuild", id="rebuild-replace-EIO"),
    pytest.param("open", errno.EACCES, 1, ".MEMORY.md.tmp-", "rebuild",
                 id="rebuild-open-EACCES-temp"),
    pytest.param("fsync", errno.EIO, 1, DIRECTORY, "rebuild", id="rebuild-fsync-EIO-directory"),
]


def inject_faults(faults: Faults, name: str, err: int, nth: int, target: str) -> None:
    if name == "write" and nth > 1:
        faults.short_writes(size=16)  # so one append needs several write() calls
    faults.inject(name, err, nth=nth, target=target)


@pytest.mark.parametrize("name, err, nth, target, kind", APPEND_FAULTS + REBUILD_FAULTS)
def test_an_io_error_never_fails_the_append_leaves_old_bytes_and_catches_up(
    faulty, appender, faults, caplog, name, err, nth, target, kind
):
    path = path_of(faulty.project)
    if kind == "rebuild":
        with path.open("ab") as handle:  # damage the tail, so the writer must rebuild
            handle.write(b"junk\n")
    old = path.read_bytes()
    inject_faults(faults, name, err, nth, target)

    with caplog.at_level(logging.ERROR, logger="memory.mirror"):
        entry = appender(faulty.project, "committed whatever the disk does " * 8)

    hits = list(faults.calls.get(name, []))
    faults.clear()
    assert len(hits) >= nth, f"the fault was never injected: {hits}"
    # The DB committed; the mirror failure is logged, never raised into the caller.
    assert MemoryEntry.objects.filter(pk=entry.pk).exists()
    assert any("will catch up" in r.getMessage() for r in caplog.records
               if r.name == "memory.mirror" and r.levelno == logging.ERROR)
    new = render(faulty.project)
    data = path.read_bytes()
    if target == DIRECTORY:
        # The rename happened before the directory fsync failed: the new file, complete
        # and fsynced itself; only the rename's survival of a power loss is unconfirmed.
        assert data == new
    else:
        assert data == old  # the target is untouched: the old bytes, whole
    assert temp_files(faulty.project) == []
    if name == "fsync":
        # No retry after a failed fsync: the fd whose fsync failed is never fsynced again.
        assert len(hits) == 1
    code, out, _ = mirror_command("--check", "--project", PROJECT)
    assert (code, json.loads(out)["drifted"]) == ((0, []) if data == new else (1, [PROJECT]))

    # Later, with a healthy disk: the next append (or sync, or rebuild) catches up.
    appender(faulty.project, "after the disk recovered")
    assert_converged(faulty.project)
    assert mirror_command("--check", "--project", PROJECT)[0] == 0


def test_a_failed_fsync_is_not_claimed_by_the_next_check_or_sync(faulty, appender, faults):
    """fsyncgate: the bytes of a write whose fsync failed are never treated as mirrored."""
    old = path_of(faulty.project).read_bytes()
    faults.inject("fsync", errno.EIO, target="MEMORY.md")
    appender(faulty.project, "fsync failed for this one")
    faults.clear()
    assert path_of(faulty.project).read_bytes() == old
    assert not mirror.check(faulty.project)
    fsyncs: list[int] = []
    real_fsync = os.fsync
    faults.monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd))[1])
    result = mirror.sync(faulty.project)
    faults.clear()
    assert result.appended == 1 and fsyncs  # written again and fsynced, not "found there"
    assert_converged(faulty.project)


def test_an_io_error_does_not_fail_the_append_over_the_api(
    live_db, make_project, client_for, faults, caplog
):
    target = make_project(PROJECT)
    client = client_for(target.token)
    url = f"/v1/projects/{PROJECT}/memory"
    assert client.post(url, {"category": "note", "content": "one"}, format="json"
                       ).status_code == 201
    old = path_of(target.project).read_bytes()
    faults.inject("fsync", errno.EIO, target="MEMORY.md")
    with caplog.at_level(logging.ERROR, logger="memory.mirror"):
        response = client.post(url, {"category": "note", "content": "two"}, format="json")
    faults.clear()
    assert response.status_code == 201
    assert MemoryEntry.objects.filter(project=target.project).count() == 2
    assert path_of(target.project).read_bytes() == old
    assert "will catch up" in caplog.text
    assert client.post(url, {"category": "note", "content": "three"}, format="json"
                       ).status_code == 201
    assert_converged(target.project)


def test_a_failed_rebuild_command_exits_1_in_one_line_and_leaves_old_bytes(
    faulty, faults
):
    old = path_of(faulty.project).read_bytes() + b"junk\n"
    path_of(faulty.project).write_bytes(old)
    faults.inject("write", errno.ENOSPC, target=".MEMORY.md.tmp-")
    code, _, err = mirror_command("--rebuild", "--project", PROJECT)
    faults.clear()
    assert code == 1 and "No space left on device" in err and PROJECT in err
    assert path_of(faulty.project).read_bytes() == old
    assert temp_files(faulty.project) == []
    rebuild_and_check_idempotent(faulty.project)


# --- T45: leftovers and restart --------------------------------------------------------------


def test_a_rebuild_removes_every_leftover_temp_file_and_follows_none(faulty, tmp_path):
    directory = path_of(faulty.project).parent
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_bytes(b"outside the mirror root\n")
    (directory / f"{mirror.TMP_PREFIX}1").write_bytes(b"")
    (directory / f"{mirror.TMP_PREFIX}2").write_bytes(render(faulty.project)[:10])
    (directory / f"{mirror.TMP_PREFIX}{os.getpid()}").symlink_to(sentinel)  # our own name
    (directory / f"{mirror.TMP_PREFIX}old").symlink_to(sentinel)
    rebuild_and_check_idempotent(faulty.project)
    assert sentinel.read_bytes() == b"outside the mirror root\n"
    assert sorted(os.listdir(directory)) == [mirror.LOCK_NAME, mirror.MIRROR_NAME]


def test_a_mirror_behind_the_database_is_caught_up_by_one_sync_then_nothing_changes(
    faulty, appender, settings
):
    settings.MIRROR_WRITER = "follower"
    for index in range(3):
        appender(faulty.project, f"behind {index}")
    assert not mirror.check(faulty.project)
    assert mirror.sync(faulty.project) == mirror.SyncResult(PROJECT, appended=3, rebuilt=False)
    before = path_of(faulty.project).stat()
    assert mirror.sync(faulty.project) == mirror.SyncResult(PROJECT, appended=0, rebuilt=False)
    after = path_of(faulty.project).stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino, before.st_size, before.st_mtime_ns)
    assert_converged(faulty.project)


# --- T46: special files where the mirror belongs --------------------------------------------


@contextlib.contextmanager
def unblock_fifo_after(path: Path, seconds: float):
    """While a reader blocks on the FIFO, open its write end every ``seconds``; record that."""
    blocked = threading.Event()
    done = threading.Event()

    def unblock() -> None:
        while not done.wait(seconds):
            blocked.set()
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))

    thread = threading.Thread(target=unblock, daemon=True)
    thread.start()
    try:
        yield blocked
    finally:
        done.set()
        thread.join()


def test_a_fifo_as_the_mirror_file_never_blocks_and_is_replaced(faulty, appender):
    path = path_of(faulty.project)
    path.unlink()
    os.mkfifo(path)
    with unblock_fifo_after(path, 1) as blocked:
        assert mirror.check(faulty.project) is False
        code, out, _ = mirror_command("--check", "--project", PROJECT)
        assert code == 1
        appender(faulty.project, "the writer replaces the fifo")
    assert not blocked.is_set(), "a reader blocked on the FIFO"
    assert_converged(faulty.project)


def test_a_directory_as_the_mirror_file_is_refused_in_one_line_and_leaves_no_temp(
    faulty, appender
):
    path = path_of(faulty.project)
    path.unlink()
    path.mkdir()
    (path / "inside").write_bytes(b"kept\n")
    appender(faulty.project, "committed; the mirror cannot be written")
    assert mirror.check(faulty.project) is False
    code, _, err = mirror_command("--rebuild", "--project", PROJECT)
    assert code == 1 and PROJECT in err and "\n" not in err.strip()
    assert temp_files(faulty.project) == []
    assert (path / "inside").read_bytes() == b"kept\n"
    (path / "inside").unlink()
    path.rmdir()
    rebuild_and_check_idempotent(faulty.project)


def test_a_symlinked_lock_file_is_drift_refused_by_rebuild_and_writes_nothing_outside(
    faulty, tmp_path
):
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_bytes(b"outside\n")
    lock = path_of(faulty.project).parent / mirror.LOCK_NAME
    lock.unlink()
    lock.symlink_to(sentinel)
    code, out, _ = mirror_command("--check")
    assert (code, json.loads(out)["drifted"]) == (1, [PROJECT])
    code, _, err = mirror_command("--rebuild", "--project", PROJECT)
    assert code == 1 and PROJECT in err and "\n" not in err.strip()
    assert sentinel.read_bytes() == b"outside\n"
    lock.unlink()
    rebuild_and_check_idempotent(faulty.project)


def test_a_symlinked_mirror_file_is_replaced_by_the_rebuild_command_not_followed(
    faulty, tmp_path
):
    sentinel = tmp_path / "sentinel.md"
    sentinel.write_bytes(b"outside\n")
    path = path_of(faulty.project)
    path.unlink()
    path.symlink_to(sentinel)
    assert mirror_command("--check", "--project", PROJECT)[0] == 1
    rebuild_and_check_idempotent(faulty.project)
    assert not path.is_symlink() and sentinel.read_bytes() == b"outside\n"


# --- T47: concurrent writers in two processes -----------------------------------------------


def test_two_processes_writing_one_mirror_are_serialised_and_converge(zygote, faulty):
    per_worker = 12
    reply = zygote.run(op="concurrent", workers=2, count=per_worker)

    intervals = []
    for worker in reply["workers"]:
        assert (worker["signal"], worker["exit"]) == (0, 0), worker
        events = [line.split() for line in worker["progress"]]
        assert [kind for kind, _ in events] == ["enter", "exit"] * (len(events) // 2)
        intervals += [(int(events[i][1]), int(events[i + 1][1]))
                      for i in range(0, len(events), 2)]
    intervals.sort()
    # Every lock section of one process is disjoint from every section of the other.
    assert all(end <= start for (_, end), (start, _) in zip(intervals, intervals[1:],
                                                             strict=False))
    assert len(intervals) >= 2 * per_worker * 2  # each write and each sync/rebuild locked
    assert len(rows(faulty.project)) == 1 + 2 * per_worker
    assert_converged(faulty.project)
