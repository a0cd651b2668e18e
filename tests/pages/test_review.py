"""The review queue on the pages: who sees what, who may decide, and every refusal.

Decisions go through memory.services (the API's and the admin's); each
refusal is checked to change nothing: no entry, the candidate still pending.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from memory import services
from memory.models import MemoryCandidate, MemoryEntry
from tests.pages.conftest import login

pytestmark = pytest.mark.django_db


@pytest.fixture
def proposal(site: Any) -> MemoryCandidate:
    return services.candidate_create(
        project=site.alpha.project, author="agent-codex", category="idea", source="planner",
        content="Cache the **formatted price** per currency.\n\n<script>window.__xss=1</script>",
    )


def _state(candidate: MemoryCandidate) -> tuple[str, int]:
    candidate.refresh_from_db()
    return candidate.status, MemoryEntry.objects.filter(project=candidate.project).count()


def test_a_viewer_reads_the_queue_rendered_with_its_proposer_and_no_buttons(site, proposal):
    body = login(site.member).get("/p/alpha/review/").content.decode()
    assert "<strong>formatted price</strong>" in body  # through the one Markdown filter
    assert "<script>" not in body and "__xss" not in body
    assert "token “agent-codex”</span>" in body and "planner" in body
    assert "Approve" not in body and "<form method=\"post\"" not in body
    assert "Operators of this project decide; you read the queue." in body


def test_an_operator_sees_approve_and_reject_with_csrf(site, proposal):
    body = login(site.operator).get("/p/alpha/review/").content.decode()
    assert f'action="/p/alpha/review/{proposal.uuid}/approve"' in body
    assert f'action="/p/alpha/review/{proposal.uuid}/reject"' in body
    assert body.count('name="csrfmiddlewaretoken"') >= 3  # both forms (and log out)


def test_an_operator_approves_and_the_entry_appears_at_once(site, proposal):
    before = MemoryEntry.objects.filter(project=site.alpha.project).count()
    client = login(site.operator)
    response = client.post(f"/p/alpha/review/{proposal.uuid}/approve")
    assert response.status_code == 303
    assert response["Location"] == "/p/alpha/review/"
    proposal.refresh_from_db()
    entry = proposal.entry
    assert proposal.status == "approved" and proposal.resolved_by == "user:otto"
    assert entry.seq == before + 1 and entry.author == "user:otto"  # as the admin records it
    assert entry.content == proposal.content and entry.source == "planner"
    page = client.get("/p/alpha/review/").content.decode()
    assert f"Approved: the candidate is now memory entry #{entry.seq}." in page
    assert f'href="/p/alpha/memory/{entry.seq}"' in page  # under "Recently resolved"
    assert client.get(f"/p/alpha/memory/{entry.seq}").status_code == 200


def test_an_operator_rejects_and_no_entry_is_written(site, proposal):
    before = MemoryEntry.objects.filter(project=site.alpha.project).count()
    client = login(site.operator)
    assert client.post(f"/p/alpha/review/{proposal.uuid}/reject").status_code == 303
    assert _state(proposal) == ("rejected", before)
    assert "Rejected: the candidate will not become memory." in client.get(
        "/p/alpha/review/").content.decode()


def test_a_superuser_may_decide_too(site, proposal):
    assert login(site.root).post(f"/p/alpha/review/{proposal.uuid}/reject").status_code == 303
    assert _state(proposal)[0] == "rejected"


def test_a_viewers_forged_post_is_refused_and_changes_nothing(site, proposal):
    before = _state(proposal)
    for action in ("approve", "reject"):
        response = login(site.member).post(f"/p/alpha/review/{proposal.uuid}/{action}")
        assert response.status_code == 403
    assert _state(proposal) == before == ("pending", before[1])


def test_a_non_member_gets_404_for_the_queue_and_the_decision(site, proposal):
    before = _state(proposal)
    client = login(site.outsider)
    assert client.get("/p/alpha/review/").status_code == 404
    assert client.post(f"/p/alpha/review/{proposal.uuid}/approve").status_code == 404
    assert _state(proposal) == before


def test_anonymous_posts_go_to_the_login_page_and_change_nothing(site, proposal):
    before = _state(proposal)
    response = Client().post(f"/p/alpha/review/{proposal.uuid}/approve")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert _state(proposal) == before


def test_a_post_without_the_csrf_token_is_refused(site, proposal):
    before = _state(proposal)
    client = Client(enforce_csrf_checks=True)
    client.force_login(site.operator)
    assert client.post(f"/p/alpha/review/{proposal.uuid}/approve").status_code == 403
    assert _state(proposal) == before
    # The page's own form, token included, goes through.
    client.get("/p/alpha/review/")
    token = client.cookies["csrftoken"].value
    response = client.post(f"/p/alpha/review/{proposal.uuid}/approve",
                           {"csrfmiddlewaretoken": token})
    assert response.status_code == 303
    assert _state(proposal)[0] == "approved"


def test_a_second_decision_says_so_and_changes_nothing(site, proposal):
    client = login(site.operator)
    client.post(f"/p/alpha/review/{proposal.uuid}/approve")
    after_first = _state(proposal)
    for action in ("approve", "reject"):  # a double submit, or a late reject
        response = client.post(f"/p/alpha/review/{proposal.uuid}/{action}", follow=True)
        assert response.status_code == 200
        assert "Nothing changed: candidate is approved, not pending." in response.content.decode()
    assert _state(proposal) == after_first


def test_a_get_of_a_decision_is_405(site, proposal):
    assert login(site.operator).get(f"/p/alpha/review/{proposal.uuid}/approve").status_code == 405
    assert _state(proposal)[0] == "pending"


def test_another_projects_candidate_is_404_under_my_project(site):
    theirs = services.candidate_create(project=site.beta.project, author="agent-beta",
                                       category="secret", content="quokka idea")
    assert login(site.operator).post(f"/p/alpha/review/{theirs.uuid}/approve").status_code == 404
    assert _state(theirs)[0] == "pending"
    assert login(site.operator).post(
        "/p/alpha/review/00000000-0000-4000-8000-000000000000/approve").status_code == 404


def test_the_memory_write_token_guards_bearers_not_an_operators_session(
        site, proposal, memory_write_token):
    """As in the admin: the operator's session and role decide; the token is the API's."""
    assert login(site.operator).post(f"/p/alpha/review/{proposal.uuid}/approve").status_code == 303
    assert _state(proposal)[0] == "approved"


def test_the_queue_pages_by_keyset_and_lists_resolved_ones_apart(site):
    project = site.alpha.project
    made = [services.candidate_create(project=project, author="agent", category="idea",
                                      content=f"idea number {n}") for n in range(55)]
    services.candidate_reject(project=project, candidate=made[0], by="user:otto")
    client = login(site.member)
    first = client.get("/p/alpha/review/").content.decode()
    assert first.count('class="entry candidate pending"') == 50
    assert "idea number 54" in first and "idea number 4<" not in first
    older = client.get(f"/p/alpha/review/?before={made[5].pk}").content.decode()
    assert older.count('class="entry candidate pending"') == 4  # 1..4; 0 was rejected
    resolved = client.get("/p/alpha/review/?status=resolved").content.decode()
    assert resolved.count('class="entry candidate rejected"') == 1
    assert client.get("/p/alpha/review/?before=x").status_code == 404
    unknown = client.get("/p/alpha/review/?status=bogus").content.decode()
    assert unknown.count('class="entry candidate pending"') == 50  # an unknown view: pending


def test_an_operator_cannot_decide_what_they_proposed(site):
    """The review gate's four-eyes rule on the pages: the reason in place of the buttons,
    and a forged POST refused with it, nothing changed (memory.services.candidate_refusal)."""
    own = services.candidate_create(project=site.alpha.project, author="user:otto",
                                    category="idea", content="my own idea")
    client = login(site.operator)
    body = client.get("/p/alpha/review/").content.decode()
    assert "user:otto proposed this candidate and may not approve it" in body
    assert f'action="/p/alpha/review/{own.uuid}/approve"' not in body
    before = _state(own)
    for action in ("approve", "reject"):
        response = client.post(f"/p/alpha/review/{own.uuid}/{action}", follow=True)
        assert (f"Nothing changed: user:otto proposed this candidate and may not {action} it"
                in response.content.decode())
    assert _state(own) == before == ("pending", before[1])
    # Another operator decides it.
    assert login(site.root).post(f"/p/alpha/review/{own.uuid}/approve").status_code == 303
    assert _state(own)[0] == "approved"
