"""Operator admin for work items and their governance history: read-only."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html

from governance import services
from governance.models import (
    ActiveWork,
    EvidenceRecord,
    GovernanceRevision,
    TaskArtifact,
    WorkFile,
    WorkItem,
)
from memory.admin import ReadOnlyAdmin


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class RevisionInline(ReadOnlyInline):
    model = GovernanceRevision
    fields = ["revision", "operation", "author", "created_at", "evidence_count"]
    readonly_fields = fields
    ordering = ["-revision"]


class EvidenceInline(ReadOnlyInline):
    model = EvidenceRecord
    fields = ["position", "evidence_id", "revision", "author", "created_at"]
    readonly_fields = fields


class FileInline(ReadOnlyInline):
    model = WorkFile
    fields = ["name", "version", "author", "created_at"]
    readonly_fields = fields


@admin.register(WorkItem)
class WorkItemAdmin(ReadOnlyAdmin):
    list_display = ["work_id", "project", "mode", "summary", "author", "created_at"]
    list_filter = ["mode", "project"]
    list_select_related = ["project"]
    search_fields = ["work_id", "summary"]
    readonly_fields = ["project", "work_id", "summary", "mode", "created_at", "branch",
                       "base_head", "origin", "author", "current_governance", "guard_state"]
    inlines = [RevisionInline, EvidenceInline, FileInline]

    @admin.display(description="current governance")
    def current_governance(self, obj: WorkItem) -> str:
        document = services.governance_document(obj)
        return format_html("<pre>{}</pre>", json.dumps(document, indent=2, ensure_ascii=False))

    @admin.display(description="guard")
    def guard_state(self, obj: WorkItem) -> str:
        lines = []
        for action in ("metadata-mutation", "source-mutation", "commit"):
            reason = services.guard_check(work=obj, action=action)
            lines.append(f"{action}: {'allowed' if reason is None else reason}")
        return format_html("<pre>{}</pre>", "\n".join(lines))


@admin.register(GovernanceRevision)
class GovernanceRevisionAdmin(ReadOnlyAdmin):
    list_display = ["work", "revision", "operation", "author", "created_at"]
    list_filter = ["operation"]
    list_select_related = ["work"]
    search_fields = ["work__work_id"]
    readonly_fields = ["work", "revision", "operation", "author", "created_at",
                       "evidence_count", "document"]
    exclude = ["document_json"]

    @admin.display(description="document at this revision")
    def document(self, obj: GovernanceRevision) -> str:
        document = services.revision_document(obj.work, obj.revision)
        return format_html("<pre>{}</pre>", json.dumps(document, indent=2, ensure_ascii=False))


@admin.register(EvidenceRecord)
class EvidenceRecordAdmin(ReadOnlyAdmin):
    list_display = ["work", "position", "evidence_id", "revision", "author", "created_at"]
    list_select_related = ["work"]
    search_fields = ["work__work_id", "evidence_id"]


@admin.register(WorkFile)
class WorkFileAdmin(ReadOnlyAdmin):
    list_display = ["work", "name", "version", "author", "created_at"]
    list_filter = ["name"]
    list_select_related = ["work"]


@admin.register(TaskArtifact)
class TaskArtifactAdmin(ReadOnlyAdmin):
    list_display = ["work", "task_id", "name", "version", "author", "created_at"]
    list_filter = ["name"]
    list_select_related = ["work"]


@admin.register(ActiveWork)
class ActiveWorkAdmin(ReadOnlyAdmin):
    list_display = ["project", "session_id", "work", "operation", "request_id", "selected_at"]
    list_select_related = ["project", "work"]
