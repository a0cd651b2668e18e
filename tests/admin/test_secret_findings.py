"""Secrets found in stored text, in the admin (issue 35): the index count, the redaction links."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import CommandError, call_command

from memory import services
from memory.models import MemoryEntry, SecretFinding
from tests.admin.conftest import VIEW_ONLY

TOKEN = "rotated-admin-token-0123456789abcdef"


@pytest.fixture
def found(alpha: Any, beta: Any, settings: Any) -> dict[str, Any]:
    """An entry in alpha and one in beta holding a token configured afterwards, scanned."""
    entries = {}
    for target in (alpha, beta):
        entries[target.id] = services.memory_entry_create(
            project=target.project, author="cli", category="note",
            content=f"deploy notes: the admin token is {TOKEN}").entry
    services.memory_entry_create(project=alpha.project, author="cli", category="note",
                                 content=f"and again {TOKEN}")
    settings.ADMIN_TOKEN = TOKEN
    with pytest.raises(CommandError):
        call_command("memory", "scan")
    return entries


def test_the_index_counts_the_findings_not_allowed_per_project(root, found):
    html = root.get("/admin/").content.decode()
    assert 'id="secret-findings"' in html
    assert '<a href="/admin/memory/secretfinding/?allowed__exact=0">3</a>' in html
    assert ('<a href="/admin/memory/secretfinding/?allowed__exact=0&amp;'
            'project__id__exact=alpha">2</a>') in html
    assert ('<a href="/admin/memory/secretfinding/?allowed__exact=0&amp;'
            'project__id__exact=beta">1</a>') in html
    assert TOKEN not in html


def test_the_index_counts_only_operated_projects_and_only_for_viewers_of_findings(staff, found,
                                                                                    alpha):
    vera = staff("vera", VIEW_ONLY, operator_of=(alpha,))
    html = vera.get("/admin/").content.decode()
    assert '<a href="/admin/memory/secretfinding/?allowed__exact=0">2</a>' in html
    assert "project__id__exact=beta" not in html
    blind = staff("bo", [p for p in VIEW_ONLY if p != "memory.view_secretfinding"],
                  operator_of=(alpha,))
    assert 'id="secret-findings"' not in blind.get("/admin/").content.decode()


def test_an_index_with_nothing_found_says_so(root):
    html = root.get("/admin/").content.decode()
    assert '<a href="/admin/memory/secretfinding/?allowed__exact=0">0</a>' in html
    assert "None found." in html


def test_the_list_links_each_entry_finding_to_its_redaction(root, found):
    html = root.get("/admin/memory/secretfinding/?project__id__exact=alpha").content.decode()
    for finding in SecretFinding.objects.filter(project_id="alpha"):
        assert (f'<a href="/admin/memory/secretfinding/{finding.pk}/redact/">redact entry '
                f'{finding.seq}</a>') in html
    assert TOKEN not in html


def test_a_finding_outside_an_entry_links_to_the_redaction_of_its_text(root, alpha,
                                                                       settings):
    from memory.documents import document_put
    from memory.models import DocumentRevision, TextRedaction

    document_put(project=alpha.project, path="CONTEXT.md", content=f"# C\n\n{TOKEN}\n",
                 author="cli")
    settings.ADMIN_TOKEN = TOKEN
    with pytest.raises(CommandError):
        call_command("memory", "scan")
    (finding,) = SecretFinding.objects.all()
    url = f"/admin/memory/secretfinding/{finding.pk}/redact/"
    html = root.get("/admin/memory/secretfinding/").content.decode()
    assert f'<a href="{url}">redact document content</a>' in html
    page = root.get(url).content.decode()
    assert TOKEN not in page and "CONTEXT.md" in page and 'name="reason"' in page
    done = root.post(url, {"confirm": "yes", "reason": "a token found by memory scan"})
    assert done.status_code == 302
    (revision,) = DocumentRevision.objects.filter(project=alpha.project)
    (record,) = TextRedaction.objects.all()
    assert revision.content == f"# C\n\n{record.notice}\n" and TOKEN not in revision.content
    assert (record.redacted_by, record.reason) == ("user:root", "a token found by memory scan")
    assert not SecretFinding.objects.exists()
    call_command("memory", "scan")  # nothing found: exit 0


def test_following_the_link_and_confirming_redacts_the_entry(root, found):
    entry = found["alpha"]
    finding = SecretFinding.objects.get(project_id="alpha", seq=entry.seq)
    url = f"/admin/memory/secretfinding/{finding.pk}/redact/"
    page = root.get(url)
    html = page.content.decode()
    assert page.status_code == 200 and TOKEN not in html
    assert "whole content leaves the database" in html
    done = root.post(url, {"confirm": "yes", "reason": "a token found by memory scan"})
    assert done.status_code == 302
    entry.refresh_from_db()
    assert TOKEN not in entry.content and entry.content.startswith("[redacted by")
    assert MemoryEntry.objects.filter(project_id="alpha", category="redaction").count() == 1
    assert not SecretFinding.objects.filter(project_id="alpha", seq=entry.seq).exists()
    assert SecretFinding.objects.filter(project_id="alpha").count() == 1  # the other entry's


def test_the_redaction_link_needs_the_redact_permission(staff, found, alpha):
    finding = SecretFinding.objects.filter(project_id="alpha").first()
    vera = staff("vera", VIEW_ONLY, operator_of=(alpha,))
    assert vera.get(f"/admin/memory/secretfinding/{finding.pk}/redact/").status_code == 403
    posted = vera.post(f"/admin/memory/secretfinding/{finding.pk}/redact/",
                       {"confirm": "yes", "reason": "mine"})
    assert posted.status_code == 403
    assert not MemoryEntry.objects.filter(category="redaction").exists()


def test_another_projects_finding_is_not_reached(staff, found, alpha):
    theirs = SecretFinding.objects.get(project_id="beta")
    rex = staff("rex", VIEW_ONLY + ["memory.redact_memoryentry"], operator_of=(alpha,))
    assert rex.get(f"/admin/memory/secretfinding/{theirs.pk}/redact/").status_code == 404
