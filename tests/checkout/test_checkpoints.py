"""GedPi's legacy checkpoint backup and import (gedpi-behaviour.md §6.9, scenarios 74, 75, 77).

No database. Every expected value is derived here from the reference (hash rules,
templates' SHA-256, sentences), not from the module under test. Interruptions in this
file are simulated in-process by making a failpoint raise; the real SIGKILL runs are in
test_checkpoints_crash.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gedweb.checkout import checkpoints as cp
from gedweb.checkout.checkpoints import (
    CheckpointError,
    checkpoint_problems,
    migrate_legacy_checkpoints,
    plan_legacy_checkpoints,
)
from gedweb.checkout.checkpoints import backups as cp_backups
from gedweb.checkout.checkpoints import run as cp_run
from gedweb.checkout.checkpoints import target as cp_target
from gedweb.lib import governance as gov

NOW = datetime(2026, 8, 10, 5, 0, tzinfo=UTC)
CREATED_AT = "2026-08-10T05:00:00.000Z"
MIGRATION_DIR = ".ged/runtime/migrations/legacy-checkpoints-v1"
PLAN = f"{MIGRATION_DIR}/PLAN.json"
ROOT_CHECKPOINT = ".ged/runtime/root/checkpoints.json"
DIRECT_ROOT_CHECKPOINT = ".ged/runtime/checkpoints.json"

# Appendix A: the work templates' SHA-256.
TEMPLATE_SHA256 = {
    "SPEC.md": "7f509a25e7248ceaa5d1fe3fe3e67d8ad41ea972e3301270004052a6872b3c0a",
    "TASKS.md": "2be064554a44304e6400cec41e7ff62d33fea80c9aeca6b28275caf483bf1e40",
    "TESTS.md": "da9e0f67fa9ae6918d44a9769306f269ffb7d1a181707cfee433996f0cd43fb2",
}
EVIDENCE_SUMMARY = ("Legacy checkpoints from {path} were preserved in backup {backup} but were "
                    "not trusted as authorization.")
DECISION_REASON = ("Legacy checkpoint state requires human review and cannot authorize current "
                   "work.")
WORK_ID_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,47})-\d{17}-[a-f0-9]{32}$")


# --- local tree helpers (tests/checkout/trees.py was not there yet) ---------------------------


def write_tree(root: Path, files: dict[str, bytes | str]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every regular file under root by relative path (symlinks recorded by their target)."""
    found: dict[str, bytes] = {}
    for directory, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(directory, d))]:
            path = Path(directory) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[rel] = b"-> " + os.readlink(path).encode()
            elif path.is_file():
                found[rel] = path.read_bytes()
    return found


def sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def record(version: int = 2, **changes: object) -> str:
    body: dict[str, object] = {
        "schemaVersion": version,
        "classification": "non-trivial",
        "classificationReason": "Touches several modules.",
        "planCheckpoints": {"plan-1": {"status": "accepted"}},
        "taskCheckpoints": {"T01": {"slice-1": {"status": "done"}}},
        "workerRuns": [{"id": "run-1"}],
    }
    if version == 3:
        body["lifecycleStatus"] = "active"
    body.update(changes)
    return json.dumps({k: v for k, v in body.items() if v is not DROP}, indent=2) + "\n"


DROP = object()

LEGACY_V2 = {
    ".ged/VERSION": "2\n",
    ".ged/PROJECT.md": "# Project\n\nReal project text.\n",
    ".ged/tasks/T01-BRIEF.md": "# Brief\n",
    ROOT_CHECKPOINT: record(2),
    ".ged/runtime/root/STATE.md": "# State\n\nCurrent Phase: Build\n",
    ".ged/runtime/root/SESSION-SUMMARY.md": "Did things.\n",
    ".ged/work/root/META.json": '{"workId":"root","schema":1}\n',
    ".ged/work/root/SPEC.md": "# Spec\n\nLegacy spec \u2014 with UTF-8.\n",
    ".ged/work/root/TASKS.md": "# Tasks\n",
    ".ged/work/root/TESTS.md": "# Tests\n",
    ".ged/work/root/NOTES.md": b"# Notes\r\n\xff binary-ish\n",
}
LEGACY_V2_SOURCES = sorted(
    path for path in LEGACY_V2 if path.startswith((".ged/runtime/", ".ged/work/"))
)


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    write_tree(tmp_path, LEGACY_V2)
    return tmp_path


def read_json(root: Path, rel: str) -> dict:
    return json.loads((root / rel).read_bytes())


def plan_of(root: Path) -> dict:
    return read_json(root, PLAN)


class Interrupted(Exception):
    pass


def interrupt_at(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Make one failpoint raise, standing in for the SIGKILL of the crash tests."""

    def failpoint(point: str) -> None:
        if point == name:
            raise Interrupted(point)

    for module in (cp_backups, cp_run, cp_target):  # the modules with crash points
        monkeypatch.setattr(module, "failpoint", failpoint)


def run_interrupted(monkeypatch: pytest.MonkeyPatch, root: Path, name: str) -> None:
    with monkeypatch.context() as patch:
        interrupt_at(patch, name)
        with pytest.raises(Interrupted):
            migrate_legacy_checkpoints(root, now=NOW)


def new_entries(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    return set(after) - set(before)


def target_dirs(root: Path, work_id: str) -> tuple[str, str]:
    return f".ged/work/{work_id}", f".ged/runtime/{work_id}"


# --- scenario 74: one active v2 checkpoint -------------------------------------------------------


def test_it_backs_up_exactly_the_source_set_byte_for_byte(legacy):
    result = migrate_legacy_checkpoints(legacy, now=NOW)

    plan = plan_of(legacy)
    assert [entry["sourcePath"] for entry in plan["manifest"]] == LEGACY_V2_SOURCES
    for entry in plan["manifest"]:
        source = LEGACY_V2[entry["sourcePath"]]
        source = source.encode() if isinstance(source, str) else source
        assert entry["backupPath"] == (f"{MIGRATION_DIR}/backups/{result.backup_id}/source/"
                                       f"{entry['sourcePath']}")
        assert (legacy / entry["backupPath"]).read_bytes() == source
        assert entry["sha256"] == sha(source)
        assert entry["size"] == len(source)
        assert entry["candidateIds"] == ["legacy-" + sha(ROOT_CHECKPOINT)[:20]]


def test_it_leaves_every_legacy_source_unchanged(legacy):
    before = snapshot(legacy)

    result = migrate_legacy_checkpoints(legacy, now=NOW)

    after = snapshot(legacy)
    assert {path: after[path] for path in before} == before
    work_dir, runtime_dir = target_dirs(legacy, result.target_work_id)
    assert all(
        path.startswith((f"{MIGRATION_DIR}/", f"{work_dir}/", f"{runtime_dir}/"))
        for path in new_entries(before, after)
    )


def test_it_imports_one_paused_untrusted_work_item(legacy):
    result = migrate_legacy_checkpoints(legacy, now=NOW)

    assert result.status == "completed"
    assert result.outcome == "imported"
    target = result.target_work_id
    assert WORK_ID_PATTERN.match(target)
    state = read_json(legacy, f".ged/runtime/{target}/governance.json")
    gov.validate_state(state, target)
    assert state["lifecycle"] == "paused"
    assert state["revision"] == 0
    assert state["executionProfile"] == "solo"
    assert state["decision"] == {
        "mode": "planned-change", "reasonCode": "decision-needed",
        "reason": DECISION_REASON, "requiresDecision": True,
    }
    assert state["evidence"] == [{
        "id": plan_of(legacy)["evidenceId"],
        "kind": "migration-required",
        "source": "runtime",
        "recordedAt": CREATED_AT,
        "summary": EVIDENCE_SUMMARY.format(path=ROOT_CHECKPOINT, backup=result.backup_id),
        "outcome": "failed",
    }]
    assert state["repository"]["branch"] is None and state["repository"]["baseHead"] is None
    assert state["createdAt"] == state["updatedAt"] == CREATED_AT
    assert "contentBaseline" not in state


def test_the_imported_work_can_never_authorize_anything(legacy):
    result = migrate_legacy_checkpoints(legacy, now=NOW)

    state = read_json(legacy, f".ged/runtime/{result.target_work_id}/governance.json")
    for action in gov.GUARD_ACTIONS:
        assert "has lifecycle paused" in gov.guard(state, action)
        # Even resumed, the failed migration-required evidence still blocks.
        assert "requires legacy migration review" in gov.guard({**state, "lifecycle": "active"},
                                                               action)
    with pytest.raises(gov.GovernanceError, match="legacy migration review"):
        gov.transition(state, action="resume", reason="try", expected_lifecycle="paused",
                       transition_id="t1", now=NOW)
    meta = read_json(legacy, f".ged/work/{result.target_work_id}/META.json")
    assert meta["origin"]["selectable"] is False


def test_the_imported_meta_and_templates_are_exact(legacy):
    result = migrate_legacy_checkpoints(legacy, now=NOW)

    plan = plan_of(legacy)
    work_dir = legacy / ".ged/work" / result.target_work_id
    meta_bytes = (work_dir / "META.json").read_bytes()
    assert meta_bytes == (json.dumps({
        "schemaVersion": 1,
        "workId": result.target_work_id,
        "summary": f"Legacy checkpoint import from {ROOT_CHECKPOINT}",
        "createdAt": CREATED_AT,
        "branch": None,
        "baseHead": None,
        "origin": {"kind": "legacy-import", "migrationId": plan["migrationId"],
                   "candidateId": "legacy-" + sha(ROOT_CHECKPOINT)[:20], "selectable": False},
    }, indent=2) + "\n").encode()
    assert sorted(p.name for p in work_dir.iterdir()) == ["META.json", "SPEC.md", "TASKS.md",
                                                          "TESTS.md"]
    for name, digest in TEMPLATE_SHA256.items():
        assert sha((work_dir / name).read_bytes()) == digest


def test_the_state_projection_is_rendered_from_the_governance_state(legacy):
    result = migrate_legacy_checkpoints(legacy, now=NOW)

    runtime_dir = legacy / ".ged/runtime" / result.target_work_id
    assert sorted(p.name for p in runtime_dir.iterdir()) == ["STATE.md", "governance.json"]
    state = json.loads((runtime_dir / "governance.json").read_bytes())
    projection = (runtime_dir / "STATE.md").read_text()
    assert projection == gov.render_state_md(state)
    assert "Current Phase: Paused\n" in projection
    assert "Blockers: Lifecycle is paused\n" in projection
    assert f"Status Summary: planned-change \u2014 {DECISION_REASON}\n" in projection
    assert "- Content baseline: legacy-unbound\n" in projection


def test_plan_json_derives_every_field_from_the_migration_id(legacy):
    result = migrate_legacy_checkpoints(legacy, now=NOW)

    raw = (legacy / PLAN).read_bytes()
    plan = json.loads(raw)
    assert raw == (json.dumps(plan, indent=2, ensure_ascii=False) + "\n").encode()
    assert list(plan) == ["schemaVersion", "migrationId", "createdAt", "backupId", "candidates",
                          "manifest", "importDecision", "targetWorkId", "evidenceId"]
    migration_id = plan["migrationId"]
    assert str(uuid.UUID(migration_id)) == migration_id
    assert plan["schemaVersion"] == 1
    assert plan["createdAt"] == CREATED_AT
    assert plan["backupId"] == "20260810050000000-" + sha(migration_id)[:16] == result.backup_id
    candidate = "legacy-" + sha(ROOT_CHECKPOINT)[:20]
    assert plan["candidates"] == [{
        "candidateId": candidate, "checkpointPath": ROOT_CHECKPOINT, "slug": "root",
        "logicalWorkId": "root", "classification": "supported-active-v2",
    }]
    entropy = sha(f"{migration_id}:{candidate}")
    # Slug of "Legacy checkpoint import from .ged/runtime/root/checkpoints.json", cut to 48.
    slug = "legacy-checkpoint-import-from-ged-runtime-root-c"
    assert plan["targetWorkId"] == f"{slug}-20260810050000000-{entropy[:32]}"
    assert plan["evidenceId"] == "legacy-migration-" + entropy[:24]
    assert plan["importDecision"]["outcome"] == "import"
    assert plan["importDecision"]["candidateId"] == candidate
    assert result.reason == plan["importDecision"]["reason"]


def test_it_publishes_every_phase_marker_with_the_plan_time(legacy):
    result = migrate_legacy_checkpoints(legacy, now=NOW)

    names = sorted(p.name for p in (legacy / MIGRATION_DIR).iterdir() if p.is_file())
    assert names == ["10-backup-complete.json", "20-import-started.json",
                     "30-import-complete.json", "40-complete.json", "PLAN.json"]
    phases = {}
    for name in names[:-1]:
        raw = (legacy / MIGRATION_DIR / name).read_bytes()
        marker = json.loads(raw)
        assert raw == (json.dumps(marker, indent=2) + "\n").encode()
        assert marker["recordedAt"] == CREATED_AT
        assert marker["backupId"] == result.backup_id
        phases[name] = marker["phase"]
    assert phases == {"10-backup-complete.json": "backup-complete",
                      "20-import-started.json": "import-started",
                      "30-import-complete.json": "import-complete",
                      "40-complete.json": "complete"}
    assert read_json(legacy, f"{MIGRATION_DIR}/20-import-started.json")["targetWorkId"] == \
        result.target_work_id
    done = read_json(legacy, f"{MIGRATION_DIR}/30-import-complete.json")
    assert (done["outcome"], done["targetWorkId"]) == ("imported", result.target_work_id)


def test_a_rerun_after_a_new_candidate_appears_writes_nothing(legacy):
    first = migrate_legacy_checkpoints(legacy, now=NOW)
    write_tree(legacy, {".ged/runtime/feature-x/checkpoints.json": record(3),
                        ".ged/work/feature-x/META.json": '{"workId":"feature-x"}'})
    before = snapshot(legacy)
    stats = {p: os.stat(legacy / p).st_mtime_ns for p in before}

    again = migrate_legacy_checkpoints(legacy, now=datetime(2030, 1, 1, tzinfo=UTC))

    assert again == cp.CheckpointResult("already-complete", "imported", first.target_work_id,
                                        first.backup_id, first.reason)
    assert snapshot(legacy) == before
    assert {p: os.stat(legacy / p).st_mtime_ns for p in before} == stats
    assert checkpoint_problems(legacy) == []


def test_the_dry_run_describes_the_import_and_writes_nothing(legacy):
    before = snapshot(legacy)

    lines = plan_legacy_checkpoints(legacy)

    assert snapshot(legacy) == before
    text = "\n".join(lines)
    assert f"{ROOT_CHECKPOINT} (logical work ID root): supported-active-v2" in text
    assert f"Would back up {len(LEGACY_V2_SOURCES)} legacy files" in text
    assert "Would import .ged/runtime/root/checkpoints.json as paused, non-selectable work" in text
    assert "Legacy sources are left in place unchanged." in text


def test_the_dry_run_after_completion_reports_already_complete(legacy):
    migrate_legacy_checkpoints(legacy, now=NOW)
    before = snapshot(legacy)

    lines = plan_legacy_checkpoints(legacy)

    assert snapshot(legacy) == before
    assert lines[0].startswith("Legacy checkpoints: already complete (imported")


def test_no_checkpoints_means_not_needed_and_no_writes(tmp_path):
    write_tree(tmp_path, {".ged/VERSION": "2\n", ".ged/runtime/root/STATE.md": "# State\n",
                          ".ged/work/root/SPEC.md": "# Spec\n"})
    before = snapshot(tmp_path)

    result = migrate_legacy_checkpoints(tmp_path, now=NOW)

    assert result == cp.CheckpointResult("not-needed")
    assert snapshot(tmp_path) == before
    assert not (tmp_path / ".ged/runtime/migrations").exists()
    assert checkpoint_problems(tmp_path) == []
    assert plan_legacy_checkpoints(tmp_path) == ["Legacy checkpoints: none found; nothing to do."]


def test_a_checkout_without_ged_is_not_needed(tmp_path):
    assert migrate_legacy_checkpoints(tmp_path) == cp.CheckpointResult("not-needed")
    assert list(tmp_path.iterdir()) == []


# --- scenario 75: every no-import case ---------------------------------------------------------

ACTIVE_ROOT_V3 = record(3)

NO_IMPORT_CASES = {
    "two-active-root-aliases": (
        {DIRECT_ROOT_CHECKPOINT: record(2), ROOT_CHECKPOINT: ACTIVE_ROOT_V3},
        "duplicate-logical-work-id",
        {DIRECT_ROOT_CHECKPOINT: "supported-active-v2", ROOT_CHECKPOINT: "supported-active-v3"},
    ),
    "corrupt-json": (
        {ROOT_CHECKPOINT: '{"schemaVersion": 2, '},
        "unsupported-checkpoint", {ROOT_CHECKPOINT: "corrupt-json"},
    ),
    "newer-schema": (
        {ROOT_CHECKPOINT: record(4)}, "unsupported-checkpoint",
        {ROOT_CHECKPOINT: "unsupported-newer"},
    ),
    "older-schema": (
        {ROOT_CHECKPOINT: record(1)}, "unsupported-checkpoint",
        {ROOT_CHECKPOINT: "unsupported-older"},
    ),
    "malformed-nested-records": (
        {ROOT_CHECKPOINT: record(2, taskCheckpoints={"T01": {"slice-1": "done"}})},
        "unsupported-checkpoint", {ROOT_CHECKPOINT: "invalid-shape"},
    ),
    "only-inactive": (
        {ROOT_CHECKPOINT: record(2, lifecycleStatus="verified"),
         ".ged/runtime/feature-a/checkpoints.json": record(3, lifecycleStatus="closed")},
        "no-active-checkpoint",
        {ROOT_CHECKPOINT: "supported-inactive-v2",
         ".ged/runtime/feature-a/checkpoints.json": "supported-inactive-v3"},
    ),
    "duplicate-logical-ids": (
        {".ged/runtime/feature-a/checkpoints.json": record(2),
         ".ged/runtime/feature-b/checkpoints.json": record(2, lifecycleStatus="closed"),
         ".ged/work/feature-a/META.json": '{"workId": "shared"}',
         ".ged/work/feature-b/META.json": '{"workId": "shared"}'},
        "duplicate-logical-work-id",
        {".ged/runtime/feature-a/checkpoints.json": "supported-active-v2",
         ".ged/runtime/feature-b/checkpoints.json": "supported-inactive-v2"},
    ),
    "several-active": (
        {".ged/runtime/feature-a/checkpoints.json": record(2),
         ".ged/runtime/feature-b/checkpoints.json": record(3)},
        "several-active-checkpoints",
        {".ged/runtime/feature-a/checkpoints.json": "supported-active-v2",
         ".ged/runtime/feature-b/checkpoints.json": "supported-active-v3"},
    ),
}

REASONS = {
    "duplicate-logical-work-id":
        "Several legacy checkpoints claim the same logical work ID, so none is imported.",
    "unsupported-checkpoint":
        "At least one legacy checkpoint is corrupt, of an unsupported schema version or "
        "malformed, so none is imported.",
    "no-active-checkpoint": "No legacy checkpoint is active, so there is no work to import.",
    "several-active-checkpoints":
        "Several legacy checkpoints are active, so the work to import is ambiguous and none is "
        "imported.",
}


@pytest.mark.parametrize("case", sorted(NO_IMPORT_CASES))
def test_doubtful_checkpoints_are_backed_up_and_not_imported(tmp_path, case):
    files, reason_code, classes = NO_IMPORT_CASES[case]
    write_tree(tmp_path, {".ged/VERSION": "2\n", ".ged/runtime/STATE.md": "# State\n", **files})
    before = snapshot(tmp_path)

    result = migrate_legacy_checkpoints(tmp_path, now=NOW)

    assert result.status == "completed"
    assert (result.outcome, result.target_work_id) == ("no-import", None)
    assert result.reason == REASONS[reason_code]
    plan = plan_of(tmp_path)
    assert plan["targetWorkId"] is None and plan["evidenceId"] is None
    assert plan["importDecision"] == {"outcome": "no-import", "reasonCode": reason_code,
                                      "reason": REASONS[reason_code], "candidateId": None}
    assert {c["checkpointPath"]: c["classification"] for c in plan["candidates"]} == classes
    for entry in plan["manifest"]:
        assert (tmp_path / entry["backupPath"]).read_bytes() == before[entry["sourcePath"]]
    assert set(classes) <= {entry["sourcePath"] for entry in plan["manifest"]}
    after = snapshot(tmp_path)
    assert {path: after[path] for path in before} == before
    assert all(path.startswith(f"{MIGRATION_DIR}/") for path in new_entries(before, after))
    assert sorted(p.name for p in (tmp_path / MIGRATION_DIR).iterdir() if p.is_file()) == [
        "10-backup-complete.json", "30-import-complete.json", "40-complete.json", "PLAN.json"]
    done = read_json(tmp_path, f"{MIGRATION_DIR}/30-import-complete.json")
    assert (done["outcome"], done["targetWorkId"]) == ("no-import", None)
    assert migrate_legacy_checkpoints(tmp_path).status == "already-complete"
    assert snapshot(tmp_path) == after


# --- classification: the exact envelope rules ---------------------------------------------------


@pytest.mark.parametrize(("data", "expected"), [
    (b"", "corrupt-json"),
    (b"{", "corrupt-json"),
    (b'{"schemaVersion": NaN}', "corrupt-json"),
    (b"\xef\xbb\xbf" + record(2).encode(), "corrupt-json"),
    (b"[]", "unsupported-older"),
    (b"null", "unsupported-older"),
    (b"{}", "unsupported-older"),
    (b'{"schemaVersion": "2"}', "unsupported-older"),
    (b'{"schemaVersion": true}', "unsupported-older"),
    (b'{"schemaVersion": 2.5}', "unsupported-older"),
    (record(1).encode(), "unsupported-older"),
    (record(4).encode(), "unsupported-newer"),
    (record(2).encode(), "supported-active-v2"),
    (record(2).replace('"schemaVersion": 2', '"schemaVersion": 2.0').encode(),
     "supported-active-v2"),
    (record(2, lifecycleStatus="active").encode(), "supported-active-v2"),
    (record(2, lifecycleStatus="verified").encode(), "supported-inactive-v2"),
    (record(2, lifecycleStatus="closed").encode(), "supported-inactive-v2"),
    (record(3).encode(), "supported-active-v3"),
    (record(3, lifecycleStatus="closed").encode(), "supported-inactive-v3"),
    (record(2, workerRuns=DROP).encode(), "supported-active-v2"),
    (record(2, planCheckpoints={}, taskCheckpoints={}).encode(), "supported-active-v2"),
    (record(2, classification="trivial").encode(), "supported-active-v2"),
    (record(3, lifecycleStatus=DROP).encode(), "invalid-shape"),
    (record(2, lifecycleStatus="done").encode(), "invalid-shape"),
    (record(2, lifecycleStatus=None).encode(), "invalid-shape"),
    (record(2, classification="huge").encode(), "invalid-shape"),
    (record(2, classification=DROP).encode(), "invalid-shape"),
    (record(2, classificationReason="  ").encode(), "invalid-shape"),
    (record(2, classificationReason=DROP).encode(), "invalid-shape"),
    (record(2, planCheckpoints=[]).encode(), "invalid-shape"),
    (record(2, planCheckpoints={"p": 1}).encode(), "invalid-shape"),
    (record(2, planCheckpoints=DROP).encode(), "invalid-shape"),
    (record(2, taskCheckpoints={"T01": []}).encode(), "invalid-shape"),
    (record(2, taskCheckpoints={" ": {}}).encode(), "invalid-shape"),
    (record(2, taskCheckpoints={"T01": {"": {}}}).encode(), "invalid-shape"),
    (record(2, taskCheckpoints=DROP).encode(), "invalid-shape"),
    (record(2, workerRuns={}).encode(), "invalid-shape"),
    (record(2, workerRuns=["run"]).encode(), "invalid-shape"),
])
def test_it_classifies_a_checkpoint_by_its_envelope(data, expected):
    assert cp.classify(data) == expected


@pytest.mark.parametrize(("meta", "expected"), [
    (None, "feature"),
    (b'{"workId": "legacy-id", "schema": 1}', "legacy-id"),
    (b'{"workId": "  "}', "feature"),
    (b'{"workId": 7}', "feature"),
    (b"not json", "feature"),
    (b'["workId"]', "feature"),
])
def test_the_logical_work_id_is_the_legacy_meta_work_id_or_the_slug(meta, expected):
    assert cp.logical_work_id(meta, "feature") == expected


# --- discovery -----------------------------------------------------------------------------------


def generated_work(root: Path, work_id: str, *, valid: bool = True) -> None:
    meta = {"schemaVersion": 1, "workId": work_id, "summary": "Current work" if valid else " ",
            "createdAt": CREATED_AT, "branch": None, "baseHead": None}
    write_tree(root, {f".ged/work/{work_id}/META.json": json.dumps(meta, indent=2) + "\n",
                      f".ged/runtime/{work_id}/governance.json": "{}\n"})


CURRENT = "fix-login-20260810050000000-0123456789abcdef0123456789abcdef"
STALE = "old-work-20260810050000000-0123456789abcdef0123456789abcdef"


def test_the_direct_root_candidate_claims_unclaimed_runtime_files(tmp_path):
    generated_work(tmp_path, CURRENT)
    write_tree(tmp_path, {
        DIRECT_ROOT_CHECKPOINT: record(2),
        ".ged/runtime/STATE.md": "# State\n",
        ".ged/runtime/old-branch/SESSION-SUMMARY.md": "old\n",
        ".ged/runtime/active-work/abc.json": "{}\n",
        ".ged/work/root/SPEC.md": "# Spec\n",
        ".ged/work/other/SPEC.md": "# Other\n",
        ".ged/runtime/feature/checkpoints.json": record(2, lifecycleStatus="closed"),
        ".ged/runtime/feature/STATE.md": "# Feature\n",
        ".ged/work/feature/TASKS.md": "# Tasks\n",
    })

    result = migrate_legacy_checkpoints(tmp_path, now=NOW)

    root_id = "legacy-" + sha(DIRECT_ROOT_CHECKPOINT)[:20]
    feature_id = "legacy-" + sha(".ged/runtime/feature/checkpoints.json")[:20]
    plan = plan_of(tmp_path)
    assert {e["sourcePath"]: e["candidateIds"] for e in plan["manifest"]} == {
        ".ged/runtime/STATE.md": [root_id],
        DIRECT_ROOT_CHECKPOINT: [root_id],
        ".ged/runtime/old-branch/SESSION-SUMMARY.md": [root_id],
        ".ged/work/root/SPEC.md": [root_id],
        ".ged/runtime/feature/checkpoints.json": [feature_id],
        ".ged/runtime/feature/STATE.md": [feature_id],
        ".ged/work/feature/TASKS.md": [feature_id],
    }
    assert [c["slug"] for c in plan["candidates"]] == ["root", "feature"]
    assert result.outcome == "imported"
    assert plan["importDecision"]["candidateId"] == root_id
    assert result.target_work_id.startswith("legacy-checkpoint-import-from-ged-runtime-checkp-")


def test_two_root_aliases_share_the_root_work_files(tmp_path):
    write_tree(tmp_path, {DIRECT_ROOT_CHECKPOINT: record(2), ROOT_CHECKPOINT: record(2),
                          ".ged/work/root/META.json": '{"workId":"root","schema":1}'})

    migrate_legacy_checkpoints(tmp_path, now=NOW)

    plan = plan_of(tmp_path)
    both = sorted("legacy-" + sha(path)[:20] for path in (DIRECT_ROOT_CHECKPOINT, ROOT_CHECKPOINT))
    assert {e["sourcePath"]: e["candidateIds"] for e in plan["manifest"]}[
        ".ged/work/root/META.json"] == both


def test_current_generated_runtimes_and_migrations_are_never_candidates(tmp_path):
    generated_work(tmp_path, CURRENT)
    write_tree(tmp_path, {f".ged/runtime/{CURRENT}/checkpoints.json": record(2),
                          ".ged/runtime/migrations/checkpoints.json": record(2)})

    assert migrate_legacy_checkpoints(tmp_path, now=NOW).status == "not-needed"
    assert not (tmp_path / MIGRATION_DIR).exists()


def test_a_work_id_shaped_runtime_with_invalid_meta_is_a_candidate(tmp_path):
    generated_work(tmp_path, STALE, valid=False)
    write_tree(tmp_path, {f".ged/runtime/{STALE}/checkpoints.json": record(2)})

    result = migrate_legacy_checkpoints(tmp_path, now=NOW)

    assert result.outcome == "imported"
    assert plan_of(tmp_path)["candidates"][0]["slug"] == STALE


# --- unsafe layouts ----------------------------------------------------------------------------


def run_with_deadline(root: Path, seconds: float = 20.0) -> BaseException | None:
    """Run the migration in a thread so a blocking FIFO open would fail the test, not hang it."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            migrate_legacy_checkpoints(root, now=NOW)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the migration blocked"
    return outcome[0]


@pytest.mark.parametrize("fifo", [ROOT_CHECKPOINT, ".ged/work/root/NOTES.md", ".ged/runtime/pipe"])
def test_a_fifo_is_unsafe_layout_and_never_opened(legacy, fifo):
    (legacy / fifo).unlink(missing_ok=True)
    os.mkfifo(legacy / fifo)
    before = snapshot(legacy)

    error = run_with_deadline(legacy)

    assert isinstance(error, CheckpointError) and error.code == "unsafe-layout"
    assert snapshot(legacy) == before
    assert not (legacy / ".ged/runtime/migrations").exists()


@pytest.mark.parametrize("link", [".ged/work/root/SPEC.md", ".ged/runtime/root",
                                  ".ged/runtime/feature", ".ged/work/root"])
def test_a_symlink_is_unsafe_layout_and_nothing_is_written(legacy, tmp_path_factory, link):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "checkpoints.json").write_text(record(2))
    path = legacy / link
    if path.is_dir():
        os.rename(path, outside / "moved")
        path.symlink_to(outside / "moved")
    else:
        path.unlink(missing_ok=True)
        path.symlink_to(outside / "checkpoints.json")
    before, outside_before = snapshot(legacy), snapshot(outside)

    with pytest.raises(CheckpointError) as error:
        migrate_legacy_checkpoints(legacy, now=NOW)

    assert error.value.code == "unsafe-layout"
    assert "symbolic link" in error.value.message
    assert snapshot(legacy) == before and snapshot(outside) == outside_before
    with pytest.raises(CheckpointError, match="unsafe-layout"):
        plan_legacy_checkpoints(legacy)
    assert checkpoint_problems(legacy)[0].startswith("unsafe-layout: ")


def test_a_symlinked_plan_is_unsafe_layout(legacy, monkeypatch, tmp_path_factory):
    run_interrupted(monkeypatch, legacy, "checkpoints.plan")
    outside = tmp_path_factory.mktemp("outside") / "PLAN.json"
    os.rename(legacy / PLAN, outside)
    (legacy / PLAN).symlink_to(outside)
    before = snapshot(legacy)

    with pytest.raises(CheckpointError) as error:
        migrate_legacy_checkpoints(legacy, now=NOW)

    assert error.value.code == "unsafe-layout"
    assert snapshot(legacy) == before


# --- scenario 77: drift, conflicts, journals, integrity ------------------------------------------


def test_source_drift_after_planning_stops_before_any_backup(legacy, monkeypatch):
    run_interrupted(monkeypatch, legacy, "checkpoints.plan")
    (legacy / ".ged/work/root/SPEC.md").write_text("# Spec\n\nEdited after planning.\n")
    before = snapshot(legacy)

    with pytest.raises(CheckpointError) as error:
        migrate_legacy_checkpoints(legacy, now=NOW)

    assert error.value.code == "source-drift"
    assert snapshot(legacy) == before
    assert not (legacy / MIGRATION_DIR / "backups").exists()


def test_a_new_candidate_before_the_backup_is_source_drift(legacy, monkeypatch):
    run_interrupted(monkeypatch, legacy, "checkpoints.plan")
    write_tree(legacy, {".ged/runtime/feature/checkpoints.json": record(2)})

    with pytest.raises(CheckpointError, match="source-drift"):
        migrate_legacy_checkpoints(legacy, now=NOW)


def test_sources_changed_after_the_backup_are_not_consulted(legacy, monkeypatch):
    run_interrupted(monkeypatch, legacy, "checkpoints.backup-complete")
    (legacy / ROOT_CHECKPOINT).write_text("{ corrupted later")

    result = migrate_legacy_checkpoints(legacy, now=NOW)

    assert result.outcome == "imported"
    assert (legacy / ROOT_CHECKPOINT).read_text() == "{ corrupted later"


def test_a_conflicting_backup_is_an_artifact_conflict(legacy, monkeypatch):
    run_interrupted(monkeypatch, legacy, "checkpoints.plan")
    entry = plan_of(legacy)["manifest"][1]
    write_tree(legacy, {entry["backupPath"]: "someone else's bytes\n"})
    before = snapshot(legacy)

    with pytest.raises(CheckpointError) as error:
        migrate_legacy_checkpoints(legacy, now=NOW)

    assert error.value.code == "artifact-conflict"
    assert entry["backupPath"] in error.value.message
    after = snapshot(legacy)
    assert after[entry["backupPath"]] == b"someone else's bytes\n"
    assert not (legacy / MIGRATION_DIR / "10-backup-complete.json").exists()
    assert {p: after[p] for p in before} == before


def test_an_equal_existing_backup_is_accepted(legacy, monkeypatch):
    run_interrupted(monkeypatch, legacy, "checkpoints.plan")
    entry = plan_of(legacy)["manifest"][0]
    write_tree(legacy, {entry["backupPath"]: (legacy / entry["sourcePath"]).read_bytes()})

    assert migrate_legacy_checkpoints(legacy, now=NOW).outcome == "imported"


def test_a_corrupt_plan_is_an_invalid_journal(legacy, monkeypatch):
    run_interrupted(monkeypatch, legacy, "checkpoints.plan")
    (legacy / PLAN).write_text('{"schemaVersion": 1, ')
    before = snapshot(legacy)

    with pytest.raises(CheckpointError) as error:
        migrate_legacy_checkpoints(legacy, now=NOW)

    assert error.value.code == "invalid-journal"
    assert snapshot(legacy) == before
    assert checkpoint_problems(legacy)[0].startswith("invalid-journal: ")
    with pytest.raises(CheckpointError, match="invalid-journal"):
        plan_legacy_checkpoints(legacy)


def _set(path: str, value: object):
    def change(plan: dict) -> None:
        *parents, last = path.split(".")
        target = plan
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        target[last] = value
    return change


def _other_work_id(plan: dict) -> None:
    plan["targetWorkId"] = plan["targetWorkId"][:-1] + ("0" if plan["targetWorkId"][-1] != "0"
                                                        else "1")


def _swap_manifest(plan: dict) -> None:
    plan["manifest"].reverse()


def _unknown_key(plan: dict) -> None:
    plan["trusted"] = True


def _active_to_inactive(plan: dict) -> None:
    plan["candidates"][0]["classification"] = "supported-inactive-v2"


ALTERATIONS = {
    "target-work-id": _other_work_id,
    "evidence-id": _set("evidenceId", "legacy-migration-" + "0" * 24),
    "backup-id": _set("backupId", "20260810050000000-" + "0" * 16),
    "created-at": _set("createdAt", "2026-08-10T05:00:00.001Z"),
    "migration-id": _set("migrationId", str(uuid.UUID(int=7))),
    "schema-version": _set("schemaVersion", 2),
    "decision-reason": _set("importDecision.reason", "Trust me."),
    "decision-outcome": _set("importDecision.outcome", "no-import"),
    "classification-without-decision": _active_to_inactive,
    "candidate-id": _set("candidates.0.candidateId", "legacy-" + "0" * 20),
    "slug": _set("candidates.0.slug", "main"),
    "backup-path-outside": _set("manifest.0.backupPath", "../../etc/passwd"),
    "source-path-traversal": _set("manifest.0.sourcePath", ".ged/work/../../etc/passwd"),
    "source-path-absolute": _set("manifest.0.sourcePath", "/etc/passwd"),
    "source-path-migrations": _set("manifest.0.sourcePath",
                                   ".ged/runtime/migrations/legacy-checkpoints-v1/PLAN.json"),
    "sha256": _set("manifest.0.sha256", "Z" * 64),
    "size": _set("manifest.0.size", -1),
    "candidate-ids": _set("manifest.0.candidateIds", ["legacy-" + "1" * 20]),
    "manifest-order": _swap_manifest,
    "unknown-key": _unknown_key,
}


@pytest.mark.parametrize("alteration", sorted(ALTERATIONS))
def test_a_semantically_altered_plan_is_an_invalid_journal(legacy, monkeypatch, alteration):
    run_interrupted(monkeypatch, legacy, "checkpoints.plan")
    plan = plan_of(legacy)
    ALTERATIONS[alteration](plan)
    (legacy / PLAN).write_text(json.dumps(plan, indent=2) + "\n")
    before = snapshot(legacy)

    with pytest.raises(CheckpointError) as error:
        migrate_legacy_checkpoints(legacy, now=NOW)

    assert error.value.code == "invalid-journal"
    assert snapshot(legacy) == before


def test_an_altered_plan_after_completion_is_an_invalid_journal(legacy):
    migrate_legacy_checkpoints(legacy, now=NOW)
    plan = plan_of(legacy)
    _other_work_id(plan)
    (legacy / PLAN).write_text(json.dumps(plan, indent=2) + "\n")

    with pytest.raises(CheckpointError, match="invalid-journal"):
        migrate_legacy_checkpoints(legacy, now=NOW)


def test_a_skipped_phase_marker_is_an_invalid_journal(legacy):
    migrate_legacy_checkpoints(legacy, now=NOW)
    (legacy / MIGRATION_DIR / "20-import-started.json").unlink()

    with pytest.raises(CheckpointError) as error:
        migrate_legacy_checkpoints(legacy, now=NOW)

    assert error.value.code == "invalid-journal"
    assert "skipped" in error.value.message


def test_a_contradictory_phase_marker_is_an_invalid_journal(legacy):
    migrate_legacy_checkpoints(legacy, now=NOW)
    marker = legacy / MIGRATION_DIR / "30-import-complete.json"
    marker.write_text(marker.read_text().replace('"imported"', '"no-import"'))

    with pytest.raises(CheckpointError, match="invalid-journal"):
        migrate_legacy_checkpoints(legacy, now=NOW)


def test_an_import_marker_in_a_no_import_run_is_an_invalid_journal(tmp_path):
    write_tree(tmp_path, {ROOT_CHECKPOINT: record(4)})
    migrate_legacy_checkpoints(tmp_path, now=NOW)
    write_tree(tmp_path, {f"{MIGRATION_DIR}/20-import-started.json": "{}\n"})

    with pytest.raises(CheckpointError, match="invalid-journal"):
        migrate_legacy_checkpoints(tmp_path, now=NOW)


def test_journal_files_without_a_plan_are_an_invalid_journal(legacy):
    migrate_legacy_checkpoints(legacy, now=NOW)
    (legacy / PLAN).unlink()

    with pytest.raises(CheckpointError, match="invalid-journal"):
        migrate_legacy_checkpoints(legacy, now=NOW)
    assert checkpoint_problems(legacy)[0].startswith("invalid-journal: ")


def test_removing_the_final_marker_resumes_to_identical_bytes(legacy):
    migrate_legacy_checkpoints(legacy, now=NOW)
    before = snapshot(legacy)
    (legacy / MIGRATION_DIR / "40-complete.json").unlink()
    assert "is unfinished" in checkpoint_problems(legacy)[0]

    assert migrate_legacy_checkpoints(legacy).status == "completed"
    assert snapshot(legacy) == before


@pytest.mark.parametrize("missing", ["META.json", "governance.json", "STATE.md", "ALL"])
def test_a_deleted_completed_target_is_an_integrity_failure(legacy, missing):
    result = migrate_legacy_checkpoints(legacy, now=NOW)
    work_dir, runtime_dir = target_dirs(legacy, result.target_work_id)
    if missing == "ALL":
        for directory in (work_dir, runtime_dir):
            for path in (legacy / directory).iterdir():
                path.unlink()
            (legacy / directory).rmdir()
    else:
        directory = work_dir if missing == "META.json" else runtime_dir
        (legacy / directory / missing).unlink()
    before = snapshot(legacy)

    with pytest.raises(CheckpointError) as error:
        migrate_legacy_checkpoints(legacy, now=NOW)

    assert error.value.code == "integrity-failure"
    assert "is missing" in error.value.message
    assert snapshot(legacy) == before
    assert any("integrity-failure" in line for line in checkpoint_problems(legacy))


def test_an_altered_imported_governance_state_is_an_integrity_failure(legacy):
    result = migrate_legacy_checkpoints(legacy, now=NOW)
    path = legacy / ".ged/runtime" / result.target_work_id / "governance.json"
    state = json.loads(path.read_bytes())
    state["lifecycle"] = "active"
    state["evidence"] = []
    path.write_text(json.dumps(state, indent=2) + "\n")

    with pytest.raises(CheckpointError, match="integrity-failure"):
        migrate_legacy_checkpoints(legacy, now=NOW)


def test_a_checkpoints_file_in_the_imported_runtime_is_an_integrity_failure(legacy):
    result = migrate_legacy_checkpoints(legacy, now=NOW)
    write_tree(legacy, {f".ged/runtime/{result.target_work_id}/checkpoints.json": record(2)})

    with pytest.raises(CheckpointError, match="integrity-failure"):
        migrate_legacy_checkpoints(legacy, now=NOW)


def test_an_active_pointer_naming_the_imported_work_is_an_integrity_failure(legacy):
    result = migrate_legacy_checkpoints(legacy, now=NOW)
    write_tree(legacy, {".ged/runtime/active-work/0123.json": json.dumps(
        {"schemaVersion": 1, "sessionId": "s", "workId": result.target_work_id,
         "operation": "continue", "selectedAt": CREATED_AT, "requestId": "r"})})

    with pytest.raises(CheckpointError, match="integrity-failure"):
        migrate_legacy_checkpoints(legacy, now=NOW)


def test_a_tampered_backup_is_an_integrity_failure(legacy):
    migrate_legacy_checkpoints(legacy, now=NOW)
    entry = plan_of(legacy)["manifest"][0]
    (legacy / entry["backupPath"]).write_text("tampered\n")
    before = snapshot(legacy)

    with pytest.raises(CheckpointError) as error:
        migrate_legacy_checkpoints(legacy, now=NOW)

    assert error.value.code == "integrity-failure"
    assert snapshot(legacy) == before
    assert checkpoint_problems(legacy) == [
        f"integrity-failure: Backup {entry['backupPath']} does not match its recorded hash."]


def test_a_user_file_at_the_target_state_md_is_not_overwritten(legacy, monkeypatch):
    run_interrupted(monkeypatch, legacy, "checkpoints.governance")
    target = plan_of(legacy)["targetWorkId"]
    user_file = legacy / ".ged/runtime" / target / "STATE.md"
    user_file.write_text("# My own notes\n")

    with pytest.raises(CheckpointError) as error:
        migrate_legacy_checkpoints(legacy, now=NOW)

    assert error.value.code == "artifact-conflict"
    assert user_file.read_text() == "# My own notes\n"
    assert not (legacy / MIGRATION_DIR / "30-import-complete.json").exists()


def test_the_error_names_its_code(legacy, monkeypatch):
    run_interrupted(monkeypatch, legacy, "checkpoints.plan")
    (legacy / PLAN).write_text("[]")

    with pytest.raises(CheckpointError) as error:
        migrate_legacy_checkpoints(legacy)

    assert error.value.code in cp.ERROR_CODES
    assert str(error.value).startswith("invalid-journal: ")


def test_after_completion_the_sources_are_never_read_again(legacy):
    first = migrate_legacy_checkpoints(legacy, now=NOW)
    (legacy / ROOT_CHECKPOINT).unlink()
    os.mkfifo(legacy / ROOT_CHECKPOINT)
    (legacy / ".ged/work/root/SPEC.md").write_text("rewritten by someone\n")

    error = run_with_deadline(legacy)

    assert error is None
    assert migrate_legacy_checkpoints(legacy).target_work_id == first.target_work_id


def test_doctor_reports_checkpoints_that_were_never_backed_up(legacy):
    before = snapshot(legacy)

    problems = checkpoint_problems(legacy)

    assert problems == [f"Legacy checkpoints found but not yet backed up: {ROOT_CHECKPOINT}; "
                        "run ged_migrate_v3."]
    assert snapshot(legacy) == before


def test_a_source_name_that_is_not_utf8_is_unsafe_layout(legacy):
    with open(os.path.join(os.fsencode(legacy), b".ged/work/root/bad\xff"), "wb") as handle:
        handle.write(b"x")

    with pytest.raises(CheckpointError) as error:
        migrate_legacy_checkpoints(legacy, now=NOW)

    assert error.value.code == "unsafe-layout"
    assert not (legacy / ".ged/runtime/migrations").exists()
