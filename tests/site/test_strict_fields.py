"""StrictCharField (gedweb/api/serializers.py): DRF's surrogate rule, checked in C when clean."""

from __future__ import annotations

import pytest
from rest_framework import serializers
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from gedweb.api.serializers import StrictCharField, StrictSerializer


class _One(serializers.Serializer):  # type: ignore[type-arg]
    text = StrictCharField()


@pytest.mark.parametrize("code_point", [0xD800, 0xDB7F, 0xDC00, 0xDFFF])
def test_a_lone_surrogate_is_refused_with_drfs_own_message(code_point):
    text = f"before {chr(code_point)} after"
    one = _One(data={"text": text})
    assert not one.is_valid()
    [error] = one.errors["text"]
    assert error.code == "surrogate_characters_not_allowed"
    assert str(error) == f"Surrogate characters are not allowed: U+{code_point:X}."
    # Exactly what DRF's own validator says of the same text.
    with pytest.raises(serializers.ValidationError) as drf:
        ProhibitSurrogateCharactersValidator()(text)
    assert drf.value.detail == [str(error)]


@pytest.mark.parametrize("text", ["", "plain", "\ud7ff\ue000", "emoji \U0001f600", "x" * 32000])
def test_text_without_surrogates_passes_unchanged(text):
    one = _One(data={"text": text})
    assert one.is_valid(), one.errors
    assert one.validated_data["text"] == text


# --- StrictSerializer's fields: a copy of each declared field's settings ----------------------


class _Body(StrictSerializer):
    name = StrictCharField(allow_blank=False, max_length=5)
    count = serializers.IntegerField(required=False, default=1, min_value=0)
    tags = serializers.ListField(child=StrictCharField(), required=False)


def test_each_serializer_has_fields_of_its_own_and_the_declared_ones_stay_unbound():
    first, second = _Body(data={"name": "ab"}), _Body(data={"name": "toolong", "count": -1})
    assert first.is_valid(), first.errors
    assert not second.is_valid()

    assert first.validated_data == {"name": "ab", "count": 1}
    assert set(second.errors) == {"name", "count"}
    for name in ("name", "count", "tags"):
        assert first.fields[name] is not second.fields[name]
        assert first.fields[name].parent is first and second.fields[name].parent is second
        declared = _Body._declared_fields[name]
        assert declared.field_name is None and declared.parent is None
    # A field holding another is DRF's deep copy: its child belongs to it alone.
    assert first.fields["tags"].child is not second.fields["tags"].child
    assert first.fields["tags"].child.parent is first.fields["tags"]
    # The first serializer's errors and data are its own after the second ran.
    assert first.errors == {} and first.validated_data["name"] == "ab"


class _DeepCopiedBody(_Body):
    get_fields = serializers.Serializer.get_fields  # DRF's own: a deep copy of every field


@pytest.mark.parametrize("body", [
    {"name": "ab"}, {"name": ""}, {"name": 5}, {"name": "toolong", "count": -1},
    {"name": "ok", "count": "x"}, {"name": "ok", "extra": 1}, {"name": "ok", "tags": ["a", 3]},
    {"name": "ok", "tags": ["a", "b"], "count": 0}, {}, {"name": "a\ud800"},
])
def test_copied_fields_answer_exactly_as_deep_copied_ones(body):
    ours, drfs = _Body(data=body), _DeepCopiedBody(data=body)
    assert ours.is_valid() == drfs.is_valid()
    assert ours.errors == drfs.errors
    if not ours.errors:
        assert ours.validated_data == drfs.validated_data
