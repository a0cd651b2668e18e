"""Durable documents: PROJECT.md, CONTEXT.md, ADRs, reports and handoffs.

GedPi's ``ged_memory`` writes these files once and later edits them in
place (gedpi-behaviour.md §8, Gap G-11). Here every write is a new
append-only DocumentRevision, so each document keeps its full history with
author, reason and hash; updates name the revision they replace.

Writes are not checked by the governance guard: GedPi's guard judges tool
calls of a bound agent request, and a service request is bound to no work
item. Handoffs are still scoped to the project's own work items: that rule
is governance's (``governance.handoffs.handoff_put`` finds the work item),
and this store writes a handoff only for the work item row it is handed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from gedweb.errors import Conflict, StaleRevision
from gedweb.lib.digest import sha256_text
from gedweb.lib.ids import SEGMENT, is_document_id, is_work_id
from gedweb.lib.substantive import is_substantive
from gedweb.validation import FieldErrors, validate_text
from memory import quotas, secret_scan
from memory.locks import next_version
from memory.models import DocumentRevision, Project

__all__ = [
    "DocumentPath",
    "PutResult",
    "WorkItemRow",
    "document_current",
    "document_list",
    "document_put",
    "document_revisions",
    "parse_document_path",
]

MAX_DOCUMENT_CHARS = 200_000
MAX_REASON_CHARS = 1_000
PATH_RULE = (
    "must be PROJECT.md, CONTEXT.md, adr/<id>.md, reports/<id>.md or handoff/<work_id>.md, "
    f"where <id> matches ^{SEGMENT}$ and <work_id> is a generated work id"
)


@dataclass(frozen=True)
class DocumentPath:
    kind: str  # "project", "context", "adr", "report" or "handoff"
    path: str
    ident: str | None = None

    @property
    def write_once(self) -> bool:
        # GedPi: "substantive, read-only reports".
        return self.kind == "report"


_FIXED = {"PROJECT.md": "project", "CONTEXT.md": "context"}
_FOLDERS = {"adr/": "adr", "reports/": "report", "handoff/": "handoff"}


def parse_document_path(path: str) -> DocumentPath:
    """The document a path names; ValueError for any path outside the fixed set."""
    if path in _FIXED:
        return DocumentPath(_FIXED[path], path)
    for folder, kind in _FOLDERS.items():
        if path.startswith(folder) and path.endswith(".md"):
            ident = path[len(folder) : -len(".md")]
            valid = is_work_id(ident) if kind == "handoff" else is_document_id(ident)
            if valid:
                return DocumentPath(kind, path, ident)
    raise ValueError(PATH_RULE)


def validate_document_path(path: str) -> DocumentPath:
    try:
        return parse_document_path(path)
    except ValueError as exc:
        raise ValidationError({"path": [str(exc)]}) from None


# --- the work item of a handoff ------------------------------------------------------
#
# A handoff must name a work item of the same project (Gap G-11). Work items
# are governance's, and memory never imports governance, so this store
# cannot look one up: the caller hands it the row (governance.handoffs), and
# without a row of this project and this work id every handoff is refused:
# fail closed. The work item may be in any lifecycle state, terminal or
# paused included: a closing summary of finished work is a legitimate
# handoff, and a service request is bound to no work item that could narrow
# the choice further.


class WorkItemRow(Protocol):
    """The work item a handoff names, as governance read it from the database."""

    @property
    def project_id(self) -> str: ...

    @property
    def work_id(self) -> str: ...


def _require_work_item(project: Project, work_id: str, work_item: WorkItemRow | None) -> None:
    if (
        work_item is None
        or work_item.project_id != project.pk
        or work_item.work_id != work_id
    ):
        raise ValidationError(
            {"path": [f"handoff needs an existing work item of project {project.pk}: {work_id}"]}
        )


# --- validation ---------------------------------------------------------------------


def validate_document_content(value: str) -> None:
    if len(value) > MAX_DOCUMENT_CHARS:
        raise ValidationError(
            f"must be at most {MAX_DOCUMENT_CHARS:,} characters, got {len(value):,}"
        )
    # Blank text is not substantive, which the check below names.
    validate_text(value, blank_allowed=True)
    if not is_substantive(value):
        raise ValidationError(
            "requires substantive content: more than headings, table separator rows, "
            "placeholder bullets (none yet, tbd, todo) or a known template"
        )


def validate_document_reason(value: str | None) -> None:
    if value is None:
        return
    validate_text(value, blank_message="must not be blank; omit it instead")
    if len(value) > MAX_REASON_CHARS:
        raise ValidationError(f"must be at most {MAX_REASON_CHARS} characters")


# --- writes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PutResult:
    document: DocumentRevision
    created: bool  # a new document (its first revision)
    changed: bool  # a new revision was stored; False for a same-content update


def document_put(
    *,
    project: Project,
    path: str,
    content: str,
    author: str,
    expected_revision: int | None = None,
    reason: str | None = None,
    work_item: WorkItemRow | None = None,
) -> PutResult:
    """Create a document or add its next revision.

    A handoff (``handoff/<work_id>.md``) is written only with ``work_item``,
    the row of that work id in this project: governance.handoffs.handoff_put
    is the writer that finds it. Without it a handoff is refused.

    A new document takes no expected_revision (or 0); an existing one needs
    the current revision number, so a writer never overwrites a revision it
    has not seen. Reports are write-once. An update whose content equals the
    current revision's stores nothing and returns that revision.

    The project lock (memory.locks.next_version: FOR NO KEY UPDATE on
    PostgreSQL, BEGIN IMMEDIATE's write lock on SQLite) is taken before the
    current revision is read, so of two writers with the same
    expected_revision exactly one wins; UNIQUE(project, path, revision) is
    the backstop.
    """
    target = validate_document_path(path)
    errors = FieldErrors()
    errors.check("content", validate_document_content, content)
    errors.check("reason", validate_document_reason, reason)
    if expected_revision is not None and expected_revision < 0:
        errors.add("expected_revision", "must be 0 (a new document) or a revision number")
    errors.raise_if_any()
    if target.kind == "handoff":
        _require_work_item(project, target.ident or "", work_item)
    # Before the lock, like every other check of the values.
    secret_scan.refuse_secrets(project, {"content": content, "reason": reason})
    try:
        with transaction.atomic():
            latest = next_version(
                project=project, rows=DocumentRevision.objects.for_project(project).for_path(path),
                field="revision",
            )
            current = latest.current
            if current is None:
                if expected_revision not in (None, 0):
                    raise StaleRevision(
                        f"{path} does not exist yet; create it without expected_revision",
                        current_revision=0,
                    )
            else:
                if target.write_once:
                    raise Conflict(f"{path} already exists; reports are write-once")
                if expected_revision is None:
                    raise ValidationError(
                        {
                            "expected_revision": [
                                f"required to update {path}; its current revision is "
                                f"{current.revision}"
                            ]
                        }
                    )
                if expected_revision != current.revision:
                    raise StaleRevision(
                        f"{path} is at revision {current.revision}, not {expected_revision}",
                        current_revision=current.revision,
                    )
                if content == current.content:
                    return PutResult(current, created=False, changed=False)
            quotas.quota_charge(project=project, kind="documents",
                                size_bytes=quotas.text_bytes(content))
            document = DocumentRevision(
                project=project,
                path=path,
                revision=latest.number,
                content=content,
                sha256=sha256_text(content),
                author=author,
                created_at=timezone.now(),
                reason=reason,
            )
            document.save(force_insert=True)
    except IntegrityError:
        raise Conflict(f"another write to {path} won the race; read it and retry") from None
    return PutResult(document, created=current is None, changed=True)


# --- reads ----------------------------------------------------------------------------


def document_current(project: Project, path: str) -> DocumentRevision | None:
    """The newest revision of a document (with its content), or None."""
    return DocumentRevision.objects.for_project(project).for_path(path).newest()


def document_revision(project: Project, path: str, revision: int) -> DocumentRevision | None:
    return DocumentRevision.objects.for_project(project).for_path(path).filter(
        revision=revision
    ).first()


def document_get(
    project: Project, path: str, revision: int | None = None
) -> DocumentRevision | None:
    """What a document route answers: revision ``revision``, else the current one."""
    if revision is None:
        return document_current(project, path)
    return document_revision(project, path, revision)


def document_revisions(project: Project, path: str) -> list[DocumentRevision]:
    """Every revision of a document, oldest first, without their content."""
    return list(
        DocumentRevision.objects.for_project(project)
        .for_path(path)
        .defer("content")
        .order_by("revision")
    )


def document_list(project: Project, prefix: str = "") -> list[DocumentRevision]:
    """Each document's current revision (without content), sorted by path.

    Filtered and sorted in Python: SQLite's LIKE ignores ASCII case and
    PostgreSQL's collation may ignore punctuation, and paths must compare by
    code point on both.
    """
    rows = DocumentRevision.objects.for_project(project).current().defer("content")
    return sorted((row for row in rows if row.path.startswith(prefix)), key=lambda r: r.path)
