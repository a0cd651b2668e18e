"""PLAN.json and the phase markers: validated on every read, structurally and semantically."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from gedweb.checkout import safefs
from gedweb.checkout.checkpoints.classify import (
    CLASSIFICATIONS,
    candidate_id,
    decide,
    is_nonblank,
    loads_json,
)
from gedweb.checkout.checkpoints.discovery import file_kind, walk_files
from gedweb.checkout.checkpoints.errors import INVALID_JOURNAL, CheckpointError
from gedweb.checkout.checkpoints.formats import (
    backup_id_for,
    backup_path_for,
    expected_markers,
    marker_bytes,
    target_ids,
)
from gedweb.checkout.checkpoints.layout import (
    CHECKPOINT_NAME,
    MARKERS,
    MIGRATION_DIR,
    PLAN_PATH,
    ROOT_CHECKPOINT,
    ROOT_SLUG,
    RUNTIME,
    WORK,
)
from gedweb.lib import governance

PLAN_KEYS = ("schemaVersion", "migrationId", "createdAt", "backupId", "candidates", "manifest",
             "importDecision", "targetWorkId", "evidenceId")
CANDIDATE_KEYS = ("candidateId", "checkpointPath", "slug", "logicalWorkId", "classification")
MANIFEST_KEYS = ("sourcePath", "backupPath", "sha256", "size", "candidateIds")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _journal_error(message: str) -> CheckpointError:
    return CheckpointError(INVALID_JOURNAL, f"{PLAN_PATH} is invalid: {message}")


def _journal_path(value: Any, what: str) -> str:
    """§9.2: a normalised POSIX relative path, not starting with .., without NUL."""
    if not isinstance(value, str) or not value or "\x00" in value:
        raise _journal_error(f"{what} is not a path")
    path = PurePosixPath(value)
    if (path.is_absolute() or value.startswith("..") or path.as_posix() != value
            or any(part in (".", "..") for part in path.parts)):
        raise _journal_error(f"{what} is not a normalised relative path: {value!r}")
    return value


def _exact_keys(value: Any, keys: tuple[str, ...], what: str) -> dict[str, Any]:
    if not isinstance(value, dict) or set(value) != set(keys):
        raise _journal_error(f"{what} must be an object with exactly {', '.join(keys)}")
    return value


def _validate_candidate(item: Any) -> None:
    _exact_keys(item, CANDIDATE_KEYS, "a candidate")
    path = _journal_path(item["checkpointPath"], "checkpointPath")
    if path == ROOT_CHECKPOINT:
        slug = ROOT_SLUG
    else:
        parts = PurePosixPath(path).parts
        if (len(parts) != 4 or "/".join(parts[:2]) != RUNTIME or parts[3] != CHECKPOINT_NAME
                or parts[2] == "migrations"):
            raise _journal_error(f"checkpointPath {path} is not a legacy checkpoint location")
        slug = parts[2]
    if item["slug"] != slug:
        raise _journal_error(f"candidate {path} has the wrong slug")
    if item["candidateId"] != candidate_id(path):
        raise _journal_error(f"candidate {path} has the wrong candidateId")
    if not is_nonblank(item["logicalWorkId"]):
        raise _journal_error(f"candidate {path} has a blank logicalWorkId")
    if item["classification"] not in CLASSIFICATIONS:
        raise _journal_error(f"candidate {path} has an unknown classification")


def _validate_manifest_entry(item: Any, backup_id: str, candidate_ids: set[str]) -> None:
    _exact_keys(item, MANIFEST_KEYS, "a manifest entry")
    path = _journal_path(item["sourcePath"], "sourcePath")
    if not (path.startswith(f"{RUNTIME}/") or path.startswith(f"{WORK}/")) or path.startswith(
        f"{RUNTIME}/migrations/"
    ):
        raise _journal_error(f"sourcePath {path} is outside the legacy layout")
    if item["backupPath"] != backup_path_for(backup_id, path):
        raise _journal_error(f"backupPath of {path} does not match the backupId")
    if not isinstance(item["sha256"], str) or not _HEX64.match(item["sha256"]):
        raise _journal_error(f"sha256 of {path} is not 64 lowercase hex")
    size = item["size"]
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= 2**53 - 1:
        raise _journal_error(f"size of {path} is not a safe integer")
    ids = item["candidateIds"]
    if (not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids)
            or ids != sorted(set(ids))
            or not set(ids) <= candidate_ids):
        raise _journal_error(f"candidateIds of {path} are not sorted known candidate ids")


def validate_plan(data: bytes) -> dict[str, Any]:
    """Parse PLAN.json and recompute every derived field; InvalidJournal on any difference."""
    try:
        parsed = loads_json(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _journal_error("it is not valid JSON") from None
    plan = _exact_keys(parsed, PLAN_KEYS, "PLAN.json")
    if plan["schemaVersion"] != 1 or isinstance(plan["schemaVersion"], bool):
        raise _journal_error("schemaVersion must be 1")
    migration_id = plan["migrationId"]
    try:
        canonical_uuid = str(uuid.UUID(migration_id)) if isinstance(migration_id, str) else None
    except ValueError:
        canonical_uuid = None
    if canonical_uuid != migration_id:
        raise _journal_error("migrationId is not a UUID")
    if not governance.is_canonical_time(plan["createdAt"]):
        raise _journal_error("createdAt is not a canonical UTC time")
    if plan["backupId"] != backup_id_for(plan["createdAt"], migration_id):
        raise _journal_error("backupId does not match createdAt and migrationId")
    candidates = plan["candidates"]
    if not isinstance(candidates, list) or not candidates:
        raise _journal_error("candidates must be a non-empty list")
    for item in candidates:
        _validate_candidate(item)
    paths = [c["checkpointPath"] for c in candidates]
    if paths != sorted(set(paths)):
        raise _journal_error("candidates must be unique and sorted by checkpointPath")
    manifest = plan["manifest"]
    if not isinstance(manifest, list):
        raise _journal_error("manifest must be a list")
    known = {c["candidateId"] for c in candidates}
    for item in manifest:
        _validate_manifest_entry(item, plan["backupId"], known)
    sources = [m["sourcePath"] for m in manifest]
    if sources != sorted(set(sources)):
        raise _journal_error("manifest must be unique and sorted by sourcePath")
    by_path = {m["sourcePath"]: m for m in manifest}
    for candidate in candidates:
        entry = by_path.get(candidate["checkpointPath"])
        if entry is None or candidate["candidateId"] not in entry["candidateIds"]:
            raise _journal_error(f"{candidate['checkpointPath']} is not in the manifest")
    if plan["importDecision"] != decide(candidates):
        raise _journal_error("importDecision does not follow from the candidates")
    expected_target = expected_evidence = None
    chosen_id = plan["importDecision"]["candidateId"]
    if chosen_id is not None:
        chosen = next(c for c in candidates if c["candidateId"] == chosen_id)
        expected_target, expected_evidence = target_ids(migration_id, plan["createdAt"], chosen)
    if plan["targetWorkId"] != expected_target:
        raise _journal_error("targetWorkId does not match its derivation")
    if plan["evidenceId"] != expected_evidence:
        raise _journal_error("evidenceId does not match its derivation")
    return plan


def read_plan(root: Path) -> dict[str, Any] | None:
    data = safefs.read_bytes(root, PLAN_PATH)
    return None if data is None else validate_plan(data)


def present_markers(root: Path, plan: Mapping[str, Any]) -> list[str]:
    """The markers present, which must be an exact, unskipped prefix of the expected run."""
    expected = expected_markers(plan)
    present = [name for name in MARKERS
               if safefs.read_bytes(root, f"{MIGRATION_DIR}/{name}") is not None]
    for name in present:
        if name not in expected:
            raise CheckpointError(
                INVALID_JOURNAL, f"{MIGRATION_DIR}/{name} contradicts a plan that imports nothing"
            )
    if present != list(expected[: len(present)]):
        raise CheckpointError(
            INVALID_JOURNAL, f"{MIGRATION_DIR} has skipped phase markers: {', '.join(present)}"
        )
    for name in present:
        if safefs.read_bytes(root, f"{MIGRATION_DIR}/{name}") != marker_bytes(plan, name):
            raise CheckpointError(
                INVALID_JOURNAL, f"{MIGRATION_DIR}/{name} contradicts PLAN.json"
            )
    return present


def journal_leftovers(root: Path) -> list[str]:
    """Files in the migration directory other than crash temporaries (used without a PLAN)."""
    if file_kind(root, MIGRATION_DIR) is None:
        return []
    return [path for path in walk_files(root, MIGRATION_DIR)
            if not PurePosixPath(path).name.startswith(".gedweb-tmp-")]
