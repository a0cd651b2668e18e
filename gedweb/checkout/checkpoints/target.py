"""The imported work item: paused, waiting for a decision, never authorising anything."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gedweb.checkout import safefs
from gedweb.checkout.checkpoints.classify import (
    DECISION_REASON,
    DECISION_REASON_CODE,
    EXECUTION_PROFILE,
    loads_json,
)
from gedweb.checkout.checkpoints.discovery import file_kind
from gedweb.checkout.checkpoints.errors import ARTIFACT_CONFLICT, INTEGRITY_FAILURE, CheckpointError
from gedweb.checkout.checkpoints.formats import parse_time, pretty_json, target_summary
from gedweb.checkout.checkpoints.layout import CHECKPOINT_NAME, RUNTIME, WORK
from gedweb.failpoints import failpoint
from gedweb.lib import governance


def repository_identity(root: Path) -> dict[str, str]:
    """§2.1: sha256 of the absolute Git common dir (or the worktree path) and of the realpath."""
    real = os.path.realpath(root)
    common = real
    try:
        completed = subprocess.run(
            ["git", "-C", real, "rev-parse", "--path-format=absolute", "--git-common-dir"],
            capture_output=True, text=True, timeout=30, check=False,
        )
        if completed.returncode == 0 and completed.stdout.strip():
            common = completed.stdout.rstrip("\n")
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "repositoryId": safefs.sha256_hex(common.encode("utf-8")),
        "worktreeId": safefs.sha256_hex(real.encode("utf-8")),
    }


def _chosen(plan: Mapping[str, Any]) -> dict[str, Any]:
    chosen_id = plan["importDecision"]["candidateId"]
    return next(c for c in plan["candidates"] if c["candidateId"] == chosen_id)


def evidence_summary(checkpoint_path: str, backup_id: str) -> str:
    return (f"Legacy checkpoints from {checkpoint_path} were preserved in backup {backup_id} "
            "but were not trusted as authorization.")


def _meta_bytes(plan: Mapping[str, Any]) -> bytes:
    chosen = _chosen(plan)
    return pretty_json({
        "schemaVersion": 1,
        "workId": plan["targetWorkId"],
        "summary": target_summary(chosen["checkpointPath"]),
        "createdAt": plan["createdAt"],
        "branch": None,
        "baseHead": None,
        "origin": {
            "kind": "legacy-import",
            "migrationId": plan["migrationId"],
            "candidateId": chosen["candidateId"],
            "selectable": False,
        },
    })


def _state(plan: Mapping[str, Any], identity: Mapping[str, str]) -> dict[str, Any]:
    chosen = _chosen(plan)
    record = {
        "id": plan["evidenceId"],
        "kind": "migration-required",
        "source": "runtime",
        "recordedAt": plan["createdAt"],
        "summary": evidence_summary(chosen["checkpointPath"], plan["backupId"]),
        "outcome": "failed",
    }
    return governance.initial_state(
        work_id=plan["targetWorkId"],
        summary=target_summary(chosen["checkpointPath"]),
        repository={**identity, "branch": None, "baseHead": None},
        decision={
            "mode": governance.REASONS[DECISION_REASON_CODE][0],
            "reasonCode": DECISION_REASON_CODE,
            "reason": DECISION_REASON,
            "requiresDecision": True,
        },
        execution_profile=EXECUTION_PROFILE,
        now=parse_time(plan["createdAt"]),
        lifecycle="paused",
        evidence=[record],
    )


def _governance_matches(data: bytes, plan: Mapping[str, Any]) -> bool:
    """Exact bytes, except that the repository ids are whatever 64-hex the import recorded.

    The ids hash the checkout's location, so a moved checkout must not turn a faithful
    import into an integrity failure.
    """
    try:
        stored = loads_json(data.decode("utf-8"))
        governance.validate_state(stored, plan["targetWorkId"])
        identity = {key: stored["repository"][key] for key in ("repositoryId", "worktreeId")}
    except (ValueError, RecursionError, KeyError, TypeError, governance.GovernanceError):
        return False
    return data == pretty_json(_state(plan, identity))


def _target_paths(plan: Mapping[str, Any]) -> dict[str, str]:
    work, runtime = f"{WORK}/{plan['targetWorkId']}", f"{RUNTIME}/{plan['targetWorkId']}"
    return {
        "META.json": f"{work}/META.json",
        **{name: f"{work}/{name}" for name in governance.PLANNED_TEMPLATES},
        "governance.json": f"{runtime}/governance.json",
        "STATE.md": f"{runtime}/STATE.md",
    }


def _publish(root: Path, rel: str, data: bytes, *, same: Any = None) -> None:
    """Create-only; an existing file must already hold exactly what this run would write."""
    if safefs.publish_exclusive(root, rel, data):
        return
    existing = safefs.read_bytes(root, rel)
    ok = existing is not None and (same(existing) if same else existing == data)
    if not ok:
        raise CheckpointError(
            ARTIFACT_CONFLICT, f"{rel} already exists with other content and was left untouched."
        )


def create_target(root: Path, plan: Mapping[str, Any]) -> None:
    paths = _target_paths(plan)
    safefs.make_dirs(root, f"{WORK}/{plan['targetWorkId']}")
    # META first: from then on the runtime directory is a current generated runtime,
    # so a later discovery never mistakes it for legacy state.
    _publish(root, paths["META.json"], _meta_bytes(plan))
    safefs.make_dirs(root, f"{RUNTIME}/{plan['targetWorkId']}")
    for name, text in governance.PLANNED_TEMPLATES.items():
        _publish(root, paths[name], text.encode("utf-8"))
    failpoint("checkpoints.target-files")
    state = _state(plan, repository_identity(root))
    _publish(root, paths["governance.json"], pretty_json(state),
             same=lambda existing: _governance_matches(existing, plan))
    failpoint("checkpoints.governance")
    # The projection renders the state as stored (its repository ids may predate a move).
    stored = safefs.read_bytes(root, paths["governance.json"])
    if stored is None:
        raise CheckpointError(INTEGRITY_FAILURE,
                              f"{paths['governance.json']} vanished while it was imported.")
    projection = governance.render_state_md(loads_json(stored.decode("utf-8")))
    _publish(root, paths["STATE.md"], projection.encode("utf-8"))


def target_problems(root: Path, plan: Mapping[str, Any]) -> list[str]:
    target = plan["targetWorkId"]
    paths = _target_paths(plan)
    problems: list[str] = []
    expected = {
        "META.json": _meta_bytes(plan),
        **{name: text.encode("utf-8") for name, text in governance.PLANNED_TEMPLATES.items()},
    }
    for name, data in expected.items():
        current = safefs.read_bytes(root, paths[name])
        if current is None:
            problems.append(f"Imported work {target} is missing {paths[name]}.")
        elif current != data:
            problems.append(f"Imported work {target} has an altered {paths[name]}.")
    state_bytes = safefs.read_bytes(root, paths["governance.json"])
    if state_bytes is None:
        problems.append(f"Imported work {target} is missing {paths['governance.json']}.")
    elif not _governance_matches(state_bytes, plan):
        problems.append(f"Imported work {target} has an altered {paths['governance.json']}.")
    else:
        projection = governance.render_state_md(loads_json(state_bytes.decode("utf-8")))
        current = safefs.read_bytes(root, paths["STATE.md"])
        if current is None:
            problems.append(f"Imported work {target} is missing {paths['STATE.md']}.")
        elif current != projection.encode("utf-8"):
            problems.append(f"Imported work {target} has an altered {paths['STATE.md']}.")
    if file_kind(root, f"{RUNTIME}/{target}/{CHECKPOINT_NAME}") is not None:
        problems.append(f"Imported work {target} has a {CHECKPOINT_NAME} in its runtime directory.")
    for pointer in safefs.walk_files(root, f"{RUNTIME}/active-work", recursive=False,
                                     skip_symlinks=True):
        try:
            selected = loads_json((safefs.read_bytes(root, pointer) or b"").decode("utf-8"))
        except (ValueError, RecursionError):
            continue
        if isinstance(selected, dict) and selected.get("workId") == target:
            problems.append(f"Active-work pointer {pointer} selects imported work {target}.")
    return problems


def verify_target(root: Path, plan: Mapping[str, Any]) -> None:
    problems = target_problems(root, plan)
    if problems:
        raise CheckpointError(INTEGRITY_FAILURE, " ".join(problems))
