"""Handoffs: governance's rule over memory's document store (gedpi-behaviour.md Gap G-11).

governance.handoffs.handoff_put is the one writer of ``handoff/<work_id>.md``;
memory.documents.document_put stores a handoff only with the work item row
of its own project and work id, so any other way in is refused (fail closed).
The API's side of the rule is in tests/memory/test_api_documents.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.urls import resolve

from governance.api.handoffs import HandoffView
from governance.handoffs import handoff_put
from governance.ledger import ledger_verify
from governance.models import LedgerRecord, LedgerRecordKind
from memory import documents
from memory.models import DocumentRevision
from tests.governance.support import open_work, transition

TEXT = "# Handoff\n\nNext: write the tests.\n"


def handoffs_of(project: Any) -> list[tuple[str, int, str, str]]:
    return list(
        DocumentRevision.objects.filter(project=project, path__startswith="handoff/")
        .order_by("path", "revision")
        .values_list("path", "revision", "content", "author")
    )


def refusal(excinfo: pytest.ExceptionInfo[ValidationError]) -> dict[str, list[str]]:
    return excinfo.value.message_dict


def test_handoff_put_stores_the_handoff_of_a_work_item_of_the_project(alpha):
    work = open_work(alpha.project)
    result = handoff_put(project=alpha.project, work_id=work.work_id, content=TEXT,
                         author="agent", reason="end of session")
    assert (result.created, result.changed) == (True, True)
    assert handoffs_of(alpha.project) == [(f"handoff/{work.work_id}.md", 1, TEXT, "agent")]
    # A handoff is a document revision, on the project's trust ledger like any other.
    assert LedgerRecord.objects.filter(
        project=alpha.project, kind=LedgerRecordKind.DOCUMENT_REVISION, row_id=result.document.pk
    ).exists()
    assert ledger_verify(alpha.project)[1] == []


def test_handoff_put_revises_with_the_expected_revision(alpha):
    work = open_work(alpha.project)
    handoff_put(project=alpha.project, work_id=work.work_id, content=TEXT, author="agent")
    result = handoff_put(project=alpha.project, work_id=work.work_id, content=TEXT + "More.\n",
                         author="agent", expected_revision=1)
    assert (result.document.revision, result.created) == (2, False)
    assert [row[1] for row in handoffs_of(alpha.project)] == [1, 2]


def test_handoff_put_takes_terminal_work(alpha):
    work = open_work(alpha.project)
    transition(work, "abandon")
    handoff_put(project=alpha.project, work_id=work.work_id, content=TEXT, author="agent")
    assert len(handoffs_of(alpha.project)) == 1


def test_handoff_put_refuses_another_projects_work_item(alpha, beta):
    foreign = open_work(beta.project)
    with pytest.raises(ValidationError) as excinfo:
        handoff_put(project=alpha.project, work_id=foreign.work_id, content=TEXT,
                    author="agent")
    assert refusal(excinfo) == {
        "path": [f"handoff needs an existing work item of project {alpha.id}: {foreign.work_id}"]
    }
    assert DocumentRevision.objects.count() == 0


# --- fail closed: memory's store writes no handoff on its own ------------------------------


def test_document_put_refuses_a_handoff_without_its_work_item_even_when_it_exists(alpha):
    work = open_work(alpha.project)
    with pytest.raises(ValidationError) as excinfo:
        documents.document_put(project=alpha.project, path=f"handoff/{work.work_id}.md",
                               content=TEXT, author="agent")
    assert list(refusal(excinfo)) == ["path"]
    assert handoffs_of(alpha.project) == []


def test_document_put_refuses_a_handoff_with_another_work_items_row(alpha):
    named = open_work(alpha.project, summary="the named work")
    other = open_work(alpha.project, summary="other work")
    with pytest.raises(ValidationError) as excinfo:
        documents.document_put(project=alpha.project, path=f"handoff/{named.work_id}.md",
                               content=TEXT, author="agent", work_item=other)
    assert list(refusal(excinfo)) == ["path"]
    assert handoffs_of(alpha.project) == []


def test_document_put_refuses_a_handoff_with_another_projects_row(alpha, beta):
    foreign = open_work(beta.project)
    with pytest.raises(ValidationError) as excinfo:
        documents.document_put(project=alpha.project, path=f"handoff/{foreign.work_id}.md",
                               content=TEXT, author="agent", work_item=foreign)
    assert list(refusal(excinfo)) == ["path"]
    assert DocumentRevision.objects.count() == 0


def test_document_put_still_writes_memorys_own_documents(alpha):
    result = documents.document_put(project=alpha.project, path="PROJECT.md",
                                    content="# Project\n\nBicycles.\n", author="agent")
    assert result.created
    assert DocumentRevision.objects.filter(project=alpha.project).count() == 1


def test_the_api_routes_a_handoff_to_governance_and_every_other_document_to_memory():
    work_id = "fix-20260101000000000-" + "0" * 32
    handoff = resolve(f"/v1/projects/alpha/documents/handoff/{work_id}.md")
    assert handoff.func.view_class is HandoffView
    assert handoff.kwargs == {"project_id": "alpha", "work_id": work_id}
    for path in ("PROJECT.md", "adr/0001-db.md", "handoff/root.md",
                 f"handoff/{work_id}.md/revisions"):
        match = resolve(f"/v1/projects/alpha/documents/{path}")
        assert match.namespace == "memory-api", path


def test_the_admin_cannot_add_a_handoff(alpha, client, django_user_model):
    # The admin shows document revisions read-only: no way in beside handoff_put.
    work = open_work(alpha.project)
    root = django_user_model.objects.create_superuser("root", "root@example.org", "pw-root-123")
    client.force_login(root)
    response = client.post("/admin/memory/documentrevision/add/", {
        "project": alpha.id, "path": f"handoff/{work.work_id}.md", "revision": 1,
        "content": TEXT, "author": "root",
    })
    assert response.status_code == 403
    assert handoffs_of(alpha.project) == []
