"""Governance's stored text for `manage.py memory scan` (memory.secret_scan.register_source).

memory never imports governance, so these register themselves from
GovernanceConfig.ready(). Each yields a row's name and its texts; the
governance revisions yield only the strings each revision added to the one
before it, as the write scanned them (governance.services._store_revision),
so a string kept from revision to revision is reported once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from governance.models import (
    EvidenceRecord,
    GovernanceRevision,
    Skill,
    StandardsImport,
    TaskArtifact,
    WorkFile,
    WorkItem,
)
from memory import secret_scan
from memory.models import Project

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
