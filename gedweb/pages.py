"""The site's own team pages: those that compose both apps.

Memory's pages (memory/views.py) and governance's (governance/views.py)
each name only their own app; a page that shows both is the site's. Today
that is the project overview, /p/<project_id>/: memory's head, its chain
badge, activity charts, recent entries and documents beside governance's
count of work items.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from gedweb import charts
from gedweb.web import project_context, project_or_404
from governance.models import WorkItem
from memory import authors, documents, selectors, services
from memory.models import MemoryEntry

RECENT = 5


@login_required
def project_overview(request: HttpRequest, project_id: str) -> HttpResponse:
    project = project_or_404(request, project_id)
    entries = MemoryEntry.objects.for_project(project)
    # The timeline's rows (memory/_entry_row.html), so they read as the timeline reads.
    recent = list(
        selectors.entry_list(project=project).annotate(corrects_seq=F("corrects__seq"))
        .defer("prev_hash", "hash", "idempotency_key", "request_hash")
        .order_by("-seq")[:RECENT]
    )
    activity = selectors.entry_activity(project=project)
    author_labels = {raw: authors.describe(raw).text for raw in activity.by_author}
    return render(request, "project_overview.html", {
        **project_context(request, project, "overview"),
        "project_md": documents.document_current(project, "PROJECT.md"),
        "head": entries.head(),
        "chain": services.chain_status(project=project),
        "recent": recent,
        "snippet_chars": 240,
        "query": "",
        "documents": documents.document_list(project),
        "work_count": WorkItem.objects.for_project(project).count(),
        "activity": activity,
        "by_category": charts.stacked("Entries a day by category", activity.days,
                                      activity.by_category),
        "by_author": charts.stacked("Entries a day by author", activity.days,
                                    activity.by_author, author_labels),
        "waiting": charts.stacked("Candidates waiting at the end of each day", activity.days,
                                  {"waiting": activity.waiting}),
    })
