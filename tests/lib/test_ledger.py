"""The trust ledger's row digest and record hash (docs/architecture.md, "The trust ledger")."""

from __future__ import annotations

import hashlib

import pytest

from gedweb.lib.ledger import GENESIS_HASH, LINKED_FIELDS, record_hash, row_digest

RECORD = {
    "created_at": "2026-11-30T08:00:00.000001+00:00",
    "digest": "d" * 64,
    "kind": "standards_import",
    "project_id": "démo",
    "row_id": 7,
    "seq": 1,
}


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_the_row_digest_hashes_the_canonical_json_of_kind_and_fields():
    digest = row_digest("skill", {"name": "ruff", "content_sha256": "c" * 64, "note": "é"})
    assert digest == _sha256(
        '{"fields":{"content_sha256":"' + "c" * 64 + '","name":"ruff","note":"é"},"kind":"skill"}'
    )


def test_the_row_digest_depends_on_the_kind():
    assert row_digest("skill", {"a": 1}) != row_digest("standards_import", {"a": 1})


def test_the_record_hash_links_the_previous_hash_to_the_linked_fields():
    expected = _sha256(
        GENESIS_HASH + "\n"
        '{"created_at":"2026-11-30T08:00:00.000001+00:00","digest":"' + "d" * 64 + '",'
        '"kind":"standards_import","project_id":"démo","row_id":7,"seq":1}'
    )
    assert record_hash(GENESIS_HASH, RECORD) == expected


def test_the_record_hash_ignores_fields_outside_the_link():
    assert record_hash(GENESIS_HASH, {**RECORD, "note": "not linked"}) == record_hash(
        GENESIS_HASH, RECORD
    )


@pytest.mark.parametrize("name", LINKED_FIELDS)
def test_every_linked_field_changes_the_record_hash(name):
    changed = {**RECORD, name: "changed"}
    assert record_hash(GENESIS_HASH, changed) != record_hash(GENESIS_HASH, RECORD)


def test_a_record_missing_a_linked_field_is_refused():
    partial = {name: value for name, value in RECORD.items() if name != "seq"}
    with pytest.raises(KeyError):
        record_hash(GENESIS_HASH, partial)


def test_genesis_is_sixty_four_zeros():
    assert GENESIS_HASH == "0" * 64
