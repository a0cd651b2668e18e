"""Byte format of the MEMORY.md mirror (contract §4, "Markdown mirror").

The file is the header block followed by one block per entry, blocks
separated by a single blank line. Each entry's content sits inside a
backtick fence longer than any backtick run it contains, so content can
never close the fence and forge a heading or an entry of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

_BACKTICK_RUN = re.compile(r"`+")


def fence_for(content: str) -> str:
    longest = max((len(run) for run in _BACKTICK_RUN.findall(content)), default=0)
    return "`" * max(3, longest + 1)


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
        f"_Source: {entry['source']} | Author: {entry['author']} | Entry: {entry['id']}"
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
