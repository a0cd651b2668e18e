"""Reads of memory shared by the API, the team pages and the commands.

Each selector takes plain, already validated values and returns rows
(HackSoft's selectors, the read side of services): a filter written here is
the filter of every face. Pagination is the caller's, through the one
keyset paginator (gedweb.pagination).
"""

from __future__ import annotations

from datetime import datetime

from memory.models import MemoryCandidate, MemoryEntry, Project
from memory.querysets import CandidateQuerySet, EntryQuerySet
from memory.recall import ranking
from memory.recall.ranking import RecallResult


def entry_list(*, project: Project, category: str | None = None, source: str | None = None,
               since: datetime | None = None, until: datetime | None = None,
               q: str | None = None, current: bool = False) -> EntryQuerySet:
    """The project's entries matching every filter given, with their correction links.

    ``since`` and ``until`` bound ``created_at`` (from, inclusive; to,
    exclusive). ``q`` is a full-text search (every word must match); ``current`` leaves
    out the entries a later entry corrects. Unordered: order with
    ``seq_order_key(searched=bool(q))``.
    """
    return entry_filter(project=project, category=category, source=source, since=since,
                        until=until, q=q, current=current).with_links()


def entry_filter(*, project: Project, category: str | None = None, source: str | None = None,
                 since: datetime | None = None, until: datetime | None = None,
                 q: str | None = None, current: bool = False) -> EntryQuerySet:
    """entry_list's filter alone, without the links: the rows recall ranks (memory.recall)."""
    entries = MemoryEntry.objects.for_project(project)
    if category:
        entries = entries.filter(category=category)
    if source:
        entries = entries.filter(source=source)
    if since is not None:
        entries = entries.filter(created_at__gte=since)
    if until is not None:
        entries = entries.filter(created_at__lt=until)
    if q is not None:
        entries = entries.search(q, project=project)
    if current:
        entries = entries.current()
    return entries


def entry_get(*, project: Project, ref: str | int) -> MemoryEntry | None:
    """One entry named by uuid or seq, with its correction links; None if there is none."""
    return MemoryEntry.objects.for_project(project).by_ref(ref).with_links().first()


def candidate_list(*, project: Project, status: str | None = None) -> CandidateQuerySet:
    """The project's review candidates, of one status if given, with their entry's uuid."""
    candidates = MemoryCandidate.objects.for_project(project).with_entry_uuid()
    if status is not None:
        candidates = candidates.filter(status=status)
    return candidates


def entry_recall(*, project: Project, text: str, limit: int = 10, mode: str = "hybrid",
                 view: str = "current", category: str | None = None, source: str | None = None,
                 since: datetime | None = None, until: datetime | None = None) -> RecallResult:
    """The entries that best answer ``text``, best first: the one recall of every face.

    REST, MCP, the CLI, the pages and the context bundle all call this
    (memory.recall.ranking, docs/recall.md).
    """
    return ranking.recall(project=project, text=text, limit=limit, mode=mode, view=view,
                          category=category, source=source, since=since, until=until)
