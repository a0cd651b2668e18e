"""A GedPi layout as a tar.gz archive: written deterministically, read as hostile input.

The format of `gedweb push` and `gedweb pull` (docs/interop.md, "Over HTTP"):
a tar archive (POSIX pax) compressed with gzip, as ``tar -czf`` makes one. Tar
rather than zip because it is read as one stream through one decompressor,
whose output is counted here while it is read; its members say what they are
(file, directory, link, device, FIFO) in one type field; and it has no second
directory that could disagree with the members (zip's central directory).

``pack`` writes one from ``{relative path: bytes}`` (sorted, owner 0, mtime 0,
mode 0644: the same files always give the same bytes). ``members`` reads one
without trusting it, in bounded time and memory:

- the compressed bytes are at most ``Limits.archive_bytes`` (the caller's body
  limit), and the decompressed stream is counted as it is read: past what the
  other limits allow (``Limits.stream_bytes``) the read stops, so a gzip bomb
  ends after that many bytes, never after the bomb's;
- at most ``Limits.members`` members, each file at most ``Limits.member_bytes``
  (refused from its header, before its data is read), all files together at
  most ``Limits.total_bytes``, each pax or GNU long-name header at most
  ``MAX_HEADER_BYTES`` (refused before tarfile reads it);
- only regular files and directories: a symbolic or hard link, a device, a
  FIFO, a sparse or any other member type is refused;
- a name must be relative, valid UTF-8 without control characters, without
  ``..`` or an empty part, at most ``MAX_NAME_BYTES``; ``./`` prefixes are
  dropped (``tar -czf x.tgz .`` writes them); the same name twice, or a
  name both a file and a directory, is refused;
- ``allowed(name, is_dir)`` says which names the caller takes at all.

Every refusal is one ``ArchiveError`` naming the member. Nothing here
touches the disk except ``extract``, which writes into a directory its caller
made for it.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MEDIA_TYPE = "application/gzip"
GZIP_MAGIC = b"\x1f\x8b"
MAX_NAME_BYTES = 1024  # GedPi's longest layout path is under 300 bytes
MAX_HEADER_BYTES = 16 * 1024  # one pax or GNU long-name header's data
_CHUNK = 1 << 16
# Per member, what the stream may hold besides its data: its header block, a
# pax header of up to a kilobyte (block and data; a long name is one), and the
# padding to a whole block. A header up to MAX_HEADER_BYTES is read, but the
# stream as a whole allows only this much per member on average.
_MEMBER_OVERHEAD = 5 * tarfile.BLOCKSIZE
_ARCHIVE_OVERHEAD = tarfile.RECORDSIZE + 2 * tarfile.BLOCKSIZE

_HEADER_TYPES = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE,
                 tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
_FILE_TYPES = (tarfile.REGTYPE, tarfile.AREGTYPE)
_REFUSED_TYPES = {
    tarfile.SYMTYPE: "a symbolic link",
    tarfile.LNKTYPE: "a hard link",
    tarfile.CHRTYPE: "a character device",
    tarfile.BLKTYPE: "a block device",
    tarfile.FIFOTYPE: "a FIFO",
    tarfile.GNUTYPE_SPARSE: "a sparse file",
    tarfile.CONTTYPE: "a contiguous file",
}


class ArchiveError(Exception):
    """The archive is refused: one line for people, naming the member at fault."""


@dataclass(frozen=True)
class Limits:
    archive_bytes: int  # the compressed archive
    members: int  # files and directories
    member_bytes: int  # one file
    total_bytes: int  # all files together

    @property
    def stream_bytes(self) -> int:
        """The most decompressed bytes an archive within the other limits can hold."""
        return (self.total_bytes + self.members * _MEMBER_OVERHEAD + _ARCHIVE_OVERHEAD)


def pack(files: Mapping[str, bytes]) -> bytes:
    """A tar.gz of ``files`` (relative POSIX paths), the same bytes for the same files."""
    raw = io.BytesIO()
    # mtime=0 in the gzip header too, so the bytes do not depend on the clock.
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as compressed, tarfile.open(
        fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT
    ) as archive:
        for name in sorted(files):
            data = files[name]
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            info.uname = info.gname = ""
            archive.addfile(info, io.BytesIO(data))
    return raw.getvalue()


class _Counted(io.RawIOBase):
    """The decompressed stream, refused once more than ``limit`` bytes came out of it."""

    def __init__(self, source: gzip.GzipFile, limit: int) -> None:
        self._source = source
        self._limit = limit
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)
        # Never ask the decompressor for more than one byte past the limit.
        wanted = min(len(view), self._limit + 1 - self.count)
        if wanted <= 0:
            raise ArchiveError(f"the archive unpacks to more than {self._limit:,} bytes, "
                               "the most its limits allow")
        data = self._source.read(wanted)
        self.count += len(data)
        if self.count > self._limit:
            raise ArchiveError(f"the archive unpacks to more than {self._limit:,} bytes, "
                               "the most its limits allow")
        view[:len(data)] = data
        return len(data)


class _BoundedTarInfo(tarfile.TarInfo):
    """tarfile's member, refusing an oversized pax or GNU long-name header before reading it."""

    def _proc_member(self, tarfile_: tarfile.TarFile) -> Any:
        if self.type in _HEADER_TYPES and self.size > MAX_HEADER_BYTES:
            raise ArchiveError(f"a tar extension header of {self.size:,} bytes; at most "
                               f"{MAX_HEADER_BYTES:,} are read")
        return super()._proc_member(tarfile_)  # type: ignore[misc]


def _shown(name: str) -> str:
    """A member name as an error quotes it: escaped, cut to 120 characters."""
    text = name.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
    text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
    return text if len(text) <= 120 else text[:117] + "..."


def clean_name(name: str) -> str:
    """The member's relative path with ``./`` dropped, or ArchiveError saying what is wrong."""
    shown = _shown(name)
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:
        raise ArchiveError(f"{shown}: the name is not valid UTF-8") from None
    if len(encoded) > MAX_NAME_BYTES:
        raise ArchiveError(f"{shown}: the name is longer than {MAX_NAME_BYTES:,} bytes")
    if any(ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 for c in name):
        raise ArchiveError(f"{shown}: the name holds a control character")
    if name.startswith("/"):
        raise ArchiveError(f"{shown}: an absolute path")
    parts = name.rstrip("/").split("/")
    if ".." in parts:
        raise ArchiveError(f"{shown}: the name goes up a directory (..)")
    kept = [part for part in parts if part != "."]
    if "" in kept:
        raise ArchiveError(f"{shown}: the name has an empty part")
    return "/".join(kept)


def members(data: bytes, limits: Limits,
            allowed: Callable[[str, bool], bool]) -> Iterator[tuple[str, bytes | None]]:
    """Each member as (clean name, its bytes, or None for a directory), in archive order.

    The whole archive is checked as it is read: a caller that keeps what it
    got must wait for the end before acting on any of it, since a refusal
    may come at the last member.
    """
    if len(data) > limits.archive_bytes:
        raise ArchiveError(f"the archive is larger than {limits.archive_bytes:,} bytes")
    if not data.startswith(GZIP_MAGIC):
        raise ArchiveError("the body is not a gzip-compressed tar archive (.tar.gz)")
    source = gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb")
    stream = _Counted(source, limits.stream_bytes)
    try:
        yield from _read(stream, limits, allowed)
    except ArchiveError:
        raise
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile, OSError,
            ValueError) as exc:
        # A truncated or corrupt stream, or bytes that are not tar inside the gzip.
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise ArchiveError(f"the body is not a valid tar.gz archive: {detail}") from None


def _read(stream: _Counted, limits: Limits,
          allowed: Callable[[str, bool], bool]) -> Iterator[tuple[str, bytes | None]]:
    seen: dict[str, bool] = {}  # name -> is a directory
    parents: set[str] = set()  # every directory a file's name passes through
    count = total = 0
    with tarfile.open(fileobj=stream, mode="r|", tarinfo=_BoundedTarInfo,
                      encoding="utf-8", errors="surrogateescape") as archive:
        for info in archive:
            count += 1
            if count > limits.members:
                raise ArchiveError(f"the archive has more than {limits.members:,} members")
            name = clean_name(info.name)
            shown = _shown(info.name)
            refused = _REFUSED_TYPES.get(info.type)
            if refused is None and info.type not in (*_FILE_TYPES, tarfile.DIRTYPE):
                refused = f"a member of tar type {info.type!r}"
            if refused is not None:
                raise ArchiveError(f"{shown}: {refused}; only regular files and "
                                   "directories are taken")
            is_dir = info.type == tarfile.DIRTYPE
            if not name:
                if is_dir:
                    continue  # "./": the root itself
                raise ArchiveError(f"{shown}: a file without a name")
            if name in seen:
                raise ArchiveError(f"{shown}: the archive holds {name} twice")
            if not allowed(name, is_dir):
                raise ArchiveError(f"{shown}: not a file of the GedPi layout")
            ancestors = [name[:i] for i, c in enumerate(name) if c == "/"]
            clash = next((a for a in ancestors if seen.get(a) is False), None)
            if clash is not None or (not is_dir and name in parents):
                raise ArchiveError(f"{shown}: the archive has {clash or name} both as a file "
                                   "and as a directory")
            seen[name] = is_dir
            parents.update(ancestors)
            if is_dir:
                yield name, None
                continue
            if info.size > limits.member_bytes:
                raise ArchiveError(f"{shown}: {info.size:,} bytes; a file may hold at most "
                                   f"{limits.member_bytes:,}")
            total += info.size
            if total > limits.total_bytes:
                raise ArchiveError(f"the archive's files hold more than "
                                   f"{limits.total_bytes:,} bytes together")
            handle = archive.extractfile(info)
            assert handle is not None  # a regular file always has a reader
            chunks, size = [], 0
            while chunk := handle.read(min(_CHUNK, info.size - size)):
                chunks.append(chunk)
                size += len(chunk)
            if size != info.size:
                raise ArchiveError(f"{shown}: the archive ends inside this file")
            yield name, b"".join(chunks)
    if count == 0:
        # Also what a stream of zeros is: tar's end marker, first.
        raise ArchiveError("the archive holds no member")


def read_all(data: bytes, limits: Limits, allowed: Callable[[str, bool], bool]) -> dict[str, bytes]:
    """Every file of the archive (directories left out), once all of it was checked."""
    return {name: body for name, body in members(data, limits, allowed) if body is not None}


def extract(data: bytes, dest: Path, limits: Limits, allowed: Callable[[str, bool], bool]) -> int:
    """Write the archive's files under ``dest``, an empty directory the caller owns.

    At most one file is in memory at a time. Nothing is written outside
    ``dest``: names were cleaned (no absolute path, no ``..``) and no link is
    ever created, so no path under ``dest`` leads out of it. On a refusal
    ``dest`` may hold part of the archive: the caller removes it. Returns the
    number of files written.
    """
    written = 0
    for name, body in members(data, limits, allowed):
        target = dest.joinpath(*name.split("/"))
        try:
            if body is None:
                target.mkdir(mode=0o700, parents=True, exist_ok=True)
                continue
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(body)
        except OSError as exc:
            raise ArchiveError(f"{_shown(name)}: cannot be unpacked "
                               f"({exc.strerror or exc})") from None
        written += 1
    return written
