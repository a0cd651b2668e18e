"""Team pages for governance: work items, standards, skills and the context delivery log.

Read-only views over the services the API uses; every page gets its project
from gedweb.web.project_or_404, so non-members see 404.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from rest_framework.renderers import JSONRenderer

from gedweb.lib.governance import GUARD_ACTIONS, render_state_md
from gedweb.lib.textdiff import TooLarge, line_diff
from gedweb.web import PAGE_SIZE, cursor_value, keyset_page, project_context, project_or_404
from governance import provenance, selectors, services, skills, standards
from governance.context import Bundle, bundle_redaction, delivered_bundle
from governance.models import ContextDelivery, GovernanceRevision, Skill, StandardsImport, WorkItem


@login_required
def work_list(request: HttpRequest, project_id: str) -> HttpResponse:
    """Work items, newest first, each with its current lifecycle, mode and slice."""
    project = project_or_404(request, project_id)
    rows = selectors.work_list(project=project, with_state=True)
    page = keyset_page(rows, "id", cursor_value(request.GET.get("before")),
                       cursor_value(request.GET.get("after")), PAGE_SIZE)
    items = []
    for work in page.items:
        state = json.loads(work.current_json) if work.current_json else {}
        items.append({"work": work, "state": state})
    return render(request, "governance/work_list.html", {
        **project_context(request, project, "work"),
        "page": page,
        "items": items,
    })


def _work_or_404(project: Any, work_id: str) -> WorkItem:
    work: WorkItem | None = WorkItem.objects.for_project(project).filter(work_id=work_id).first()
    if work is None:
        raise Http404
    return work


@login_required
def work_detail(request: HttpRequest, project_id: str, work_id: str) -> HttpResponse:
    """META, current governance, what the guard would allow now, history and files."""
    project = project_or_404(request, project_id)
    work = _work_or_404(project, work_id)
    state = services.governance_document(work)
    guard = [
        {"action": action, "reason": services.guard_check(work=work, action=action)}
        for action in GUARD_ACTIONS
    ]
    revisions = list(
        GovernanceRevision.objects.filter(work=work).order_by("-revision")
        .values("revision", "operation", "author", "created_at", "evidence_count")
    )
    files = services.latest_files(work)
    found = provenance.provenance(work)
    imported = provenance.as_dict(found, state)
    imported_evidence = {item["id"]: item for item in imported["evidence"]}
    imported_transitions = {item["id"]: item for item in imported["lifecycle_transitions"]}
    return render(request, "governance/work_detail.html", {
        **project_context(request, project, "work"),
        "work": work,
        "meta": work.meta(),
        "state": state,
        "state_md": render_state_md(state),
        "guard": guard,
        "revisions": revisions,
        "evidence": [{**record, "import": imported_evidence.get(record["id"])}
                     for record in reversed(state["evidence"])],
        "approvals": imported["approvals"],
        "transitions": [{**t, "import": imported_transitions.get(t["id"])}
                        for t in state.get("lifecycleTransitions", [])],
        "imported_lifecycle": imported["lifecycle"],
        "files": [files[name] for name in sorted(files)],
    })


@login_required
def revision_detail(request: HttpRequest, project_id: str, work_id: str,
                    number: int) -> HttpResponse:
    """One governance revision: the whole document, and what changed since another revision.

    The diff is the document compare page's (gedweb.lib.textdiff over the
    pretty-printed JSON), against ``?from=N`` or else the revision before.
    """
    project = project_or_404(request, project_id)
    work = _work_or_404(project, work_id)
    document = services.revision_document(work, number)
    if document is None:
        raise Http404
    row = GovernanceRevision.objects.get(work=work, revision=number)
    numbers = list(GovernanceRevision.objects.filter(work=work).order_by("-revision")
                   .values_list("revision", flat=True))
    base_number = cursor_value(request.GET.get("from"))
    if base_number is None and number > 1:
        base_number = number - 1
    text = _document_text(document)
    diff, problem, base = None, None, None
    if base_number is not None:
        base = services.revision_document(work, base_number)
        if base is None:
            raise Http404  # a revision this work never had
        if base_number == number:
            problem = f"Revision {number} compared with itself: choose another revision."
        else:
            try:
                diff = line_diff(_document_text(base), text)
            except TooLarge as exc:
                problem = f"These revisions are too long to compare on a page ({exc})."
    return render(request, "governance/revision_detail.html", {
        **project_context(request, project, "work"),
        "work": work,
        "revision": row,
        "numbers": numbers,
        "base_number": base_number,
        "diff": diff,
        "problem": problem,
        "document_text": text,
    })


def _document_text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False)


@login_required
def standards_state(request: HttpRequest, project_id: str) -> HttpResponse:
    """What STANDARDS.md serves, each path's approval state, pending renewals, every import."""
    project = project_or_404(request, project_id)
    state = standards.standards_state(project)
    # Newest first; public ids are random, so the order is the rows' own.
    newest_first = list(StandardsImport.objects.for_project(project).order_by("-id")
                        .values_list("public_id", flat=True))
    position = {public_id: n for n, public_id in enumerate(newest_first)}
    imports = sorted(state["accepted"] + state["pending"] + state["rejected"],
                     key=lambda row: position[row["id"]])
    return render(request, "governance/standards.html", {
        **project_context(request, project, "standards"),
        "state": state,
        "imports": imports,
        "renewals": [s for s in state["sources"] if s["state"].startswith("renewal-")],
        # Every decision taken, newest first: who accepted or rejected which bytes, and when.
        "decisions": sorted(state["accepted"] + state["rejected"],
                            key=lambda row: (row["decided_at"], position[row["id"]]),
                            reverse=True),
    })


@login_required
def standards_text(request: HttpRequest, project_id: str) -> HttpResponse:
    """STANDARDS.md as served, the same bytes and hash header as GET /v1/projects/{p}/standards."""
    project = project_or_404(request, project_id)
    rendered = standards.standards_markdown(project)
    if rendered is None:
        raise Http404
    text, sha256 = rendered
    response = HttpResponse(text.encode("utf-8"), content_type="text/markdown; charset=utf-8")
    response["X-Standards-Hash"] = sha256
    response["Content-Disposition"] = f'inline; filename="{project.pk}-STANDARDS.md"'
    return response


@login_required
def standards_import(request: HttpRequest, project_id: str, import_id: str) -> HttpResponse:
    project = project_or_404(request, project_id)
    row = (
        StandardsImport.objects.for_project(project).select_related("decision")
        .filter(public_id=import_id).first()
    )
    if row is None:
        raise Http404
    return render(request, "governance/standards_import.html", {
        **project_context(request, project, "standards"),
        "item": standards.import_as_dict(row, standards.served_ids(project)),
        "content": row.content,
    })


@login_required
def skill_list(request: HttpRequest, project_id: str) -> HttpResponse:
    project = project_or_404(request, project_id)
    rows = [skills.skill_summary(skill) for skill in skills.current_skills(project)]
    return render(request, "governance/skill_list.html", {
        **project_context(request, project, "skills"),
        "skills": rows,
    })


@login_required
def skill_detail(request: HttpRequest, project_id: str, name: str) -> HttpResponse:
    project = project_or_404(request, project_id)
    versions = list(Skill.objects.for_project(project).filter(name=name).order_by("-version"))
    if not versions:
        raise Http404
    return render(request, "governance/skill_detail.html", {
        **project_context(request, project, "skills"),
        "skill": skills.skill_as_dict(versions[0]),
        "versions": versions,
    })


@login_required
def context_log(request: HttpRequest, project_id: str) -> HttpResponse:
    """Who received which context bundle bytes, newest first."""
    project = project_or_404(request, project_id)
    rows = selectors.context_delivery_list(project=project)
    page = keyset_page(rows, "id", cursor_value(request.GET.get("before")),
                       cursor_value(request.GET.get("after")), PAGE_SIZE)
    return render(request, "governance/context_log.html", {
        **project_context(request, project, "context"),
        "page": page,
    })


def _delivery_or_404(project: Any, delivery_id: int) -> ContextDelivery:
    row: ContextDelivery | None = (
        selectors.context_delivery_list(project=project).filter(pk=delivery_id).first()
    )
    if row is None:
        raise Http404
    return row


def bundle_bytes(bundle: Bundle, output_format: str) -> bytes:
    """The bytes the API sent: the text, or the JSON form through the API's own renderer."""
    if output_format == ContextDelivery.Format.JSON:
        rendered: bytes = JSONRenderer().render(bundle.as_dict())
        return rendered
    return bundle.text.encode("utf-8")


@login_required
def context_delivery(request: HttpRequest, project_id: str, delivery_id: int) -> HttpResponse:
    """One delivery and the exact bundle it sent, section by section."""
    project = project_or_404(request, project_id)
    delivery = _delivery_or_404(project, delivery_id)
    bundle = delivered_bundle(delivery)
    return render(request, "governance/context_delivery.html", {
        **project_context(request, project, "context"),
        "delivery": delivery,
        "bundle": bundle,
        "redaction": bundle_redaction(delivery) if bundle is not None else None,
    })


@login_required
def context_delivery_bundle(request: HttpRequest, project_id: str,
                            delivery_id: int) -> HttpResponse:
    """The delivered bytes themselves, in the form the agent received (text or JSON)."""
    project = project_or_404(request, project_id)
    delivery = _delivery_or_404(project, delivery_id)
    bundle = delivered_bundle(delivery)
    if bundle is None:
        raise Http404
    is_json = delivery.format == ContextDelivery.Format.JSON
    response = HttpResponse(
        bundle_bytes(bundle, delivery.format),
        content_type="application/json" if is_json else "text/plain; charset=utf-8",
    )
    response["X-Context-Sha256"] = delivery.sha256
    redaction = bundle_redaction(delivery)
    if redaction is not None:
        # Not the delivered bytes any more: the seq of the record that cut them.
        response["X-Context-Redacted-By"] = str(redaction.seq)
    suffix = "json" if is_json else "txt"
    response["Content-Disposition"] = (
        f'inline; filename="{project.pk}-context-{delivery.pk}.{suffix}"'
    )
    return response
