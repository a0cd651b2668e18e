"""Operator admin: projects and tokens are managed here; memory is read-only."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest

from gedweb.exceptions import DomainError
from memory import services
from memory.models import (
    ChainCheckpoint,
    DocumentRevision,
    Membership,
    MemoryCandidate,
    MemoryEntry,
    Project,
    ProjectToken,
)


def operator_name(request: HttpRequest) -> str:
    """Author recorded for what an operator does in the admin."""
    return f"user:{request.user.get_username()}"[:64]


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ProjectCreateForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = ["id", "name"]


class TokenInline(admin.TabularInline):
    model = ProjectToken
    fields = ["name", "prefix", "created_at", "revoked_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class MembershipInline(admin.TabularInline):
    """Who may read this project's team pages, and in which role."""

    model = Membership
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]
    autocomplete_fields = ["user"]
    extra = 0


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "created_at"]
    search_fields = ["id", "name"]
    inlines = [MembershipInline, TokenInline]

    def get_inlines(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        # Members are added once the project exists; creation stays one form.
        return self.inlines if obj is not None else [TokenInline]

    def get_form(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = ProjectCreateForm
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["id", "created_at"] if obj is not None else []

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a project's memory is append-only, so projects stay

    def save_model(self, request: HttpRequest, obj: Project, form: Any, change: bool) -> None:
        if change:
            obj.save(update_fields=["name"])
            return
        project, raw = services.project_create(project_id=obj.id, name=obj.name)
        obj.created_at = project.created_at
        obj._state.adding = False
        messages.warning(
            request,
            f"Token '{services.DEFAULT_TOKEN_NAME}' for {project.id}: {raw} "
            "(shown once; copy it now)",
        )


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["project", "user", "role", "created_at"]
    list_filter = ["role", "project"]
    list_select_related = ["project", "user"]
    search_fields = ["project__id", "user__username", "user__email"]
    autocomplete_fields = ["user", "project"]
    readonly_fields = ["created_at"]


class TokenCreateForm(forms.ModelForm):
    class Meta:
        model = ProjectToken
        fields = ["project", "name"]


@admin.register(ProjectToken)
class ProjectTokenAdmin(admin.ModelAdmin):
    list_display = ["project", "name", "prefix", "created_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter), "project"]
    list_select_related = ["project"]
    search_fields = ["project__id", "name", "prefix"]
    actions = ["revoke_tokens"]

    def get_form(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = TokenCreateForm
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return []
        return ["project", "name", "prefix", "created_at", "revoked_at"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoke instead, so who held which token stays on record

    def save_model(self, request: HttpRequest, obj: ProjectToken, form: Any, change: bool) -> None:
        if change:
            return
        try:
            record, raw = services.project_token_create(project=obj.project, name=obj.name)
        except (DomainError, ValidationError) as exc:
            # The form already checked the name; this is a lost race.
            messages.error(request, str(getattr(exc, "message", exc)))
            return
        obj.pk = record.pk
        obj._state.adding = False
        messages.warning(request, f"Token '{record.name}' for {record.project_id}: {raw} "
                         "(shown once; copy it now)")

    @admin.action(description="Revoke selected tokens")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[ProjectToken]) -> None:
        count = 0
        for token in queryset.filter(revoked_at__isnull=True):
            token.revoke()
            count += 1
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


@admin.register(MemoryEntry)
class MemoryEntryAdmin(ReadOnlyAdmin):
    list_display = ["project", "seq", "category", "source", "author", "created_at"]
    list_filter = ["project", "category"]
    list_select_related = ["project"]
    search_fields = ["uuid", "category", "source", "author"]
    ordering = ["project_id", "-seq"]
    show_full_result_count = False


@admin.register(ChainCheckpoint)
class ChainCheckpointAdmin(ReadOnlyAdmin):
    list_display = ["project", "seq", "hash", "created_at"]
    list_filter = ["project"]
    list_select_related = ["project"]
    ordering = ["project_id", "-seq"]


@admin.register(MemoryCandidate)
class MemoryCandidateAdmin(ReadOnlyAdmin):
    list_display = ["project", "uuid", "category", "source", "author", "status", "created_at"]
    list_filter = ["status", "project"]
    list_select_related = ["project"]
    actions = ["approve_candidates", "reject_candidates"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Needed for the actions to show; every field stays read-only.
        return request.user.has_perm("memory.change_memorycandidate")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [field.name for field in self.model._meta.fields]

    def _resolve(self, request: HttpRequest, queryset: QuerySet, approve: bool) -> None:
        done = 0
        for candidate in queryset.select_related("project"):
            try:
                if approve:
                    services.candidate_approve(
                        project=candidate.project, candidate=candidate, by=operator_name(request)
                    )
                else:
                    services.candidate_reject(
                        project=candidate.project, candidate=candidate, by=operator_name(request)
                    )
                done += 1
            except DomainError as exc:
                self.message_user(request, f"{candidate}: {exc.message}", messages.WARNING)
        verb = "Approved" if approve else "Rejected"
        self.message_user(request, f"{verb} {done} candidate(s).", messages.SUCCESS)

    @admin.action(description="Approve selected candidates (creates memory entries)")
    def approve_candidates(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._resolve(request, queryset, approve=True)

    @admin.action(description="Reject selected candidates")
    def reject_candidates(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._resolve(request, queryset, approve=False)


class CurrentRevisionFilter(admin.SimpleListFilter):
    title = "revision"
    parameter_name = "current"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Current revision only")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "yes":
            return queryset.current()
        return queryset


@admin.register(DocumentRevision)
class DocumentRevisionAdmin(ReadOnlyAdmin):
    """Durable documents and every revision of them; written only through the API."""

    list_display = ["project", "path", "revision", "author", "created_at", "reason"]
    list_filter = [CurrentRevisionFilter, "project"]
    list_select_related = ["project"]
    search_fields = ["path", "author", "sha256"]
    ordering = ["project_id", "path", "-revision"]
    fields = ["project", "path", "revision", "sha256", "author", "created_at", "reason",
              "content"]
