"""GedPi's prompt framing: collision-safe frames with trust labels (gedpi-behaviour §5.1).

A frame's marker is derived from its own content, then lengthened until it
occurs nowhere in that content, so no line inside a frame can close it:
fake END lines, headings and tool calls in project data stay data.

GedWeb clips on code points where GedPi clips on UTF-16 code units (gap
G-8), so a clip never splits a character; for text without characters
outside the Basic Multilingual Plane the bytes are the same as GedPi's.
"""

from __future__ import annotations

import hashlib
import json

APPROVED_INSTRUCTIONS = "approved-instructions"
DURABLE_DATA = "durable-data"
RUNTIME_DATA = "runtime-data"
TRUST_LABELS = (APPROVED_INSTRUCTIONS, DURABLE_DATA, RUNTIME_DATA)

MISSING = "- Missing"
ELLIPSIS = "\u2026"


def clip(value: str | None, max_chars: int | None) -> str:
    if not value:
        return MISSING
    text = value.strip()
    if max_chars is None or len(text) <= max_chars:
        return text
    return text[:max_chars] + ELLIPSIS


def marker_for(trust: str, file: str, content: str) -> str:
    digest = hashlib.sha256(f"{trust}\0{file}\0{content}".encode()).hexdigest()
    marker = "GED_" + digest[:24].upper()
    while marker in content:
        marker += "_X"
    return marker


def frame(trust: str, file: str, value: str | None, max_chars: int | None) -> str:
    """GedPi's renderPromptContentBlock: BEGIN line, content, END line; no final newline."""
    if trust not in TRUST_LABELS:
        raise ValueError(f"unknown trust label {trust!r}")
    content = clip(value, max_chars)
    marker = marker_for(trust, file, content)
    label = json.dumps(file, ensure_ascii=False)
    return f"<<<{marker}:BEGIN trust={trust} file={label}>>>\n{content}\n<<<{marker}:END>>>"
