"""The one SHA-256 of a text: its raw UTF-8 bytes, no normalisation.

Line endings, a BOM and trailing spaces all count, so two texts share a
digest only when they are byte for byte the same. Every content hash in
GedWeb (documents, standards, skills, the trust ledger, the context bundle,
token hashes) is this one.
"""

from __future__ import annotations

import hashlib


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
