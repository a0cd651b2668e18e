"""The review gate: propose, list, approve and reject memory candidates."""

from __future__ import annotations

import pytest

from memory import services
from memory.models import MemoryCandidate, MemoryEntry
from tests.django_fixtures import run_in_threads

CANDIDATE = {"category": "decision", "content": "cache the context bundle", "source": "agent"}
CANDIDATE_KEYS = {
    "id",
    "project_id",
    "category",
    "content",
    "source",
    "author",
    "status",
    "created_at",
    "resolved_at",
    "resolved_by",
    "entry_id",
}
ENTRY_KEYS = {
    "id",
    "seq",
    "project_id",
    "category",
    "content",
    "source",
    "corrects",
    "author",
    "created_at",
    "content_sha256",
    "redacts",
    "redacted",
    "prev_hash",
    "hash",
    "corrected_by",
}


def candidates_url(project_id: str) -> str:
    return f"/v1/projects/{project_id}/memory/candidates"


def action_url(project_id: str, candidate_id, action: str) -> str:
    return f"{candidates_url(project_id)}/{candidate_id}/{action}"


def propose(project, **fields) -> MemoryCandidate:
    return services.candidate_create(project=project, author="proposer", **{**CANDIDATE, **fields})


@pytest.fixture
def client(alpha, client_for):
    return client_for(alpha.token)


@pytest.fixture
def pending(alpha) -> MemoryCandidate:
    return propose(alpha.project)


# --- proposing ---------------------------------------------------------------------


def test_it_proposes_a_candidate(alpha, client):
    response = client.post(candidates_url(alpha.id), CANDIDATE, format="json")

    assert response.status_code == 201
    body = response.json()
    assert set(body) == CANDIDATE_KEYS
    assert body["status"] == "pending"
    assert body["author"] == "default"
    assert body["project_id"] == "alpha"
    assert body["entry_id"] is None
    assert body["resolved_at"] is None
    assert body["resolved_by"] is None
    stored = MemoryCandidate.objects.get()
    assert str(stored.uuid) == body["id"]
    assert stored.status == "pending"
    assert MemoryEntry.objects.count() == 0


def test_a_proposal_defaults_its_source_to_operator(alpha, client):
    body = client.post(
        candidates_url(alpha.id), {"category": "c", "content": "x"}, format="json"
    ).json()

    assert body["source"] == "operator"
    assert MemoryCandidate.objects.get().source == "operator"


def test_the_author_of_a_proposal_is_the_token_name(alpha, client_for):
    _, raw = services.project_token_create(project=alpha.project, name="agent-7")

    body = client_for(raw).post(candidates_url(alpha.id), CANDIDATE, format="json").json()

    assert body["author"] == "agent-7"
    assert MemoryCandidate.objects.get().author == "agent-7"


@pytest.mark.parametrize(
    ("body", "bad"),
    [
        ({**CANDIDATE, "category": "Decision"}, {"category"}),
        ({**CANDIDATE, "content": "  "}, {"content"}),
        ({**CANDIDATE, "content": "x" * 32_001}, {"content"}),
        ({**CANDIDATE, "content": "a\x00b"}, {"content"}),
        ({**CANDIDATE, "source": "a\nb"}, {"source"}),
        ({**CANDIDATE, "source": ""}, {"source"}),
        ({**CANDIDATE, "content": 5}, {"content"}),
        ({"content": "x"}, {"category"}),
        ({**CANDIDATE, "status": "approved"}, {"status"}),
        ({**CANDIDATE, "entry_id": "x"}, {"entry_id"}),
        ({**CANDIDATE, "author": "x"}, {"author"}),
        ({**CANDIDATE, "corrects": 1}, {"corrects"}),
        ({"category": 1, "content": "", "source": "a\nb"}, {"category", "content", "source"}),
    ],
)
def test_it_refuses_an_invalid_proposal(alpha, client, body, bad):
    response = client.post(candidates_url(alpha.id), body, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "validation_error"
    assert set(response.json()["fields"]) == bad
    assert MemoryCandidate.objects.count() == 0


# --- listing -------------------------------------------------------------------------


def test_it_lists_candidates_oldest_first(alpha, client):
    made = [propose(alpha.project, content=f"idea {n}") for n in range(3)]

    response = client.get(candidates_url(alpha.id))

    assert response.status_code == 200
    body = response.json()
    assert [item["id"] for item in body["items"]] == [str(c.uuid) for c in made]
    assert all(set(item) == CANDIDATE_KEYS for item in body["items"])
    assert body["next_cursor"] is None
    assert MemoryCandidate.objects.count() == 3


def test_it_lists_only_the_projects_own_candidates(alpha, beta, client):
    propose(beta.project)

    response = client.get(candidates_url(alpha.id))

    assert response.json() == {"items": [], "next_cursor": None}
    assert MemoryCandidate.objects.count() == 1


def test_it_filters_candidates_by_status(alpha, client):
    first, second, third = (propose(alpha.project, content=f"idea {n}") for n in range(3))
    services.candidate_approve(project=alpha.project, candidate=first, by="reviewer")
    services.candidate_reject(project=alpha.project, candidate=third, by="reviewer")

    by_status = {
        status: [item["id"] for item in client.get(
            candidates_url(alpha.id), {"status": status}
        ).json()["items"]]
        for status in ("pending", "approved", "rejected")
    }

    assert by_status == {
        "pending": [str(second.uuid)],
        "approved": [str(first.uuid)],
        "rejected": [str(third.uuid)],
    }
    approved = client.get(candidates_url(alpha.id), {"status": "approved"}).json()["items"][0]
    assert approved["entry_id"] == str(MemoryEntry.objects.get().uuid)


def test_it_pages_candidates_with_next_cursor(alpha, client):
    made = [str(propose(alpha.project, content=f"idea {n}").uuid) for n in range(5)]
    seen: list[str] = []
    cursors: list = []
    params: dict = {"limit": 2}

    while True:
        response = client.get(candidates_url(alpha.id), params)
        assert response.status_code == 200
        body = response.json()
        seen.extend(item["id"] for item in body["items"])
        cursors.append(body["next_cursor"])
        if body["next_cursor"] is None:
            break
        params["after"] = body["next_cursor"]

    assert seen == made
    assert len(cursors) == 3
    assert MemoryCandidate.objects.count() == 5


def test_next_cursor_is_null_when_the_last_candidate_page_is_full(alpha, client):
    for n in range(4):
        propose(alpha.project, content=f"idea {n}")

    first = client.get(candidates_url(alpha.id), {"limit": 2}).json()
    second = client.get(
        candidates_url(alpha.id), {"limit": 2, "after": first["next_cursor"]}
    ).json()

    assert first["next_cursor"] is not None
    assert len(second["items"]) == 2
    assert second["next_cursor"] is None
    assert MemoryCandidate.objects.count() == 4


@pytest.mark.parametrize(
    "query", [{"status": "done"}, {"limit": -1}, {"limit": "1.5"}, {"after": "x"}, {"sort": "asc"}]
)
def test_it_refuses_a_bad_candidate_query(alpha, client, query):
    propose(alpha.project)

    response = client.get(candidates_url(alpha.id), query)

    assert response.status_code == 400
    assert set(response.json()["fields"]) == set(query)
    assert MemoryCandidate.objects.filter(status="pending").count() == 1


# --- approving and rejecting -----------------------------------------------------------


def test_it_approves_a_candidate_into_one_entry(alpha, client, pending):
    response = client.post(action_url(alpha.id, pending.uuid, "approve"))

    assert response.status_code == 200
    entry = response.json()
    assert set(entry) == ENTRY_KEYS
    assert entry["seq"] == 1
    assert entry["category"] == CANDIDATE["category"]
    assert entry["content"] == CANDIDATE["content"]
    assert entry["source"] == CANDIDATE["source"]
    assert entry["author"] == "default"
    stored = MemoryEntry.objects.get()
    assert str(stored.uuid) == entry["id"]
    pending.refresh_from_db()
    assert pending.status == "approved"
    assert pending.entry_id == stored.pk
    assert pending.resolved_by == "default"
    assert pending.resolved_at is not None


def test_an_approved_candidate_names_its_entry(alpha, client, pending):
    entry = client.post(action_url(alpha.id, pending.uuid, "approve")).json()

    listed = client.get(candidates_url(alpha.id)).json()["items"][0]

    assert listed["status"] == "approved"
    assert listed["entry_id"] == entry["id"]
    assert listed["resolved_by"] == "default"
    assert MemoryEntry.objects.count() == 1


def test_an_approved_entry_continues_the_chain(alpha, client, pending):
    services.memory_entry_create(project=alpha.project, author="t", category="c", content="x")

    entry = client.post(action_url(alpha.id, pending.uuid, "approve")).json()

    assert entry["seq"] == 2
    assert entry["prev_hash"] == MemoryEntry.objects.get(seq=1).hash
    assert services.memory_chain_verify(project=alpha.project).ok


def test_it_accepts_an_empty_object_as_the_approval_body(alpha, client, pending):
    response = client.post(action_url(alpha.id, pending.uuid, "approve"), {}, format="json")

    assert response.status_code == 200
    assert MemoryEntry.objects.count() == 1


@pytest.mark.parametrize("action", ["approve", "reject"])
def test_it_refuses_fields_in_a_decision_body(alpha, client, pending, action):
    response = client.post(
        action_url(alpha.id, pending.uuid, action), {"content": "changed"}, format="json"
    )

    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["content"]
    pending.refresh_from_db()
    assert pending.status == "pending"
    assert MemoryEntry.objects.count() == 0


def test_it_refuses_to_approve_twice(alpha, client, pending):
    first = client.post(action_url(alpha.id, pending.uuid, "approve"))

    again = client.post(action_url(alpha.id, pending.uuid, "approve"))

    assert first.status_code == 200
    assert again.status_code == 409
    assert again.json()["code"] == "conflict"
    assert MemoryEntry.objects.count() == 1
    pending.refresh_from_db()
    assert str(pending.entry.uuid) == first.json()["id"]


def test_it_rejects_a_candidate(alpha, client, pending):
    response = client.post(action_url(alpha.id, pending.uuid, "reject"))

    assert response.status_code == 200
    body = response.json()
    assert set(body) == CANDIDATE_KEYS
    assert body["status"] == "rejected"
    assert body["resolved_by"] == "default"
    assert body["entry_id"] is None
    pending.refresh_from_db()
    assert pending.status == "rejected"
    assert pending.resolved_at is not None
    assert MemoryEntry.objects.count() == 0


def test_it_refuses_to_approve_a_rejected_candidate(alpha, client, pending):
    client.post(action_url(alpha.id, pending.uuid, "reject"))

    response = client.post(action_url(alpha.id, pending.uuid, "approve"))

    assert response.status_code == 409
    assert response.json()["code"] == "conflict"
    pending.refresh_from_db()
    assert pending.status == "rejected"
    assert MemoryEntry.objects.count() == 0


def test_it_refuses_to_reject_an_approved_candidate(alpha, client, pending):
    client.post(action_url(alpha.id, pending.uuid, "approve"))

    response = client.post(action_url(alpha.id, pending.uuid, "reject"))

    assert response.status_code == 409
    pending.refresh_from_db()
    assert pending.status == "approved"
    assert MemoryEntry.objects.count() == 1


def test_it_refuses_to_reject_twice(alpha, client, pending):
    client.post(action_url(alpha.id, pending.uuid, "reject"))

    response = client.post(action_url(alpha.id, pending.uuid, "reject"))

    assert response.status_code == 409
    pending.refresh_from_db()
    assert pending.status == "rejected"


@pytest.mark.parametrize("action", ["approve", "reject"])
@pytest.mark.parametrize(
    "candidate_id",
    ["3f2c7a3e-8d4b-4f6e-9a1b-2c3d4e5f6a7b", "not-a-uuid", "1", "0" * 40],
    ids=["unknown", "malformed", "number", "long"],
)
def test_it_answers_an_unknown_candidate_with_404(alpha, client, pending, action, candidate_id):
    response = client.post(action_url(alpha.id, candidate_id, action))

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    pending.refresh_from_db()
    assert pending.status == "pending"
    assert MemoryEntry.objects.count() == 0


@pytest.mark.parametrize("action", ["approve", "reject"])
def test_it_answers_another_projects_candidate_with_404(alpha, beta, client, action):
    foreign = propose(beta.project)

    response = client.post(action_url(alpha.id, foreign.uuid, action))

    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "message": "not found"}
    foreign.refresh_from_db()
    assert foreign.status == "pending"
    assert MemoryEntry.objects.count() == 0


@pytest.mark.parametrize("action", ["approve", "reject"])
def test_it_refuses_a_decision_by_another_projects_token(alpha, beta, client_for, pending, action):
    response = client_for(beta.token).post(action_url(alpha.id, pending.uuid, action))

    assert response.status_code == 404
    pending.refresh_from_db()
    assert pending.status == "pending"


def test_the_admin_token_approves_as_admin(alpha, admin_client, pending):
    response = admin_client.post(action_url(alpha.id, pending.uuid, "approve"))

    assert response.status_code == 200
    assert response.json()["author"] == "admin"
    pending.refresh_from_db()
    assert pending.resolved_by == "admin"


# --- races ------------------------------------------------------------------------------


def test_concurrent_approvals_create_exactly_one_entry(live_db, make_project, client_for):
    target = make_project("race")
    candidate = propose(target.project)
    url = action_url(target.id, candidate.uuid, "approve")

    def work(index: int):
        response = client_for(target.token).post(url)
        return response.status_code, response.json()

    results = run_in_threads(work, 10)

    assert not [r for r in results if isinstance(r, BaseException)], results
    statuses = sorted(status for status, _ in results)
    assert statuses == [200] + [409] * 9, results
    assert all(body["code"] == "conflict" for status, body in results if status == 409)
    entry = MemoryEntry.objects.get()
    winner = next(body for status, body in results if status == 200)
    assert winner["id"] == str(entry.uuid)
    candidate.refresh_from_db()
    assert candidate.status == "approved"
    assert candidate.entry_id == entry.pk
    assert services.memory_chain_verify(project=target.project).ok


def test_concurrent_approve_and_reject_decide_once(live_db, make_project, client_for):
    target = make_project("race")
    candidate = propose(target.project)

    def work(index: int):
        action = "approve" if index % 2 else "reject"
        response = client_for(target.token).post(action_url(target.id, candidate.uuid, action))
        return action, response.status_code

    results = run_in_threads(work, 10)

    assert not [r for r in results if isinstance(r, BaseException)], results
    winners = [action for action, status in results if status == 200]
    assert len(winners) == 1
    assert sorted(status for _, status in results) == [200] + [409] * 9
    candidate.refresh_from_db()
    expected = {"approve": "approved", "reject": "rejected"}[winners[0]]
    assert candidate.status == expected
    assert MemoryEntry.objects.count() == (1 if expected == "approved" else 0)
    assert services.memory_chain_verify(project=target.project).ok
