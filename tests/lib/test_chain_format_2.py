"""Chain format 2 and redaction in the pure verifier (docs/operations.md, "Chain formats").

The expected hashes are computed here from the documented rules with hashlib
and json, so the tests check the library against the docs, not itself.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from gedweb.lib.chain import (
    CHAINED_FIELDS_V2,
    GENESIS_HASH,
    entry_hash,
    is_redacted,
    redaction_notice,
    verify_chain,
)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def documented_hash(prev: str, row: dict[str, Any]) -> str:
    if row["content_sha256"] is None:
        names = ["author", "category", "content", "corrects", "created_at", "project_id", "seq",
                 "source"]
    else:
        names = ["author", "category", "content_sha256", "corrects", "created_at", "project_id",
                 "redacts", "seq", "source"]
    canonical = json.dumps({n: row[n] for n in names}, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)
    return digest(prev + "\n" + canonical)


def build(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows seq 1..n: format 2 unless a spec says ``format: 1``; linked by the documented hash."""
    rows, prev = [], GENESIS_HASH
    for seq, spec in enumerate(specs, start=1):
        content = spec.get("content", f"entry {seq} · naïve")
        row = {"id": f"00000000-0000-4000-8000-{seq:012d}", "seq": seq, "project_id": "demo",
               "category": spec.get("category", "note"), "content": content,
               "source": "operator", "corrects": None, "author": spec.get("author", "agent"),
               "created_at": f"2026-12-03T10:00:{seq:02d}.000001+00:00",
               "content_sha256": None if spec.get("format") == 1 else digest(content),
               "redacts": spec.get("redacts"), "prev_hash": prev}
        row["hash"] = documented_hash(prev, row)
        rows.append(row)
        prev = row["hash"]
    return rows


def redact(rows: list[dict[str, Any]], target_seq: int, record_seq: int) -> None:
    """What the server does: the target's content becomes the record's notice."""
    record = rows[record_seq - 1]
    rows[target_seq - 1]["content"] = redaction_notice(record["author"], record["created_at"],
                                                       record["content"])


def chain_with_a_redaction() -> list[dict[str, Any]]:
    rows = build([{}, {"content": "the key is hunter2"}, {},
                  {"category": "redaction", "author": "user:olga", "content": "a password",
                   "redacts": "00000000-0000-4000-8000-000000000002"}])
    redact(rows, 2, 4)
    return rows


def test_format_2_chains_the_digest_and_redacts_as_documented():
    rows = build([{}, {}])
    assert CHAINED_FIELDS_V2 == ("author", "category", "content_sha256", "corrects",
                                 "created_at", "project_id", "redacts", "seq", "source")
    for row in rows:
        assert entry_hash(row["prev_hash"], row) == row["hash"]
    assert verify_chain(rows).as_dict() == {"ok": True, "entries": 2, "head": rows[-1]["hash"],
                                            "first_bad_seq": None, "redacted": 0}


def test_both_formats_mix_in_one_chain():
    rows = build([{"format": 1}, {"format": 1}, {}, {}])
    assert verify_chain(rows).ok


def test_a_redacted_entry_with_its_record_is_intact():
    rows = chain_with_a_redaction()
    assert rows[1]["content"] == ("[redacted by user:olga at 2026-12-03T10:00:04.000001+00:00: "
                                  "a password]")
    assert is_redacted(rows[1]["content"], rows[1]["content_sha256"])
    assert not is_redacted(rows[0]["content"], rows[0]["content_sha256"])
    assert verify_chain(rows).as_dict() == {"ok": True, "entries": 4, "head": rows[-1]["hash"],
                                            "first_bad_seq": None, "redacted": 1}


@pytest.mark.parametrize(("tamper", "bad_seq"), [
    # The content changed with no record to explain it: bad at the entry.
    (lambda rows: rows[0].update(content="rewritten"), 1),
    # A redacted entry whose notice does not repeat its record word for word.
    (lambda rows: rows[1].update(content=rows[1]["content"].replace("olga", "olgA")), 2),
    # The record's reason changed: its own digest fails, and the notice no longer matches.
    (lambda rows: rows[3].update(content="no reason"), 2),
    # The secret put back: the entry is intact again but its record redacts nothing.
    (lambda rows: rows[1].update(content="the key is hunter2"), 4),
    # The record dropped (seq 4 gone): the notice waits for a record forever.
    (lambda rows: rows.pop(), 2),
])
def test_any_change_around_a_redaction_is_found(tamper, bad_seq):
    rows = chain_with_a_redaction()
    tamper(rows)
    report = verify_chain(rows)
    assert (report.ok, report.first_bad_seq) == (False, bad_seq)


def test_a_record_for_an_entry_of_format_1_or_outside_the_chain_is_bad():
    rows = build([{"format": 1, "content": "old"},
                  {"category": "redaction", "content": "why",
                   "redacts": "00000000-0000-4000-8000-000000000001"}])
    redact(rows, 1, 2)  # a format-1 entry's hash commits to its content: the link breaks
    assert verify_chain(rows).first_bad_seq == 1
    stray = build([{}, {"category": "redaction", "content": "why",
                        "redacts": "00000000-0000-4000-8000-000000000099"}])
    assert verify_chain(stray).first_bad_seq == 2


def test_a_redacts_field_added_to_a_format_1_entry_is_bad():
    rows = build([{"format": 1}, {"format": 1}])
    rows[1]["redacts"] = rows[0]["id"]  # not chained in format 1, so it was added since
    assert verify_chain(rows).first_bad_seq == 2
