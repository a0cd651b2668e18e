"""Every admin action and decision button needs its own model permissions.

The refused user ("vera") is staff, holds every view permission and is an
operator member of the project, so only the missing permission refuses her;
each refusal also checks that nothing changed. docs/admin.md lists these
tests against the permissions they prove.
"""

from __future__ import annotations

import pytest
from django.test import Client

from governance.models import StandardsDecision
from memory.models import Membership, MemoryCandidate, MemoryEntry, Project, ProjectToken
from tests.admin.conftest import (
    APPROVE,
    DECIDE_STANDARDS,
    OPERATOR,
    REJECT,
    REVOKE,
    VIEW_ONLY,
    candidate,
    messages_of,
    standards_import,
)
from tests.django_fixtures import bearer_client

CANDIDATES = "/admin/memory/memorycandidate/"
TOKENS = "/admin/memory/projecttoken/"
STANDARDS = "/admin/governance/standardsimport/"


@pytest.fixture
def vera(staff, alpha):
    return staff("vera", VIEW_ONLY, operator_of=(alpha,))


@pytest.fixture
def otto(staff, alpha):
    return staff("otto", OPERATOR, operator_of=(alpha,))


def action(client: Client, url: str, name: str, *pks: int):
    return client.post(url, {"action": name, "_selected_action": list(pks)})


def assert_still_pending(row: MemoryCandidate) -> None:
    row.refresh_from_db()
    assert row.status == MemoryCandidate.Status.PENDING
    assert row.entry_id is None and row.resolved_by == ""
    assert not MemoryEntry.objects.exists()


# --- candidates: list actions ---------------------------------------------------------


def test_a_viewer_cannot_approve_candidates_from_the_list(vera, alpha):
    row = candidate(alpha)
    response = action(vera, CANDIDATES, "approve_candidates", row.pk)
    assert response.status_code in (200, 302)
    assert_still_pending(row)


def test_a_viewer_cannot_reject_candidates_from_the_list(vera, alpha):
    row = candidate(alpha)
    action(vera, CANDIDATES, "reject_candidates", row.pk)
    assert_still_pending(row)


def test_the_list_offers_a_viewer_no_decision_actions(vera, alpha):
    candidate(alpha)
    page = vera.get(CANDIDATES).content.decode()
    assert "approve_candidates" not in page and "reject_candidates" not in page


def test_rejecting_alone_does_not_allow_approving(staff, alpha):
    # change_memorycandidate without add_memoryentry: approval writes an entry.
    client = staff("rita", VIEW_ONLY + REJECT, operator_of=(alpha,))
    row = candidate(alpha)
    action(client, CANDIDATES, "approve_candidates", row.pk)
    assert_still_pending(row)
    assert client.post(f"{CANDIDATES}{row.pk}/approve/").status_code == 403
    assert_still_pending(row)


def test_adding_entries_alone_does_not_allow_approving(staff, alpha):
    client = staff("edna", VIEW_ONLY + ["memory.add_memoryentry"], operator_of=(alpha,))
    row = candidate(alpha)
    action(client, CANDIDATES, "approve_candidates", row.pk)
    assert client.post(f"{CANDIDATES}{row.pk}/approve/").status_code == 403
    assert_still_pending(row)


def test_an_operator_approves_candidates_from_the_list(otto, alpha):
    row = candidate(alpha)
    action(otto, CANDIDATES, "approve_candidates", row.pk)
    row.refresh_from_db()
    assert row.status == MemoryCandidate.Status.APPROVED
    entry = MemoryEntry.objects.get(project=alpha.project)
    assert row.entry_id == entry.pk
    assert (entry.content, entry.author) == ("proposed by review", "user:otto")
    assert row.resolved_by == "user:otto"


def test_exactly_the_approve_permissions_suffice_to_approve(staff, alpha):
    client = staff("abe", VIEW_ONLY + APPROVE, operator_of=(alpha,))
    rows = [candidate(alpha, "one"), candidate(alpha, "two")]
    action(client, CANDIDATES, "approve_candidates", rows[0].pk)
    client.post(f"{CANDIDATES}{rows[1].pk}/approve/")
    assert sorted(MemoryEntry.objects.values_list("content", flat=True)) == ["one", "two"]


def test_an_operator_with_reject_permission_rejects_from_the_list(staff, alpha):
    client = staff("rita", VIEW_ONLY + REJECT, operator_of=(alpha,))
    row = candidate(alpha)
    action(client, CANDIDATES, "reject_candidates", row.pk)
    row.refresh_from_db()
    assert (row.status, row.resolved_by) == ("rejected", "user:rita")
    assert not MemoryEntry.objects.exists()


# --- candidates: buttons on the candidate's page --------------------------------------


def test_a_viewer_cannot_approve_on_the_candidate_page(vera, alpha):
    row = candidate(alpha)
    assert vera.post(f"{CANDIDATES}{row.pk}/approve/").status_code == 403
    assert_still_pending(row)


def test_a_viewer_cannot_reject_on_the_candidate_page(vera, alpha):
    row = candidate(alpha)
    assert vera.post(f"{CANDIDATES}{row.pk}/reject/").status_code == 403
    assert_still_pending(row)


def test_a_viewer_reads_the_candidate_page_without_buttons(vera, alpha):
    row = candidate(alpha, "the <b>proposed</b> content")
    page = vera.get(f"{CANDIDATES}{row.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "the &lt;b&gt;proposed&lt;/b&gt; content" in html
    assert "/approve/" not in html and "/reject/" not in html


def test_an_operator_sees_the_content_and_both_buttons(otto, alpha):
    row = candidate(alpha, "the proposed content")
    html = otto.get(f"{CANDIDATES}{row.pk}/change/").content.decode()
    assert '<pre id="candidate-content">the proposed content</pre>' in html
    assert f'action="{CANDIDATES}{row.pk}/approve/"' in html
    assert f'action="{CANDIDATES}{row.pk}/reject/"' in html
    assert_still_pending(row)  # reading changes nothing


def test_an_operator_approves_on_the_candidate_page(otto, alpha):
    row = candidate(alpha)
    response = otto.post(f"{CANDIDATES}{row.pk}/approve/")
    assert response.status_code == 302
    assert response["Location"] == f"{CANDIDATES}{row.pk}/change/"
    row.refresh_from_db()
    assert row.status == "approved" and row.resolved_by == "user:otto"
    assert MemoryEntry.objects.get().author == "user:otto"


def test_an_operator_rejects_on_the_candidate_page(otto, alpha):
    row = candidate(alpha)
    otto.post(f"{CANDIDATES}{row.pk}/reject/")
    row.refresh_from_db()
    assert (row.status, row.resolved_by) == ("rejected", "user:otto")
    assert not MemoryEntry.objects.exists()


def test_a_get_on_a_decision_url_changes_nothing(otto, alpha):
    row = candidate(alpha)
    assert otto.get(f"{CANDIDATES}{row.pk}/approve/").status_code == 405
    assert otto.get(f"{CANDIDATES}{row.pk}/reject/").status_code == 405
    assert_still_pending(row)


def test_a_decision_post_without_the_csrf_token_is_refused(otto, alpha):
    row = candidate(alpha)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(otto.user)
    assert strict.post(f"{CANDIDATES}{row.pk}/approve/").status_code == 403
    assert_still_pending(row)


def test_deciding_a_decided_candidate_again_is_refused_with_a_message(otto, alpha):
    row = candidate(alpha)
    otto.post(f"{CANDIDATES}{row.pk}/reject/")
    response = otto.post(f"{CANDIDATES}{row.pk}/approve/")
    assert response.status_code == 302
    assert any("not pending" in text for text in messages_of(response))
    row.refresh_from_db()
    assert row.status == "rejected"
    assert not MemoryEntry.objects.exists()
    page = otto.get(f"{CANDIDATES}{row.pk}/change/").content.decode()
    assert "was rejected by user:otto" in page and "/approve/" not in page


# --- tokens ---------------------------------------------------------------------------


def test_a_viewer_cannot_revoke_tokens(vera, alpha):
    record = ProjectToken.objects.get(project=alpha.project)
    page = vera.get(TOKENS).content.decode()
    assert "revoke_tokens" not in page
    action(vera, TOKENS, "revoke_tokens", record.pk)
    record.refresh_from_db()
    assert record.revoked_at is None
    assert bearer_client(alpha.token).get("/v1/projects/alpha").status_code == 200


def test_an_operator_revokes_a_token(staff, alpha):
    client = staff("rex", VIEW_ONLY + REVOKE, operator_of=(alpha,))
    record = ProjectToken.objects.get(project=alpha.project)
    action(client, TOKENS, "revoke_tokens", record.pk)
    record.refresh_from_db()
    assert record.revoked_at is not None
    assert bearer_client(alpha.token).get("/v1/projects/alpha").status_code == 401


def test_a_viewer_cannot_issue_a_token(vera, alpha):
    response = vera.post(f"{TOKENS}add/", {"project": "alpha", "name": "sneaky"})
    assert response.status_code == 403
    assert not ProjectToken.objects.filter(name="sneaky").exists()


# --- standards imports ----------------------------------------------------------------


def test_a_viewer_cannot_accept_or_reject_standards_from_the_list(vera, alpha):
    row = standards_import(alpha)
    assert "accept_imports" not in vera.get(STANDARDS).content.decode()
    action(vera, STANDARDS, "accept_imports", row.pk)
    action(vera, STANDARDS, "reject_imports", row.pk)
    assert not StandardsDecision.objects.exists()


def test_a_viewer_cannot_accept_or_reject_on_the_import_page(vera, alpha):
    row = standards_import(alpha)
    html = vera.get(f"{STANDARDS}{row.pk}/change/").content.decode()
    assert "# Rules" in html and "/accept/" not in html
    for verb in ("accept", "reject"):
        response = vera.post(f"{STANDARDS}{row.pk}/{verb}/", {"sha256": row.sha256})
        assert response.status_code == 403
    assert not StandardsDecision.objects.exists()


def test_an_operator_accepts_standards_from_the_list(otto, alpha):
    row = standards_import(alpha)
    action(otto, STANDARDS, "accept_imports", row.pk)
    decision = StandardsDecision.objects.get(standards_import=row)
    assert (decision.status, decision.decided_by) == ("accepted", "user:otto")


def test_an_operator_rejects_standards_from_the_list(staff, alpha):
    client = staff("dora", VIEW_ONLY + DECIDE_STANDARDS, operator_of=(alpha,))
    row = standards_import(alpha)
    action(client, STANDARDS, "reject_imports", row.pk)
    assert StandardsDecision.objects.get(standards_import=row).status == "rejected"


def test_the_import_page_shows_the_bytes_and_buttons_bound_to_their_hash(otto, alpha):
    row = standards_import(alpha, "# Rules\n\n<script>x</script>\n")
    html = otto.get(f"{STANDARDS}{row.pk}/change/").content.decode()
    assert "<pre># Rules\n\n&lt;script&gt;x&lt;/script&gt;\n</pre>" in html
    assert html.count(f'name="sha256" value="{row.sha256}"') == 2
    assert f'action="{STANDARDS}{row.pk}/accept/"' in html
    assert not StandardsDecision.objects.exists()


@pytest.mark.parametrize("verb, status", [("accept", "accepted"), ("reject", "rejected")])
def test_an_operator_decides_on_the_import_page(otto, alpha, verb, status):
    row = standards_import(alpha)
    response = otto.post(f"{STANDARDS}{row.pk}/{verb}/", {"sha256": row.sha256})
    assert response.status_code == 302
    decision = StandardsDecision.objects.get(standards_import=row)
    assert (decision.status, decision.decided_by) == (status, "user:otto")


def test_a_decision_for_other_bytes_is_refused_and_changes_nothing(otto, alpha):
    row = standards_import(alpha)
    response = otto.post(f"{STANDARDS}{row.pk}/accept/", {"sha256": "0" * 64})
    assert response.status_code == 302
    assert any("sha256" in text for text in messages_of(response))
    assert otto.post(f"{STANDARDS}{row.pk}/accept/").status_code == 302  # no hash at all
    assert not StandardsDecision.objects.exists()


def test_a_second_standards_decision_is_refused_with_a_message(otto, alpha):
    row = standards_import(alpha)
    otto.post(f"{STANDARDS}{row.pk}/reject/", {"sha256": row.sha256})
    response = otto.post(f"{STANDARDS}{row.pk}/accept/", {"sha256": row.sha256})
    assert any("already rejected" in text for text in messages_of(response))
    assert StandardsDecision.objects.get(standards_import=row).status == "rejected"


def test_a_get_on_a_standards_decision_url_changes_nothing(otto, alpha):
    row = standards_import(alpha)
    assert otto.get(f"{STANDARDS}{row.pk}/accept/?sha256={row.sha256}").status_code == 405
    assert not StandardsDecision.objects.exists()


# --- projects and members -------------------------------------------------------------


def test_a_viewer_cannot_create_a_project(vera):
    response = vera.post("/admin/memory/project/add/",
                         {"id": "gamma", "name": "Gamma", "tokens-TOTAL_FORMS": "0",
                          "tokens-INITIAL_FORMS": "0"})
    assert response.status_code == 403
    assert not Project.objects.filter(pk="gamma").exists()


def test_a_viewer_cannot_add_a_member(vera, alpha, django_user_model):
    someone = django_user_model.objects.create_user("sam", "sam@example.org", "pw-sam-12345")
    response = vera.post("/admin/memory/membership/add/",
                         {"project": "alpha", "user": someone.pk, "role": "operator"})
    assert response.status_code == 403
    assert not Membership.objects.filter(user=someone).exists()


# --- candidates: the review gate's four-eyes rule ---------------------------------------


def test_an_operator_cannot_decide_a_candidate_they_proposed(otto, alpha):
    """memory.services.candidate_refusal in the admin: list actions and buttons refuse
    with its reason, and the candidate's page shows the reason instead of the buttons."""
    from memory import services

    row = services.candidate_create(project=alpha.project, author="user:otto",
                                    category="fact", content="my own proposal")
    html = otto.get(f"{CANDIDATES}{row.pk}/change/").content.decode()
    assert "user:otto proposed this candidate and may not approve it" in html
    assert f'action="{CANDIDATES}{row.pk}/approve/"' not in html
    response = action(otto, CANDIDATES, "approve_candidates", row.pk)
    assert any("user:otto proposed this candidate and may not approve it" in text
               for text in messages_of(response))
    response = otto.post(f"{CANDIDATES}{row.pk}/reject/")
    assert any("user:otto proposed this candidate and may not reject it" in text
               for text in messages_of(response))
    assert_still_pending(row)
