"""Which legacy files a step takes: task artifacts, their owners, the files GedWeb reports."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from gedweb.checkout import safefs
from gedweb.checkout.safefs import READ
from gedweb.checkout.v3.files import gedpi_walk, lstat, read, top_level
from gedweb.checkout.v3.reasons import (
    REASON_BRANCH_WORK,
    REASON_TASK_SUBDIR,
    REASONS_KEPT_CANONICAL,
)
from gedweb.checkout.v3.texts import as_text, collation_key, js_trim
from gedweb.lib.ids import WORK_ID_RE

TASK_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
TASK_PATTERNS = (
    (re.compile(r"([A-Za-z0-9._-]+)-BRIEF\.md"), "BRIEF.md"),
    (re.compile(r"([A-Za-z0-9._-]+)\.history\.json"), "HISTORY.json"),
    (re.compile(r"([A-Za-z0-9._-]+)-RECOVERY\.md"), "RECOVERY.md"),
)


def task_descriptor(name: str) -> tuple[str, str] | None:
    for pattern, artifact in TASK_PATTERNS:
        match = pattern.fullmatch(name)
        if match:
            task_id = match.group(1)
            return (task_id, artifact) if TASK_ID_RE.fullmatch(task_id) else None
    return None


def task_owner_index(root: Path) -> dict[str, list[str]]:
    """Task id -> the generated work IDs whose TASKS.md has it as some line's second cell.

    Read once per run (GedPi re-reads every TASKS.md for every task file,
    which is quadratic on large checkouts; the answer is the same).
    """
    _, work_dirs = top_level(root, ".ged/work")
    index: dict[str, list[str]] = {}
    for work_id in work_dirs:
        if not WORK_ID_RE.fullmatch(work_id):
            continue
        tasks = read(root, f".ged/work/{work_id}/TASKS.md")
        if tasks is None:
            continue
        cells = {js_trim(line.split("|")[1]) for line in as_text(tasks).split("\n")
                 if line.count("|") >= 1}
        for task_id in cells:
            index.setdefault(task_id, []).append(work_id)
    return index


def task_destination(root: Path, name: str,
                     owners: dict[str, list[str]] | None = None) -> str | None:
    descriptor = task_descriptor(name)
    if descriptor is None:
        return None
    task_id, artifact = descriptor
    found = (owners if owners is not None else task_owner_index(root)).get(task_id, [])
    if len(found) != 1:
        return None
    return f".ged/work/{found[0]}/tasks/{task_id}/{artifact}"


def gedweb_reported(root: Path) -> Iterator[tuple[str, str]]:
    """Files GedPi leaves unreported (gap G-9), with GedWeb's reasons, in a fixed order."""
    _, task_dirs = top_level(root, ".ged/tasks")
    for name in sorted(task_dirs, key=collation_key):
        for source_path in gedpi_walk(root, f".ged/tasks/{name}"):
            yield source_path, REASON_TASK_SUBDIR
    for source_path, reason in REASONS_KEPT_CANONICAL.items():
        safefs.check(root, source_path, READ)
        if lstat(root, source_path) is not None:
            yield source_path, reason
    _, work_dirs = top_level(root, ".ged/work")
    for name in sorted(work_dirs, key=collation_key):
        if WORK_ID_RE.fullmatch(name):
            continue
        for source_path in gedpi_walk(root, f".ged/work/{name}"):
            yield source_path, REASON_BRANCH_WORK
