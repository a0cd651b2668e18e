"""Reads of governance shared by the API and the team pages.

Each selector takes plain values and returns rows (HackSoft's selectors, the
read side of services); pagination is the caller's, through the one keyset
paginator (gedweb.pagination).
"""

from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery

from governance.models import ContextDelivery, GovernanceRevision, WorkItem
from memory.models import Project

REVISION_SUMMARY_FIELDS = ("revision", "operation", "author", "created_at", "evidence_count")


def work_list(*, project: Project, with_state: bool = False) -> QuerySet[WorkItem]:
    """The project's work items; ``with_state`` adds ``current_json``, the newest revision."""
    items = WorkItem.objects.for_project(project)
    if with_state:
        newest = (
            GovernanceRevision.objects.filter(work=OuterRef("pk"))
            .order_by("-revision")
            .values("document_json")[:1]
        )
        items = items.annotate(current_json=Subquery(newest))
    return items


def revision_summaries(*, work: WorkItem) -> QuerySet[GovernanceRevision, dict[str, Any]]:
    """A work item's revisions as summary rows (dicts of REVISION_SUMMARY_FIELDS)."""
    return GovernanceRevision.objects.filter(work=work).values(*REVISION_SUMMARY_FIELDS)


def context_delivery_list(*, project: Project) -> QuerySet[ContextDelivery]:
    """Who received which context bundle bytes, with each delivery's work item."""
    return ContextDelivery.objects.filter(project=project).select_related("work")
