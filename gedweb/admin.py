"""The admin's toolkit, shared by both apps: every admin page scoped to the user's projects.

A superuser sees every project; other staff see the projects they are
operator members of, and another project's object is simply missing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict, cast

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path
from django.views.decorators.http import require_POST

from memory.models import Membership, Project

if TYPE_CHECKING:
    from django.db.models.fields.related import RelatedField
    from django.utils.functional import _StrOrPromise

    # The stubs make ModelAdmin generic in its model; at runtime it is not
    # subscriptable (no django-stubs-ext), so the parameter exists for mypy only.
    ModelAdminBase = admin.ModelAdmin[Any]
else:
    ModelAdminBase = admin.ModelAdmin


def operator_name(request: HttpRequest) -> str:
    """Author recorded for what an operator does in the admin."""
    return f"user:{request.user.get_username()}"[:64]


class ProjectIdRow(TypedDict):
    project_id: str


def operated_project_ids(user: Any) -> QuerySet[Membership, ProjectIdRow]:
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

    def field_choices(
        self, field: RelatedField[Any, Any], request: HttpRequest,
        model_admin: admin.ModelAdmin[Any],
    ) -> list[tuple[str, _StrOrPromise]]:
        ordering = self.field_admin_ordering(field, request, model_admin)
        limit = None
        if not request.user.is_superuser:
            limit = {"pk__in": operated_project_ids(request.user)}
        choices = field.get_choices(include_blank=False, ordering=ordering, limit_choices_to=limit)
        # Without the blank choice, a related field's choices are a flat list
        # of (pk, label); the stubs type the general case (groups, blank).
        return cast("list[tuple[str, _StrOrPromise]]", choices)


class ProjectScopedAdmin(ModelAdminBase):
    """Every list, object page, action and form choice limited to the user's projects.

    ``project_path`` is the lookup from the model to its project. Object
    pages and actions fetch through get_queryset, so another project's object
    is missing (the admin's "doesn't exist" redirect), and an action POST
    naming its id selects nothing.
    """

    project_path = "project"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Model]:
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


def post_only_url(
    model_admin: admin.ModelAdmin[Any], verb: str, view: Callable[..., HttpResponse]
) -> URLPattern:
    """``<object_id>/<verb>/``: CSRF-checked, staff-only, POST only (a GET changes nothing)."""
    opts = model_admin.model._meta
    return path(
        f"<path:object_id>/{verb}/",
        model_admin.admin_site.admin_view(require_POST(view)),
        name=f"{opts.app_label}_{opts.model_name}_{verb}",
    )
