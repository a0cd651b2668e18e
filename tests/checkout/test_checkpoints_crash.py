"""Scenario 76: a SIGKILL at every phase of the legacy checkpoint import, then a rerun.

Each interruption is real: a subprocess runs the import with GEDWEB_FAILPOINT naming
one phase and dies with SIGKILL there. The rerun (in this process) must finish with
exactly one imported target holding exactly one evidence record, byte-exact backups,
unchanged sources, and a third run that writes nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gedweb.checkout.checkpoints import (
    checkpoint_problems,
    migrate_legacy_checkpoints,
    plan_legacy_checkpoints,
)
from gedweb.lib import governance as gov

from .test_checkpoints import (
    LEGACY_V2,
    MIGRATION_DIR,
    PLAN,
    ROOT_CHECKPOINT,
    record,
    snapshot,
    write_tree,
)

MAIN = Path(__file__).resolve().parents[2]
ENTRY = ("from gedweb.checkout.checkpoints import migrate_legacy_checkpoints; "
         "import pathlib,sys; migrate_legacy_checkpoints(pathlib.Path(sys.argv[1]))")
PHASES = ("plan", "backup-file", "backup-complete", "import-started", "target-files",
          "governance", "import-complete")
NO_IMPORT_PHASES = ("plan", "backup-file", "backup-complete", "import-complete")


def run_child(tree: Path, failpoint: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    env.pop("GEDWEB_FAILPOINT", None)
    if failpoint:
        env["GEDWEB_FAILPOINT"] = failpoint
    return subprocess.run([sys.executable, "-c", ENTRY, str(tree)], cwd=MAIN, env=env,
                          capture_output=True, text=True, timeout=120)


def generated_dirs(root: Path, area: str) -> list[str]:
    base = root / ".ged" / area
    return sorted(p.name for p in base.iterdir() if gov.is_work_id(p.name))


def assert_one_clean_import(root: Path, before: dict[str, bytes]) -> str:
    plan = json.loads((root / PLAN).read_bytes())
    target = plan["targetWorkId"]
    assert generated_dirs(root, "work") == [target]
    assert generated_dirs(root, "runtime") == [target]
    state = json.loads((root / ".ged/runtime" / target / "governance.json").read_bytes())
    gov.validate_state(state, target)
    assert state["lifecycle"] == "paused"
    assert [(e["id"], e["kind"], e["outcome"]) for e in state["evidence"]] == [
        (plan["evidenceId"], "migration-required", "failed")]
    for entry in plan["manifest"]:
        assert (root / entry["backupPath"]).read_bytes() == before[entry["sourcePath"]]
    after = snapshot(root)
    assert {path: after[path] for path in before} == before
    assert not [p for p in after if ".gedweb-tmp-" in p]
    return target


@pytest.mark.parametrize("phase", PHASES)
def test_an_interrupted_import_resumes_to_exactly_one_target(tmp_path, phase):
    write_tree(tmp_path, LEGACY_V2)
    before = snapshot(tmp_path)

    child = run_child(tmp_path, f"checkpoints.{phase}")

    assert child.returncode == -9, child.stderr
    assert (tmp_path / PLAN).exists()
    assert not (tmp_path / MIGRATION_DIR / "40-complete.json").exists()
    assert any("is unfinished" in line for line in checkpoint_problems(tmp_path))
    assert plan_legacy_checkpoints(tmp_path)[0].startswith("Legacy checkpoints: would resume")
    if phase == "backup-file":
        backups = [p for p in snapshot(tmp_path) if "/backups/" in p]
        assert len(backups) == 1

    result = migrate_legacy_checkpoints(tmp_path)

    assert (result.status, result.outcome) == ("completed", "imported")
    target = assert_one_clean_import(tmp_path, before)
    assert result.target_work_id == target
    assert checkpoint_problems(tmp_path) == []
    settled = snapshot(tmp_path)
    assert migrate_legacy_checkpoints(tmp_path).status == "already-complete"
    assert snapshot(tmp_path) == settled


@pytest.mark.parametrize("phase", PHASES)
def test_an_uninterrupted_run_matches_an_interrupted_one_in_shape(tmp_path, phase):
    """The same tree imported without a crash has the same files (names differ by ids)."""
    crashed, clean = tmp_path / "crashed", tmp_path / "clean"
    for root in (crashed, clean):
        write_tree(root, LEGACY_V2)
    assert run_child(crashed, f"checkpoints.{phase}").returncode == -9
    migrate_legacy_checkpoints(crashed)
    assert run_child(clean, None).returncode == 0

    def shape(root: Path) -> list[str]:
        plan = json.loads((root / PLAN).read_bytes())
        names = sorted(snapshot(root))
        return [name.replace(plan["targetWorkId"], "<target>").replace(plan["backupId"], "<b>")
                for name in names]

    assert shape(crashed) == shape(clean)


@pytest.mark.parametrize("phase", NO_IMPORT_PHASES)
def test_an_interrupted_no_import_resumes_without_a_target(tmp_path, phase):
    write_tree(tmp_path, {ROOT_CHECKPOINT: record(2, lifecycleStatus="closed"),
                          ".ged/work/root/SPEC.md": "# Spec\n"})
    before = snapshot(tmp_path)

    assert run_child(tmp_path, f"checkpoints.{phase}").returncode == -9

    result = migrate_legacy_checkpoints(tmp_path)
    assert (result.status, result.outcome, result.target_work_id) == (
        "completed", "no-import", None)
    assert generated_dirs(tmp_path, "work") == generated_dirs(tmp_path, "runtime") == []
    plan = json.loads((tmp_path / PLAN).read_bytes())
    for entry in plan["manifest"]:
        assert (tmp_path / entry["backupPath"]).read_bytes() == before[entry["sourcePath"]]
    assert sorted(p.name for p in (tmp_path / MIGRATION_DIR).iterdir() if p.is_file()) == [
        "10-backup-complete.json", "30-import-complete.json", "40-complete.json", "PLAN.json"]


def test_import_phases_never_fire_in_a_no_import_run(tmp_path):
    write_tree(tmp_path, {ROOT_CHECKPOINT: record(4)})

    child = run_child(tmp_path, "checkpoints.import-started")

    assert child.returncode == 0, child.stderr
    assert (tmp_path / MIGRATION_DIR / "40-complete.json").exists()


def test_concurrent_runs_converge_on_one_plan_and_one_target(tmp_path):
    write_tree(tmp_path, LEGACY_V2)
    before = snapshot(tmp_path)
    env = {key: value for key, value in os.environ.items() if key != "GEDWEB_FAILPOINT"}
    children = [subprocess.Popen([sys.executable, "-c", ENTRY, str(tmp_path)], cwd=MAIN, env=env,
                                 stderr=subprocess.PIPE, text=True) for _ in range(3)]
    errors = [child.communicate(timeout=120)[1] for child in children]

    assert [child.returncode for child in children] == [0, 0, 0], errors
    assert_one_clean_import(tmp_path, before)
    assert migrate_legacy_checkpoints(tmp_path).status == "already-complete"
