"""Every id pattern, written once (gedweb.lib.ids): what each accepts and what it never does."""

from __future__ import annotations

import pytest

from gedweb.lib import ids

WORK_ID = "fix-login-20261130080000123-0123456789abcdef0123456789abcdef"
HEX = "0123456789abcdef" * 4

# Each compiled pattern with values it must accept and values it must refuse.
CASES = {
    ids.PROJECT_ID_RE: (["a", "alpha", "a-b", "0", "a" * 64],
                        ["", "-a", "a-", "A", "a_b", "a" * 65, "a.b"]),
    ids.CATEGORY_RE: (["note", "a", "decision.db", "x_y-z", "a" + "b" * 63],
                      ["", "Note", "1note", "_x", "a" + "b" * 64, "a b"]),
    ids.TOKEN_NAME_RE: (["ci", "Vera", "bot@ci", "a.b_c-d", "a" * 64],
                        ["", "user:vera", "-x", "a b", "a" * 65, "a/b"]),
    ids.IDEMPOTENCY_KEY_RE: (["k", " ", "~", "x" * 255], ["", "x" * 256, "é", "\t", "\x7f"]),
    ids.WORK_ID_RE: ([WORK_ID, "w-" + WORK_ID.split("-", 2)[2]],
                     ["", WORK_ID.upper(), WORK_ID[:-1], "-" + WORK_ID,
                      "a" * 49 + WORK_ID[WORK_ID.index("-2"):]]),
    ids.SEGMENT_RE: (["adr-1", "0001", "a.b_c-d", "a" * 128],
                     ["", ".hidden", "-x", "_x", "A1", "a" * 129, "a/b", ".."]),
    ids.TASK_ID_RE: (["T01", "t01", "T01.Login", "A" * 128],
                     ["", ".x", "-x", "_x", "a" * 129, "T 01", "a/b", ".."]),
    ids.SKILL_NAME_RE: (["review", "a", "release-notes", "a" * 64],
                        ["", "-a", "a-", "Review", "a_b", "a" * 65]),
    ids.TRUSTED_BY_NAME_RE: (["vera", "ci+bot@example.org", "a" * 42],
                             ["", "a:b", "a b", "a|b", "a" * 43, "-a"]),
    ids.HEX64_RE: ([HEX], ["", HEX.upper(), HEX[:-1], HEX + "0", "g" * 64]),
}
PARAMS = [(pattern, value, True) for pattern, (good, _) in CASES.items() for value in good] + [
    (pattern, value, False) for pattern, (_, bad) in CASES.items() for value in bad
]


@pytest.mark.parametrize(("pattern", "value", "valid"), PARAMS,
                         ids=[f"{p.pattern[:12]}-{v[:20]!r}-{ok}" for p, v, ok in PARAMS])
def test_each_pattern_accepts_its_values_and_only_them(pattern, value, valid):
    assert (pattern.fullmatch(value) is not None) is valid


@pytest.mark.parametrize("pattern", list(CASES), ids=lambda p: p.pattern[:16])
def test_no_pattern_accepts_a_valid_value_with_a_final_newline(pattern):
    # "$" matches before a final newline; fullmatch never does.
    for value in CASES[pattern][0]:
        assert pattern.fullmatch(value + "\n") is None


@pytest.mark.parametrize("pattern", list(CASES), ids=lambda p: p.pattern[:16])
def test_patterns_are_unanchored_so_converters_can_embed_them(pattern):
    assert not pattern.pattern.startswith("^") and not pattern.pattern.endswith("$")


def test_a_work_id_has_ascii_digits_only():
    arabic_indic = "\u0661" * 17
    assert not ids.is_work_id(f"fix-login-{arabic_indic}-{'a' * 32}")
    assert ids.is_work_id(WORK_ID)


def test_is_work_id_refuses_what_is_not_a_string_or_ends_in_a_newline():
    assert not ids.is_work_id(None)
    assert not ids.is_work_id(42)
    assert not ids.is_work_id(WORK_ID + "\n")


def test_a_task_id_is_ascii_in_either_case():
    assert ids.is_task_id("T01.Login")
    assert ids.is_task_id("t01.login")
    # KELVIN SIGN lowers to "k": a rule checked after str.lower() let it through.
    assert "\u212a".lower() == "k"
    assert not ids.is_task_id("\u212a01")
    assert not ids.is_task_id(None)


def test_a_document_id_is_one_lowercase_segment():
    assert ids.is_document_id("0001-use-postgres")
    assert not ids.is_document_id("0001-Use-Postgres")
    assert not ids.is_document_id("../x")
    assert not ids.is_document_id("x\n")


def test_a_skill_name_has_single_inner_hyphens():
    assert ids.is_skill_name("release-notes")
    assert not ids.is_skill_name("release--notes")
    assert not ids.is_skill_name(7)


def test_is_hex64_is_lowercase_sha256_hex_only():
    assert ids.is_hex64(HEX)
    assert not ids.is_hex64(HEX.upper())
    assert not ids.is_hex64(HEX + "\n")
    assert not ids.is_hex64(None)

