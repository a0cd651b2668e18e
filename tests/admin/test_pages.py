"""What operators read in the admin: content in lists, file names, short hashes,
pending decisions on the index, readable inline titles, GedWeb's name."""

from __future__ import annotations

from governance.models import EvidenceRecord
from memory import documents, services
from tests.admin.conftest import OPERATOR, VIEW_ONLY, candidate, standards_import, work
from tests.governance.support import add_evidence


def test_the_entry_list_shows_truncated_content(root, alpha):
    services.memory_entry_create(project=alpha.project, author="t", category="note",
                                 content="PostgreSQL keeps the orders. " + "x" * 200)
    html = root.get("/admin/memory/memoryentry/").content.decode()
    assert "PostgreSQL keeps the orders." in html
    assert "x" * 200 not in html and "x" * 40 in html


def test_the_entry_list_searches_content(root, alpha):
    for content in ("The orders live in PostgreSQL.", "Invoices are sent nightly."):
        services.memory_entry_create(project=alpha.project, author="t", category="note",
                                     content=content)
    html = root.get("/admin/memory/memoryentry/", {"q": "postgresql"}).content.decode()
    assert "The orders live in PostgreSQL." in html
    assert "Invoices are sent nightly." not in html
    by_author = root.get("/admin/memory/memoryentry/", {"q": "t"}).content.decode()
    assert "Invoices are sent nightly." in by_author  # the field search still applies


def test_the_candidate_list_shows_and_searches_content(root, alpha):
    candidate(alpha, "Use exact checks for hashes.")
    candidate(alpha, "Prefer small commits.")
    html = root.get("/admin/memory/memorycandidate/", {"q": "exact checks"}).content.decode()
    assert "Use exact checks for hashes." in html
    assert "Prefer small commits." not in html


def test_the_standards_list_shows_file_names_and_short_hashes(root, alpha):
    row = standards_import(alpha, path=".github/copilot-instructions.md")
    html = root.get("/admin/governance/standardsimport/").content.decode()
    assert ".github/copilot-instructions.md" in html
    assert ">Copilot<" not in html  # the choice's label
    assert f">{row.sha256[:12]}<" in html
    assert row.sha256 not in html
    filtered = root.get("/admin/governance/standardsimport/",
                        {"path": ".github/copilot-instructions.md"})
    assert f">{row.sha256[:12]}<" in filtered.content.decode()
    page = root.get(f"/admin/governance/standardsimport/{row.pk}/change/").content.decode()
    assert ".github/copilot-instructions.md" in page and row.sha256 in page


def test_the_standards_list_filters_by_status(root, alpha):
    accepted = standards_import(alpha, path="AGENTS.md")
    accepted.accept(by="admin", sha256=accepted.sha256)
    pending = standards_import(alpha, "# Rules\n\nBe brief.\n", path="CLAUDE.md")
    shown = {status: root.get("/admin/governance/standardsimport/",
                              {"status": status}).content.decode()
             for status in ("pending", "accepted")}
    assert f">{pending.sha256[:12]}<" in shown["pending"]
    assert f">{accepted.sha256[:12]}<" not in shown["pending"]
    assert f">{accepted.sha256[:12]}<" in shown["accepted"]
    assert f">{pending.sha256[:12]}<" not in shown["accepted"]


def test_the_revision_list_filters_to_current_revisions(root, alpha):
    documents.document_put(project=alpha.project, path="PROJECT.md", author="ana",
                           content="# Project\n\nFirst.\n", reason="first draft")
    documents.document_put(project=alpha.project, path="PROJECT.md", author="ana",
                           content="# Project\n\nSecond.\n", reason="second draft",
                           expected_revision=1)
    every = root.get("/admin/memory/documentrevision/").content.decode()
    assert "first draft" in every and "second draft" in every
    current = root.get("/admin/memory/documentrevision/", {"current": "yes"}).content.decode()
    assert "second draft" in current and "first draft" not in current


def test_the_index_lists_pending_decisions_per_project(root, alpha, beta):
    candidate(alpha)
    candidate(alpha, "another")
    decided = candidate(beta)
    services.candidate_reject(project=beta.project, candidate=decided, by="t")
    standards_import(beta)
    html = root.get("/admin/").content.decode()
    assert "Waiting for a decision" in html
    assert ('<a href="/admin/memory/memorycandidate/?status__exact=pending&amp;'
            'project__id__exact=alpha">2</a>') in html
    assert ('<a href="/admin/governance/standardsimport/?status=pending&amp;'
            'project__id__exact=beta">1</a>') in html
    rows = html.split('<th scope="row">')
    beta_row = next(row for row in rows if row.startswith("beta<"))
    assert "<td>0</td>" in beta_row  # its only candidate was decided


def test_the_index_shows_counts_only_for_models_the_user_may_view(staff, alpha):
    candidate(alpha)
    client = staff("sid", [p for p in VIEW_ONLY if p != "memory.view_memorycandidate"],
                   operator_of=(alpha,))
    html = client.get("/admin/").content.decode()
    assert "memorycandidate/?status__exact=pending" not in html


def test_a_token_is_created_from_the_project_page(staff, alpha):
    client = staff("ana", OPERATOR, operator_of=(alpha,))
    page = client.get("/admin/memory/project/alpha/change/").content.decode()
    assert 'href="/admin/memory/projecttoken/add/?project=alpha"' in page
    form = client.get("/admin/memory/projecttoken/add/?project=alpha").content.decode()
    assert '<option value="alpha" selected>' in form


def test_the_project_page_offers_no_token_link_without_the_permission(staff, alpha):
    client = staff("vera", VIEW_ONLY, operator_of=(alpha,))
    page = client.get("/admin/memory/project/alpha/change/").content.decode()
    assert "projecttoken/add/" not in page


def test_inline_rows_say_what_they_are(root, alpha):
    item = work(alpha)
    add_evidence(item, "inspection", "observed")
    html = root.get(f"/admin/governance/workitem/{item.pk}/change/").content.decode()
    assert f"revision 0 of {item.work_id}" in html
    assert f"revision 1 of {item.work_id}" in html
    assert f"{item.pk} r0" not in html and f"{item.pk} r1" not in html
    record = EvidenceRecord.objects.get(work=item)
    assert f"evidence {record.evidence_id} of {item.work_id}" in html
    assert f"{item.pk} evidence {record.evidence_id}" not in html  # the database id's label
    # The object's own name (breadcrumbs, history) says the same.
    assert str(record) == f"evidence {record.evidence_id} of {item.work_id}"
    assert str(item.revisions.get(revision=1)) == f"revision 1 of {item.work_id}"


def test_the_site_says_gedweb(root):
    html = root.get("/admin/").content.decode()
    assert "<title>GedWeb: projects, memory and governance | GedWeb admin</title>" in html
    assert "GedWeb administration" in html
