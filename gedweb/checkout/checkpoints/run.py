"""A checkpoint import: plan, backups, target, markers; resumable after a crash."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from gedweb.checkout import safefs
from gedweb.checkout.checkpoints.backups import back_up_sources, check_inventory, verify_backups
from gedweb.checkout.checkpoints.discovery import build_plan, discover, unsafe_layout
from gedweb.checkout.checkpoints.errors import INVALID_JOURNAL, CheckpointError
from gedweb.checkout.checkpoints.formats import marker_bytes, plan_outcome, pretty_json
from gedweb.checkout.checkpoints.journal import (
    journal_leftovers,
    present_markers,
    read_plan,
    validate_plan,
)
from gedweb.checkout.checkpoints.layout import (
    BACKUP_COMPLETE,
    COMPLETE,
    IMPORT_COMPLETE,
    IMPORT_STARTED,
    MIGRATION_DIR,
    PLAN_PATH,
)
from gedweb.checkout.checkpoints.target import create_target, verify_target
from gedweb.failpoints import failpoint


@dataclass(frozen=True)
class CheckpointResult:
    status: str  # "not-needed" | "completed" | "already-complete"
    outcome: str | None = None  # "imported" | "no-import"
    target_work_id: str | None = None
    backup_id: str | None = None
    reason: str | None = None




def _result(plan: Mapping[str, Any], status: str) -> CheckpointResult:
    return CheckpointResult(
        status=status,
        outcome=plan_outcome(plan),
        target_work_id=plan["targetWorkId"],
        backup_id=plan["backupId"],
        reason=plan["importDecision"]["reason"],
    )


def _publish_marker(root: Path, plan: Mapping[str, Any], name: str) -> None:
    rel = f"{MIGRATION_DIR}/{name}"
    data = marker_bytes(plan, name)
    if not safefs.publish_exclusive(root, rel, data) and safefs.read_bytes(root, rel) != data:
        raise CheckpointError(INVALID_JOURNAL, f"{rel} contradicts PLAN.json")


def _run(root: Path, now: datetime | None) -> CheckpointResult:
    data = safefs.read_bytes(root, PLAN_PATH)
    leftovers = journal_leftovers(root) if data is None else []
    if leftovers:
        # A concurrent run may have published its plan between the read and
        # the listing: what it published is then read here and adopted.
        data = safefs.read_bytes(root, PLAN_PATH)
        if data is None:
            raise CheckpointError(
                INVALID_JOURNAL,
                f"{MIGRATION_DIR} has journal files but no PLAN.json: {', '.join(leftovers)}",
            )
    if data is None:
        inventory = discover(root)
        if not inventory.candidates:
            return CheckpointResult(status="not-needed")
        plan = build_plan(inventory, now or datetime.now(UTC))
        # Exclusive publication: a concurrent run that lost the race adopts the winner's plan.
        if not safefs.publish_exclusive(root, PLAN_PATH, pretty_json(plan)):
            # Publication lost only to a plan file already there, which read_plan reads.
            plan = cast("dict[str, Any]", read_plan(root))
        failpoint("checkpoints.plan")
    else:
        plan = validate_plan(data)
    assert plan is not None

    present = present_markers(root, plan)
    if COMPLETE in present:
        verify_backups(root, plan)
        if plan["targetWorkId"] is not None:
            verify_target(root, plan)
        return _result(plan, "already-complete")

    if BACKUP_COMPLETE not in present:
        check_inventory(root, plan)
        back_up_sources(root, plan)
    verify_backups(root, plan)
    _publish_marker(root, plan, BACKUP_COMPLETE)
    failpoint("checkpoints.backup-complete")

    if plan["targetWorkId"] is not None:
        if IMPORT_COMPLETE in present:
            verify_target(root, plan)  # a completed target must still be there
        else:
            _publish_marker(root, plan, IMPORT_STARTED)
            failpoint("checkpoints.import-started")
            create_target(root, plan)
            verify_target(root, plan)
    _publish_marker(root, plan, IMPORT_COMPLETE)
    failpoint("checkpoints.import-complete")
    _publish_marker(root, plan, COMPLETE)
    return _result(plan, "completed")


def migrate_legacy_checkpoints(root: Path, *, now: datetime | None = None) -> CheckpointResult:
    """Back up legacy checkpoints and import at most one as untrusted, paused work.

    Raises CheckpointError; the caller must stop (no pointer, no VERSION) when it does.
    """
    try:
        return _run(Path(root), now)
    except safefs.UnsafePath as exc:
        raise unsafe_layout(exc) from None
