"""The memory hash chain (contract §4; docs/operations.md, "Chain formats").

hash = sha256(prev_hash + "\\n" + canonical) where canonical is the canonical
JSON of the entry's chained fields. The first entry links to GENESIS_HASH.

Two formats, told apart per entry by ``content_sha256``:

- **Format 1** (entries written before it existed; ``content_sha256`` null):
  the chained fields are CHAINED_FIELDS, ``content`` itself among them. Such
  an entry cannot lose its content without breaking its link.
- **Format 2** (every entry since; ``content_sha256`` set): the chained fields
  are CHAINED_FIELDS_V2, which commit to the content through its SHA-256
  (``content_sha256``, hex of the UTF-8 bytes) and name the entry a
  redaction record redacts (``redacts``, its id, or null). An intact entry's
  content hashes to ``content_sha256``; a redacted entry's content is the
  notice ``redaction_notice`` builds from its redaction record, a later
  format-2 entry of the same chain whose ``redacts`` names it, whose author,
  time and content (the reason) the notice repeats.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gedweb.lib.canonical import canonical_json
from gedweb.lib.digest import sha256_text

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

CHAINED_FIELDS_V2 = (
    "author",
    "category",
    "content_sha256",
    "corrects",
    "created_at",
    "project_id",
    "redacts",
    "seq",
    "source",
)


# The chain's content digest is GedWeb's one text digest (gedweb.lib.digest).
content_digest = sha256_text


def chain_format(fields: Mapping[str, Any]) -> int:
    return 1 if fields.get("content_sha256") is None else 2


def entry_hash(prev_hash: str, fields: Mapping[str, Any]) -> str:
    names = CHAINED_FIELDS if chain_format(fields) == 1 else CHAINED_FIELDS_V2
    canonical = canonical_json({name: fields[name] for name in names})
    return hashlib.sha256(f"{prev_hash}\n{canonical}".encode()).hexdigest()


def is_redacted(content: str, content_sha256: str | None) -> bool:
    """A format-2 entry whose content is no longer what it was written with (a notice)."""
    return content_sha256 is not None and content_digest(content) != content_sha256


def redaction_notice(author: str, created_at: str, reason: str) -> str:
    """What a redacted entry's content becomes: its redaction record, in words."""
    return f"[redacted by {author} at {created_at}: {reason}]"


@dataclass(frozen=True)
class ChainReport:
    ok: bool
    entries: int
    head: str
    first_bad_seq: int | None
    redacted: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "entries": self.entries,
            "head": self.head,
            "first_bad_seq": self.first_bad_seq,
            "redacted": self.redacted,
        }


def verify_chain(entries: Iterable[Mapping[str, Any]]) -> ChainReport:
    """Recompute every link of entries given in seq order, in memory bounded by the redactions.

    Each mapping carries the chained fields of its format plus ``prev_hash``
    and ``hash``; a format-2 entry also ``id`` and ``content``. The first bad
    seq is the position where the record stops being the chain it claims to
    be: a missing or repeated seq, a prev_hash that is not the previous hash,
    a stored hash that does not match its fields, a format-2 entry whose
    content is neither its own (by digest) nor the notice of its redaction
    record, or a redaction record whose entry is not so redacted. A content
    that does not match its digest waits for its record until the end, so
    only those entries are held in memory.
    """
    expected_seq = 1
    prev = GENESIS_HASH
    count = 0
    bad: list[int] = []
    waiting: dict[Any, tuple[int, Any]] = {}  # id -> (seq, content) of a redacted-looking entry
    redacted = 0
    for entry in entries:
        count += 1
        if not bad and (
            entry["seq"] != expected_seq
            or entry["prev_hash"] != prev
            or entry["hash"] != entry_hash(prev, entry)
        ):
            bad.append(expected_seq)
        if not bad:
            if chain_format(entry) == 1:
                if entry.get("redacts") is not None:
                    bad.append(expected_seq)  # format 1 chains no redacts: it was added since
            else:
                if content_digest(entry["content"]) != entry["content_sha256"]:
                    waiting[entry["id"]] = (expected_seq, entry["content"])
                target = entry["redacts"]
                if target is not None:
                    seq, content = waiting.pop(target, (None, None))
                    notice = redaction_notice(entry["author"], entry["created_at"],
                                              entry["content"])
                    if seq is None:
                        bad.append(expected_seq)  # redacts an entry that still holds its content
                    elif content != notice:
                        bad.append(seq)
                    else:
                        redacted += 1
        prev = entry["hash"]
        expected_seq += 1
    bad.extend(seq for seq, _ in waiting.values())
    first_bad = min(bad) if bad else None
    return ChainReport(first_bad is None, count, prev, first_bad, redacted)
