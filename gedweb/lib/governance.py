"""GedPi's governance store rules as pure functions (gedpi-behaviour.md §2, §7).

A governance document is the dict GedPi keeps in governance.json. Every
operation here takes the current document and returns the next one (with
revision + 1) or raises GovernanceError with GedPi's error code. Nothing
here touches storage: the Django service decides where documents live and
how writers are serialised.
"""

from __future__ import annotations

import copy
import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

# WORK_ID_RE is named here for the checkout engine (gedpi_v3), which reads it from this module.
from gedweb.lib.ids import WORK_ID_RE as WORK_ID_RE
from gedweb.lib.ids import is_work_id

SCHEMA_VERSION = 1

# --- error codes ------------------------------------------------------------

MISSING = "missing"
ALREADY_EXISTS = "already-exists"
INVALID_STATE = "invalid-state"
STALE_REVISION = "stale-revision"
DUPLICATE_EVIDENCE = "duplicate-evidence"
GOVERNANCE_BLOCKED = "governance-blocked"


class GovernanceError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _invalid(message: str) -> GovernanceError:
    return GovernanceError(INVALID_STATE, message)


# --- vocabularies -----------------------------------------------------------

MODES = ("read-only", "direct-change", "planned-change")
EXECUTION_PROFILES = ("solo", "assisted", "coordinated", "high-stakes")
LIFECYCLES = ("active", "paused", "completed", "abandoned", "superseded")
TERMINAL_LIFECYCLES = ("completed", "abandoned", "superseded")
EVIDENCE_KINDS = (
    "inspection",
    "plan",
    "implementation",
    "verification",
    "milestone",
    "approval",
    "migration-required",
)
EVIDENCE_SOURCES = ("human", "runtime", "agent")
EVIDENCE_OUTCOMES = ("observed", "satisfied", "failed")
APPROVAL_KINDS = ("plan", "mutation", "completion")
APPROVAL_STATUSES = ("pending", "approved", "rejected")
GUARD_ACTIONS = ("metadata-mutation", "source-mutation", "commit")
MINIMUM_MODES = ("direct-change", "planned-change")
AMBIGUITIES = ("sufficient", "decision-needed")
RISKS = ("low", "normal", "high")

# Each reason code implies one mode. GedPi gives every code a fixed sentence;
# the reference does not quote them, so these are GedWeb's own wording.
REASONS: dict[str, tuple[str, str]] = {
    "no-mutation-intent": (
        "read-only",
        "No mutation intent was stated, so the work may only read.",
    ),
    "decision-needed": (
        "planned-change",
        "The request is ambiguous and needs a user-owned decision before any change.",
    ),
    "user-requested-plan": (
        "planned-change",
        "The user asked for planned-change as the minimum mode.",
    ),
    "high-risk": (
        "planned-change",
        "The change is high risk, so it must be planned before it is made.",
    ),
    "coordinator-escalation": (
        "planned-change",
        "The coordinator escalated the work to a planned change.",
    ),
    "direct-change-eligible": (
        "direct-change",
        "The scope is clear, bounded and reversible, and a deterministic check exists.",
    ),
    "direct-change-ineligible": (
        "planned-change",
        "The change is not clearly scoped, bounded, reversible and deterministically "
        "checkable, so it must be planned.",
    ),
}

# --- time, ids and text -------------------------------------------------------

_CANONICAL_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_HEX40_64 = re.compile(r"^[0-9a-f]{40,64}$")
_ENTROPY_RE = re.compile(r"^[a-f0-9]{32}$")
MAX_SUMMARY_CHARS = 240
MAX_REASON_CHARS = 500


def format_time(moment: datetime) -> str:
    """GedPi's canonical time: ISO-8601 UTC with milliseconds and a Z."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def is_canonical_time(value: Any) -> bool:
    if not isinstance(value, str) or not _CANONICAL_TIME.match(value):
        return False
    try:
        parsed = datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return False
    return format_time(parsed) == value


def normalize_summary(text: str) -> str:
    """Control characters become spaces, whitespace collapses, cut to 240 characters."""
    cleaned = "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in text)
    collapsed = " ".join(cleaned.split())
    return collapsed[:MAX_SUMMARY_CHARS].strip()


def normalize_reason(text: str) -> str:
    return " ".join(text.split())


def work_slug(summary: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", summary.strip().lower())
    slug = re.sub(r"-+", "-", slug).strip("-")
    slug = slug[:48].rstrip("-")
    return slug or "work"


def work_id_for(summary: str, moment: datetime, entropy: str) -> str:
    """``<slug>-<17-digit UTC timestamp>-<32 hex>``; ids sort by creation time."""
    if not _ENTROPY_RE.match(entropy):
        raise ValueError("work id entropy must be exactly 32 lowercase hex characters")
    stamp = re.sub(r"[-:.TZ]", "", format_time(moment))
    return f"{work_slug(summary)}-{stamp}-{entropy}"


# --- mode resolution (§2.10) -------------------------------------------------


def resolve_mode(
    *,
    mutation_intent: bool = True,
    minimum_mode: str,
    ambiguity: str,
    risk: str,
    clear_scope: bool,
    bounded: bool,
    reversible: bool,
    deterministic_check: bool,
    escalation_reason: str | None = None,
) -> dict[str, Any]:
    """GedPi's precedence, first match wins."""
    if not mutation_intent:
        code = "no-mutation-intent"
    elif ambiguity == "decision-needed":
        code = "decision-needed"
    elif minimum_mode == "planned-change":
        code = "user-requested-plan"
    elif risk == "high":
        code = "high-risk"
    elif escalation_reason is not None:
        code = "coordinator-escalation"
    elif clear_scope and bounded and reversible and deterministic_check:
        code = "direct-change-eligible"
    else:
        code = "direct-change-ineligible"
    mode, reason = REASONS[code]
    if code == "coordinator-escalation" and escalation_reason and escalation_reason.strip():
        reason = f"The coordinator escalated the work to a planned change: {escalation_reason.strip()}"
    return {
        "mode": mode,
        "reasonCode": code,
        "reason": reason,
        "requiresDecision": code == "decision-needed",
    }


# --- templates (Appendix A) ---------------------------------------------------

SPEC_TEMPLATE = "# Spec\n\n## Problem\n\n## Solution shape\n\n## Key workflows\n\n## Risks\n\n## Open questions\n"
TASKS_TEMPLATE = (
    "# Tasks\n\n## Task slices\n\n| ID | Title | Depends On | Status | Done Criteria |\n"
    "| --- | --- | --- | --- | --- |\n"
)
TESTS_TEMPLATE = (
    "# Tests\n\n## Project-wide checks\n\n-\n\n## Task-specific checks\n\n-\n\n## Retry policy\n\n"
    "- Implementation retries before the plan must be tightened: 2\n\n## Recovery rule\n\n"
    "- If the same slice fails repeatedly, rewrite the slice, clarify the spec, and retry with a "
    "narrower plan.\n"
)
PLANNED_TEMPLATES = {"SPEC.md": SPEC_TEMPLATE, "TASKS.md": TASKS_TEMPLATE, "TESTS.md": TESTS_TEMPLATE}


def render_direct_md(work_id: str, summary: str, decision: Mapping[str, Any],
                     deterministic_check: bool) -> str:
    return (
        "# Direct change\n"
        "\n"
        f"- Work ID: {work_id}\n"
        f"- Scope: {summary.strip()}\n"
        f"- Governance: {decision['reason']}\n"
        f"- Deterministic check available: {'yes' if deterministic_check else 'no'}\n"
    )


# --- validation ----------------------------------------------------------------

STATE_KEYS = {
    "schemaVersion", "revision", "workId", "summary", "repository", "createdAt", "updatedAt",
    "currentSlice", "decision", "executionProfile", "approvals", "evidence",
    "pendingMutations", "pendingCommits", "lifecycleTransitions", "contentBaseline", "lifecycle",
}
REQUIRED_STATE_KEYS = STATE_KEYS - {
    "pendingMutations", "pendingCommits", "lifecycleTransitions", "contentBaseline",
}
IMMUTABLE_KEYS = (
    "workId", "schemaVersion", "createdAt", "summary", "contentBaseline", "lifecycle",
    "lifecycleTransitions", "repository",
)
CAS_KEYS = ("currentSlice", "decision", "executionProfile", "approvals")


def _nonblank(value: Any) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _strict_keys(value: Any, required: set[str], optional: set[str], what: str) -> dict:
    if not isinstance(value, dict):
        raise _invalid(f"{what} must be an object")
    keys = set(value)
    missing = required - keys
    unknown = keys - required - optional
    if missing:
        raise _invalid(f"{what} is missing {', '.join(sorted(missing))}")
    if unknown:
        raise _invalid(f"{what} has unknown keys {', '.join(sorted(unknown))}")
    return value


def _unique_strings(value: Any, what: str, allow_empty: bool = True) -> None:
    if not isinstance(value, list) or not all(_nonblank(v) for v in value):
        raise _invalid(f"{what} must be a list of non-blank strings")
    if len(set(value)) != len(value):
        raise _invalid(f"{what} must not repeat entries")
    if not allow_empty and not value:
        raise _invalid(f"{what} must not be empty")


def _is_safe_int(value: Any, minimum: int = 0) -> bool:
    return (
        isinstance(value, int) and not isinstance(value, bool)
        and minimum <= value <= 2**53 - 1
    )


def _check_hex(value: Any, pattern: re.Pattern[str], what: str, nullable: bool = False) -> None:
    if value is None and nullable:
        return
    if not isinstance(value, str) or not pattern.match(value):
        raise _invalid(f"{what} must be {'null or ' if nullable else ''}lowercase hex")


def validate_decision(decision: Any) -> None:
    _strict_keys(decision, {"mode", "reasonCode", "reason", "requiresDecision"}, set(), "decision")
    if decision["mode"] not in MODES:
        raise _invalid("decision.mode is not a known mode")
    if decision["reasonCode"] not in REASONS:
        raise _invalid("decision.reasonCode is not a known reason code")
    if REASONS[decision["reasonCode"]][0] != decision["mode"]:
        raise _invalid("decision.mode does not match the mode its reasonCode implies")
    if not _nonblank(decision["reason"]):
        raise _invalid("decision.reason must not be blank")
    if not isinstance(decision["requiresDecision"], bool):
        raise _invalid("decision.requiresDecision must be a boolean")


def _validate_snapshot(snapshot: Any, what: str) -> None:
    # The snapshot's digests are recomputed by whoever captured the
    # repository; a service without the checkout can check only the shape.
    _strict_keys(
        snapshot,
        {"version", "repositoryRoot", "git", "head", "headTree", "indexTree", "stagedDigest",
         "unstagedDigest", "untrackedDigest", "stagedPaths", "unstagedPaths", "untrackedPaths",
         "paths", "digest"},
        set(),
        what,
    )
    if snapshot["version"] != 1:
        raise _invalid(f"{what}.version must be 1")
    if not isinstance(snapshot["git"], bool) or not _nonblank(snapshot["repositoryRoot"]):
        raise _invalid(f"{what} has an invalid repositoryRoot or git flag")
    for name in ("head", "headTree", "indexTree"):
        _check_hex(snapshot[name], _HEX40_64, f"{what}.{name}", nullable=True)
    for name in ("stagedDigest", "unstagedDigest", "untrackedDigest", "digest"):
        _check_hex(snapshot[name], _HEX64, f"{what}.{name}")
    for name in ("stagedPaths", "unstagedPaths", "untrackedPaths"):
        _unique_strings(snapshot[name], f"{what}.{name}")
    if not isinstance(snapshot["paths"], list):
        raise _invalid(f"{what}.paths must be a list")
    for entry in snapshot["paths"]:
        _strict_keys(entry, {"path", "indexDigest", "worktreeDigest"}, set(), f"{what}.paths[]")
        if not _nonblank(entry["path"]):
            raise _invalid(f"{what}.paths[].path must not be blank")
        _check_hex(entry["indexDigest"], _HEX64, f"{what}.paths[].indexDigest", nullable=True)
        _check_hex(entry["worktreeDigest"], _HEX64, f"{what}.paths[].worktreeDigest",
                   nullable=True)


def _validate_binding(binding: Any) -> None:
    if not isinstance(binding, dict) or "type" not in binding:
        raise _invalid("evidence binding must be an object with a type")
    kind = binding["type"]
    if kind == "plan-content":
        _strict_keys(binding, {"type", "digest", "paths"}, set(), "plan-content binding")
        _check_hex(binding["digest"], _HEX64, "plan-content digest")
        _unique_strings(binding["paths"], "plan-content paths")
    elif kind == "mutation-content":
        _strict_keys(binding, {"type", "beforeDigest", "afterDigest", "changedPaths"}, set(),
                     "mutation-content binding")
        _check_hex(binding["beforeDigest"], _HEX64, "mutation-content beforeDigest")
        _check_hex(binding["afterDigest"], _HEX64, "mutation-content afterDigest")
        if binding["beforeDigest"] == binding["afterDigest"]:
            raise _invalid("mutation-content digests must differ")
        _unique_strings(binding["changedPaths"], "mutation-content changedPaths")
    elif kind == "verification-content":
        _strict_keys(
            binding,
            {"type", "snapshot", "scopePaths", "commands", "environment", "residualRisks"},
            {"review"},
            "verification-content binding",
        )
        _validate_snapshot(binding["snapshot"], "verification snapshot")
        _unique_strings(binding["scopePaths"], "verification scopePaths")
        commands = binding["commands"]
        if not isinstance(commands, list) or not commands:
            raise _invalid("verification commands must be a non-empty list")
        for command in commands:
            _strict_keys(command, {"command", "args", "exitCode", "stdout", "stderr", "durationMs"},
                         set(), "verification command")
            if not _nonblank(command["command"]):
                raise _invalid("verification command must not be blank")
            if not isinstance(command["args"], list) or not all(
                isinstance(a, str) for a in command["args"]
            ):
                raise _invalid("verification command args must be strings")
            if not _is_safe_int(command["exitCode"], minimum=-(2**53 - 1)):
                raise _invalid("verification exitCode must be a safe integer")
            if not isinstance(command["stdout"], str) or not isinstance(command["stderr"], str):
                raise _invalid("verification stdout and stderr must be strings")
            duration = command["durationMs"]
            if isinstance(duration, bool) or not isinstance(duration, (int, float)) or not (
                0 <= duration < float("inf")
            ):
                raise _invalid("verification durationMs must be a finite number >= 0")
        environment = _strict_keys(binding["environment"], {"node", "platform", "arch"}, set(),
                                   "verification environment")
        if not all(_nonblank(v) for v in environment.values()):
            raise _invalid("verification environment values must not be blank")
        if "review" in binding:
            review = _strict_keys(binding["review"], {"outcome", "findings"}, set(), "review")
            if review["outcome"] not in ("clean", "findings"):
                raise _invalid("review outcome must be clean or findings")
            _unique_strings(review["findings"], "review findings")
        risks = binding["residualRisks"]
        if not isinstance(risks, list) or not all(isinstance(r, str) for r in risks) or len(
            set(risks)
        ) != len(risks):
            raise _invalid("residualRisks must be a list of unique strings")
    elif kind == "commit-milestone":
        _strict_keys(
            binding,
            {"type", "beforeHead", "afterHead", "committedTree", "verifiedSnapshotDigest"},
            set(),
            "commit-milestone binding",
        )
        _check_hex(binding["beforeHead"], _HEX40_64, "commit-milestone beforeHead", nullable=True)
        _check_hex(binding["afterHead"], _HEX40_64, "commit-milestone afterHead")
        if binding["afterHead"] == binding["beforeHead"]:
            raise _invalid("commit-milestone afterHead must differ from beforeHead")
        _check_hex(binding["committedTree"], _HEX40_64, "commit-milestone committedTree")
        _check_hex(binding["verifiedSnapshotDigest"], _HEX64,
                   "commit-milestone verifiedSnapshotDigest")
    else:
        raise _invalid(f"unknown evidence binding type {kind!r}")


def validate_evidence(record: Any) -> None:
    _strict_keys(record, {"id", "kind", "source", "recordedAt", "summary", "outcome"},
                 {"producerId", "binding"}, "evidence record")
    if not _nonblank(record["id"]):
        raise _invalid("evidence id must not be blank")
    if record["kind"] not in EVIDENCE_KINDS:
        raise _invalid("evidence kind is not known")
    if record["source"] not in EVIDENCE_SOURCES:
        raise _invalid("evidence source must be human, runtime or agent")
    if "producerId" in record and not _nonblank(record["producerId"]):
        raise _invalid("evidence producerId must not be blank when present")
    if not is_canonical_time(record["recordedAt"]):
        raise _invalid("evidence recordedAt must be a canonical UTC time")
    if not _nonblank(record["summary"]):
        raise _invalid("evidence summary must not be blank")
    if record["outcome"] not in EVIDENCE_OUTCOMES:
        raise _invalid("evidence outcome must be observed, satisfied or failed")
    if "binding" in record:
        _validate_binding(record["binding"])
    if record["kind"] == "milestone" and (
        record["outcome"] != "observed"
        or record.get("binding", {}).get("type") != "commit-milestone"
    ):
        raise _invalid("a milestone needs outcome observed and a commit-milestone binding")


def validate_pending_mutation(item: Any) -> None:
    _strict_keys(item, {"id", "requestId", "toolCallId", "target", "startedAt"}, set(),
                 "pending mutation")
    if not all(_nonblank(item[k]) for k in ("id", "requestId", "toolCallId", "target")):
        raise _invalid("pending mutation fields must not be blank")
    if not is_canonical_time(item["startedAt"]):
        raise _invalid("pending mutation startedAt must be a canonical UTC time")


def validate_pending_commit(item: Any) -> None:
    _strict_keys(
        item,
        {"id", "requestId", "toolCallId", "beforeHead", "expectedTree", "unstagedDigest",
         "untrackedDigest", "verifiedSnapshotDigest", "startedAt"},
        set(),
        "pending commit",
    )
    if not all(_nonblank(item[k]) for k in ("id", "requestId", "toolCallId")):
        raise _invalid("pending commit ids must not be blank")
    _check_hex(item["beforeHead"], _HEX40_64, "pending commit beforeHead", nullable=True)
    _check_hex(item["expectedTree"], _HEX40_64, "pending commit expectedTree")
    for name in ("unstagedDigest", "untrackedDigest", "verifiedSnapshotDigest"):
        _check_hex(item[name], _HEX64, f"pending commit {name}")
    if not is_canonical_time(item["startedAt"]):
        raise _invalid("pending commit startedAt must be a canonical UTC time")


def _validate_approval(item: Any) -> None:
    _strict_keys(item, {"id", "kind", "status", "recordedAt", "summary"}, set(), "approval")
    if not _nonblank(item["id"]) or not _nonblank(item["summary"]):
        raise _invalid("approval id and summary must not be blank")
    if item["kind"] not in APPROVAL_KINDS or item["status"] not in APPROVAL_STATUSES:
        raise _invalid("approval kind or status is not known")
    if not is_canonical_time(item["recordedAt"]):
        raise _invalid("approval recordedAt must be a canonical UTC time")


def _validate_transition(item: Any) -> None:
    _strict_keys(item, {"id", "from", "to", "reason", "recordedAt"}, set(), "lifecycle transition")
    if item["from"] not in LIFECYCLES or item["to"] not in LIFECYCLES:
        raise _invalid("lifecycle transition names an unknown lifecycle")
    if not _nonblank(item["id"]) or not _nonblank(item["reason"]):
        raise _invalid("lifecycle transition id and reason must not be blank")
    if not is_canonical_time(item["recordedAt"]):
        raise _invalid("lifecycle transition recordedAt must be a canonical UTC time")


def _unique_ids(items: Sequence[Mapping[str, Any]], what: str) -> None:
    ids = [item["id"] for item in items]
    if len(set(ids)) != len(ids):
        raise _invalid(f"{what} ids must be unique")


ALLOWED_TRANSITIONS = {
    "active": ("paused", "completed", "abandoned", "superseded"),
    "paused": ("active", "completed", "abandoned", "superseded"),
}


def validate_state(state: Any, work_id: str | None = None) -> None:
    """GedPi's strict reader: every rule, every read and before every write."""
    _strict_keys(state, REQUIRED_STATE_KEYS, STATE_KEYS - REQUIRED_STATE_KEYS, "governance state")
    if state["schemaVersion"] != SCHEMA_VERSION or isinstance(state["schemaVersion"], bool):
        raise _invalid("governance schemaVersion must be 1")
    if not _is_safe_int(state["revision"]):
        raise _invalid("governance revision must be a safe integer >= 0")
    if not is_work_id(state["workId"]):
        raise _invalid("governance workId is not a generated work id")
    if work_id is not None and state["workId"] != work_id:
        raise _invalid("governance workId does not match the requested work item")
    if not _nonblank(state["summary"]):
        raise _invalid("governance summary must not be blank")
    repository = _strict_keys(state["repository"],
                              {"repositoryId", "worktreeId", "branch", "baseHead"}, set(),
                              "repository")
    _check_hex(repository["repositoryId"], _HEX64, "repositoryId")
    _check_hex(repository["worktreeId"], _HEX64, "worktreeId")
    for name in ("branch", "baseHead"):
        if repository[name] is not None and not isinstance(repository[name], str):
            raise _invalid(f"repository.{name} must be a string or null")
    for name in ("createdAt", "updatedAt"):
        if not is_canonical_time(state[name]):
            raise _invalid(f"governance {name} must be a canonical UTC time")
    if state["currentSlice"] is not None and not _nonblank(state["currentSlice"]):
        raise _invalid("currentSlice must be null or a non-blank string")
    validate_decision(state["decision"])
    if state["executionProfile"] not in EXECUTION_PROFILES:
        raise _invalid("executionProfile is not known")
    if state["lifecycle"] not in LIFECYCLES:
        raise _invalid("lifecycle is not known")
    for name, check in (
        ("approvals", _validate_approval),
        ("evidence", validate_evidence),
        ("pendingMutations", validate_pending_mutation),
        ("pendingCommits", validate_pending_commit),
        ("lifecycleTransitions", _validate_transition),
    ):
        items = state.get(name, [])
        if not isinstance(items, list):
            raise _invalid(f"{name} must be a list")
        for item in items:
            check(item)
        _unique_ids(items, name)
    if "contentBaseline" in state:
        _validate_snapshot(state["contentBaseline"], "contentBaseline")
    previous = None
    for transition in state.get("lifecycleTransitions", []):
        if previous is not None and transition["from"] != previous:
            raise _invalid("lifecycle transitions must form a contiguous chain")
        if transition["to"] not in ALLOWED_TRANSITIONS.get(transition["from"], ()):
            raise _invalid("lifecycle transition is not an allowed move")
        previous = transition["to"]
    if previous is not None and previous != state["lifecycle"]:
        raise _invalid("the last lifecycle transition must end at the current lifecycle")


# --- initial document ------------------------------------------------------------


def initial_state(
    *,
    work_id: str,
    summary: str,
    repository: Mapping[str, Any],
    decision: Mapping[str, Any],
    execution_profile: str,
    now: datetime,
    lifecycle: str = "active",
    evidence: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    stamp = format_time(now)
    state = {
        "schemaVersion": SCHEMA_VERSION,
        "revision": 0,
        "workId": work_id,
        "summary": summary,
        "repository": dict(repository),
        "createdAt": stamp,
        "updatedAt": stamp,
        "currentSlice": None,
        "decision": dict(decision),
        "executionProfile": execution_profile,
        "approvals": [],
        "evidence": [dict(e) for e in evidence],
        "pendingMutations": [],
        "pendingCommits": [],
        "lifecycleTransitions": [],
        "lifecycle": lifecycle,
    }
    validate_state(state, work_id)
    return state


# --- guard (§2.6) ---------------------------------------------------------------------


def _latest(evidence: Sequence[Mapping[str, Any]], kind: str) -> tuple[int, Mapping | None]:
    """The newest record of a kind by append order (never by recordedAt)."""
    for index in range(len(evidence) - 1, -1, -1):
        if evidence[index]["kind"] == kind:
            return index, evidence[index]
    return -1, None


def guard(state: Mapping[str, Any], action: str) -> str | None:
    """The first failing check's message, or None when the action is allowed."""
    work = f"Ged work {state['workId']}"
    evidence = state["evidence"]
    if state["lifecycle"] != "active":
        return (f"{work} has lifecycle {state['lifecycle']}; only active work can "
                "authorize mutation.")
    if any(e["kind"] == "migration-required" and e["outcome"] == "failed" for e in evidence):
        return f"{work} requires legacy migration review before it can authorize mutation."
    if state.get("pendingCommits"):
        return f"{work} has an unproven commit pending reconciliation."
    mode = state["decision"]["mode"]
    if mode == "read-only":
        return f"{work} is read-only and cannot authorize mutation."
    if state["decision"]["requiresDecision"]:
        return f"{work} still requires a user-owned decision before mutation."
    if mode == "planned-change" and action != "metadata-mutation":
        _, plan = _latest(evidence, "plan")
        if plan is None or plan["outcome"] != "satisfied":
            return f"{work} is planned-change work without satisfied plan evidence."
    if action == "commit":
        if state.get("pendingMutations"):
            return f"{work} has a source mutation pending durable completion evidence."
        verification_at, verification = _latest(evidence, "verification")
        implementation_at, _ = _latest(evidence, "implementation")
        if (
            verification is None
            or verification["outcome"] != "satisfied"
            or verification_at < implementation_at
        ):
            return (f"{work} has no satisfied verification evidence newer than its latest "
                    "implementation evidence.")
    return None


def plan_binding_reason(state: Mapping[str, Any], action: str,
                        current_fingerprint: Mapping[str, Any] | None) -> str | None:
    """GedPi's runtime plan-binding check, for plans accepted with a plan-content binding.

    current_fingerprint is the file-set fingerprint of the work item's SPEC,
    TASKS and TESTS as they are now.
    """
    if state["decision"]["mode"] != "planned-change" or action == "metadata-mutation":
        return None
    _, plan = _latest(state["evidence"], "plan")
    binding = (plan or {}).get("binding")
    if not binding or binding.get("type") != "plan-content" or current_fingerprint is None:
        return None
    if binding["digest"] != current_fingerprint["digest"]:
        return (f"Ged work {state['workId']} plan bytes changed after acceptance; accept the "
                "current plan again.")
    return None


def missing_state_reason(work_id: str) -> str:
    return f"Ged work {work_id} has no authoritative governance state."


# --- operations -------------------------------------------------------------------------


def _next(state: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    following = copy.deepcopy(dict(state))
    following["revision"] = state["revision"] + 1
    following["updatedAt"] = format_time(now)
    following.setdefault("pendingMutations", [])
    following.setdefault("pendingCommits", [])
    following.setdefault("lifecycleTransitions", [])
    return following


def _finish(state: dict[str, Any]) -> dict[str, Any]:
    validate_state(state)
    return state


def _blocked(message: str) -> GovernanceError:
    return GovernanceError(GOVERNANCE_BLOCKED, message)


def append_evidence(state: Mapping[str, Any], record: Mapping[str, Any],
                    now: datetime) -> dict[str, Any]:
    validate_evidence(record)
    if any(e["id"] == record["id"] for e in state["evidence"]):
        raise GovernanceError(DUPLICATE_EVIDENCE, f"Evidence {record['id']} already exists.")
    following = _next(state, now)
    following["evidence"].append(dict(record))
    return _finish(following)


def record_implementation(state: Mapping[str, Any], record: Mapping[str, Any],
                          now: datetime) -> dict[str, Any]:
    if record.get("kind") != "implementation" or record.get("outcome") != "observed":
        raise _invalid("record implementation needs kind implementation and outcome observed")
    reason = guard(state, "source-mutation")
    if reason:
        raise _blocked(reason)
    return append_evidence(state, record, now)


def record_satisfied(state: Mapping[str, Any], record: Mapping[str, Any],
                     now: datetime) -> dict[str, Any]:
    if record.get("kind") not in ("plan", "verification") or record.get("outcome") != "satisfied":
        raise _invalid("record satisfied needs kind plan or verification and outcome satisfied")
    reason = guard(state, "metadata-mutation")
    if reason:
        raise _blocked(reason)
    planned = state["decision"]["mode"] == "planned-change"
    if record["kind"] == "plan" and not planned:
        raise _blocked(
            f"Ged work {state['workId']}: plan evidence is only valid for planned-change work."
        )
    if record["kind"] == "verification" and planned:
        _, plan = _latest(state["evidence"], "plan")
        if plan is None or plan["outcome"] != "satisfied":
            raise _blocked(
                f"Ged work {state['workId']}: planned-change verification requires satisfied "
                "plan evidence first."
            )
    return append_evidence(state, record, now)


def cas_update(state: Mapping[str, Any], changes: Mapping[str, Any],
               now: datetime) -> dict[str, Any]:
    """Compare-and-swap of the mutable fields; the caller has checked the revision."""
    for key in changes:
        if key in IMMUTABLE_KEYS or key in ("revision", "updatedAt"):
            raise _invalid(f"{key} cannot be changed by a governance update")
        if key == "evidence":
            raise _invalid("evidence is append-only: record it with the evidence operation")
        if key in ("pendingMutations", "pendingCommits"):
            raise _invalid(f"{key} change only through the mutation and commit operations")
        if key not in CAS_KEYS:
            raise _invalid(f"{key} is not a governance field")
    following = _next(state, now)
    for key, value in changes.items():
        following[key] = copy.deepcopy(value)
    return _finish(following)


def begin_mutation(state: Mapping[str, Any], pending: Mapping[str, Any], now: datetime,
                   action: str = "source-mutation") -> dict[str, Any]:
    validate_pending_mutation(pending)
    if action not in ("source-mutation", "metadata-mutation"):
        raise _invalid("a mutation action is source-mutation or metadata-mutation")
    reason = guard(state, action)
    if reason:
        raise _blocked(reason)
    for existing in state.get("pendingMutations", []):
        if existing["id"] == pending["id"] or (
            existing["requestId"] == pending["requestId"]
            and existing["toolCallId"] == pending["toolCallId"]
        ):
            raise _invalid("a pending mutation with this id or request and tool call exists")
    following = _next(state, now)
    following["pendingMutations"].append(dict(pending))
    return _finish(following)


def _pending_index(items: Sequence[Mapping[str, Any]], pending_id: str, what: str) -> int:
    for index, item in enumerate(items):
        if item["id"] == pending_id:
            return index
    raise _invalid(f"no pending {what} {pending_id}")


def complete_mutation(state: Mapping[str, Any], pending_id: str, record: Mapping[str, Any],
                      now: datetime) -> dict[str, Any]:
    index = _pending_index(state.get("pendingMutations", []), pending_id, "mutation")
    validate_evidence(record)
    if record["kind"] != "implementation" or record["outcome"] != "observed":
        raise _invalid("completing a mutation needs implementation evidence with outcome observed")
    if any(e["id"] == record["id"] for e in state["evidence"]):
        raise GovernanceError(DUPLICATE_EVIDENCE, f"Evidence {record['id']} already exists.")
    following = _next(state, now)
    del following["pendingMutations"][index]
    following["evidence"].append(dict(record))
    return _finish(following)


def clear_mutation(state: Mapping[str, Any], pending_id: str, now: datetime) -> dict[str, Any]:
    index = _pending_index(state.get("pendingMutations", []), pending_id, "mutation")
    following = _next(state, now)
    del following["pendingMutations"][index]
    return _finish(following)


def begin_commit(state: Mapping[str, Any], pending: Mapping[str, Any],
                 now: datetime) -> dict[str, Any]:
    validate_pending_commit(pending)
    reason = guard(state, "commit")
    if reason:
        raise _blocked(reason)
    if state.get("pendingCommits"):
        raise _blocked(f"Ged work {state['workId']} already has a pending commit.")
    following = _next(state, now)
    following["pendingCommits"].append(dict(pending))
    return _finish(following)


def complete_commit(state: Mapping[str, Any], pending_id: str, record: Mapping[str, Any],
                    now: datetime) -> dict[str, Any]:
    index = _pending_index(state.get("pendingCommits", []), pending_id, "commit")
    validate_evidence(record)
    if record["kind"] != "milestone":
        raise _invalid("completing a commit needs milestone evidence")
    pending = state["pendingCommits"][index]
    binding = record["binding"]
    if (
        binding["beforeHead"] != pending["beforeHead"]
        or binding["committedTree"] != pending["expectedTree"]
        or binding["verifiedSnapshotDigest"] != pending["verifiedSnapshotDigest"]
    ):
        raise _invalid("Commit milestone does not match its durable pending commit.")
    if any(e["id"] == record["id"] for e in state["evidence"]):
        raise GovernanceError(DUPLICATE_EVIDENCE, f"Evidence {record['id']} already exists.")
    following = _next(state, now)
    del following["pendingCommits"][index]
    following["evidence"].append(dict(record))
    return _finish(following)


def clear_commit(state: Mapping[str, Any], pending_id: str, now: datetime) -> dict[str, Any]:
    index = _pending_index(state.get("pendingCommits", []), pending_id, "commit")
    following = _next(state, now)
    del following["pendingCommits"][index]
    return _finish(following)


LIFECYCLE_ACTIONS = {
    "pause": ("paused", ("active",)),
    "resume": ("active", ("paused",)),
    "complete": ("completed", ("active", "paused")),
    "abandon": ("abandoned", ("active", "paused")),
    "supersede": ("superseded", ("active", "paused")),
}


def transition(state: Mapping[str, Any], *, action: str, reason: str, expected_lifecycle: str,
               transition_id: str, now: datetime) -> dict[str, Any]:
    work = f"Ged work {state['workId']}"
    current = state["lifecycle"]
    if expected_lifecycle != current:
        raise _blocked(
            f"{work} lifecycle changed from expected {expected_lifecycle} to {current}. "
            "Retry from current authoritative state."
        )
    if action not in LIFECYCLE_ACTIONS or current not in LIFECYCLE_ACTIONS[action][1]:
        raise _blocked(f"Lifecycle action {action} is invalid from {current}.")
    normalized = normalize_reason(reason)
    if not 1 <= len(normalized) <= MAX_REASON_CHARS:
        raise _invalid(f"a lifecycle reason must be 1-{MAX_REASON_CHARS} characters")
    if state.get("pendingMutations"):
        raise _blocked(f"{work} has a source mutation pending durable completion evidence.")
    if state.get("pendingCommits"):
        raise _blocked(f"{work} has an unproven commit pending reconciliation.")
    if action == "complete":
        blocked = guard({**state, "lifecycle": "active"}, "commit")
        if blocked:
            raise _blocked(blocked)
    if action == "resume":
        blocked = guard({**state, "lifecycle": "active"}, "metadata-mutation")
        if blocked:
            raise _blocked(blocked)
    following = _next(state, now)
    target = LIFECYCLE_ACTIONS[action][0]
    following["lifecycleTransitions"].append(
        {"id": transition_id, "from": current, "to": target, "reason": normalized,
         "recordedAt": format_time(now)}
    )
    following["lifecycle"] = target
    return _finish(following)


# --- the STATE.md projection (§2.9) ---------------------------------------------------------


def render_state_md(state: Mapping[str, Any]) -> str:
    """GedPi's deterministic STATE.md, rendered on request from the authoritative document.

    It is a view for humans, never parsed as authority, and it names the
    revision it was rendered from (GedPi gap G-15).
    """
    lifecycle = state["lifecycle"]
    transitions = state.get("lifecycleTransitions", [])
    if lifecycle == "active":
        phase, next_step = "Build", "Follow the authoritative governance decision and current slice."
    elif lifecycle == "paused":
        phase = "Paused"
        next_step = f"Resume exact work ID {state['workId']} with ged_lifecycle before continuing."
    else:
        phase = "Closed"
        next_step = "No further lifecycle transition or repository mutation is authorized."
    if lifecycle in ("active", "paused"):
        active_task = " ".join((state["currentSlice"] or state["summary"]).split())
    else:
        active_task = "None"
    if transitions:
        status = f"{lifecycle} — {transitions[-1]['reason']}"
    else:
        status = f"{state['decision']['mode']} — {state['decision']['reason']}"
    if lifecycle != "active":
        blockers = f"Lifecycle is {lifecycle}"
    elif state["decision"]["requiresDecision"]:
        blockers = "A user-owned decision is required"
    elif state.get("pendingMutations"):
        blockers = "A mutation is pending durable completion evidence"
    elif state.get("pendingCommits"):
        blockers = "A commit is pending durable reconciliation"
    else:
        blockers = "None"
    baseline = state.get("contentBaseline")
    return (
        "# State\n"
        "\n"
        f"Current Phase: {phase}\n"
        f"Active Task: {active_task}\n"
        f"Status Summary: {status}\n"
        f"Blockers: {blockers}\n"
        f"Next Step: {next_step}\n"
        "\n"
        "## Governance\n"
        "\n"
        f"- Work ID: {state['workId']}\n"
        f"- Revision: {state['revision']}\n"
        f"- Lifecycle: {lifecycle}\n"
        f"- Execution profile: {state['executionProfile']}\n"
        f"- Evidence records: {len(state['evidence'])}\n"
        f"- Approval records: {len(state['approvals'])}\n"
        f"- Pending mutations: {len(state.get('pendingMutations', []))}\n"
        f"- Pending commits: {len(state.get('pendingCommits', []))}\n"
        f"- Lifecycle transitions: {len(transitions)}\n"
        f"- Content baseline: {baseline['digest'] if baseline else 'legacy-unbound'}\n"
    )
