"""A line diff of two texts in bounded time: what the document compare page shows.

Python's difflib.SequenceMatcher finds good matches but takes time
quadratic in the number of lines on some inputs (two 5,000-line texts whose
lines are interleaved take nine seconds). Here it only ever sees small
regions: the texts are first cut at their common prefix and suffix, then at
anchors, the lines that occur exactly once in each side, in the longest
order both sides share (patience diff, O(n log n)). A region between two
anchors is matched by SequenceMatcher when it is at most SMALL_REGION line
pairs, and cut again by its own anchors otherwise. Every step is charged to
a budget of WORK_BUDGET line visits; a region the budget cannot pay for
is shown whole as removed then added, which is correct, only less precise.
So a diff never costs more than about WORK_BUDGET + the lines' hashing,
whatever the texts hold.

The output is plain data (no markup): the template escapes every line.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass

# Two texts of at most this many lines each are compared; longer ones are
# refused by the page with a message (documents hold at most 200,000 characters).
MAX_LINES = 20_000
SMALL_REGION = 40_000  # line pairs SequenceMatcher may take at once (200 x 200)
WORK_BUDGET = 2_000_000
CONTEXT = 3  # unchanged lines shown around each change


@dataclass(frozen=True)
class Line:
    """One line of the diff: ``tag`` is ``equal``, ``delete`` or ``insert``."""

    tag: str
    old: int | None  # 1-based line number in the old text
    new: int | None  # 1-based line number in the new text
    text: str


@dataclass(frozen=True)
class Skip:
    """Unchanged lines left out between two hunks."""

    count: int


@dataclass(frozen=True)
class Diff:
    rows: list[Line | Skip]
    added: int
    removed: int
    exhausted: bool  # the budget ran out: some regions are shown whole

    @property
    def identical(self) -> bool:
        return self.added == 0 and self.removed == 0


class TooLarge(ValueError):
    """A text has more lines than MAX_LINES."""


class _Budget:
    def __init__(self, units: int) -> None:
        self.left = units
        self.exhausted = False

    def take(self, units: int) -> bool:
        if units > self.left:
            self.exhausted = True
            return False
        self.left -= units
        return True


# A block: (tag, a_lo, a_hi, b_lo, b_hi), as difflib's opcodes but only
# "equal" and "replace" (a replace may have an empty side).
_Block = tuple[str, int, int, int, int]


def _unique_anchors(a: list[str], b: list[str], alo: int, ahi: int, blo: int,
                    bhi: int) -> list[tuple[int, int]]:
    """Lines unique on both sides, in the longest increasing order of both (patience)."""
    count_a: dict[str, int] = {}
    for i in range(alo, ahi):
        count_a[a[i]] = count_a.get(a[i], 0) + 1
    where_b: dict[str, int] = {}
    count_b: dict[str, int] = {}
    for j in range(blo, bhi):
        line = b[j]
        if count_a.get(line) == 1:
            count_b[line] = count_b.get(line, 0) + 1
            where_b[line] = j
    pairs = [(i, where_b[a[i]]) for i in range(alo, ahi)
             if count_a[a[i]] == 1 and count_b.get(a[i]) == 1]
    # Longest increasing subsequence of the b positions: O(k log k).
    tails: list[int] = []  # tails[n]: the smallest b position ending a run of n + 1
    tail_index: list[int] = []
    previous: list[int] = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        at = bisect_left(tails, j)
        if at == len(tails):
            tails.append(j)
            tail_index.append(index)
        else:
            tails[at] = j
            tail_index[at] = index
        previous[index] = tail_index[at - 1] if at else -1
    run: list[tuple[int, int]] = []
    index = tail_index[-1] if tail_index else -1
    while index != -1:
        run.append(pairs[index])
        index = previous[index]
    run.reverse()
    return run


def _blocks(a: list[str], b: list[str], budget: _Budget) -> list[_Block]:
    out: list[_Block] = []
    # An explicit stack instead of recursion, so no input can exhaust Python's stack.
    # A region either yields its blocks at once or pushes its parts, in
    # reverse, so that they pop (and yield) in order.
    stack: list[tuple[int, int, int, int]] = [(0, len(a), 0, len(b))]
    while stack:
        region = _region(a, b, *stack.pop(), budget, stack)
        if region is not None:
            out.extend(region)
    return out


def _region(a: list[str], b: list[str], alo: int, ahi: int, blo: int, bhi: int,
            budget: _Budget, stack: list[tuple[int, int, int, int]]) -> list[_Block] | None:
    """The blocks of one region, or None after pushing its sub-regions onto ``stack``.

    Sub-regions are pushed so that they pop in order and their blocks follow
    one another; equal blocks between them are pushed as zero-cost regions.
    """
    head = alo
    while alo < ahi and blo < bhi and a[alo] == b[blo]:
        alo += 1
        blo += 1
    prefix: list[_Block] = [("equal", head, alo, blo - (alo - head), blo)] if alo > head else []
    tail_a, tail_b = ahi, bhi
    while ahi > alo and bhi > blo and a[ahi - 1] == b[bhi - 1]:
        ahi -= 1
        bhi -= 1
    suffix: list[_Block] = [("equal", ahi, tail_a, bhi, tail_b)] if tail_a > ahi else []
    if alo == ahi or blo == bhi:
        middle: list[_Block] = [("replace", alo, ahi, blo, bhi)] if (ahi > alo or bhi > blo) else []
        return prefix + middle + suffix
    size_a, size_b = ahi - alo, bhi - blo
    if size_a * size_b <= SMALL_REGION and budget.take(size_a * size_b):
        matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
        middle = []
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            kind = "equal" if tag == "equal" else "replace"
            middle.append((kind, alo + i1, alo + i2, blo + j1, blo + j2))
        return prefix + middle + suffix
    if not budget.take(2 * (size_a + size_b)):
        return [*prefix, ("replace", alo, ahi, blo, bhi), *suffix]
    anchors = _unique_anchors(a, b, alo, ahi, blo, bhi)
    if not anchors:
        return [*prefix, ("replace", alo, ahi, blo, bhi), *suffix]
    # Push in reverse so the stack pops prefix, gap, anchor, gap, ..., suffix in order.
    jobs: list[tuple[int, int, int, int] | _Block] = [*prefix]
    i, j = alo, blo
    for ai, bj in anchors:
        jobs.append((i, ai, j, bj))
        jobs.append(("equal", ai, ai + 1, bj, bj + 1))
        i, j = ai + 1, bj + 1
    jobs.append((i, ahi, j, bhi))
    jobs.extend(suffix)
    for job in reversed(jobs):
        stack.append(_as_region(job) if len(job) == 5 else job)
    return None


def _as_region(block: _Block) -> tuple[int, int, int, int]:
    """An equal block as a region: the prefix scan consumes it again at no real cost."""
    _, i1, i2, j1, j2 = block
    return (i1, i2, j1, j2)


def _lines(blocks: list[_Block], a: list[str], b: list[str]) -> Iterator[Line]:
    for tag, i1, i2, j1, j2 in blocks:
        if tag == "equal":
            for offset in range(i2 - i1):
                yield Line("equal", i1 + offset + 1, j1 + offset + 1, a[i1 + offset])
            continue
        for i in range(i1, i2):
            yield Line("delete", i + 1, None, a[i])
        for j in range(j1, j2):
            yield Line("insert", None, j + 1, b[j])


def split_lines(text: str) -> list[str]:
    """Lines without their ends; a final newline adds no empty line."""
    return text.splitlines()


def line_diff(old: str, new: str, *, context: int = CONTEXT,
              budget: int = WORK_BUDGET) -> Diff:
    """The lines removed from ``old`` and added in ``new``, with ``context`` lines around."""
    a, b = split_lines(old), split_lines(new)
    if len(a) > MAX_LINES or len(b) > MAX_LINES:
        raise TooLarge(f"at most {MAX_LINES:,} lines can be compared")
    spent = _Budget(budget)
    lines = list(_lines(_blocks(a, b, spent), a, b))
    added = sum(1 for line in lines if line.tag == "insert")
    removed = sum(1 for line in lines if line.tag == "delete")
    return Diff(_with_context(lines, context), added, removed, spent.exhausted)


def _with_context(lines: list[Line], context: int) -> list[Line | Skip]:
    # A line is kept when a change lies within ``context`` lines of it: two
    # linear passes (distance to the previous and to the next change).
    far = len(lines) + context + 1
    keep = [False] * len(lines)
    distance = far
    for index, line in enumerate(lines):
        distance = 0 if line.tag != "equal" else distance + 1
        keep[index] = distance <= context
    distance = far
    for index in range(len(lines) - 1, -1, -1):
        distance = 0 if lines[index].tag != "equal" else distance + 1
        keep[index] = keep[index] or distance <= context
    rows: list[Line | Skip] = []
    skipped = 0
    for index, line in enumerate(lines):
        if keep[index]:
            if skipped:
                rows.append(Skip(skipped))
                skipped = 0
            rows.append(line)
        else:
            skipped += 1
    if skipped:
        rows.append(Skip(skipped))
    return rows
