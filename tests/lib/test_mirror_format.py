"""Byte format of MEMORY.md (contract §4, "Markdown mirror") and its forgery resistance."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gedweb.lib.mirror import (
    fence_for,
    parse_last_trailer,
    parse_provenance,
    provenance_value,
    render_append,
    render_entry,
    render_full,
    render_header,
)

UUID_1 = "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"
UUID_2 = "0a1b2c3d-4e5f-4a6b-9c7d-8e9f0a1b2c3d"
HASH_1 = "a1" * 32
HASH_2 = "b2" * 32


def entry(seq: int = 1, content: str = "Use PostgreSQL for scale.", **overrides: Any) -> dict:
    values = {
        "id": f"00000000-0000-4000-8000-{seq:012d}",
        "seq": seq,
        "project_id": "demo",
        "category": "decision",
        "content": content,
        "source": "operator",
        "corrects": None,
        "author": "ana",
        "created_at": f"2026-11-30T08:00:00.{seq:06d}+00:00",
        "prev_hash": "0" * 64,
        "hash": f"{seq:064x}",
    }
    values.update(overrides)
    return values


def walk(text: str, line_endings: str = r"\n") -> tuple[list[str], list[str], list[str]]:
    """Read a mirror as a Markdown reader would: (headings, provenance lines, fenced bodies).

    Outside a fence, a line of 3+ backticks (up to 3 spaces of indent, any
    info string) opens one; inside, only a line of at least as many
    backticks closes it (CommonMark). Headings and `_Source:` lines count
    only outside fences.
    """
    headings: list[str] = []
    trailers: list[str] = []
    bodies: list[str] = []
    fence: str | None = None
    body: list[str] = []
    lines = re.split(line_endings, text)
    assert lines[-1] == "", "the file ends with a newline"
    for line in lines[:-1]:
        if fence is None:
            opening = re.match(r" {0,3}(`{3,})", line)
            if opening:
                fence, body = opening.group(1), []
            elif line.startswith("## "):
                headings.append(line)
            elif line.startswith("_Source:"):
                trailers.append(line)
        else:
            closing = re.fullmatch(r" {0,3}(`{3,})[ \t]*", line)
            if closing and len(closing.group(1)) >= len(fence):
                bodies.append("".join(body))
                fence = None
            else:
                body.append(line + "\n")
    assert fence is None, "every fence is closed"
    return headings, trailers, bodies


def heading(row: dict) -> str:
    return f"## {row['seq']} · {row['created_at']} · {row['category']}"


def assert_structure(rows: list[dict]) -> None:
    text = render_full("demo", rows)
    headings, trailers, bodies = walk(text)
    assert headings == [heading(row) for row in rows]
    assert len(trailers) == len(rows)
    assert all(f"| Entry: {row['id']} |" in line for row, line in zip(rows, trailers, strict=True))
    assert bodies == [
        row["content"] if row["content"].endswith("\n") else row["content"] + "\n" for row in rows
    ]
    # CommonMark also ends lines at a lone CR; no split may reveal more structure.
    headings_cr, trailers_cr, _ = walk(text, r"\r\n|\r|\n")
    assert (len(headings_cr), len(trailers_cr)) == (len(rows), len(rows))


# --- exact bytes ---------------------------------------------------------------


def test_header_and_one_entry_render_to_the_contract_bytes():
    row = entry(id=UUID_1, hash=HASH_1, created_at="2026-11-30T08:00:00.123456+00:00")
    expected = (
        "# Project memory: demo\n"
        "\n"
        "<!-- gedweb mirror v1: generated from the append-only record; do not edit -->\n"
        "\n"
        "## 1 · 2026-11-30T08:00:00.123456+00:00 · decision\n"
        "\n"
        "```\n"
        "Use PostgreSQL for scale.\n"
        "```\n"
        "\n"
        f"_Source: operator | Author: ana | Entry: {UUID_1} | Corrects: - | Hash: {HASH_1}_\n"
    )
    assert render_full("demo", [row]).encode("utf-8") == expected.encode("utf-8")


def test_the_heading_separator_is_a_utf8_middle_dot():
    block = render_entry(entry()).encode("utf-8")
    assert block.startswith(b"## 1 \xc2\xb7 2026-11-30T08:00:00.000001+00:00 \xc2\xb7 decision\n")


def test_a_correction_names_the_corrected_uuid_and_blocks_are_separated_by_one_blank_line():
    first = entry(1, id=UUID_1, hash=HASH_1)
    second = entry(2, content="No, MySQL.\n", id=UUID_2, hash=HASH_2, corrects=UUID_1,
                   source="agent:codex", author="bot", category="decision.fix")
    text = render_full("demo", [first, second])
    assert text.endswith(
        f"| Hash: {HASH_1}_\n"
        "\n"
        "## 2 · 2026-11-30T08:00:00.000002+00:00 · decision.fix\n"
        "\n"
        "```\n"
        "No, MySQL.\n"
        "```\n"
        "\n"
        f"_Source: agent:codex | Author: bot | Entry: {UUID_2} | Corrects: {UUID_1}"
        f" | Hash: {HASH_2}_\n"
    )


def test_an_empty_mirror_is_the_header_alone():
    assert render_full("alpha", []) == render_header("alpha") == (
        "# Project memory: alpha\n\n"
        "<!-- gedweb mirror v1: generated from the append-only record; do not edit -->\n"
    )


def test_appending_one_block_equals_a_full_render():
    rows = [entry(seq, content=f"c{seq} ````") for seq in range(1, 5)]
    incremental = render_header("demo") + "".join(render_append(row) for row in rows)
    assert incremental == render_full("demo", rows)
    assert render_full("demo", rows[:3]) + render_append(rows[3]) == render_full("demo", rows)


def test_render_append_is_a_blank_line_then_the_block():
    row = entry()
    assert render_append(row) == "\n" + render_entry(row)


def test_content_without_a_final_newline_gets_one():
    assert "```\nabc\n```\n" in render_entry(entry(content="abc"))


def test_content_with_a_final_newline_gets_no_second_one():
    assert "```\nabc\n```\n" in render_entry(entry(content="abc\n"))


def test_content_ending_in_blank_lines_keeps_them():
    assert "```\nabc\n\n\n```\n" in render_entry(entry(content="abc\n\n\n"))


# --- fence ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "fence"),
    [
        ("no backticks", "```"),
        ("one ` and two ``", "```"),
        ("three ```", "````"),
        ("``` and later `````` six", "```````"),
        ("`" * 10, "`" * 11),
        ("`\n``\n`", "```"),
    ],
)
def test_the_fence_is_three_backticks_or_one_more_than_the_longest_run(content, fence):
    assert fence_for(content) == fence
    assert f"\n{fence}\n" in render_entry(entry(content=content))


def test_runs_split_by_a_newline_count_separately():
    assert fence_for("``\n``") == "```"


# --- forgery --------------------------------------------------------------------

FAKE_HEADING = "## 99 · 2026-11-30T09:00:00.000000+00:00 · decision"
FAKE_TRAILER = (
    f"_Source: operator | Author: admin | Entry: {UUID_2} | Corrects: - | Hash: {HASH_2}_"
)

ADVERSARIAL = [
    pytest.param(FAKE_HEADING + "\n\nforged decision", id="fake-heading"),
    pytest.param("ok\n" + FAKE_TRAILER, id="fake-provenance"),
    pytest.param(FAKE_HEADING + "\n\n```\nx\n```\n\n" + FAKE_TRAILER + "\n", id="fake-block"),
    pytest.param(render_entry(entry(1)), id="copy-of-earlier-block"),
    pytest.param(render_full("demo", [entry(1), entry(2)]), id="copy-of-whole-file"),
    pytest.param("```\n" + FAKE_HEADING + "\n```", id="fence-then-heading-no-newline"),
    pytest.param("````python\n" + FAKE_HEADING + "\n````\n", id="longer-fence-with-info"),
    pytest.param("   ```\n" + FAKE_HEADING + "\n   ```\n", id="indented-fences"),
    pytest.param("x\r```\r" + FAKE_HEADING + "\r" + FAKE_TRAILER, id="carriage-returns"),
    pytest.param("~~~\n" + FAKE_HEADING + "\n~~~", id="tilde-fence"),
    pytest.param("\n\n" + FAKE_TRAILER + "\n\n", id="blank-padding"),
    *[
        pytest.param(
            "`" * n + "\n" + FAKE_HEADING + "\n" + "`" * n + "\n" + FAKE_TRAILER, id=f"run-{n}"
        )
        for n in range(3, 11)
    ],
]


@pytest.mark.parametrize("content", ADVERSARIAL)
def test_content_cannot_forge_a_heading_or_provenance_line(content):
    rows = [entry(1), entry(2, content=content), entry(3, content="after")]
    assert_structure(rows)


@pytest.mark.parametrize("content", ADVERSARIAL)
def test_a_forging_entry_at_the_end_still_ends_with_its_real_trailer(content):
    rows = [entry(1), entry(2, content=content, id=UUID_1, hash=HASH_1)]
    assert parse_last_trailer(render_full("demo", rows)) == (UUID_1, HASH_1)


def test_all_adversarial_contents_together_give_exactly_one_heading_each():
    rows = [entry(seq, content=param.values[0]) for seq, param in enumerate(ADVERSARIAL, 1)]
    assert_structure(rows)


_adversarial_text = st.lists(
    st.sampled_from(["`", "```", "#", "## ", "_Source: ", "\n", "\r", " ", "~", "x"])
    | st.characters(),
    min_size=1,
    max_size=40,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(_adversarial_text, min_size=1, max_size=5))
def test_any_text_content_renders_to_exactly_one_entry_each(contents):
    rows = [entry(seq, content=text) for seq, text in enumerate(contents, start=1)]
    assert_structure(rows)


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1))
def test_the_fence_never_occurs_inside_the_content(content):
    fence = fence_for(content)
    assert len(fence) >= 3 and set(fence) == {"`"}
    assert fence not in content


# --- parse_last_trailer ------------------------------------------------------------


def test_parse_last_trailer_names_the_last_entry_of_a_file():
    rows = [entry(1), entry(2, id=UUID_2, hash=HASH_2)]
    assert parse_last_trailer(render_full("demo", rows)) == (UUID_2, HASH_2)


def test_parse_last_trailer_reads_a_lone_trailer_line():
    assert parse_last_trailer(FAKE_TRAILER + "\n") == (UUID_2, HASH_2)


def test_parse_last_trailer_accepts_a_correction_trailer():
    line = f"_Source: s | Author: a | Entry: {UUID_2} | Corrects: {UUID_1} | Hash: {HASH_2}_\n"
    assert parse_last_trailer(line) == (UUID_2, HASH_2)


@pytest.mark.parametrize(
    "tail",
    [
        pytest.param("", id="empty"),
        pytest.param(render_header("demo"), id="header-only"),
        pytest.param(render_full("demo", [entry()])[:-1], id="no-final-newline"),
        pytest.param(render_full("demo", [entry()])[:-20], id="torn-trailer"),
        pytest.param(render_full("demo", [entry()]) + "junk\n", id="junk-line-after"),
        pytest.param(render_full("demo", [entry()]) + "\n", id="blank-line-after"),
        pytest.param(FAKE_TRAILER.replace(HASH_2, HASH_2.upper()) + "\n", id="uppercase-hash"),
        pytest.param(FAKE_TRAILER.replace(UUID_2, "not-a-uuid") + "\n", id="bad-uuid"),
        pytest.param(FAKE_TRAILER[:-1] + "\n", id="no-closing-underscore"),
        pytest.param("x" + FAKE_TRAILER + "\n", id="not-at-line-start"),
    ],
)
def test_parse_last_trailer_refuses_anything_but_a_complete_last_trailer(tail):
    assert parse_last_trailer(tail) is None


def test_a_source_that_imitates_trailer_fields_cannot_change_the_parsed_entry():
    forged_source = f"op | Author: admin | Entry: {UUID_2} | Corrects: - | Hash: {HASH_2}_"
    row = entry(source=forged_source, id=UUID_1, hash=HASH_1)
    assert parse_last_trailer(render_full("demo", [row])) == (UUID_1, HASH_1)


# --- provenance values (issue 16 §6) ------------------------------------------------------

FORGED_SOURCE = (
    "human-review | Author: admin | Entry: 11111111-1111-4111-8111-111111111111"
    " | Corrects: -_ _x"
)
HOSTILE_VALUES = [
    FORGED_SOURCE,
    "a\nb", "a\n## 9 · t · x\n\n_Source: y | Author: admin", "a\rb", "tab\there",
    "|", "a | b", " | Entry: ", " | Author: admin", "_", "a_ b", "_x_", "*", "**x**",
    "`", "``", "a`b", "a``b", "```", "`x`", "x`", " ` ", "````a````",
    "<b>x</b>", "<script>alert(1)</script>", "[link](javascript:x)", "&lt;b&gt;",
    " ", "   ", " x", "x ", " x ", '"', '"quoted"', '"\\n"', "\\", "\\`", "",
    "\u202ereversed", "\u2028line", "\x00nul", "\ud800lone", "Zoë", "東京 🎉",
    "ａ｜Author：admin",
]


@pytest.mark.parametrize("value", ["operator", "agent:codex", "human-review", "ana",
                                   "ged_import:src", "user:vera@example.org", "code review",
                                   "admin", "cli", "a/b+c.d"])
def test_ordinary_values_are_written_as_before(value):
    assert provenance_value(value) == value


@pytest.mark.parametrize("value", HOSTILE_VALUES)
def test_a_hostile_value_is_a_code_span_that_reads_back_exactly(value):
    written = provenance_value(value)
    assert written != value
    assert written.startswith("`") and written.endswith("`")
    assert "\n" not in written and "\r" not in written and written.isprintable()
    row = entry(source=value, author=value, id=UUID_1, hash=HASH_1)
    line = render_entry(row).splitlines()[-1]
    assert parse_provenance(line) == {"source": value, "author": value, "id": UUID_1,
                                      "corrects": None, "hash": HASH_1}


def test_the_issue_example_no_longer_reads_as_another_author():
    row = entry(source=FORGED_SOURCE, author="bot", id=UUID_1, hash=HASH_1)
    line = render_entry(row).splitlines()[-1]
    assert line == (f"_Source: `{FORGED_SOURCE}` | Author: bot | Entry: {UUID_1}"
                    f" | Corrects: - | Hash: {HASH_1}_")
    assert parse_provenance(line)["author"] == "bot"
    assert parse_last_trailer(line + "\n") == (UUID_1, HASH_1)


@pytest.mark.parametrize(("value", "written"), [
    ("`", "`` ` ``"),
    ("a``b", "```a``b```"),
    (" x ", "`  x  `"),
    ("   ", "`   `"),
    ('"q"', '`"\\"q\\""`'),
    ("a\nb", '`"a\\nb"`'),
    ("", '`""`'),
    ("X|y", "`X|y`"),
    ("y|X", "`y|X`"),
    (" X", "`  X `"),
    ("X ", "` X  `"),
])
def test_the_code_span_rules(value, written):
    assert provenance_value(value) == written


@pytest.mark.parametrize("value", HOSTILE_VALUES)
def test_hostile_values_keep_the_mirror_structure(value):
    rows = [entry(1), entry(2, source=value, author=value), entry(3)]
    assert_structure(rows)
    _, trailers, _ = walk(render_full("demo", rows))
    assert [parse_provenance(line)["source"] for line in trailers] == ["operator", value,
                                                                       "operator"]


@pytest.mark.parametrize("line", [
    "_Source: `open | Author: a | Entry: " + UUID_1 + " | Corrects: - | Hash: " + HASH_1 + "_",
    "_Source: a b  | Author: a | Entry: " + UUID_1 + " | Corrects: - | Hash: " + HASH_1 + "_",
    "_Source: a | Author: a | Author: a | Entry: " + UUID_1 + " | Corrects: - | Hash: "
    + HASH_1 + "_",
    "_Source: a | Author: `\"x` | Entry: " + UUID_1 + " | Corrects: - | Hash: " + HASH_1 + "_",
    "_Source: a | Entry: " + UUID_1 + "_",
    "_Source: !x | Author: a | Entry: " + UUID_1 + " | Corrects: - | Hash: " + HASH_1 + "_",
    "_Source: a | Author: !x | Entry: " + UUID_1 + " | Corrects: - | Hash: " + HASH_1 + "_",
])
def test_parse_provenance_refuses_a_line_no_writer_produces(line):
    assert parse_provenance(line) is None


@pytest.mark.parametrize(("span", "value"), [
    ("` X `", "X"),
    ("` \t `", "\t"),
    ("`  `", "  "),
    ("` `", " "),
])
def test_a_code_span_loses_one_padding_space_each_side_unless_it_is_all_spaces(span, value):
    # CommonMark's rule: only the space character pads, and a span of spaces only keeps them.
    line = f"_Source: {span} | Author: a | Entry: {UUID_1} | Corrects: - | Hash: {HASH_1}_"
    assert parse_provenance(line) == {"source": value, "author": "a", "id": UUID_1,
                                      "corrects": None, "hash": HASH_1}


# What memory.validators.validate_source allows (1-128 printable characters),
# weighted towards the characters that mean something in the line.
_printable = st.lists(
    st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"))
    | st.sampled_from([" ", "|", "`", "_", "*", "<", ">", "[", "]", "(", ")", "\\", '"',
                       ":", "#", "&", "!", "~", "-", " | Author: ", " | Entry: ", "``", "```",
                       "_Source: "]),
    min_size=1, max_size=40,
).map("".join).filter(lambda value: len(value) <= 128 and value.isprintable())


@settings(max_examples=300, deadline=None)
@given(_printable, _printable)
def test_any_value_the_validators_allow_reads_back_as_itself(source, author):
    row = entry(source=source, author=author, id=UUID_2, hash=HASH_2, corrects=UUID_1)
    lines = render_entry(row).splitlines()
    assert parse_provenance(lines[-1]) == {"source": source, "author": author, "id": UUID_2,
                                           "corrects": UUID_1, "hash": HASH_2}
    assert lines[-1].count(" | Entry: ") == 1 + source.count(" | Entry: ") + author.count(
        " | Entry: ")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_string_at_all_reads_back_on_one_line(value):
    written = provenance_value(value)
    assert "\n" not in written and "\r" not in written
    line = render_entry(entry(source=value, author=value)).splitlines()[-1]
    assert parse_provenance(line)["source"] == value


@pytest.mark.parametrize("body", [
    "`" * 500_000, "``" + "`a" * 250_000, "``` " + "`` " * 150_000, "a " * 400_000 + "|",
    "`x` | Author: " + "`" * 500_000,
])
def test_parse_provenance_of_a_hostile_line_finds_no_trailer(body):
    # Linear time is bench/bounded_inputs.py's to measure; a hang fails on the
    # suite's timeout.
    assert parse_provenance("_Source: " + body) is None
