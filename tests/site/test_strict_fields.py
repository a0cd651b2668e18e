"""StrictCharField (gedweb/api/serializers.py): DRF's surrogate rule, checked in C when clean."""

from __future__ import annotations

import pytest
from rest_framework import serializers
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from gedweb.api.serializers import StrictCharField


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
