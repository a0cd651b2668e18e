"""Every text rule answers in time linear in its input (issue 15 §1).

Each case feeds a rule the input that made its old pattern backtrack
(bench/text_rules.py times old against new), at 1,000,000 characters, and
checks the answer as well as the time: the per-test timeout turns a
quadratic rule into a failure. The property tests below keep each rewritten
rule's answers equal to the old pattern's, which they quote.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gedweb.lib import mirror, skills, substantive

N = 1_000_000
UUID = "0f8e2c3a-1b2c-4d5e-8f90-a1b2c3d4e5f6"
HASH = "ab" * 32


def _trailer(source: str, corrects: str = "-") -> str:
    return (
        f"_Source: {source} | Author: agent | Entry: {UUID} | Corrects: {corrects}"
        f" | Hash: {HASH}_\n"
    )


# (rule, input of about N characters, expected answer)
CASES: list[Any] = [
    pytest.param(
        substantive.is_substantive, lambda: "# " + " " * N + "a\rb", True,
        id="substantive-heading-with-a-line-break-after-spaces",
    ),
    pytest.param(
        substantive.is_substantive, lambda: "# " + " " * N + "a", False,
        id="substantive-heading-with-spaces",
    ),
    pytest.param(
        substantive.is_substantive, lambda: "#" + "\u3000" * N + "b\u2028c", True,
        id="substantive-heading-with-a-line-separator-after-ideographic-spaces",
    ),
    pytest.param(
        substantive.is_scaffolding, lambda: "|---" * (N // 4) + "x", False,
        id="substantive-table-separator-unfinished",
    ),
    pytest.param(
        substantive.is_scaffolding, lambda: "| --- " * (N // 6) + "|", True,
        id="substantive-table-separator",
    ),
    pytest.param(
        substantive.is_scaffolding, lambda: "-" + " " * N + "x", False,
        id="substantive-placeholder-bullet",
    ),
    pytest.param(
        skills.description,
        lambda: "---\ndescription: " + " \t" * (N // 4) + "x" + " \t" * (N // 4) + "y \t\n---\n",
        "x" + " \t" * (N // 4) + "y",
        id="skills-description-spaces-and-tabs",
    ),
    pytest.param(
        skills.description,
        lambda: "---\nname: n\n" + "descriptio\n" * (N // 11) + "description:" + "\t" * 10,
        None,
        id="skills-description-near-misses-and-no-closing-line",
    ),
    pytest.param(
        skills.front_matter, lambda: "---\n" + "\n--" * (N // 3), None,
        id="skills-front-matter-unclosed",
    ),
    pytest.param(
        skills.triggers,
        lambda: 'Triggers include "a"' + ' , or "b"' * (N // 9) + " , or " + " " * N,
        ["a"] + ["b"] * (N // 9),
        id="skills-triggers-dangling-or",
    ),
    pytest.param(
        mirror.parse_last_trailer,
        lambda: "_Source: " + " | Author:  | Entry: " * (N // 20) + "_\n", None,
        id="mirror-trailer-repeated-separators",
    ),
    pytest.param(
        mirror.parse_last_trailer,
        lambda: "x\n" + _trailer(" | Author: " * (N // 11)), (UUID, HASH),
        id="mirror-trailer-long-source",
    ),
    pytest.param(
        mirror.fence_for, lambda: "`" * N + "a`", "`" * (N + 1),
        id="mirror-backtick-run",
    ),
]


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("rule", "make_input", "expected"), CASES)
def test_rule_answers_its_worst_case_in_linear_time(
    rule: Callable[[str], Any], make_input: Callable[[], str], expected: Any
) -> None:
    assert rule(make_input()) == expected


@pytest.mark.timeout(10)
def test_skill_content_check_reads_at_most_its_limit() -> None:
    spaces = " " * (skills.MAX_CONTENT_CHARS // 2 - 20)
    content = f"---\nname:{spaces}abc{spaces}x\ndescription: d\n---\n"
    assert skills.content_problem("abc", content) == (
        "front matter must have the line 'name: abc'"
    )
    assert skills.content_problem("abc", content + "x" * skills.MAX_CONTENT_CHARS) == (
        f"must be 1-{skills.MAX_CONTENT_CHARS:,} characters"
    )


# --- the rewritten rules give the old patterns' answers -------------------------------------

OLD_HEADING = re.compile(rf"#{{1,6}}(?:{substantive._S}+{substantive._DOT}*)?")
OLD_DESCRIPTION = re.compile(r"^description:[ \t]*(.*?)[ \t]*$", re.MULTILINE)
OLD_TRAILER = re.compile(
    r"_Source: .* \| Author: .* \| Entry: (?P<id>[0-9a-f-]{36})"
    r" \| Corrects: (?:[0-9a-f-]{36}|-) \| Hash: (?P<hash>[0-9a-f]{64})_\n\Z"
)

_LINE_CHARS = st.sampled_from(
    ["#", " ", "  ", "a", "\r", "\n", "\t", "\x0b", "\u00a0", "\u2028", "\u2029", "\ufeff",
     "\x1c", "\x85", "|", "-"]
)


@settings(max_examples=1500, deadline=None)
@given(st.lists(_LINE_CHARS, max_size=14).map("".join))
def test_heading_rule_matches_the_lines_the_old_pattern_matched(line: str) -> None:
    assert bool(substantive._HEADING.fullmatch(line)) == bool(OLD_HEADING.fullmatch(line))


def _old_description(content: str) -> str | None:
    block = skills.front_matter(content)
    if block is None:
        return None
    match = OLD_DESCRIPTION.search(block)
    return None if match is None else skills._unquote(match.group(1).strip())


_BLOCK_PARTS = st.sampled_from(
    ["description:", "description", "description: ", "\n", " ", "\t", "\r", "\x0b", "\u2028",
     "\x85", '"', "'", "a", "x y", "name: n", ":", "\n---", "---\n"]
)


@settings(max_examples=1500, deadline=None)
@given(st.lists(_BLOCK_PARTS | st.text(max_size=3), max_size=14).map("".join))
def test_description_is_the_one_the_old_pattern_found(block: str) -> None:
    content = f"---\n{block}\n---\n"
    assert skills.description(content) == _old_description(content)


def _old_trailer(tail: str) -> tuple[str, str] | None:
    start = tail.rfind("\n", 0, len(tail) - 1) + 1
    match = OLD_TRAILER.match(tail, start)
    return None if match is None else (match["id"], match["hash"])


def _mostly(valid: Any, *others: Any) -> st.SearchStrategy[Any]:
    """The valid piece three times in four, so that many generated lines are trailers."""
    return st.one_of(st.just(valid), st.just(valid), st.just(valid), st.sampled_from(others))


_ID = _mostly(UUID, UUID[:-1], UUID + "0", UUID.replace("f", "x"), "-" * 36)
_HEX = _mostly(HASH, HASH[:-1], HASH + "a", HASH.upper())
_FREE = _mostly("", " | Author: ", " | Entry: ", "|", " ", "\r", "\n", "_\n")
_TRAILER_LIKE = st.tuples(
    st.sampled_from(["", "x\n", _trailer("s"), "\n"]),
    _mostly("_Source: ", "_Source:", "x_Source: ", ""), _FREE,
    _mostly(" | Author: ", " | Author:", ""), _FREE,
    _mostly(" | Entry: ", " | Entry:"), _ID,
    _mostly(" | Corrects: ", " | Corrects:"), st.one_of(_ID, st.just("-"), st.just("")),
    _mostly(" | Hash: ", "| Hash: "), _HEX,
    _mostly("_\n", "_", "\n", "_\n\n", "_\n "),
).map("".join)


@settings(max_examples=1500, deadline=None)
@given(_TRAILER_LIKE)
def test_last_trailer_is_the_one_the_old_pattern_read(tail: str) -> None:
    assert mirror.parse_last_trailer(tail) == _old_trailer(tail)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["_Source: ", " | Author: ", " | Entry: ", " | Corrects: ",
                                 " | Hash: ", "_\n", "\n", UUID, HASH, "-", "x"]),
                max_size=16).map("".join))
def test_last_trailer_agrees_on_shuffled_pieces(tail: str) -> None:
    assert mirror.parse_last_trailer(tail) == _old_trailer(tail)


def test_the_generated_trailers_include_real_ones() -> None:
    assert mirror.parse_last_trailer(_trailer("s")) == _old_trailer(_trailer("s")) == (UUID, HASH)
    assert mirror.parse_last_trailer(_trailer("s", UUID)) == (UUID, HASH)
