"""Governance writes: open work, write revisions, files, task artifacts, active work.

Every governance write runs the same way: take the project lock
(memory.locks), read the newest revision, check the caller's expected
revision (compare-and-swap), compute the next document with
gedweb.lib.governance, and insert revision n+1 with any new evidence rows.
The project lock serialises writers across processes and servers, and is
the one lock of every counter here (revisions, work file and task artifact
versions, for single writes and ged_import alike); UNIQUE(work, revision)
and UNIQUE(..., version) are the backstops.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, cast

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from gedweb.errors import (
    Conflict,
    DecisionRequired,
    DomainError,
    DuplicateEvidence,
    GovernanceBlocked,
    InvalidState,
    StaleRevision,
)
from gedweb.lib import governance as gov
from gedweb.lib.fingerprint import file_set_fingerprint
from gedweb.lib.ids import is_task_id
from gedweb.validation import FieldErrors, validate_text
from governance import provenance
from governance.models import (
    ActiveWork,
    EvidenceRecord,
    GovernanceRevision,
    GovernanceTrust,
    TaskArtifact,
    WorkFile,
    WorkItem,
)
from memory import quotas, secret_scan
from memory.locks import lock_project, next_version
from memory.models import Project

_ERRORS: dict[str, type[DomainError]] = {
    gov.STALE_REVISION: StaleRevision,
    gov.DUPLICATE_EVIDENCE: DuplicateEvidence,
    gov.GOVERNANCE_BLOCKED: GovernanceBlocked,
    gov.INVALID_STATE: InvalidState,
    gov.ALREADY_EXISTS: Conflict,
}


def domain_error(exc: gov.GovernanceError) -> DomainError:
    return _ERRORS.get(exc.code, InvalidState)(exc.message)


def _now() -> datetime:
    # GedPi times carry milliseconds; storing the same precision keeps
    # META and governance times identical on every read.
    moment = timezone.now()
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def repository_identity(project: Project) -> dict[str, str]:
    """GedPi hashes the Git common dir and worktree path; a service hashes the project."""
    return {
        "repositoryId": hashlib.sha256(f"gedweb:project:{project.pk}".encode()).hexdigest(),
        "worktreeId": hashlib.sha256(f"gedweb:project:{project.pk}:worktree".encode()).hexdigest(),
    }


# --- reading documents ----------------------------------------------------------


def _document(revision: GovernanceRevision, evidence: list[dict[str, Any]]) -> dict[str, Any]:
    """Reassemble GedPi's document, with evidence back in its place in key order."""
    stored = revision.document_without_evidence
    document: dict[str, Any] = {}
    for key, value in stored.items():
        document[key] = value
        if key == "approvals":
            document["evidence"] = evidence[: revision.evidence_count]
    return document


def _evidence_list(work: WorkItem, upto: int | None = None) -> list[dict[str, Any]]:
    rows = EvidenceRecord.objects.filter(work=work).order_by("position")
    if upto is not None:
        rows = rows.filter(position__lt=upto)
    return [json.loads(text) for text in rows.values_list("record_json", flat=True)]


def latest_revision(work: WorkItem) -> GovernanceRevision:
    # A work item is stored together with its first revision, in one transaction.
    return cast(
        GovernanceRevision,
        GovernanceRevision.objects.filter(work=work).order_by("-revision").first(),
    )


def governance_document(work: WorkItem) -> dict[str, Any]:
    revision = latest_revision(work)
    document = _document(revision, _evidence_list(work, revision.evidence_count))
    try:
        gov.validate_state(document, work.work_id)  # fail closed on a corrupt record
    except gov.GovernanceError as exc:
        raise InvalidState(f"stored governance is invalid: {exc.message}") from None
    return document


def revision_document(work: WorkItem, number: int) -> dict[str, Any] | None:
    revision = GovernanceRevision.objects.filter(work=work, revision=number).first()
    if revision is None:
        return None
    return _document(revision, _evidence_list(work, revision.evidence_count))


# --- writing revisions ------------------------------------------------------------


def _store_revision(work: WorkItem, previous_evidence: int, document: dict[str, Any],
                    operation: str, author: str, previous: dict[str, Any] | None = None) -> None:
    """Store one revision and its new evidence records (the caller holds the project lock).

    The strings the revision adds to ``previous`` (every one, for a first
    revision) are scanned for secrets first: evidence summaries, reasons,
    the work's summary; one refusal names each by its path in the document.
    """
    secret_scan.refuse_secrets(work.project_id,
                               secret_scan.json_fields(previous, document, "governance"))
    now = timezone.now()
    evidence = document["evidence"]
    records = [json.dumps(evidence[position], ensure_ascii=False)
               for position in range(previous_evidence, len(evidence))]
    if records:
        # Evidence counts against the work_files quota; the caller holds the
        # project lock, so the quota row is the last lock taken.
        quotas.quota_charge(project=work.project_id, kind="work_files",
                            size_bytes=quotas.text_bytes(*records), rows=len(records))
    for position, record_json in enumerate(records, start=previous_evidence):
        EvidenceRecord.objects.create(
            work=work,
            position=position,
            evidence_id=evidence[position]["id"],
            record_json=record_json,
            revision=document["revision"],
            author=author,
            created_at=now,
        )
    without_evidence = {k: v for k, v in document.items() if k != "evidence"}
    GovernanceRevision.objects.create(
        work=work,
        revision=document["revision"],
        document_json=json.dumps(without_evidence, ensure_ascii=False),
        evidence_count=len(evidence),
        operation=operation,
        author=author,
        created_at=now,
    )


def governance_write(
    *,
    work: WorkItem,
    expected_revision: int,
    operation: str,
    author: str,
    change: Callable[[dict[str, Any], datetime], dict[str, Any]],
) -> dict[str, Any]:
    """Apply one store operation as revision expected_revision + 1, or refuse."""
    try:
        with transaction.atomic():
            lock_project(work.project_id)
            current = governance_document(work)
            if current["revision"] != expected_revision:
                raise StaleRevision(
                    f"Stale governance revision {expected_revision}; current revision is "
                    f"{current['revision']}.",
                    current_revision=current["revision"],
                )
            try:
                following = change(current, _now())
            except gov.GovernanceError as exc:
                raise domain_error(exc) from None
            earlier = current["evidence"]
            if following["evidence"][: len(earlier)] != earlier:
                raise InvalidState("evidence is append-only")
            _store_revision(work, len(current["evidence"]), following, operation, author,
                            previous=current)
    except IntegrityError:
        # Only reachable if the row lock were bypassed: the unique
        # constraints on (work, revision) and (work, position) still hold.
        current_revision = latest_revision(work).revision
        raise StaleRevision(
            f"Stale governance revision {expected_revision}; current revision is "
            f"{current_revision}.",
            current_revision=current_revision,
        ) from None
    return following


# Size bounds of stored governance text (docs/governance.md). The API's 1 MiB
# body limit already bounds one request; these bound what is kept, whichever
# path writes it (API, ged_import).
MAX_WORK_FILE_CHARS = 1_000_000
MAX_EVIDENCE_BYTES = 64 * 1024


def validate_work_text(content: str) -> None:
    """A work file's or task artifact's text: at most MAX_WORK_FILE_CHARS characters of text.

    It may be empty: GedPi's work files are whole files, kept as written.
    """
    errors = FieldErrors()
    if len(content) > MAX_WORK_FILE_CHARS:
        errors.add("content", f"must be at most {MAX_WORK_FILE_CHARS:,} characters")
    else:
        errors.check("content", partial(validate_text, blank_allowed=True), content)
    errors.raise_if_any()


def validate_evidence_size(record: dict[str, Any]) -> None:
    """One evidence record, as stored: at most MAX_EVIDENCE_BYTES of JSON."""
    size = len(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > MAX_EVIDENCE_BYTES:
        raise ValidationError(
            {"evidence": [f"must be at most {MAX_EVIDENCE_BYTES:,} bytes of JSON, not {size:,}"]}
        )


def new_evidence_record(fields: dict[str, Any], now: datetime) -> dict[str, Any]:
    """A GedPi evidence record from caller fields; id and recordedAt come from the server."""
    record: dict[str, Any] = {
        "id": fields.get("id") or f"evidence-{uuid.uuid4()}",
        "kind": fields["kind"],
        "source": fields["source"],
    }
    if fields.get("producerId") is not None:
        record["producerId"] = fields["producerId"]
    record["recordedAt"] = gov.format_time(now)
    record["summary"] = fields["summary"]
    record["outcome"] = fields["outcome"]
    if fields.get("binding") is not None:
        record["binding"] = fields["binding"]
    validate_evidence_size(record)
    return record


EVIDENCE_POLICIES = {
    "none": gov.append_evidence,
    "record-implementation": gov.record_implementation,
    "record-satisfied": gov.record_satisfied,
}


def evidence_append(*, work: WorkItem, expected_revision: int, evidence: dict[str, Any],
                    policy: str, author: str) -> dict[str, Any]:
    apply = EVIDENCE_POLICIES[policy]

    def change(state: dict[str, Any], now: datetime) -> dict[str, Any]:
        following = apply(state, new_evidence_record(evidence, now), now)
        # Implementation needs the source-mutation guard, and planned-change
        # verification the satisfied plan: neither may rest on an untrusted import.
        if policy == "record-implementation" or (
            policy == "record-satisfied" and evidence.get("kind") == "verification"
        ):
            _check_imports(work, state, "source-mutation")
        return following

    return governance_write(
        work=work,
        expected_revision=expected_revision,
        operation=f"evidence:{policy}",
        author=author,
        change=change,
    )


def _server_timed_approvals(state: dict[str, Any], approvals: Any,
                            now: datetime) -> Any:
    """Approvals as the update stores them: each new or changed one at the server's time.

    An approval the update leaves as it was keeps its time; a client never
    dates what GedWeb records.
    """
    if not isinstance(approvals, list):
        return approvals  # the schema refuses it
    kept = {json.dumps(a, sort_keys=True) for a in state.get("approvals", [])}
    stamped = []
    for approval in approvals:
        if isinstance(approval, dict) and json.dumps(approval, sort_keys=True) not in kept:
            approval = {**approval, "recordedAt": gov.format_time(now)}
        stamped.append(approval)
    return stamped


def governance_update(*, work: WorkItem, expected_revision: int, changes: dict[str, Any],
                      author: str) -> dict[str, Any]:
    def change(state: dict[str, Any], now: datetime) -> dict[str, Any]:
        timed = dict(changes)
        if "approvals" in timed:
            timed["approvals"] = _server_timed_approvals(state, timed["approvals"], now)
        return gov.cas_update(state, timed, now)

    return governance_write(
        work=work, expected_revision=expected_revision, operation="update", author=author,
        change=change,
    )


def mutation_begin(*, work: WorkItem, expected_revision: int, request_id: str,
                   tool_call_id: str, target: str, action: str, author: str,
                   mutation_id: str | None = None) -> dict[str, Any]:
    def change(state: dict[str, Any], now: datetime) -> dict[str, Any]:
        pending = {
            "id": mutation_id or f"mutation-{uuid.uuid4()}",
            "requestId": request_id,
            "toolCallId": tool_call_id,
            "target": target,
            "startedAt": gov.format_time(now),
        }
        _check_plan_binding(work, state, action)
        following = gov.begin_mutation(state, pending, now, action)
        _check_imports(work, state, action)
        return following

    return governance_write(work=work, expected_revision=expected_revision,
                            operation="mutation:begin", author=author, change=change)


def mutation_complete(*, work: WorkItem, expected_revision: int, mutation_id: str,
                      evidence: dict[str, Any], author: str) -> dict[str, Any]:
    return governance_write(
        work=work, expected_revision=expected_revision, operation="mutation:complete",
        author=author,
        change=lambda state, now: gov.complete_mutation(
            state, mutation_id, new_evidence_record(evidence, now), now
        ),
    )


def mutation_clear(*, work: WorkItem, expected_revision: int, mutation_id: str,
                   author: str) -> dict[str, Any]:
    return governance_write(
        work=work, expected_revision=expected_revision, operation="mutation:clear",
        author=author, change=lambda state, now: gov.clear_mutation(state, mutation_id, now),
    )


def commit_begin(*, work: WorkItem, expected_revision: int, fields: dict[str, Any],
                 author: str, commit_id: str | None = None) -> dict[str, Any]:
    def change(state: dict[str, Any], now: datetime) -> dict[str, Any]:
        pending = {
            "id": commit_id or f"commit-{uuid.uuid4()}",
            "requestId": fields["requestId"],
            "toolCallId": fields["toolCallId"],
            "beforeHead": fields["beforeHead"],
            "expectedTree": fields["expectedTree"],
            "unstagedDigest": fields["unstagedDigest"],
            "untrackedDigest": fields["untrackedDigest"],
            "verifiedSnapshotDigest": fields["verifiedSnapshotDigest"],
            "startedAt": gov.format_time(now),
        }
        _check_plan_binding(work, state, "commit")
        following = gov.begin_commit(state, pending, now)
        _check_imports(work, state, "commit")
        return following

    return governance_write(work=work, expected_revision=expected_revision,
                            operation="commit:begin", author=author, change=change)


def commit_complete(*, work: WorkItem, expected_revision: int, commit_id: str,
                    evidence: dict[str, Any], author: str) -> dict[str, Any]:
    return governance_write(
        work=work, expected_revision=expected_revision, operation="commit:complete",
        author=author,
        change=lambda state, now: gov.complete_commit(
            state, commit_id, new_evidence_record(evidence, now), now
        ),
    )


def commit_clear(*, work: WorkItem, expected_revision: int, commit_id: str,
                 author: str) -> dict[str, Any]:
    return governance_write(
        work=work, expected_revision=expected_revision, operation="commit:clear",
        author=author, change=lambda state, now: gov.clear_commit(state, commit_id, now),
    )


def lifecycle_transition(*, work: WorkItem, expected_revision: int, action: str, reason: str,
                         expected_lifecycle: str, author: str) -> dict[str, Any]:
    def change(state: dict[str, Any], now: datetime) -> dict[str, Any]:
        following = gov.transition(
            state, action=action, reason=reason, expected_lifecycle=expected_lifecycle,
            transition_id=f"lifecycle-{uuid.uuid4()}", now=now,
        )
        if action == "complete":
            # Completing applies the commit rules, the accepted plan's bytes
            # included, and rests on no untrusted import.
            _check_plan_binding(work, state, "commit")
            _check_imports(work, state, "commit")
        return following

    return governance_write(
        work=work, expected_revision=expected_revision, operation=f"lifecycle:{action}",
        author=author, change=change,
    )


# --- the guard ------------------------------------------------------------------------


def plan_fingerprint(work: WorkItem) -> dict[str, Any] | None:
    """File-set fingerprint of the work item's current SPEC, TASKS and TESTS."""
    files = latest_files(work)
    names = [name for name in gov.PLANNED_TEMPLATES if name in files]
    if not names:
        return None
    return file_set_fingerprint(
        {f".ged/work/{work.work_id}/{name}": files[name].content.encode("utf-8") for name in names}
    )


def guard_check(*, work: WorkItem, action: str) -> str | None:
    """GedPi's ordered store checks, the plan binding, then trust; None when allowed.

    What GedPi's checks let the action rest on must not be an import no
    operator trusted (governance.provenance); a refusal over a lifecycle an
    untrusted import set says so.
    """
    if latest_revision(work) is None:
        return gov.missing_state_reason(work.work_id)
    state = governance_document(work)
    found = provenance.provenance(work)
    reason = gov.guard(state, action)
    if reason is not None:
        note = provenance.lifecycle_note(found, state) if state["lifecycle"] != "active" else None
        return f"{reason} {note}" if note else reason
    return gov.plan_binding_reason(state, action, plan_fingerprint(work)) or (
        provenance.untrusted_reason(found, state, action, work.project_id)
    )


def _check_plan_binding(work: WorkItem, state: dict[str, Any], action: str) -> None:
    reason = gov.plan_binding_reason(state, action, plan_fingerprint(work))
    if reason:
        raise gov.GovernanceError(gov.GOVERNANCE_BLOCKED, reason)


def _check_imports(work: WorkItem, state: dict[str, Any], action: str) -> None:
    reason = provenance.untrusted_reason(provenance.provenance(work), state, action,
                                         work.project_id)
    if reason:
        raise gov.GovernanceError(gov.GOVERNANCE_BLOCKED, reason)


def governance_trust(*, work: WorkItem, trusted_by: str) -> GovernanceTrust | None:
    """An operator's trust of every import of ``work`` so far; None when nothing is untrusted.

    ``trusted_by`` is ``ged_import:trusted-by:<name>`` (gedpi_import.trusted_by_label).
    The row is bound to the newest import's revision and the sha256 of its
    whole document, and it is on the trust ledger. A later import is not
    trusted by it.
    """
    with transaction.atomic():
        lock_project(work.project_id)
        newest = (GovernanceRevision.objects
                  .filter(work=work, operation=provenance.IMPORT_OPERATION)
                  .order_by("-revision").first())
        if newest is None:
            raise Conflict(f"Ged work {work.work_id} has no imported governance to trust")
        if GovernanceTrust.objects.filter(work=work, revision__gte=newest.revision).exists():
            return None
        document = cast(dict[str, Any], revision_document(work, newest.revision))
        return GovernanceTrust.objects.create(
            work=work, revision=newest.revision,
            document_sha256=hashlib.sha256(
                json.dumps(document, ensure_ascii=False).encode("utf-8")).hexdigest(),
            trusted_by=trusted_by, trusted_at=timezone.now(),
        )


def _require_guard(work: WorkItem, action: str) -> None:
    reason = guard_check(work=work, action=action)
    if reason:
        raise GovernanceBlocked(reason)


# --- opening work ------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenedWork:
    work: WorkItem
    governance: dict[str, Any]


def work_open(
    *,
    project: Project,
    author: str,
    summary: str,
    minimum_mode: str,
    ambiguity: str,
    risk: str,
    clear_scope: bool,
    bounded: bool,
    reversible: bool,
    deterministic_check: bool,
    escalation_reason: str | None = None,
    execution_profile: str = "solo",
    branch: str | None = None,
    base_head: str | None = None,
) -> OpenedWork:
    normalized = gov.normalize_summary(summary)
    if not normalized:
        raise ValidationError({"summary": ["must not be blank"]})
    decision = gov.resolve_mode(
        minimum_mode=minimum_mode,
        ambiguity=ambiguity,
        risk=risk,
        clear_scope=clear_scope,
        bounded=bounded,
        reversible=reversible,
        deterministic_check=deterministic_check,
        escalation_reason=escalation_reason,
    )
    if decision["requiresDecision"]:
        # GedPi refuses before creating anything.
        raise DecisionRequired(
            f"{decision['reason']} Resolve the decision, then open the work again."
        )
    now = _now()
    with transaction.atomic():
        lock_project(project)
        work = WorkItem.objects.create(
            project=project,
            work_id=gov.work_id_for(normalized, now, secrets.token_hex(16)),
            summary=normalized,
            mode=decision["mode"],
            created_at=now,
            branch=branch,
            base_head=base_head,
            author=author,
        )
        if decision["mode"] == "direct-change":
            initial_files = {
                "DIRECT.md": gov.render_direct_md(
                    work.work_id, normalized, decision, deterministic_check
                )
            }
        elif decision["mode"] == "planned-change":
            initial_files = dict(gov.PLANNED_TEMPLATES)
        else:
            initial_files = {}
        if initial_files:
            quotas.quota_charge(project=project, kind="work_files",
                                size_bytes=quotas.text_bytes(*initial_files.values()),
                                rows=len(initial_files))
        for name, content in initial_files.items():
            WorkFile.objects.create(work=work, name=name, version=1, content=content,
                                    author=author, created_at=now)
        state = gov.initial_state(
            work_id=work.work_id,
            summary=normalized,
            repository={**repository_identity(project), "branch": branch, "baseHead": base_head},
            decision=decision,
            execution_profile=execution_profile,
            now=now,
        )
        _store_revision(work, 0, state, "initialize", author)
    return OpenedWork(work, state)


# --- work files and task artifacts ------------------------------------------------------


def latest_files(work: WorkItem) -> dict[str, WorkFile]:
    latest: dict[str, WorkFile] = {}
    for row in WorkFile.objects.filter(work=work).order_by("name", "version"):
        latest[row.name] = row
    return latest


def allowed_files(work: WorkItem) -> tuple[str, ...]:
    if work.mode == WorkItem.Mode.DIRECT_CHANGE:
        return ("DIRECT.md",)
    if work.mode == WorkItem.Mode.PLANNED_CHANGE:
        return tuple(gov.PLANNED_TEMPLATES)
    return ()


def _next_version_expected(work: WorkItem, rows: Any, expected_version: int | None) -> int:
    """The next version of ``rows`` under the project lock, if the caller saw the current one."""
    latest = next_version(project=work.project_id, rows=rows)
    current = latest.number - 1
    if expected_version is not None and expected_version != current:
        raise Conflict(
            f"stale version {expected_version}; current version is {current}",
            current_version=current,
        )
    return latest.number


def _charge_work_text(work: WorkItem, content: str) -> None:
    """The one step of the four writers of work text that store it: scanned, then charged.

    Here and not before the lock, so an import of an unchanged file (which
    stores nothing) is never refused for what is already stored.
    """
    secret_scan.refuse_secrets(work.project_id, {"content": content})
    quotas.quota_charge(project=work.project_id, kind="work_files",
                        size_bytes=quotas.text_bytes(content))


def work_file_write(*, work: WorkItem, name: str, content: str, author: str,
                    expected_version: int | None = None) -> WorkFile:
    if name not in allowed_files(work):
        raise Conflict(f"{name} is not a file of {work.mode} work")
    validate_work_text(content)
    with transaction.atomic():
        lock_project(work.project_id)
        # Editing work files is a metadata mutation in GedPi's guard.
        _require_guard(work, "metadata-mutation")
        version = _next_version_expected(work, WorkFile.objects.filter(work=work, name=name),
                                         expected_version)
        _charge_work_text(work, content)
        return WorkFile.objects.create(work=work, name=name, version=version, content=content,
                                       author=author, created_at=timezone.now())


def validate_task_id(task_id: str) -> None:
    """A task id is one path segment of .ged/work/<id>/tasks/ (gedweb.lib.ids.TASK_ID)."""
    if not is_task_id(task_id):
        raise ValidationError({"task_id": [
            "must be 1-128 characters of letters, digits, '.', '_' and '-', starting with a "
            "letter or digit"]})


def task_artifact_write(*, work: WorkItem, task_id: str, name: str, content: str, author: str,
                        expected_version: int | None = None) -> TaskArtifact:
    validate_task_id(task_id)
    validate_work_text(content)
    if name == TaskArtifact.Name.HISTORY:
        try:
            history = json.loads(content)
        except ValueError:
            history = None
        if not isinstance(history, list):
            raise ValidationError({"content": ["HISTORY.json must be a JSON array of attempts"]})
    with transaction.atomic():
        lock_project(work.project_id)
        _require_guard(work, "metadata-mutation")
        rows = TaskArtifact.objects.filter(work=work, task_id=task_id, name=name)
        version = _next_version_expected(work, rows, expected_version)
        _charge_work_text(work, content)
        return TaskArtifact.objects.create(work=work, task_id=task_id, name=name,
                                           version=version, content=content, author=author,
                                           created_at=timezone.now())


# --- active work ------------------------------------------------------------------------------


def session_key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]


def active_work_select(*, project: Project, session_id: str, work: WorkItem, operation: str,
                       request_id: str) -> ActiveWork:
    """Point a session at a work item; the metadata guard must allow it (open or continue)."""
    with transaction.atomic():
        _require_guard(work, "metadata-mutation")
        pointer, _ = ActiveWork.objects.update_or_create(
            project=project,
            session_key=session_key(session_id),
            defaults={
                "session_id": session_id,
                "work": work,
                "operation": operation,
                "request_id": request_id,
                "selected_at": _now(),
            },
        )
    return pointer


def active_work_clear(*, project: Project, session_id: str) -> int:
    deleted, _ = ActiveWork.objects.filter(
        project=project, session_key=session_key(session_id)
    ).delete()
    return deleted


# --- ged_import: work items, revisions and files as found in a GedPi checkout ----------------
#
# A checkout holds only the newest governance.json of a work item. It is stored
# as one revision row carrying GedPi's own revision number, so later GedWeb
# writes continue the compare-and-swap from it (expected_revision = that number).
# The revisions before it are not in the checkout and are not invented.

ORIGIN_KEYS = ("kind", "migrationId", "candidateId", "selectable")
_IMPORT_CONSTANT_KEYS = ("schemaVersion", "workId", "createdAt", "summary", "repository",
                         "contentBaseline")


def meta_document(work: WorkItem) -> dict[str, Any]:
    """META.json as GedPi writes it; origin keys back in GedPi's order (jsonb sorts them)."""
    meta = work.meta()
    if isinstance(meta.get("origin"), dict):
        origin = meta["origin"]
        meta["origin"] = {
            **{key: origin[key] for key in ORIGIN_KEYS if key in origin},
            **{key: value for key, value in origin.items() if key not in ORIGIN_KEYS},
        }
    return meta


def work_import(*, project: Project, meta: dict[str, Any], document: dict[str, Any],
                author: str) -> tuple[WorkItem, bool]:
    """The work item of a checkout's META.json: created once, then only compared.

    META never changes in GedPi; a checkout whose META differs from the stored
    one (or names a work item of another project) is refused.
    """
    work_id = meta["workId"]
    existing = WorkItem.objects.filter(work_id=work_id).first()
    if existing is not None:
        if existing.project_id != project.pk:
            raise Conflict(f"Ged work {work_id} belongs to project {existing.project_id}")
        if meta_document(existing) != meta:
            raise Conflict(f"Ged work {work_id}: META.json differs from GedWeb's (META is "
                           "immutable)")
        return existing, False
    created_at = datetime.strptime(meta["createdAt"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=UTC
    )
    work = WorkItem.objects.create(
        project=project,
        work_id=work_id,
        summary=meta["summary"],
        mode=document["decision"]["mode"],
        created_at=created_at,
        branch=meta["branch"],
        base_head=meta["baseHead"],
        origin=meta.get("origin"),
        author=author,
    )
    return work, True


def governance_import(*, work: WorkItem, document: dict[str, Any], author: str) -> bool:
    """Store a checkout's governance.json as one revision row; True when a row was added.

    The same revision with the same content is a no-op. A lower revision, a
    different document under the same number, or a higher revision that
    rewrites history (evidence or lifecycle transitions not a continuation,
    identity fields changed) is refused, naming the work item.
    """
    try:
        gov.validate_state(document, work.work_id)
    except gov.GovernanceError as exc:
        raise InvalidState(f"Ged work {work.work_id}: governance.json is invalid: "
                           f"{exc.message}") from None
    with transaction.atomic():
        lock_project(work.project_id)
        if latest_revision(work) is None:
            _store_revision(work, 0, document, provenance.IMPORT_OPERATION, author)
            return True
        current = governance_document(work)
        number, ours = document["revision"], current["revision"]
        where = f"Ged work {work.work_id}: governance.json revision {number}"
        if number < ours:
            raise StaleRevision(
                f"{where} is lower than GedWeb's revision {ours}; refusing to go back",
                current_revision=ours,
            )
        if number == ours:
            if document != current:
                raise Conflict(f"{where} differs from GedWeb's revision {ours}")
            return False
        for key in _IMPORT_CONSTANT_KEYS:
            if document.get(key) != current.get(key):
                raise Conflict(f"{where} changes {key}, which never changes")
        for key in ("evidence", "lifecycleTransitions"):
            earlier = current.get(key, [])
            if document.get(key, [])[: len(earlier)] != earlier:
                raise Conflict(f"{where} rewrites GedWeb's {key} (append-only)")
        _store_revision(work, len(current["evidence"]), document, provenance.IMPORT_OPERATION,
                        author, previous=current)
    return True


def work_file_import(*, work: WorkItem, name: str, content: str, author: str) -> bool:
    """A new version of a work file when the checkout's text differs; no guard (paused work too)."""
    if name not in allowed_files(work):
        raise Conflict(f"{name} is not a file of {work.mode} work")
    validate_work_text(content)
    with transaction.atomic():
        latest = next_version(project=work.project_id,
                              rows=WorkFile.objects.filter(work=work, name=name))
        if latest.current is not None and latest.current.content == content:
            return False
        _charge_work_text(work, content)
        WorkFile.objects.create(work=work, name=name, version=latest.number,
                                content=content, author=author, created_at=timezone.now())
    return True


def latest_task_artifacts(work: WorkItem) -> dict[tuple[str, str], TaskArtifact]:
    latest: dict[tuple[str, str], TaskArtifact] = {}
    for row in TaskArtifact.objects.filter(work=work).order_by("task_id", "name", "version"):
        latest[(row.task_id, row.name)] = row
    return latest


def task_artifact_import(*, work: WorkItem, task_id: str, name: str, content: str,
                         author: str) -> bool:
    validate_task_id(task_id)
    validate_work_text(content)
    with transaction.atomic():
        latest = next_version(
            project=work.project_id,
            rows=TaskArtifact.objects.filter(work=work, task_id=task_id, name=name),
        )
        if latest.current is not None and latest.current.content == content:
            return False
        _charge_work_text(work, content)
        TaskArtifact.objects.create(work=work, task_id=task_id, name=name,
                                    version=latest.number, content=content, author=author,
                                    created_at=timezone.now())
    return True
