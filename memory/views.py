"""Team pages for memory: project list, timeline and search, entries, the mirror,
documents. The project overview, which shows governance's work too, is the
site's (gedweb/pages.py): these pages name only memory.

Views over the same querysets and services the API uses. Every project
page fetches its project through ``project_or_404``: a project the
signed-in user is not a member of answers 404, exactly like a missing one.
The one write is a review decision (candidate_decide): operators approve or
reject candidates through the services the API and the admin call.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import TYPE_CHECKING, Any, cast

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, F, OuterRef, Subquery
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
    StreamingHttpResponse,
)
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from gedweb.admin import operator_name
from gedweb.errors import DomainError
from gedweb.lib.mirror import render_chunks, render_full
from gedweb.lib.textdiff import TooLarge, line_diff
from gedweb.web import (
    PAGE_SIZE,
    cursor_value,
    keyset_page,
    may_review,
    member_role,
    project_context,
    project_or_404,
)
from memory import authors, documents, exports, selectors, services
from memory.models import DocumentRevision, Membership, MemoryCandidate, MemoryEntry, Project
from memory.querysets import seq_order_key
from memory.recall import keyword, ranking
from memory.validators import validate_category, validate_source

if TYPE_CHECKING:
    from typing import TypedDict

    from django.db.models import QuerySet
    from django_stubs_ext import WithAnnotations

    class _EntryCount(TypedDict):
        entry_count: int | None

MIRROR_PAGE_SIZE = 100
SNIPPET_CHARS = 600
MAX_CHAIN = 100
RECENTLY_RESOLVED = 10
CANDIDATE_VIEWS = ("pending", "resolved", "approved", "rejected", "withdrawn")


# --- pages ------------------------------------------------------------------------------


def home(request: HttpRequest) -> HttpResponse:
    """The project list for a signed-in user; what GedWeb is, for everyone else."""
    if not request.user.is_authenticated:
        return render(request, "memory/home.html")
    # The newest seq is the entry count (seq is gap-free): one index probe
    # per project instead of COUNT(*) over its entries.
    newest = (
        MemoryEntry.objects.filter(project=OuterRef("pk")).order_by("-seq").values("seq")[:1]
    )
    # The annotation is on a custom queryset, which the stubs cannot follow.
    projects = cast("QuerySet[WithAnnotations[Project, _EntryCount]]", (
        Project.objects.visible_to(request.user)
        .annotate(entry_count=Subquery(newest))
        .order_by("id")
    ))
    roles = dict(
        Membership.objects.filter(user=request.user).values_list("project_id", "role")
    )
    rows = [
        {"project": p, "entries": p.entry_count or 0,
         "role": "superuser" if request.user.is_superuser else roles.get(p.pk)}
        for p in projects
    ]
    return render(request, "memory/project_list.html", {"rows": rows})


def _choice(request: HttpRequest, name: str, validator: Any) -> str:
    value = request.GET.get(name, "").strip()
    if not value:
        return ""
    try:
        validator(value)
    except Exception:
        return ""  # an impossible filter value matches nothing useful; ignore it
    return value


class DateRangeForm(forms.Form):
    """The timeline's date filter: days in UTC, both ends inclusive."""

    since = forms.DateField(required=False, label="From",
                            widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, label="To",
                            widget=forms.DateInput(attrs={"type": "date"}))

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        since, until = cleaned.get("since"), cleaned.get("until")
        if since and until and since > until:
            raise forms.ValidationError("“From” is after “To”: no day is in that range.")
        return cleaned

    def bounds(self) -> tuple[datetime | None, datetime | None]:
        """created_at from (inclusive) and to (exclusive), or None where not given or invalid."""
        if not self.is_valid():
            return None, None
        since, until = self.cleaned_data.get("since"), self.cleaned_data.get("until")
        start = datetime.combine(since, time.min, tzinfo=UTC) if since else None
        end = datetime.combine(until + timedelta(days=1), time.min, tzinfo=UTC) if until else None
        return start, end


# How far a filtered timeline counts its matches; past this it says "more than".
COUNT_CAP = 1000
# The search box's two ways of matching (GET ``match``): recall's ranking of the
# entries that best answer the text ("best"), or the entries holding every word,
# newest first ("exact").
MATCHES = ("best", "exact")
# Best matches shown at most: the ranking is the page, there is no pager.
RECALL_LIMIT = 20
# A search starting with one of these words, or ending with "?", is a question:
# without a ``match`` it gets best matches, anything else exact words.
QUESTION_WORDS = frozenset(
    "who whom whose what when where why how which does do did is are can could should "
    "would was were has have".split()
)
_QUOTES = "\"'“”‘’«»()[]"


def looks_like_question(text: str) -> bool:
    """Whether a search reads as a question: it ends with "?" or starts with a question word."""
    words = text.split()
    if not words:
        return False
    if text.rstrip().endswith("?"):
        return True
    first = words[0].strip(_QUOTES + ".,:;!").lower()
    # "what's", "how’s": the word before the apostrophe.
    first = first.replace("’", "'").split("'")[0]
    return first in QUESTION_WORDS


def _validate_match(value: str) -> None:
    if value not in MATCHES:
        raise ValueError(f"match is one of {', '.join(MATCHES)}")


@login_required
def entry_list(request: HttpRequest, project_id: str) -> HttpResponse:
    """The timeline, newest first, with category, source and date filters, and search.

    The search matches ``exact`` words (every word, newest first, paged) or
    gives the ``best`` matches (recall: the entries that best answer the text,
    best first, no pager). Without ``match`` (or with an impossible one) a
    question gets best matches and anything else exact words, so a link made
    before the choice existed keeps its meaning.
    """
    project = project_or_404(request, project_id)
    category = _choice(request, "category", validate_category)
    source = _choice(request, "source", validate_source)
    query = request.GET.get("q", "").strip()[:200]
    chosen = _choice(request, "match", _validate_match)
    match = chosen or ("best" if looks_like_question(query) else "exact")
    dates = DateRangeForm(request.GET)
    since, until = dates.bounds()
    # Every filter in use goes on with the pager's links, so page 2 is page 2 of the same search.
    days = {name: request.GET[name] for name in ("since", "until")
            if dates.is_valid() and dates.cleaned_data.get(name)}
    filters = {k: v for k, v in (("category", category), ("source", source), ("q", query),
                                 ("match", chosen if query else ""), *days.items()) if v}
    context = {
        **project_context(request, project, "memory"),
        "filters": filters,
        "category": category,
        "source": source,
        "query": query,
        # How the search shown was answered ("" with no search), and the radio button the
        # form checks: the choice made, else that way; none on the unsearched timeline.
        "match": match if query else "",
        "match_checked": chosen or (match if query else ""),
        "dates": dates,
        "count_cap": COUNT_CAP,
        "snippet_chars": SNIPPET_CHARS,
        "categories": _facet(project, "category"),
        "sources": _facet(project, "source"),
    }
    if query and match == "best":
        context.update(_best_matches(project, query, category=category, source=source,
                                     since=since, until=until))
        return render(request, "memory/entry_list.html", context)
    entries = selectors.entry_list(
        project=project, category=category, source=source, since=since, until=until,
        q=query or None,
    ).annotate(corrects_seq=F("corrects__seq")).defer(
        "prev_hash", "hash", "idempotency_key", "request_hash"
    )
    page = keyset_page(entries, "seq", cursor_value(request.GET.get("before")),
                       cursor_value(request.GET.get("after")), PAGE_SIZE,
                       order=seq_order_key(searched=bool(query)))
    # Counted over at most COUNT_CAP + 1 rows, so a common word costs a bounded count.
    matches = entries.order_by()[:COUNT_CAP + 1].count() if filters else None
    context.update({"page": page, "matches": matches})
    if query and not page.items and matches == 0:
        # Nothing holds every word: the same search by best matches, one click away.
        context["best_link"] = {**filters, "match": "best"}
    return render(request, "memory/entry_list.html", context)


@dataclass(frozen=True)
class RecallRow:
    """One best match as the page shows it: the entry, and which rankers brought it."""

    entry: MemoryEntry
    by_words: bool
    by_meaning: bool


def _best_matches(project: Project, query: str, *, category: str, source: str,
                  since: datetime | None, until: datetime | None) -> dict[str, Any]:
    """The page's context for best matches: recall's hits, and what it says of its index."""
    # Recall ranks document sections beside entries (memory.recall.documents); this page is
    # the memory timeline's and shows entries only, so it asks for more hits than it shows.
    result = selectors.entry_recall(
        project=project, text=query, limit=ranking.MAX_LIMIT, mode="hybrid", view="current",
        category=category or None, source=source or None, since=since, until=until,
    )
    rows = [RecallRow(hit.entry, hit.keyword_rank is not None, hit.semantic_rank is not None)
            for hit in result.hits if hit.entry is not None][:RECALL_LIMIT]
    # The row shows what an entry corrects by seq, as the timeline's annotation gives it.
    corrected = {row.entry.corrects_id for row in rows if row.entry.corrects_id is not None}
    seqs = dict(MemoryEntry.objects.filter(pk__in=corrected).values_list("pk", "seq")
                ) if corrected else {}
    for row in rows:
        row.entry.corrects_seq = seqs.get(row.entry.corrects_id)  # type: ignore[attr-defined]
    return {
        "recall": rows,
        "degraded": result.degraded is not None,
        # Entries past the index's through_seq are found by their words only.
        "lag": max(result.head_seq - result.through_seq, 0) if result.degraded is None else 0,
        # Marked in each row: the words of the question, not its stop words.
        "marked": " ".join(word for word in (w.strip(_QUOTES + ".,:;!?") for w in query.split())
                           if word.lower() not in keyword.STOP_WORDS),
    }


@login_required
def author_entries(request: HttpRequest, project_id: str, author: str) -> HttpResponse:
    """One author's entries, newest first: who wrote what (memory.authors names them).

    The timeline's selector with an author filter; an author with no entry in
    this project is a page that does not exist (404), like a missing entry.
    """
    project = project_or_404(request, project_id)
    entries = selectors.entry_list(project=project, author=author).annotate(
        corrects_seq=F("corrects__seq")).defer("prev_hash", "hash", "idempotency_key",
                                               "request_hash")
    if not entries.exists():
        raise Http404
    page = keyset_page(entries, "seq", cursor_value(request.GET.get("before")),
                       cursor_value(request.GET.get("after")), PAGE_SIZE,
                       order=seq_order_key(searched=False))
    return render(request, "memory/author_entries.html", {
        **project_context(request, project, "memory"),
        "author": authors.describe(author),
        "count": entries.order_by().count(),
        "first": entries.order_by("seq").values_list("created_at", flat=True).first(),
        "page": page,
        "filters": {},
        "snippet_chars": SNIPPET_CHARS,
        "query": "",
    })


def _facet(project: Project, field: str) -> list[str]:
    return MemoryEntry.objects.distinct_values(project, field)


@login_required
def entry_detail(request: HttpRequest, project_id: str, ref: str) -> HttpResponse:
    """One entry, what it corrects (back to the original) and what corrects it."""
    project = project_or_404(request, project_id)
    entries = MemoryEntry.objects.for_project(project)
    entry = entries.by_ref(ref).with_links().annotate(corrects_seq=F("corrects__seq")).first()
    if entry is None:
        raise Http404
    earlier: list[MemoryEntry] = []
    cursor = entry
    while cursor.corrects_id is not None and len(earlier) < MAX_CHAIN:
        cursor = entries.get(pk=cursor.corrects_id)
        earlier.append(cursor)
    later: list[MemoryEntry] = []
    frontier = [entry.pk]
    while frontier and len(later) < MAX_CHAIN:
        # Through the corrects_id index: a project filter here would tempt
        # SQLite into walking the (project, seq) index instead. Corrections
        # only ever name entries of their own project; the check below keeps
        # it so whatever the data says.
        rows = [
            row for row in MemoryEntry.objects.filter(corrects_id__in=frontier)
            .annotate(corrects_seq=F("corrects__seq"))
            .order_by("seq")[:MAX_CHAIN]
            if row.project_id == project.pk
        ]
        later.extend(rows)
        frontier = [row.pk for row in rows]
    return render(request, "memory/entry_detail.html", {
        **project_context(request, project, "memory"),
        "entry": entry,
        "earlier": list(reversed(earlier)),
        "later": later,
        "corrected_by": entry.corrected_by_rows,
    })


@login_required
def mirror(request: HttpRequest, project_id: str) -> HttpResponse:
    """MEMORY.md rendered, a page of entries at a time (the mirror's own byte format)."""
    project = project_or_404(request, project_id)
    after = cursor_value(request.GET.get("after")) or 0
    # seq is gap-free per project, so a page is a seq range read from the index.
    rows = list(
        MemoryEntry.objects.for_project(project)
        .filter(seq__gt=after, seq__lte=after + MIRROR_PAGE_SIZE)
        .chain_rows()
    )
    head = MemoryEntry.objects.for_project(project).head()
    more = head is not None and head["seq"] > after + MIRROR_PAGE_SIZE
    text = render_full(project.pk, rows)
    return render(request, "memory/mirror.html", {
        **project_context(request, project, "mirror"),
        "text": text,
        "after": after,
        "next_after": after + MIRROR_PAGE_SIZE if more else None,
        "previous_after": max(after - MIRROR_PAGE_SIZE, 0) if after else None,
        "page_size": MIRROR_PAGE_SIZE,
    })


@login_required
def mirror_text(request: HttpRequest, project_id: str) -> StreamingHttpResponse:
    """The whole MEMORY.md as text, rendered from the record as the API serves it."""
    project = project_or_404(request, project_id)
    rows = MemoryEntry.objects.for_project(project).chain_rows()
    chunks = (chunk.encode() for chunk in render_chunks(project.pk, rows))
    response = StreamingHttpResponse(chunks, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'inline; filename="{project.pk}-MEMORY.md"'
    return response


@login_required
def document_list(request: HttpRequest, project_id: str) -> HttpResponse:
    project = project_or_404(request, project_id)
    rows = documents.document_list(project)
    groups: dict[str, list[Any]] = {"project": [], "context": [], "adr": [], "report": [],
                                    "handoff": []}
    for row in rows:
        groups[documents.parse_document_path(row.path).kind].append(row)
    revisions = dict(
        project.documents.values_list("path").annotate(n=Count("id")).values_list("path", "n")
    )
    return render(request, "memory/document_list.html", {
        **project_context(request, project, "documents"),
        "groups": [
            ("Project", groups["project"] + groups["context"]),
            ("Architecture decisions (ADRs)", groups["adr"]),
            ("Reports", groups["report"]),
            ("Handoffs", groups["handoff"]),
        ],
        "revisions": revisions,
    })


@login_required
def document_detail(request: HttpRequest, project_id: str, path: str) -> HttpResponse:
    project = project_or_404(request, project_id)
    try:
        documents.parse_document_path(path)
    except ValueError:
        raise Http404 from None
    history = documents.document_revisions(project, path)
    if not history:
        raise Http404
    number = cursor_value(request.GET.get("revision"))
    shown: DocumentRevision | None
    if number is None:
        # history is not empty, so the document has a current revision.
        shown = cast(DocumentRevision, documents.document_current(project, path))
    else:
        shown = documents.document_revision(project, path, number)
        if shown is None:
            raise Http404
    return render(request, "memory/document_detail.html", {
        **project_context(request, project, "documents"),
        "document": shown,
        "history": list(reversed(history)),
        "is_current": shown.revision == history[-1].revision,
    })


@login_required
def document_compare(request: HttpRequest, project_id: str, path: str) -> HttpResponse:
    """Two revisions of a document, line by line (gedweb.lib.textdiff: bounded time)."""
    project = project_or_404(request, project_id)
    try:
        documents.parse_document_path(path)
    except ValueError:
        raise Http404 from None
    history = documents.document_revisions(project, path)
    if not history:
        raise Http404
    newest = history[-1].revision
    old_number = cursor_value(request.GET.get("from"))
    new_number = cursor_value(request.GET.get("to"))
    if old_number is None:
        old_number = max(newest - 1, 1)
    if new_number is None:
        new_number = newest
    by_number = {row.revision: row for row in history}
    if old_number not in by_number or new_number not in by_number:
        raise Http404  # a revision this document never had
    old = documents.document_revision(project, path, old_number)
    new = documents.document_revision(project, path, new_number)
    if old is None or new is None:
        raise Http404
    diff, problem = None, None
    if old_number == new_number:
        problem = f"Revision {old_number} compared with itself: choose two different revisions."
    else:
        try:
            diff = line_diff(old.content, new.content)
        except TooLarge as exc:
            problem = f"These revisions are too long to compare on a page ({exc})."
    return render(request, "memory/document_compare.html", {
        **project_context(request, project, "documents"),
        "path": path,
        "old": old,
        "new": new,
        "history": list(reversed(history)),
        "diff": diff,
        "problem": problem,
    })


# --- review -----------------------------------------------------------------------------


@login_required
def candidate_list(request: HttpRequest, project_id: str) -> HttpResponse:
    """The review queue: pending candidates first, then the resolved ones."""
    project = project_or_404(request, project_id)
    view = request.GET.get("status", "pending")
    if view not in CANDIDATE_VIEWS:
        view = "pending"
    rows = selectors.candidate_list(
        project=project, status=None if view == "resolved" else view
    ).annotate(entry_seq=F("entry__seq"))
    if view == "resolved":
        rows = rows.exclude(status=MemoryCandidate.Status.PENDING)
    page = keyset_page(rows, "id", cursor_value(request.GET.get("before")),
                       cursor_value(request.GET.get("after")), PAGE_SIZE)
    resolved: list[MemoryCandidate] = []
    if view == "pending":
        resolved = list(
            selectors.candidate_list(project=project)
            .exclude(status=MemoryCandidate.Status.PENDING)
            .annotate(entry_seq=F("entry__seq"))
            .order_by("-resolved_at", "-id")[:RECENTLY_RESOLVED]
        )
    context = project_context(request, project, "review")
    for candidate in page.items:
        if candidate.status == MemoryCandidate.Status.PENDING:
            candidate.similar = _similar_entries(project, candidate.content)
    if may_review(context["role"]):
        # The review gate's own words in place of buttons its rule would refuse.
        by = operator_name(request)
        for candidate in page.items:
            candidate.refusal = services.candidate_refusal(
                candidate=candidate, by=by, action=services.APPROVE)
    return render(request, "memory/candidate_list.html", {
        **context,
        "page": page,
        "view": view,
        "views": CANDIDATE_VIEWS,
        "filters": {"status": view} if view != "pending" else {},
        "resolved": resolved,
        "may_review": may_review(context["role"]),
    })


# Entries shown beside a pending candidate: enough to spot a duplicate or a contradiction.
SIMILAR_ENTRIES = 3


@dataclass(frozen=True)
class Similar:
    """The entries most like a candidate (recall), and whether recall could rank by meaning."""

    rows: list[MemoryEntry]
    degraded: bool


def _similar_entries(project: Project, content: str) -> Similar:
    """The current entries that best match a candidate's text: the recall the API serves.

    Recall itself falls back to words when the model or the vector index is
    unavailable (``degraded``); the candidate's text is cut to the longest
    question recall takes, as an API caller's would be refused past it.
    """
    result = selectors.entry_recall(
        # Recall ranks document sections too (memory.recall.documents); this asks for
        # more hits than it shows, to show entries only.
        project=project, text=content[:ranking.MAX_QUERY_CHARS], limit=SIMILAR_ENTRIES * 4,
        mode="hybrid", view="current", category=None, source=None,
    )
    rows = [hit.entry for hit in result.hits if hit.entry is not None][:SIMILAR_ENTRIES]
    return Similar(rows, result.degraded is not None)


@login_required
@require_POST
def candidate_decide(request: HttpRequest, project_id: str, candidate_id: str,
                     decision: str) -> HttpResponse:
    """Approve or reject one candidate, then back to the queue with what happened.

    The same services as POST .../candidates/{id}/approve and the admin's
    buttons. As in the admin, a person's right to decide is their session
    and role (here: operator member, or superuser), not the API's memory
    write token, which guards bearer tokens; viewers get 403, nothing changed.
    """
    project = project_or_404(request, project_id)
    if not may_review(member_role(request, project)):
        raise PermissionDenied("only operators of this project decide candidates")
    candidate = MemoryCandidate.objects.for_project(project).filter(uuid=candidate_id).first()
    if candidate is None:
        raise Http404
    by = operator_name(request)
    try:
        if decision == "approve":
            entry = services.candidate_approve(project=project, candidate=candidate, by=by)
            messages.success(request, f"Approved: the candidate is now memory entry #{entry.seq}.")
        else:
            services.candidate_reject(project=project, candidate=candidate, by=by)
            messages.success(request, "Rejected: the candidate will not become memory.")
    except DomainError as exc:
        messages.error(request, f"Nothing changed: {exc.message}.")
    # 303: the browser fetches the queue with GET, so a reload never posts again.
    return HttpResponseRedirect(reverse("memory:candidate-list", args=[project.pk]), status=303)


# --- exports ----------------------------------------------------------------------------


@login_required
def memory_export(request: HttpRequest, project_id: str) -> StreamingHttpResponse:
    return exports.memory_export_response(project_or_404(request, project_id))


@login_required
def documents_export(request: HttpRequest, project_id: str) -> StreamingHttpResponse:
    return exports.documents_export_response(project_or_404(request, project_id))
