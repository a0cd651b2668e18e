"""The bytes the checkpoint import writes and the ids it derives; pure."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from gedweb.checkout import safefs
from gedweb.checkout.checkpoints.layout import (
    BACKUP_COMPLETE,
    BACKUPS_DIR,
    COMPLETE,
    IMPORT_COMPLETE,
    MARKER_PHASES,
    MARKERS,
)
from gedweb.lib import governance


def pretty_json(value: Any) -> bytes:
    """GedPi's JSON.stringify(value, null, 2) + newline."""
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def backup_id_for(created_at: str, migration_id: str) -> str:
    stamp = re.sub(r"[-:.TZ]", "", created_at)
    return f"{stamp}-{safefs.sha256_hex(migration_id.encode('utf-8'))[:16]}"


def backup_path_for(backup_id: str, source_path: str) -> str:
    return f"{BACKUPS_DIR}/{backup_id}/source/{source_path}"


def target_summary(checkpoint_path: str) -> str:
    return governance.normalize_summary(f"Legacy checkpoint import from {checkpoint_path}")


def target_ids(migration_id: str, created_at: str, chosen: Mapping[str, Any]) -> tuple[str, str]:
    """(targetWorkId, evidenceId), both derived from sha256("<migrationId>:<candidateId>")."""
    digest = safefs.sha256_hex(f"{migration_id}:{chosen['candidateId']}".encode("utf-8"))
    work_id = governance.work_id_for(
        target_summary(chosen["checkpointPath"]), parse_time(created_at), digest[:32]
    )
    return work_id, "legacy-migration-" + digest[:24]


def marker_bytes(plan: Mapping[str, Any], name: str) -> bytes:
    body: dict[str, Any] = {
        "schemaVersion": 1,
        "migrationId": plan["migrationId"],
        "phase": MARKER_PHASES[name],
        "backupId": plan["backupId"],
    }
    if name != BACKUP_COMPLETE:
        body["targetWorkId"] = plan["targetWorkId"]
    if name in (IMPORT_COMPLETE, COMPLETE):
        body["outcome"] = plan_outcome(plan)
    body["recordedAt"] = plan["createdAt"]
    return pretty_json(body)


def plan_outcome(plan: Mapping[str, Any]) -> str:
    return "imported" if plan["importDecision"]["outcome"] == "import" else "no-import"


def expected_markers(plan: Mapping[str, Any]) -> tuple[str, ...]:
    if plan["importDecision"]["outcome"] == "import":
        return MARKERS
    return (BACKUP_COMPLETE, IMPORT_COMPLETE, COMPLETE)
