"""File-level faults of `manage.py ged_migrate_v3` (reliability catalogue C9, T51-T54).

Kills at every journal step (T49) and idempotence (T50) are in
tests/migration/test_v3_crash.py and test_v3.py; the lock basics in
test_v3_locks.py. This module fills the gaps:

- T51: a second *process* against a live, paused GedWeb holder (flock held);
- T52: PID reuse against a foreign live process, and a GedPi-style live lock,
  through the command (exit status, message, nothing touched);
- T53: a damaged journal left by a killed run, case by case (abort touching
  nothing, or a safe redo where GedPi semantics allow one);
- T54: ENOSPC / EIO injected at every write, fsync, rename and link of a run
  (SQLite's "fault at the Nth I/O call, for every N"), a backup that cannot be
  written, an unreadable source, and sources edited mid-run.

Tests run as root, where ``chmod 000`` does not deny reads, so an unreadable
source is simulated by a monkeypatched ``os.open`` that raises PermissionError
(EACCES) for that one path. I/O errors are injected the same way, only for
paths inside the test's checkout.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from gedweb.checkout import safefs, v3
from tests.checkout.trees import (
    REAL_DECISIONS,
    REAL_GLOSSARY,
    WORK_A,
    copy_tree,
    directories,
    pretty,
    scenario_tree,
    snapshot,
    write_tree,
)
from tests.migration.test_v3_crash import crash_tree, normalise

STATE = v3.STATE_PATH
ADR = v3.adr_path(v3.sha256_hex(REAL_DECISIONS.encode()))
TASK = ".ged/tasks/T01.history.json"
TASK_DEST = f".ged/work/{WORK_A}/tasks/T01/HISTORY.json"


def command_env(failpoint: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEDWEB_FAILPOINT")}
    env.setdefault("DJANGO_SETTINGS_MODULE", "gedweb.settings")
    if failpoint:
        env["GEDWEB_FAILPOINT"] = failpoint
    return env


def manage(root: Path, *args: str, failpoint: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "ged_migrate_v3", str(root), *args],
        cwd=settings.BASE_DIR, env=command_env(failpoint), capture_output=True, text=True,
        timeout=60,
    )


def run_here(root: Path) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("ged_migrate_v3", str(root), stdout=out, stderr=err)
    except CommandError as exc:
        return 1, out.getvalue(), str(exc)
    return 0, out.getvalue(), err.getvalue()


def tree_state(root: Path) -> tuple[dict[str, bytes], set[str]]:
    return snapshot(root), directories(root)


def outside_runtime(snap: dict[str, bytes]) -> dict[str, bytes]:
    """The checkout as a user sees it: without the migration's runtime files and record."""
    return {rel: data for rel, data in snap.items()
            if not rel.startswith(f"{v3.RUNTIME}/") and rel != STATE}


def temp_leftovers(root: Path) -> list[str]:
    return sorted(rel for rel in snapshot(root) if "/.gedweb-tmp-" in f"/{rel}"
                  or rel.rsplit("/", 1)[-1].startswith(".gedweb-"))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """crash_tree migrated in one go, in-process (no legacy-checkpoint step)."""
    root = crash_tree(tmp_path_factory.mktemp("uninterrupted") / "repo")
    original = snapshot(root)
    assert v3.migrate_v3(root).status == "completed"
    return original, normalise(snapshot(root)), directories(root)


# --- T51: a live holder in another process -----------------------------------------------------


def test_a_second_process_exits_1_naming_the_paused_holder_and_touches_nothing(tmp_path):
    root = scenario_tree(tmp_path / "repo")
    paused, release = threading.Event(), threading.Event()
    results: dict[str, object] = {}

    def pause(source_path: str) -> None:
        if source_path == ".ged/GLOSSARY.md":
            paused.set()
            assert release.wait(60)

    def first() -> None:
        try:
            results["first"] = v3.migrate_v3(root, hooks=v3.MigrationHooks(before_commit=pause))
        except BaseException as exc:  # reported by the assertion below
            results["first"] = exc

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert paused.wait(30)
        (lock,) = [name for name in os.listdir(root / v3.LOCKS_DIR) if name.endswith(".json")]
        owner = json.loads((root / v3.LOCKS_DIR / lock).read_text())
        before = tree_state(root)
        started = time.monotonic()

        second = manage(root, "--wait", "0.5")

        elapsed = time.monotonic() - started
        after = tree_state(root)
    finally:
        release.set()
        thread.join(60)
    assert second.returncode == 1
    message = second.stderr.strip()
    assert "\n" not in message and "Traceback" not in message
    assert message.endswith(
        "Ged durable-memory migration is already running or needs manual recovery. "
        f"Lock {owner['token']} is held by pid {os.getpid()} since {owner['startedAt']}.")
    assert elapsed >= 0.5
    assert after == before  # its own lock and sidecar came and went; nothing else moved
    assert results["first"].status == "completed"
    assert manage(root).stdout.splitlines()[1] == "durable-memory-v3: already-complete"


# --- T52: stale locks and PID reuse, through the command ---------------------------------------

TOKEN = "00000000-0000-4000-8000-000000000000"


def place_lock(root: Path, pid: int, *, sidecar: bool) -> bytes:
    data = pretty({"schemaVersion": 1, "pid": pid, "token": TOKEN,
                   "startedAt": "2026-01-01T00:00:00.000Z"}).encode()
    write_tree(root, {f"{v3.LOCKS_DIR}/{TOKEN}.json": data})
    if sidecar:
        write_tree(root, {f"{v3.LOCKS_DIR}/{TOKEN}.flock": b""})
    old = time.time() - 3600
    os.utime(root / v3.LOCKS_DIR / f"{TOKEN}.json", (old, old))
    return data


@pytest.fixture
def foreign_live_pid():
    proc = subprocess.Popen(["sleep", "60"])
    yield proc.pid
    proc.kill()  # the process this fixture started, by its own handle
    proc.wait()


def test_pid_reuse_a_gedweb_lock_naming_another_live_process_with_a_free_flock_is_stale(
    tmp_path, foreign_live_pid
):
    root = scenario_tree(tmp_path / "repo")
    original = place_lock(root, foreign_live_pid, sidecar=True)
    done = manage(root, "--wait", "5")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == "durable-memory-v3: completed"
    # Renamed, never rewritten or unlinked: the evidence keeps its exact bytes.
    assert (root / v3.RUNTIME / f"STALE-{TOKEN}.json").read_bytes() == original
    assert os.listdir(root / v3.LOCKS_DIR) == []


def test_a_gedpi_lock_of_a_live_process_is_live_the_command_exits_1_touching_nothing(
    tmp_path, foreign_live_pid
):
    root = scenario_tree(tmp_path / "repo")
    place_lock(root, foreign_live_pid, sidecar=False)  # GedPi's locks have no sidecar
    before = tree_state(root)
    refused = manage(root, "--wait", "0.3")
    assert refused.returncode == 1
    assert f"held by pid {foreign_live_pid} since 2026-01-01T00:00:00.000Z." in refused.stderr
    assert tree_state(root) == before


# --- T53: a damaged journal ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def killed_mid_run(tmp_path_factory):
    """A checkout whose migration was SIGKILLed after journaling the decisions step.

    It holds what a real crash leaves: JOURNAL.json with four entries (two removed
    placeholders, migrated-context, migrated-decisions), backups, CONTEXT.md, the
    ADR, the glossary pointer, and the dead run's lock with its flock sidecar.
    """
    root = crash_tree(tmp_path_factory.mktemp("killed") / "repo")
    killed = manage(root, failpoint="migrate_v3.decisions.journaled")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    entries = json.loads((root / v3.JOURNAL_PATH).read_text())["entries"]
    assert [e["action"] for e in entries] == [
        "removed-placeholder", "removed-placeholder", "migrated-context", "migrated-decisions"]
    assert len(os.listdir(root / v3.LOCKS_DIR)) == 2
    return root


@pytest.fixture
def killed(killed_mid_run, tmp_path):
    return copy_tree(killed_mid_run, tmp_path / "repo")


def journal_text(root: Path) -> str:
    return (root / v3.JOURNAL_PATH).read_text()


def set_journal(root: Path, data: bytes | str) -> None:
    path = root / v3.JOURNAL_PATH
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def flip_in(root: Path, needle: str, offset: int, to: str) -> None:
    text = journal_text(root)
    at = text.index(needle) + offset
    set_journal(root, text[:at] + to + text[at + 1:])


JOURNAL_DAMAGE = [
    pytest.param(lambda r: set_journal(r, journal_text(r)[:-40]), "journal is malformed.",
                 id="tail-truncated"),
    pytest.param(lambda r: set_journal(r, b""), "journal is malformed.", id="emptied"),
    pytest.param(lambda r: set_journal(r, b"\x00" * 512), "journal is malformed.",
                 id="zero-filled"),
    pytest.param(lambda r: flip_in(r, '"entries": [', 10, "}"), "journal is malformed.",
                 id="middle-byte-breaks-the-json"),
    pytest.param(lambda r: flip_in(r, '"sha256": "', 20, "g"), "migration entry is invalid.",
                 id="middle-byte-in-a-hash"),
    pytest.param(lambda r: flip_in(r, '"migrated-context"', 5, "x"),
                 "migration entry is invalid.", id="middle-byte-in-an-action"),
    pytest.param(lambda r: flip_in(r, '"sourcePath": ".ged/', 15, "/"),
                 "migration entry is invalid.", id="middle-byte-makes-an-absolute-path"),
    pytest.param(lambda r: set_journal(r, journal_text(r).replace(
        '"entries": [', '"entries": [\n    null,', 1)), "migration entry is invalid.",
        id="null-entry"),
    pytest.param(lambda r: set_journal(r, "null\n"), "journal is unsupported.",
                 id="null-journal"),
    pytest.param(lambda r: set_journal(r, "not json at all\n"), "journal is malformed.",
                 id="not-json"),
    pytest.param(lambda r: set_journal(r, journal_text(r).replace(
        '"schemaVersion": 1', '"schemaVersion": 2', 1)), "journal is unsupported.",
        id="newer-schema"),
]


@pytest.mark.parametrize("damage, message", JOURNAL_DAMAGE)
def test_a_damaged_journal_aborts_in_one_line_touching_nothing(killed, damage, message):
    damage(killed)
    before = tree_state(killed)
    code, out, err = run_here(killed)
    assert code == 1
    assert err.startswith("Ged durable-memory migration ") and err.endswith(message)
    assert "\n" not in err
    # Not even the dead run's lock is quarantined: the journal is checked before locking.
    assert tree_state(killed) == before
    # As a process: exit status 1, the same line on stderr, still nothing touched.
    proc = manage(killed)
    assert proc.returncode == 1 and proc.stderr.strip().endswith(message)
    assert tree_state(killed) == before


def test_a_byte_flip_that_keeps_the_journal_valid_is_not_detectable_and_moves_nothing_else(
    killed, uninterrupted
):
    """No per-entry checksum exists in GedPi's format. A flipped path in a removed-
    placeholder entry passes validation; entries drive no deletion, so the files end as
    in an uninterrupted run and only the report carries the wrong path."""
    flip_in(killed, '"sourcePath": ".ged/IDEAS.md"', len('"sourcePath": ".ged/IDEA'), "T")
    code, out, err = run_here(killed)
    assert code == 0, err
    _, expected, _ = uninterrupted
    assert outside_runtime(snapshot(killed)) == outside_runtime(expected)
    paths = [e["sourcePath"] for e in v3.read_completion(killed)["entries"]]
    assert ".ged/IDEAT.md" in paths and ".ged/IDEAS.md" not in paths


def test_a_deleted_journal_with_backups_is_redone_safely(killed, uninterrupted):
    """GedPi starts afresh without a journal, and so does GedWeb: every step is
    idempotent on its own evidence (create-only backups that must match, the
    CONTEXT.md marker, the content-addressed ADR, pointers trusted through their
    backup). The files end byte for byte as in an uninterrupted run; the entries
    of steps finished before the journal was lost are missing from the record."""
    (killed / v3.JOURNAL_PATH).unlink()
    code, out, err = run_here(killed)
    assert code == 0, err
    assert "durable-memory-v3: completed" in out
    _, expected, expected_dirs = uninterrupted
    assert outside_runtime(snapshot(killed)) == outside_runtime(expected)
    assert (killed / "CONTEXT.md").read_text().count(REAL_GLOSSARY) == 1
    backups = {rel: data for rel, data in snapshot(killed).items()
               if rel.startswith(f"{v3.BACKUPS_DIR}/")}
    assert backups == {rel: data for rel, data in expected.items()
                       if rel.startswith(f"{v3.BACKUPS_DIR}/")}
    lost = [e for e in json.loads(expected[STATE])["entries"]
            if e not in v3.read_completion(killed)["entries"]]
    assert [(e["action"], e["sourcePath"]) for e in lost] == [
        ("removed-placeholder", ".ged/PROJECT.md"), ("removed-placeholder", ".ged/IDEAS.md"),
        ("migrated-context", ".ged/GLOSSARY.md")]


# --- T54: I/O errors at every call ------------------------------------------------------------


class Faults:
    """Fail the nth call of an ``os`` function on a path inside ``root``; count the calls."""

    def __init__(self, monkeypatch, root: Path) -> None:
        self.monkeypatch = monkeypatch
        self.root = str(root)

    def _path(self, name: str, args: tuple) -> str:
        if name in ("write", "fsync"):
            try:
                return os.readlink(f"/proc/self/fd/{args[0]}")
            except OSError:
                return ""
        return os.fspath(args[1] if name in ("replace", "link", "rename") else args[0])

    def inject(self, name: str, err: int, nth: int | None = None, *,
               when=lambda path, args: True) -> list[str]:
        real = getattr(os, name)
        seen: list[str] = []

        def fake(*args, **kwargs):
            path = self._path(name, args)
            if path.startswith(self.root) and when(path, args):
                seen.append(path)
                if len(seen) == nth:
                    raise OSError(err, os.strerror(err), path)
            return real(*args, **kwargs)

        self.monkeypatch.setattr(os, name, fake)
        return seen

    def skip_real_fsyncs(self) -> None:
        """The loops test control flow, not durability: fsyncs inside root become no-ops."""
        real = os.fsync

        def fsync(fd):
            if not self._path("fsync", (fd,)).startswith(self.root):
                real(fd)

        self.monkeypatch.setattr(os, "fsync", fsync)


IO_FAULTS = [("write", errno.ENOSPC), ("fsync", errno.EIO), ("replace", errno.EIO),
             ("link", errno.ENOSPC), ("unlink", errno.EIO), ("mkdir", errno.ENOSPC)]


def counted(name: str, path: str) -> bool:
    # A failed unlink of a temp file cannot clean that temp file, and a failed unlink of
    # our own lock in a process that lives on leaves a lock naming a live pid (see the
    # docs); both are left out. Deleting a migrated source is counted.
    return name != "unlink" or ("/.gedweb-tmp-" not in path and f"/{v3.LOCKS_DIR}/" not in path)


@pytest.mark.parametrize("name, err", IO_FAULTS)
def test_an_io_error_at_every_call_aborts_leaves_each_file_old_or_new_and_reruns_clean(
    tmp_path, monkeypatch, uninterrupted, name, err
):
    original, expected, expected_dirs = uninterrupted
    probe = crash_tree(tmp_path / "probe")
    faults = Faults(monkeypatch, probe)
    faults.skip_real_fsyncs()
    seen = faults.inject(name, err, when=lambda path, args: counted(name, path))
    assert v3.migrate_v3(probe).status == "completed"
    monkeypatch.undo()
    calls = len(seen)
    assert calls > 0

    for nth in range(1, calls + 1):
        root = crash_tree(tmp_path / f"{name}-{nth}")
        faults = Faults(monkeypatch, root)
        faults.skip_real_fsyncs()
        faults.inject(name, err, nth, when=lambda path, args: counted(name, path))
        with pytest.raises(OSError) as raised:
            v3.migrate_v3(root)
        monkeypatch.undo()
        context = f"{name} fails at call {nth} of {calls}"
        assert raised.value.errno == err, context
        after = snapshot(root)
        # Old or new, file by file: every file is its original bytes, its final bytes,
        # or (a source the migration deletes) absent; no temp file, no record.
        for rel, data in after.items():
            if rel in (v3.JOURNAL_PATH, STATE):
                continue  # the journal grows step by step; the rerun validates it
            assert data in (original.get(rel), expected.get(rel)), f"{context}: {rel}"
            if rel == STATE:  # a fault while releasing the lock, after the record
                assert normalise({rel: data})[rel] == expected[rel], context
        assert temp_leftovers(root) == [], context
        assert not any(rel.startswith(f"{v3.LOCKS_DIR}/") for rel in after), context
        # The rerun ends exactly where an uninterrupted run ends.
        Faults(monkeypatch, root).skip_real_fsyncs()
        rerun = v3.migrate_v3(root).status
        monkeypatch.undo()
        assert rerun == ("already-complete" if STATE in after else "completed"), context
        assert normalise(snapshot(root)) == expected, context
        assert directories(root) == expected_dirs, context


def test_enospc_while_writing_a_backup_aborts_before_the_original_is_touched(
    tmp_path, monkeypatch, uninterrupted
):
    root = crash_tree(tmp_path / "repo")
    before = snapshot(root)
    Faults(monkeypatch, root).inject(
        "write", errno.ENOSPC, 1, when=lambda path, args: f"/{v3.BACKUPS_DIR}/" in path)
    code, _, err = run_here(root)
    monkeypatch.undo()
    assert code == 1 and "No space left on device" in err and "\n" not in err
    after = snapshot(root)
    assert after[".ged/GLOSSARY.md"] == before[".ged/GLOSSARY.md"]  # the first backed-up source
    assert "CONTEXT.md" not in after
    assert not any(rel.startswith(f"{v3.BACKUPS_DIR}/") for rel in after)
    assert temp_leftovers(root) == []
    assert run_here(root)[0] == 0
    assert normalise(snapshot(root)) == uninterrupted[1]


def test_an_unreadable_source_aborts_naming_it_keeps_it_and_a_rerun_completes(
    tmp_path, monkeypatch, uninterrupted
):
    root = crash_tree(tmp_path / "repo")
    unreadable = str(root / ".ged/ARCHITECTURE.md")
    real_open = os.open

    def open_denied(path, flags, *args, **kwargs):
        if os.fspath(path) == unreadable and not flags & (os.O_WRONLY | os.O_RDWR):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_denied)
    code, _, err = run_here(root)
    monkeypatch.undo()
    assert code == 1 and "Permission denied" in err and ".ged/ARCHITECTURE.md" in err
    after = snapshot(root)
    assert after[".ged/ARCHITECTURE.md"] == uninterrupted[0][".ged/ARCHITECTURE.md"]
    assert f"{v3.BACKUPS_DIR}/.ged/ARCHITECTURE.md" not in after
    assert STATE not in after
    assert run_here(root)[0] == 0
    assert normalise(snapshot(root)) == uninterrupted[1]


# --- T54: a source changed between its backup and its migration --------------------------------


def test_decisions_edited_after_their_backup_are_not_migrated_and_the_edit_is_kept(tmp_path):
    root = scenario_tree(tmp_path / "repo")
    edit = REAL_DECISIONS + "- 2026-02-02: Edited while the migration ran.\n"

    def user_edit(source_path: str) -> None:
        if source_path == ".ged/DECISIONS.md":
            (root / source_path).write_text(edit)

    with pytest.raises(v3.MigrationError, match=(
        "^Legacy source changed during durable-memory migration: .ged/DECISIONS.md$")):
        v3.migrate_v3(root, hooks=v3.MigrationHooks(before_commit=user_edit))
    assert (root / ".ged/DECISIONS.md").read_text() == edit
    assert not (root / ADR).exists()
    assert (root / v3.BACKUPS_DIR / ".ged/DECISIONS.md").read_text() == REAL_DECISIONS
    assert not (root / STATE).exists()


def test_a_task_edited_before_its_copy_aborts_and_the_edit_is_kept(tmp_path):
    root = scenario_tree(tmp_path / "repo")
    edit = '{"attempts": [], "edited": true}\n'

    def user_edit(source_path: str) -> None:
        if source_path == TASK:
            (root / TASK).write_text(edit)

    with pytest.raises(v3.MigrationError, match=f"changed during durable-memory migration: {TASK}"):
        v3.migrate_v3(root, hooks=v3.MigrationHooks(before_commit=user_edit))
    assert (root / TASK).read_text() == edit
    assert not (root / TASK_DEST).exists()


def test_a_task_edited_after_its_copy_is_retained_with_the_edit_and_reported(
    tmp_path, monkeypatch
):
    root = scenario_tree(tmp_path / "repo")
    original = (root / TASK).read_bytes()
    edit = b'{"attempts": [], "edited after the copy": true}\n'
    real_publish = safefs.publish_exclusive

    def publish_then_user_edits(base, rel, data):
        created = real_publish(base, rel, data)
        if str(rel) == TASK_DEST:
            (root / TASK).write_bytes(edit)
        return created

    monkeypatch.setattr(safefs, "publish_exclusive", publish_then_user_edits)
    result = v3.migrate_v3(root)
    assert result.status == "completed"
    assert (root / TASK).read_bytes() == edit  # the user's edit is kept in place
    assert (root / TASK_DEST).read_bytes() == original  # the copy holds the backed-up bytes
    (entry,) = [e for e in result.entries if e["sourcePath"] == TASK]
    assert entry == {"sourcePath": TASK, "action": "retained-substantive",
                     "sha256": v3.sha256_hex(original),
                     "backupPath": f"{v3.BACKUPS_DIR}/{TASK}", "destinationPath": TASK_DEST,
                     "reason": v3.REASON_CHANGED_AFTER_COPY}
