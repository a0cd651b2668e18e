"""GedPi's legacy checkpoint backup and import, ``legacy-checkpoints-v1`` (gedpi-behaviour.md §6.9).

Older GedPi builds kept per-branch work state in ``.ged/runtime/<slug>/checkpoints.json``
(and, older still, one ``.ged/runtime/checkpoints.json``). ``ged_migrate_v3`` runs this
step first. It backs up every legacy file that belongs to a checkpoint, byte for byte,
and imports at most one of them as a new work item that can never authorise anything:
paused, planned-change, waiting for a user decision, with one failed
``migration-required`` evidence record. The legacy sources are never moved, rewritten or
trusted; after completion a rerun verifies only the backups and the imported target.

The run is a journal of exclusively published files under
``.ged/runtime/migrations/legacy-checkpoints-v1/``: PLAN.json, then the phase markers
``10-backup-complete.json``, ``20-import-started.json`` (imports only),
``30-import-complete.json`` and ``40-complete.json``. Every file is create-only and every
derived value is recomputed on resume, so an interrupted run resumes to exactly one
target and concurrent runs converge on one plan.

Every file access goes through :mod:`gedweb.checkout.safefs`: a symbolic link, FIFO, socket or
device anywhere in the scanned layout is ``unsafe-layout``, and a FIFO is never opened.
Standard library only; the Django side never imports this at module load.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from gedweb.checkout import safefs
from gedweb.failpoints import failpoint
from gedweb.lib import governance

MIGRATION_ID = "legacy-checkpoints-v1"
RUNTIME = ".ged/runtime"
WORK = ".ged/work"
MIGRATION_DIR = f"{RUNTIME}/migrations/{MIGRATION_ID}"
PLAN_PATH = f"{MIGRATION_DIR}/PLAN.json"
BACKUPS_DIR = f"{MIGRATION_DIR}/backups"
ROOT_CHECKPOINT = f"{RUNTIME}/checkpoints.json"
ROOT_SLUG = "root"
CHECKPOINT_NAME = "checkpoints.json"
# Runtime directories the direct-root candidate never claims (besides current generated
# work and branch candidates).
UNCLAIMED_RUNTIME_DIRS = ("migrations", "active-work")

BACKUP_COMPLETE = "10-backup-complete.json"
IMPORT_STARTED = "20-import-started.json"
IMPORT_COMPLETE = "30-import-complete.json"
COMPLETE = "40-complete.json"
MARKERS = (BACKUP_COMPLETE, IMPORT_STARTED, IMPORT_COMPLETE, COMPLETE)
MARKER_PHASES = {
    BACKUP_COMPLETE: "backup-complete",
    IMPORT_STARTED: "import-started",
    IMPORT_COMPLETE: "import-complete",
    COMPLETE: "complete",
}

# --- error codes ---------------------------------------------------------------

UNSAFE_LAYOUT = "unsafe-layout"
SOURCE_DRIFT = "source-drift"
ARTIFACT_CONFLICT = "artifact-conflict"
INVALID_JOURNAL = "invalid-journal"
INTEGRITY_FAILURE = "integrity-failure"
ERROR_CODES = (UNSAFE_LAYOUT, SOURCE_DRIFT, ARTIFACT_CONFLICT, INVALID_JOURNAL, INTEGRITY_FAILURE)


class CheckpointError(Exception):
    """The legacy checkpoint step refused to continue; nothing unsafe was written."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True)
class CheckpointResult:
    status: str  # "not-needed" | "completed" | "already-complete"
    outcome: str | None = None  # "imported" | "no-import"
    target_work_id: str | None = None
    backup_id: str | None = None
    reason: str | None = None


# --- classification and the import decision -------------------------------------

CORRUPT_JSON = "corrupt-json"
UNSUPPORTED_OLDER = "unsupported-older"
UNSUPPORTED_NEWER = "unsupported-newer"
INVALID_SHAPE = "invalid-shape"
CLASSIFICATIONS = (
    CORRUPT_JSON, UNSUPPORTED_OLDER, UNSUPPORTED_NEWER, INVALID_SHAPE,
    "supported-active-v2", "supported-active-v3", "supported-inactive-v2",
    "supported-inactive-v3",
)
LIFECYCLE_STATUSES = ("active", "verified", "closed")

# GedPi gives each import decision a fixed sentence; the reference does not quote them,
# so these are GedWeb's wording (listed in docs/migration.md).
DECISION_REASONS = {
    "duplicate-logical-work-id": (
        "Several legacy checkpoints claim the same logical work ID, so none is imported."
    ),
    "unsupported-checkpoint": (
        "At least one legacy checkpoint is corrupt, of an unsupported schema version or "
        "malformed, so none is imported."
    ),
    "no-active-checkpoint": (
        "No legacy checkpoint is active, so there is no work to import."
    ),
    "several-active-checkpoints": (
        "Several legacy checkpoints are active, so the work to import is ambiguous and none "
        "is imported."
    ),
    "single-active-checkpoint": (
        "Exactly one supported legacy checkpoint is active, so it is imported as paused, "
        "untrusted work that needs a human decision."
    ),
}

DECISION_REASON_CODE = "decision-needed"
DECISION_REASON = "Legacy checkpoint state requires human review and cannot authorize current work."
EXECUTION_PROFILE = "solo"


def _nonblank(value: Any) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"JSON does not allow {name}")


def _loads(text: str) -> Any:
    # JSON.parse has no NaN or Infinity; Python's json would accept them.
    return json.loads(text, parse_constant=_reject_constant)


def _is_object_of_objects(value: Any, *, nonblank_keys: bool = False) -> bool:
    return isinstance(value, dict) and all(
        isinstance(item, dict) and (not nonblank_keys or _nonblank(key))
        for key, item in value.items()
    )


def _valid_envelope(record: Mapping[str, Any], version: int) -> bool:
    if record.get("classification") not in ("trivial", "non-trivial"):
        return False
    if not _nonblank(record.get("classificationReason")):
        return False
    if not _is_object_of_objects(record.get("planCheckpoints")):
        return False
    tasks = record.get("taskCheckpoints")
    if not isinstance(tasks, dict) or not all(
        _nonblank(task_id) and _is_object_of_objects(slices, nonblank_keys=True)
        for task_id, slices in tasks.items()
    ):
        return False
    if "workerRuns" in record:
        runs = record["workerRuns"]
        if not isinstance(runs, list) or not all(isinstance(run, dict) for run in runs):
            return False
    if "lifecycleStatus" in record:
        return record["lifecycleStatus"] in LIFECYCLE_STATUSES
    return version == 2  # v2 defaults to active; v3 must state it


def classify(data: bytes) -> str:
    """The §6.9 class of one checkpoints.json, from its bytes alone."""
    try:
        # Node decodes files leniently, so a stray invalid byte inside a string still parses.
        record = _loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return CORRUPT_JSON
    if not isinstance(record, dict):
        return UNSUPPORTED_OLDER
    version = record.get("schemaVersion")
    if isinstance(version, float) and version.is_integer():
        version = int(version)  # JSON has one number type: 2.0 is the integer 2
    if isinstance(version, bool) or not isinstance(version, int) or version < 2:
        return UNSUPPORTED_OLDER
    if version > 3:
        return UNSUPPORTED_NEWER
    if not _valid_envelope(record, version):
        return INVALID_SHAPE
    status = record.get("lifecycleStatus", "active")
    return f"supported-{'active' if status == 'active' else 'inactive'}-v{version}"


def logical_work_id(meta: bytes | None, slug: str) -> str:
    """The legacy META ``workId`` when it parses and is non-blank, otherwise the slug."""
    if meta is None:
        return slug
    try:
        record = _loads(meta.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return slug
    if isinstance(record, dict) and _nonblank(record.get("workId")):
        return record["workId"]
    return slug


def candidate_id(checkpoint_path: str) -> str:
    return "legacy-" + safefs.sha256_hex(checkpoint_path.encode("utf-8"))[:20]


def decide(candidates: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The import decision: at most one candidate, and only when nothing is doubtful."""
    chosen: str | None = None
    logical = [c["logicalWorkId"] for c in candidates]
    active = [c for c in candidates if c["classification"].startswith("supported-active-")]
    if len(set(logical)) != len(logical):
        code = "duplicate-logical-work-id"
    elif not all(c["classification"].startswith("supported-") for c in candidates):
        code = "unsupported-checkpoint"
    elif not active:
        code = "no-active-checkpoint"
    elif len(active) > 1:
        code = "several-active-checkpoints"
    else:
        code = "single-active-checkpoint"
        chosen = active[0]["candidateId"]
    return {
        "outcome": "import" if chosen else "no-import",
        "reasonCode": code,
        "reason": DECISION_REASONS[code],
        "candidateId": chosen,
    }


# --- byte formats -------------------------------------------------------------------


def pretty_json(value: Any) -> bytes:
    """GedPi's JSON.stringify(value, null, 2) + newline."""
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _parse_time(text: str) -> datetime:
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
        target_summary(chosen["checkpointPath"]), _parse_time(created_at), digest[:32]
    )
    return work_id, "legacy-migration-" + digest[:24]


def _marker(plan: Mapping[str, Any], name: str) -> bytes:
    body: dict[str, Any] = {
        "schemaVersion": 1,
        "migrationId": plan["migrationId"],
        "phase": MARKER_PHASES[name],
        "backupId": plan["backupId"],
    }
    if name != BACKUP_COMPLETE:
        body["targetWorkId"] = plan["targetWorkId"]
    if name in (IMPORT_COMPLETE, COMPLETE):
        body["outcome"] = _outcome(plan)
    body["recordedAt"] = plan["createdAt"]
    return pretty_json(body)


def _outcome(plan: Mapping[str, Any]) -> str:
    return "imported" if plan["importDecision"]["outcome"] == "import" else "no-import"


def _expected_markers(plan: Mapping[str, Any]) -> tuple[str, ...]:
    if plan["importDecision"]["outcome"] == "import":
        return MARKERS
    return (BACKUP_COMPLETE, IMPORT_COMPLETE, COMPLETE)


# --- discovery ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Source:
    sha256: str
    size: int
    candidate_ids: tuple[str, ...]


@dataclass(frozen=True)
class _Inventory:
    candidates: list[dict[str, Any]]
    files: dict[str, _Source]


def _unsafe(exc: safefs.UnsafePath) -> CheckpointError:
    return CheckpointError(UNSAFE_LAYOUT, str(exc))


def _kind(root: Path, rel: str) -> str | None:
    """"dir", "file" or None; symlinks and special files raise UnsafePath (§9.2)."""
    path = safefs.check(root, rel)  # lstat walk: every component is a real dir or file
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    return "dir" if stat.S_ISDIR(mode) else "file"


def _runtime_entries(root: Path) -> tuple[list[str], list[str]]:
    """(regular files, directories) directly in .ged/runtime; anything else is unsafe."""
    files: list[str] = []
    dirs: list[str] = []
    if _kind(root, RUNTIME) != "dir":
        return files, dirs
    with os.scandir(root / RUNTIME) as entries:
        for entry in entries:
            mode = entry.stat(follow_symlinks=False).st_mode
            rel = f"{RUNTIME}/{entry.name}"
            if stat.S_ISLNK(mode):
                raise safefs.UnsafePath(f"Read source traverses a symbolic link: {rel}")
            if stat.S_ISDIR(mode):
                dirs.append(entry.name)
            elif stat.S_ISREG(mode):
                files.append(entry.name)
            else:
                raise safefs.UnsafePath(f"Read source is not a regular file or directory: {rel}")
    return sorted(files), sorted(dirs)


def _is_current_generated_runtime(root: Path, name: str) -> bool:
    if not governance.is_work_id(name):
        return False
    meta_path = f"{WORK}/{name}/META.json"
    if _kind(root, meta_path) != "file":
        return False
    data = safefs.read_bytes(root, meta_path)
    try:
        meta = _loads((data or b"").decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(meta, dict)
        and meta.get("schemaVersion") == 1
        and not isinstance(meta.get("schemaVersion"), bool)
        and meta.get("workId") == name
        and _nonblank(meta.get("summary"))
        and governance.is_canonical_time(meta.get("createdAt"))
    )


def _walk(root: Path, rel_dir: str) -> list[str]:
    return list(safefs.walk_files(root, rel_dir))


def _discover(root: Path) -> _Inventory:
    """The candidates and their source sets, exactly as §6.9 lists them."""
    direct_files, dirs = _runtime_entries(root)
    generated = {name for name in dirs if _is_current_generated_runtime(root, name)}
    branches: list[str] = []
    for name in dirs:
        if name == "migrations" or name in generated:
            continue
        kind = _kind(root, f"{RUNTIME}/{name}/{CHECKPOINT_NAME}")
        if kind == "dir":
            raise safefs.UnsafePath(
                f"Read source is not a regular file: {RUNTIME}/{name}/{CHECKPOINT_NAME}"
            )
        if kind == "file":
            branches.append(name)

    claims: dict[str, set[str]] = {}
    slugs: dict[str, str] = {}  # checkpoint path -> slug

    def claim(paths: list[str], cid: str) -> None:
        for path in paths:
            try:
                path.encode("utf-8")
            except UnicodeEncodeError:
                # PLAN.json could not record it faithfully, so it could not be backed up.
                raise safefs.UnsafePath(
                    f"Read source has a name that is not UTF-8: {path!r}"
                ) from None
            claims.setdefault(path, set()).add(cid)

    for name in branches:
        checkpoint = f"{RUNTIME}/{name}/{CHECKPOINT_NAME}"
        slugs[checkpoint] = name
        cid = candidate_id(checkpoint)
        claim(_walk(root, f"{RUNTIME}/{name}"), cid)
        claim(_walk(root, f"{WORK}/{name}"), cid)
    if CHECKPOINT_NAME in direct_files:
        slugs[ROOT_CHECKPOINT] = ROOT_SLUG
        cid = candidate_id(ROOT_CHECKPOINT)
        claim([f"{RUNTIME}/{name}" for name in direct_files], cid)
        claim(_walk(root, f"{WORK}/{ROOT_SLUG}"), cid)
        for name in dirs:
            if name in UNCLAIMED_RUNTIME_DIRS or name in generated or name in branches:
                continue
            claim(_walk(root, f"{RUNTIME}/{name}"), cid)

    contents: dict[str, bytes] = {}
    files: dict[str, _Source] = {}
    for path in sorted(claims):
        data = safefs.read_bytes(root, path)
        if data is None:
            raise CheckpointError(SOURCE_DRIFT, f"Legacy file vanished during discovery: {path}")
        contents[path] = data
        files[path] = _Source(safefs.sha256_hex(data), len(data), tuple(sorted(claims[path])))

    candidates = [
        _candidate(checkpoint, slug, contents[checkpoint],
                   contents.get(f"{WORK}/{slug}/META.json"))
        for checkpoint, slug in sorted(slugs.items())
    ]
    return _Inventory(candidates, files)


def _candidate(checkpoint: str, slug: str, data: bytes, meta: bytes | None) -> dict[str, Any]:
    return {
        "candidateId": candidate_id(checkpoint),
        "checkpointPath": checkpoint,
        "slug": slug,
        "logicalWorkId": logical_work_id(meta, slug),
        "classification": classify(data),
    }


def _manifest(inventory: _Inventory, backup_id: str) -> list[dict[str, Any]]:
    return [
        {
            "sourcePath": path,
            "backupPath": backup_path_for(backup_id, path),
            "sha256": source.sha256,
            "size": source.size,
            "candidateIds": list(source.candidate_ids),
        }
        for path, source in sorted(inventory.files.items())
    ]


def _build_plan(inventory: _Inventory, now: datetime) -> dict[str, Any]:
    migration_id = str(uuid.uuid4())
    created_at = governance.format_time(now)
    backup_id = backup_id_for(created_at, migration_id)
    decision = decide(inventory.candidates)
    target_work_id = evidence_id = None
    if decision["candidateId"] is not None:
        chosen = next(c for c in inventory.candidates
                      if c["candidateId"] == decision["candidateId"])
        target_work_id, evidence_id = target_ids(migration_id, created_at, chosen)
    return {
        "schemaVersion": 1,
        "migrationId": migration_id,
        "createdAt": created_at,
        "backupId": backup_id,
        "candidates": inventory.candidates,
        "manifest": _manifest(inventory, backup_id),
        "importDecision": decision,
        "targetWorkId": target_work_id,
        "evidenceId": evidence_id,
    }


# --- PLAN.json validation (structural and semantic) --------------------------------------

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
    if not _nonblank(item["logicalWorkId"]):
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
        plan = _loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _journal_error("it is not valid JSON") from None
    _exact_keys(plan, PLAN_KEYS, "PLAN.json")
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


def _read_plan(root: Path) -> dict[str, Any] | None:
    data = safefs.read_bytes(root, PLAN_PATH)
    return None if data is None else validate_plan(data)


def _present_markers(root: Path, plan: Mapping[str, Any]) -> list[str]:
    """The markers present, which must be an exact, unskipped prefix of the expected run."""
    expected = _expected_markers(plan)
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
        if safefs.read_bytes(root, f"{MIGRATION_DIR}/{name}") != _marker(plan, name):
            raise CheckpointError(
                INVALID_JOURNAL, f"{MIGRATION_DIR}/{name} contradicts PLAN.json"
            )
    return present


def _journal_leftovers(root: Path) -> list[str]:
    """Files in the migration directory other than crash temporaries (used without a PLAN)."""
    if _kind(root, MIGRATION_DIR) is None:
        return []
    return [path for path in _walk(root, MIGRATION_DIR)
            if not PurePosixPath(path).name.startswith(".gedweb-tmp-")]


# --- backups -------------------------------------------------------------------------------


def _plan_view(candidates: list[dict[str, Any]], manifest: list[dict[str, Any]]) -> Any:
    return candidates, [{k: v for k, v in m.items() if k != "backupPath"} for m in manifest]


def _check_inventory(root: Path, plan: Mapping[str, Any]) -> None:
    inventory = _discover(root)
    current = _plan_view(inventory.candidates, _manifest(inventory, plan["backupId"]))
    if current != _plan_view(plan["candidates"], plan["manifest"]):
        raise CheckpointError(
            SOURCE_DRIFT,
            "Legacy checkpoint sources changed after PLAN.json was written; restore them or "
            f"remove the unfinished {MIGRATION_DIR} (nothing was imported yet).",
        )


def _backup(root: Path, plan: Mapping[str, Any]) -> None:
    for entry in plan["manifest"]:
        data = safefs.read_bytes(root, entry["sourcePath"])
        if data is None or len(data) != entry["size"] or safefs.sha256_hex(data) != entry["sha256"]:
            raise CheckpointError(
                SOURCE_DRIFT, f"Legacy file changed after planning: {entry['sourcePath']}"
            )
        if not safefs.publish_exclusive(root, entry["backupPath"], data):
            if safefs.read_bytes(root, entry["backupPath"]) != data:
                raise CheckpointError(
                    ARTIFACT_CONFLICT,
                    f"A different file already exists at backup path {entry['backupPath']}",
                )
        failpoint("checkpoints.backup-file")


def _backup_problems(root: Path, plan: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    contents: dict[str, bytes] = {}
    for entry in plan["manifest"]:
        data = safefs.read_bytes(root, entry["backupPath"])
        if data is None:
            problems.append(f"Backup {entry['backupPath']} is missing.")
        elif len(data) != entry["size"] or safefs.sha256_hex(data) != entry["sha256"]:
            problems.append(f"Backup {entry['backupPath']} does not match its recorded hash.")
        else:
            contents[entry["sourcePath"]] = data
    source_dir = f"{BACKUPS_DIR}/{plan['backupId']}/source"
    planned = {entry["backupPath"] for entry in plan["manifest"]}
    for path in _walk(root, source_dir):
        if path not in planned and not PurePosixPath(path).name.startswith(".gedweb-tmp-"):
            problems.append(f"Backup directory holds an unplanned file: {path}")
    for candidate in plan["candidates"]:
        data = contents.get(candidate["checkpointPath"])
        if data is None:
            continue
        if classify(data) != candidate["classification"]:
            problems.append(
                f"Backup of {candidate['checkpointPath']} no longer classifies as "
                f"{candidate['classification']}."
            )
        meta = f"{WORK}/{candidate['slug']}/META.json"
        meta_planned = any(m["sourcePath"] == meta for m in plan["manifest"])
        if meta_planned and meta not in contents:
            continue  # already reported as a missing or altered backup
        if logical_work_id(contents.get(meta), candidate["slug"]) != candidate["logicalWorkId"]:
            problems.append(
                f"Backup of {candidate['checkpointPath']} no longer has logical work ID "
                f"{candidate['logicalWorkId']}."
            )
    return problems


def _verify_backups(root: Path, plan: Mapping[str, Any]) -> None:
    problems = _backup_problems(root, plan)
    if problems:
        raise CheckpointError(INTEGRITY_FAILURE, " ".join(problems))


# --- the imported target --------------------------------------------------------------------


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
        now=_parse_time(plan["createdAt"]),
        lifecycle="paused",
        evidence=[record],
    )


def _governance_matches(data: bytes, plan: Mapping[str, Any]) -> bool:
    """Exact bytes, except that the repository ids are whatever 64-hex the import recorded.

    The ids hash the checkout's location, so a moved checkout must not turn a faithful
    import into an integrity failure.
    """
    try:
        stored = _loads(data.decode("utf-8"))
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


def _create_target(root: Path, plan: Mapping[str, Any]) -> None:
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
    projection = governance.render_state_md(_loads(stored.decode("utf-8")))
    _publish(root, paths["STATE.md"], projection.encode("utf-8"))


def _target_problems(root: Path, plan: Mapping[str, Any]) -> list[str]:
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
        projection = governance.render_state_md(_loads(state_bytes.decode("utf-8")))
        current = safefs.read_bytes(root, paths["STATE.md"])
        if current is None:
            problems.append(f"Imported work {target} is missing {paths['STATE.md']}.")
        elif current != projection.encode("utf-8"):
            problems.append(f"Imported work {target} has an altered {paths['STATE.md']}.")
    if _kind(root, f"{RUNTIME}/{target}/{CHECKPOINT_NAME}") is not None:
        problems.append(f"Imported work {target} has a {CHECKPOINT_NAME} in its runtime directory.")
    for pointer in safefs.walk_files(root, f"{RUNTIME}/active-work", recursive=False,
                                     skip_symlinks=True):
        try:
            selected = _loads((safefs.read_bytes(root, pointer) or b"").decode("utf-8"))
        except (ValueError, RecursionError):
            continue
        if isinstance(selected, dict) and selected.get("workId") == target:
            problems.append(f"Active-work pointer {pointer} selects imported work {target}.")
    return problems


def _verify_target(root: Path, plan: Mapping[str, Any]) -> None:
    problems = _target_problems(root, plan)
    if problems:
        raise CheckpointError(INTEGRITY_FAILURE, " ".join(problems))


# --- the run -------------------------------------------------------------------------------


def _result(plan: Mapping[str, Any], status: str) -> CheckpointResult:
    return CheckpointResult(
        status=status,
        outcome=_outcome(plan),
        target_work_id=plan["targetWorkId"],
        backup_id=plan["backupId"],
        reason=plan["importDecision"]["reason"],
    )


def _publish_marker(root: Path, plan: Mapping[str, Any], name: str) -> None:
    rel = f"{MIGRATION_DIR}/{name}"
    data = _marker(plan, name)
    if not safefs.publish_exclusive(root, rel, data) and safefs.read_bytes(root, rel) != data:
        raise CheckpointError(INVALID_JOURNAL, f"{rel} contradicts PLAN.json")


def _run(root: Path, now: datetime | None) -> CheckpointResult:
    data = safefs.read_bytes(root, PLAN_PATH)
    if data is None:
        leftovers = _journal_leftovers(root)
        if leftovers:
            raise CheckpointError(
                INVALID_JOURNAL,
                f"{MIGRATION_DIR} has journal files but no PLAN.json: {', '.join(leftovers)}",
            )
        inventory = _discover(root)
        if not inventory.candidates:
            return CheckpointResult(status="not-needed")
        plan = _build_plan(inventory, now or datetime.now(UTC))
        # Exclusive publication: a concurrent run that lost the race adopts the winner's plan.
        if not safefs.publish_exclusive(root, PLAN_PATH, pretty_json(plan)):
            plan = _read_plan(root)
        failpoint("checkpoints.plan")
    else:
        plan = validate_plan(data)
    assert plan is not None

    present = _present_markers(root, plan)
    if COMPLETE in present:
        _verify_backups(root, plan)
        if plan["targetWorkId"] is not None:
            _verify_target(root, plan)
        return _result(plan, "already-complete")

    if BACKUP_COMPLETE not in present:
        _check_inventory(root, plan)
        _backup(root, plan)
    _verify_backups(root, plan)
    _publish_marker(root, plan, BACKUP_COMPLETE)
    failpoint("checkpoints.backup-complete")

    if plan["targetWorkId"] is not None:
        if IMPORT_COMPLETE in present:
            _verify_target(root, plan)  # a completed target must still be there
        else:
            _publish_marker(root, plan, IMPORT_STARTED)
            failpoint("checkpoints.import-started")
            _create_target(root, plan)
            _verify_target(root, plan)
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
        raise _unsafe(exc) from None


# --- read-only views ------------------------------------------------------------------------


def plan_legacy_checkpoints(root: Path) -> list[str]:
    """What a run would do, as lines for ``--dry-run``. Writes nothing.

    Raises CheckpointError where a run would stop before writing (unsafe layout, invalid
    journal).
    """
    root = Path(root)
    try:
        data = safefs.read_bytes(root, PLAN_PATH)
        if data is None:
            leftovers = _journal_leftovers(root)
            if leftovers:
                raise CheckpointError(
                    INVALID_JOURNAL,
                    f"{MIGRATION_DIR} has journal files but no PLAN.json: {', '.join(leftovers)}",
                )
            return _describe_fresh(_discover(root))
        plan = validate_plan(data)
        present = _present_markers(root, plan)
    except safefs.UnsafePath as exc:
        raise _unsafe(exc) from None
    outcome = _outcome(plan)
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


def _describe_fresh(inventory: _Inventory) -> list[str]:
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
        leftovers = _journal_leftovers(root)
        if leftovers:
            return [f"{INVALID_JOURNAL}: {MIGRATION_DIR} has journal files but no PLAN.json."]
        inventory = _discover(root)
        if inventory.candidates:
            return [f"Legacy checkpoints found but not yet backed up: "
                    f"{', '.join(c['checkpointPath'] for c in inventory.candidates)}; run "
                    "ged_migrate_v3."]
        return []
    plan = validate_plan(data)
    present = _present_markers(root, plan)
    problems: list[str] = []
    if COMPLETE not in present:
        last = present[-1] if present else "PLAN.json"
        problems.append(
            f"Legacy checkpoint migration {plan['migrationId']} is unfinished (last step: "
            f"{last}); rerun ged_migrate_v3 to resume it."
        )
    problems.extend(f"{INTEGRITY_FAILURE}: {p}" for p in _backup_problems(root, plan)
                    if BACKUP_COMPLETE in present)
    if plan["targetWorkId"] is not None and IMPORT_COMPLETE in present:
        problems.extend(f"{INTEGRITY_FAILURE}: {p}" for p in _target_problems(root, plan))
    return problems
