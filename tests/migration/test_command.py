"""`manage.py ged_migrate_v3 PATH [--dry-run] [--wait SECONDS]` (contract §7)."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from gedweb.checkout import v3
from gedweb.lib import gedpi_placeholders as ph
from tests.checkout.trees import (
    REAL_DECISIONS,
    WORK_A,
    directories,
    intermediate_tree,
    legacy_checkpoint,
    scenario_tree,
    snapshot,
    standalone_v2_tree,
    write_tree,
)


def run(*args: str) -> str:
    out = StringIO()
    call_command("ged_migrate_v3", *args, stdout=out)
    return out.getvalue()


def manage(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GEDWEB_FAILPOINT"}
    return subprocess.run([sys.executable, "manage.py", "ged_migrate_v3", *args],
                          cwd=settings.BASE_DIR, env=env, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("builder", [scenario_tree, standalone_v2_tree, intermediate_tree])
def test_a_dry_run_prints_the_plan_and_changes_nothing(tmp_path, builder):
    root = builder(tmp_path / "repo")
    if builder is standalone_v2_tree:
        write_tree(root, {".ged/runtime/root/checkpoints.json": legacy_checkpoint()})
    before, before_dirs = snapshot(root), directories(root)

    output = run(str(root), "--dry-run").splitlines()

    assert snapshot(root) == before
    assert directories(root) == before_dirs
    v3_start = output.index(next(line for line in output if line.startswith("durable-memory")))
    assert v3_start >= 1  # the legacy checkpoint plan comes first
    assert output[v3_start:-1] == v3.plan_v3(root)
    assert output[-1] == "dry run: nothing was changed"


def test_a_real_run_prints_the_statuses_and_one_line_per_entry(tmp_path):
    root = scenario_tree(tmp_path / "repo")
    write_tree(root, {".ged/PROJECT.md": ph.PROJECT})
    adr = f"docs/adr/0000-migrated-ged-decisions-{v3.sha256_hex(REAL_DECISIONS.encode())[:12]}.md"

    lines = run(str(root)).splitlines()

    assert lines[0] == "legacy-checkpoints-v1: not-needed"
    assert lines[1] == "durable-memory-v3: completed"
    assert lines[2:6] == [
        "  removed-placeholder .ged/PROJECT.md",
        "  migrated-context .ged/GLOSSARY.md -> CONTEXT.md",
        f"  migrated-decisions .ged/DECISIONS.md -> {adr}",
        f"  retained-substantive .ged/tasks/...history.json ({v3.REASON_NO_OWNER})",
    ]
    assert lines[6] == (f"  migrated-task-artifact .ged/tasks/T01.history.json -> "
                        f".ged/work/{WORK_A}/tasks/T01/HISTORY.json")
    assert len(lines) == 2 + len(v3.read_completion(root)["entries"])
    again = run(str(root)).splitlines()
    assert again[1] == "durable-memory-v3: already-complete"


def test_a_path_that_is_not_a_directory_is_a_one_line_error(tmp_path):
    (tmp_path / "file").write_text("x")
    for path in (str(tmp_path / "missing"), str(tmp_path / "file")):
        with pytest.raises(CommandError, match="is not an existing directory"):
            run(path)


@pytest.mark.parametrize("layout, message", [
    ("docs-symlink", "Write target traverses a symbolic link: docs"),
    ("adr-conflict", "ADR destination conflict at docs/adr/"),
    ("bad-journal", "Ged durable-memory migration entry is invalid."),
    ("checkpoint-symlink", "unsafe-layout: Read source traverses a symbolic link"),
])
def test_failures_exit_1_with_one_line_and_no_traceback(tmp_path, layout, message):
    root = scenario_tree(tmp_path / "repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    if layout == "docs-symlink":
        (root / "docs").symlink_to(outside)
    elif layout == "adr-conflict":
        digest = v3.sha256_hex(REAL_DECISIONS.encode())
        write_tree(root, {f"docs/adr/0000-migrated-ged-decisions-{digest[:12]}.md": "mine\n"})
    elif layout == "bad-journal":
        write_tree(root, {v3.JOURNAL_PATH: '{"schemaVersion": 1, "migrationId": '
                                           '"durable-memory-v3", "entries": [null]}\n'})
    else:
        write_tree(outside, {"checkpoints.json": legacy_checkpoint()})
        (root / ".ged/runtime/root").mkdir(parents=True)
        (root / ".ged/runtime/root/checkpoints.json").symlink_to(outside / "checkpoints.json")

    result = manage(str(root))

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert message in result.stderr
    assert os.listdir(outside) in ([], ["checkpoints.json"])


def test_a_checkpoint_integrity_failure_stops_before_the_v3_migration(tmp_path):
    root = scenario_tree(tmp_path / "repo")
    outside = tmp_path / "outside"
    write_tree(outside, {"checkpoints.json": legacy_checkpoint()})
    (root / ".ged/runtime/root").mkdir(parents=True)
    (root / ".ged/runtime/root/checkpoints.json").symlink_to(outside / "checkpoints.json")
    with pytest.raises(CommandError) as raised:
        run(str(root))
    assert str(raised.value) == ("unsafe-layout: Read source traverses a symbolic link: "
                                 ".ged/runtime/root/checkpoints.json")
    assert not (root / v3.RUNTIME).exists()
    assert not (root / "CONTEXT.md").exists()


def test_a_negative_wait_is_refused(tmp_path):
    with pytest.raises(CommandError, match="--wait"):
        run(str(tmp_path), "--wait", "-1")


@pytest.mark.parametrize("builder", [standalone_v2_tree, intermediate_tree])
def test_a_second_run_of_the_command_changes_no_byte_even_with_checkpoints(tmp_path, builder):
    root = builder(tmp_path / "repo")
    write_tree(root, {".ged/runtime/root/checkpoints.json": legacy_checkpoint()})
    first = run(str(root)).splitlines()
    assert first[1] == "durable-memory-v3: completed"
    before, before_dirs = snapshot(root), directories(root)
    second = run(str(root)).splitlines()
    assert second[1] == "durable-memory-v3: already-complete"
    assert second[2:] == first[2:]
    assert snapshot(root) == before
    assert directories(root) == before_dirs
