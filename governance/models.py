"""Work items and their governance history, stored append-only.

GedPi keeps one mutable governance.json per work item. Here every accepted
write adds one GovernanceRevision row (the document without its evidence)
and zero or more EvidenceRecord rows; a revision's full document is its row
plus the first ``evidence_count`` evidence records. Nothing is ever
updated or deleted: the ORM refuses, and migration triggers refuse raw SQL.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import models
from django.db.models import Q

from memory.models import Project
from memory.querysets import AppendOnlyError


class AppendOnlyQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only")

    def bulk_update(self, objs: Any, fields: Any, batch_size: Any = None) -> int:
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only")

    def update_or_create(self, *args: Any, **kwargs: Any) -> Any:
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only")


class AppendOnlyModel(models.Model):
    """Rows are inserted once and never changed."""

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError(f"{type(self).__name__} rows are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise AppendOnlyError(f"{type(self).__name__} rows are append-only")


class WorkItemQuerySet(AppendOnlyQuerySet):
    def for_project(self, project: Project) -> WorkItemQuerySet:
        return self.filter(project=project)


class WorkItem(AppendOnlyModel):
    """A work item and its META, which never changes after it is opened."""

    class Mode(models.TextChoices):
        READ_ONLY = "read-only"
        DIRECT_CHANGE = "direct-change"
        PLANNED_CHANGE = "planned-change"

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="work_items")
    work_id = models.CharField(max_length=128, unique=True)
    summary = models.CharField(max_length=240)
    mode = models.CharField(max_length=16, choices=Mode.choices)
    created_at = models.DateTimeField()
    branch = models.CharField(max_length=255, null=True, blank=True)
    base_head = models.CharField(max_length=64, null=True, blank=True)
    origin = models.JSONField(null=True, blank=True)
    author = models.CharField(max_length=64)

    objects = WorkItemQuerySet.as_manager()

    class Meta:
        ordering = ["project_id", "work_id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(mode__in=["read-only", "direct-change", "planned-change"]),
                name="governance_workitem_mode_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.work_id

    def meta(self) -> dict[str, Any]:
        """META.json in GedPi's shape."""
        from gedweb.lib.governance import format_time

        meta: dict[str, Any] = {
            "schemaVersion": 1,
            "workId": self.work_id,
            "summary": self.summary,
            "createdAt": format_time(self.created_at),
            "branch": self.branch,
            "baseHead": self.base_head,
        }
        if self.origin is not None:
            meta["origin"] = self.origin
        return meta


class GovernanceRevision(AppendOnlyModel):
    work = models.ForeignKey(WorkItem, on_delete=models.PROTECT, related_name="revisions")
    revision = models.PositiveIntegerField()
    # The document without its "evidence" list, as JSON text in GedPi's key
    # order (a jsonb column would reorder keys).
    document_json = models.TextField()
    evidence_count = models.PositiveIntegerField()
    operation = models.CharField(max_length=64)
    author = models.CharField(max_length=64)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["work_id", "revision"]
        constraints = [
            # Two app servers can never both write revision n+1 (GedPi gap G-1).
            models.UniqueConstraint(
                fields=["work", "revision"], name="governance_revision_unique_number"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.work_id} r{self.revision}"

    @property
    def document_without_evidence(self) -> dict[str, Any]:
        return json.loads(self.document_json)


class EvidenceRecord(AppendOnlyModel):
    """One governance evidence record; the list can only grow (GedPi gap G-2)."""

    work = models.ForeignKey(WorkItem, on_delete=models.PROTECT, related_name="evidence")
    position = models.PositiveIntegerField(help_text="Index in the evidence list (append order).")
    evidence_id = models.CharField(max_length=255)
    record_json = models.TextField()
    revision = models.PositiveIntegerField(help_text="The revision that appended it.")
    author = models.CharField(max_length=64)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["work_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["work", "position"], name="governance_evidence_unique_position"
            ),
            models.UniqueConstraint(
                fields=["work", "evidence_id"], name="governance_evidence_unique_id"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.work_id} evidence {self.evidence_id}"

    @property
    def record(self) -> dict[str, Any]:
        return json.loads(self.record_json)


class WorkFile(AppendOnlyModel):
    """A version of DIRECT.md, SPEC.md, TASKS.md or TESTS.md; every write adds one."""

    class Name(models.TextChoices):
        DIRECT = "DIRECT.md"
        SPEC = "SPEC.md"
        TASKS = "TASKS.md"
        TESTS = "TESTS.md"

    work = models.ForeignKey(WorkItem, on_delete=models.PROTECT, related_name="files")
    name = models.CharField(max_length=16, choices=Name.choices)
    version = models.PositiveIntegerField()
    content = models.TextField()
    author = models.CharField(max_length=64)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["work_id", "name", "version"]
        constraints = [
            models.UniqueConstraint(
                fields=["work", "name", "version"], name="governance_workfile_unique_version"
            ),
            models.CheckConstraint(
                condition=Q(name__in=["DIRECT.md", "SPEC.md", "TASKS.md", "TESTS.md"]),
                name="governance_workfile_name_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.work_id}/{self.name} v{self.version}"


class TaskArtifact(AppendOnlyModel):
    """A version of a task's BRIEF.md, HISTORY.json or RECOVERY.md."""

    class Name(models.TextChoices):
        BRIEF = "BRIEF.md"
        HISTORY = "HISTORY.json"
        RECOVERY = "RECOVERY.md"

    work = models.ForeignKey(WorkItem, on_delete=models.PROTECT, related_name="task_artifacts")
    task_id = models.CharField(max_length=128)
    name = models.CharField(max_length=16, choices=Name.choices)
    version = models.PositiveIntegerField()
    content = models.TextField()
    author = models.CharField(max_length=64)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["work_id", "task_id", "name", "version"]
        constraints = [
            models.UniqueConstraint(
                fields=["work", "task_id", "name", "version"],
                name="governance_taskartifact_unique_version",
            ),
            models.CheckConstraint(
                condition=Q(name__in=["BRIEF.md", "HISTORY.json", "RECOVERY.md"]),
                name="governance_taskartifact_name_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.work_id}/tasks/{self.task_id}/{self.name} v{self.version}"


class ActiveWork(models.Model):
    """Which work item a session has selected (GedPi's active-work pointer)."""

    class Operation(models.TextChoices):
        OPEN = "open"
        CONTINUE = "continue"

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="active_work")
    # First 32 hex of sha256(session id), as GedPi names its pointer files.
    session_key = models.CharField(max_length=32)
    session_id = models.CharField(max_length=256)
    work = models.ForeignKey(WorkItem, on_delete=models.PROTECT, related_name="selections")
    operation = models.CharField(max_length=16, choices=Operation.choices)
    request_id = models.CharField(max_length=256)
    selected_at = models.DateTimeField()

    class Meta:
        ordering = ["project_id", "session_key"]
        verbose_name_plural = "active work pointers"
        constraints = [
            models.UniqueConstraint(
                fields=["project", "session_key"], name="governance_activework_unique_session"
            ),
            models.CheckConstraint(
                condition=Q(operation__in=["open", "continue"]),
                name="governance_activework_operation_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id} session {self.session_key} -> {self.work_id}"

    def as_dict(self) -> dict[str, Any]:
        from gedweb.lib.governance import format_time

        return {
            "schemaVersion": 1,
            "sessionId": self.session_id,
            "workId": self.work.work_id,
            "operation": self.operation,
            "selectedAt": format_time(self.selected_at),
            "requestId": self.request_id,
        }
