"""The memory hash chain (contract §4): entry_hash and verify_chain.

Expected hashes are computed here with hashlib and json directly, so the
tests do not trust gedweb.lib.canonical to define the format.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gedweb.lib.chain import CHAINED_FIELDS, GENESIS_HASH, ChainReport, entry_hash, verify_chain

CORRECTED_UUID = "3f2c1d4e-5b6a-4c7d-8e9f-0a1b2c3d4e5f"

VECTOR = {
    "author": "ana",
    "category": "decision",
    "content": 'Zürich → 東京 "quoted" \\ back\nsecond line 🎉',
    "corrects": None,
    "created_at": "2026-11-30T08:00:00.123456+00:00",
    "project_id": "demo",
    "seq": 1,
    "source": "operator",
}

# The canonical text of VECTOR written out by hand from the contract's rules.
VECTOR_CANONICAL = (
    '{"author":"ana","category":"decision",'
    '"content":"Zürich → 東京 \\"quoted\\" \\\\ back\\nsecond line 🎉",'
    '"corrects":null,"created_at":"2026-11-30T08:00:00.123456+00:00",'
    '"project_id":"demo","seq":1,"source":"operator"}'
)


def reference_hash(prev_hash: str, fields: dict[str, Any]) -> str:
    chained = {name: fields[name] for name in CHAINED_FIELDS}
    canonical = json.dumps(chained, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256((prev_hash + "\n" + canonical).encode("utf-8")).hexdigest()


def chain(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give rows seq 1..n, prev_hash and hash, computed with reference_hash."""
    prev = "0" * 64
    chained = []
    for seq, row in enumerate(rows, start=1):
        entry = {**row, "seq": seq, "prev_hash": prev}
        entry["hash"] = reference_hash(prev, entry)
        chained.append(entry)
        prev = entry["hash"]
    return chained


def sample_rows(count: int = 6) -> list[dict[str, Any]]:
    rows = []
    for index in range(count):
        rows.append(
            {
                "id": f"00000000-0000-4000-8000-{index:012d}",
                "author": "ana" if index % 2 else "bot",
                "category": "decision" if index % 3 else "note",
                "content": f"entry {index} · naïve café ```",
                "corrects": CORRECTED_UUID if index == 4 else None,
                "created_at": f"2026-11-30T08:00:{index:02d}.000001+00:00",
                "project_id": "demo",
                "source": "operator",
            }
        )
    return chain(rows)


def changed(field: str, value: Any) -> Any:
    """A different value of the same kind: one character or one hex digit flipped."""
    if field == "seq":
        return value + 100
    if field == "corrects":
        return CORRECTED_UUID if value is None else None
    if field in ("prev_hash", "hash"):
        return ("1" if value[0] != "1" else "2") + value[1:]
    assert isinstance(value, str) and value
    return value[:-1] + ("x" if value[-1] != "x" else "y")


# --- entry_hash ----------------------------------------------------------------


def test_genesis_hash_is_64_zeros():
    assert GENESIS_HASH == "0" * 64


def test_chained_fields_are_the_eight_contract_fields_in_sorted_order():
    assert CHAINED_FIELDS == (
        "author",
        "category",
        "content",
        "corrects",
        "created_at",
        "project_id",
        "seq",
        "source",
    )


def test_the_canonical_text_of_the_vector_is_as_written_by_hand():
    canonical = json.dumps(VECTOR, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical == VECTOR_CANONICAL


def test_entry_hash_is_sha256_of_prev_newline_canonical_with_null_corrects():
    expected = hashlib.sha256(("0" * 64 + "\n" + VECTOR_CANONICAL).encode("utf-8")).hexdigest()
    assert entry_hash(GENESIS_HASH, VECTOR) == expected


def test_entry_hash_covers_corrects_as_a_uuid_string():
    fields = {**VECTOR, "seq": 2, "corrects": CORRECTED_UUID}
    prev = "ab" * 32
    canonical = VECTOR_CANONICAL.replace('"corrects":null', f'"corrects":"{CORRECTED_UUID}"')
    canonical = canonical.replace('"seq":1', '"seq":2')
    expected = hashlib.sha256((prev + "\n" + canonical).encode("utf-8")).hexdigest()
    assert entry_hash(prev, fields) == expected


def test_entry_hash_is_lowercase_hex_of_64_characters():
    value = entry_hash(GENESIS_HASH, VECTOR)
    assert len(value) == 64 and value == value.lower() and int(value, 16) >= 0


def test_entry_hash_ignores_fields_outside_the_chain():
    extended = {**VECTOR, "id": "x", "hash": "y", "prev_hash": "z", "corrected_by": ["w"]}
    assert entry_hash(GENESIS_HASH, extended) == entry_hash(GENESIS_HASH, VECTOR)


def test_entry_hash_needs_every_chained_field():
    incomplete = {k: v for k, v in VECTOR.items() if k != "source"}
    with pytest.raises(KeyError):
        entry_hash(GENESIS_HASH, incomplete)


@pytest.mark.parametrize("field", CHAINED_FIELDS)
def test_entry_hash_changes_when_any_chained_field_changes(field):
    assert entry_hash(GENESIS_HASH, {**VECTOR, field: changed(field, VECTOR[field])}) != (
        entry_hash(GENESIS_HASH, VECTOR)
    )


def test_entry_hash_depends_on_the_previous_hash():
    assert entry_hash("1" * 64, VECTOR) != entry_hash(GENESIS_HASH, VECTOR)


# --- verify_chain -----------------------------------------------------------------


def test_an_untouched_chain_verifies():
    rows = sample_rows()
    assert verify_chain(rows) == ChainReport(
        ok=True, entries=6, head=rows[-1]["hash"], first_bad_seq=None
    )


def test_an_empty_chain_verifies_with_the_genesis_head():
    assert verify_chain([]) == ChainReport(
        ok=True, entries=0, head=GENESIS_HASH, first_bad_seq=None
    )


def test_the_report_as_dict_has_the_api_shape():
    rows = sample_rows(2)
    assert verify_chain(rows).as_dict() == {
        "ok": True,
        "entries": 2,
        "head": rows[-1]["hash"],
        "first_bad_seq": None,
        "redacted": 0,
    }


def test_verify_chain_accepts_a_generator():
    rows = sample_rows(3)
    assert verify_chain(row for row in rows).ok


@pytest.mark.parametrize("field", [*CHAINED_FIELDS, "prev_hash", "hash"])
@pytest.mark.parametrize("k", [1, 3, 6])
def test_a_changed_field_in_row_k_is_located_at_k(field, k):
    rows = sample_rows()
    rows[k - 1][field] = changed(field, rows[k - 1][field])
    report = verify_chain(rows)
    assert (report.ok, report.first_bad_seq, report.entries) == (False, k, 6)


def test_the_head_is_the_stored_hash_of_the_last_row_even_when_broken():
    rows = sample_rows()
    rows[-1]["hash"] = changed("hash", rows[-1]["hash"])
    assert verify_chain(rows).head == rows[-1]["hash"]


def test_two_swapped_rows_are_located_at_the_first_of_them():
    rows = sample_rows()
    rows[1], rows[3] = rows[3], rows[1]
    report = verify_chain(rows)
    assert (report.ok, report.first_bad_seq) == (False, 2)


def test_two_rows_with_swapped_seq_numbers_are_located_at_the_first_of_them():
    rows = sample_rows()
    rows[1]["seq"], rows[3]["seq"] = rows[3]["seq"], rows[1]["seq"]
    report = verify_chain(rows)
    assert (report.ok, report.first_bad_seq) == (False, 2)


def test_a_duplicated_row_is_located_right_after_the_original():
    rows = sample_rows()
    rows.insert(3, copy.deepcopy(rows[2]))
    report = verify_chain(rows)
    assert (report.ok, report.first_bad_seq, report.entries) == (False, 4, 7)


def test_a_missing_middle_row_is_located_at_its_seq():
    rows = sample_rows()
    del rows[2]
    report = verify_chain(rows)
    assert (report.ok, report.first_bad_seq, report.entries) == (False, 3, 5)


def test_a_missing_first_row_is_located_at_seq_1():
    rows = sample_rows()
    del rows[0]
    assert verify_chain(rows).first_bad_seq == 1


def test_a_rehashed_forgery_verifies_but_changes_the_head():
    # Without a published head, rewriting a row and re-chaining everything
    # after it is undetectable; the head is what a checkpoint would pin.
    rows = sample_rows()
    original_head = rows[-1]["hash"]
    links = ("seq", "prev_hash", "hash")
    plain = [{k: v for k, v in row.items() if k not in links} for row in rows]
    plain[2]["content"] = "rewritten"
    forged = chain(plain)
    report = verify_chain(forged)
    assert report.ok and report.head != original_head


def test_only_the_first_break_is_reported():
    rows = sample_rows()
    rows[1]["content"] = "tampered"
    rows[4]["content"] = "tampered too"
    assert verify_chain(rows).first_bad_seq == 2


# --- properties -----------------------------------------------------------------------

_text = st.text(min_size=1, max_size=40)
_rows = st.lists(
    st.fixed_dictionaries(
        {
            "author": st.sampled_from(["ana", "bot", "cli", "admin", "agent.7@ci:x"]),
            "category": st.sampled_from(["decision", "note", "fix.v2", "a_b-c"]),
            "content": _text,
            "corrects": st.none() | st.uuids().map(str),
            "created_at": st.datetimes().map(lambda d: d.isoformat(timespec="microseconds")),
            "project_id": st.just("proj"),
            "source": _text,
        }
    ),
    min_size=1,
    max_size=12,
).map(chain)


@settings(max_examples=100, deadline=None)
@given(_rows)
def test_any_correctly_chained_list_verifies(rows):
    report = verify_chain(rows)
    assert report == ChainReport(True, len(rows), rows[-1]["hash"], None)


@settings(max_examples=150, deadline=None)
@given(_rows, st.data())
def test_flipping_one_field_of_one_row_is_located_at_that_row(rows, data):
    index = data.draw(st.integers(min_value=0, max_value=len(rows) - 1), label="row")
    field = data.draw(st.sampled_from([*CHAINED_FIELDS, "prev_hash", "hash"]), label="field")
    rows[index][field] = changed(field, rows[index][field])
    report = verify_chain(rows)
    assert not report.ok
    assert report.first_bad_seq == index + 1
