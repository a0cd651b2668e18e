"""Careful file access inside a checkout: containment, no symlinks, durable writes.

The GedPi interop commands (``ged_migrate_v3``, ``ged_import``, ``ged_export``)
read and write inside a repository that an agent or a user may have arranged
badly or maliciously. Every path they touch goes through this module:

- a path is given relative to the checkout root and must stay inside it;
- every existing component is checked with ``lstat``: a symbolic link anywhere
  on the way is refused (GedPi §9.1), and so is anything that is neither a
  directory nor a regular file (FIFOs, sockets, devices; §9.2);
- reads open with ``O_NOFOLLOW | O_NONBLOCK`` and re-check device and inode
  after opening, so a swap between the check and the open is noticed;
- reads refuse a regular file with more than one link (``hard_link_problem``,
  on the opened descriptor): a hard link can make a file from outside the
  checkout appear inside it, where no path check can see it;
- writes are durable (fsync of the file and of its directory, fixing GedPi's
  G-3) and either atomic (temporary file + rename) or create-only (temporary
  file + hard link, which fails when the target exists).

This is accident prevention and tamper refusal, not an OS sandbox: a process
with write access to the checkout can still race a check (GedPi says the same).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path, PurePosixPath

READ = "Read source"
WRITE = "Write target"


# Names of the writers' own temporary files. publish_exclusive links its
# temporary file to the target and then unlinks it, so for an instant (or for
# good, after a crash in between) the target has a second link under one of
# these names in its own directory; checkout.v3 publishes its lock sidecar the
# same way.
OWN_TEMP_PREFIXES = (".gedweb-tmp-", ".gedweb-lock-")


class UnsafePath(Exception):
    """A path escapes the root, crosses a symlink, is a hard link, or is not a regular file."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def normalize(rel: str | PurePosixPath, op: str = READ) -> PurePosixPath:
    """A clean relative POSIX path, or UnsafePath for absolute, ``..``, NUL or empty."""
    text = str(rel)
    if not text or "\x00" in text:
        raise UnsafePath(f"{op} is not a valid relative path: {text!r}")
    path = PurePosixPath(text)
    if path.is_absolute() or ".." in path.parts or text.startswith("~"):
        raise UnsafePath(f"{op} escapes the repository: {text}")
    parts = [part for part in path.parts if part != "."]
    if not parts:
        raise UnsafePath(f"{op} is not a valid relative path: {text!r}")
    return PurePosixPath(*parts)


def check(root: Path, rel: str | PurePosixPath, op: str = READ) -> Path:
    """Return ``root / rel`` after the containment check and the component walk.

    The walk stops at the first missing component: a path still to be created
    is safe. The last existing component must be a directory or a regular file.
    """
    clean = normalize(rel, op)
    current = Path(root)
    walked: list[str] = []
    for part in clean.parts:
        current = current / part
        walked.append(part)
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            break
        if stat.S_ISLNK(info.st_mode):
            raise UnsafePath(f"{op} traverses a symbolic link: {'/'.join(walked)}")
        if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
            raise UnsafePath(f"{op} is not a regular file or directory: {'/'.join(walked)}")
    return Path(root) / clean


def exists(root: Path, rel: str | PurePosixPath) -> bool:
    return os.path.lexists(check(root, rel))


def is_file(root: Path, rel: str | PurePosixPath) -> bool:
    path = check(root, rel)
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def is_dir(root: Path, rel: str | PurePosixPath) -> bool:
    path = check(root, rel)
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def _own_temp_links(directory: Path, info: os.stat_result) -> int:
    """How many of the writers' temporary names in ``directory`` are links to ``info``'s file."""
    count = 0
    try:
        with os.scandir(directory) as listing:
            for entry in listing:
                if not entry.name.startswith(OWN_TEMP_PREFIXES):
                    continue
                try:
                    other = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue  # the writer unlinked it meanwhile
                if (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino):
                    count += 1
    except OSError:
        return 0
    return count


def hard_link_problem(directory: Path, rel: str | PurePosixPath,
                      stat_now: Callable[[], os.stat_result]) -> str | None:
    """Why a regular file may not be read because it has more than one link, or None.

    The one rule for every checkout read (``read_bytes`` passes the opened
    descriptor's fstat, so there is no check-then-open race; ``find_hard_links``
    passes lstat). A second link may live anywhere on the filesystem, so a file
    with one is refused, naming ``rel``. The only links not counted are the
    writers' own temporary names in the same directory (``OWN_TEMP_PREFIXES``):
    a reader that meets a create-only publish half-way sees the target with two
    links, and the fstat after the directory scan sees the temporary name gone.
    """
    info = stat_now()
    if not stat.S_ISREG(info.st_mode) or info.st_nlink <= 1:
        return None
    own = _own_temp_links(directory, info)
    links = stat_now().st_nlink
    if links - own <= 1:
        return None
    return (f"{PurePosixPath(str(rel)).as_posix()}: a hard link ({links} links); "
            "GedWeb reads only files with a single link")


def find_hard_links(root: Path, files: Iterable[str] = (),
                    dirs: Iterable[str] = ()) -> list[str]:
    """``hard_link_problem`` for each of ``files`` and every regular file under ``dirs``.

    A survey by lstat, for a command that must refuse before it writes anything
    and for ``doctor``; the reads themselves check again on their descriptor.
    Symbolic links are not followed (other checks refuse them) and missing
    paths are skipped. Sorted by path.
    """
    found: dict[str, str] = {}

    def visit(rel: str, path: Path) -> None:
        if path.name.startswith(OWN_TEMP_PREFIXES):
            return
        try:
            problem = hard_link_problem(path.parent, rel, lambda: os.lstat(path))
        except FileNotFoundError:
            return  # removed meanwhile (a released lock): nothing left to read
        if problem is not None:
            found[rel] = problem

    for rel in files:
        clean = normalize(rel)
        path = Path(root) / clean
        try:
            info = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if stat.S_ISREG(info.st_mode):
            visit(clean.as_posix(), path)
    for rel_dir in dirs:
        stack = [normalize(rel_dir)]
        while stack:
            current = stack.pop()
            try:
                listing = os.scandir(Path(root) / current)
            except (FileNotFoundError, NotADirectoryError):
                continue
            with listing:
                for entry in listing:
                    try:
                        mode = entry.stat(follow_symlinks=False).st_mode
                    except FileNotFoundError:
                        continue
                    if stat.S_ISDIR(mode):
                        stack.append(current / entry.name)
                    elif stat.S_ISREG(mode):
                        visit((current / entry.name).as_posix(), Path(entry.path))
    return [found[rel] for rel in sorted(found)]


def read_bytes(root: Path, rel: str | PurePosixPath, *,
               max_bytes: int | None = None) -> bytes | None:
    """The file's bytes, or None when it does not exist. Never follows a symlink.

    With ``max_bytes``, a file larger than that is refused (UnsafePath) without
    reading more than ``max_bytes + 1`` bytes, even if it grows while read.
    """
    path = check(root, rel, READ)
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(before.st_mode):
        raise UnsafePath(f"{READ} is not a regular file: {normalize(rel)}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(f"{READ} traverses a symbolic link: {normalize(rel)}") from None
        raise
    try:
        after = os.fstat(fd)
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino) or not stat.S_ISREG(
            after.st_mode
        ):
            raise UnsafePath(f"{READ} changed while it was opened: {normalize(rel)}")
        if after.st_nlink > 1:
            problem = hard_link_problem(path.parent, normalize(rel), lambda: os.fstat(fd))
            if problem is not None:
                raise UnsafePath(problem)
        if max_bytes is not None and after.st_size > max_bytes:
            raise UnsafePath(f"{READ} is larger than {max_bytes:,} bytes: {normalize(rel)}")
        chunks = []
        size = 0
        while chunk := os.read(fd, 1 << 20 if max_bytes is None
                               else min(1 << 20, max_bytes + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if max_bytes is not None and size > max_bytes:
                # It grew after fstat: still refused, having read one byte too many at most.
                raise UnsafePath(f"{READ} is larger than {max_bytes:,} bytes: {normalize(rel)}")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(root: Path, rel: str | PurePosixPath) -> str | None:
    """UTF-8 text of a file (strict), or None when it does not exist."""
    data = read_bytes(root, rel)
    return None if data is None else data.decode("utf-8")


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(root: Path, rel_dir: str | PurePosixPath) -> Path:
    """Create ``rel_dir`` and its parents, refusing symlinks on the way."""
    clean = normalize(rel_dir, WRITE)
    current = Path(root)
    for part in clean.parts:
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            try:
                os.mkdir(current)
            except FileExistsError:
                pass  # created concurrently; checked below
            fsync_dir(current.parent)
            info = os.lstat(current)
        if not stat.S_ISDIR(info.st_mode):
            raise UnsafePath(f"{WRITE} traverses a non-directory: {clean}")
    return current


def _write_temp(directory: Path, data: bytes, mode: int = 0o644) -> Path:
    temp = directory / f".gedweb-tmp-{uuid.uuid4().hex}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return temp


def atomic_write(root: Path, rel: str | PurePosixPath, data: bytes, *,
                 keep_mode: bool = False) -> None:
    """Replace ``rel`` with ``data``: readers see the old bytes or the new, never a mix.

    ``keep_mode`` copies the permission bits of an existing regular file onto the
    replacement, as GedPi's ``writeFileAtomic`` does (so a 0600 CONTEXT.md stays 0600).
    """
    target = check(root, rel, WRITE)
    clean = normalize(rel, WRITE)
    directory = make_dirs(root, clean.parent) if clean.parent.parts else Path(root)
    temp = _write_temp(directory, data)
    try:
        if keep_mode:
            try:
                existing = os.lstat(target)
            except FileNotFoundError:
                pass
            else:
                if stat.S_ISREG(existing.st_mode):
                    os.chmod(temp, stat.S_IMODE(existing.st_mode))
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_dir(directory)


def publish_exclusive(root: Path, rel: str | PurePosixPath, data: bytes, *,
                      mode: int = 0o644) -> bool:
    """Create ``rel`` with ``data`` (permission bits ``mode``, less the umask) only if it
    does not exist yet.

    Returns True when this call created it, False when it already existed (the
    caller decides whether the existing bytes are acceptable). The file appears
    complete or not at all: it is written to a temporary name and hard-linked.
    """
    target = check(root, rel, WRITE)
    clean = normalize(rel, WRITE)
    directory = make_dirs(root, clean.parent) if clean.parent.parts else Path(root)
    temp = _write_temp(directory, data, mode)
    try:
        os.link(temp, target, follow_symlinks=False)
    except FileExistsError:
        return False
    finally:
        temp.unlink(missing_ok=True)
    fsync_dir(directory)
    return True


def remove(root: Path, rel: str | PurePosixPath) -> bool:
    """Delete a regular file; True if it existed. The directory entry removal is fsynced."""
    target = check(root, rel, WRITE)
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(info.st_mode):
        raise UnsafePath(f"{WRITE} is not a regular file: {normalize(rel)}")
    target.unlink()
    fsync_dir(target.parent)
    return True


def walk_files(root: Path, rel_dir: str | PurePosixPath, *, recursive: bool = True,
               skip_symlinks: bool = False) -> Iterator[str]:
    """Relative paths of the regular files under ``rel_dir``, sorted by path.

    A symlink or special file raises UnsafePath, unless ``skip_symlinks`` (GedPi's
    non-recursive task scan skips symlink entries silently). A missing directory
    yields nothing.
    """
    clean = PurePosixPath() if str(rel_dir) in ("", ".") else normalize(rel_dir)
    base = check(root, clean) if clean.parts else Path(root)
    try:
        info = os.lstat(base)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePath(f"{READ} is not a directory: {clean}")
    found: list[str] = []
    stack = [clean]
    while stack:
        current = stack.pop()
        for entry in os.scandir(Path(root) / current):
            rel = (current / entry.name).as_posix()
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except FileNotFoundError:
                # Removed between the listing and its stat: a concurrent
                # writer's temporary file, renamed or unlinked. Not there to read.
                continue
            if stat.S_ISLNK(mode):
                if skip_symlinks:
                    continue
                raise UnsafePath(f"{READ} traverses a symbolic link: {rel}")
            if stat.S_ISDIR(mode):
                if recursive:
                    stack.append(current / entry.name)
            elif stat.S_ISREG(mode):
                found.append(rel)
            elif not skip_symlinks:
                raise UnsafePath(f"{READ} is not a regular file or directory: {rel}")
    yield from sorted(found)
