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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from gedweb.lib.failpoints import failpoint
from gedweb.lib.mirror import parse_last_trailer, render_append, render_chunks, render_header
from memory.models import MemoryEntry, Project

logger = logging.getLogger("memory.mirror")

MIRROR_NAME = "MEMORY.md"
LOCK_NAME = ".MEMORY.md.lock"
TMP_PREFIX = ".MEMORY.md.tmp-"
_TAIL_PROBE_BYTES = 4096


class MirrorPathError(Exception):
    """The mirror directory is not a plain directory under the mirror root."""


@dataclass(frozen=True)
class SyncResult:
    project_id: str
    appended: int
    rebuilt: bool


def project_dir(project_id: str) -> Path:
    root = Path(settings.MEMORY_ROOT)
    directory = root / project_id
    # Project ids match ^[a-z0-9-]+$, so this only guards against a
    # directory that someone replaced with a symlink.
    if directory.is_symlink() or directory.resolve().parent != root.resolve():
        raise MirrorPathError(f"{directory} is not a directory under {root}")
    return directory


def mirror_path(project_id: str) -> Path:
    return project_dir(project_id) / MIRROR_NAME


@contextmanager
def _locked(project_id: str) -> Iterator[Path]:
    directory = project_dir(project_id)
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield directory
    finally:
        os.close(fd)


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


def _mirrored_seq(project: Project, path: Path) -> int | None:
    """The seq the file provably ends with, or None when it must be rebuilt."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise
    try:
        size = os.fstat(fd).st_size
        header = render_header(project.pk).encode()
        if size == len(header):
            return 0 if os.pread(fd, size, 0) == header else None
        probe = _read_tail(fd, size, _TAIL_PROBE_BYTES)
        newline = probe.rfind(b"\n", 0, len(probe) - 1)
        try:
            last_line = probe[newline + 1 :].decode("utf-8")
        except UnicodeDecodeError:
            return None
        named = parse_last_trailer(last_line)
        if named is None:
            return None
        entry_uuid, entry_hash = named
        rows = (
            MemoryEntry.objects.for_project(project)
            .filter(uuid=entry_uuid, hash=entry_hash)
            .chain_rows()
        )
        row = next(rows, None)
        if row is None:
            return None
        block = render_append(row).encode()
        if size < len(header) + len(block) or _read_tail(fd, size, len(block)) != block:
            return None
        return int(row["seq"])
    finally:
        os.close(fd)


def _remove_stale_temp_files(directory: Path) -> None:
    # Only a rebuild writes temp files, and it holds the lock: any temp file
    # seen here was left by a writer that died before its rename.
    for leftover in directory.glob(f"{TMP_PREFIX}*"):
        leftover.unlink(missing_ok=True)


def _rebuild(project: Project, directory: Path) -> None:
    _remove_stale_temp_files(directory)
    tmp = directory / f"{TMP_PREFIX}{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    try:
        buffer: list[str] = []
        pending = 0
        rows = MemoryEntry.objects.for_project(project).chain_rows()
        for chunk in render_chunks(project.pk, rows):
            buffer.append(chunk)
            pending += len(chunk)
            if pending >= 1 << 20:
                _write_all(fd, "".join(buffer).encode())
                buffer, pending = [], 0
        _write_all(fd, "".join(buffer).encode())
        os.fsync(fd)
        failpoint("mirror.rebuild.before_rename")
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, directory / MIRROR_NAME)
    _fsync_dir(directory)


def _append_after(project: Project, path: Path, seq: int) -> int:
    rows = list(MemoryEntry.objects.for_project(project).filter(seq__gt=seq).chain_rows())
    if not rows:
        return 0
    data = "".join(render_append(row) for row in rows).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
    try:
        if os.environ.get("GEDWEB_FAILPOINT") == "mirror.append.torn":
            # Simulate a crash in the middle of the write: half the bytes land.
            _write_all(fd, data[: len(data) // 2])
            os.fsync(fd)
            failpoint("mirror.append.torn")
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return len(rows)


def sync(project: Project) -> SyncResult:
    """Bring one project's mirror up to date with the database."""
    with _locked(project.pk) as directory:
        path = directory / MIRROR_NAME
        seq = _mirrored_seq(project, path)
        if seq is None:
            _rebuild(project, directory)
            return SyncResult(project.pk, appended=0, rebuilt=True)
        return SyncResult(project.pk, appended=_append_after(project, path, seq), rebuilt=False)


def rebuild(project: Project) -> None:
    with _locked(project.pk) as directory:
        _rebuild(project, directory)


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
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            except FileNotFoundError:
                # The first append writes the file; before it, absence is faithful.
                return not MemoryEntry.objects.for_project(project).exists()
            except OSError:
                return False
            try:
                while block := os.read(fd, 1 << 20):
                    digest.update(block)
            finally:
                os.close(fd)
            return digest.hexdigest() == expected_digest(project)
    except (MirrorPathError, OSError):
        return False


def after_commit(project_id: str) -> None:
    """Runs after an append commits: the entry is safe, so never raise from here."""
    if settings.MIRROR_WRITER != "inline":
        return
    failpoint("mirror.after_commit")
    try:
        sync(Project.objects.get(pk=project_id))
    except Exception:
        # The record is committed; the next sync, `memory mirror --rebuild`
        # or the follower repairs the file from the database.
        logger.exception("mirror update for project %s failed; it will catch up", project_id)
