"""Operator admin: work items, governance history, skills and context deliveries are
read-only; standards imports are accepted or rejected here (on their page or in the
list), scoped to the user's projects like memory's admin (memory.admin)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import CharField, F, QuerySet, Value
from django.db.models.functions import Concat
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html

import gedweb.admin_site  # noqa: F401  (the site's title and its index of pending decisions)
from gedweb.admin import ProjectFilter, ReadOnlyAdmin, operator_name, post_only_url
from gedweb.errors import DomainError
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

if TYPE_CHECKING:
    from governance.models import StandardsImportQuerySet

    # The stubs make inlines generic in their child and parent models; at
    # runtime they are not subscriptable (no django-stubs-ext), so the
    # parameters exist for mypy only. Each inline below is a row of a work item.
    WorkItemInlineBase = admin.TabularInline[Any, WorkItem]
else:
    WorkItemInlineBase = admin.TabularInline


def label(*parts: Any) -> Concat:
    """A row's readable title, computed by the database (see ReadOnlyInline)."""
    return Concat(*(Value(part) if isinstance(part, str) else part for part in parts),
                  output_field=CharField())


class ReadOnlyInline(WorkItemInlineBase):
    """A read-only inline whose rows are titled by ``row_label``, not the model's str().

    str() of these rows names the work item by its database id ("2 r5");
    the template shows the annotated ``admin_label`` instead.
    """

    template = "admin/edit_inline/labelled_tabular.html"
    extra = 0
    can_delete = False
    show_change_link = True
    row_label: tuple[Any, ...] = ()

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        if self.row_label:
            queryset = queryset.annotate(admin_label=label(*self.row_label))
        return queryset

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class RevisionInline(ReadOnlyInline):
    model = GovernanceRevision
    fields = ("revision", "operation", "author", "created_at", "evidence_count")
    readonly_fields = fields
    ordering = ["-revision"]
    row_label = ("revision ", F("revision"), " of ", F("work__work_id"))


class EvidenceInline(ReadOnlyInline):
    model = EvidenceRecord
    fields = ("position", "evidence_id", "revision", "author", "created_at")
    readonly_fields = fields
    row_label = ("evidence ", F("evidence_id"), " of ", F("work__work_id"))


class FileInline(ReadOnlyInline):
    model = WorkFile
    fields = ("name", "version", "author", "created_at")
    readonly_fields = fields
    row_label = (F("name"), " version ", F("version"), " of ", F("work__work_id"))


@admin.register(WorkItem)
class WorkItemAdmin(ReadOnlyAdmin):
    list_display = ["work_id", "project", "mode", "summary", "author", "created_at"]
    list_filter = ["mode", ("project", ProjectFilter)]
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
    project_path = "work__project"
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
    project_path = "work__project"
    list_display = ["work", "position", "evidence_id", "revision", "author", "created_at"]
    list_select_related = ["work"]
    search_fields = ["work__work_id", "evidence_id"]


@admin.register(WorkFile)
class WorkFileAdmin(ReadOnlyAdmin):
    project_path = "work__project"
    list_display = ["work", "name", "version", "author", "created_at"]
    list_filter = ["name"]
    list_select_related = ["work"]


@admin.register(TaskArtifact)
class TaskArtifactAdmin(ReadOnlyAdmin):
    project_path = "work__project"
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

    def queryset(self, request: HttpRequest, queryset: QuerySet[StandardsImport]
                 ) -> QuerySet[StandardsImport]:
        status = self.value()
        if status:
            # The admin's queryset comes from StandardsImport.objects.
            return cast("StandardsImportQuerySet", queryset).with_status(status)
        return queryset


class StandardsPathFilter(admin.SimpleListFilter):
    """The file names as stored ("AGENTS.md"), not the choices' labels ("Agents")."""

    title = "file"
    parameter_name = "path"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(value, value) for value in StandardsImport.Path.values]

    def queryset(self, request: HttpRequest, queryset: QuerySet[StandardsImport]
                 ) -> QuerySet[StandardsImport]:
        if self.value():
            return queryset.filter(path=self.value())
        return queryset


@admin.register(StandardsImport)
class StandardsImportAdmin(ReadOnlyAdmin):
    """Operators accept or reject here, through the same model methods as the API.

    On an import's page the buttons send the sha256 shown on that page, so a
    decision is bound to the bytes the operator read.
    """

    list_display = ["file_name", "project", "short_sha256", "status", "served", "author",
                    "created_at", "decided_by", "decided_at"]
    list_filter = [StandardsStatusFilter, StandardsPathFilter, ("project", ProjectFilter)]
    list_select_related = ["project", "decision"]
    search_fields = ["sha256", "path"]
    readonly_fields = ("project", "file_name", "sha256", "author", "created_at", "status",
                       "decided_by", "decided_at", "framed_content")
    fields = readonly_fields
    actions = ["accept_imports", "reject_imports"]

    @admin.display(description="file", ordering="path")
    def file_name(self, obj: StandardsImport) -> str:
        return obj.path

    @admin.display(description="sha256", ordering="sha256")
    def short_sha256(self, obj: StandardsImport) -> str:
        return obj.sha256[:12]

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

    def _decide_one(self, request: HttpRequest, row: StandardsImport, verb: str, sha256: str
                    ) -> bool:
        try:
            getattr(row, verb)(by=operator_name(request), sha256=sha256)
        except DomainError as exc:
            messages.error(request, f"{row.path} {row.sha256[:12]}: {exc.message}")
            return False
        messages.success(request, f"{row.path} {row.sha256[:12]}: {verb}ed")
        return True

    def _decide(self, request: HttpRequest, queryset: QuerySet[StandardsImport], verb: str
                ) -> None:
        for row in queryset.select_related("decision"):
            # Bound to the hash on the row the operator selected: a row's
            # bytes never change, so this is the hash that was shown.
            self._decide_one(request, row, verb, row.sha256)

    @admin.action(description="Accept the selected imports (their shown hash)",
                  permissions=["decide"])
    def accept_imports(self, request: HttpRequest, queryset: QuerySet[StandardsImport]
                       ) -> None:
        self._decide(request, queryset, "accept")

    @admin.action(description="Reject the selected imports (their shown hash)",
                  permissions=["decide"])
    def reject_imports(self, request: HttpRequest, queryset: QuerySet[StandardsImport]
                       ) -> None:
        self._decide(request, queryset, "reject")

    # --- the buttons on the import's own page -----------------------------------------

    def get_urls(self) -> list[Any]:
        return [
            post_only_url(self, "accept", self.accept_view),
            post_only_url(self, "reject", self.reject_view),
            *super().get_urls(),
        ]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = {"can_decide": self.has_decide_permission(request), **(extra_context or {})}
        return super().change_view(request, object_id, form_url, context)

    def accept_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._decision_view(request, object_id, "accept")

    def reject_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._decision_view(request, object_id, "reject")

    def _decision_view(self, request: HttpRequest, object_id: str, verb: str) -> HttpResponse:
        if not self.has_decide_permission(request):
            raise PermissionDenied
        row = self.get_object(request, unquote(object_id))
        if row is None:  # missing, or another project's
            raise Http404
        sha256 = request.POST.get("sha256", "")
        if not sha256:
            messages.error(request, f"{row.path}: the decision names no sha256; nothing changed")
        else:
            self._decide_one(request, row, verb, sha256)
        return HttpResponseRedirect(
            reverse("admin:governance_standardsimport_change", args=[row.pk])
        )


@admin.register(StandardsDecision)
class StandardsDecisionAdmin(ReadOnlyAdmin):
    project_path = "standards_import__project"
    list_display = ["standards_import", "status", "decided_by", "decided_at"]
    list_filter = ["status"]
    list_select_related = ["standards_import"]


@admin.register(Skill)
class SkillAdmin(ReadOnlyAdmin):
    list_display = ["name", "project", "version", "status", "provenance", "author", "installed_at",
                    "created_at"]
    list_filter = ["provenance", ("project", ProjectFilter)]
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
    list_display = ["created_at", "project", "work", "author", "session", "format", "sha256",
                    "size", "recalled"]
    list_filter = ["format", ("project", ProjectFilter)]
    list_select_related = ["project", "work"]
    search_fields = ["sha256", "author", "session"]
