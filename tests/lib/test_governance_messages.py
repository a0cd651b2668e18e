"""GedPi's governance operations refuse with exact codes and messages.

The messages are part of the contract (agents and humans read them), so each
test pins code and whole message.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from gedweb.lib import governance as gov
from tests.lib.test_governance import (
    ENTROPY,
    PLANNED_INPUT,
    T0,
    WORK_ID,
    make_state,
    milestone,
    pending_commit,
    pending_mutation,
    record,
    snapshot,
    transition,
    verified,
)

WORK = f"Ged work {WORK_ID}"


def refused(code: str, message: str):
    return pytest.raises(
        gov.GovernanceError,
        check=lambda exc: (exc.code, exc.message, str(exc)) == (code, message, message),
    )


def invalid(message: str):
    return refused(gov.INVALID_STATE, message)


def blocked(message: str):
    return refused(gov.GOVERNANCE_BLOCKED, message)


def duplicate(record_id: str):
    return refused(gov.DUPLICATE_EVIDENCE, f"Evidence {record_id} already exists.")


def _without(state: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in state.items() if key not in keys}


# --- time and ids ------------------------------------------------------------------------


@pytest.fixture
def tokyo_local_time() -> Iterator[None]:
    """The process's local zone is not UTC; GedPi's times must still be UTC."""
    saved = sys.modules["os"].environ.get("TZ")
    sys.modules["os"].environ["TZ"] = "Asia/Tokyo"
    time.tzset()
    try:
        yield
    finally:
        if saved is None:
            del sys.modules["os"].environ["TZ"]
        else:
            sys.modules["os"].environ["TZ"] = saved
        time.tzset()


@pytest.mark.usefixtures("tokyo_local_time")
def test_format_time_is_utc_whatever_the_local_zone():
    assert gov.format_time(T0) == "2026-08-10T05:00:00.000Z"


@pytest.mark.usefixtures("tokyo_local_time")
def test_canonical_times_are_read_as_utc_whatever_the_local_zone():
    assert gov.is_canonical_time("2026-08-10T05:00:00.000Z")
    assert gov.is_canonical_time("2026-12-31T23:59:59.999Z")


def test_bad_entropy_is_refused_with_its_message():
    with pytest.raises(ValueError) as caught:
        gov.work_id_for("Fix login", T0, ENTROPY.upper())
    assert str(caught.value) == "work id entropy must be exactly 32 lowercase hex characters"


# --- the schema's list sentences -------------------------------------------------------------


@pytest.fixture
def fresh_gov(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The module executed again, so that its class-building code runs inside the test."""
    spec = importlib.util.find_spec("gedweb.lib.governance")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "gedweb.lib.governance", module)
    spec.loader.exec_module(module)
    return module


def _refusal(module: Any, shape: str, document: Any) -> str:
    with pytest.raises(module.GovernanceError) as caught:
        module._conform(getattr(module, shape), document)
    assert caught.value.code == gov.INVALID_STATE
    return caught.value.message


@pytest.mark.parametrize(
    ("paths", "sentence"),
    [
        (["SPEC.md", ""], "plan-content paths must be a list of non-blank strings"),
        ("SPEC.md", "plan-content paths must be a list of non-blank strings"),
        (["SPEC.md", "SPEC.md"], "plan-content paths must not repeat entries"),
    ],
)
def test_string_lists_are_refused_in_gedpis_words(fresh_gov, paths, sentence):
    binding = {"type": "plan-content", "digest": "7" * 64, "paths": paths}
    assert _refusal(fresh_gov, "_PlanContent", binding) == sentence


def test_snapshot_path_lists_name_their_snapshot(fresh_gov):
    baseline = {**snapshot(), "stagedPaths": ["a", "a"]}
    assert _refusal(fresh_gov, "_ContentBaseline", baseline) == (
        "contentBaseline.stagedPaths must not repeat entries")
    baseline = {**snapshot(), "untrackedPaths": [" "]}
    assert _refusal(fresh_gov, "_ContentBaseline", baseline) == (
        "contentBaseline.untrackedPaths must be a list of non-blank strings")


@pytest.mark.parametrize(
    ("key", "value", "sentence"),
    [
        ("approvals", {}, "approvals must be a list"),
        ("evidence", "e1", "evidence must be a list"),
        ("pendingMutations", [pending_mutation(), pending_mutation(tool_call_id="c2")],
         "pendingMutations ids must be unique"),
        ("pendingCommits", [pending_commit(), pending_commit()],
         "pendingCommits ids must be unique"),
    ],
)
def test_record_lists_are_refused_in_gedpis_words(fresh_gov, key, value, sentence):
    assert _refusal(fresh_gov, "_State", {**make_state(), key: value}) == sentence


def test_every_field_keeps_its_own_sentence(fresh_gov):
    assert fresh_gov._Decision.refusals["reason"] == fresh_gov.Refusal(
        "decision.reason must not be blank")
    assert fresh_gov._Evidence.refusals["binding"] == fresh_gov.Refusal(
        "evidence binding must be an object with a type",
        {"union_tag_invalid": "unknown evidence binding type {tag}"},
    )
    assert _refusal(fresh_gov, "_Decision", {**gov.resolve_mode(**PLANNED_INPUT),
                                             "reason": " "}) == "decision.reason must not be blank"


# --- initial state --------------------------------------------------------------------------


def test_the_initial_state_copies_the_evidence_it_is_given():
    given = [record("legacy", "migration-required", "failed")]
    state = gov.initial_state(work_id=WORK_ID, summary="Fix login",
                              repository=make_state()["repository"],
                              decision=make_state()["decision"], execution_profile="solo",
                              now=T0, evidence=given)
    assert state["evidence"] == given
    assert state["evidence"][0] is not given[0]


# --- plan binding ----------------------------------------------------------------------------


def test_a_plan_binding_without_a_current_fingerprint_is_not_checked():
    state = gov.append_evidence(make_state("planned-change"), record(
        "plan", "plan", "satisfied",
        binding={"type": "plan-content", "digest": "7" * 64, "paths": ["SPEC.md"]}), T0)
    assert gov.plan_binding_reason(state, "source-mutation", None) is None


# --- evidence operations ----------------------------------------------------------------------


def test_append_evidence_names_the_duplicate_id():
    state = gov.append_evidence(make_state(), record("e1", "inspection", "observed"), T0)
    with duplicate("e1"):
        gov.append_evidence(state, record("e1", "inspection", "failed"), T0)


def test_record_implementation_refusals():
    with invalid("record implementation needs kind implementation and outcome observed"):
        gov.record_implementation(make_state(), record("e1", "implementation", "failed"), T0)
    with blocked(f"{WORK} is planned-change work without satisfied plan evidence."):
        gov.record_implementation(make_state("planned-change"),
                                  record("e1", "implementation", "observed"), T0)


def test_record_satisfied_refusals():
    with invalid("record satisfied needs kind plan or verification and outcome satisfied"):
        gov.record_satisfied(make_state(), record("e1", "verification", "observed"), T0)
    with blocked(f"{WORK} has lifecycle paused; only active work can authorize mutation."):
        gov.record_satisfied(make_state(lifecycle="paused"),
                             record("e1", "verification", "satisfied"), T0)


# --- compare-and-swap ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("workId", "workId cannot be changed by a governance update"),
        ("lifecycle", "lifecycle cannot be changed by a governance update"),
        ("revision", "revision cannot be changed by a governance update"),
        ("updatedAt", "updatedAt cannot be changed by a governance update"),
        ("evidence", "evidence is append-only: record it with the evidence operation"),
        ("pendingMutations",
         "pendingMutations change only through the mutation and commit operations"),
        ("pendingCommits", "pendingCommits change only through the mutation and commit operations"),
        ("notes", "notes is not a governance field"),
    ],
)
def test_cas_update_refuses_each_field_with_its_message(key, message):
    with invalid(message):
        gov.cas_update(make_state(), {key: []}, T0)


def test_cas_update_keeps_its_own_copy_of_nested_values():
    approval = {"id": "a1", "summary": "ok", "kind": "plan", "status": "approved",
                "recordedAt": gov.format_time(T0)}
    changes = {"approvals": [approval]}
    following = gov.cas_update(make_state(), changes, T0)
    approval["summary"] = "changed afterwards"
    assert following["approvals"][0]["summary"] == "ok"


# --- mutations -------------------------------------------------------------------------------


def test_begin_mutation_refusals():
    with invalid("a mutation action is source-mutation or metadata-mutation"):
        gov.begin_mutation(make_state(), pending_mutation(), T0, action="commit")
    with blocked(f"{WORK} is read-only and cannot authorize mutation."):
        gov.begin_mutation(make_state(decision=gov.resolve_mode(mutation_intent=False,
                                                                **PLANNED_INPUT)),
                           pending_mutation(), T0)
    state = gov.begin_mutation(make_state(), pending_mutation(), T0)
    with invalid("a pending mutation with this id or request and tool call exists"):
        gov.begin_mutation(state, pending_mutation(), T0)


def test_begin_mutation_on_a_document_without_pending_mutations():
    following = gov.begin_mutation(_without(make_state(), "pendingMutations"), pending_mutation(),
                                   T0)
    assert following["pendingMutations"] == [pending_mutation()]


@pytest.mark.parametrize("operation", ["complete", "clear"])
def test_an_unknown_pending_mutation_is_named(operation):
    for state in (make_state(), _without(make_state(), "pendingMutations")):
        with invalid("no pending mutation mutation-9"):
            if operation == "complete":
                gov.complete_mutation(state, "mutation-9",
                                      record("i1", "implementation", "observed"), T0)
            else:
                gov.clear_mutation(state, "mutation-9", T0)


def test_complete_mutation_refusals():
    state = gov.begin_mutation(make_state(), pending_mutation(), T0)
    with invalid("completing a mutation needs implementation evidence with outcome observed"):
        gov.complete_mutation(state, "mutation-1", record("i1", "verification", "observed"), T0)
    state = gov.append_evidence(state, record("i1", "inspection", "observed"), T0)
    with duplicate("i1"):
        gov.complete_mutation(state, "mutation-1", record("i1", "implementation", "observed"), T0)


# --- commits ---------------------------------------------------------------------------------


@pytest.mark.parametrize("operation", ["complete", "clear"])
def test_an_unknown_pending_commit_is_named(operation):
    for state in (verified(), _without(verified(), "pendingCommits")):
        with invalid("no pending commit commit-9"):
            if operation == "complete":
                gov.complete_commit(state, "commit-9", milestone(), T0)
            else:
                gov.clear_commit(state, "commit-9", T0)


def test_complete_commit_refusals():
    state = gov.begin_commit(verified(), pending_commit(), T0)
    with invalid("completing a commit needs milestone evidence"):
        gov.complete_commit(state, "commit-1", record("m1", "inspection", "observed"), T0)
    with duplicate("verify-1"):
        gov.complete_commit(state, "commit-1", milestone("verify-1"), T0)


def test_a_second_pending_commit_is_blocked_by_the_guard_first():
    state = gov.begin_commit(verified(), pending_commit(), T0)
    with blocked(f"{WORK} has an unproven commit pending reconciliation."):
        gov.begin_commit(state, pending_commit("commit-2"), T0)


# --- lifecycle -------------------------------------------------------------------------------


def test_transition_refusals():
    with blocked(f"{WORK} lifecycle changed from expected paused to active. "
                 "Retry from current authoritative state."):
        transition(make_state(), "resume", expected="paused")
    with invalid("a lifecycle reason must be 1-500 characters"):
        transition(make_state(), "pause", reason="   ")
    with blocked(f"{WORK} has a source mutation pending durable completion evidence."):
        transition(make_state(pendingMutations=[pending_mutation()]), "pause")
    with blocked(f"{WORK} has an unproven commit pending reconciliation."):
        transition(make_state(pendingCommits=[pending_commit()]), "pause")


def test_planned_work_without_a_plan_may_still_resume():
    paused = transition(make_state("planned-change"), "pause")
    resumed = transition(paused, "resume", transition_id="lifecycle-2")
    assert resumed["lifecycle"] == "active"
    assert resumed["lifecycleTransitions"][-1] == {
        "id": "lifecycle-2", "from": "paused", "to": "active", "reason": "because",
        "recordedAt": gov.format_time(T0 + timedelta(minutes=5)),
    }


def test_refusals_leave_no_partial_change():
    state = make_state()
    before = copy.deepcopy(state)
    with invalid("notes is not a governance field"):
        gov.cas_update(state, {"currentSlice": "T01", "notes": 1}, T0)
    assert state == before
