"""Races through the HTTP layer on PostgreSQL (catalogue T11, T12, T15, T16, T18).

Every writer is a real thread with its own Django test client and its own
database connection, released together by a barrier (run_in_threads), against
committed data (transaction=True via live_db). Requests go through the full
stack users hit (authentication, parsing, views, services, the exception
handler), so a lock or constraint that leaked out as a 500 fails the test.
Outcomes are then checked with SQL: COUNT, COUNT(DISTINCT ...) and max-min+1.

SQLite serialises writers (BEGIN IMMEDIATE), and select_for_update is a no-op
there, so these tests would pass without proving anything: they are skipped
on SQLite with a reason (T16). tests/memory/test_races.py and
tests/governance/test_races.py keep the service-level races that run on both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection

from gedweb.lib.governance import LIFECYCLE_ACTIONS
from governance.models import StandardsImport
from memory.models import MemoryCandidate
from memory.services import idempotency_key_digest
from tests.django_fixtures import ADMIN_TOKEN, bearer_client, postgres_only, run_in_threads
from tests.governance.support import DIRECT, evidence, gov_url, work_url

pytestmark = [postgres_only, pytest.mark.usefixtures("live_db")]

MAX_RETRIES = 400


@dataclass
class Reply:
    status: int
    body: Any
    replayed: bool


def call(token: str, method: str, url: str, body: Any = None, **headers: str) -> Reply:
    """One request on a fresh client, as one agent process would send it."""
    client = bearer_client(token)
    response = getattr(client, method)(url, body, format="json", **headers)
    payload = response.json() if response.content else None
    return Reply(response.status_code, payload, response.get("Idempotent-Replayed") == "true")


def no_failures(results: list[Any]) -> list[Reply]:
    """Neither an exception (the test client re-raises a view's 500) nor a 5xx."""
    crashed = [r for r in results if isinstance(r, BaseException)]
    assert crashed == [], crashed
    replies = [r for group in results for r in (group if isinstance(group, list) else [group])]
    assert [r for r in replies if r.status >= 500] == []
    return replies


def sql_one(query: str, params: list[Any]) -> tuple[Any, ...]:
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        return cursor.fetchone()


def seq_stats(project_id: str) -> tuple[int, int, int, int]:
    """(COUNT, COUNT DISTINCT seq, MIN seq, MAX seq) of a project's entries."""
    return sql_one(
        "SELECT COUNT(*), COUNT(DISTINCT seq), COALESCE(MIN(seq), 0), COALESCE(MAX(seq), 0)"
        " FROM memory_memoryentry WHERE project_id = %s",
        [project_id],
    )


def revision_stats(work_id: str) -> tuple[int, int, int, int]:
    return sql_one(
        "SELECT COUNT(*), COUNT(DISTINCT r.revision), MIN(r.revision), MAX(r.revision)"
        " FROM governance_governancerevision r JOIN governance_workitem w ON w.id = r.work_id"
        " WHERE w.work_id = %s",
        [work_id],
    )


def stored_entries(project_id: str) -> dict[str, tuple[int, str]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT uuid, seq, hash FROM memory_memoryentry WHERE project_id = %s", [project_id]
        )
        return {str(uuid): (seq, digest) for uuid, seq, digest in cursor.fetchall()}


def assert_chain_verifies(token: str, project_id: str, entries: int) -> None:
    report = call(token, "get", f"/v1/projects/{project_id}/memory/verify")
    assert report.status == 200
    assert (report.body["ok"], report.body["entries"], report.body["first_bad_seq"]) == (
        True, entries, None)


def memory_url(project_id: str) -> str:
    return f"/v1/projects/{project_id}/memory"


# --- appends -------------------------------------------------------------------------------


def appender(token: str, project_id: str, count: int) -> Callable[[int], list[Reply]]:
    def work(index: int) -> list[Reply]:
        return [
            call(token, "post", memory_url(project_id),
                 {"category": "race", "content": f"writer {index} append {n}"})
            for n in range(count)
        ]
    return work


def assert_gap_free(project_id: str, token: str, replies: list[Reply]) -> None:
    total = len(replies)
    assert Counter(r.status for r in replies) == {201: total}
    count, distinct, low, high = seq_stats(project_id)
    assert (count, distinct, low, high - low + 1) == (total, total, 1, total)
    acknowledged = {r.body["id"]: (r.body["seq"], r.body["hash"]) for r in replies}
    assert len(acknowledged) == total  # no response was handed out twice
    assert stored_entries(project_id) == acknowledged  # each acknowledged entry, exactly once
    assert_chain_verifies(token, project_id, total)


def test_concurrent_http_appends_to_one_project_take_every_seq_once(make_project):
    target = make_project("race-one")
    writers, appends = 8, 10
    replies = no_failures(run_in_threads(appender(target.token, target.id, appends), writers))
    assert_gap_free(target.id, target.token, replies)


def test_concurrent_http_appends_to_two_projects_keep_independent_gap_free_seqs(make_project):
    """T15: each project's sequence is its own; one project's lock never numbers the other."""
    first, second = make_project("race-a"), make_project("race-b")
    targets = [first, second]
    writers, appends = 8, 6

    def work(index: int) -> list[Reply]:
        target = targets[index % 2]
        return appender(target.token, target.id, appends)(index)

    results = run_in_threads(work, writers)
    no_failures(results)
    for parity, target in enumerate(targets):
        mine = [r for i, group in enumerate(results) if i % 2 == parity for r in group]
        assert {r.body["project_id"] for r in mine} == {target.id}
        assert_gap_free(target.id, target.token, mine)


# --- idempotency (T18, T19) ----------------------------------------------------------------


def test_twenty_concurrent_duplicates_with_one_key_store_exactly_one_entry(make_project):
    target = make_project("race-key")
    body = {"category": "decision", "content": "exactly once", "source": "agent"}

    def work(index: int) -> Reply:
        return call(target.token, "post", memory_url(target.id), body,
                    HTTP_IDEMPOTENCY_KEY="one-key")

    replies = no_failures(run_in_threads(work, 20))
    for reply in replies:
        assert reply.status in (201, 409), reply
        if reply.status == 409:
            assert reply.body["code"] == "idempotency_in_flight"
    created = [r for r in replies if r.status == 201]
    assert created, "at least the first request is acknowledged"
    assert len([r for r in created if not r.replayed]) == 1
    assert {r.body["id"] for r in created} == set(stored_entries(target.id))
    assert len({(r.body["id"], r.body["seq"], r.body["hash"]) for r in created}) == 1
    assert seq_stats(target.id) == (1, 1, 1, 1)
    assert sql_one("SELECT COUNT(*) FROM memory_memoryentry WHERE idempotency_key = %s",
                   [idempotency_key_digest("one-key")]) == (1,)
    assert_chain_verifies(target.token, target.id, 1)


def test_one_key_with_different_bodies_at_once_lets_exactly_one_body_win(make_project):
    target = make_project("race-reuse")

    def work(index: int) -> Reply:
        return call(target.token, "post", memory_url(target.id),
                    {"category": "decision", "content": f"body {index}"},
                    HTTP_IDEMPOTENCY_KEY="contested")

    replies = no_failures(run_in_threads(work, 12))
    winners = [r for r in replies if r.status == 201]
    assert len(winners) == 1 and not winners[0].replayed
    for reply in replies:
        if reply.status != 201:
            assert (reply.status, reply.body["code"]) in (
                (422, "idempotency_key_reused"), (409, "idempotency_in_flight")), reply
    assert seq_stats(target.id) == (1, 1, 1, 1)
    assert sql_one("SELECT content FROM memory_memoryentry WHERE project_id = %s",
                   [target.id]) == (winners[0].body["content"],)


def test_keyed_and_unkeyed_appends_mixed_keep_one_row_per_key(make_project):
    """Six keys sent four times each, interleaved with plain appends."""
    target = make_project("race-mixed")

    def work(index: int) -> list[Reply]:
        replies = []
        for n in range(3):
            key = f"k-{(index + n) % 6}"
            replies.append(call(target.token, "post", memory_url(target.id),
                                {"category": "c", "content": key}, HTTP_IDEMPOTENCY_KEY=key))
            replies.append(call(target.token, "post", memory_url(target.id),
                                {"category": "c", "content": f"plain {index}-{n}"}))
        return replies

    replies = no_failures(run_in_threads(work, 8))
    assert all(r.status in (201, 409) for r in replies), Counter(r.status for r in replies)
    count, distinct, low, high = seq_stats(target.id)
    plain = 8 * 3
    assert (count, distinct, low, high) == (plain + 6, plain + 6, 1, plain + 6)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT idempotency_key, COUNT(*) FROM memory_memoryentry"
            " WHERE project_id = %s AND idempotency_key IS NOT NULL GROUP BY idempotency_key",
            [target.id])
        assert dict(cursor.fetchall()) == {idempotency_key_digest(f"k-{i}"): 1 for i in range(6)}
    assert_chain_verifies(target.token, target.id, plain + 6)


# --- candidate approvals -----------------------------------------------------------------


def new_candidate(target: Any) -> str:
    # Proposed by the admin token, so the project token may decide it: no principal
    # decides its own proposal (memory.services.candidate_refusal).
    created = call(ADMIN_TOKEN, "post", f"{memory_url(target.id)}/candidates",
                   {"category": "review", "content": "approve me once"})
    assert created.status == 201, created
    return created.body["id"]


def candidate_url(target: Any, candidate_id: str, action: str) -> str:
    return f"{memory_url(target.id)}/candidates/{candidate_id}/{action}"


def test_concurrent_approvals_of_one_candidate_create_exactly_one_entry(make_project):
    target = make_project("race-approve")
    candidate_id = new_candidate(target)

    def work(index: int) -> Reply:
        return call(target.token, "post", candidate_url(target, candidate_id, "approve"))

    replies = no_failures(run_in_threads(work, 12))
    assert Counter(r.status for r in replies) == {200: 1, 409: 11}
    assert {r.body["code"] for r in replies if r.status == 409} == {"conflict"}
    winner = next(r for r in replies if r.status == 200)
    assert stored_entries(target.id) == {winner.body["id"]: (1, winner.body["hash"])}
    candidate = MemoryCandidate.objects.get(uuid=candidate_id)
    assert candidate.status == MemoryCandidate.Status.APPROVED
    assert str(candidate.entry.uuid) == winner.body["id"]
    assert_chain_verifies(target.token, target.id, 1)


def test_approve_and_reject_racing_leave_exactly_one_outcome(make_project):
    target = make_project("race-decide")
    candidate_id = new_candidate(target)
    actions = ["approve", "reject"] * 6

    def work(index: int) -> Reply:
        return call(target.token, "post", candidate_url(target, candidate_id, actions[index]))

    replies = no_failures(run_in_threads(work, len(actions)))
    assert Counter(r.status for r in replies) == {200: 1, 409: len(actions) - 1}
    won = actions[next(i for i, r in enumerate(replies) if r.status == 200)]
    candidate = MemoryCandidate.objects.get(uuid=candidate_id)
    entries = seq_stats(target.id)[0]
    if won == "approve":
        assert (candidate.status, entries) == (MemoryCandidate.Status.APPROVED, 1)
        assert candidate.entry is not None
    else:
        assert (candidate.status, entries) == (MemoryCandidate.Status.REJECTED, 0)
        assert candidate.entry is None
    assert candidate.resolved_at is not None


# --- governance revisions (T11, T12, T15) --------------------------------------------------


def open_work_http(target: Any) -> str:
    opened = call(target.token, "post", work_url(target.id), DIRECT)
    assert opened.status == 201, opened
    return opened.body["work_id"]


def current_revision(target: Any, work_id: str) -> dict[str, Any]:
    reply = call(target.token, "get", gov_url(target.id, work_id))
    assert reply.status == 200, reply
    return reply.body


def storm_writer(target: Any, work_id: str, appends: int) -> Callable[[int], list[int]]:
    """Append evidence, re-reading and retrying on stale_revision, as an agent would."""
    def work(index: int) -> list[int]:
        taken: list[int] = []
        for n in range(appends):
            for _ in range(MAX_RETRIES):
                revision = current_revision(target, work_id)["revision"]
                reply = call(target.token, "post", gov_url(target.id, work_id, "evidence"), {
                    "expected_revision": revision,
                    "evidence": evidence("inspection", "observed", id=f"w{index}-{n}")})
                if reply.status == 409 and reply.body["code"] == "stale_revision":
                    continue
                assert reply.status == 200, (reply.status, reply.body)
                taken.append(reply.body["revision"])
                break
        return taken
    return work


def test_a_storm_of_retrying_http_writers_takes_revisions_one_to_n_contiguously(make_project):
    """T12: every accepted write is one revision; no IntegrityError surfaces as a 500."""
    target = make_project("race-storm")
    work_id = open_work_http(target)
    writers, appends = 8, 6
    results = run_in_threads(storm_writer(target, work_id, appends), writers)
    assert [r for r in results if isinstance(r, BaseException)] == []
    total = writers * appends
    assert all(len(taken) == appends for taken in results)
    assert all(taken == sorted(taken) for taken in results)  # each writer's view only grows
    assert sorted(rev for taken in results for rev in taken) == list(range(1, total + 1))
    assert revision_stats(work_id) == (total + 1, total + 1, 0, total)
    assert sql_one(
        "SELECT COUNT(*), COUNT(DISTINCT e.position), MIN(e.position), MAX(e.position)"
        " FROM governance_evidencerecord e JOIN governance_workitem w ON w.id = e.work_id"
        " WHERE w.work_id = %s", [work_id]) == (total, total, 0, total - 1)
    document = current_revision(target, work_id)
    assert document["revision"] == total
    assert sorted(e["id"] for e in document["evidence"]) == sorted(
        f"w{i}-{n}" for i in range(writers) for n in range(appends))


def test_revision_storms_on_two_projects_do_not_share_numbers(make_project):
    """T15: concurrent writers on A and B; each work item counts its own revisions."""
    targets = [make_project("storm-a"), make_project("storm-b")]
    work_ids = [open_work_http(target) for target in targets]
    writers, appends = 6, 4

    def work(index: int) -> list[int]:
        side = index % 2
        return storm_writer(targets[side], work_ids[side], appends)(index)

    results = run_in_threads(work, writers)
    assert [r for r in results if isinstance(r, BaseException)] == []
    per_side = writers // 2 * appends
    for side, work_id in enumerate(work_ids):
        taken = sorted(rev for i, revs in enumerate(results) if i % 2 == side for rev in revs)
        assert taken == list(range(1, per_side + 1))
        assert revision_stats(work_id) == (per_side + 1, per_side + 1, 0, per_side)


# --- lifecycle transitions -----------------------------------------------------------------


def test_concurrent_lifecycle_actions_record_only_allowed_transitions(make_project):
    """pause/resume/complete/abandon from many threads on one work item.

    Each thread reads the current state and sends its action with the
    revision and lifecycle it saw. Whatever interleaving happens, the stored
    history is a chain of allowed transitions from "active", the final
    lifecycle is the last transition's target, nothing follows a terminal
    state, and each accepted request is exactly one revision.
    """
    target = make_project("race-life")
    work_id = open_work_http(target)
    rounds = 8

    def action_for(index: int, n: int) -> str:
        # Pause and resume contend first; the last round races the closing
        # actions against them.
        if n < rounds - 1:
            return ("pause", "resume")[(index + n) % 2]
        return ("complete", "abandon", "pause", "resume")[index % 4]

    def work(index: int) -> list[Reply]:
        replies = []
        for n in range(rounds):
            action = action_for(index, n)
            state = current_revision(target, work_id)
            replies.append(call(target.token, "post", gov_url(target.id, work_id, "lifecycle"), {
                "expected_revision": state["revision"], "expected_lifecycle": state["lifecycle"],
                "action": action, "reason": f"thread {index} round {n}"}))
        return replies

    replies = no_failures(run_in_threads(work, 8))
    for reply in replies:
        assert reply.status in (200, 409), reply
        if reply.status == 409:
            assert reply.body["code"] in ("stale_revision", "governance_blocked"), reply.body
    accepted = [r for r in replies if r.status == 200]
    assert accepted, "at least one transition is accepted"
    document = current_revision(target, work_id)
    transitions = document["lifecycleTransitions"]
    assert len(transitions) == len(accepted) == document["revision"]
    state = "active"
    for step in transitions:
        assert step["from"] == state, transitions
        allowed_targets = {to for to, froms in LIFECYCLE_ACTIONS.values() if state in froms}
        assert step["to"] in allowed_targets, step
        state = step["to"]
    assert document["lifecycle"] == state
    closing = [i for i, step in enumerate(transitions)
               if step["to"] not in ("active", "paused")]
    assert closing in ([], [len(transitions) - 1])  # a closed item never moves again
    assert len(accepted) > 2, "pause and resume should interleave several times"
    assert sorted(r.body["revision"] for r in accepted) == list(range(1, len(accepted) + 1))
    count = len(accepted) + 1
    assert revision_stats(work_id) == (count, count, 0, count - 1)


# --- standards decisions -------------------------------------------------------------------


def standards_url(project_id: str, *parts: str) -> str:
    return "/".join([f"/v1/projects/{project_id}/standards/imports", *parts])


def test_concurrent_submissions_of_the_same_standards_bytes_record_one_import(make_project):
    target = make_project("race-std")
    body = {"path": "AGENTS.md", "content": "# Rules\n\nRun the tests before committing.\n"}

    def work(index: int) -> Reply:
        return call(target.token, "post", standards_url(target.id), body)

    replies = no_failures(run_in_threads(work, 10))
    assert Counter(r.status for r in replies) == {201: 1, 200: 9}
    assert len({r.body["id"] for r in replies}) == 1
    assert sql_one("SELECT COUNT(*) FROM governance_standardsimport WHERE project_id = %s",
                   [target.id]) == (1,)


def test_racing_accepts_and_rejects_of_one_import_record_exactly_one_decision(make_project):
    target = make_project("race-decision")
    submitted = call(target.token, "post", standards_url(target.id),
                     {"path": "AGENTS.md", "content": "# Rules\n\nKeep commits small.\n"})
    assert submitted.status == 201, submitted
    import_id, sha256 = submitted.body["id"], submitted.body["sha256"]
    actions = ["accept", "reject"] * 5

    def work(index: int) -> Reply:
        return call(ADMIN_TOKEN, "post", standards_url(target.id, str(import_id), actions[index]),
                    {"sha256": sha256})

    replies = no_failures(run_in_threads(work, len(actions)))
    assert Counter(r.status for r in replies) == {200: 1, 409: len(actions) - 1}
    assert {r.body["code"] for r in replies if r.status == 409} == {"conflict"}
    won = actions[next(i for i, r in enumerate(replies) if r.status == 200)]
    assert sql_one(
        "SELECT COUNT(*), MIN(status) FROM governance_standardsdecision"
        " WHERE standards_import_id = %s",
        [StandardsImport.objects.get(public_id=import_id).pk]) == (
            1, "accepted" if won == "accept" else "rejected")


def test_concurrent_active_work_selections_for_one_session_keep_one_pointer(make_project):
    target = make_project("race-session")
    work_ids = [open_work_http(target) for _ in range(2)]
    url = f"/v1/projects/{target.id}/sessions/session-1/active-work"

    def work(index: int) -> Reply:
        return call(target.token, "put", url, {
            "work_id": work_ids[index % 2], "operation": "open", "request_id": f"req-{index}"})

    replies = no_failures(run_in_threads(work, 10))
    assert Counter(r.status for r in replies) == {200: 10}
    rows = sql_one("SELECT COUNT(*) FROM governance_activework WHERE project_id = %s",
                   [target.id])
    assert rows == (1,)
    final = call(target.token, "get", url)
    assert final.status == 200 and final.body["workId"] in work_ids


# --- projects ------------------------------------------------------------------------------


def test_concurrent_creates_of_one_project_id_let_exactly_one_in():
    def work(index: int) -> Reply:
        return call(ADMIN_TOKEN, "post", "/v1/projects", {"id": "race-new", "name": f"n{index}"})

    replies = no_failures(run_in_threads(work, 10))
    assert Counter(r.status for r in replies) == {201: 1, 409: 9}
    assert {r.body["code"] for r in replies if r.status == 409} == {"conflict"}
    assert sql_one("SELECT COUNT(*) FROM memory_project WHERE id = %s", ["race-new"]) == (1,)
    assert sql_one("SELECT COUNT(*) FROM memory_projecttoken WHERE project_id = %s",
                   ["race-new"]) == (1,)
