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

Both sources may be hostile (docs/interop.md, "Hostile files"): the database
is opened read-only and immutable, with its views and triggers refused, only
the expected columns selected, and SQLite held to an operation budget, a
value-size limit and a small page cache; rows and bytes are counted while
they stream, and the mirror is read up to a size limit and parsed in linear
time. Every limit below is a module constant, so a test can lower it.
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
from typing import cast

from gedweb.lib.ids import IDEMPOTENCY_KEY_RE
from memory.services import ImportRow
from memory.validators import MAX_CONTENT_BYTES

# Limits on what ferryman_import reads (docs/interop.md, "Hostile files").
MAX_ROWS = 100_000  # memory rows of the chosen project, or entries of a MEMORY.md
MAX_PROJECTS = 10_000  # rows of projects
MAX_SCHEMA_OBJECTS = 1_000  # rows of sqlite_master (Ferryman's schema has about 30)
# Any one value SQLite hands back (SQLITE_LIMIT_LENGTH): four times GedWeb's content
# limit, so content a little too long still gets the validator's message naming its row.
MAX_VALUE_BYTES = 4 * MAX_CONTENT_BYTES
MAX_TOTAL_BYTES = 256 * 1024 * 1024  # the text of all rows read, and a MEMORY.md's size
MAX_SQLITE_STEPS = 200_000_000  # SQLite VM steps per import: ~3 s; 100,000 rows take ~2M
CACHE_KIB = 16 * 1024  # SQLite's page cache for the import connection
_PROGRESS_INTERVAL = 10_000

REQUIRED_COLUMNS = {
    "projects": ("id", "name"),
    "project_memory": ("id", "project_id", "category", "content", "source", "created_at"),
}

_HEADING = re.compile(r"\n## (?P<created_at>\S+) · (?P<category>[^\n]*)\n\n")
# Found at every position (a lookahead), so overlapping candidates are all seen.
_TRAILER = re.compile(r"(?=\n\n_Source: (?P<source>[^\n]*) \| Entry: (?P<id>[^\s|]+)_\n)")
_TRAILER_LENGTH = len("\n\n_Source:  | Entry: _\n")


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
        return f"Ferryman entry {shown(self.id)} ({self.where})"


def shown(value: object) -> str:
    """A value from the source as it goes into a one-line message: short and printable."""
    text = value if isinstance(value, str) else repr(value)
    if text.isprintable() and 0 < len(text) <= 80:
        return text
    text = repr(text)
    return text if len(text) <= 80 else text[:77] + "..."


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


def _read_source(path: Path, limit: int) -> bytes:
    _check_source(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise FerrymanSourceError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise FerrymanSourceError(f"{path} is not a regular file")
        # Read one byte past the limit: a file growing while it is read is caught too.
        data = b"" if info.st_size > limit else handle.read(limit + 1)
        if info.st_size > limit or len(data) > limit:
            raise FerrymanSourceError(
                f"{path} is larger than {limit:,} bytes, the most ferryman_import reads"
            )
        return data


class _Budget:
    """SQLite's progress handler: aborts a statement once the import used its steps."""

    def __init__(self, steps: int) -> None:
        self.calls_left = max(steps // _PROGRESS_INTERVAL, 1)
        self.exhausted = False

    def __call__(self) -> int:
        self.calls_left -= 1
        if self.calls_left < 0:
            self.exhausted = True
            return 1
        return 0


def _is_live(path: Path) -> bool:
    """True when the database has a non-empty write-ahead log (Ferryman running).

    An immutable connection does not look at the log, so rows Ferryman
    committed but did not checkpoint yet would be silently missing; such a
    database is opened read-only without ``immutable`` instead, which reads
    the log (and takes SQLite's shared read lock, as any reader does).
    """
    wal = path.with_name(path.name + "-wal")
    try:
        info = os.lstat(wal)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise FerrymanSourceError(f"cannot read {wal}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise FerrymanSourceError(f"{wal} is not a regular file")
    return info.st_size > 0


def _connect(path: Path) -> tuple[sqlite3.Connection, _Budget]:
    _check_source(path)
    # immutable: no locks, no -wal or -shm created, nothing ever written.
    mode = "mode=ro" if _is_live(path) else "mode=ro&immutable=1"
    budget = _Budget(MAX_SQLITE_STEPS)
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True)
    except sqlite3.Error as exc:
        raise FerrymanSourceError(f"{path} is not a readable SQLite database: {exc}") from None
    try:
        connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        connection.set_progress_handler(budget, _PROGRESS_INTERVAL)
        # Bounded memory: a small page cache, sorts spill to files, no memory map.
        connection.execute(f"PRAGMA cache_size = -{int(CACHE_KIB)}")
        connection.execute("PRAGMA temp_store = FILE")
        connection.execute("PRAGMA mmap_size = 0")
        connection.execute("PRAGMA query_only = ON")
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        connection.close()
        raise _sqlite_refusal(path, exc, budget, "its schema",
                              prefix="is not a readable SQLite database") from None
    return connection, budget


def _sqlite_refusal(path: Path, exc: sqlite3.Error, budget: _Budget, what: str,
                    prefix: str = "cannot be read") -> FerrymanSourceError:
    if budget.exhausted:
        return FerrymanSourceError(
            f"{path}: reading {what} took more than {MAX_SQLITE_STEPS:,} SQLite steps, "
            "the most ferryman_import spends (a hostile or damaged database?)"
        )
    if isinstance(exc, sqlite3.DataError) or "too big" in str(exc):
        return FerrymanSourceError(
            f"{path}: {what} holds a value larger than {MAX_VALUE_BYTES:,} bytes, "
            "the most ferryman_import reads"
        )
    return FerrymanSourceError(f"{path} {prefix}: {exc}")


def _names(objects: list[tuple[str, str]]) -> str:
    listed = [f"{kind} {shown(name)}" for kind, name in objects[:10]]
    if len(objects) > 10:
        listed.append(f"and {len(objects) - 10} more")
    return ", ".join(listed)


def _check_schema(connection: sqlite3.Connection, path: Path) -> None:
    """Only Ferryman's plain tables: no view or trigger anywhere, nothing computed on read."""
    objects = connection.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master LIMIT ?",
        [MAX_SCHEMA_OBJECTS + 1],
    ).fetchall()
    if len(objects) > MAX_SCHEMA_OBJECTS:
        raise FerrymanSourceError(
            f"{path} is not a Ferryman bridge.db: its schema has more than "
            f"{MAX_SCHEMA_OBJECTS:,} objects"
        )
    refused = [(kind, name) for kind, name, _, _ in objects if kind in ("view", "trigger")]
    if refused:
        raise FerrymanSourceError(
            f"{path} is not a Ferryman bridge.db: it holds {_names(refused)} "
            "(a bridge.db has no views or triggers, and ferryman_import reads none)"
        )
    kinds = {name: (kind, sql) for kind, name, _, sql in objects if kind == "table"}
    for table, columns in REQUIRED_COLUMNS.items():
        if table not in kinds:
            raise FerrymanSourceError(f"{path} is not a Ferryman bridge.db: no table {table}")
        sql = kinds[table][1]
        if isinstance(sql, str) and re.match(r"\s*CREATE\s+VIRTUAL\b", sql, re.IGNORECASE):
            raise FerrymanSourceError(
                f"{path} is not a Ferryman bridge.db: {table} is a virtual table"
            )
        info = {row[1]: row[6] for row in connection.execute(f"PRAGMA table_xinfo({table})")}
        missing = [name for name in columns if name not in info]
        if missing:
            raise FerrymanSourceError(
                f"{path} is not a Ferryman bridge.db: table {table} lacks "
                + ", ".join(missing)
            )
        # hidden 2 and 3 are generated columns, computed from an expression on read.
        generated = [name for name in columns if info[name] != 0]
        if generated:
            raise FerrymanSourceError(
                f"{path} is not a Ferryman bridge.db: {table}."
                + f", {table}.".join(generated)
                + " is generated, not stored"
            )


def _pick_project(connection: sqlite3.Connection, wanted: str | None, path: Path) -> str:
    ids = [row[0] for row in connection.execute(
        "SELECT id FROM projects ORDER BY id LIMIT ?", [MAX_PROJECTS + 1]
    )]
    if len(ids) > MAX_PROJECTS:
        raise FerrymanSourceError(
            f"{path} holds more than {MAX_PROJECTS:,} Ferryman projects, "
            "the most ferryman_import reads"
        )
    for value in ids:
        if not isinstance(value, str):
            raise FerrymanSourceError(f"Ferryman project {shown(value)}: id is not text")
    if wanted is not None:
        if wanted not in ids:
            raise FerrymanSourceError(
                f"no Ferryman project {wanted!r} in the database (it has: "
                + (", ".join(map(shown, ids)) or "none")
                + ")"
            )
        return wanted
    if len(ids) == 1:
        return str(ids[0])
    if not ids:
        raise FerrymanSourceError("the database holds no Ferryman project")
    raise FerrymanSourceError(
        f"the database holds {len(ids)} Ferryman projects ({', '.join(map(shown, ids))}); "
        "choose one with --ferryman-project"
    )


def _memory_rows(connection: sqlite3.Connection, path: Path,
                 project_id: str) -> list[FerrymanEntry]:
    """The project's rows, streamed and counted; refused past the row or byte budget."""
    count = connection.execute(
        "SELECT count(*) FROM (SELECT 1 FROM project_memory WHERE project_id = ? LIMIT ?)",
        [project_id, MAX_ROWS + 1],
    ).fetchone()[0]
    if count > MAX_ROWS:
        raise FerrymanSourceError(
            f"{path}: Ferryman project {shown(project_id)} has more than {MAX_ROWS:,} "
            "memory rows, the most ferryman_import reads in one run"
        )
    entries = []
    total = 0
    cursor = connection.execute(
        "SELECT id, category, content, source, created_at FROM project_memory"
        " WHERE project_id = ?",
        [project_id],
    )
    for row in cursor:
        entry_id = row[0]
        for name, value in zip(("id", "category", "content", "source", "created_at"), row,
                               strict=True):
            if not isinstance(value, str):
                raise FerrymanSourceError(f"Ferryman row {shown(entry_id)}: {name} is not text")
            total += len(value.encode("utf-8"))
        if total > MAX_TOTAL_BYTES:
            raise FerrymanSourceError(
                f"{path}: the memory rows of Ferryman project {shown(project_id)} hold more "
                f"than {MAX_TOTAL_BYTES:,} bytes of text, the most ferryman_import reads"
            )
        category, content, source, created_at = row[1:]
        entries.append(FerrymanEntry(entry_id, category, content, source, created_at, "bridge.db"))
    return entries


def read_database(path: Path, ferryman_project: str | None) -> tuple[str, list[FerrymanEntry]]:
    """The chosen project's id and its memory rows, oldest first."""
    connection, budget = _connect(path)
    what = "its schema"
    try:
        _check_schema(connection, path)
        what = "projects"
        project_id = _pick_project(connection, ferryman_project, path)
        what = "project_memory"
        entries = _memory_rows(connection, path, project_id)
    except sqlite3.Error as exc:
        raise _sqlite_refusal(path, exc, budget, what) from None
    finally:
        connection.close()
    # Ferryman lists by (created_at, id); compare the instants, not the text.
    times = {entry.id: parse_time(entry.created_at, entry.label) for entry in entries}
    entries.sort(key=lambda entry: (times[entry.id], entry.id))
    return project_id, entries


# --- MEMORY.md -----------------------------------------------------------------------


def _blocks(body: str) -> tuple[list[tuple[re.Match[str], re.Match[str]]] | None, int]:
    """(heading, trailer) per entry covering body; each block ends at its first trailer
    after which the rest of body still parses as entries.

    Returns None and the furthest block start that could not be parsed on failure.
    Linear in len(body) (a hostile file may be large): whether the rest parses from
    each trailer's end is decided once, from the last trailer back, instead of by
    backtracking, which took quadratic time on many entries followed by garbage.
    """
    trailers = list(_TRAILER.finditer(body))
    starts = [match.start() for match in trailers]
    ends = [
        match.start() + _TRAILER_LENGTH + len(match["source"]) + len(match["id"])
        for match in trailers
    ]
    count = len(trailers)
    blank_from = len(body.rstrip())  # \s and str.isspace agree

    def first_trailer(heading: re.Match[str]) -> int:
        return bisect.bisect_left(starts, heading.end())

    # good[i]: the first trailer index >= i after whose end the rest parses (count: none).
    # A heading starting at ends[t] ends after it, so good[t] needs only good[> t].
    good = [count] * (count + 1)
    for index in range(count - 1, -1, -1):
        position = ends[index]
        parses = position >= blank_from
        if not parses:
            heading = _HEADING.match(body, position)
            parses = heading is not None and good[first_trailer(heading)] < count
        good[index] = index if parses else good[index + 1]

    blocks = []
    position = 0
    while position < blank_from:
        heading = _HEADING.match(body, position)
        candidate = good[first_trailer(heading)] if heading else count
        if candidate == count:
            # Every block start reachable from the top failed; report the furthest one:
            # the end of the last trailer after the first heading that a block could follow.
            furthest = 0
            if position == 0 and heading is not None:
                for index in range(count - 1, first_trailer(heading) - 1, -1):
                    if body.startswith("\n## ", ends[index]) or ends[index] >= blank_from:
                        furthest = ends[index]
                        break
            return None, furthest
        # candidate < count only when a heading matched here.
        blocks.append((cast("re.Match[str]", heading), trailers[candidate]))
        position = ends[candidate]
    return blocks, 0


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
    if len(blocks) > MAX_ROWS:
        raise FerrymanSourceError(
            f"MEMORY.md holds more than {MAX_ROWS:,} entries, the most ferryman_import reads "
            "in one run"
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
        text = _read_source(path, MAX_TOTAL_BYTES).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FerrymanSourceError(f"{path} is not UTF-8 text: {exc}") from None
    except OSError as exc:
        raise FerrymanSourceError(f"cannot read {path}: {exc.strerror}") from None
    return parse_mirror(text)
