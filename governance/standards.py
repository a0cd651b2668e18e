"""Standards imports: submissions, decisions and STANDARDS.md from accepted bytes only.

The rule GedWeb serves (GedPi gap G-6 made explicit): for each path, the
newest accepted version (newest by submission) is the approved one, and its
bytes stay in STANDARDS.md until a newer version of that path is accepted.
A newer version that is pending or rejected never reaches STANDARDS.md; the
path is then reported as ``renewal-pending`` or ``renewal-rejected`` by
``standards_state``, so "stale approved bytes still served" is always
visible. Paths with nothing accepted are left out. Sections appear in the
order their served version was accepted, as GedPi appends to its accepted
list.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from gedweb.errors import Conflict
from gedweb.lib.digest import sha256_text
from gedweb.lib.standards import render_standards
from gedweb.validation import collect_errors, validate_text
from governance import ledger
from governance.models import STANDARDS_PATHS, StandardsDecision, StandardsImport
from memory import quotas, secret_scan
from memory.locks import lock_project
from memory.models import Project, format_timestamp

RULE = (
    "For each path, the newest accepted version is served until a newer version of that "
    "path is accepted; newer pending or rejected versions are never served and mark the "
    "path renewal-pending or renewal-rejected."
)


# The same bound as a durable document (memory.documents.MAX_DOCUMENT_CHARS):
# instruction files are documents, and the largest real AGENTS.md files are
# a few tens of kilobytes.
MAX_STANDARDS_CHARS = 200_000


def validate_standards_content(value: str) -> None:
    if len(value) > MAX_STANDARDS_CHARS:
        raise ValidationError(f"must be at most {MAX_STANDARDS_CHARS:,} characters")
    validate_text(value, blank_message="must not be empty or whitespace-only")


def validate_standards_path(value: str) -> None:
    if value not in STANDARDS_PATHS:
        raise ValidationError(
            "must be one of GedPi's repository-wide instruction files: "
            + ", ".join(STANDARDS_PATHS)
        )


def standards_import_submit(
    *, project: Project, path: str, content: str, author: str
) -> tuple[StandardsImport, bool]:
    """Record bytes for approval; a known (path, sha256) returns its decision unchanged."""
    collect_errors({
        "path": (validate_standards_path, path),
        "content": (validate_standards_content, content),
    })
    sha256 = sha256_text(content)
    lookup = StandardsImport.objects.select_related("decision").filter(
        project=project, path=path, sha256=sha256
    )
    existing = lookup.first()
    if existing is not None:
        return existing, False
    secret_scan.refuse_secrets(project, {"content": content})
    try:
        with transaction.atomic():
            # Lock order: the project lock, the row and its ledger record, the quota last.
            lock_project(project)
            row = StandardsImport.objects.create(
                project=project,
                path=path,
                sha256=sha256,
                content=content,
                author=author,
                created_at=timezone.now(),
            )
            quotas.quota_charge(project=project, kind="documents",
                                size_bytes=quotas.text_bytes(content))
    except IntegrityError:
        # A concurrent submission of the same bytes won; theirs is ours.
        return lookup.get(), False
    return row, True


def served_and_left_out(
    project: Project,
) -> tuple[list[StandardsImport], list[tuple[StandardsImport, str]]]:
    """(the approved version of each path, in STANDARDS.md order; the approved
    versions left out because their import or decision row is not on the trust
    ledger's record, with why).

    A path whose newest approval is off the record is left out, not served
    from an older approval: the forgery is what an operator has to see.
    """
    newest = _newest_accepted(project)
    unverified = ledger.unverified_imports(newest)
    return ([row for row in newest if row.pk not in unverified],
            [(row, unverified[row.pk]) for row in newest if row.pk in unverified])


def served_imports(project: Project) -> list[StandardsImport]:
    """The approved version of each path that GedWeb serves, in STANDARDS.md order.

    Every reader of approved instructions goes through here (the context
    bundle, /standards, the state, ged_export, the admin): bytes off the
    trust ledger's record are never served as approved.
    """
    return served_and_left_out(project)[0]


def _newest_accepted(project: Project) -> list[StandardsImport]:
    accepted = (
        StandardsImport.objects.for_project(project)
        .with_status(StandardsDecision.Status.ACCEPTED)
        .select_related("decision")
        .order_by("-id")
    )
    newest: dict[str, StandardsImport] = {}
    for row in accepted:
        newest.setdefault(row.path, row)
    return sorted(newest.values(), key=lambda row: (row.decision.decided_at, row.decision.pk))


def render_served(rows: list[StandardsImport]) -> tuple[str, str] | None:
    if not rows:
        return None
    text = render_standards((row.path, row.sha256, row.content) for row in rows)
    return text, sha256_text(text)


def standards_markdown(project: Project) -> tuple[str, str] | None:
    """STANDARDS.md and its sha256, or None while nothing is accepted."""
    return render_served(served_imports(project))


def import_as_dict(row: StandardsImport, served_ids: set[int]) -> dict[str, Any]:
    decision = row.current_decision
    return {
        "id": row.public_id,
        "path": row.path,
        "sha256": row.sha256,
        "status": row.status,
        "served": row.pk in served_ids,
        "author": row.author,
        "created_at": format_timestamp(row.created_at),
        "decided_by": decision.decided_by if decision else None,
        "decided_at": format_timestamp(decision.decided_at) if decision else None,
    }


def served_ids(project: Project) -> set[int]:
    return {row.pk for row in served_imports(project)}


def _source_state(served: StandardsImport | None, latest: StandardsImport) -> str:
    if served is None:
        return latest.status
    if latest.pk == served.pk:
        return "approved"
    # Only pending or rejected versions can be newer than the served one.
    return f"renewal-{latest.status}"


def standards_state(project: Project) -> dict[str, Any]:
    """Every decision, and per path what is served and whether a renewal is open."""
    served, left_out = served_and_left_out(project)
    served_by_path = {row.path: row for row in served}
    left_out_paths = {row.path for row, _ in left_out}
    ids = {row.pk for row in served}
    rows = list(
        StandardsImport.objects.for_project(project).select_related("decision").order_by("id")
    )
    latest: dict[str, StandardsImport] = {}
    for row in rows:
        latest[row.path] = row
    sources = []
    for path in STANDARDS_PATHS:
        if path not in latest:
            continue
        approved = served_by_path.get(path)
        sources.append(
            {
                "path": path,
                "state": ("left-out" if path in left_out_paths
                          else _source_state(approved, latest[path])),
                "served_sha256": approved.sha256 if approved else None,
                "latest_sha256": latest[path].sha256,
                "latest_status": latest[path].status,
            }
        )
    rendered = render_served(served)
    by_status: dict[str, list[dict[str, Any]]] = {"accepted": [], "pending": [], "rejected": []}
    for row in rows:
        by_status[row.status].append(import_as_dict(row, ids))
    return {
        "standards_hash": rendered[1] if rendered else None,
        "rule": RULE,
        "served": [import_as_dict(row, ids) for row in served],
        "left_out": [{**import_as_dict(row, ids), "reason": reason} for row, reason in left_out],
        "sources": sources,
        **by_status,
    }


# --- GedPi's IMPORT-STATE.json (ged_import / ged_export) ------------------------------------


def standards_decision_import(
    *, project: Project, path: str, content: str, status: str, author: str, decided_by: str
) -> str:
    """Record one IMPORT-STATE.json entry whose bytes are known; returns what happened.

    ``status`` is accepted, rejected or pending. An entry GedWeb already holds
    with the same decision (or any decision, for a pending entry) changes
    nothing; a different decision on the same bytes is refused, because a
    decision is taken once.
    """
    row, created = standards_import_submit(project=project, path=path, content=content,
                                           author=author)
    if status == StandardsImport.PENDING:
        return "created" if created else "unchanged"
    decision = row.current_decision
    if decision is not None:
        if decision.status != status:
            raise Conflict(
                f"{path} {row.sha256} is {status} in the checkout but was already "
                f"{decision.status} by {decision.decided_by}"
            )
        return "unchanged"
    if status == StandardsDecision.Status.ACCEPTED:
        row.accept(by=decided_by, sha256=row.sha256)
    else:
        row.reject(by=decided_by, sha256=row.sha256)
    return "created" if created else "decided"


def gedpi_import_state(project: Project) -> dict[str, Any]:
    """IMPORT-STATE.json from GedWeb's decisions, in GedPi's shape and list order.

    accepted: the served version of each path, in STANDARDS.md order (GedPi
    keeps one accepted entry per path, replaced on renewal); rejected: the
    latest rejection of each path, in the order rejected; pending: every
    undecided version, in the order submitted. standardsHash is the hash of
    the STANDARDS.md that GedWeb serves, or null while nothing is accepted.
    """
    served = served_imports(project)
    rows = list(
        StandardsImport.objects.for_project(project).select_related("decision").order_by("id")
    )
    rejected: dict[str, StandardsImport] = {}
    for row in sorted(
        (r for r in rows if r.status == StandardsDecision.Status.REJECTED),
        key=lambda r: (r.decision.decided_at, r.decision.pk),
    ):
        rejected.pop(row.path, None)
        rejected[row.path] = row
    rendered = render_served(served)

    def entry(row: StandardsImport) -> dict[str, str]:
        return {"path": row.path, "hash": row.sha256}

    return {
        "accepted": [entry(row) for row in served],
        "rejected": [entry(row) for row in rejected.values()],
        "pending": [entry(row) for row in rows if row.status == StandardsImport.PENDING],
        "standardsHash": rendered[1] if rendered else None,
    }
