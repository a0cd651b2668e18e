"""One plan for the dry run and the run: what ``plan_v3`` prints is what ``migrate_v3`` does.

For each checkout shape the plan is taken first (reading only), then the run
executes; the entries the run journals must be, in order, the entries the
plan's actions said they would record, and the dry run's lines must be the
plan's lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gedweb.checkout import v3
from gedweb.lib import gedpi_placeholders as ph
from tests.checkout.trees import (
    REAL_DECISIONS,
    REAL_GLOSSARY,
    WORK_A,
    WORK_B,
    intermediate_tree,
    pretty,
    scenario_tree,
    snapshot,
    standalone_v2_tree,
    tasks_md,
    write_tree,
)


def _two_owners(root: Path) -> None:
    """A task file claimed by two work items: no unambiguous owner, so it is retained."""
    intermediate_tree(root)
    write_tree(root, {
        f".ged/work/{WORK_A}/TASKS.md": tasks_md("T07"),
        f".ged/work/{WORK_B}/TASKS.md": tasks_md("T07"),
        ".ged/tasks/T07-BRIEF.md": "# T07 brief\n\nShared.\n",
    })


def _destination_differs(root: Path) -> None:
    scenario_tree(root)
    write_tree(root, {f".ged/work/{WORK_A}/tasks/T01/HISTORY.json": "other bytes\n"})


def _destination_holds_the_same(root: Path) -> None:
    scenario_tree(root)
    same = (root / ".ged/tasks/T01.history.json").read_bytes()
    write_tree(root, {f".ged/work/{WORK_A}/tasks/T01/HISTORY.json": same})


def _already_pointed(root: Path) -> None:
    """Glossary and decisions are pointers an earlier run wrote (their ADR and CONTEXT agree)."""
    scenario_tree(root)
    v3.migrate_v3(root)
    (root / ".ged/MEMORY-MIGRATION.json").unlink()
    write_tree(root, {".ged/IDEAS.md": "# Ideas\n\n- A real idea.\n"})


def _interrupted(root: Path) -> None:
    """A journal from an interrupted run that removed one placeholder."""
    write_tree(root, {
        ".ged/VERSION": "2\n",
        ".ged/ARCHITECTURE.md": ph.ARCHITECTURE,
        ".ged/GLOSSARY.md": REAL_GLOSSARY,
        v3.JOURNAL_PATH: pretty({"schemaVersion": 1, "migrationId": "durable-memory-v3",
                                 "entries": [{"sourcePath": ".ged/PROJECT.md",
                                              "action": "removed-placeholder"}]}),
    })


def _reported_by_gedweb(root: Path) -> None:
    """Files GedPi skips silently: a task subdirectory, branch-scoped work, canonical files."""
    write_tree(root, {
        ".ged/VERSION": "2\n",
        ".ged/DECISIONS.md": REAL_DECISIONS,
        ".ged/tasks/T09/notes.md": "# Notes on T09\n",
        ".ged/work/feature-x/SPEC.md": "# Spec\n\nBranch work.\n",
        ".ged/PROJECT.md": "# Project\n\nA real summary.\n",
        ".ged/plans/roadmap.md": "# Roadmap\n",
        ".ged/research/README.md": ph.RESEARCH_README,
    })


SHAPES = {
    "scenario 63": scenario_tree,
    "standalone v2 with templates": standalone_v2_tree,
    "intermediate, placeholders only": intermediate_tree,
    "a task with two owners": _two_owners,
    "a task destination with other bytes": _destination_differs,
    "a task destination with the same bytes": _destination_holds_the_same,
    "verified pointers kept": _already_pointed,
    "resuming an interrupted run": _interrupted,
    "files only GedWeb reports": _reported_by_gedweb,
}


def _journaled(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["sourcePath"], e["action"], e.get("destinationPath"), e.get("reason"))
            for e in entries]


@pytest.mark.parametrize("shape", SHAPES)
def test_the_run_records_exactly_what_the_dry_run_planned(tmp_path, shape):
    SHAPES[shape](tmp_path)
    assert v3.migration_status(tmp_path) == "needed"
    journal = v3.read_journal(tmp_path)
    before = snapshot(tmp_path)
    actions = v3.plan_actions(tmp_path, journal)
    lines = v3.plan_v3(tmp_path)
    assert snapshot(tmp_path) == before

    result = v3.migrate_v3(tmp_path)

    assert result.status == "completed"
    planned = [(action.source_path, *expected) for action in actions
               if (expected := action.expected_entry()) is not None]
    assert _journaled(result.entries) == _journaled(journal) + [
        entry for entry in planned if entry not in _journaled(journal)]
    assert planned, "every shape plans at least one entry"
    assert lines[-len(actions):] == [action.line() for action in actions]
    assert isinstance(actions[-1], v3.WriteCompletion)


def test_a_moved_task_and_a_retained_one_are_planned_and_done_as_planned(tmp_path):
    _two_owners(tmp_path)
    write_tree(tmp_path, {f".ged/work/{WORK_A}/TASKS.md": tasks_md("T01", "T07"),
                          ".ged/tasks/T01-BRIEF.md": "# T01 brief\n"})
    actions = v3.plan_actions(tmp_path, [])
    tasks = [a for a in actions if isinstance(a, (v3.MoveTask, v3.RetainTask))]
    assert [(type(a).__name__, a.source_path) for a in tasks] == [
        ("MoveTask", ".ged/tasks/T01-BRIEF.md"), ("RetainTask", ".ged/tasks/T07-BRIEF.md")]
    v3.migrate_v3(tmp_path)
    assert (tmp_path / f".ged/work/{WORK_A}/tasks/T01/BRIEF.md").read_text() == "# T01 brief\n"
    assert not (tmp_path / ".ged/tasks/T01-BRIEF.md").exists()
    assert (tmp_path / ".ged/tasks/T07-BRIEF.md").read_text() == "# T07 brief\n\nShared.\n"


@pytest.mark.parametrize("shape", ["no VERSION", "VERSION 3, nothing legacy", "completed"])
def test_when_nothing_is_needed_the_plan_and_the_run_both_do_nothing(tmp_path, shape):
    if shape == "no VERSION":
        write_tree(tmp_path, {".ged/GLOSSARY.md": REAL_GLOSSARY})
        expected = "not-needed"
    elif shape == "VERSION 3, nothing legacy":
        write_tree(tmp_path, {".ged/VERSION": "3\n", "CONTEXT.md": "# Context\n"})
        expected = "not-needed"
    else:
        scenario_tree(tmp_path)
        v3.migrate_v3(tmp_path)
        expected = "already-complete"
    before = snapshot(tmp_path)
    assessment = v3.assess(tmp_path)
    assert assessment.status == {"already-complete": "complete"}.get(expected, expected)
    lines = v3.plan_v3(tmp_path)
    assert lines[0].endswith("nothing to do")
    # Only a tree without VERSION gets a second line: what to do about it.
    assert len(lines) == (2 if shape == "no VERSION" else 1)
    assert v3.migrate_v3(tmp_path).status == expected
    assert snapshot(tmp_path) == before


def test_a_source_changed_between_plan_and_execution_stops_the_run(tmp_path):
    """The run executes the plan it made; bytes the plan did not decide on are left alone."""
    scenario_tree(tmp_path)
    actions = v3.plan_actions(tmp_path, [])
    move = next(a for a in actions if isinstance(a, v3.MoveGlossary))
    edit = REAL_GLOSSARY + "- Dock: where ferries wait.\n"
    write_tree(tmp_path, {".ged/GLOSSARY.md": edit})
    run = v3.Run(tmp_path, None)
    with pytest.raises(v3.MigrationError,
                       match="Legacy source changed during durable-memory migration"):
        run.execute(move)
    assert (tmp_path / ".ged/GLOSSARY.md").read_text() == edit
    assert not (tmp_path / "CONTEXT.md").exists()
