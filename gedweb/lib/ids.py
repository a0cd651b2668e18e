"""Every id and name pattern GedWeb accepts, written once.

Each pattern is an unanchored string, so the URL converters
(gedweb/converters.py) embed the very same text Django anchors, and a
compiled ``*_RE`` that callers match with ``fullmatch`` only: ``$`` alone
also matches before a final newline, so an anchored ``match`` would let
``"id\\n"`` through. Digits are ``[0-9]``, never ``\\d``, which also
matches other scripts' digits; GedPi's JavaScript ``\\d`` is ASCII.
"""

from __future__ import annotations

import re
from typing import Any

# A project id is one path component of GEDWEB_MEMORY_ROOT and a URL
# segment: lowercase letters, digits, inner hyphens, never "." or "..".
PROJECT_ID = r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?"
CATEGORY = r"[a-z][a-z0-9_.-]{0,63}"
# No ":": GedWeb's own authors use it ("user:vera" for an operator, the
# import commands' names), so a token named like one could pass for it.
TOKEN_NAME = r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}"
IDEMPOTENCY_KEY = r"[\x20-\x7e]{1,255}"
# GedPi's generated work id: <slug>-<17-digit UTC timestamp>-<32 hex>.
WORK_ID = r"[a-z0-9][a-z0-9-]{0,47}-[0-9]{17}-[a-f0-9]{32}"
# One path segment of a GedPi checkout (gedpi-behaviour.md §9.4): ADR and
# report ids as they are.
SEGMENT = r"[a-z0-9][a-z0-9._-]{0,127}"
# A task id is a segment in either case (.ged/work/<id>/tasks/<task id>/).
TASK_ID = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
# gedpi-behaviour §4.2: the shape of a project id; is_skill_name adds "no --".
SKILL_NAME = PROJECT_ID
# Who an operator says trusts a checkout's standards (ged_import
# --trusted-by): no ':' (so the name cannot read as another prefix), no
# spaces or '|' (so it reads as one word in the mirror and the admin), and
# short enough that ged_import:trusted-by:<name> fits decided_by (64) whole.
TRUSTED_BY_NAME = r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,41}"
# A work file or task artifact name (DIRECT.md, SPEC.md, HISTORY.json, ...).
FILE_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
HEX64 = r"[0-9a-f]{64}"
# A standards import's public id: "si_" and 22 url-safe base64 characters
# (128 random bits), never the sequential row number, which would tell one
# project how many imports every other project has made.
STANDARDS_IMPORT_ID = r"si_[A-Za-z0-9_-]{22}"

PROJECT_ID_RE = re.compile(PROJECT_ID)
CATEGORY_RE = re.compile(CATEGORY)
TOKEN_NAME_RE = re.compile(TOKEN_NAME)
IDEMPOTENCY_KEY_RE = re.compile(IDEMPOTENCY_KEY)
WORK_ID_RE = re.compile(WORK_ID)
SEGMENT_RE = re.compile(SEGMENT)
TASK_ID_RE = re.compile(TASK_ID)
SKILL_NAME_RE = re.compile(SKILL_NAME)
TRUSTED_BY_NAME_RE = re.compile(TRUSTED_BY_NAME)
STANDARDS_IMPORT_ID_RE = re.compile(STANDARDS_IMPORT_ID)
HEX64_RE = re.compile(HEX64)


def is_work_id(value: Any) -> bool:
    return isinstance(value, str) and WORK_ID_RE.fullmatch(value) is not None


def is_document_id(value: Any) -> bool:
    """An ADR's or report's id: one lowercase checkout segment."""
    return isinstance(value, str) and SEGMENT_RE.fullmatch(value) is not None


def is_task_id(value: Any) -> bool:
    return isinstance(value, str) and TASK_ID_RE.fullmatch(value) is not None


def is_skill_name(value: Any) -> bool:
    return isinstance(value, str) and SKILL_NAME_RE.fullmatch(value) is not None and (
        "--" not in value
    )


def is_hex64(value: Any) -> bool:
    """A SHA-256 digest as GedPi writes it: 64 lowercase hex digits."""
    return isinstance(value, str) and HEX64_RE.fullmatch(value) is not None
