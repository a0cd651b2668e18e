"""Reading Ferryman's bridge-owned project memory, for `manage.py ferryman_import`.

Two sources (reference/ferryman-memory.md §3 and §4):

- ``bridge.db``: SQLite tables ``projects`` and ``project_memory``, opened
  read-only; rows in Ferryman's list order (created_at, then id), with the
  time compared as an instant rather than as text.
- ``MEMORY.md``: Ferryman's append-only mirror, in file order. Each entry is
  ``\\n## <created_at> · <category>\\n\\n<content>\\n\\n_Source: <source> | Entry: <id>_\\n``.
  Ferryman does not escape content, so a provenance line inside content is
  ambiguous: a block ends at the first provenance line after which the rest
  of the file still parses as entries. Content that forges a whole entry
  cannot be told from one and is read as one.

Both give the same key per entry, ``ferryman:<entry id>``, so importing the
database and the mirror of one history never doubles an entry. Ferryman
has no structured corrections (a correction is free text), so none are made.
Nothing is mapped: a category, source or content GedWeb would refuse stops
the import before anything is written.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import re
import sqlite3
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memory.services import ImportRow
from memory.validators import IDEMPOTENCY_KEY_RE

REQUIRED_COLUMNS = {
    "projects": ("id", "name"),
    "project_memory": ("id", "project_id", "category", "content", "source", "created_at"),
}

_HEADING = re.compile(r"\n## (?P<created_at>\S+) · (?P<category>[^\n]*)\n\n")
# Found at every position (a lookahead), so overlapping candidates are all seen.
_TRAILER = re.compile(r"(?=\n\n_Source: (?P<source>[^\n]*) \| Entry: (?P<id>[^\s|]+)_\n)")
_TRAILER_LENGTH = len("\n\n_Source:  | Entry: _\n")
_NEXT_BLOCK = re.compile(r"\n## |\s*\Z")
_BLANK_REST = re.compile(r"\s*\Z")


class FerrymanSourceError(Exception):
    """The bridge.db or MEMORY.md cannot be read as Ferryman memory."""


@dataclass(frozen=True)
class FerrymanEntry:
    id: str
    category: str
    content: str
    source: str
    created_at: str
    where: str  # "bridge.db" or "MEMORY.md line N"

    @property
    def label(self) -> str:
        return f"Ferryman entry {self.id} ({self.where})"


def entry_key(entry_id: str) -> str:
    key = f"ferryman:{entry_id}"
    if IDEMPOTENCY_KEY_RE.fullmatch(key):
        return key
    # Ferryman ids are UUIDs; any other id still needs a key GedWeb accepts.
    return "ferryman:sha256:" + hashlib.sha256(entry_id.encode("utf-8")).hexdigest()


def parse_time(text: str, where: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise FerrymanSourceError(f"{where}: created_at {text!r} is not an RFC 3339 time") from None
    if moment.tzinfo is None:
        raise FerrymanSourceError(f"{where}: created_at {text!r} has no UTC offset")
    # Digits beyond microseconds (chrono may write nine) are dropped.
    return moment.astimezone(UTC)


def import_rows(entries: list[FerrymanEntry]) -> list[ImportRow]:
    return [
        ImportRow(
            key=entry_key(entry.id),
            category=entry.category,
            content=entry.content,
            source=entry.source,
            created_at=parse_time(entry.created_at, entry.label),
            label=entry.label,
        )
        for entry in entries
    ]


# --- bridge.db ---------------------------------------------------------------------


def _check_source(path: Path) -> None:
    """A Ferryman source must be a regular file named directly, never through a link.

    A symlinked bridge.db or MEMORY.md could point anywhere on the disk, and a
    FIFO or device would block or never end; both are refused before opening.
    """
    if "\x00" in str(path):
        raise FerrymanSourceError("the path contains a NUL byte")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        raise FerrymanSourceError(f"no such file: {path}") from None
    except OSError as exc:
        raise FerrymanSourceError(f"cannot read {path}: {exc.strerror}") from None
    if stat.S_ISLNK(mode):
        raise FerrymanSourceError(f"{path} is a symbolic link; name the file itself")
    if not stat.S_ISREG(mode):
        raise FerrymanSourceError(f"{path} is not a regular file")


def _read_source(path: Path) -> bytes:
    _check_source(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise FerrymanSourceError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise FerrymanSourceError(f"{path} is not a regular file")
        return handle.read()


def _connect(path: Path) -> sqlite3.Connection:
    _check_source(path)
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        raise FerrymanSourceError(f"{path} is not a readable SQLite database: {exc}") from None
    return connection


def _check_schema(connection: sqlite3.Connection, path: Path) -> None:
    for table, columns in REQUIRED_COLUMNS.items():
        present = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
        if not present:
            raise FerrymanSourceError(f"{path} is not a Ferryman bridge.db: no table {table}")
        missing = [name for name in columns if name not in present]
        if missing:
            raise FerrymanSourceError(
                f"{path} is not a Ferryman bridge.db: table {table} lacks "
                + ", ".join(missing)
            )


def _pick_project(connection: sqlite3.Connection, wanted: str | None) -> str:
    ids = [row[0] for row in connection.execute("SELECT id FROM projects ORDER BY id")]
    if wanted is not None:
        if wanted not in ids:
            raise FerrymanSourceError(
                f"no Ferryman project {wanted!r} in the database (it has: "
                + (", ".join(ids) or "none")
                + ")"
            )
        return wanted
    if len(ids) == 1:
        return str(ids[0])
    if not ids:
        raise FerrymanSourceError("the database holds no Ferryman project")
    raise FerrymanSourceError(
        f"the database holds {len(ids)} Ferryman projects ({', '.join(ids)}); "
        "choose one with --ferryman-project"
    )


def read_database(path: Path, ferryman_project: str | None) -> tuple[str, list[FerrymanEntry]]:
    """The chosen project's id and its memory rows, oldest first."""
    connection = _connect(path)
    try:
        _check_schema(connection, path)
        project_id = _pick_project(connection, ferryman_project)
        rows = connection.execute(
            "SELECT id, category, content, source, created_at FROM project_memory"
            " WHERE project_id = ?",
            [project_id],
        ).fetchall()
    except sqlite3.Error as exc:
        raise FerrymanSourceError(f"cannot read {path}: {exc}") from None
    finally:
        connection.close()
    entries = []
    for entry_id, category, content, source, created_at in rows:
        for name, value in (("id", entry_id), ("category", category), ("content", content),
                            ("source", source), ("created_at", created_at)):
            if not isinstance(value, str):
                raise FerrymanSourceError(f"Ferryman row {entry_id!r}: {name} is not text")
        entries.append(
            FerrymanEntry(entry_id, category, content, source, created_at, "bridge.db")
        )
    # Ferryman lists by (created_at, id); compare the instants, not the text.
    times = {entry.id: parse_time(entry.created_at, entry.label) for entry in entries}
    entries.sort(key=lambda entry: (times[entry.id], entry.id))
    return project_id, entries


# --- MEMORY.md -----------------------------------------------------------------------


def _blocks(body: str) -> tuple[list[tuple[re.Match[str], re.Match[str]]] | None, int]:
    """(heading, trailer) per entry covering body, backtracking over ambiguous trailers.

    Returns None and the furthest position that could not be parsed on failure.
    """
    trailers = list(_TRAILER.finditer(body))
    starts = [match.start() for match in trailers]
    ends = [
        match.start() + _TRAILER_LENGTH + len(match["source"]) + len(match["id"])
        for match in trailers
    ]
    failed: set[int] = set()
    stack: list[tuple[int, re.Match[str] | None, int]] = []  # start, heading, trailer index
    position, heading, candidate = 0, None, None
    while True:
        if candidate is None:
            if _BLANK_REST.match(body, position):
                return [(h, trailers[index]) for _, h, index in stack if h is not None], 0
            heading = None if position in failed else _HEADING.match(body, position)
            candidate = bisect.bisect_left(starts, heading.end()) if heading else len(trailers)
        while candidate < len(trailers) and (
            ends[candidate] in failed or not _NEXT_BLOCK.match(body, ends[candidate])
        ):
            candidate += 1
        if candidate < len(trailers):
            stack.append((position, heading, candidate))
            position, candidate = ends[candidate], None
            continue
        failed.add(position)
        if not stack:
            return None, max(failed)
        position, heading, previous = stack.pop()
        candidate = previous + 1


def parse_mirror(text: str) -> list[FerrymanEntry]:
    """Every entry of a Ferryman MEMORY.md, in file order; anything else is an error."""
    # Each block starts with a blank line; a file edited by hand may not.
    offset = 0 if text.startswith("\n") else 1
    body = "\n" * offset + text

    def line_at(index: int) -> int:
        # The line of the character after body[index], numbered in text.
        return text.count("\n", 0, max(index + 1 - offset, 0)) + 1

    blocks, furthest = _blocks(body)
    if blocks is None:
        raise FerrymanSourceError(
            f"MEMORY.md line {line_at(furthest)}: expected an entry "
            "('## <created_at> · <category>', content, '_Source: <source> | Entry: <id>_')"
        )
    entries = []
    line, counted = 1, 0
    for heading, trailer in blocks:
        # Counted incrementally: one count per entry from the start would be quadratic.
        line += body.count("\n", counted, heading.start() + 1)
        counted = heading.start() + 1
        entries.append(
            FerrymanEntry(
                id=trailer["id"],
                category=heading["category"],
                content=body[heading.end() : trailer.start()],
                source=trailer["source"],
                created_at=heading["created_at"],
                where=f"MEMORY.md line {line - offset}",
            )
        )
    return entries


def read_mirror(path: Path) -> list[FerrymanEntry]:
    try:
        text = _read_source(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FerrymanSourceError(f"{path} is not UTF-8 text: {exc}") from None
    except OSError as exc:
        raise FerrymanSourceError(f"cannot read {path}: {exc.strerror}") from None
    return parse_mirror(text)
