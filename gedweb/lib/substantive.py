"""GedPi's substantive-content rule for durable documents (gedpi-behaviour.md §1.1).

A port of GedPi's ``isSubstantiveMarkdown``. GedPi runs JavaScript regular
expressions with the ``u`` flag and ``String.prototype.trim``; Python's
``\\s``, ``.`` and ``str.strip()`` use different character sets, so those
sets are spelled out here to give the same answer for every input.
"""

from __future__ import annotations

import re

from gedweb.lib.governance import SPEC_TEMPLATE, TASKS_TEMPLATE, TESTS_TEMPLATE

# ECMAScript WhiteSpace and LineTerminator: what ``\s`` matches and what
# ``trim()`` removes. Python's str.isspace() differs (it counts \x1c-\x1f
# and not U+FEFF).
JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_S = "[" + re.escape(JS_WHITESPACE) + "]"
# ECMAScript ``.`` without the s flag: anything but a line terminator.
_DOT = "[^\n\r\u2028\u2029]"

# Appendix A: the legacy `.ged/PROJECT.md` placeholder, exactly these bytes.
LEGACY_PROJECT_PLACEHOLDER = (
    "# Project\n\n## Goal\n\nDescribe what this project should achieve.\n\n## Users\n\n"
    "- Primary users:\n- Secondary users:\n\n## Constraints\n\n- Technical constraints:\n"
    "- Product constraints:\n\n## Success Criteria\n\n- What does success look like?\n"
)

# Compared as whole documents, so that a template whose table header or
# "- Primary users:" line would otherwise survive still counts as empty.
NON_SUBSTANTIVE_DOCUMENTS = frozenset(
    {SPEC_TEMPLATE, TASKS_TEMPLATE, TESTS_TEMPLATE, LEGACY_PROJECT_PLACEHOLDER}
)

# Possessive quantifiers: with a plain ``{_S}+{_DOT}*``, a heading-like line
# that fails (a "\r" after its spaces) is retried at every split of its
# spaces, time quadratic in the line (16 s for a 60 KB TASKS.md). Giving
# nothing back matches exactly the same lines, because every whitespace
# character except a line terminator is also a ``{_DOT}``: when any split
# works, the longest whitespace run works too.
_HEADING = re.compile(rf"#{{1,6}}(?:{_S}++{_DOT}*+)?")
_TABLE_SEPARATOR = re.compile(rf"\|?(?:{_S}*:?-{{3,}}:?{_S}*\|)+")
_PLACEHOLDER_BULLET = re.compile(rf"[-*+]{_S}*(?:none yet|tbd|todo)?[.:]?", re.IGNORECASE)
_BARE_PLACEHOLDER = re.compile(r"(?:none yet|tbd|todo)[.:]?", re.IGNORECASE)
_SCAFFOLDING = (_HEADING, _TABLE_SEPARATOR, _PLACEHOLDER_BULLET, _BARE_PLACEHOLDER)


def js_trim(text: str) -> str:
    return text.strip(JS_WHITESPACE)


def is_scaffolding(line: str) -> bool:
    """A trimmed line that carries no content: heading, separator row or placeholder."""
    return any(pattern.fullmatch(line) for pattern in _SCAFFOLDING)


def is_substantive(text: str) -> bool:
    """True when text has at least one line beyond headings, scaffolding and placeholders."""
    if not js_trim(text):
        return False
    if text in NON_SUBSTANTIVE_DOCUMENTS:
        return False
    for raw_line in text.split("\n"):
        line = js_trim(raw_line)
        if line and not is_scaffolding(line):
            return True
    return False
