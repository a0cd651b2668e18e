"""Governance's stored text for `manage.py memory scan` (memory.secret_scan.register_source).

memory never imports governance, so these register themselves from
GovernanceConfig.ready(). Each yields a row's name and its texts; the
governance revisions yield only the strings each revision added to the one
before it, as the write scanned them (governance.services._store_revision),
so a string kept from revision to revision is reported once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from django.db import connection, models

from gedweb.errors import InvalidState
from gedweb.lib.canonical import canonical_json
from governance.models import (
    ContextBundle,
    EvidenceRecord,
    GovernanceRevision,
    Skill,
    StandardsImport,
    TaskArtifact,
    WorkFile,
    WorkItem,
)
from memory import redaction, secret_scan
from memory.models import Project, SecretFinding, TextRedaction

Rows = Iterator[tuple[dict[str, Any], Mapping[str, str | None]]]
BATCH = secret_scan.BATCH


def _work_items(project: Project) -> Rows:
    rows = WorkItem.objects.filter(project=project).order_by("created_at", "id")
    for work_id, summary in rows.values_list("work_id", "summary").iterator(chunk_size=BATCH):
        yield {"work_id": work_id}, {"summary": summary}


def _work_files(project: Project) -> Rows:
    rows = (WorkFile.objects.filter(work__project=project).order_by("work_id", "name", "version")
            .values_list("work__work_id", "name", "version", "content"))
    for work_id, name, version, content in rows.iterator(chunk_size=BATCH):
        yield {"work_id": work_id, "name": name, "version": version}, {"content": content}


def _task_artifacts(project: Project) -> Rows:
    rows = (TaskArtifact.objects.filter(work__project=project)
            .order_by("work_id", "task_id", "name", "version")
            .values_list("work__work_id", "task_id", "name", "version", "content"))
    for work_id, task_id, name, version, content in rows.iterator(chunk_size=BATCH):
        yield ({"work_id": work_id, "task_id": task_id, "name": name, "version": version},
               {"content": content})


def _evidence(project: Project) -> Rows:
    rows = (EvidenceRecord.objects.filter(work__project=project).order_by("work_id", "position")
            .values_list("work__work_id", "position", "record_json"))
    for work_id, position, record_json in rows.iterator(chunk_size=BATCH):
        yield ({"work_id": work_id, "position": position},
               secret_scan.json_texts(json.loads(record_json), "evidence"))


def _revisions(project: Project) -> Rows:
    rows = (GovernanceRevision.objects.filter(work__project=project)
            .order_by("work_id", "revision")
            .values_list("work_id", "work__work_id", "revision", "document_json"))
    previous: tuple[int, Any] | None = None
    for pk, work_id, revision, document_json in rows.iterator(chunk_size=BATCH):
        document = json.loads(document_json)
        before = previous[1] if previous is not None and previous[0] == pk else None
        previous = (pk, document)
        yield ({"work_id": work_id, "revision": revision},
               secret_scan.json_fields(before, document, "governance"))


def _standards(project: Project) -> Rows:
    rows = (StandardsImport.objects.filter(project=project).order_by("created_at", "id")
            .values_list("id", "path", "sha256", "content"))
    for ident, path, sha256, content in rows.iterator(chunk_size=BATCH):
        yield {"import": ident, "path": path, "sha256": sha256}, {"content": content}


def _skills(project: Project) -> Rows:
    rows = (Skill.objects.filter(project=project).order_by("name", "version")
            .values_list("name", "version", "content", "reason", "source"))
    for name, version, content, reason, source in rows.iterator(chunk_size=BATCH):
        yield ({"name": name, "version": version},
               {"content": content, "reason": reason, "source": source})


def register() -> None:
    for name, source in (("work_item", _work_items), ("work_file", _work_files),
                         ("task_artifact", _task_artifacts), ("evidence", _evidence),
                         ("governance_revision", _revisions), ("standards_import", _standards),
                         ("skill", _skills)):
        secret_scan.register_source(name, source)
    register_redactions()


# --- redaction (memory.redaction.finding_redact) --------------------------------------------
# Each source says where a finding's row is; the service cuts the span.


def _gone(finding: SecretFinding, project: Project) -> InvalidState:
    return InvalidState(f"{finding.source.replace('_', ' ')} {finding.where()} of {project.pk} "
                        "is gone: run `manage.py memory scan` again")


def _plain(model: type[models.Model], columns: tuple[str, ...],
           find: Callable[[Project, dict[str, Any]], models.QuerySet[Any]]) -> redaction.Locator:
    def locate(project: Project, finding: SecretFinding) -> tuple[redaction.Target, str]:
        row = find(project, finding.row).first() if finding.field in columns else None
        if row is None:
            raise _gone(finding, project)
        return redaction.text_target(model, row.pk, finding.field, getattr(row, finding.field),
                                     finding)

    return locate


def _json(model: type[models.Model], column: str, prefix: str,
          find: Callable[[Project, dict[str, Any]], models.QuerySet[Any]]) -> redaction.Locator:
    def locate(project: Project, finding: SecretFinding) -> tuple[redaction.Target, str]:
        row = find(project, finding.row).first()
        if row is None:
            raise _gone(finding, project)
        raw = getattr(row, column)
        strings = secret_scan.json_texts(json.loads(raw), prefix)
        return redaction.json_target(model, row.pk, column, raw, finding, strings)

    return locate


def _finder(model: type[models.Model], scope: str, **names: str
            ) -> Callable[[Project, dict[str, Any]], models.QuerySet[Any]]:
    def find(project: Project, row: dict[str, Any]) -> models.QuerySet[Any]:
        rows: models.QuerySet[Any] = model._default_manager.filter(
            **{scope: project}, **{field: row.get(key) for field, key in names.items()})
        return rows

    return find


def bundle_text_scrub(project: Project, target: redaction.Target, secret: str, notice: str,
                      record: TextRedaction) -> int:
    """Cut a redacted secret out of every stored bundle of the project that delivered it.

    A bundle holds documents, standards, skills and governance as delivered
    (section by section); every occurrence of the secret's text becomes the
    notice, the outline gets the new lengths and ``text_redaction`` the
    record: the UPDATE the table's triggers allow (governance 0015).
    """
    scrubbed = 0
    for row in ContextBundle.objects.filter(project=project, text__contains=secret):
        sections, texts, at = [], [], 0
        for title, trust, file, length in json.loads(row.sections):
            text = row.text[at:at + length].replace(secret, notice)
            at += length + 2  # the blank line between sections
            sections.append([title, trust, file, len(text)])
            texts.append(text)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE governance_contextbundle SET text = %s, sections = %s,"
                " text_redaction_id = %s WHERE id = %s",
                # Joined as Bundle.text joins its sections.
                ["\n\n".join(texts) + "\n", canonical_json(sections), record.pk, row.pk])
        scrubbed += 1
    return scrubbed


def register_redactions() -> None:
    for name, model, locate in (
        ("work_item", WorkItem, _plain(WorkItem, ("summary",),
                                       _finder(WorkItem, "project", work_id="work_id"))),
        ("work_file", WorkFile, _plain(WorkFile, ("content",), _finder(
            WorkFile, "work__project", work__work_id="work_id", name="name",
            version="version"))),
        ("task_artifact", TaskArtifact, _plain(TaskArtifact, ("content",), _finder(
            TaskArtifact, "work__project", work__work_id="work_id", task_id="task_id",
            name="name", version="version"))),
        ("evidence", EvidenceRecord, _json(EvidenceRecord, "record_json", "evidence", _finder(
            EvidenceRecord, "work__project", work__work_id="work_id", position="position"))),
        ("governance_revision", GovernanceRevision, _json(
            GovernanceRevision, "document_json", "governance", _finder(
                GovernanceRevision, "work__project", work__work_id="work_id",
                revision="revision"))),
        ("standards_import", StandardsImport, _plain(StandardsImport, ("content",), _finder(
            StandardsImport, "project", id="import"))),
        ("skill", Skill, _plain(Skill, ("content", "reason", "source"), _finder(
            Skill, "project", name="name", version="version"))),
    ):
        redaction.register_redactable(name, redaction.Redactable(
            locate=locate, tables=(model._meta.db_table,)))
    redaction.register_text_copies("context_bundles", bundle_text_scrub)
    redaction.register_copy_table(ContextBundle._meta.db_table)
