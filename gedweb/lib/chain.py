"""The memory hash chain (contract §4).

hash = sha256(prev_hash + "\\n" + canonical) where canonical is the canonical
JSON of the eight chained fields. The first entry links to GENESIS_HASH.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gedweb.lib.canonical import canonical_json

GENESIS_HASH = "0" * 64

CHAINED_FIELDS = (
    "author",
    "category",
    "content",
    "corrects",
    "created_at",
    "project_id",
    "seq",
    "source",
)


def entry_hash(prev_hash: str, fields: Mapping[str, Any]) -> str:
    canonical = canonical_json({name: fields[name] for name in CHAINED_FIELDS})
    return hashlib.sha256(f"{prev_hash}\n{canonical}".encode()).hexdigest()


@dataclass(frozen=True)
class ChainReport:
    ok: bool
    entries: int
    head: str
    first_bad_seq: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "entries": self.entries,
            "head": self.head,
            "first_bad_seq": self.first_bad_seq,
        }


def verify_chain(entries: Iterable[Mapping[str, Any]]) -> ChainReport:
    """Recompute every link of entries given in seq order.

    Each mapping carries the chained fields plus ``prev_hash`` and ``hash``.
    The first bad seq is the position where the record stops being the
    chain it claims to be: a missing or repeated seq, a prev_hash that is
    not the previous hash, or a stored hash that does not match its fields.
    """
    expected_seq = 1
    prev = GENESIS_HASH
    count = 0
    first_bad: int | None = None
    for entry in entries:
        count += 1
        if first_bad is None and (
            entry["seq"] != expected_seq
            or entry["prev_hash"] != prev
            or entry["hash"] != entry_hash(prev, entry)
        ):
            first_bad = expected_seq
        prev = entry["hash"]
        expected_seq += 1
    return ChainReport(first_bad is None, count, prev, first_bad)
