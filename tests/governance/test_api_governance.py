"""Governance over HTTP (contract §5; gedpi-behaviour.md §2, §7.3, §7.8, scenarios 9-24).

Every write names the revision it expects and adds exactly one revision; a
refusal adds none. Each test checks the answer and the stored rows.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from gedweb.lib import governance as gov
from governance import services
from governance.models import ActiveWork, EvidenceRecord, GovernanceRevision
from memory import quotas
from memory.models import ProjectQuota
from tests.governance.support import (
    CANONICAL_TIME,
    DIRECT,
    GOVERNANCE_KEYS,
    HEAD_A,
    HEX64,
    TREE,
    add_evidence,
    assert_error,
    commit_body,
    evidence,
    gov_url,
    milestone_evidence,
    open_work,
    revision_of,
    stored,
    transition,
    work_url,
)


def post(api, work, suffix: str, body: dict):
    return api.post(gov_url("alpha", work.work_id, suffix), body, format="json")


def append(api, work, record: dict, expected_revision: int | None = None, **extra):
    revision = revision_of(work) if expected_revision is None else expected_revision
    return post(api, work, "evidence", {"expected_revision": revision, "evidence": record,
                                        **extra})


def lifecycle(api, work, action: str, expected_lifecycle: str | None = None,
              reason: str = "step", expected_revision: int | None = None):
    state = services.governance_document(work)
    return post(api, work, "lifecycle", {
        "expected_revision": state["revision"] if expected_revision is None
        else expected_revision,
        "action": action, "reason": reason,
        "expected_lifecycle": expected_lifecycle or state["lifecycle"]})


def guard(api, work, action: str) -> dict:
    response = post(api, work, "guard", {"action": action})
    assert response.status_code == 200, response.content
    return response.json()


def document(work) -> dict:
    return services.governance_document(work)


def begin_mutation(api, work, **overrides):
    return post(api, work, "mutations", {"expected_revision": revision_of(work),
                                         "request_id": "req-1", "tool_call_id": "call-1",
                                         "target": "src/app.py", **overrides})


# --- reading ---------------------------------------------------------------------------------


def test_governance_is_gedpis_document_in_camel_case(api, direct_work):
    response = api.get(gov_url("alpha", direct_work.work_id))
    assert response.status_code == 200
    body = response.json()
    assert list(body) == GOVERNANCE_KEYS
    assert body["schemaVersion"] == 1
    assert body["workId"] == direct_work.work_id
    assert set(body["repository"]) == {"repositoryId", "worktreeId", "branch", "baseHead"}
    assert HEX64.match(body["repository"]["repositoryId"])
    assert list(body["decision"]) == ["mode", "reasonCode", "reason", "requiresDecision"]
    assert CANONICAL_TIME.match(body["createdAt"]) and CANONICAL_TIME.match(body["updatedAt"])
    gov.validate_state(body, direct_work.work_id)
    assert body == document(direct_work)


# --- evidence --------------------------------------------------------------------------------


def test_each_evidence_append_adds_exactly_one_revision(api, direct_work):
    for expected, kind in enumerate(["inspection", "implementation", "verification"]):
        response = append(api, direct_work, evidence(kind, "observed"), expected)
        assert response.status_code == 200, response.content
        assert response.json()["revision"] == expected + 1
        assert len(response.json()["evidence"]) == expected + 1
    assert list(GovernanceRevision.objects.filter(work=direct_work).order_by("revision")
                .values_list("revision", "evidence_count")) == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert list(EvidenceRecord.objects.filter(work=direct_work).order_by("position")
                .values_list("position", "revision")) == [(0, 1), (1, 2), (2, 3)]


def test_the_server_sets_recorded_at_and_generates_an_id(api, direct_work):
    before = timezone.now() - timedelta(seconds=1)
    record = append(api, direct_work, evidence("inspection", "observed")).json()["evidence"][0]
    assert list(record) == ["id", "kind", "source", "recordedAt", "summary", "outcome"]
    assert record["id"].startswith("evidence-")
    assert CANONICAL_TIME.match(record["recordedAt"])
    assert before <= timezone.datetime.fromisoformat(record["recordedAt"]) <= timezone.now()
    row = EvidenceRecord.objects.get(work=direct_work)
    assert (row.evidence_id, json.loads(row.record_json)) == (record["id"], record)


def test_a_caller_chosen_id_producer_and_binding_are_kept(api, direct_work):
    binding = {"type": "mutation-content", "beforeDigest": "1" * 64, "afterDigest": "2" * 64,
               "changedPaths": ["@HEAD", "src/app.py"]}
    response = append(api, direct_work, evidence("implementation", "observed", id="impl-1",
                                                  producerId="coordinator", binding=binding))
    record = response.json()["evidence"][0]
    assert list(record) == ["id", "kind", "source", "producerId", "recordedAt", "summary",
                            "outcome", "binding"]
    assert (record["id"], record["producerId"], record["binding"]) == ("impl-1", "coordinator",
                                                                       binding)
    assert EvidenceRecord.objects.get(work=direct_work).evidence_id == "impl-1"


@pytest.mark.parametrize("expected_revision", [0, 2, 99])
def test_a_stale_expected_revision_is_409_with_the_current_revision(api, direct_work,
                                                                    expected_revision):
    add_evidence(direct_work, "inspection", "observed")
    before = stored(direct_work)
    response = append(api, direct_work, evidence("inspection", "failed"), expected_revision)
    body = assert_error(response, 409, "stale_revision")
    assert body["current_revision"] == 1
    assert body["message"] == (f"Stale governance revision {expected_revision}; current "
                               "revision is 1.")
    assert stored(direct_work) == before


@pytest.mark.parametrize("body", [
    {"evidence": evidence("inspection", "observed")},
    {"expected_revision": "0", "evidence": evidence("inspection", "observed")},
    {"expected_revision": True, "evidence": evidence("inspection", "observed")},
    {"expected_revision": -1, "evidence": evidence("inspection", "observed")},
    {"expected_revision": 0},
    {"expected_revision": 0, "evidence": evidence("inspection", "observed"), "policy": "lenient"},
    {"expected_revision": 0, "evidence": evidence("inspection", "observed"), "extra": 1},
])
def test_a_malformed_evidence_request_is_400_and_stores_nothing(api, direct_work, body):
    before = stored(direct_work)
    assert_error(post(api, direct_work, "evidence", body), 400, "validation_error")
    assert stored(direct_work) == before


@pytest.mark.parametrize("record", [
    {**evidence("inspection", "observed"), "extra": 1},
    {**evidence("inspection", "observed"), "recordedAt": "2026-08-10T05:00:00.000Z"},
    evidence("guess", "observed"),
    evidence("inspection", "passed"),
    {**evidence("inspection", "observed"), "source": "robot"},
    {k: v for k, v in evidence("inspection", "observed").items() if k != "summary"},
    {**evidence("inspection", "observed"), "summary": 5},
])
def test_a_malformed_evidence_record_is_400_and_stores_nothing(api, direct_work, record):
    before = stored(direct_work)
    error = assert_error(append(api, direct_work, record), 400, "validation_error")
    assert any(name.startswith("evidence") for name in error["fields"])
    assert stored(direct_work) == before


@pytest.mark.parametrize("record", [
    evidence("implementation", "observed", binding={"type": "mutation-content",
                                                    "beforeDigest": "1" * 64,
                                                    "afterDigest": "1" * 64,
                                                    "changedPaths": []}),
    evidence("plan", "satisfied", binding={"type": "plan-content", "digest": "7" * 64,
                                           "paths": [], "extra": 1}),
    evidence("inspection", "observed", binding={"type": "unknown"}),
    evidence("milestone", "observed"),
    {**milestone_evidence(), "outcome": "satisfied"},
    evidence("inspection", "observed", producerId=" "),
    evidence("inspection", "observed", summary="   "),
])
def test_evidence_that_breaks_gedpis_rules_is_422_and_stores_nothing(api, direct_work, record):
    before = stored(direct_work)
    assert_error(append(api, direct_work, record), 422, "invalid_state")
    assert stored(direct_work) == before


def test_an_evidence_record_over_64_kib_is_400_naming_it_and_stores_nothing(api, direct_work):
    big = evidence("plan", "satisfied", binding={"type": "plan-content", "digest": "7" * 64,
                                                 "paths": ["p" * 100] * 700})
    before = stored(direct_work)
    error = assert_error(append(api, direct_work, big), 400, "validation_error")
    assert "64 KiB" not in error["message"] and "65,536 bytes" in str(error["fields"]["evidence"])
    assert stored(direct_work) == before
    # Just under the bound the same record reaches GedPi's rules as usual.
    small = evidence("inspection", "observed", summary="s" * 10_000)
    assert append(api, direct_work, small).status_code == 200


def test_an_evidence_record_of_exactly_64_kib_is_kept_and_one_byte_more_is_400(api,
                                                                              direct_work):
    def record(path_length: int) -> dict:
        return evidence("inspection", "observed", id="e-bound",
                        binding={"type": "plan-content", "digest": "7" * 64,
                                 "paths": ["p" * path_length]})

    def size(fields: dict) -> int:
        as_stored = {**fields, "recordedAt": "2026-08-10T05:00:00.000Z"}
        return len(json.dumps(as_stored, ensure_ascii=False, separators=(",", ":")).encode())

    exact = services.MAX_EVIDENCE_BYTES - size(record(0))
    before = stored(direct_work)
    error = assert_error(append(api, direct_work, record(exact + 1)), 400, "validation_error")
    assert "not 65,537" in str(error["fields"]["evidence"])
    assert stored(direct_work) == before
    response = append(api, direct_work, record(exact))
    assert response.status_code == 200, response.content
    kept = response.json()["evidence"][-1]
    assert size({k: v for k, v in kept.items() if k != "recordedAt"}) == (
        services.MAX_EVIDENCE_BYTES)
    assert EvidenceRecord.objects.filter(work=direct_work, evidence_id="e-bound").exists()


def test_a_non_json_evidence_body_is_415_and_stores_nothing(api, direct_work):
    before = stored(direct_work)
    response = api.post(gov_url("alpha", direct_work.work_id, "evidence"), "kind=inspection",
                        content_type="text/plain")
    assert_error(response, 415, "unsupported_media_type")
    assert stored(direct_work) == before


def test_a_duplicate_evidence_id_is_409_and_stores_nothing(api, direct_work):
    append(api, direct_work, evidence("inspection", "observed", id="e1"))
    before = stored(direct_work)
    response = append(api, direct_work, evidence("inspection", "failed", id="e1"))
    assert_error(response, 409, "duplicate_evidence")
    assert stored(direct_work) == before


def test_record_implementation_runs_the_source_mutation_guard(api, planned_work):
    before = stored(planned_work)
    response = append(api, planned_work, evidence("implementation", "observed"),
                      policy="record-implementation")
    body = assert_error(response, 409, "governance_blocked")
    assert "without satisfied plan evidence" in body["message"]
    assert stored(planned_work) == before


def test_record_implementation_is_accepted_for_direct_work(api, direct_work):
    response = append(api, direct_work, evidence("implementation", "observed"),
                      policy="record-implementation")
    assert response.status_code == 200
    assert EvidenceRecord.objects.filter(work=direct_work).count() == 1


def test_record_implementation_needs_implementation_observed(api, direct_work):
    response = append(api, direct_work, evidence("verification", "satisfied"),
                      policy="record-implementation")
    assert_error(response, 422, "invalid_state")
    assert not EvidenceRecord.objects.exists()


def test_record_satisfied_refuses_plan_evidence_for_direct_work(api, direct_work):
    """Scenario 23, first half."""
    response = append(api, direct_work, evidence("plan", "satisfied"), policy="record-satisfied")
    body = assert_error(response, 409, "governance_blocked")
    assert "only valid for planned-change" in body["message"]
    assert not EvidenceRecord.objects.exists()
    assert revision_of(direct_work) == 0


def test_record_satisfied_refuses_planned_verification_without_a_plan(api, planned_work):
    """Scenario 23, second half."""
    response = append(api, planned_work, evidence("verification", "satisfied"),
                      policy="record-satisfied")
    body = assert_error(response, 409, "governance_blocked")
    assert "requires satisfied plan evidence" in body["message"]
    assert not EvidenceRecord.objects.exists()


def test_record_satisfied_accepts_a_plan_then_a_verification(api, planned_work):
    assert append(api, planned_work, evidence("plan", "satisfied"),
                  policy="record-satisfied").status_code == 200
    assert append(api, planned_work, evidence("verification", "satisfied"),
                  policy="record-satisfied").status_code == 200
    assert [json.loads(r)["kind"] for r in EvidenceRecord.objects.filter(work=planned_work)
            .order_by("position").values_list("record_json", flat=True)] == ["plan",
                                                                             "verification"]


def test_plain_evidence_is_not_guarded(api, direct_work):
    transition(direct_work, "pause")
    response = append(api, direct_work, evidence("inspection", "observed"))
    assert response.status_code == 200
    assert EvidenceRecord.objects.filter(work=direct_work).count() == 1


# --- compare-and-swap update (scenario 10) ------------------------------------------------


def update(api, work, changes: dict, expected_revision: int):
    return post(api, work, "update", {"expected_revision": expected_revision,
                                      "changes": changes})


def test_a_current_cas_sets_the_slice_and_a_stale_one_is_refused(api, direct_work):
    response = update(api, direct_work, {"currentSlice": "T01"}, 0)
    assert response.status_code == 200
    assert (response.json()["revision"], response.json()["currentSlice"]) == (1, "T01")
    before = stored(direct_work)
    body = assert_error(update(api, direct_work, {"currentSlice": "T02"}, 0), 409,
                        "stale_revision")
    assert body["current_revision"] == 1
    assert stored(direct_work) == before
    assert document(direct_work)["currentSlice"] == "T01"


@pytest.mark.parametrize(("key", "value"), [
    ("workId", f"other-20260810050000000-{'0' * 32}"),
    ("repository", {"repositoryId": "9" * 64, "worktreeId": "9" * 64, "branch": None,
                    "baseHead": None}),
    ("lifecycle", "paused"),
    ("lifecycleTransitions", []),
    ("summary", "Rewritten"),
    ("createdAt", "2026-01-01T00:00:00.000Z"),
    ("schemaVersion", 2),
    ("revision", 5),
    ("evidence", []),
    ("pendingMutations", []),
])
def test_a_cas_that_changes_an_immutable_field_is_422_and_keeps_the_revision(api, direct_work,
                                                                             key, value):
    update(api, direct_work, {"currentSlice": "T01"}, 0)
    before = stored(direct_work)
    response = update(api, direct_work, {key: value}, 1)
    assert_error(response, 422, "invalid_state")
    assert stored(direct_work) == before
    assert revision_of(direct_work) == 1


def test_a_cas_can_change_the_decision_which_the_guard_then_follows(api, direct_work):
    read_only = gov.resolve_mode(mutation_intent=False, minimum_mode="direct-change",
                                 ambiguity="sufficient", risk="low", clear_scope=True,
                                 bounded=True, reversible=True, deterministic_check=True)
    response = update(api, direct_work, {"decision": read_only, "executionProfile": "assisted"},
                      0)
    assert response.status_code == 200
    assert document(direct_work)["decision"] == read_only
    assert guard(api, direct_work, "metadata-mutation") == {
        "allowed": False,
        "reason": f"Ged work {direct_work.work_id} is read-only and cannot authorize mutation."}


@pytest.mark.parametrize("body", [{"expected_revision": 0}, {"changes": {}},
                                  {"expected_revision": 0, "changes": []}])
def test_a_malformed_update_is_400(api, direct_work, body):
    before = stored(direct_work)
    assert_error(post(api, direct_work, "update", body), 400, "validation_error")
    assert stored(direct_work) == before


# --- pending mutations --------------------------------------------------------------------


def test_begin_mutation_records_a_durable_pending_mutation(api, direct_work):
    response = begin_mutation(api, direct_work, id="mutation-1")
    assert response.status_code == 200, response.content
    pending = response.json()["pendingMutations"]
    assert len(pending) == 1
    assert {k: pending[0][k] for k in ("id", "requestId", "toolCallId", "target")} == {
        "id": "mutation-1", "requestId": "req-1", "toolCallId": "call-1", "target": "src/app.py"}
    assert CANONICAL_TIME.match(pending[0]["startedAt"])
    assert document(direct_work)["pendingMutations"] == pending
    assert revision_of(direct_work) == 1


def test_begin_mutation_generates_an_id(api, direct_work):
    pending = begin_mutation(api, direct_work).json()["pendingMutations"][0]
    assert pending["id"].startswith("mutation-")


def test_complete_mutation_swaps_the_pending_entry_for_evidence_in_one_revision(api,
                                                                                direct_work):
    begin_mutation(api, direct_work, id="mutation-1")
    response = post(api, direct_work, "mutations/mutation-1/complete", {
        "expected_revision": 1, "evidence": evidence("implementation", "observed", id="impl")})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["revision"], body["pendingMutations"]) == (2, [])
    assert [e["id"] for e in body["evidence"]] == ["impl"]
    assert EvidenceRecord.objects.get(work=direct_work).revision == 2


def test_clear_mutation_removes_it_without_evidence(api, direct_work):
    begin_mutation(api, direct_work, id="mutation-1")
    response = post(api, direct_work, "mutations/mutation-1/clear", {"expected_revision": 1})
    assert response.status_code == 200
    assert (response.json()["revision"], response.json()["pendingMutations"]) == (2, [])
    assert not EvidenceRecord.objects.exists()


@pytest.mark.parametrize("overrides", [{"id": "mutation-1", "tool_call_id": "call-2"},
                                       {"id": "mutation-2"}])
def test_a_duplicate_pending_mutation_is_422(api, direct_work, overrides):
    begin_mutation(api, direct_work, id="mutation-1")
    before = stored(direct_work)
    assert_error(begin_mutation(api, direct_work, **overrides), 422, "invalid_state")
    assert stored(direct_work) == before


def test_begin_source_mutation_on_unplanned_work_is_governance_blocked(api, planned_work):
    body = assert_error(begin_mutation(api, planned_work), 409, "governance_blocked")
    assert "without satisfied plan evidence" in body["message"]
    assert revision_of(planned_work) == 0


def test_begin_metadata_mutation_on_unplanned_work_is_accepted(api, planned_work):
    response = begin_mutation(api, planned_work, action="metadata-mutation")
    assert response.status_code == 200
    assert len(document(planned_work)["pendingMutations"]) == 1


@pytest.mark.parametrize("record", [evidence("verification", "satisfied"),
                                    evidence("implementation", "failed")])
def test_complete_mutation_needs_implementation_observed(api, direct_work, record):
    begin_mutation(api, direct_work, id="mutation-1")
    before = stored(direct_work)
    response = post(api, direct_work, "mutations/mutation-1/complete",
                    {"expected_revision": 1, "evidence": record})
    assert_error(response, 422, "invalid_state")
    assert stored(direct_work) == before


@pytest.mark.parametrize("operation", ["complete", "clear"])
def test_an_unknown_pending_mutation_is_422(api, direct_work, operation):
    body = {"expected_revision": 0}
    if operation == "complete":
        body["evidence"] = evidence("implementation", "observed")
    before = stored(direct_work)
    assert_error(post(api, direct_work, f"mutations/nope/{operation}", body), 422,
                 "invalid_state")
    assert stored(direct_work) == before


def test_a_pending_mutation_blocks_commits_until_completed(api, direct_work):
    """Scenario 34 (service side)."""
    add_evidence(direct_work, "verification", "satisfied")
    begin_mutation(api, direct_work, id="mutation-1")
    assert "pending durable completion" in guard(api, direct_work, "commit")["reason"]
    assert_error(post(api, direct_work, "commits", commit_body(2)), 409, "governance_blocked")
    post(api, direct_work, "mutations/mutation-1/complete",
         {"expected_revision": 2, "evidence": evidence("implementation", "observed")})
    assert "no satisfied verification evidence newer" in guard(api, direct_work,
                                                                "commit")["reason"]


# --- pending commits ----------------------------------------------------------------------


@pytest.fixture
def verified_work(direct_work):
    add_evidence(direct_work, "verification", "satisfied")
    return direct_work


def test_begin_commit_records_the_one_pending_commit(api, verified_work):
    response = post(api, verified_work, "commits", commit_body(1, id="commit-1"))
    assert response.status_code == 200, response.content
    pending = response.json()["pendingCommits"]
    assert [p["id"] for p in pending] == ["commit-1"]
    assert pending[0]["expectedTree"] == TREE and pending[0]["beforeHead"] == HEAD_A
    assert list(pending[0]) == ["id", "requestId", "toolCallId", "beforeHead", "expectedTree",
                                "unstagedDigest", "untrackedDigest", "verifiedSnapshotDigest",
                                "startedAt"]
    assert document(verified_work)["pendingCommits"] == pending


def test_begin_commit_without_verification_is_governance_blocked(api, direct_work):
    body = assert_error(post(api, direct_work, "commits", commit_body(0)), 409,
                        "governance_blocked")
    assert "no satisfied verification evidence" in body["message"]
    assert revision_of(direct_work) == 0


def test_a_second_pending_commit_is_governance_blocked(api, verified_work):
    post(api, verified_work, "commits", commit_body(1, id="commit-1"))
    before = stored(verified_work)
    assert_error(post(api, verified_work, "commits", commit_body(2, id="commit-2",
                                                                 tool_call_id="call-2")),
                 409, "governance_blocked")
    assert stored(verified_work) == before


@pytest.mark.parametrize("overrides", [{"before_head": "xyz"}, {"expected_tree": "0" * 39},
                                       {"verified_snapshot_digest": "D" * 64}])
def test_a_malformed_pending_commit_is_422(api, verified_work, overrides):
    before = stored(verified_work)
    assert_error(post(api, verified_work, "commits", commit_body(1, **overrides)), 422,
                 "invalid_state")
    assert stored(verified_work) == before


@pytest.mark.parametrize("mismatch", [{"before_head": "e" * 40}, {"before_head": None},
                                      {"tree": "e" * 40}, {"digest": "e" * 64}])
def test_a_mismatched_milestone_is_refused_and_the_pending_commit_kept(api, verified_work,
                                                                        mismatch):
    """Scenario 24."""
    post(api, verified_work, "commits", commit_body(1, id="commit-1"))
    before = stored(verified_work)
    response = post(api, verified_work, "commits/commit-1/complete",
                    {"expected_revision": 2, "evidence": milestone_evidence(**mismatch)})
    body = assert_error(response, 422, "invalid_state")
    assert body["message"] == "Commit milestone does not match its durable pending commit."
    assert stored(verified_work) == before
    assert [p["id"] for p in document(verified_work)["pendingCommits"]] == ["commit-1"]


def test_a_matching_milestone_completes_the_pending_commit(api, verified_work):
    post(api, verified_work, "commits", commit_body(1, id="commit-1"))
    response = post(api, verified_work, "commits/commit-1/complete",
                    {"expected_revision": 2, "evidence": milestone_evidence()})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["revision"], body["pendingCommits"]) == (3, [])
    assert body["evidence"][-1]["kind"] == "milestone"
    assert body["lifecycle"] == "active" and body["lifecycleTransitions"] == []
    assert EvidenceRecord.objects.filter(work=verified_work).count() == 2


def test_clear_commit_removes_the_pending_commit(api, verified_work):
    post(api, verified_work, "commits", commit_body(1, id="commit-1"))
    response = post(api, verified_work, "commits/commit-1/clear", {"expected_revision": 2})
    assert response.status_code == 200
    assert document(verified_work)["pendingCommits"] == []
    assert EvidenceRecord.objects.filter(work=verified_work).count() == 1
    revisions = api.get(gov_url("alpha", verified_work.work_id, "revisions")).json()["items"]
    assert [item["operation"] for item in revisions[-2:]] == ["commit:begin", "commit:clear"]
    assert GovernanceRevision.objects.get(work=verified_work, revision=3).operation == (
        "commit:clear")


def test_a_pending_commit_blocks_every_guarded_action(api, verified_work):
    post(api, verified_work, "commits", commit_body(1, id="commit-1"))
    for action in gov.GUARD_ACTIONS:
        assert "unproven commit pending reconciliation" in guard(api, verified_work,
                                                                 action)["reason"]


# --- lifecycle (§7.8) ---------------------------------------------------------------------


def test_lifecycle_complete_pause_resume_revisions(api, planned_work):
    """Scenario 17."""
    body = assert_error(lifecycle(api, planned_work, "complete"), 409, "governance_blocked")
    assert "without satisfied plan evidence" in body["message"]
    assert revision_of(planned_work) == 0

    append(api, planned_work, evidence("plan", "satisfied"), policy="record-satisfied")
    assert_error(lifecycle(api, planned_work, "complete"), 409, "governance_blocked")
    append(api, planned_work, evidence("verification", "satisfied"), policy="record-satisfied")

    assert lifecycle(api, planned_work, "pause").json()["revision"] == 3
    assert lifecycle(api, planned_work, "resume").json()["revision"] == 4
    completed = lifecycle(api, planned_work, "complete").json()
    assert (completed["revision"], completed["lifecycle"]) == (5, "completed")
    transitions = document(planned_work)["lifecycleTransitions"]
    assert [(t["from"], t["to"]) for t in transitions] == [
        ("active", "paused"), ("paused", "active"), ("active", "completed")]
    assert all(t["id"].startswith("lifecycle-") for t in transitions)
    assert guard(api, planned_work, "source-mutation") == {
        "allowed": False,
        "reason": f"Ged work {planned_work.work_id} has lifecycle completed; only active work "
                  "can authorize mutation."}
    before = stored(planned_work)
    assert_error(lifecycle(api, planned_work, "resume"), 409, "governance_blocked")
    assert stored(planned_work) == before


@pytest.mark.parametrize(("action", "terminal"), [("abandon", "abandoned"),
                                                  ("supersede", "superseded")])
def test_abandoned_or_superseded_work_cannot_be_paused(api, direct_work, action, terminal):
    """Scenario 18."""
    response = lifecycle(api, direct_work, action)
    assert response.status_code == 200
    assert document(direct_work)["lifecycle"] == terminal
    before = stored(direct_work)
    body = assert_error(lifecycle(api, direct_work, "pause"), 409, "governance_blocked")
    assert body["message"] == f"Lifecycle action pause is invalid from {terminal}."
    assert stored(direct_work) == before


@pytest.mark.parametrize(("action", "terminal"), [("complete", "completed"),
                                                  ("abandon", "abandoned"),
                                                  ("supersede", "superseded")])
def test_paused_work_can_end_in_any_terminal_state(api, verified_work, action, terminal):
    """Scenario 19."""
    transition(verified_work, "pause")
    response = lifecycle(api, verified_work, action, reason="wrapping up")
    assert response.status_code == 200, response.content
    last = document(verified_work)["lifecycleTransitions"][-1]
    assert (last["from"], last["to"], last["reason"]) == ("paused", terminal, "wrapping up")
    assert revision_of(verified_work) == 3


@pytest.mark.parametrize("action", ["pause", "complete", "abandon", "supersede"])
def test_a_pending_mutation_blocks_every_lifecycle_transition(api, verified_work, action):
    """Scenario 21."""
    begin_mutation(api, verified_work, id="mutation-1")
    before = stored(verified_work)
    assert_error(lifecycle(api, verified_work, action), 409, "governance_blocked")
    assert stored(verified_work) == before
    assert document(verified_work)["lifecycle"] == "active"


@pytest.mark.parametrize("reason", ["", "   ", "\n\t ", "x" * 501, "word " * 120])
def test_a_blank_or_over_long_reason_is_refused(api, direct_work, reason):
    """Scenario 22."""
    before = stored(direct_work)
    assert_error(lifecycle(api, direct_work, "pause", reason=reason), 422, "invalid_state")
    assert stored(direct_work) == before


def test_a_reason_is_normalised_before_it_is_measured_and_stored(api, direct_work):
    response = lifecycle(api, direct_work, "pause", reason="  lunch" + " " * 600 + "break \n")
    assert response.status_code == 200
    assert document(direct_work)["lifecycleTransitions"][0]["reason"] == "lunch break"


def test_an_unexpected_lifecycle_is_governance_blocked(api, direct_work):
    transition(direct_work, "pause")
    before = stored(direct_work)
    body = assert_error(lifecycle(api, direct_work, "abandon", expected_lifecycle="active"), 409,
                        "governance_blocked")
    assert "lifecycle changed from expected active to paused" in body["message"]
    assert stored(direct_work) == before


def test_resume_requires_the_metadata_rules(api, direct_work):
    transition(direct_work, "pause")
    decision = gov.resolve_mode(minimum_mode="direct-change", ambiguity="decision-needed",
                                risk="low", clear_scope=True, bounded=True, reversible=True,
                                deterministic_check=True)
    services.governance_update(work=direct_work, expected_revision=1,
                               changes={"decision": decision}, author="seed")
    body = assert_error(lifecycle(api, direct_work, "resume"), 409, "governance_blocked")
    assert "user-owned decision" in body["message"]
    assert document(direct_work)["lifecycle"] == "paused"


@pytest.mark.parametrize("body", [
    {"expected_revision": 0, "action": "reopen", "reason": "x", "expected_lifecycle": "active"},
    {"expected_revision": 0, "action": "pause", "reason": "x", "expected_lifecycle": "done"},
    {"expected_revision": 0, "action": "pause", "reason": "x"},
    {"expected_revision": 0, "action": "pause", "expected_lifecycle": "active"},
])
def test_a_malformed_lifecycle_request_is_400(api, direct_work, body):
    before = stored(direct_work)
    assert_error(post(api, direct_work, "lifecycle", body), 400, "validation_error")
    assert stored(direct_work) == before


# --- the guard endpoint (§2.6) ------------------------------------------------------------


def test_the_guard_follows_gedpis_ordered_checks_as_evidence_is_recorded(api, planned_work):
    """Scenario 15 over HTTP: append order decides freshness."""
    work = f"Ged work {planned_work.work_id}"
    no_plan = f"{work} is planned-change work without satisfied plan evidence."
    stale = (f"{work} has no satisfied verification evidence newer than its latest "
             "implementation evidence.")
    allowed = {"allowed": True, "reason": None}

    assert guard(api, planned_work, "metadata-mutation") == allowed
    assert guard(api, planned_work, "source-mutation") == {"allowed": False, "reason": no_plan}
    assert guard(api, planned_work, "commit") == {"allowed": False, "reason": no_plan}

    add_evidence(planned_work, "plan", "satisfied")
    assert guard(api, planned_work, "source-mutation") == allowed
    assert guard(api, planned_work, "commit") == {"allowed": False, "reason": stale}

    add_evidence(planned_work, "verification", "satisfied")
    assert guard(api, planned_work, "commit") == allowed
    add_evidence(planned_work, "implementation", "observed")
    assert guard(api, planned_work, "commit") == {"allowed": False, "reason": stale}
    add_evidence(planned_work, "verification", "satisfied")
    assert guard(api, planned_work, "commit") == allowed
    add_evidence(planned_work, "verification", "failed")
    assert guard(api, planned_work, "commit") == {"allowed": False, "reason": stale}
    add_evidence(planned_work, "plan", "failed")
    assert guard(api, planned_work, "source-mutation") == {"allowed": False, "reason": no_plan}
    assert guard(api, planned_work, "metadata-mutation") == allowed


def test_asking_the_guard_adds_no_revision(api, planned_work):
    before = stored(planned_work)
    for action in gov.GUARD_ACTIONS:
        guard(api, planned_work, action)
    assert stored(planned_work) == before


def test_migration_required_failed_evidence_blocks_every_action(api, direct_work):
    add_evidence(direct_work, "migration-required", "failed")
    for action in gov.GUARD_ACTIONS:
        assert "requires legacy migration review" in guard(api, direct_work, action)["reason"]


def test_paused_work_blocks_even_metadata_mutation(api, direct_work):
    """Scenario 16."""
    transition(direct_work, "pause")
    assert guard(api, direct_work, "metadata-mutation") == {
        "allowed": False,
        "reason": f"Ged work {direct_work.work_id} has lifecycle paused; only active work can "
                  "authorize mutation."}


def test_changed_plan_bytes_block_source_mutation_until_accepted_again(api, planned_work):
    """Scenario 39: the plan binding follows the stored SPEC/TASKS/TESTS bytes."""
    def accept() -> None:
        fingerprint = services.plan_fingerprint(planned_work)
        add_evidence(planned_work, "plan", "satisfied", binding={
            "type": "plan-content", "digest": fingerprint["digest"],
            "paths": fingerprint["paths"]})

    accept()
    assert guard(api, planned_work, "source-mutation")["allowed"] is True
    api.put(work_url("alpha", planned_work.work_id, "files", "SPEC.md"),
            {"content": "# Spec\n\n## Problem\n\nChanged.\n"}, format="json")
    assert guard(api, planned_work, "source-mutation") == {
        "allowed": False,
        "reason": f"Ged work {planned_work.work_id} plan bytes changed after acceptance; "
                  "accept the current plan again."}
    assert guard(api, planned_work, "metadata-mutation")["allowed"] is True
    accept()
    assert guard(api, planned_work, "source-mutation")["allowed"] is True


@pytest.mark.parametrize("body", [{}, {"action": "deploy"}, {"action": "commit", "x": 1}])
def test_a_malformed_guard_request_is_400(api, direct_work, body):
    assert_error(post(api, direct_work, "guard", body), 400, "validation_error")


# --- revisions --------------------------------------------------------------------------------


def mixed_writes(api, work) -> list[dict]:
    """Twelve accepted writes of every kind; returns each write's answer."""
    answers = [api.get(gov_url("alpha", work.work_id)).json()]

    def ok(response) -> None:
        assert response.status_code == 200, response.content
        answers.append(response.json())

    ok(append(api, work, evidence("inspection", "observed", id="e1")))
    ok(update(api, work, {"currentSlice": "T01"}, 1))
    ok(begin_mutation(api, work, id="m1"))
    ok(post(api, work, "mutations/m1/complete",
            {"expected_revision": 3, "evidence": evidence("implementation", "observed", id="e2")}))
    ok(begin_mutation(api, work, id="m2", tool_call_id="call-2"))
    ok(post(api, work, "mutations/m2/clear", {"expected_revision": 5}))
    ok(append(api, work, evidence("verification", "satisfied", id="e3"),
              policy="record-satisfied"))
    ok(post(api, work, "commits", commit_body(7, id="c1")))
    ok(post(api, work, "commits/c1/complete",
            {"expected_revision": 8, "evidence": {**milestone_evidence(), "id": "e4"}}))
    ok(lifecycle(api, work, "pause"))
    ok(append(api, work, evidence("inspection", "observed", id="e5")))
    ok(lifecycle(api, work, "resume"))
    return answers


def test_every_revision_is_kept_oldest_first(api, direct_work):
    answers = mixed_writes(api, direct_work)
    response = api.get(gov_url("alpha", direct_work.work_id, "revisions"))
    assert response.status_code == 200
    items = response.json()["items"]
    assert [item["revision"] for item in items] == list(range(13))
    assert [item["operation"] for item in items] == [
        "initialize", "evidence:none", "update", "mutation:begin", "mutation:complete",
        "mutation:begin", "mutation:clear", "evidence:record-satisfied", "commit:begin",
        "commit:complete", "lifecycle:pause", "evidence:none", "lifecycle:resume"]
    assert [item["evidence_count"] for item in items] == [len(a["evidence"]) for a in answers]
    assert response.json()["next_cursor"] is None
    assert GovernanceRevision.objects.filter(work=direct_work).count() == 13


def test_revisions_are_paginated(api, direct_work):
    mixed_writes(api, direct_work)
    url = gov_url("alpha", direct_work.work_id, "revisions")
    seen, cursor = [], None
    while True:
        query = {"limit": 5} if cursor is None else {"limit": 5, "after": cursor}
        page = api.get(url, query).json()
        seen.extend(item["revision"] for item in page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(range(13))
    first = api.get(url, {"limit": 5}).json()
    assert first["next_cursor"] == 4


def test_each_revision_document_equals_what_its_write_returned(api, direct_work):
    answers = mixed_writes(api, direct_work)
    for number, answer in enumerate(answers):
        response = api.get(gov_url("alpha", direct_work.work_id, "revisions", str(number)))
        assert response.status_code == 200
        assert response.json() == answer
        assert list(response.json()) == list(answer)
        gov.validate_state(response.json(), direct_work.work_id)


def test_a_revision_is_read_from_its_own_work_item(api, direct_work, planned_work):
    """Both work items have a revision 0; each URL answers with its own."""
    for work in (planned_work, direct_work):
        response = api.get(gov_url("alpha", work.work_id, "revisions", "0"))
        assert response.status_code == 200
        assert response.json() == services.governance_document(work)
        assert response.json()["workId"] == work.work_id


def test_an_unknown_revision_is_404(api, direct_work):
    assert_error(api.get(gov_url("alpha", direct_work.work_id, "revisions", "1")), 404,
                 "not_found")


def test_evidence_can_only_be_appended(api, direct_work):
    """Every earlier revision's evidence is a prefix of every later one (gap G-2)."""
    mixed_writes(api, direct_work)
    documents = [api.get(gov_url("alpha", direct_work.work_id, "revisions", str(n))).json()
                 for n in range(13)]
    for earlier in range(13):
        for later in range(earlier, 13):
            older, newer = documents[earlier]["evidence"], documents[later]["evidence"]
            assert newer[: len(older)] == older
    assert [e["id"] for e in documents[-1]["evidence"]] == ["e1", "e2", "e3", "e4", "e5"]
    assert list(EvidenceRecord.objects.filter(work=direct_work).order_by("position")
                .values_list("evidence_id", flat=True)) == ["e1", "e2", "e3", "e4", "e5"]


# --- active work (§7.3) -----------------------------------------------------------------------


def active_url(session: str, project_id: str = "alpha") -> str:
    return f"/v1/projects/{project_id}/sessions/{session}/active-work"


def select(api, session: str, work, operation: str = "open", request_id: str = "req-1"):
    return api.put(active_url(session), {"work_id": work.work_id, "operation": operation,
                                         "request_id": request_id}, format="json")


def test_a_session_selects_work_and_reads_it_back(api, direct_work):
    response = select(api, "session-a", direct_work)
    assert response.status_code == 200, response.content
    pointer = response.json()
    assert {k: v for k, v in pointer.items() if k != "selectedAt"} == {
        "schemaVersion": 1, "sessionId": "session-a", "workId": direct_work.work_id,
        "operation": "open", "requestId": "req-1"}
    assert CANONICAL_TIME.match(pointer["selectedAt"])
    assert api.get(active_url("session-a")).json() == pointer
    row = ActiveWork.objects.get()
    assert (row.session_id, row.work_id, row.operation) == ("session-a", direct_work.pk, "open")
    assert row.session_key == services.session_key("session-a")


def test_two_sessions_keep_independent_pointers(api, alpha, direct_work, planned_work):
    select(api, "session-a", direct_work)
    select(api, "session-b", planned_work, request_id="req-2")
    assert api.get(active_url("session-a")).json()["workId"] == direct_work.work_id
    assert api.get(active_url("session-b")).json()["workId"] == planned_work.work_id
    assert ActiveWork.objects.count() == 2


def test_continue_moves_the_pointer_to_active_work(api, direct_work, planned_work):
    select(api, "session-a", direct_work)
    response = select(api, "session-a", planned_work, "continue", "req-2")
    assert response.status_code == 200
    assert (response.json()["workId"], response.json()["operation"],
            response.json()["requestId"]) == (planned_work.work_id, "continue", "req-2")
    assert ActiveWork.objects.get().work_id == planned_work.pk


def test_continuing_paused_work_is_blocked_and_keeps_the_pointer(api, direct_work,
                                                                 planned_work):
    select(api, "session-a", direct_work)
    before = api.get(active_url("session-a")).json()
    transition(planned_work, "pause")
    response = select(api, "session-a", planned_work, "continue", "req-2")
    assert_error(response, 409, "governance_blocked")
    assert api.get(active_url("session-a")).json() == before
    assert ActiveWork.objects.get().work_id == direct_work.pk


def test_selecting_unknown_work_is_400_and_keeps_the_pointer(api, client_for, beta,
                                                             direct_work):
    select(api, "session-a", direct_work)
    foreign = open_work(beta.project)
    for work_id in (f"fix-20260810050000000-{'0' * 32}", foreign.work_id):
        response = api.put(active_url("session-a"), {"work_id": work_id, "operation": "continue",
                                                     "request_id": "req-2"}, format="json")
        error = assert_error(response, 400, "validation_error")
        assert "work_id" in error["fields"]
    assert ActiveWork.objects.get().work_id == direct_work.pk


@pytest.mark.parametrize("body", [
    {"operation": "open", "request_id": "r"},
    {"work_id": "x", "operation": "bootstrap", "request_id": "r"},
    {"work_id": "x", "operation": "open"},
    {"work_id": "x", "operation": "open", "request_id": "r", "extra": 1},
])
def test_a_malformed_selection_is_400(api, direct_work, body):
    assert_error(api.put(active_url("session-a"), body, format="json"), 400, "validation_error")
    assert not ActiveWork.objects.exists()


def test_deleting_the_pointer_forgets_the_selection(api, direct_work):
    select(api, "session-a", direct_work)
    assert api.delete(active_url("session-a")).status_code == 204
    assert not ActiveWork.objects.exists()
    assert_error(api.get(active_url("session-a")), 404, "not_found")
    assert_error(api.delete(active_url("session-a")), 404, "not_found")


def test_deleting_a_pointer_keeps_other_sessions_and_other_projects(api, client_for, beta,
                                                                   direct_work, planned_work):
    select(api, "session-a", direct_work)
    select(api, "session-b", planned_work, request_id="req-2")
    other = client_for(beta.token)
    foreign = open_work(beta.project)
    assert other.put(active_url("session-a", "beta"),
                     {"work_id": foreign.work_id, "operation": "open", "request_id": "req-3"},
                     format="json").status_code == 200
    assert api.delete(active_url("session-a")).status_code == 204
    assert_error(api.get(active_url("session-a")), 404, "not_found")
    assert api.get(active_url("session-b")).json()["workId"] == planned_work.work_id
    assert other.get(active_url("session-a", "beta")).json()["workId"] == (
        foreign.work_id)
    assert sorted(ActiveWork.objects.values_list("session_id", "work_id")) == sorted(
        [("session-b", planned_work.pk), ("session-a", foreign.pk)])


def test_a_pointer_is_keyed_by_the_32_hex_prefix_of_the_session_ids_sha256(api, direct_work):
    session = "session-a"
    assert select(api, session, direct_work).status_code == 200
    row = ActiveWork.objects.get()
    assert row.session_key == hashlib.sha256(session.encode("utf-8")).hexdigest()[:32]
    assert len(row.session_key) == 32
    assert api.get(active_url(session)).json()["sessionId"] == session


def test_a_session_without_a_pointer_is_404(api, direct_work):
    assert_error(api.get(active_url("never-used")), 404, "not_found")


def test_a_session_id_over_256_characters_is_404(api, direct_work):
    assert_error(select(api, "s" * 257, direct_work), 404, "not_found")
    assert not ActiveWork.objects.exists()
    assert select(api, "s" * 256, direct_work).status_code == 200


def test_another_projects_token_cannot_read_or_change_a_pointer(api, client_for, beta,
                                                               direct_work):
    select(api, "session-a", direct_work)
    intruder = client_for(beta.token)
    assert_error(intruder.get(active_url("session-a")), 404, "not_found")
    assert_error(intruder.delete(active_url("session-a")), 404, "not_found")
    assert ActiveWork.objects.count() == 1
    assert_error(client_for(beta.token).get(active_url("session-a", "beta")), 404, "not_found")


# --- what is stored ---------------------------------------------------------------------------


def work_files_used(project) -> int:
    quota = ProjectQuota.objects.filter(project=project, kind="work_files").first()
    return 0 if quota is None else quota.used_bytes


def test_non_ascii_governance_is_stored_and_charged_as_written(api, alpha):
    work = open_work(alpha.project, DIRECT, summary="Fix the Grüße button")
    before = work_files_used(alpha.project)
    response = append(api, work, evidence("inspection", "observed", id="e1",
                                          summary="Prüfung bestanden ✓"))
    assert response.status_code == 200, response.content
    record = response.json()["evidence"][-1]
    assert record["summary"] == "Prüfung bestanden ✓"
    row = EvidenceRecord.objects.get(work=work, evidence_id="e1")
    assert row.record_json == json.dumps(record, ensure_ascii=False)
    assert work_files_used(alpha.project) - before == (
        len(row.record_json.encode("utf-8")) + quotas.ROW_OVERHEAD_BYTES)
    for revision in GovernanceRevision.objects.filter(work=work):
        assert "Grüße" in revision.document_json
        assert json.loads(revision.document_json)["summary"] == "Fix the Grüße button"


def test_work_times_are_kept_to_the_millisecond(api, alpha, monkeypatch):
    moment = datetime(2026, 8, 10, 5, 0, 0, 600_400, tzinfo=UTC)
    monkeypatch.setattr(timezone, "now", lambda: moment)
    work = open_work(alpha.project, DIRECT)
    assert select(api, "session-a", work).status_code == 200
    kept = moment.replace(microsecond=600_000)
    work.refresh_from_db()
    assert work.created_at == kept
    state = services.governance_document(work)
    assert (state["createdAt"], state["updatedAt"]) == ("2026-08-10T05:00:00.600Z",) * 2
    assert ActiveWork.objects.get().selected_at == kept
