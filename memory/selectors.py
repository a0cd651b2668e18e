"""Reads of memory shared by the API, the team pages and the commands.

Each selector takes plain, already validated values and returns rows
(HackSoft's selectors, the read side of services): a filter written here is
the filter of every face. Pagination is the caller's, through the one
keyset paginator (gedweb.pagination).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.db.models import Count, Q
from django.db.models.functions import TruncDate

from memory.models import MemoryCandidate, MemoryEntry, Project
from memory.querysets import CandidateQuerySet, EntryQuerySet
from memory.recall import ranking
from memory.recall.ranking import RecallResult


def entry_list(*, project: Project, category: str | None = None, source: str | None = None,
               since: datetime | None = None, until: datetime | None = None,
               q: str | None = None, current: bool = False,
               author: str | None = None) -> EntryQuerySet:
    """The project's entries matching every filter given, with their correction links.

    ``since`` and ``until`` bound ``created_at`` (from, inclusive; to,
    exclusive). ``q`` is a full-text search (every word must match); ``current`` leaves
    out the entries a later entry corrects. Unordered: order with
    ``seq_order_key(searched=bool(q))``.
    """
    entries = entry_filter(project=project, category=category, source=source, since=since,
                           until=until, q=q, current=current)
    if author:
        # One author's entries (the pages' author view, memory.authors).
        entries = entries.filter(author=author)
    return entries.with_links()


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


ACTIVITY_DAYS = 90


@dataclass(frozen=True)
class Activity:
    """A project's memory over its last days (UTC), as the overview's charts draw it."""

    days: list[date]
    by_category: dict[str, dict[date, int]]
    by_author: dict[str, dict[date, int]]
    # Candidates pending at the end of each day (proposed by then, not resolved by then).
    waiting: dict[date, int]
    waiting_now: int


def entry_activity(*, project: Project, days: int = ACTIVITY_DAYS,
                   today: date | None = None) -> Activity:
    """Entries a day by category and by author, and candidates waiting, over ``days`` days.

    Counted in the database through the (project, created_at) index, grouped
    by UTC day; ``today`` is the last day shown (default: today in UTC).
    """
    last = today or datetime.now(UTC).date()
    first = last - timedelta(days=days - 1)
    start = datetime.combine(first, time.min, tzinfo=UTC)
    end = datetime.combine(last + timedelta(days=1), time.min, tzinfo=UTC)
    window = MemoryEntry.objects.for_project(project).filter(
        created_at__gte=start, created_at__lt=end)
    by_category: dict[str, dict[date, int]] = {}
    by_author: dict[str, dict[date, int]] = {}
    rows = (window.annotate(day=TruncDate("created_at", tzinfo=UTC))
            .values("day", "category", "author").annotate(n=Count("id")).order_by())
    for row in rows:
        for target, name in ((by_category, row["category"]), (by_author, row["author"])):
            per_day = target.setdefault(name, {})
            per_day[row["day"]] = per_day.get(row["day"], 0) + row["n"]
    # A candidate waits from the end of the day it was proposed (or the window's
    # start) up to the day it was resolved: +1 and -1 on those days, then a running sum.
    change = [0] * (days + 1)
    candidates = MemoryCandidate.objects.for_project(project).filter(
        Q(resolved_at__isnull=True) | Q(resolved_at__gte=start), created_at__lt=end,
    ).values_list("created_at", "resolved_at")
    for created, resolved in candidates:
        # The first day whose end comes after the proposal.
        begin = max((created.astimezone(UTC).date() - first).days, 0)
        stop = days if resolved is None else min((resolved.astimezone(UTC).date() - first).days,
                                                 days)
        if begin < stop:
            change[begin] += 1
            change[stop] -= 1
    waiting: dict[date, int] = {}
    running = 0
    for i in range(days):
        running += change[i]
        if running:
            waiting[first + timedelta(days=i)] = running
    waiting_now = MemoryCandidate.objects.for_project(project).filter(
        status=MemoryCandidate.Status.PENDING).count()
    return Activity([first + timedelta(days=i) for i in range(days)], by_category, by_author,
                    waiting, waiting_now)
