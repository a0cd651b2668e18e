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


_TRAILER = re.compile(
    r"_Source: .* \| Author: .* \| Entry: (?P<id>[0-9a-f-]{36})"
    r" \| Corrects: (?:[0-9a-f-]{36}|-) \| Hash: (?P<hash>[0-9a-f]{64})_\n\Z"
)


def parse_last_trailer(tail: str) -> tuple[str, str] | None:
    """(entry id, hash) named by the provenance line that ends the mirror, if any."""
    last_line_start = tail.rfind("\n", 0, len(tail) - 1) + 1
    match = _TRAILER.match(tail, last_line_start)
    if match is None:
        return None
    return match.group("id"), match.group("hash")
