"""The trust ledger: one tamper-evident record of every trust-bearing write per project.

Each write of a trust-bearing row appends, in the same transaction, a
governance.LedgerRecord naming the row (kind, row id) with the row's
digest; records are hash-linked per project (gedweb/lib/ledger.py) and
each carries an HMAC of its link under the installation's signing key
(memory.checkpoints' keys and key ids, under a salt of its own). So:

- a row changed behind GedWeb's back no longer matches its digest;
- a row deleted leaves a record pointing at nothing;
- a row inserted behind GedWeb's back (the application role may INSERT)
  has no record, and a record inserted for it fails its HMAC;
- an edited, deleted or re-chained record breaks the chain or its HMAC.

Lock order: the project row lock first (memory.locks.lock_project, the
lock memory appends take and the one lock of every governance write),
then the trust-bearing INSERTs and their records, quota charges last. On
SQLite the transaction already holds the only write lock.

Covered (a kind, a table and a digest function each, below): standards
imports and decisions, document revisions, work items, governance
revisions and evidence, work files, task artifacts, skills, and operators'
trust of imported governance. Every insert of a covered model records itself
(record_created, a post_save receiver connected in GovernanceConfig.ready),
so no write path can forget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import models, transaction
from django.db.models.signals import post_save, pre_save
from django.utils import timezone

from gedweb.lib.canonical import canonical_json
from gedweb.lib.digest import sha256_text
from gedweb.lib.ledger import GENESIS_HASH, record_hash, row_digest
from governance.models import (
    EvidenceRecord,
    GovernanceRevision,
    GovernanceTrust,
    LedgerRecord,
    Skill,
    StandardsDecision,
    StandardsImport,
    TaskArtifact,
    WorkFile,
    WorkItem,
)
from memory import checkpoints, redaction
from memory.locks import lock_project
from memory.models import DocumentRevision, Project, format_timestamp

MAC_SALT = "gedweb.governance.LedgerRecord.v1"
Kind = LedgerRecord.Kind


# --- digests, one function per kind ---------------------------------------------------
# They read attributes only, so the migration that records the baseline
# (governance/0006) runs them on its historical models.


def standards_import_fields(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "project_id": row.project_id,
        "path": row.path,
        "sha256": row.sha256,
        "content_sha256": _text(row, "content"),
        "author": row.author,
        "created_at": format_timestamp(row.created_at),
    }


def standards_decision_fields(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "standards_import_id": row.standards_import_id,
        "status": row.status,
        "decided_by": row.decided_by,
        "decided_at": format_timestamp(row.decided_at),
    }


def _optional_digest(text: str | None) -> str | None:
    return None if text is None else sha256_text(text)


def _text(row: Any, column: str) -> str | None:
    # The digest the record committed to: a text a redaction changed since
    # (memory.TextRedaction) leads back to it through the redaction records.
    return redaction.committed_sha256(row, column)


def document_revision_fields(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "project_id": row.project_id,
        "path": row.path,
        "revision": row.revision,
        "sha256": row.sha256,
        "content_sha256": _text(row, "content"),
        "reason_sha256": _text(row, "reason"),
        "author": row.author,
        "created_at": format_timestamp(row.created_at),
    }


def work_item_fields(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "project_id": row.project_id,
        "work_id": row.work_id,
        "summary_sha256": _text(row, "summary"),
        "mode": row.mode,
        "created_at": format_timestamp(row.created_at),
        "branch": row.branch,
        "base_head": row.base_head,
        "origin_sha256": (None if row.origin is None
                          else sha256_text(canonical_json(row.origin))),
        "author": row.author,
    }


def governance_revision_fields(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "work_id": row.work_id,
        "revision": row.revision,
        "document_sha256": _text(row, "document_json"),
        "evidence_count": row.evidence_count,
        "operation": row.operation,
        "author": row.author,
        "created_at": format_timestamp(row.created_at),
    }


def evidence_record_fields(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "work_id": row.work_id,
        "position": row.position,
        "evidence_id": row.evidence_id,
        "record_sha256": _text(row, "record_json"),
        "revision": row.revision,
        "author": row.author,
        "created_at": format_timestamp(row.created_at),
    }


def governance_trust_fields(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "work_id": row.work_id,
        "revision": row.revision,
        "document_sha256": row.document_sha256,
        "trusted_by": row.trusted_by,
        "trusted_at": format_timestamp(row.trusted_at),
    }


def work_file_fields(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "work_id": row.work_id,
        "name": row.name,
        "version": row.version,
        "content_sha256": _text(row, "content"),
        "author": row.author,
        "created_at": format_timestamp(row.created_at),
    }


def task_artifact_fields(row: Any) -> dict[str, Any]:
    return {**work_file_fields(row), "task_id": row.task_id}


def skill_fields(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "project_id": row.project_id,
        "name": row.name,
        "version": row.version,
        "content_sha256": _text(row, "content"),
        "recorded_hash": row.recorded_hash,
        "provenance": row.provenance,
        "reason_sha256": _text(row, "reason"),
        "source_sha256": _text(row, "source"),
        "installed_at": format_timestamp(row.installed_at),
        "gedpi_record_sha256": _optional_digest(row.gedpi_record),
        "author": row.author,
        "created_at": format_timestamp(row.created_at),
    }


DIGESTS: dict[str, Callable[[Any], dict[str, Any]]] = {
    Kind.STANDARDS_IMPORT: standards_import_fields,
    Kind.STANDARDS_DECISION: standards_decision_fields,
    Kind.DOCUMENT_REVISION: document_revision_fields,
    Kind.WORK_ITEM: work_item_fields,
    Kind.GOVERNANCE_REVISION: governance_revision_fields,
    Kind.EVIDENCE_RECORD: evidence_record_fields,
    Kind.WORK_FILE: work_file_fields,
    Kind.TASK_ARTIFACT: task_artifact_fields,
    Kind.SKILL: skill_fields,
    Kind.GOVERNANCE_TRUST: governance_trust_fields,
}

# The table each kind points into, and the lookup from its rows to their project.
TABLES: dict[str, tuple[type[models.Model], str]] = {
    Kind.STANDARDS_IMPORT: (StandardsImport, "project_id"),
    Kind.STANDARDS_DECISION: (StandardsDecision, "standards_import__project_id"),
    Kind.DOCUMENT_REVISION: (DocumentRevision, "project_id"),
    Kind.WORK_ITEM: (WorkItem, "project_id"),
    Kind.GOVERNANCE_REVISION: (GovernanceRevision, "work__project_id"),
    Kind.EVIDENCE_RECORD: (EvidenceRecord, "work__project_id"),
    Kind.WORK_FILE: (WorkFile, "work__project_id"),
    Kind.TASK_ARTIFACT: (TaskArtifact, "work__project_id"),
    Kind.SKILL: (Skill, "project_id"),
    Kind.GOVERNANCE_TRUST: (GovernanceTrust, "work__project_id"),
}
KIND_OF: dict[type[models.Model], str] = {model: kind for kind, (model, _) in TABLES.items()}


def project_of(kind: str, row: Any) -> str:
    """The project a covered row belongs to (work-scoped rows through their work item)."""
    project_id: str
    if kind == Kind.STANDARDS_DECISION:
        project_id = row.standards_import.project_id
    elif TABLES[kind][1].startswith("work__"):
        project_id = row.work.project_id
    else:
        project_id = row.project_id
    return project_id


def digest(kind: str, row: Any) -> str:
    return row_digest(kind, DIGESTS[kind](row))


def table_name(kind: str) -> str:
    return TABLES[kind][0]._meta.db_table


# --- writing ---------------------------------------------------------------------------


def record_fields(project_id: str, seq: int, kind: str, row_id: int, row_digest_: str,
                  created_at: str) -> dict[str, Any]:
    return {"project_id": project_id, "seq": seq, "kind": kind, "row_id": row_id,
            "digest": row_digest_, "created_at": created_at}


def new_record(*, project_id: str, seq: int, prev_hash: str, kind: str, row: Any,
               created_at: Any) -> dict[str, Any]:
    """The column values of the record of ``row`` at ``seq`` (also used by the migration)."""
    text = format_timestamp(created_at)
    value = digest(kind, row)
    link = record_hash(prev_hash, record_fields(project_id, seq, kind, row.id, value, text))
    return {
        "project_id": project_id, "seq": seq, "kind": kind, "row_id": row.id, "digest": value,
        "prev_hash": prev_hash, "hash": link, "created_at": created_at,
        "mac": checkpoints.checkpoint_mac(project_id, seq, link, text, salt=MAC_SALT),
        "key_id": checkpoints.key_id(),
    }


def ledger_append(*, project_id: str, kind: str, row: Any) -> LedgerRecord:
    """Record ``row`` in its project's ledger.

    The caller holds a transaction and has just inserted ``row`` in it;
    the project lock is taken here, and is already held by every service
    that writes a covered row (lock order: the project first).
    """
    lock_project(project_id)
    head = (LedgerRecord.objects.filter(project_id=project_id).order_by("-seq")
            .values_list("seq", "hash").first())
    seq, prev_hash = (head[0] + 1, head[1]) if head is not None else (1, GENESIS_HASH)
    record = LedgerRecord.objects.create(**new_record(
        project_id=project_id, seq=seq, prev_hash=prev_hash, kind=kind, row=row,
        created_at=timezone.now(),
    ))
    _sync_file_after_commit(project_id)
    return record


class _FileSync:
    """An on_commit hook: catch the project's LEDGER-CHECKPOINTS up (never raises)."""

    def __init__(self, project_id: str) -> None:
        self.project_id = project_id
        self.ran = False

    def __call__(self) -> None:
        # Here, not at the top: ledger_checkpoints imports this module.
        from governance import ledger_checkpoints

        self.ran = True
        ledger_checkpoints.after_commit(self.project_id)


def _sync_file_after_commit(project_id: str) -> None:
    """The LEDGER-CHECKPOINTS lines, once the transaction commits.

    Once per project and transaction: an import that records thousands of
    rows catches the file up once. The queue is Django's own
    (connection.run_on_commit), so a rolled-back savepoint takes its hook
    with it; a hook that already ran (a test running hooks early) is not
    waited for.
    """
    queued = transaction.get_connection().run_on_commit
    if any(isinstance(hook, _FileSync) and hook.project_id == project_id and not hook.ran
           for _, hook, _ in queued):
        return
    transaction.on_commit(_FileSync(project_id))


def refuse_outside_transaction(sender: type[models.Model], **kwargs: Any) -> None:
    """pre_save of every covered model: a row saved in autocommit would commit before
    its record could join it, so it is refused before the INSERT is sent."""
    if not transaction.get_connection(kwargs.get("using")).in_atomic_block:
        raise RuntimeError(
            f"{sender._meta.label} rows are recorded in the trust ledger and must be "
            "written inside transaction.atomic()"
        )


def record_created(sender: type[models.Model], instance: Any, created: bool,
                   **kwargs: Any) -> None:
    """post_save of every covered model: the row's record joins the same transaction.

    One rule in one place, whichever service, command or import inserts the
    row (memory.documents included, which cannot import governance).
    Covered rows are never updated (append-only).
    """
    if not created:
        return
    kind = KIND_OF[sender]
    ledger_append(project_id=project_of(kind, instance), kind=kind, row=instance)


def connect() -> None:
    """Record every covered model's inserts (GovernanceConfig.ready)."""
    for model in KIND_OF:
        uid = f"gedweb.ledger.{model._meta.label_lower}"
        pre_save.connect(refuse_outside_transaction, sender=model, dispatch_uid=f"{uid}.pre")
        post_save.connect(record_created, sender=model, dispatch_uid=uid)


# --- verification ----------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    table: str
    row_id: int | None
    message: str


def _authentic(record: LedgerRecord) -> bool:
    signed = checkpoints.Checkpoint(record.seq, record.hash, format_timestamp(record.created_at),
                                    record.mac, record.key_id)
    return checkpoints.authentic(record.project_id, signed, salt=MAC_SALT)


def _why_not_authentic(record: LedgerRecord) -> str:
    signed = checkpoints.Checkpoint(record.seq, record.hash, format_timestamp(record.created_at),
                                    record.mac, record.key_id)
    return checkpoints.why_not_authentic(signed)


def _link_problem(record: LedgerRecord, seq: int, prev_hash: str) -> str | None:
    if record.seq != seq:
        return (f"seq {seq} is missing: the record after seq {seq - 1} has seq {record.seq} "
                "(deleted or renumbered)")
    if record.prev_hash != prev_hash:
        return f"the prev_hash of seq {seq} is not the hash of the record before it"
    fields = record_fields(record.project_id, record.seq, record.kind, record.row_id,
                           record.digest, format_timestamp(record.created_at))
    if record.hash != record_hash(record.prev_hash, fields):
        return f"the record at seq {seq} no longer matches its hash (edited)"
    if not _authentic(record):
        return f"the record at seq {seq} {_why_not_authentic(record)}"
    return None


def _chain_findings(records: Iterable[LedgerRecord]) -> Iterator[Finding]:
    table = LedgerRecord._meta.db_table
    seq, prev_hash = 1, GENESIS_HASH
    for record in records:
        problem = _link_problem(record, seq, prev_hash)
        if problem is not None:
            yield Finding(table, record.pk, f"{table} row {record.pk}: {problem}")
            seq = record.seq
        seq += 1
        prev_hash = record.hash


def _row_problem(kind: str, row: Any, record: LedgerRecord | None) -> str | None:
    table = table_name(kind)
    if record is None:
        return (f"{table} row {row.pk} has no ledger record: it was inserted without going "
                "through GedWeb")
    if record.digest != digest(kind, row):
        return (f"{table} row {row.pk} no longer matches its ledger record (seq {record.seq}): "
                "changed without going through GedWeb")
    return None


def ledger_verify(project: Project) -> tuple[int, list[Finding]]:
    """Every link of the project's ledger and every covered row against its record.

    Returns the number of records and one finding per problem, each naming
    its table and row.
    """
    records = list(LedgerRecord.objects.filter(project=project).order_by("seq"))
    findings = list(_chain_findings(records))
    by_row = {(record.kind, record.row_id): record for record in records}
    for kind, (model, owner) in TABLES.items():
        seen: set[int] = set()
        for row in model._default_manager.filter(**{owner: project.pk}).order_by("pk"):
            seen.add(row.pk)
            problem = _row_problem(kind, row, by_row.get((kind, row.pk)))
            if problem is not None:
                findings.append(Finding(table_name(kind), row.pk, problem))
        for (record_kind, row_id), record in sorted(by_row.items(), key=lambda i: i[1].seq):
            if record_kind == kind and row_id not in seen:
                findings.append(Finding(
                    table_name(kind), row_id,
                    f"{table_name(kind)} row {row_id} is on the ledger (seq {record.seq}) but is "
                    "gone: deleted without going through GedWeb",
                ))
    return len(records), findings


def unverified_rows(targets: Iterable[tuple[str, Any]]) -> dict[tuple[str, int], str]:
    """(kind, row id) -> why, for each (kind, row) of ``targets`` that does not match an
    authentic ledger record of its project; rows that verify are left out.

    One query per kind for these rows' records only, not the whole chain:
    cheap enough for every context bundle.
    """
    wanted: dict[str, dict[int, Any]] = {}
    for kind, row in targets:
        wanted.setdefault(kind, {})[row.pk] = row
    query = models.Q()
    for kind, rows in wanted.items():
        query |= models.Q(kind=kind, row_id__in=list(rows))
    records = ({(r.kind, r.row_id): r for r in LedgerRecord.objects.filter(query)}
               if wanted else {})
    reasons: dict[tuple[str, int], str] = {}
    for kind, rows in wanted.items():
        for pk, row in rows.items():
            record = records.get((kind, pk))
            problem = _row_problem(kind, row, record)
            if problem is None and record is not None and not _sound(record,
                                                                     project_of(kind, row)):
                problem = (f"the ledger record (seq {record.seq}) of {table_name(kind)} row "
                           f"{pk} is not authentic")
            if problem is not None:
                reasons[(kind, pk)] = problem
    return reasons


def unverified_imports(rows: list[StandardsImport]) -> dict[int, str]:
    """Import id -> why, for each of ``rows`` (with their decisions) whose import or
    decision row does not match an authentic ledger record of its project.
    """
    def targets(row: StandardsImport) -> list[tuple[str, Any]]:
        decision = row.current_decision
        return [(Kind.STANDARDS_IMPORT, row),
                *([(Kind.STANDARDS_DECISION, decision)] if decision is not None else [])]

    reasons = unverified_rows(target for row in rows for target in targets(row))
    found: dict[int, str] = {}
    for row in rows:
        for kind, target in targets(row):
            if (kind, target.pk) in reasons:
                found.setdefault(row.pk, reasons[(kind, target.pk)])
    return found


def _sound(record: LedgerRecord, project_id: str) -> bool:
    """The record belongs to the project, matches its own hash and carries a valid HMAC."""
    fields = record_fields(record.project_id, record.seq, record.kind, record.row_id,
                           record.digest, format_timestamp(record.created_at))
    return (record.project_id == project_id
            and record.hash == record_hash(record.prev_hash, fields)
            and _authentic(record))
