"""The dry run and ``doctor``'s findings; reads only."""

from __future__ import annotations

from pathlib import Path

from gedweb.checkout import safefs
from gedweb.checkout.checkpoints.backups import backup_problems
from gedweb.checkout.checkpoints.classify import decide
from gedweb.checkout.checkpoints.discovery import Inventory, discover, unsafe_layout
from gedweb.checkout.checkpoints.errors import (
    INTEGRITY_FAILURE,
    INVALID_JOURNAL,
    UNSAFE_LAYOUT,
    CheckpointError,
)
from gedweb.checkout.checkpoints.formats import plan_outcome, target_summary
from gedweb.checkout.checkpoints.journal import journal_leftovers, present_markers, validate_plan
from gedweb.checkout.checkpoints.layout import (
    BACKUP_COMPLETE,
    BACKUPS_DIR,
    COMPLETE,
    IMPORT_COMPLETE,
    MIGRATION_DIR,
    PLAN_PATH,
)
from gedweb.checkout.checkpoints.target import target_problems


def plan_legacy_checkpoints(root: Path) -> list[str]:
    """What a run would do, as lines for ``--dry-run``. Writes nothing.

    Raises CheckpointError where a run would stop before writing (unsafe layout, invalid
    journal).
    """
    root = Path(root)
    try:
        data = safefs.read_bytes(root, PLAN_PATH)
        if data is None:
            leftovers = journal_leftovers(root)
            if leftovers:
                raise CheckpointError(
                    INVALID_JOURNAL,
                    f"{MIGRATION_DIR} has journal files but no PLAN.json: {', '.join(leftovers)}",
                )
            return _describe_fresh(discover(root))
        plan = validate_plan(data)
        present = present_markers(root, plan)
    except safefs.UnsafePath as exc:
        raise unsafe_layout(exc) from None
    outcome = plan_outcome(plan)
    if COMPLETE in present:
        target = f", target {plan['targetWorkId']}" if plan["targetWorkId"] else ""
        return [
            f"Legacy checkpoints: already complete ({outcome}, backup {plan['backupId']}"
            f"{target}); a run only re-verifies the backups and the imported work and "
            "writes nothing."
        ]
    last = present[-1] if present else "PLAN.json"
    lines = [
        f"Legacy checkpoints: would resume migration {plan['migrationId']} after {last}.",
        f"Decision: {plan['importDecision']['reason']}",
    ]
    if BACKUP_COMPLETE not in present:
        lines.append(
            f"Would check that the {len(plan['manifest'])} planned legacy files are unchanged "
            f"and back them up under {BACKUPS_DIR}/{plan['backupId']}/source/."
        )
    if plan["targetWorkId"] and IMPORT_COMPLETE not in present:
        lines.append(f"Would create paused, non-selectable work {plan['targetWorkId']}.")
    lines.append("Legacy sources are left in place unchanged.")
    return lines


def _describe_fresh(inventory: Inventory) -> list[str]:
    if not inventory.candidates:
        return ["Legacy checkpoints: none found; nothing to do."]
    lines = [f"Legacy checkpoints: {len(inventory.candidates)} found."]
    for candidate in inventory.candidates:
        lines.append(
            f"- {candidate['checkpointPath']} (logical work ID {candidate['logicalWorkId']}): "
            f"{candidate['classification']}"
        )
    total = sum(source.size for source in inventory.files.values())
    lines.append(
        f"Would back up {len(inventory.files)} legacy files ({total} bytes) byte-exactly under "
        f"{BACKUPS_DIR}/<new backup id>/source/."
    )
    decision = decide(inventory.candidates)
    if decision["candidateId"] is not None:
        chosen = next(c for c in inventory.candidates
                      if c["candidateId"] == decision["candidateId"])
        lines.append(
            f"Would import {chosen['checkpointPath']} as paused, non-selectable work "
            f"\"{target_summary(chosen['checkpointPath'])}\" that needs a human decision: "
            f"{decision['reason']}"
        )
    else:
        lines.append(f"Would import nothing: {decision['reason']}")
    lines.append("Legacy sources are left in place unchanged.")
    return lines


def checkpoint_problems(root: Path) -> list[str]:
    """Problems for ``doctor --checkout``: unfinished runs, bad journals, damaged results."""
    root = Path(root)
    try:
        return _problems(root)
    except safefs.UnsafePath as exc:
        return [f"{UNSAFE_LAYOUT}: {exc}"]
    except CheckpointError as exc:
        return [str(exc)]


def _problems(root: Path) -> list[str]:
    data = safefs.read_bytes(root, PLAN_PATH)
    if data is None:
        leftovers = journal_leftovers(root)
        if leftovers:
            return [f"{INVALID_JOURNAL}: {MIGRATION_DIR} has journal files but no PLAN.json."]
        inventory = discover(root)
        if inventory.candidates:
            return [f"Legacy checkpoints found but not yet backed up: "
                    f"{', '.join(c['checkpointPath'] for c in inventory.candidates)}; run "
                    "ged_migrate_v3."]
        return []
    plan = validate_plan(data)
    present = present_markers(root, plan)
    problems: list[str] = []
    if COMPLETE not in present:
        last = present[-1] if present else "PLAN.json"
        problems.append(
            f"Legacy checkpoint migration {plan['migrationId']} is unfinished (last step: "
            f"{last}); rerun ged_migrate_v3 to resume it."
        )
    problems.extend(f"{INTEGRITY_FAILURE}: {p}" for p in backup_problems(root, plan)
                    if BACKUP_COMPLETE in present)
    if plan["targetWorkId"] is not None and IMPORT_COMPLETE in present:
        problems.extend(f"{INTEGRITY_FAILURE}: {p}" for p in target_problems(root, plan))
    return problems
