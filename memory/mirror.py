"""The MEMORY.md mirror on disk: O(1) catch-up by seq, checks and rebuilds.

The database is the source of truth. A mirror is brought up to date by
reading the entry its last line names, confirming the file ends with that
entry's exact block, and appending the blocks of every later seq. Anything
else (missing file, torn tail, edited text) triggers an atomic rebuild:
temp file, fsync, rename, fsync of the directory. All of it runs under an
exclusive flock, so any process may call it at any time.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import logging
import os
import stat
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from gedweb.failpoints import failpoint
from gedweb.lib.mirror import parse_last_trailer, render_append, render_chunks, render_header
from memory.models import MemoryEntry, Project

logger = logging.getLogger("memory.mirror")

MIRROR_NAME = "MEMORY.md"
LOCK_NAME = ".MEMORY.md.lock"
TMP_PREFIX = ".MEMORY.md.tmp-"
_TAIL_PROBE_BYTES = 4096
# Reads never block on a FIFO put where the file belongs; fstat then rejects it.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK

# Crash points (GEDWEB_FAILPOINT=<name> SIGKILLs the writer there), in write order.
FAILPOINTS = (
    "mirror.after_commit",
    "mirror.append.written",
    "mirror.append.torn",
    "mirror.append.synced",
    "mirror.rebuild.temp_written",
    "mirror.rebuild.before_rename",
    "mirror.rebuild.renamed",
    "mirror.rebuild.dir_synced",
)


class MirrorPathError(Exception):
    """The mirror directory is not a plain directory under the mirror root."""


@dataclass(frozen=True)
class SyncResult:
    project_id: str
    appended: int
    rebuilt: bool


def memory_dir(project_id: str) -> Path:
    """``<GEDWEB_MEMORY_ROOT>/<project>``: where the project's files live outside any workspace.

    The one place that says so. Readers that report on the directory
    (doctor, ``memory mirror --check``, the checkpoint files' evidence) use
    it as it is; writers go through project_dir, which refuses an unsafe one.
    """
    return Path(settings.MEMORY_ROOT) / project_id


def project_dir(project_id: str) -> Path:
    """memory_dir(project_id), refused unless it is a directory under the root to write in."""
    root = Path(settings.MEMORY_ROOT)
    directory = memory_dir(project_id)
    # Project ids match ^[a-z0-9-]+$: one path component, never "." or
    # "..", so root / id names a child of root unless someone replaced it
    # with a symlink. (Checked with one lstat; resolving both paths on
    # every append cost more than the append's own file work.)
    if os.sep in project_id or project_id in ("", ".", "..") or directory.is_symlink():
        raise MirrorPathError(f"{directory} is not a directory under {root}")
    return directory


def mirror_path(project_id: str) -> Path:
    return project_dir(project_id) / MIRROR_NAME


@contextmanager
def _locked(project_id: str, wait: float | None = None,
            directory: Path | None = None) -> Iterator[Path]:
    """Hold the project's mirror lock; ``wait`` seconds at most (BlockingIOError after).

    ``directory``: project_dir(project_id), when the caller has just checked it.
    """
    if directory is None:
        directory = project_dir(project_id)
    lock = os.path.join(directory, LOCK_NAME)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW
    try:
        fd = os.open(lock, flags, 0o644)
    except FileNotFoundError:  # the project's first write: no directory yet
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, flags, 0o644)
    try:
        if wait is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        else:
            _flock_within(fd, wait, directory / LOCK_NAME)
        yield directory
    finally:
        os.close(fd)


def _flock_within(fd: int, wait: float, path: Path) -> None:
    # flock has no timeout: poll, as the SQLite writer queue does.
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise BlockingIOError(errno.EWOULDBLOCK, f"{path} is held", str(path)) from None
            time.sleep(0.01)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_tail(fd: int, size: int, count: int) -> bytes:
    count = min(count, size)
    return os.pread(fd, count, size - count)


@dataclass(frozen=True)
class _Tail:
    """What the file's last line claims: empty (header only) or the entry it names."""

    fd: int
    size: int
    header_size: int
    named: tuple[str, str] | None  # (uuid, hash) of the last block, None: header only

    def ends_with(self, row: dict[str, Any]) -> bool:
        """True when the file ends with exactly this entry's block."""
        block = render_append(row).encode()
        return (self.size >= self.header_size + len(block)
                and _read_tail(self.fd, self.size, len(block)) == block)


@contextmanager
def _open_tail(project_id: str, path: Path) -> Iterator[_Tail | None]:
    """The file's tail claim, or None when the file must be rebuilt."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        yield None
        return
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        yield None
        return
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            yield None  # a FIFO, device or directory: the rebuild's rename replaces it
            return
        size = info.st_size
        header = render_header(project_id).encode()
        if size == len(header):
            yield _Tail(fd, size, len(header), None) if os.pread(fd, size, 0) == header else None
            return
        probe = _read_tail(fd, size, _TAIL_PROBE_BYTES)
        newline = probe.rfind(b"\n", 0, len(probe) - 1)
        try:
            named = parse_last_trailer(probe[newline + 1 :].decode("utf-8"))
        except UnicodeDecodeError:
            named = None
        yield None if named is None else _Tail(fd, size, len(header), named)
    finally:
        os.close(fd)


def _mirrored_seq(project_id: str, path: Path) -> int | None:
    """The seq the file provably ends with, or None when it must be rebuilt."""
    return _mirrored_seqs({project_id: path})[project_id]


def _mirrored_seqs(paths: dict[str, Path]) -> dict[str, int | None]:
    """The seq each project's file provably ends with, or None: one query for all of them.

    Every file stays open until its block is confirmed: callers keep the
    batch small.
    """
    seqs: dict[str, int | None] = {}
    with ExitStack() as files:
        named: dict[str, tuple[_Tail, str, str]] = {}  # project -> (tail, uuid, hash)
        for project_id, path in paths.items():
            tail = files.enter_context(_open_tail(project_id, path))
            if tail is None:
                seqs[project_id] = None
            elif tail.named is None:
                seqs[project_id] = 0
            elif _is_uuid(tail.named[0]):
                named[project_id] = (tail, *tail.named)
            else:
                seqs[project_id] = None  # shaped like an entry id, but none
        rows: dict[tuple[str, str, str], dict[str, Any]] = {}
        if named:
            entries = MemoryEntry.objects.filter(uuid__in=[n[1] for n in named.values()])
            for row in entries.chain_rows():
                rows[(row["project_id"], row["id"], row["hash"])] = row
        for project_id, (tail, entry_uuid, entry_hash) in named.items():
            found = rows.get((project_id, entry_uuid, entry_hash))
            seqs[project_id] = (
                int(found["seq"]) if found is not None and tail.ends_with(found) else None
            )
    return seqs


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


MIRRORED_SEQS_BATCH = 100


def mirrored_seqs(project_ids: Sequence[str]) -> dict[str, int | None]:
    """The seq each project's MEMORY.md provably ends with (0: the header alone), or None.

    None when there is no file or it must be rebuilt (torn, edited, or ending
    with an entry the database does not hold). One query per
    MIRRORED_SEQS_BATCH projects. Read without the mirror's lock, so a reader
    never holds up an append: a block being written at that moment can make
    it None, and asking again settles it. OSError when a file cannot be read.
    """
    seqs: dict[str, int | None] = {}
    for start in range(0, len(project_ids), MIRRORED_SEQS_BATCH):
        batch = project_ids[start:start + MIRRORED_SEQS_BATCH]
        seqs.update(_mirrored_seqs({
            project_id: memory_dir(project_id) / MIRROR_NAME for project_id in batch
        }))
    return seqs


def _remove_stale_temp_files(directory: Path) -> None:
    # Only a rebuild writes temp files, and it holds the lock: any temp file
    # seen here was left by a writer that died before its rename.
    for leftover in directory.glob(f"{TMP_PREFIX}*"):
        leftover.unlink(missing_ok=True)


def _rebuild(project_id: str, directory: Path,
             on_entry: Callable[[int], object] | None = None) -> None:
    _remove_stale_temp_files(directory)
    tmp = directory / f"{TMP_PREFIX}{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    try:
        buffer: list[str] = []
        pending = 0
        rows = MemoryEntry.objects.filter(project_id=project_id).chain_rows()
        if on_entry is not None:
            rows = _counted(rows, on_entry)
        for chunk in render_chunks(project_id, rows):
            buffer.append(chunk)
            pending += len(chunk)
            if pending >= 1 << 20:
                _write_all(fd, "".join(buffer).encode())
                buffer, pending = [], 0
        _write_all(fd, "".join(buffer).encode())
        failpoint("mirror.rebuild.temp_written")
        os.fsync(fd)
        failpoint("mirror.rebuild.before_rename")
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    try:
        os.replace(tmp, directory / MIRROR_NAME)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    failpoint("mirror.rebuild.renamed")
    _fsync_dir(directory)
    failpoint("mirror.rebuild.dir_synced")


def _append_after(project_id: str, path: Path, seq: int) -> int:
    return _append_rows(
        path, list(MemoryEntry.objects.filter(project_id=project_id, seq__gt=seq).chain_rows())
    )


def _append_rows(path: Path, rows: list[dict[str, Any]]) -> int:
    if not rows:
        return 0
    data = "".join(render_append(row) for row in rows).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        old_size = os.fstat(fd).st_size
        try:
            if os.environ.get("GEDWEB_FAILPOINT") == "mirror.append.torn":
                # Simulate a crash in the middle of the write: half the bytes land.
                _write_all(fd, data[: len(data) // 2])
                os.fsync(fd)
                failpoint("mirror.append.torn")
            _write_all(fd, data)
            failpoint("mirror.append.written")
            os.fsync(fd)
            _recent_blocks(path).note(os.fstat(fd), rows)
        except Exception:
            # A failed write or fsync (ENOSPC, EIO): bytes whose fsync did not
            # succeed are never trusted (fsyncgate). Cut the file back to its
            # old bytes, so it shows the drift and the next sync writes and
            # fsyncs these blocks again, instead of finding them "already there".
            try:
                os.ftruncate(fd, old_size)
            except OSError:
                logger.exception("could not cut %s back to its old size", path)
            raise
        failpoint("mirror.append.synced")
    finally:
        os.close(fd)
    return len(rows)


def sync(project: Project) -> SyncResult:
    """Bring one project's mirror up to date with the database."""
    with _locked(project.pk) as directory:
        return _sync_locked(project.pk, directory / MIRROR_NAME)


def _sync_locked(project_id: str, path: Path) -> SyncResult:
    seq = _mirrored_seq(project_id, path)
    if seq is None:
        _rebuild(project_id, path.parent)
        return SyncResult(project_id, appended=0, rebuilt=True)
    return SyncResult(project_id, appended=_append_after(project_id, path, seq), rebuilt=False)


class _RecentBlocks:
    """Blocks this process appended to one MEMORY.md and fsynced: a group commit.

    When many threads of a process append to one project at once, each
    one's after-commit sync used to queue for the mirror's file lock only
    to find that the thread before it had already written its block (a
    sync writes every committed entry the file lacks). A thread whose
    block (seq and hash) is recorded here, for the same file (device and
    inode) at no smaller size, returns without the lock, a read or a query.
    Anything else (another process wrote it, the file was replaced or cut
    short) takes the full path, which reads the file.
    """

    KEEP = 4096

    def __init__(self) -> None:
        self.guard = threading.Lock()
        self._file: tuple[int, int, int] | None = None  # (st_dev, st_ino, st_size)
        self._hashes: dict[int, str] = {}

    def note(self, info: os.stat_result, rows: Sequence[dict[str, Any]]) -> None:
        file = (info.st_dev, info.st_ino, info.st_size)
        if self._file is None or self._file[:2] != file[:2]:
            self._hashes.clear()
        self._file = file
        for row in rows:
            self._hashes[int(row["seq"])] = row["hash"]
        while len(self._hashes) > self.KEEP:
            del self._hashes[next(iter(self._hashes))]

    def holds(self, path: Path, row: dict[str, Any]) -> bool:
        if self._file is None or self._hashes.get(int(row["seq"])) != row["hash"]:
            return False
        try:
            info = os.stat(path, follow_symlinks=False)
        except OSError:
            return False
        return (info.st_dev, info.st_ino) == self._file[:2] and info.st_size >= self._file[2]


_recent: dict[str, _RecentBlocks] = {}
# The same records by the path as callers spell it, so the absolute path is
# worked out once per spelling rather than on every append.
_recent_by_spelling: dict[str, _RecentBlocks] = {}
_recent_guard = threading.Lock()


def _recent_blocks(path: Path) -> _RecentBlocks:
    spelling = os.fspath(path)
    recent = _recent_by_spelling.get(spelling)
    if recent is not None:
        return recent
    key = os.path.abspath(spelling)
    with _recent_guard:
        recent = _recent.get(key)
        if recent is None:
            recent = _recent[key] = _RecentBlocks()
        _recent_by_spelling[spelling] = recent
        return recent


class Reservation:
    """A writer's turn at the mirror, taken before its entry commits.

    On PostgreSQL appends to a project commit in the order of its row lock,
    but their writers used to reach the mirror's file lock in any order; one
    that found the file past its predecessor's block took the general sync
    (two more queries), and under load most did. Taken while the row lock is
    held, the turns follow the commits, so each writer finds the file ending
    with the block before its own. Same lock order as every other writer:
    the process's guard (_RecentBlocks), then the file lock. Released after
    the write, or when the transaction rolls back.
    """

    def __init__(self, project_id: str) -> None:
        self.project_id = project_id
        self.directory: Path | None = None
        self._held = ExitStack()

    def take(self) -> None:
        path = project_dir(self.project_id) / MIRROR_NAME
        self._held.enter_context(_recent_blocks(path).guard)
        try:
            self.directory = self._held.enter_context(_locked(self.project_id))
        except BaseException:
            self._held.close()
            raise

    def release(self) -> None:
        self.directory = None
        self._held.close()


def reserve(project_id: str) -> Reservation | None:
    """The mirror's turn for an entry about to commit; None when not inline or not possible.

    Never raises: a mirror that cannot be locked is the after-commit
    writer's to report, and must not fail the append.
    """
    if settings.MIRROR_WRITER != "inline":
        return None
    reservation = Reservation(project_id)
    try:
        reservation.take()
    except (MirrorPathError, OSError):
        return None
    return reservation


def sync_after_append(
    project_id: str,
    seq: int,
    known_rows: Sequence[dict[str, Any]] = (),
    reservation: Reservation | None = None,
) -> SyncResult:
    """sync() for the writer of entry ``seq``; see _sync_in.

    Threads of one process take turns here, so that a thread whose block
    the previous one already wrote (_RecentBlocks) need not touch the file.
    With a reservation the turn is already ours; it is released here.
    """
    if reservation is not None:
        try:
            if reservation.directory is not None:
                return _sync_in(project_id, seq, known_rows, reservation.directory)
        finally:
            reservation.release()
    checked = project_dir(project_id)
    path = checked / MIRROR_NAME
    recent = _recent_blocks(path)
    with recent.guard:
        if known_rows and known_rows[-1]["seq"] == seq and recent.holds(path, known_rows[-1]):
            return SyncResult(project_id, appended=0, rebuilt=False)
        with _locked(project_id, directory=checked) as directory:
            return _sync_in(project_id, seq, known_rows, directory)


def _sync_in(
    project_id: str, seq: int, known_rows: Sequence[dict[str, Any]], directory: Path
) -> SyncResult:
    """sync() for the writer of entry ``seq``, without a query when the file is one behind.

    The usual case: the file ends with entry seq - 1 (or already with seq,
    when a concurrent writer got there first). The chain rows of seq - 1
    and seq confirm the tail block byte for byte and give the block to
    append; the writer passes them as ``known_rows`` (from the append's own
    reads), otherwise one read of the entries from seq - 1 on fetches them.
    Anything else takes the general path of sync(). The caller holds the
    mirror's lock on ``directory``.
    """
    path = directory / MIRROR_NAME
    with _open_tail(project_id, path) as tail:
        if tail is not None:
            rows = list(known_rows) or list(
                MemoryEntry.objects.filter(project_id=project_id, seq__gte=max(seq - 1, 1))
                .chain_rows()
            )
            tail_rows: list[dict[str, Any]] | None
            for index, row in enumerate(rows):
                if tail.named == (str(row["id"]), row["hash"]) and tail.ends_with(row):
                    tail_rows = rows[index + 1:]
                    break
            else:
                tail_rows = rows if tail.named is None and seq == 1 else None
            if tail_rows is not None:
                return SyncResult(project_id, appended=_append_rows(path, tail_rows),
                                  rebuilt=False)
    return _sync_locked(project_id, path)


def rebuild(project: Project, on_entry: Callable[[int], object] | None = None) -> None:
    """Rewrite the mirror from the database; on_entry(1) after each entry (a progress bar)."""
    with _locked(project.pk) as directory:
        _rebuild(project.pk, directory, on_entry)


def _counted(rows: Iterable[dict[str, Any]], on_entry: Callable[[int], object]
             ) -> Iterator[dict[str, Any]]:
    for row in rows:
        yield row
        on_entry(1)


def expected_digest(project: Project) -> str:
    digest = hashlib.sha256()
    for chunk in render_chunks(project.pk, MemoryEntry.objects.for_project(project).chain_rows()):
        digest.update(chunk.encode())
    return digest.hexdigest()


def check(project: Project) -> bool:
    """True when the file is byte for byte what a rebuild would write.

    A project without entries may have no file yet: nothing has been appended.

    A mirror directory that is a symlink, or that cannot be locked, never
    holds a faithful mirror: that is drift to report, not a crash.
    """
    try:
        with _locked(project.pk) as directory:
            path = directory / MIRROR_NAME
            digest = hashlib.sha256()
            try:
                fd = os.open(path, _READ_FLAGS)
            except FileNotFoundError:
                # The first append writes the file; before it, absence is faithful.
                return not MemoryEntry.objects.for_project(project).exists()
            except OSError:
                return False
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return False
                while block := os.read(fd, 1 << 20):
                    digest.update(block)
            finally:
                os.close(fd)
            return digest.hexdigest() == expected_digest(project)
    except (MirrorPathError, OSError):
        return False


def after_commit(
    project_id: str,
    seq: int,
    known_rows: Sequence[dict[str, Any]] = (),
    reservation: Reservation | None = None,
) -> None:
    """Runs after entry ``seq`` commits: the entry is safe, so never raise from here.

    known_rows: the chain rows of seq - 1 (if any) and seq; reservation: the
    turn taken before the commit (see sync_after_append).
    """
    if settings.MIRROR_WRITER != "inline":
        return
    failpoint("mirror.after_commit")
    try:
        sync_after_append(project_id, seq, known_rows, reservation)
    except Exception:
        # The record is committed; the next sync, `memory mirror --rebuild`
        # or the follower repairs the file from the database.
        logger.exception("mirror update for project %s failed; it will catch up", project_id)
