"""The admin's toolkit, shared by both apps: every admin page scoped to the user's projects.

A superuser sees every project; other staff see the projects they are
operator members of, and another project's object is simply missing.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import URLPattern, path
from django.views.decorators.http import require_POST

from memory.models import Membership, Project


def operator_name(request: HttpRequest) -> str:
    """Author recorded for what an operator does in the admin."""
    return f"user:{request.user.get_username()}"[:64]


def operated_project_ids(user: Any) -> QuerySet:
    """Ids of the projects a non-superuser runs in the admin: their operator memberships.

    A subquery, so scoped lists filter with ``project_id IN (...)`` and never
    join (a membership is unique per user and project).
    """
    return Membership.objects.filter(user=user, role=Membership.Role.OPERATOR).values(
        "project_id"
    )


def admin_projects(user: Any) -> QuerySet[Project]:
    """The projects this admin user may see and act on: all for a superuser."""
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(pk__in=operated_project_ids(user))


class ProjectFilter(admin.RelatedFieldListFilter):
    """A project filter that offers only the projects the user may see."""

    def field_choices(self, field: Any, request: HttpRequest, model_admin: Any) -> list[Any]:
        ordering = self.field_admin_ordering(field, request, model_admin)
        limit = None
        if not request.user.is_superuser:
            limit = {"pk__in": operated_project_ids(request.user)}
        return field.get_choices(include_blank=False, ordering=ordering, limit_choices_to=limit)


class ProjectScopedAdmin(admin.ModelAdmin):
    """Every list, object page, action and form choice limited to the user's projects.

    ``project_path`` is the lookup from the model to its project. Object
    pages and actions fetch through get_queryset, so another project's object
    is missing (the admin's "doesn't exist" redirect), and an action POST
    naming its id selects nothing.
    """

    project_path = "project"

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return queryset.filter(**{f"{self.project_path}__in": operated_project_ids(request.user)})

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.related_model is Project:
            kwargs["queryset"] = admin_projects(request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class ReadOnlyAdmin(ProjectScopedAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def post_only_url(model_admin: admin.ModelAdmin, verb: str, view: Any) -> URLPattern:
    """``<object_id>/<verb>/``: CSRF-checked, staff-only, POST only (a GET changes nothing)."""
    opts = model_admin.model._meta
    return path(
        f"<path:object_id>/{verb}/",
        model_admin.admin_site.admin_view(require_POST(view)),
        name=f"{opts.app_label}_{opts.model_name}_{verb}",
    )
