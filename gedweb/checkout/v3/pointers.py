"""Pointer trust: is a glossary or decisions file a pointer, so the migration leaves it?

GedPi's rule (``hasActionableLegacyMemory``, ``migrateDurableMemory``): a
``.ged/GLOSSARY.md`` whose text starts with ``# Glossary moved`` (a
``.ged/DECISIONS.md`` with ``# Decisions moved``) is a pointer: not
actionable, never moved, never rewritten. GedPi's own repository and its
users write such pointers by hand, so GedWeb follows the rule.

GedWeb keeps one stricter check, where the rule would lose bytes: when the
pointer's canonical destination holds nothing (no CONTEXT.md, or a blank one,
for the glossary; no Markdown file in docs/adr/ for the decisions), the file
is the only copy of what it says, and a pointer to nowhere is never read as
memory again. Such a file is migrated as content (backed up, appended or
written as an ADR, replaced by the generated pointer), unless it is a pointer
this migration really wrote (``trusted_pointer``: its destination may have
been removed since, and migrating the pointer would only copy the pointer).
"""

from __future__ import annotations

import re
import stat
from pathlib import Path
from typing import Any

from gedweb.checkout.safefs import sha256_hex
from gedweb.checkout.v3.files import lstat, read, top_level
from gedweb.checkout.v3.layout import CONTEXT_PATH, GLOSSARY_PATH, adr_path, backup_path
from gedweb.checkout.v3.texts import as_text, decisions_pointer, glossary_pointer, js_trim, marker

_POINTER_HASH_RE = re.compile(r"Migration content hash: ([a-f0-9]{64})\n")
ADR_DIR = "docs/adr"


def pointer_prefix(source_path: str) -> str:
    return "# Glossary moved" if source_path == GLOSSARY_PATH else "# Decisions moved"


def trusted_pointer(root: Path, source_path: str, data: bytes,
                    journal: list[dict[str, Any]]) -> bool:
    """Is ``data`` a pointer this migration (GedPi's or GedWeb's) really wrote?

    True when the bytes are exactly the generated pointer text for some hash H
    and H is backed by evidence: a journal entry for the source with H, a
    backup of the source whose SHA-256 is H, or the destination carrying the
    ``ged-memory-v3:<kind>:H`` marker.
    """
    text = as_text(data)
    match = _POINTER_HASH_RE.search(text)
    if match is None:
        return False
    digest = match.group(1)
    if source_path == GLOSSARY_PATH:
        expected, action, kind, dest = glossary_pointer(digest), "migrated-context", "context", \
            CONTEXT_PATH
    else:
        expected, action, kind, dest = decisions_pointer(digest), "migrated-decisions", \
            "decisions", adr_path(digest)
    if text != expected:
        return False
    for entry in journal:
        if (entry.get("sourcePath"), entry.get("action"), entry.get("sha256")) == (
            source_path, action, digest
        ):
            return True
    backup = read(root, backup_path(source_path))
    if backup is not None and sha256_hex(backup) == digest:
        return True
    destination = read(root, dest)
    return destination is not None and marker(kind, digest) in as_text(destination)


def destination_holds_content(root: Path, source_path: str) -> bool:
    """Does the canonical home a pointer sends readers to hold anything?

    The glossary's is the root CONTEXT.md (blank counts as empty, as GedPi's
    append does); the decisions' is docs/adr/, which must hold a non-empty
    ``*.md`` regular file.
    """
    if source_path == GLOSSARY_PATH:
        context = read(root, CONTEXT_PATH)
        return context is not None and js_trim(as_text(context)) != ""
    files, _ = top_level(root, ADR_DIR)
    for name in files:
        if not name.endswith(".md"):
            continue
        info = lstat(root, f"{ADR_DIR}/{name}")
        if info is not None and stat.S_ISREG(info.st_mode) and info.st_size > 0:
            return True
    return False


def pointer_kind(root: Path, source_path: str, data: bytes | None,
                 journal: list[dict[str, Any]]) -> str | None:
    """Why ``data`` is a pointer the migration keeps, or None when it is content to move.

    "verified": the exact pointer text a migration wrote, with evidence;
    "heading": GedPi's prefix rule, the destination holding content.
    """
    if data is None or not as_text(data).startswith(pointer_prefix(source_path)):
        return None
    if trusted_pointer(root, source_path, data, journal):
        return "verified"
    if destination_holds_content(root, source_path):
        return "heading"
    return None


def needs_move(root: Path, source_path: str, data: bytes | None,
               journal: list[dict[str, Any]]) -> bool:
    return data is not None and pointer_kind(root, source_path, data, journal) is None
