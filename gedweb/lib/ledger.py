"""The trust ledger's digests and links (docs/architecture.md, "The trust ledger").

Pure rules, no Django. A ledger record points at one trust-bearing row by
(kind, row id) and holds the row's digest; records are hash-linked per
project like memory entries:

    digest = sha256(canonical JSON of the row's fields), where every large
             text field is replaced by the sha256 of its UTF-8 bytes
             (a later redaction can drop bytes without breaking the link)
    hash   = sha256(prev_hash + "\\n" + canonical JSON of LINKED_FIELDS)

The first record of a project links to GENESIS_HASH.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from gedweb.lib.canonical import canonical_json
from gedweb.lib.chain import GENESIS_HASH

__all__ = ["GENESIS_HASH", "LINKED_FIELDS", "record_hash", "row_digest"]

LINKED_FIELDS = ("created_at", "digest", "kind", "project_id", "row_id", "seq")


def row_digest(kind: str, fields: Mapping[str, Any]) -> str:
    """The digest of one row: its kind and its fields (content already as digests)."""
    return hashlib.sha256(canonical_json({"kind": kind, "fields": dict(fields)})
                          .encode("utf-8")).hexdigest()


def record_hash(prev_hash: str, fields: Mapping[str, Any]) -> str:
    canonical = canonical_json({name: fields[name] for name in LINKED_FIELDS})
    return hashlib.sha256(f"{prev_hash}\n{canonical}".encode()).hexdigest()
