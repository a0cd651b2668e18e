"""GedPi's substantive-content rule (gedpi-behaviour.md §1.1, Appendix A)."""

from __future__ import annotations

import hashlib

import pytest

from gedweb.lib.governance import SPEC_TEMPLATE, TASKS_TEMPLATE, TESTS_TEMPLATE
from gedweb.lib.substantive import LEGACY_PROJECT_PLACEHOLDER, is_substantive

# --- 1. empty after trimming ----------------------------------------------------------


@pytest.mark.parametrize("text", ["", " ", "\n\n", "\t \r\n", "\u00a0\u3000\ufeff\u2028"])
def test_empty_or_whitespace_only_content_is_not_substantive(text):
    assert not is_substantive(text)


# --- 2. the four known documents, byte for byte --------------------------------------


def test_the_legacy_project_placeholder_has_appendix_a_bytes():
    data = LEGACY_PROJECT_PLACEHOLDER.encode("utf-8")
    assert len(data) == 228
    assert hashlib.sha256(data).hexdigest() == (
        "b0cd069ab3f558dd0441cb4536871367efb4019c69b742581ad10aef20db3724"
    )


def test_the_legacy_project_placeholder_is_not_substantive():
    assert not is_substantive(LEGACY_PROJECT_PLACEHOLDER)


@pytest.mark.parametrize(
    "variant",
    [
        LEGACY_PROJECT_PLACEHOLDER + " ",
        LEGACY_PROJECT_PLACEHOLDER[:-1],
        LEGACY_PROJECT_PLACEHOLDER.replace("\n", "\r\n"),
        LEGACY_PROJECT_PLACEHOLDER.replace("Goal", "goal"),
    ],
    ids=["trailing-space", "no-final-newline", "crlf", "one-letter-case"],
)
def test_a_one_byte_variant_of_the_placeholder_is_substantive(variant):
    # Its "- Primary users:" lines survive, and only the exact bytes are exempt.
    assert is_substantive(variant)


@pytest.mark.parametrize(
    "template", [SPEC_TEMPLATE, TASKS_TEMPLATE, TESTS_TEMPLATE], ids=["spec", "tasks", "tests"]
)
def test_the_work_templates_are_not_substantive(template):
    assert not is_substantive(template)


def test_the_tasks_template_with_one_more_byte_is_substantive():
    # Its table header row survives once the document is no longer the template.
    assert is_substantive(TASKS_TEMPLATE + "\n")


def test_the_tests_template_with_one_more_byte_is_substantive():
    assert is_substantive(TESTS_TEMPLATE + " ")


# --- 3. line by line ---------------------------------------------------------------


@pytest.mark.parametrize(
    "line", ["#", "# Project", "## Users", "### x", "#### x", "##### x", "###### Six", "#\tTab"]
)
def test_headings_with_one_to_six_hashes_are_not_substantive(line):
    assert not is_substantive(line + "\n")


def test_seven_hashes_are_not_a_heading():
    assert is_substantive("####### Seven\n")


def test_a_hash_tag_without_a_space_is_not_a_heading():
    assert is_substantive("#tag\n")


@pytest.mark.parametrize(
    "row",
    ["| --- | :---: |", "|---|", "| :--- | ---: | ----- |", "--- |", "|:---:|:---:|"],
)
def test_table_separator_rows_are_not_substantive(row):
    assert not is_substantive(f"# Table\n\n{row}\n")


@pytest.mark.parametrize("row", ["| -- |", "| --- ", "---", "| --- | x |"])
def test_rows_that_only_look_like_separators_are_substantive(row):
    assert is_substantive(row)


def test_a_table_header_row_is_substantive():
    assert is_substantive("| ID | Title |\n| --- | --- |\n")


@pytest.mark.parametrize(
    "line",
    ["-", "*", "+", "- none yet", "* TBD:", "+ todo.", "- None Yet.", "-tbd", "* todo:", "- :"],
)
def test_placeholder_bullets_are_not_substantive(line):
    assert not is_substantive(f"## Items\n\n{line}\n")


@pytest.mark.parametrize("line", ["none yet", "TBD", "todo.", "None yet:", "tbd:"])
def test_bare_placeholders_are_not_substantive(line):
    assert not is_substantive(line)


@pytest.mark.parametrize("line", ["- Primary users:", "- todo later", "none yet really", "- tbd!"])
def test_bullets_with_anything_more_are_substantive(line):
    assert is_substantive(line)


def test_scaffolding_alone_is_not_substantive():
    text = "# Project\n\n## Goal\n\n- none yet\n\n| --- |\n\nTBD\n"
    assert not is_substantive(text)


def test_one_line_of_prose_makes_a_document_substantive():
    assert is_substantive("# Project\n\nA shop for used bicycles.\n")


def test_lines_are_split_on_line_feed_and_trimmed_including_carriage_returns():
    assert not is_substantive("# Project\r\n\r\n- todo\r\n")


def test_an_audit_heading_alone_is_not_substantive():
    assert not is_substantive("# Audit\n\n")
