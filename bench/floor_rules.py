"""What both floors (bench/floor.py and bench/django_floor/) do as GedWeb does.

Standard library only, so the Django floor carries none of GedWeb's code:
the contract's input rules for an append, and the chain link of format 2
(docs/operations.md, "Chain formats"): SHA-256 over the previous hash, a
newline and the canonical JSON of the chained fields, which commit to the
content's SHA-256 rather than its bytes. bench/run.py checks each floor's
chain with gedweb.lib.chain.verify_chain, so a drift from GedWeb's link
fails the benchmark.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

GENESIS_HASH = "0" * 64
CATEGORY = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
KEYS = {"category", "content", "source"}
MAX_CONTENT_BYTES = 32_000


def validate(body: Any) -> str | None:
    """None for a valid append body, else what is wrong with it."""
    if not isinstance(body, dict):
        return "body must be a JSON object"
    unknown = set(body) - KEYS
    if unknown:
        return f"unknown fields: {sorted(unknown)}"
    category, content = body.get("category"), body.get("content")
    source = body.get("source", "operator")
    if not isinstance(category, str) or not CATEGORY.match(category):
        return "invalid category"
    if not isinstance(content, str) or not content.strip() or "\x00" in content:
        return "invalid content"
    if len(content.encode()) > MAX_CONTENT_BYTES:
        return "content too long"
    if (not isinstance(source, str) or not 1 <= len(source) <= 128
            or not source.isprintable()):
        return "invalid source"
    return None


def chained_fields(*, author: str, category: str, content: str, created_at: str,
                   project_id: str, seq: int, source: str) -> dict[str, Any]:
    """A new entry's chained fields in chain format 2 (no correction, no redaction)."""
    return {
        "author": author,
        "category": category,
        "content_sha256": hashlib.sha256(content.encode()).hexdigest(),
        "corrects": None,
        "created_at": created_at,
        "project_id": project_id,
        "redacts": None,
        "seq": seq,
        "source": source,
    }


def link(prev_hash: str, fields: dict[str, Any]) -> str:
    """The entry's hash: what gedweb.lib.chain.entry_hash computes for these fields."""
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{prev_hash}\n{canonical}".encode()).hexdigest()
