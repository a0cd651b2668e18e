"""Idempotency-Key on POST /v1/projects/{id}/memory/candidates: the appends' rules for proposals.

A retried proposal whose answer was lost must not double the candidate
(docs/api.md "Candidates (review gate)"): the same key and body replay the
stored candidate, another body is 422, keys belong to (project, token), a
key in flight on PostgreSQL is 409, and nothing failed is ever stored.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from django.db import IntegrityError, connection, connections, transaction
from django.db.migrations.executor import MigrationExecutor

from memory import quotas, services
from memory.models import MemoryCandidate, MemoryEntry, Project, ProjectQuota
from memory.services import idempotency_key_digest as digest
from tests.django_fixtures import ADMIN_TOKEN, postgres_only, run_in_threads

BODY = {"category": "decision", "content": "cache the context bundle", "source": "agent"}
KEY = "propose-7f3a/2026-12-02T18:00Z"


def candidates_url(project_id: str) -> str:
    return f"/v1/projects/{project_id}/memory/candidates"


def propose(client, project_id: str, body=BODY, key: str | None = KEY):
    extra = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    return client.post(candidates_url(project_id), body, format="json", **extra)


def propose_raw(client, project_id: str, raw: bytes, key: str = KEY):
    return client.generic(
        "POST", candidates_url(project_id), raw, content_type="application/json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


def count(project=None) -> int:
    candidates = MemoryCandidate.objects.all()
    return candidates.filter(project=project).count() if project else candidates.count()


def entries_used(project) -> int:
    return ProjectQuota.objects.get(project=project, kind="entries").used_bytes


def cost(text: str) -> int:
    return quotas.text_bytes(text) + quotas.ROW_OVERHEAD_BYTES


@pytest.fixture
def client(alpha, client_for):
    return client_for(alpha.token)


@pytest.fixture
def second(alpha, client_for):
    """Another token of the same project, named differently."""
    _, raw = services.project_token_create(project=alpha.project, name="second-agent")
    return client_for(raw)


# --- replays ----------------------------------------------------------------------------


def test_a_keyed_proposal_stores_its_key_in_the_tokens_scope(alpha, client):
    response = propose(client, alpha.id)

    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response
    stored = MemoryCandidate.objects.get()
    assert str(stored.uuid) == response.json()["id"]
    assert stored.idempotency_key == digest(KEY)
    assert stored.idempotency_scope == f"token:{alpha.project.tokens.get().pk}"
    assert stored.request_hash == services.request_fingerprint(BODY)


def test_an_unkeyed_proposal_stores_no_key(alpha, client):
    propose(client, alpha.id, key=None)
    propose(client, alpha.id, key=None)

    assert list(MemoryCandidate.objects.values_list(
        "idempotency_key", "idempotency_scope", "request_hash")) == [(None, None, None)] * 2


def test_it_replays_the_same_key_and_body(alpha, client):
    first = propose(client, alpha.id)

    again = propose(client, alpha.id)

    assert again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert count() == 1


def test_it_replays_a_body_with_other_key_order_and_spacing(alpha, client):
    first = propose_raw(client, alpha.id,
                        b'{"category":"decision","content":"cache it","source":"agent"}')

    again = propose_raw(
        client, alpha.id,
        b'{\n  "source" : "agent",\n\t"content":   "cache it",  "category": "decision"\n}\n',
    )

    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert count() == 1


def test_a_replay_after_approval_answers_the_approved_candidate_and_proposes_nothing(
        alpha, client, admin_client):
    first = propose(client, alpha.id)
    approved = admin_client.post(f"{candidates_url(alpha.id)}/{first.json()['id']}/approve")
    assert approved.status_code == 200

    again = propose(client, alpha.id)

    assert again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["status"] == "approved"
    assert again.json()["entry_id"] == approved.json()["id"]
    assert count() == 1
    assert MemoryEntry.objects.count() == 1


def test_a_key_given_to_the_service_replays_over_the_api_in_the_same_scope(alpha, client):
    token = alpha.project.tokens.get()
    stored = services.candidate_propose(
        project=alpha.project, author="default", idempotency_key=KEY,
        idempotency_scope=f"token:{token.pk}", **BODY,
    )

    response = propose(client, alpha.id)

    assert stored.replayed is False
    assert response["Idempotent-Replayed"] == "true"
    assert response.json()["id"] == str(stored.candidate.uuid)
    assert count() == 1


def test_the_service_scopes_a_key_to_the_author_without_a_scope(alpha):
    first = services.candidate_propose(project=alpha.project, author="cli-bot",
                                       idempotency_key=KEY, **BODY)
    again = services.candidate_propose(project=alpha.project, author="cli-bot",
                                       idempotency_key=KEY, **BODY)
    other = services.candidate_propose(project=alpha.project, author="another-bot",
                                       idempotency_key=KEY, **BODY)

    assert (first.replayed, again.replayed, other.replayed) == (False, True, False)
    assert again.candidate.pk == first.candidate.pk
    assert sorted(MemoryCandidate.objects.values_list("idempotency_scope", flat=True)) == [
        "another-bot", "cli-bot"]


# --- reuse with another body -------------------------------------------------------------


@pytest.mark.parametrize(
    "changed",
    [
        {**BODY, "content": "do not cache it"},
        {**BODY, "category": "note"},
        {**BODY, "source": "operator"},
        {"category": "decision", "content": "cache the context bundle"},
    ],
    ids=["content", "category", "source", "without-source"],
)
def test_it_refuses_the_same_key_with_a_different_body(alpha, client, changed):
    first = propose(client, alpha.id)
    used = entries_used(alpha.project)

    response = propose(client, alpha.id, changed)

    assert response.status_code == 422
    assert response.json()["code"] == "idempotency_key_reused"
    assert "Idempotent-Replayed" not in response
    assert count() == 1
    stored = MemoryCandidate.objects.get()
    assert (str(stored.uuid), stored.content, stored.category, stored.source) == (
        first.json()["id"], BODY["content"], BODY["category"], BODY["source"])
    assert entries_used(alpha.project) == used


# --- keys belong to (project, token) -------------------------------------------------------


def test_the_same_key_and_body_from_another_token_is_a_candidate_of_its_own(alpha, client,
                                                                             second):
    first = propose(client, alpha.id)

    other = propose(second, alpha.id)

    assert first.status_code == other.status_code == 201
    assert "Idempotent-Replayed" not in other
    assert other.json()["id"] != first.json()["id"]
    assert other.json()["author"] == "second-agent"
    assert sorted(MemoryCandidate.objects.values_list("author", "idempotency_key")) == [
        ("default", digest(KEY)), ("second-agent", digest(KEY))]


def test_another_tokens_key_with_another_body_is_not_a_reuse(alpha, client, second):
    propose(client, alpha.id)

    other = propose(second, alpha.id, {**BODY, "content": "something else"})

    assert other.status_code == 201
    assert other.json()["content"] == "something else"
    assert count() == 2


def test_each_token_replays_only_its_own_candidate(alpha, client, second):
    mine, theirs = propose(client, alpha.id), propose(second, alpha.id)

    again_mine, again_theirs = propose(client, alpha.id), propose(second, alpha.id)

    assert again_mine["Idempotent-Replayed"] == again_theirs["Idempotent-Replayed"] == "true"
    assert again_mine.json()["id"] == mine.json()["id"]
    assert again_theirs.json()["id"] == theirs.json()["id"]
    assert count() == 2


def test_the_admin_tokens_keys_are_its_own(alpha, client, client_for):
    propose(client, alpha.id)

    admin = propose(client_for(ADMIN_TOKEN), alpha.id)

    assert admin.status_code == 201
    assert "Idempotent-Replayed" not in admin
    assert admin.json()["author"] == "admin"
    assert MemoryCandidate.objects.get(author="admin").idempotency_scope == "admin"
    assert count() == 2


def test_a_token_with_a_reissued_name_does_not_inherit_the_old_tokens_keys(alpha, client,
                                                                             client_for):
    propose(client, alpha.id)
    services.project_token_revoke(project=alpha.project, name="default")
    _, raw = services.project_token_create(project=alpha.project, name="default")

    response = propose(client_for(raw), alpha.id)

    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response
    assert count() == 2


def test_keys_are_scoped_to_the_project(alpha, beta, client, client_for):
    in_alpha = propose(client, alpha.id)

    in_beta = propose(client_for(beta.token), beta.id, {**BODY, "content": "beta's"})

    assert in_beta.status_code == 201
    assert "Idempotent-Replayed" not in in_beta
    assert in_beta.json()["id"] != in_alpha.json()["id"]
    assert (count(alpha.project), count(beta.project)) == (1, 1)


def test_an_entry_key_and_a_candidate_key_with_the_same_text_are_two_keys(alpha, client):
    appended = client.post(f"/v1/projects/{alpha.id}/memory", BODY, format="json",
                           HTTP_IDEMPOTENCY_KEY=KEY)

    proposed = propose(client, alpha.id, {**BODY, "content": "another body"})
    appended_again = client.post(f"/v1/projects/{alpha.id}/memory", BODY, format="json",
                                 HTTP_IDEMPOTENCY_KEY=KEY)

    assert appended.status_code == proposed.status_code == 201
    assert "Idempotent-Replayed" not in proposed
    assert appended_again["Idempotent-Replayed"] == "true"
    assert appended_again.json()["id"] == appended.json()["id"]
    assert (MemoryEntry.objects.count(), count()) == (1, 1)


# --- bad keys and failed requests store nothing -----------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["", "k" * 256, "\x01abc", "ключ", "key\n", "tab\tkey", "del\x7f"],
    ids=["empty", "256-chars", "control", "non-ascii", "newline", "tab", "delete"],
)
def test_it_refuses_a_malformed_key_and_stores_nothing(alpha, client, key):
    used = entries_used(alpha.project)

    response = propose(client, alpha.id, key=key)

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_error"
    assert list(body["fields"]) == ["Idempotency-Key"]
    assert count() == 0
    assert entries_used(alpha.project) == used


@pytest.mark.parametrize("key", ["k" * 255, "a b ~!@#$%^&*()_+{}|:<>?", "x"])
def test_it_accepts_any_printable_ascii_key_up_to_255(alpha, client, key):
    response = propose(client, alpha.id, key=key)

    assert response.status_code == 201
    assert MemoryCandidate.objects.get().idempotency_key == digest(key)


@pytest.mark.parametrize(
    "bad",
    [
        b'{"category": "Bad Category", "content": "cache it", "source": "agent"}',
        b'{"category": "decision", "content": "a\\ud800b", "source": "agent"}',
        b'{"category": "decision", "content": "cache it", "status": "approved"}',
        b'{"category": "decision", "content": "cache it"',
    ],
    ids=["category", "lone-surrogate", "server-field", "malformed-json"],
)
def test_a_refused_request_does_not_use_up_its_key(alpha, client, bad):
    refused = propose_raw(client, alpha.id, bad)

    accepted = propose(client, alpha.id)

    assert refused.status_code == 400
    assert accepted.status_code == 201
    assert "Idempotent-Replayed" not in accepted
    assert MemoryCandidate.objects.get().content == BODY["content"]


def test_a_proposal_over_the_quota_stores_nothing_and_leaves_its_key_free(alpha, client):
    full = quotas.MIB - cost(BODY["content"]) + 1
    ProjectQuota.objects.filter(project=alpha.project, kind="entries").update(
        used_bytes=full, limit_mib=1)

    refused = propose(client, alpha.id)
    ProjectQuota.objects.filter(project=alpha.project, kind="entries").update(limit_mib=2)
    accepted = propose(client, alpha.id)

    assert refused.status_code == 409
    assert refused.json()["code"] == "quota_exceeded"
    assert accepted.status_code == 201
    assert "Idempotent-Replayed" not in accepted
    assert count() == 1
    assert entries_used(alpha.project) == full + cost(BODY["content"])


# --- quotas ---------------------------------------------------------------------------------


def test_a_replay_charges_no_quota(alpha, client):
    before = entries_used(alpha.project)
    propose(client, alpha.id)
    after_first = entries_used(alpha.project)

    propose(client, alpha.id)
    propose(client, alpha.id)

    assert after_first == before + cost(BODY["content"])
    assert entries_used(alpha.project) == after_first


def test_a_replay_is_answered_even_when_the_quota_is_full(alpha, client):
    first = propose(client, alpha.id)
    ProjectQuota.objects.filter(project=alpha.project, kind="entries").update(
        used_bytes=quotas.MIB, limit_mib=1)

    again = propose(client, alpha.id)
    fresh = propose(client, alpha.id, key="another-key")

    assert again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert fresh.status_code == 409
    assert fresh.json()["code"] == "quota_exceeded"
    assert entries_used(alpha.project) == quotas.MIB
    assert count() == 1


# --- the model and its migration -------------------------------------------------------------


def test_the_database_refuses_a_second_candidate_under_one_scoped_key(alpha):
    fields = {"project": alpha.project, "author": "a", "idempotency_scope": "token:1",
              "idempotency_key": KEY, "request_hash": "0" * 64, **BODY}
    MemoryCandidate.objects.create(**fields)

    with pytest.raises(IntegrityError), transaction.atomic():
        MemoryCandidate.objects.create(**fields)

    MemoryCandidate.objects.create(**{**fields, "idempotency_scope": "token:2"})
    MemoryCandidate.objects.create(**{**fields, "idempotency_key": None,
                                      "idempotency_scope": None})
    MemoryCandidate.objects.create(**{**fields, "idempotency_key": None,
                                      "idempotency_scope": None})
    assert count() == 4


def test_a_keyed_candidate_is_approved_and_rejected_as_any_other(alpha, client, admin_client):
    approve = propose(client, alpha.id).json()["id"]
    reject = propose(client, alpha.id, {**BODY, "content": "no"}, key="other").json()["id"]

    approved = admin_client.post(f"{candidates_url(alpha.id)}/{approve}/approve")
    rejected = admin_client.post(f"{candidates_url(alpha.id)}/{reject}/reject")

    assert approved.status_code == rejected.status_code == 200
    assert dict(MemoryCandidate.objects.values_list("idempotency_key", "status")) == {
        digest(KEY): "approved", digest("other"): "rejected"}
    assert MemoryEntry.objects.get().content == BODY["content"]


def test_migration_0012_keeps_earlier_candidates_unkeyed_and_reviewable(live_db, make_project):
    target = make_project("mig")
    executor = MigrationExecutor(connection)
    executor.migrate([("memory", "0011_memoryentry_idempotency_scope")])
    # The table as 0011 left it, written through that state's model.
    old_candidate = executor.loader.project_state(
        ("memory", "0011_memoryentry_idempotency_scope")).apps.get_model(
        "memory", "MemoryCandidate")
    old_candidate.objects.create(project_id=target.id, author="early", **BODY)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    early = MemoryCandidate.objects.get()
    keyed = services.candidate_propose(project=target.project, author="late",
                                       idempotency_key=KEY, **BODY)
    entry = services.candidate_approve(project=target.project, candidate=early, by="admin")

    assert (early.idempotency_key, early.idempotency_scope, early.request_hash) == (
        None, None, None)
    assert keyed.replayed is False
    assert MemoryCandidate.objects.get(pk=early.pk).entry_id == entry.pk
    assert count() == 2


# --- the schema ---------------------------------------------------------------------------------


def test_the_schema_documents_the_key_on_proposals_as_on_appends(client):
    schema = json.loads(client.get("/v1/schema", {"format": "json"}).content)
    paths = schema["paths"]
    propose_op = paths["/v1/projects/{project_id}/memory/candidates"]["post"]
    append_op = paths["/v1/projects/{project_id}/memory"]["post"]

    def key_header(operation):
        return next(p for p in operation["parameters"]
                    if p["in"] == "header" and p["name"] == "Idempotency-Key")

    assert key_header(propose_op) == key_header(append_op)
    assert {"409", "422"} <= set(propose_op["responses"])


# --- races ------------------------------------------------------------------------------------


def test_concurrent_proposals_with_one_key_create_one_candidate(live_db, make_project,
                                                                client_for):
    target = make_project("race")
    before = entries_used(target.project)

    def work(index: int):
        response = propose(client_for(target.token), target.id, key="one-key-for-all")
        return response.status_code, response.json(), response.get("Idempotent-Replayed")

    results = run_in_threads(work, 20)

    assert not [r for r in results if isinstance(r, BaseException)], results
    assert all(
        status == 201 or (status == 409 and body["code"] == "idempotency_in_flight")
        for status, body, _ in results
    ), results
    created = {body["id"] for status, body, _ in results if status == 201}
    assert len(created) == 1
    assert [str(u) for u in MemoryCandidate.objects.values_list("uuid", flat=True)] == [
        created.pop()]
    assert [replayed for status, _, replayed in results if status == 201].count(None) == 1
    if connection.vendor == "sqlite":
        # SQLite serialises the writers: every later one waited and replayed.
        assert [status for status, _, _ in results] == [201] * 20
    assert entries_used(target.project) == before + cost(BODY["content"])


def advisory_locks_held() -> int:
    # This test database's only: pg_locks lists the whole server's.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        return cursor.fetchone()[0]


def hold_in_thread(lock_row, locked: threading.Event, release: threading.Event):
    """A thread holding lock_row()'s row lock until release is set."""

    def hold() -> None:
        try:
            with transaction.atomic():
                lock_row()
                locked.set()
                release.wait(30)
        finally:
            connections.close_all()

    return threading.Thread(target=hold)


def send_in_thread(send, into: dict):
    def run() -> None:
        try:
            into["response"] = send()
        finally:
            connections.close_all()

    return threading.Thread(target=run)


def wait_for_an_advisory_lock() -> None:
    deadline = time.monotonic() + 10
    while advisory_locks_held() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert advisory_locks_held() > 0


@postgres_only
def test_a_proposal_key_still_in_flight_is_refused_at_once(live_db, make_project, client_for):
    target = make_project("race")
    locked, release, first = threading.Event(), threading.Event(), {}
    # A proposal charges the entries quota after claiming its key: holding
    # that row keeps the first request in flight with its key claimed.
    holder = hold_in_thread(
        lambda: ProjectQuota.objects.select_for_update().get(project=target.project,
                                                             kind="entries"),
        locked, release)
    holder.start()
    assert locked.wait(10)
    sender = send_in_thread(lambda: propose(client_for(target.token), target.id), first)
    sender.start()
    wait_for_an_advisory_lock()

    second = propose(client_for(target.token), target.id)
    first_was_in_flight = "response" not in first
    release.set()
    holder.join(30)
    sender.join(30)

    assert first_was_in_flight
    assert second.status_code == 409
    assert second.json()["code"] == "idempotency_in_flight"
    assert first["response"].status_code == 201
    assert [str(u) for u in MemoryCandidate.objects.values_list("uuid", flat=True)] == [
        first["response"].json()["id"]]
    replay = propose(client_for(target.token), target.id)
    assert replay.status_code == 201
    assert replay["Idempotent-Replayed"] == "true"


@postgres_only
def test_an_entry_key_in_flight_does_not_block_a_proposal_with_the_same_key(live_db,
                                                                           make_project,
                                                                           client_for):
    target = make_project("race")
    locked, release, append = threading.Event(), threading.Event(), {}
    # An append claims its key, then waits here for the project lock, taken
    # as memory.locks takes it (NO KEY UPDATE lets a proposal's insert by).
    holder = hold_in_thread(
        lambda: Project.objects.select_for_update(no_key=True).get(pk=target.id),
        locked, release)
    holder.start()
    assert locked.wait(10)
    sender = send_in_thread(
        lambda: client_for(target.token).post(f"/v1/projects/{target.id}/memory", BODY,
                                              format="json", HTTP_IDEMPOTENCY_KEY=KEY),
        append)
    sender.start()
    wait_for_an_advisory_lock()

    proposal = propose(client_for(target.token), target.id)
    append_was_in_flight = "response" not in append
    release.set()
    holder.join(30)
    sender.join(30)

    assert append_was_in_flight
    assert proposal.status_code == 201
    assert "Idempotent-Replayed" not in proposal
    assert append["response"].status_code == 201
    assert (MemoryEntry.objects.count(), count()) == (1, 1)
