"""The one text rule (gedweb.lib.text): no NUL, not blank, valid Unicode, in that order."""

from __future__ import annotations

import pytest

from gedweb.lib.text import (
    BLANK_MESSAGE,
    NUL_MESSAGE,
    SURROGATE_MESSAGE,
    is_valid_unicode,
    text_problem,
)


@pytest.mark.parametrize("value", ["x", "  padded  ", "ünïcødé 😀", "line\r\nline", "\ufeffBOM"])
def test_text_with_something_in_it_passes(value):
    assert text_problem(value) is None


@pytest.mark.parametrize("value", ["", " ", "\t\n\r ", "\u00a0\u2003", "\x1c\x1d\x1e\x1f"])
def test_blank_text_is_refused(value):
    assert text_problem(value) == BLANK_MESSAGE == "must not be blank"


@pytest.mark.parametrize("value", ["\x00", "a\x00b", "text\x00"])
def test_a_nul_is_refused(value):
    assert text_problem(value) == NUL_MESSAGE == "must not contain NUL characters"


@pytest.mark.parametrize("value", ["\ud800", "a\udfffb", "\udbff\ud800x"])
def test_a_lone_surrogate_is_refused(value):
    assert not is_valid_unicode(value)
    assert text_problem(value) == SURROGATE_MESSAGE == (
        "must be valid Unicode text (no lone surrogates)"
    )


def test_a_surrogate_pair_spelled_as_one_character_is_valid():
    assert is_valid_unicode("\U0001f600")
    assert text_problem("\U0001f600") is None


def test_nul_is_named_before_blank_and_blank_before_surrogates():
    assert text_problem(" \x00 ") == NUL_MESSAGE
    assert text_problem("\x00\ud800") == NUL_MESSAGE
    assert text_problem("   ") == BLANK_MESSAGE


def test_blank_allowed_keeps_nul_and_surrogates_refused():
    assert text_problem("", blank_allowed=True) is None
    assert text_problem("  \n", blank_allowed=True) is None
    assert text_problem(" \x00", blank_allowed=True) == NUL_MESSAGE
    assert text_problem(" \ud800", blank_allowed=True) == SURROGATE_MESSAGE


def test_a_field_may_name_blank_in_its_own_words_and_only_blank():
    own = "must not be blank; omit it instead"
    assert text_problem(" ", blank_message=own) == own
    assert text_problem("\x00", blank_message=own) == NUL_MESSAGE
    assert text_problem("\ud800", blank_message=own) == SURROGATE_MESSAGE
