"""The site's own team pages: those that compose both apps.

Memory's pages (memory/views.py) and governance's (governance/views.py)
each name only their own app; a page that shows both is the site's. Today
that is the project overview, /p/<project_id>/: memory's head, recent
entries and documents beside governance's count of work items.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from gedweb.web import project_context, project_or_404
from governance.models import WorkItem
from memory import documents
from memory.models import MemoryEntry


@login_required
def project_overview(request: HttpRequest, project_id: str) -> HttpResponse:
    project = project_or_404(request, project_id)
    entries = MemoryEntry.objects.for_project(project)
    recent = list(
        entries.order_by("-seq")
        .only("seq", "category", "source", "author", "created_at", "content")[:5]
    )
    return render(request, "project_overview.html", {
        **project_context(request, project, "overview"),
        "project_md": documents.document_current(project, "PROJECT.md"),
        "head": entries.head(),
        "recent": recent,
        "documents": documents.document_list(project),
        "work_count": WorkItem.objects.for_project(project).count(),
    })
