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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal, Self, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    StringConstraints,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

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
#
# The closed sets the document's schema checks are Literal types (the schema
# reads them); the tuples beside them are the same values for everyone else.

Mode = Literal["read-only", "direct-change", "planned-change"]
ExecutionProfile = Literal["solo", "assisted", "coordinated", "high-stakes"]
Lifecycle = Literal["active", "paused", "completed", "abandoned", "superseded"]
EvidenceKind = Literal[
    "inspection",
    "plan",
    "implementation",
    "verification",
    "milestone",
    "approval",
    "migration-required",
]
EvidenceSource = Literal["human", "runtime", "agent"]
EvidenceOutcome = Literal["observed", "satisfied", "failed"]
ApprovalKind = Literal["plan", "mutation", "completion"]
ApprovalStatus = Literal["pending", "approved", "rejected"]
ReasonCode = Literal[
    "no-mutation-intent",
    "decision-needed",
    "user-requested-plan",
    "high-risk",
    "coordinator-escalation",
    "direct-change-eligible",
    "direct-change-ineligible",
]

MODES: tuple[str, ...] = get_args(Mode)
EXECUTION_PROFILES: tuple[str, ...] = get_args(ExecutionProfile)
LIFECYCLES: tuple[str, ...] = get_args(Lifecycle)
TERMINAL_LIFECYCLES = ("completed", "abandoned", "superseded")
EVIDENCE_KINDS: tuple[str, ...] = get_args(EvidenceKind)
EVIDENCE_SOURCES: tuple[str, ...] = get_args(EvidenceSource)
EVIDENCE_OUTCOMES: tuple[str, ...] = get_args(EvidenceOutcome)
APPROVAL_KINDS: tuple[str, ...] = get_args(ApprovalKind)
APPROVAL_STATUSES: tuple[str, ...] = get_args(ApprovalStatus)
GUARD_ACTIONS = ("metadata-mutation", "source-mutation", "commit")
MINIMUM_MODES = ("direct-change", "planned-change")
AMBIGUITIES = ("sufficient", "decision-needed")
RISKS = ("low", "normal", "high")

# Each reason code implies one mode. GedPi gives every code a fixed sentence;
# the reference does not quote them, so these are GedWeb's own wording.
REASONS: dict[ReasonCode, tuple[Mode, str]] = {
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
    code: ReasonCode
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


# --- the document's schema (§2.2, §2.3) -------------------------------------------------
#
# Every object GedPi keeps is a pydantic model below: its fields in the order
# GedPi checks them, strict types (no coercion: "1" is not 1, true is no
# integer), unknown keys refused. A model only checks: the document is never rebuilt
# from it, so what is stored is exactly what came in. pydantic's messages are
# not GedPi's, so each field carries GedPi's sentence as a Refusal and
# _Shape._sentence turns the first failure into it: that one function is the
# whole mapping. Patterns run on pydantic's Rust regex engine, which never
# backtracks, so outside text is checked in linear time.

IMMUTABLE_KEYS = (
    "workId", "schemaVersion", "createdAt", "summary", "contentBaseline", "lifecycle",
    "lifecycleTransitions", "repository",
)
CAS_KEYS = ("currentSlice", "decision", "executionProfile", "approvals")
MAX_SAFE_INTEGER = 2**53 - 1
ALLOWED_TRANSITIONS = {
    "active": ("paused", "completed", "abandoned", "superseded"),
    "paused": ("active", "completed", "abandoned", "superseded"),
}

# The error type of a failure already put in GedPi's words (by a nested
# object or a rule across fields); every other type is pydantic's own.
GEDPI_REFUSAL = "gedpi_refusal"


@dataclass(frozen=True)
class Refusal:
    """GedPi's sentence when a field fails; ``by_error`` where the sentence depends on why.

    ``{what}`` in a sentence is the object's name, ``{tag}`` the unknown
    binding type.
    """

    sentence: str
    by_error: Mapping[str, str] = field(default_factory=dict)

    def for_error(self, error_type: str) -> str:
        return self.by_error.get(error_type, self.sentence)


def _refusal(sentence: str) -> PydanticCustomError:
    # The sentence travels in the context: a template would read braces in it.
    return PydanticCustomError(GEDPI_REFUSAL, "{sentence}", {"sentence": sentence})


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("blank")
    return value


def _no_repeats(values: list[Any]) -> list[Any]:
    if len(set(values)) != len(values):
        raise PydanticCustomError("not_unique", "entries repeat")
    return values


def _unique_ids(items: list[Any]) -> list[Any]:
    if len({item.id for item in items}) != len(items):
        raise PydanticCustomError("not_unique", "ids repeat")
    return items


def _canonical_time(value: str) -> str:
    if not is_canonical_time(value):
        raise ValueError("not a canonical time")
    return value


def _generated_work_id(value: str) -> str:
    if not is_work_id(value):
        raise ValueError("not a work id")
    return value


def _not_a_boolean(value: Any) -> Any:
    # Literal[1] takes true as 1, as Python does; GedPi's schemaVersion does not.
    if isinstance(value, bool):
        raise ValueError("a boolean")
    return value


NonBlank = Annotated[str, AfterValidator(_not_blank)]
CanonicalTime = Annotated[str, AfterValidator(_canonical_time)]
# Python's `$` let one trailing newline through before this schema existed,
# and stored documents may hold one, so `\n?` keeps taking it.
Hex64 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}\n?$")]
GitObjectId = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40,64}\n?$")]
UniqueNonBlankStrings = Annotated[list[NonBlank], AfterValidator(_no_repeats)]
SafeInteger = Annotated[int, Field(ge=0, le=MAX_SAFE_INTEGER)]
# An integer of any size, or a finite float: what `0 <= value < inf` took.
Duration = Annotated[int, Field(ge=0)] | Annotated[float, Field(ge=0, allow_inf_nan=False)]


def _unique_strings(what: str) -> Refusal:
    return Refusal(f"{what} must be a list of non-blank strings",
                   {"not_unique": f"{what} must not repeat entries"})


def _records_with_ids(name: str) -> Refusal:
    return Refusal(f"{name} must be a list", {"not_unique": f"{name} ids must be unique"})


class _Shape(BaseModel):
    """A GedPi object: strict, closed, and refused in GedPi's words."""

    model_config = ConfigDict(strict=True, extra="forbid")

    what: ClassVar[str]
    refusals: ClassVar[dict[str, Refusal]]

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls.refusals = {}
        for name, info in cls.model_fields.items():
            key = info.alias or name
            found = [item for item in info.metadata if isinstance(item, Refusal)]
            if found:
                cls.refusals[key] = found[-1]
            elif not (isinstance(info.annotation, type) and issubclass(info.annotation, _Shape)):
                # A nested object words its own failures; any other field needs a sentence.
                raise TypeError(f"{cls.__name__}.{key} has no Refusal")

    @model_validator(mode="wrap")
    @classmethod
    def _in_gedpis_words(cls, value: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        try:
            return handler(value)
        except ValidationError as exc:
            raise _refusal(cls._sentence(exc.errors())) from None

    @classmethod
    def _sentence(cls, errors: list[ErrorDetails]) -> str:
        """GedPi checks an object's keys before its values, and its values in field order."""
        own = [error for error in errors if len(error["loc"]) == 1]
        missing = sorted(str(error["loc"][0]) for error in own if error["type"] == "missing")
        if missing:
            return f"{cls.what} is missing {', '.join(missing)}"
        unknown = sorted(str(error["loc"][0]) for error in own
                         if error["type"] in ("extra_forbidden", "invalid_key"))
        if unknown:
            return f"{cls.what} has unknown keys {', '.join(unknown)}"
        first = errors[0]
        if first["type"] == GEDPI_REFUSAL:
            return str(first.get("ctx", {})["sentence"])
        if not first["loc"]:
            return f"{cls.what} must be an object"
        context = {"what": cls.what}
        if first["type"] == "union_tag_invalid":
            context["tag"] = repr(first["input"]["type"])
        return cls.refusals[str(first["loc"][0])].for_error(first["type"]).format(**context)


# Optional keys are omittable, never null: a field's default is not validated,
# while an explicit null is, and is refused. Types cannot say "absent or X", so
# each such None default carries a type: ignore[assignment].


class _Decision(_Shape):
    what = "decision"
    mode: Annotated[Mode, Refusal("decision.mode is not a known mode")]
    reasonCode: Annotated[ReasonCode, Refusal("decision.reasonCode is not a known reason code")]
    reason: Annotated[NonBlank, Refusal("decision.reason must not be blank")]
    requiresDecision: Annotated[bool, Refusal("decision.requiresDecision must be a boolean")]

    @model_validator(mode="after")
    def _mode_is_the_one_its_reason_implies(self) -> Self:
        if REASONS[self.reasonCode][0] != self.mode:
            raise _refusal("decision.mode does not match the mode its reasonCode implies")
        return self


class _SnapshotPath(_Shape):
    path: Annotated[NonBlank, Refusal("{what}.path must not be blank")]
    indexDigest: Annotated[Hex64 | None, Refusal("{what}.indexDigest must be null or lowercase hex")]
    worktreeDigest: Annotated[Hex64 | None,
                              Refusal("{what}.worktreeDigest must be null or lowercase hex")]


class _Snapshot(_Shape):
    """A repository snapshot; only its shape, since its digests need the checkout itself."""

    # Literal[1] takes true and 1.0, as the `!= 1` check before the schema did.
    version: Annotated[Literal[1], Refusal("{what}.version must be 1")]
    repositoryRoot: Annotated[NonBlank, Refusal("{what} has an invalid repositoryRoot or git flag")]
    git: Annotated[bool, Refusal("{what} has an invalid repositoryRoot or git flag")]
    head: Annotated[GitObjectId | None, Refusal("{what}.head must be null or lowercase hex")]
    headTree: Annotated[GitObjectId | None, Refusal("{what}.headTree must be null or lowercase hex")]
    indexTree: Annotated[GitObjectId | None,
                         Refusal("{what}.indexTree must be null or lowercase hex")]
    stagedDigest: Annotated[Hex64, Refusal("{what}.stagedDigest must be lowercase hex")]
    unstagedDigest: Annotated[Hex64, Refusal("{what}.unstagedDigest must be lowercase hex")]
    untrackedDigest: Annotated[Hex64, Refusal("{what}.untrackedDigest must be lowercase hex")]
    digest: Annotated[Hex64, Refusal("{what}.digest must be lowercase hex")]
    stagedPaths: Annotated[UniqueNonBlankStrings, _unique_strings("{what}.stagedPaths")]
    unstagedPaths: Annotated[UniqueNonBlankStrings, _unique_strings("{what}.unstagedPaths")]
    untrackedPaths: Annotated[UniqueNonBlankStrings, _unique_strings("{what}.untrackedPaths")]
    # paths, the last field, is declared by each snapshot below with its own item type.


# The same snapshot under two names, so that GedPi's sentences say which one failed.


class _VerificationSnapshotPath(_SnapshotPath):
    what = "verification snapshot.paths[]"


class _VerificationSnapshot(_Snapshot):
    what = "verification snapshot"
    paths: Annotated[list[_VerificationSnapshotPath], Refusal("{what}.paths must be a list")]


class _ContentBaselinePath(_SnapshotPath):
    what = "contentBaseline.paths[]"


class _ContentBaseline(_Snapshot):
    what = "contentBaseline"
    paths: Annotated[list[_ContentBaselinePath], Refusal("{what}.paths must be a list")]


class _PlanContent(_Shape):
    what = "plan-content binding"
    type: Annotated[Literal["plan-content"], Refusal("unknown evidence binding type")]
    digest: Annotated[Hex64, Refusal("plan-content digest must be lowercase hex")]
    paths: Annotated[UniqueNonBlankStrings, _unique_strings("plan-content paths")]


class _MutationContent(_Shape):
    what = "mutation-content binding"
    type: Annotated[Literal["mutation-content"], Refusal("unknown evidence binding type")]
    beforeDigest: Annotated[Hex64, Refusal("mutation-content beforeDigest must be lowercase hex")]
    afterDigest: Annotated[Hex64, Refusal("mutation-content afterDigest must be lowercase hex")]
    changedPaths: Annotated[UniqueNonBlankStrings, _unique_strings("mutation-content changedPaths")]

    @model_validator(mode="after")
    def _digests_differ(self) -> Self:
        if self.beforeDigest == self.afterDigest:
            raise _refusal("mutation-content digests must differ")
        return self


class _Command(_Shape):
    what = "verification command"
    command: Annotated[NonBlank, Refusal("verification command must not be blank")]
    args: Annotated[list[str], Refusal("verification command args must be strings")]
    exitCode: Annotated[int, Field(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER),
                        Refusal("verification exitCode must be a safe integer")]
    stdout: Annotated[str, Refusal("verification stdout and stderr must be strings")]
    stderr: Annotated[str, Refusal("verification stdout and stderr must be strings")]
    durationMs: Annotated[Duration, Refusal("verification durationMs must be a finite number >= 0")]


class _Environment(_Shape):
    what = "verification environment"
    node: Annotated[NonBlank, Refusal("verification environment values must not be blank")]
    platform: Annotated[NonBlank, Refusal("verification environment values must not be blank")]
    arch: Annotated[NonBlank, Refusal("verification environment values must not be blank")]


class _Review(_Shape):
    what = "review"
    outcome: Annotated[Literal["clean", "findings"], Refusal("review outcome must be clean or findings")]
    findings: Annotated[UniqueNonBlankStrings, _unique_strings("review findings")]


class _VerificationContent(_Shape):
    what = "verification-content binding"
    type: Annotated[Literal["verification-content"], Refusal("unknown evidence binding type")]
    snapshot: _VerificationSnapshot
    scopePaths: Annotated[UniqueNonBlankStrings, _unique_strings("verification scopePaths")]
    commands: Annotated[list[_Command], Field(min_length=1),
                        Refusal("verification commands must be a non-empty list")]
    environment: _Environment
    review: _Review = Field(default=None)  # type: ignore[assignment]  # omittable, not null
    residualRisks: Annotated[list[str], AfterValidator(_no_repeats),
                             Refusal("residualRisks must be a list of unique strings")]


class _CommitMilestone(_Shape):
    what = "commit-milestone binding"
    type: Annotated[Literal["commit-milestone"], Refusal("unknown evidence binding type")]
    beforeHead: Annotated[GitObjectId | None,
                          Refusal("commit-milestone beforeHead must be null or lowercase hex")]
    afterHead: Annotated[GitObjectId, Refusal("commit-milestone afterHead must be lowercase hex")]
    committedTree: Annotated[GitObjectId,
                             Refusal("commit-milestone committedTree must be lowercase hex")]
    verifiedSnapshotDigest: Annotated[
        Hex64, Refusal("commit-milestone verifiedSnapshotDigest must be lowercase hex")]

    @model_validator(mode="after")
    def _head_moves(self) -> Self:
        if self.afterHead == self.beforeHead:
            raise _refusal("commit-milestone afterHead must differ from beforeHead")
        return self


Binding = Annotated[_PlanContent | _MutationContent | _VerificationContent | _CommitMilestone,
                    Field(discriminator="type")]


class _Evidence(_Shape):
    what = "evidence record"
    id: Annotated[NonBlank, Refusal("evidence id must not be blank")]
    kind: Annotated[EvidenceKind, Refusal("evidence kind is not known")]
    source: Annotated[EvidenceSource, Refusal("evidence source must be human, runtime or agent")]
    producerId: Annotated[NonBlank, Refusal("evidence producerId must not be blank when present")
                          ] = Field(default=None)  # type: ignore[assignment]  # omittable, not null
    recordedAt: Annotated[CanonicalTime,
                          Refusal("evidence recordedAt must be a canonical UTC time")]
    summary: Annotated[NonBlank, Refusal("evidence summary must not be blank")]
    outcome: Annotated[EvidenceOutcome,
                       Refusal("evidence outcome must be observed, satisfied or failed")]
    binding: Annotated[Binding, Refusal(
        "evidence binding must be an object with a type",
        {"union_tag_invalid": "unknown evidence binding type {tag}"},
    )] = Field(default=None)  # type: ignore[assignment]  # omittable, not null

    @model_validator(mode="after")
    def _a_milestone_proves_a_commit(self) -> Self:
        if self.kind == "milestone" and (
            self.outcome != "observed" or not isinstance(self.binding, _CommitMilestone)
        ):
            raise _refusal("a milestone needs outcome observed and a commit-milestone binding")
        return self


class _PendingMutation(_Shape):
    what = "pending mutation"
    id: Annotated[NonBlank, Refusal("pending mutation fields must not be blank")]
    requestId: Annotated[NonBlank, Refusal("pending mutation fields must not be blank")]
    toolCallId: Annotated[NonBlank, Refusal("pending mutation fields must not be blank")]
    target: Annotated[NonBlank, Refusal("pending mutation fields must not be blank")]
    startedAt: Annotated[CanonicalTime,
                         Refusal("pending mutation startedAt must be a canonical UTC time")]


class _PendingCommit(_Shape):
    what = "pending commit"
    id: Annotated[NonBlank, Refusal("pending commit ids must not be blank")]
    requestId: Annotated[NonBlank, Refusal("pending commit ids must not be blank")]
    toolCallId: Annotated[NonBlank, Refusal("pending commit ids must not be blank")]
    beforeHead: Annotated[GitObjectId | None,
                          Refusal("pending commit beforeHead must be null or lowercase hex")]
    expectedTree: Annotated[GitObjectId, Refusal("pending commit expectedTree must be lowercase hex")]
    unstagedDigest: Annotated[Hex64, Refusal("pending commit unstagedDigest must be lowercase hex")]
    untrackedDigest: Annotated[Hex64,
                               Refusal("pending commit untrackedDigest must be lowercase hex")]
    verifiedSnapshotDigest: Annotated[
        Hex64, Refusal("pending commit verifiedSnapshotDigest must be lowercase hex")]
    startedAt: Annotated[CanonicalTime,
                         Refusal("pending commit startedAt must be a canonical UTC time")]


class _Approval(_Shape):
    what = "approval"
    id: Annotated[NonBlank, Refusal("approval id and summary must not be blank")]
    summary: Annotated[NonBlank, Refusal("approval id and summary must not be blank")]
    kind: Annotated[ApprovalKind, Refusal("approval kind or status is not known")]
    status: Annotated[ApprovalStatus, Refusal("approval kind or status is not known")]
    recordedAt: Annotated[CanonicalTime, Refusal("approval recordedAt must be a canonical UTC time")]


class _Transition(_Shape):
    what = "lifecycle transition"
    from_: Annotated[Lifecycle, Field(alias="from"),
                     Refusal("lifecycle transition names an unknown lifecycle")]
    to: Annotated[Lifecycle, Refusal("lifecycle transition names an unknown lifecycle")]
    id: Annotated[NonBlank, Refusal("lifecycle transition id and reason must not be blank")]
    reason: Annotated[NonBlank, Refusal("lifecycle transition id and reason must not be blank")]
    recordedAt: Annotated[CanonicalTime,
                          Refusal("lifecycle transition recordedAt must be a canonical UTC time")]


class _Repository(_Shape):
    what = "repository"
    repositoryId: Annotated[Hex64, Refusal("repositoryId must be lowercase hex")]
    worktreeId: Annotated[Hex64, Refusal("worktreeId must be lowercase hex")]
    branch: Annotated[str | None, Refusal("repository.branch must be a string or null")]
    baseHead: Annotated[str | None, Refusal("repository.baseHead must be a string or null")]


class _State(_Shape):
    what = "governance state"
    schemaVersion: Annotated[Literal[1], BeforeValidator(_not_a_boolean),
                             Refusal("governance schemaVersion must be 1")]
    revision: Annotated[SafeInteger, Refusal("governance revision must be a safe integer >= 0")]
    workId: Annotated[str, AfterValidator(_generated_work_id),
                      Refusal("governance workId is not a generated work id")]
    summary: Annotated[NonBlank, Refusal("governance summary must not be blank")]
    repository: _Repository
    createdAt: Annotated[CanonicalTime, Refusal("governance createdAt must be a canonical UTC time")]
    updatedAt: Annotated[CanonicalTime, Refusal("governance updatedAt must be a canonical UTC time")]
    currentSlice: Annotated[NonBlank | None,
                            Refusal("currentSlice must be null or a non-blank string")]
    decision: _Decision
    executionProfile: Annotated[ExecutionProfile, Refusal("executionProfile is not known")]
    lifecycle: Annotated[Lifecycle, Refusal("lifecycle is not known")]
    approvals: Annotated[list[_Approval], AfterValidator(_unique_ids), _records_with_ids("approvals")]
    evidence: Annotated[list[_Evidence], AfterValidator(_unique_ids), _records_with_ids("evidence")]
    pendingMutations: Annotated[list[_PendingMutation], AfterValidator(_unique_ids),
                                _records_with_ids("pendingMutations")] = Field(default=[])
    pendingCommits: Annotated[list[_PendingCommit], AfterValidator(_unique_ids),
                              _records_with_ids("pendingCommits")] = Field(default=[])
    lifecycleTransitions: Annotated[list[_Transition], AfterValidator(_unique_ids),
                                    _records_with_ids("lifecycleTransitions")] = Field(default=[])
    contentBaseline: _ContentBaseline = Field(default=None)  # type: ignore[assignment]  # omittable, not null

    @model_validator(mode="after")
    def _transitions_chain_to_the_lifecycle(self) -> Self:
        previous = None
        for step in self.lifecycleTransitions:
            if previous is not None and step.from_ != previous:
                raise _refusal("lifecycle transitions must form a contiguous chain")
            if step.to not in ALLOWED_TRANSITIONS.get(step.from_, ()):
                raise _refusal("lifecycle transition is not an allowed move")
            previous = step.to
        if previous is not None and previous != self.lifecycle:
            raise _refusal("the last lifecycle transition must end at the current lifecycle")
        return self


def _conform(shape: type[_Shape], document: Any) -> None:
    try:
        shape.model_validate(document)
    except ValidationError as exc:
        raise _invalid(str(exc.errors()[0].get("ctx", {})["sentence"])) from None


def validate_decision(decision: Any) -> None:
    _conform(_Decision, decision)


def validate_evidence(record: Any) -> None:
    _conform(_Evidence, record)


def validate_pending_mutation(item: Any) -> None:
    _conform(_PendingMutation, item)


def validate_pending_commit(item: Any) -> None:
    _conform(_PendingCommit, item)


def validate_state(state: Any, work_id: str | None = None) -> None:
    """GedPi's strict reader: every rule, every read and before every write."""
    _conform(_State, state)
    if work_id is not None and state["workId"] != work_id:
        raise _invalid("governance workId does not match the requested work item")


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


def _latest(
    evidence: Sequence[Mapping[str, Any]], kind: str,
) -> tuple[int, Mapping[str, Any] | None]:
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


def relied_evidence(state: Mapping[str, Any], action: str) -> list[tuple[str, Mapping[str, Any]]]:
    """The evidence records ``guard`` lets ``action`` rest on, as (kind, record).

    Planned-change source mutations and commits rest on the latest plan
    evidence; commits (and completing work) on the latest verification too.
    Evidence that only blocks is not listed: it blocks whoever wrote it.
    """
    if action == "metadata-mutation":
        return []
    relied: list[tuple[str, Mapping[str, Any]]] = []
    evidence = state["evidence"]
    if state["decision"]["mode"] == "planned-change":
        _, plan = _latest(evidence, "plan")
        if plan is not None:
            relied.append(("plan", plan))
    if action == "commit":
        _, verification = _latest(evidence, "verification")
        if verification is not None:
            relied.append(("verification", verification))
    return relied


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
