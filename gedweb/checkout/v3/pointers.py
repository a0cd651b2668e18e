"""Pointer trust (GedWeb, gap G-9): is a glossary or decisions file a pointer we wrote?"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gedweb.checkout.safefs import sha256_hex
from gedweb.checkout.v3.files import read
from gedweb.checkout.v3.layout import CONTEXT_PATH, GLOSSARY_PATH, adr_path, backup_path
from gedweb.checkout.v3.texts import as_text, decisions_pointer, glossary_pointer, marker

_POINTER_HASH_RE = re.compile(r"Migration content hash: ([a-f0-9]{64})\n")


def trusted_pointer(root: Path, source_path: str, data: bytes,
                    journal: list[dict[str, Any]]) -> bool:
    """Is ``data`` a pointer this migration (GedPi's or GedWeb's) really wrote?

    GedPi trusts any file starting with ``# Glossary moved`` / ``# Decisions moved``.
    GedWeb trusts it only when the bytes are exactly the pointer text for some
    hash H and H is backed by evidence: a journal entry for the source with H,
    a backup of the source whose SHA-256 is H, or the destination carrying the
    ``ged-memory-v3:<kind>:H`` marker. Anything else is migrated as content.
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


def _pointer_prefix(source_path: str) -> str:
    return "# Glossary moved" if source_path == GLOSSARY_PATH else "# Decisions moved"


def needs_move(root: Path, source_path: str, data: bytes | None,
                journal: list[dict[str, Any]]) -> bool:
    if data is None:
        return False
    if not as_text(data).startswith(_pointer_prefix(source_path)):
        return True
    return not trusted_pointer(root, source_path, data, journal)
