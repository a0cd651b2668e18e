"""GedPi's SKILL.md rules (gedpi-behaviour §4.2-4.3), as pure functions.

The front matter must use LF line endings, as in GedPi: CRLF is refused
rather than normalised, because the recorded hash covers the raw bytes
and a silently rewritten file would no longer be the one that was hashed.
"""

from __future__ import annotations

import re

from gedweb.lib.ids import SKILL_NAME, is_skill_name
from gedweb.lib.text import text_problem

MAX_CONTENT_CHARS = 100_000
MAX_REASON_CHARS = 500
MAX_SOURCE_CHARS = 1_000

_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---(?:\n|\Z)", re.DOTALL)
_DESCRIPTION_KEY = "description:"
# 'Triggers include "a", "b", or "c"': a run of quoted words joined by
# commas, "or" or "and".
_TRIGGERS = re.compile(
    r"Triggers include\s+((?:\"[^\"\n]*\"(?:\s*,\s*(?:or\s+|and\s+)?|\s+(?:or|and)\s+)?)+)"
)
_QUOTED = re.compile(r"\"([^\"\n]*)\"")


def name_problem(name: str) -> str | None:
    if not 1 <= len(name) <= 64:
        return "must be 1-64 characters"
    if not is_skill_name(name):
        return (
            "must be lowercase letters, digits and single inner hyphens "
            f"(^{SKILL_NAME}$, no '--')"
        )
    return None


def front_matter(content: str) -> str | None:
    match = _FRONT_MATTER.match(content)
    return match.group(1) if match else None


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _first_line_value(block: str, key: str) -> str | None:
    """The rest of the first line of block that starts with key, if any.

    String search instead of ``^description:[ \\t]*(.*?)[ \\t]*$`` (MULTILINE):
    the same line and the same value once stripped of spaces and tabs, but
    in one pass, where the pattern retried the lazy group at every space
    and tab of a line that did not end in them (20-40 s for 100 KB).
    """
    if block.startswith(key):
        start = 0
    else:
        start = block.find("\n" + key) + 1
        if start == 0:
            return None
    end = block.find("\n", start)
    return block[start + len(key) : end if end >= 0 else len(block)]


def description(content: str) -> str | None:
    block = front_matter(content)
    if block is None:
        return None
    value = _first_line_value(block, _DESCRIPTION_KEY)
    if value is None:
        return None
    return _unquote(value.strip(" \t").strip())


def content_problem(name: str, content: str) -> str | None:
    if not 1 <= len(content) <= MAX_CONTENT_CHARS:
        return f"must be 1-{MAX_CONTENT_CHARS:,} characters"
    # Blank content has no front matter, which the check below names.
    problem = text_problem(content, blank_allowed=True)
    if problem is not None:
        return problem
    block = front_matter(content)
    if block is None:
        return (
            "must start with YAML front matter: '---' and LF line endings, closed by '---' "
            "on its own line (CRLF is refused)"
        )
    names = re.compile(rf"^name:[ \t]*([\"']?){re.escape(name)}\1[ \t]*$", re.MULTILINE)
    if not names.search(block):
        return f"front matter must have the line 'name: {name}'"
    text = description(content)
    if text is None or len(text.strip()) < 2:
        return "front matter must have a 'description:' line of at least 2 characters"
    return None


def triggers(description_text: str | None) -> list[str]:
    """Words from 'Triggers include "a", "b"' in a description."""
    if not description_text:
        return []
    match = _TRIGGERS.search(description_text)
    if match is None:
        return []
    return [word for word in _QUOTED.findall(match.group(1)) if word.strip()]


def matches(trigger_words: list[str], text: str) -> bool:
    folded = text.casefold()
    return any(word.casefold() in folded for word in trigger_words)
