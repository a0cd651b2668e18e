"""Byte format of the MEMORY.md mirror (contract §4, "Markdown mirror").

The file is the header block followed by one block per entry, blocks
separated by a single blank line. Each entry's content sits inside a
backtick fence longer than any backtick run it contains, so content can
never close the fence and forge a heading or an entry of its own.

``source`` and ``author`` are written by ``provenance_value`` so that no value
can forge another field, entry or markup in the provenance line (issue 16 §6):
an ordinary value (ASCII letters and digits, single ``._:@/+-`` or spaces
between them) as it is, byte for byte as before; any other value as a
CommonMark code span, whose backtick fence is one longer than any backtick
run in the value, so ``|``, ``_``, ``*``, ``<b>`` and ``Author:`` inside it are
literal text. ``parse_provenance`` reads a line back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

_BACKTICK_RUN = re.compile(r"`+")


def fence_for(content: str) -> str:
    longest = max((len(run) for run in _BACKTICK_RUN.findall(content)), default=0)
    return "`" * max(3, longest + 1)


# Written as they are: alphanumeric runs joined by one harmless separator. Such
# a value holds no "|", no backtick, no ": " (so no field label), no "_" beside
# a space and no Markdown or HTML syntax.
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9]+(?:[ ._:@/+-][A-Za-z0-9]+)*")


def provenance_value(value: str) -> str:
    """``source`` or ``author`` as the provenance line writes it; ``parse_provenance`` inverts it.

    Not ordinary: a code span. Its content is the value itself, or, for a value
    that is empty, starts with ``"`` or holds a character that is not printable
    (a newline, a control or bidi character: the validators refuse these, but a
    row changed behind GedWeb's back may hold one), the value as a JSON string
    in printable ASCII, so the line stays one line. Content that starts or ends
    with a space or a backtick is padded with one space on each side, which
    CommonMark strips again.
    """
    if _PLAIN_VALUE.fullmatch(value):
        return value
    if not value or value.startswith('"') or not value.isprintable():
        value = json.dumps(value)
    fence = "`" * (max((len(run) for run in _BACKTICK_RUN.findall(value)), default=0) + 1)
    pad = " " if value[0] in "` " or value[-1] in "` " else ""
    if not value.strip(" "):
        pad = ""  # CommonMark strips nothing from a span of spaces only
    return f"{fence}{pad}{value}{pad}{fence}"


def _read_value(line: str, start: int) -> tuple[str, int] | None:
    """The value written by provenance_value at line[start:], and where it ends."""
    if line.startswith("`", start):
        fence = _BACKTICK_RUN.match(line, start)
        assert fence is not None
        width = fence.end() - start
        for run in _BACKTICK_RUN.finditer(line, fence.end()):
            if run.end() - run.start() == width:
                content = line[fence.end():run.start()]
                break
        else:
            return None
        if len(content) >= 2 and content[0] == content[-1] == " " and content.strip(" "):
            content = content[1:-1]
        if content.startswith('"'):
            try:
                decoded = json.loads(content)
            except ValueError:
                return None
            if not isinstance(decoded, str):
                return None
            content = decoded
        return content, run.end()
    plain = _PLAIN_VALUE.match(line, start)
    return (plain.group(), plain.end()) if plain else None


_PROVENANCE_END = re.compile(
    r" \| Entry: (?P<id>[0-9a-f-]{36})"
    r" \| Corrects: (?P<corrects>[0-9a-f-]{36}|-) \| Hash: (?P<hash>[0-9a-f]{64})_"
)


def parse_provenance(line: str) -> dict[str, str | None] | None:
    """The fields of one provenance line (without its newline), or None if it is not one.

    ``{"source", "author", "id", "corrects", "hash"}``; ``corrects`` is None for
    ``-``. Linear in the line's length.
    """
    if not line.startswith(_TRAILER_START):
        return None
    source = _read_value(line, len(_TRAILER_START))
    if source is None or not line.startswith(_TRAILER_AUTHOR, source[1]):
        return None
    author = _read_value(line, source[1] + len(_TRAILER_AUTHOR))
    if author is None:
        return None
    end = _PROVENANCE_END.fullmatch(line, author[1])
    if end is None:
        return None
    corrects = end.group("corrects")
    return {"source": source[0], "author": author[0], "id": end.group("id"),
            "corrects": None if corrects == "-" else corrects, "hash": end.group("hash")}


def render_header(project_id: str) -> str:
    return (
        f"# Project memory: {project_id}\n"
        "\n"
        "<!-- gedweb mirror v1: generated from the append-only record; do not edit -->\n"
    )


def render_entry(entry: Mapping[str, Any]) -> str:
    """One entry block, ending with a newline and without the leading blank line."""
    content = entry["content"]
    if not content.endswith("\n"):
        content += "\n"
    fence = fence_for(content)
    corrects = entry["corrects"] or "-"
    return (
        f"## {entry['seq']} · {entry['created_at']} · {entry['category']}\n"
        "\n"
        f"{fence}\n"
        f"{content}"
        f"{fence}\n"
        "\n"
        f"_Source: {provenance_value(entry['source'])}"
        f" | Author: {provenance_value(entry['author'])} | Entry: {entry['id']}"
        f" | Corrects: {corrects} | Hash: {entry['hash']}_\n"
    )


def render_append(entry: Mapping[str, Any]) -> str:
    """What appending one entry adds to an existing mirror."""
    return "\n" + render_entry(entry)


def render_chunks(project_id: str, entries: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """The whole mirror as a stream of text chunks, for rebuilds and downloads."""
    yield render_header(project_id)
    for entry in entries:
        yield render_append(entry)


def render_full(project_id: str, entries: Iterable[Mapping[str, Any]]) -> str:
    return "".join(render_chunks(project_id, entries))


# The fixed-length end of a provenance line. Matching the whole line as
# ``_Source: .* \| Author: .* \| Entry: ...`` backtracks both ``.*`` over
# every " | Author: " and " | Entry: " in the line, quadratic in its length;
# the end is found by its length instead, and the start by plain string tests.
_TRAILER_END = re.compile(
    r" \| Entry: (?P<id>[0-9a-f-]{36})"
    r" \| Corrects: (?:[0-9a-f-]{36}|-) \| Hash: (?P<hash>[0-9a-f]{64})_\n"
)
_TRAILER_END_LENGTHS = tuple(
    len(" | Entry: ") + 36 + len(" | Corrects: ") + corrects + len(" | Hash: ") + 64 + len("_\n")
    for corrects in (36, 1)
)
_TRAILER_START = "_Source: "
_TRAILER_AUTHOR = " | Author: "


def parse_last_trailer(tail: str) -> tuple[str, str] | None:
    """(entry id, hash) named by the provenance line that ends the mirror, if any."""
    last_line_start = tail.rfind("\n", 0, len(tail) - 1) + 1
    for length in _TRAILER_END_LENGTHS:
        end_start = len(tail) - length
        match = _TRAILER_END.fullmatch(tail, end_start) if end_start >= 0 else None
        if match is None:
            continue
        head = tail[last_line_start:end_start]
        if head.startswith(_TRAILER_START) and head.find(_TRAILER_AUTHOR, len(_TRAILER_START)) >= 0:
            return match.group("id"), match.group("hash")
    return None
