"""The admin site itself: its titles, and an index that lists what waits for a decision
and how many stored secrets the last `memory scan` found.

Imported by governance/admin.py (it reads both apps' models, and governance
is the app that may depend on memory). The default site is kept, so
settings need not name a custom AdminSite; only its index is wrapped.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, Q
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse

from gedweb.admin import admin_projects
from governance.models import StandardsImport
from memory.models import MemoryCandidate, SecretFinding

admin.site.site_header = "GedWeb administration"
admin.site.site_title = "GedWeb admin"
admin.site.index_title = "GedWeb: projects, memory and governance"
admin.site.index_template = "admin/gedweb_index.html"


def pending_by_project(request: HttpRequest) -> list[dict[str, Any]]:
    """Pending candidates and standards imports per project the user may see.

    Two grouped queries; a count is offered only to a user who may view
    that model, and only projects with something pending are listed.
    """
    user = request.user
    projects = admin_projects(user)
    rows: dict[str, dict[str, Any]] = {}

    def row(project_id: str) -> dict[str, Any]:
        return rows.setdefault(project_id, {"project": project_id, "candidates": 0,
                                            "standards": 0})

    candidate_list = reverse("admin:memory_memorycandidate_changelist")
    if user.has_perm("memory.view_memorycandidate"):
        counts = (
            MemoryCandidate.objects.filter(project__in=projects,
                                           status=MemoryCandidate.Status.PENDING)
            .values("project_id").annotate(n=Count("id")).order_by()
        )
        for found in counts:
            row(found["project_id"])["candidates"] = found["n"]
    standards_list = reverse("admin:governance_standardsimport_changelist")
    if user.has_perm("governance.view_standardsimport"):
        counts = (
            StandardsImport.objects.filter(Q(decision__isnull=True), project__in=projects)
            .values("project_id").annotate(n=Count("id")).order_by()
        )
        for found in counts:
            row(found["project_id"])["standards"] = found["n"]
    for item in rows.values():
        project = item["project"]
        item["candidates_url"] = (
            f"{candidate_list}?status__exact=pending&project__id__exact={project}"
        )
        item["standards_url"] = f"{standards_list}?status=pending&project__id__exact={project}"
    return [rows[key] for key in sorted(rows)]


def secret_findings(request: HttpRequest) -> dict[str, Any] | None:
    """Secrets the last `manage.py memory scan` found and no allowance covers, per project.

    One grouped query, for a user who may view the findings; None otherwise.
    """
    if not request.user.has_perm("memory.view_secretfinding"):
        return None
    counts = (
        SecretFinding.objects.filter(project__in=admin_projects(request.user), allowed=False)
        .values("project_id").annotate(n=Count("id")).order_by("project_id")
    )
    listing = reverse("admin:memory_secretfinding_changelist")
    rows = [{"project": found["project_id"], "count": found["n"],
             "url": f"{listing}?allowed__exact=0&project__id__exact={found['project_id']}"}
            for found in counts]
    return {"total": sum(row["count"] for row in rows), "rows": rows,
            "url": f"{listing}?allowed__exact=0"}


_default_index = admin.site.index


def index(request: HttpRequest, extra_context: dict[str, Any] | None = None) -> TemplateResponse:
    context = {"pending_by_project": pending_by_project(request),
               "secret_findings": secret_findings(request), **(extra_context or {})}
    return _default_index(request, extra_context=context)


# The site's urls are built after every app's admin module is imported, so
# the index URL resolves to this wrapper.
admin.site.index = index  # type: ignore[method-assign]  # wrapping the one site's index on purpose
