"""The bytes the v3 migration writes and the JSON it reads, as GedPi's JavaScript does.

Pure: no file access here."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any, TypeGuard

from gedweb.checkout.v3.layout import adr_path

# ECMAScript WhiteSpace + LineTerminator: what String.prototype.trim/trimEnd remove.
JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def dump_json(value: Any) -> bytes:
    """GedPi's ``JSON.stringify(value, null, 2) + "\\n"``."""
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def parse_json(data: bytes) -> Any:
    # Buffer.toString("utf8") replaces invalid sequences; JSON.parse has no NaN.
    return json.loads(data.decode("utf-8", errors="replace"), parse_constant=_reject_constant)


def as_text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def js_trim(text: str) -> str:
    return text.strip(JS_WHITESPACE)


def is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_date(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def collation_key(name: str) -> tuple[list[tuple[int, int]], list[int]]:
    """Approximates Node's ``localeCompare`` (ICU root collation) for file names.

    GedPi's recursive walk sorts each directory with localeCompare: punctuation
    before digits before letters, letters case-insensitively first, lower case
    before upper case on ties. Exact for ASCII names; others fall back to code
    points after the letters.
    """
    punctuation = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"
    primary: list[tuple[int, int]] = []
    tertiary: list[int] = []
    for char in name:
        if char in " \t":
            primary.append((0, ord(char)))
        elif char in punctuation:
            primary.append((1, punctuation.index(char)))
        elif char.isascii() and char.isdigit():
            primary.append((2, ord(char)))
        elif char.isascii() and char.isalpha():
            primary.append((3, ord(char.lower())))
        else:
            primary.append((4, ord(char)))
        tertiary.append(1 if char.isupper() else 0)
    return primary, tertiary


def marker(kind: str, sha256: str) -> str:
    return f"ged-memory-v3:{kind}:{sha256}"


def glossary_pointer(sha256: str) -> str:
    return (
        "# Glossary moved\n\nCanonical project and domain vocabulary now lives in "
        f"[../CONTEXT.md](../CONTEXT.md).\n\nMigration content hash: {sha256}\n"
    )


def decisions_pointer(sha256: str) -> str:
    dest = adr_path(sha256)
    return (
        f"# Decisions moved\n\nCanonical durable decisions now live in [../{dest}](../{dest})."
        f"\n\nMigration content hash: {sha256}\n"
    )


def context_section(glossary: str, sha256: str) -> str:
    mark = marker("context", sha256)
    newline = "" if glossary.endswith("\n") else "\n"
    return (
        f"<!-- {mark}:begin -->\n## Migrated Ged glossary\n\n{glossary}{newline}"
        f"<!-- {mark}:end -->\n"
    )


def context_after_append(existing: str, glossary: str, sha256: str) -> str:
    """GedPi's CONTEXT.md bytes: trailing whitespace trimmed (kept for faithfulness)."""
    prefix = existing.rstrip(JS_WHITESPACE)
    head = f"{prefix}\n\n" if prefix else "# Project Context\n\n"
    return head + context_section(glossary, sha256)


def adr_text(decisions: str, sha256: str) -> str:
    mark = marker("decisions", sha256)
    newline = "" if decisions.endswith("\n") else "\n"
    return (
        f"# ADR 0000: Migrated Ged decisions\n\nStatus: migrated\n\n<!-- {mark}:begin -->\n"
        f"{decisions}{newline}<!-- {mark}:end -->\n"
    )


def parse_version(data: bytes) -> int | None:
    """``Number.parseInt(text.trim(), 10)``: a leading integer, or None (NaN)."""
    match = re.match(r"[+-]?[0-9]+", js_trim(as_text(data)))
    return int(match.group(0)) if match else None
