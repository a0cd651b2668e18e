"""A Markdown document's sections: where recall cuts a document to rank its parts.

A section runs from an ATX heading line (``#`` to ``######`` and a space)
to the next heading of any level; text before the first heading is a
section of its own, without a heading, when it holds anything. Lines
inside fenced code blocks (``` or ~~~) are never headings. One pass over
the lines: linear in the text.
"""

from __future__ import annotations

from dataclasses import dataclass

# Sections past this many are folded into the last: a document of 10,000
# headings still gives a bounded index.
MAX_SECTIONS = 200


@dataclass(frozen=True)
class Section:
    heading: str  # the heading's text without its #s; "" for the preamble
    start: int  # character offsets into the document: text[start:end]
    end: int


def _heading(line: str) -> str | None:
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3:
        return None  # four spaces of indent: a code block, not a heading
    hashes = len(stripped) - len(stripped.lstrip("#"))
    if not 1 <= hashes <= 6:
        return None
    rest = stripped[hashes:]
    if rest and rest[0] not in " \t":
        return None
    return rest.strip().rstrip("#").strip()


def markdown_sections(text: str) -> list[Section]:
    """The sections of ``text`` in order; a text without headings is one section."""
    starts: list[tuple[str, int]] = []
    fence: str | None = None
    offset = 0
    for line in text.splitlines(keepends=True):
        bare = line.strip()
        if fence is not None:
            if bare.startswith(fence):
                fence = None
        elif bare.startswith("```") or bare.startswith("~~~"):
            fence = bare[:3]
        else:
            heading = _heading(line.rstrip("\r\n"))
            if heading is not None:
                starts.append((heading, offset))
        offset += len(line)
    sections: list[Section] = []
    first = starts[0][1] if starts else len(text)
    if text[:first].strip():
        sections.append(Section("", 0, first))
    for index, (heading, start) in enumerate(starts):
        end = starts[index + 1][1] if index + 1 < len(starts) else len(text)
        sections.append(Section(heading, start, end))
    if len(sections) > MAX_SECTIONS:
        last = sections[MAX_SECTIONS - 1]
        sections = [*sections[: MAX_SECTIONS - 1], Section(last.heading, last.start, len(text))]
    return sections
