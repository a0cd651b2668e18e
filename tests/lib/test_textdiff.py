"""The document compare page's line diff: correct on any input, bounded on hostile ones."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gedweb.lib.textdiff import MAX_LINES, Line, Skip, TooLarge, line_diff


def _sides(diff_rows: list[Line | Skip]) -> tuple[list[str], list[str]]:
    lines = [row for row in diff_rows if isinstance(row, Line)]
    return ([row.text for row in lines if row.tag != "insert"],
            [row.text for row in lines if row.tag != "delete"])


def test_a_changed_line_is_removed_then_added_with_line_numbers():
    diff = line_diff("a\nb\nc\n", "a\nB\nc\n")
    assert diff.rows == [
        Line("equal", 1, 1, "a"), Line("delete", 2, None, "b"), Line("insert", None, 2, "B"),
        Line("equal", 3, 3, "c"),
    ]
    assert (diff.added, diff.removed, diff.identical, diff.exhausted) == (1, 1, False, False)


def test_identical_texts_have_no_change_and_only_a_skip():
    diff = line_diff("a\nb\n", "a\nb\n")
    assert diff.identical
    assert diff.rows == [Skip(2)]


def test_unchanged_lines_far_from_a_change_are_skipped():
    old = "\n".join(str(n) for n in range(100))
    new = old.replace("\n50\n", "\nfifty\n")
    diff = line_diff(old, new)
    assert diff.rows[0] == Skip(47)
    assert [row.text for row in diff.rows if isinstance(row, Line)] == [
        "47", "48", "49", "50", "fifty", "51", "52", "53"]
    assert diff.rows[-1] == Skip(46)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "", " "]), max_size=40),
       st.lists(st.sampled_from(["a", "b", "c", "", " "]), max_size=40))
def test_every_diff_rebuilds_both_texts(old: list[str], new: list[str]):
    diff = line_diff("".join(f"{line}\n" for line in old),
                     "".join(f"{line}\n" for line in new), context=10**9)
    if diff.identical:  # nothing changed: nothing but a skip to show
        assert old == new and all(isinstance(row, Skip) for row in diff.rows)
    else:
        assert _sides(diff.rows) == (old, new)


def _interleaved(n: int) -> tuple[list[str], list[str]]:
    old = [str(i) for i in range(n)]
    return old, old[1::2] + old[0::2]


def _periodic(n: int) -> tuple[list[str], list[str]]:
    return [str(i % 150) for i in range(n)], [str(i % 149) for i in range(n)]


def _reversed(n: int) -> tuple[list[str], list[str]]:
    old = [f"line {i}" for i in range(n)]
    return old, old[::-1]


def _edited(n: int) -> tuple[list[str], list[str]]:
    rng = random.Random(7)
    old = [f"line {rng.randrange(10**9)}" for _ in range(n)]
    return old, [line if rng.random() < 0.9 else "changed" for line in old]


@pytest.mark.parametrize("make", [_interleaved, _periodic, _reversed, _edited])
def test_hostile_texts_at_the_line_limit_answer_in_bounded_time(make):
    """difflib alone takes 9 s on 5,000 interleaved lines; these are 20,000 each.

    The time is bench/bounded_inputs.py's (`make bench`); a hang fails on the
    suite's timeout.
    """
    old, new = make(MAX_LINES)
    diff = line_diff("\n".join(old), "\n".join(new), context=10**9)
    assert _sides(diff.rows) == (old, new)


def test_a_spent_budget_still_gives_a_correct_diff():
    old, new = _interleaved(2_000)
    diff = line_diff("\n".join(old), "\n".join(new), budget=10, context=10**9)
    assert diff.exhausted
    assert _sides(diff.rows) == (old, new)


def test_texts_over_the_line_limit_are_refused():
    with pytest.raises(TooLarge):
        line_diff("x\n" * (MAX_LINES + 1), "x\n")
