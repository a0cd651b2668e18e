"""Operator admin: work items, governance history, skills and context deliveries are
read-only; standards imports are accepted or rejected here."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from gedweb.exceptions import DomainError
from governance import services, skills, standards
from governance.models import (
    ActiveWork,
    ContextDelivery,
    EvidenceRecord,
    GovernanceRevision,
    Skill,
    StandardsDecision,
    StandardsImport,
    TaskArtifact,
    WorkFile,
    WorkItem,
)
from memory.admin import ReadOnlyAdmin, operator_name


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


class StandardsStatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(status, status) for status in ("pending", "accepted", "rejected")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value():
            return queryset.with_status(self.value())
        return queryset


@admin.register(StandardsImport)
class StandardsImportAdmin(ReadOnlyAdmin):
    """Operators accept or reject here, through the same model methods as the API."""

    list_display = ["path", "project", "sha256", "status", "served", "author", "created_at",
                    "decided_by", "decided_at"]
    list_filter = [StandardsStatusFilter, "path", "project"]
    list_select_related = ["project", "decision"]
    search_fields = ["sha256", "path"]
    readonly_fields = ["project", "path", "sha256", "author", "created_at", "status",
                       "decided_by", "decided_at", "framed_content"]
    exclude = ["content"]
    actions = ["accept_imports", "reject_imports"]

    @admin.display(description="decided by")
    def decided_by(self, obj: StandardsImport) -> str | None:
        decision = obj.current_decision
        return decision.decided_by if decision else None

    @admin.display(description="decided at")
    def decided_at(self, obj: StandardsImport) -> Any:
        decision = obj.current_decision
        return decision.decided_at if decision else None

    @admin.display(description="in STANDARDS.md", boolean=True)
    def served(self, obj: StandardsImport) -> bool:
        return obj.pk in standards.served_ids(obj.project)

    @admin.display(description="content (exactly the bytes that were hashed)")
    def framed_content(self, obj: StandardsImport) -> str:
        return format_html("<pre>{}</pre>", obj.content)

    def has_decide_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("governance.add_standardsdecision")

    def _decide(self, request: HttpRequest, queryset: QuerySet, verb: str) -> None:
        for row in queryset.select_related("decision"):
            try:
                # Bound to the hash on the row the operator selected: a row's
                # bytes never change, so this is the hash that was shown.
                getattr(row, verb)(by=operator_name(request), sha256=row.sha256)
            except DomainError as exc:
                messages.error(request, f"{row.path} {row.sha256[:12]}: {exc.message}")
            else:
                messages.success(request, f"{row.path} {row.sha256[:12]}: {verb}ed")

    @admin.action(description="Accept the selected imports (their shown hash)",
                  permissions=["decide"])
    def accept_imports(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._decide(request, queryset, "accept")

    @admin.action(description="Reject the selected imports (their shown hash)",
                  permissions=["decide"])
    def reject_imports(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._decide(request, queryset, "reject")


@admin.register(StandardsDecision)
class StandardsDecisionAdmin(ReadOnlyAdmin):
    list_display = ["standards_import", "status", "decided_by", "decided_at"]
    list_filter = ["status"]
    list_select_related = ["standards_import"]


@admin.register(Skill)
class SkillAdmin(ReadOnlyAdmin):
    list_display = ["name", "project", "version", "status", "provenance", "author", "installed_at",
                    "created_at"]
    list_filter = ["provenance", "project"]
    list_select_related = ["project"]
    search_fields = ["name"]
    readonly_fields = ["project", "name", "version", "status", "content_hash", "recorded_hash",
                       "provenance", "reason", "source", "installed_at", "author", "created_at",
                       "triggers", "skill_content"]
    exclude = ["content"]

    @admin.display(description="status")
    def status(self, obj: Skill) -> str:
        return obj.status

    @admin.display(description="content hash (now)")
    def content_hash(self, obj: Skill) -> str:
        return obj.content_hash

    @admin.display(description="SKILL.md")
    def skill_content(self, obj: Skill) -> str:
        return format_html("<pre>{}</pre>", obj.content)

    @admin.display(description="triggers")
    def triggers(self, obj: Skill) -> str:
        return ", ".join(skills.skill_summary(obj)["triggers"])


@admin.register(ContextDelivery)
class ContextDeliveryAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "project", "work", "author", "format", "sha256", "size"]
    list_filter = ["format", "project"]
    list_select_related = ["project", "work"]
    search_fields = ["sha256", "author"]
