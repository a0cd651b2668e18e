"""Canonical JSON (contract §4): the one byte form used for hashes and body comparison."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from gedweb.lib.canonical import canonical_json

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def test_it_sorts_keys():
    assert canonical_json({"b": 1, "a": 2, "c": 3}) == '{"a":2,"b":1,"c":3}'


def test_it_sorts_keys_of_nested_objects():
    assert canonical_json({"z": {"y": 1, "x": [{"b": 0, "a": 0}]}}) == (
        '{"z":{"x":[{"a":0,"b":0}],"y":1}}'
    )


def test_it_uses_separators_without_spaces():
    text = canonical_json({"a": [1, 2, {"b": None}], "c": "d e"})
    assert text == '{"a":[1,2,{"b":null}],"c":"d e"}'


def test_it_keeps_non_ascii_characters_unescaped():
    assert canonical_json({"k": "Zürich → 東京 🎉"}) == '{"k":"Zürich → 東京 🎉"}'


def test_it_escapes_quotes_backslashes_and_control_characters_as_json_does():
    assert canonical_json('a"b\\c\nd\te\x1f') == r'"a\"b\\c\nd\te\u001f"'


def test_it_adds_no_trailing_newline():
    assert not canonical_json({"a": 1}).endswith("\n")


def test_key_order_does_not_change_the_text():
    assert canonical_json({"a": 1, "b": {"c": 2, "d": 3}}) == canonical_json(
        {"b": {"d": 3, "c": 2}, "a": 1}
    )


@given(json_values)
def test_it_matches_json_dumps_with_the_contract_options(value):
    assert canonical_json(value) == json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


@given(json_values)
def test_it_round_trips_through_json_loads(value):
    assert json.loads(canonical_json(value)) == value
