"""Which legacy checkpoint may be imported, and as what (GedPi's decision); pure."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from gedweb.checkout import safefs

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

DECISION_REASON_CODE: Final = "decision-needed"
DECISION_REASON = "Legacy checkpoint state requires human review and cannot authorize current work."
EXECUTION_PROFILE = "solo"


def is_nonblank(value: Any) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"JSON does not allow {name}")


def loads_json(text: str) -> Any:
    # JSON.parse has no NaN or Infinity; Python's json would accept them.
    return json.loads(text, parse_constant=_reject_constant)


def _is_object_of_objects(value: Any, *, nonblank_keys: bool = False) -> bool:
    return isinstance(value, dict) and all(
        isinstance(item, dict) and (not nonblank_keys or is_nonblank(key))
        for key, item in value.items()
    )


def _valid_envelope(record: Mapping[str, Any], version: int) -> bool:
    if record.get("classification") not in ("trivial", "non-trivial"):
        return False
    if not is_nonblank(record.get("classificationReason")):
        return False
    if not _is_object_of_objects(record.get("planCheckpoints")):
        return False
    tasks = record.get("taskCheckpoints")
    if not isinstance(tasks, dict) or not all(
        is_nonblank(task_id) and _is_object_of_objects(slices, nonblank_keys=True)
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
        record = loads_json(data.decode("utf-8", errors="replace"))
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
        record = loads_json(meta.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return slug
    if isinstance(record, dict) and is_nonblank(record.get("workId")):
        work_id: str = record["workId"]  # is_nonblank holds only for a str
        return work_id
    return slug


def candidate_id(checkpoint_path: str) -> str:
    return "legacy-" + safefs.sha256_hex(checkpoint_path.encode("utf-8"))[:20]


def decide(candidates: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
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
