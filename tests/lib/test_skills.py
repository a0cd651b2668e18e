"""GedPi's SKILL.md rules (gedpi-behaviour §4.2-4.3): names, front matter, triggers."""

from __future__ import annotations

import pytest

from gedweb.lib.skills import (
    MAX_CONTENT_CHARS,
    content_problem,
    description,
    front_matter,
    matches,
    name_problem,
    triggers,
)

LENGTH_PROBLEM = "must be 1-64 characters"
PATTERN_PROBLEM = (
    "must be lowercase letters, digits and single inner hyphens "
    "(^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$, no '--')"
)
SIZE_PROBLEM = "must be 1-100,000 characters"
FRONT_MATTER_PROBLEM = (
    "must start with YAML front matter: '---' and LF line endings, closed by '---' "
    "on its own line (CRLF is refused)"
)
DESCRIPTION_PROBLEM = "front matter must have a 'description:' line of at least 2 characters"


def skill(front: str, body: str = "Body.\n") -> str:
    return f"---\n{front}\n---\n{body}"


# --- names -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "7", "ruff", "db-migrations", "a1-b2-c3", "a" * 64])
def test_a_good_name_has_no_problem(name):
    assert name_problem(name) is None


@pytest.mark.parametrize("name", ["", "a" * 65])
def test_a_name_must_be_1_to_64_characters(name):
    assert name_problem(name) == LENGTH_PROBLEM


@pytest.mark.parametrize("name", ["Ruff", "-ruff", "ruff-", "db--migrations", "ruff_lint", "r f",
                                  "caf\u00e9"])
def test_a_name_must_be_lowercase_with_single_inner_hyphens(name):
    assert name_problem(name) == PATTERN_PROBLEM


# --- front matter and description --------------------------------------------------


def test_front_matter_is_the_block_between_the_dashes():
    assert front_matter("---\nname: a\ndescription: b\n---\nbody") == "name: a\ndescription: b"
    assert front_matter("---\nname: a\n---") == "name: a"


def test_front_matter_must_open_the_file_with_lf_line_endings():
    assert front_matter("\n---\nname: a\n---\n") is None
    assert front_matter("---\r\nname: a\r\n---\r\n") is None
    assert front_matter("---\nname: a\n---trailing\n") is None


@pytest.mark.parametrize(("line", "value"), [
    ("description: Lint Python code", "Lint Python code"),
    ("description:Lint", "Lint"),
    ("description: \t Lint \t ", "Lint"),
    ('description: "Lint quoted"', "Lint quoted"),
    ("description: 'Lint quoted'", "Lint quoted"),
    ('description: ""', ""),
    ('description: "', '"'),
    ("description: a", "a"),
    ("description: \"mixed'", "\"mixed'"),
    ("description: xLintx", "xLintx"),
    ("description: XLintX", "XLintX"),
    ('description: "a" and "b"', 'a" and "b'),
])
def test_the_description_is_the_lines_value_stripped_and_unquoted(line, value):
    assert description(skill(f"name: ruff\n{line}")) == value


def test_the_description_may_be_the_first_or_the_last_line_of_the_front_matter():
    assert description(skill("description: First line\nname: ruff")) == "First line"
    assert description("---\nname: ruff\ndescription: Last line\n---") == "Last line"


def test_the_first_description_line_wins():
    assert description(skill("name: ruff\ndescription: one\ndescription: two")) == "one"


def test_a_key_inside_a_line_is_no_description():
    assert description(skill("name: ruff\nnot-a-description: x")) is None
    assert description(skill("name: ruff\n description: indented")) is None


def test_there_is_no_description_without_front_matter():
    assert description("description: loose\n") is None
    assert description(skill("name: ruff")) is None


def test_a_description_after_the_front_matter_does_not_count():
    assert description(skill("name: ruff", body="description: in the body\n")) is None


# --- content -----------------------------------------------------------------------


def test_a_well_formed_skill_has_no_problem():
    assert content_problem("ruff", skill("name: ruff\ndescription: Lint Python")) is None


@pytest.mark.parametrize("line", ['name: "ruff"', "name: 'ruff'", "name:ruff", "name: ruff \t"])
def test_the_name_line_may_be_quoted_and_spaced(line):
    assert content_problem("ruff", skill(f"{line}\ndescription: Lint")) is None


def test_a_skill_may_be_exactly_the_maximum_size():
    head = skill("name: ruff\ndescription: Lint", body="")
    content = head + "x" * (MAX_CONTENT_CHARS - len(head))
    assert len(content) == MAX_CONTENT_CHARS
    assert content_problem("ruff", content) is None


def test_a_skill_over_the_maximum_size_is_refused():
    head = skill("name: ruff\ndescription: Lint", body="")
    content = head + "x" * (MAX_CONTENT_CHARS + 1 - len(head))
    assert content_problem("ruff", content) == SIZE_PROBLEM


def test_an_empty_skill_is_refused():
    assert content_problem("ruff", "") == SIZE_PROBLEM


def test_a_one_character_skill_has_the_right_size_but_no_front_matter():
    assert content_problem("ruff", "x") == FRONT_MATTER_PROBLEM


def test_a_nul_character_is_refused():
    assert content_problem("ruff", skill("name: ruff\ndescription: Lint", body="a\x00b")) == (
        "must not contain NUL characters"
    )


@pytest.mark.parametrize("content", [
    "name: ruff\ndescription: Lint\n",
    "---\r\nname: ruff\r\ndescription: Lint\r\n---\r\n",
    "---\nname: ruff\ndescription: Lint\n",
])
def test_missing_or_crlf_front_matter_is_refused(content):
    assert content_problem("ruff", content) == FRONT_MATTER_PROBLEM


@pytest.mark.parametrize("line", ["name: black", "name: ruff-lint", "name: \"ruff'", "# name: ruff",
                                  "name: ruff x"])
def test_the_front_matter_must_name_the_skill(line):
    assert content_problem("ruff", skill(f"{line}\ndescription: Lint")) == (
        "front matter must have the line 'name: ruff'"
    )


def test_the_name_is_matched_literally_not_as_a_pattern():
    assert content_problem("a.b", skill("name: a.b\ndescription: Lint")) is None
    assert content_problem("a.b", skill("name: axb\ndescription: Lint")) == (
        "front matter must have the line 'name: a.b'"
    )


@pytest.mark.parametrize("front", [
    "name: ruff",
    "name: ruff\ndescription:",
    "name: ruff\ndescription: x",
    "name: ruff\ndescription: ' x '",
    'name: ruff\ndescription: ""',
])
def test_the_description_must_have_two_characters_once_stripped(front):
    assert content_problem("ruff", skill(front)) == DESCRIPTION_PROBLEM


def test_a_two_character_description_is_enough():
    assert content_problem("ruff", skill("name: ruff\ndescription: ok")) is None


# --- triggers ----------------------------------------------------------------------


def test_triggers_are_the_quoted_words_after_triggers_include():
    text = 'Lint Python. Triggers include "ruff", "lint", or "flake8". Other "quoted" words.'
    assert triggers(text) == ["ruff", "lint", "flake8"]


def test_triggers_may_be_joined_by_and_and_blank_words_are_dropped():
    assert triggers('Triggers include "a" and "b", " ", and "c"') == ["a", "b", "c"]


def test_no_description_or_no_trigger_phrase_has_no_triggers():
    assert triggers(None) == []
    assert triggers("") == []
    assert triggers('Use "ruff" for linting') == []


def test_a_trigger_matches_case_insensitively_as_a_substring():
    assert matches(["Ruff"], "run RUFF check")
    assert matches(["straße"], "STRASSE")  # casefold, not lower
    assert matches(["none", "lint"], "please lint this")


def test_no_trigger_in_the_text_is_no_match():
    assert not matches(["ruff"], "use black")
    assert not matches([], "anything")
