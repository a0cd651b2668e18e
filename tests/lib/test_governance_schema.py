"""The governance document's schema refuses bad input in GedPi's words (gedpi-behaviour.md §2.2).

Every refusal is invalid-state with one sentence: an object's missing keys
first (all of them, sorted), then its unknown keys, then its values in GedPi's
order. The document is only read, never repaired, and a refused write leaves
the state as it was.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import timedelta
from typing import Annotated, Any, get_args

import pytest

from gedweb.lib import governance as gov
from tests.lib.test_governance import (
    T0,
    WORK_ID,
    at,
    make_state,
    milestone,
    pending_commit,
    pending_mutation,
    record,
    snapshot,
    verification_binding,
)

N = 1_000_000


def refusal(check: Callable[[], object]) -> str:
    with pytest.raises(gov.GovernanceError) as caught:
        check()
    assert caught.value.code == gov.INVALID_STATE
    assert str(caught.value) == caught.value.message
    return caught.value.message


def state_refusal(mutate: Callable[[dict[str, Any]], None]) -> str:
    state = make_state()
    mutate(state)
    return refusal(lambda: gov.validate_state(state, WORK_ID))


def evidence_refusal(item: Any) -> str:
    return refusal(lambda: gov.validate_evidence(item))


def verification(**changes: Any) -> dict[str, Any]:
    return record("e1", "verification", "satisfied", binding={**verification_binding(), **changes})


def command(**changes: Any) -> dict[str, Any]:
    return verification(commands=[{"command": "pytest", "args": [], "exitCode": 0, "stdout": "",
                                   "stderr": "", "durationMs": 1, **changes}])


def without(item: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in item.items() if key not in keys}


# --- wrong types -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("schemaVersion", True, "governance schemaVersion must be 1"),
        ("schemaVersion", "1", "governance schemaVersion must be 1"),
        ("schemaVersion", 2, "governance schemaVersion must be 1"),
        ("revision", "1", "governance revision must be a safe integer >= 0"),
        ("revision", True, "governance revision must be a safe integer >= 0"),
        ("revision", 1.0, "governance revision must be a safe integer >= 0"),
        ("revision", -1, "governance revision must be a safe integer >= 0"),
        ("revision", 2**53, "governance revision must be a safe integer >= 0"),
        ("workId", 7, "governance workId is not a generated work id"),
        ("workId", "fix-login", "governance workId is not a generated work id"),
        ("summary", b"Fix login", "governance summary must not be blank"),
        ("summary", " \t\n", "governance summary must not be blank"),
        ("repository", ["main"], "repository must be an object"),
        ("createdAt", "2026-08-10T05:00:00Z", "governance createdAt must be a canonical UTC time"),
        ("updatedAt", 1786338000000, "governance updatedAt must be a canonical UTC time"),
        ("currentSlice", 3, "currentSlice must be null or a non-blank string"),
        ("decision", "direct-change", "decision must be an object"),
        ("executionProfile", None, "executionProfile is not known"),
        ("lifecycle", "done", "lifecycle is not known"),
        ("approvals", {}, "approvals must be a list"),
        ("evidence", "[]", "evidence must be a list"),
        ("pendingMutations", None, "pendingMutations must be a list"),
        ("pendingCommits", (), "pendingCommits must be a list"),
        ("lifecycleTransitions", 0, "lifecycleTransitions must be a list"),
        ("contentBaseline", None, "contentBaseline must be an object"),
    ],
)
def test_a_top_level_value_of_the_wrong_type_is_refused_with_gedpis_sentence(key, value, message):
    assert state_refusal(lambda state: state.update({key: value})) == message


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("repositoryId", "A" * 64, "repositoryId must be lowercase hex"),
        ("worktreeId", None, "worktreeId must be lowercase hex"),
        ("branch", 5, "repository.branch must be a string or null"),
        ("baseHead", ["a" * 40], "repository.baseHead must be a string or null"),
    ],
)
def test_a_repository_value_of_the_wrong_type_is_refused(key, value, message):
    assert state_refusal(lambda state: state["repository"].update({key: value})) == message


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("mode", ["read-only"], "decision.mode is not a known mode"),
        ("reasonCode", "because", "decision.reasonCode is not a known reason code"),
        # An unhashable value once escaped as a TypeError instead of invalid-state.
        ("reasonCode", ["high-risk"], "decision.reasonCode is not a known reason code"),
        ("reasonCode", {"code": "high-risk"}, "decision.reasonCode is not a known reason code"),
        ("reasonCode", "high-risk", "decision.mode does not match the mode its reasonCode implies"),
        ("reason", "", "decision.reason must not be blank"),
        ("requiresDecision", 0, "decision.requiresDecision must be a boolean"),
        ("requiresDecision", "false", "decision.requiresDecision must be a boolean"),
    ],
)
def test_a_decision_value_of_the_wrong_type_is_refused(key, value, message):
    decision = {**make_state()["decision"], key: value}
    assert refusal(lambda: gov.validate_decision(decision)) == message


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({**record("e1", "inspection", "observed"), "id": 1}, "evidence id must not be blank"),
        (record("e1", "guess", "observed"), "evidence kind is not known"),
        ({**record("e1", "inspection", "observed"), "source": None},
         "evidence source must be human, runtime or agent"),
        (record("e1", "inspection", "observed", producerId=None),
         "evidence producerId must not be blank when present"),
        (record("e1", "inspection", "observed", recorded_at="2026-02-30T05:00:00.000Z"),
         "evidence recordedAt must be a canonical UTC time"),
        ({**record("e1", "inspection", "observed"), "summary": ["ok"]},
         "evidence summary must not be blank"),
        (record("e1", "inspection", "passed"),
         "evidence outcome must be observed, satisfied or failed"),
        (record("e1", "inspection", "observed", binding=None),
         "evidence binding must be an object with a type"),
        (record("e1", "inspection", "observed", binding={"digest": "7" * 64}),
         "evidence binding must be an object with a type"),
        (record("e1", "inspection", "observed", binding={"type": "mystery"}),
         "unknown evidence binding type 'mystery'"),
        (record("e1", "inspection", "observed", binding={"type": ["plan-content"]}),
         "unknown evidence binding type ['plan-content']"),
        (record("e1", "milestone", "observed"),
         "a milestone needs outcome observed and a commit-milestone binding"),
        ({**milestone(), "outcome": "satisfied"},
         "a milestone needs outcome observed and a commit-milestone binding"),
        (record("e1", "plan", "satisfied", binding={"type": "plan-content", "digest": 7,
                                                   "paths": []}),
         "plan-content digest must be lowercase hex"),
        (record("e1", "plan", "satisfied", binding={"type": "plan-content", "digest": "7" * 64,
                                                   "paths": "SPEC.md"}),
         "plan-content paths must be a list of non-blank strings"),
        (record("e1", "plan", "satisfied", binding={"type": "plan-content", "digest": "7" * 64,
                                                   "paths": ["SPEC.md", 3]}),
         "plan-content paths must be a list of non-blank strings"),
        (record("e1", "plan", "satisfied", binding={"type": "plan-content", "digest": "7" * 64,
                                                   "paths": ["SPEC.md", "SPEC.md"]}),
         "plan-content paths must not repeat entries"),
        (record("e1", "implementation", "observed", binding={
            "type": "mutation-content", "beforeDigest": "1" * 64, "afterDigest": "1" * 64,
            "changedPaths": []}), "mutation-content digests must differ"),
        ({**milestone(), "binding": {**milestone()["binding"], "afterHead": "a" * 40}},
         "commit-milestone afterHead must differ from beforeHead"),
        ({**milestone(), "binding": {**milestone()["binding"], "beforeHead": "a" * 39}},
         "commit-milestone beforeHead must be null or lowercase hex"),
        ({**milestone(), "binding": {**milestone()["binding"], "committedTree": "c" * 65}},
         "commit-milestone committedTree must be lowercase hex"),
    ],
)
def test_an_evidence_value_of_the_wrong_type_is_refused(item, message):
    assert evidence_refusal(item) == message


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (verification(snapshot="clean"), "verification snapshot must be an object"),
        (verification(snapshot={**snapshot(), "version": 2}),
         "verification snapshot.version must be 1"),
        (verification(snapshot={**snapshot(), "git": "yes"}),
         "verification snapshot has an invalid repositoryRoot or git flag"),
        (verification(snapshot={**snapshot(), "repositoryRoot": " "}),
         "verification snapshot has an invalid repositoryRoot or git flag"),
        (verification(snapshot={**snapshot(), "head": "HEAD"}),
         "verification snapshot.head must be null or lowercase hex"),
        (verification(snapshot={**snapshot(), "digest": None}),
         "verification snapshot.digest must be lowercase hex"),
        (verification(snapshot={**snapshot(), "stagedPaths": ["a", "a"]}),
         "verification snapshot.stagedPaths must not repeat entries"),
        (verification(snapshot={**snapshot(), "paths": {}}),
         "verification snapshot.paths must be a list"),
        (verification(snapshot={**snapshot(), "paths": [{"path": "", "indexDigest": None,
                                                         "worktreeDigest": None}]}),
         "verification snapshot.paths[].path must not be blank"),
        (verification(snapshot={**snapshot(), "paths": [{"path": "a", "indexDigest": "x",
                                                         "worktreeDigest": None}]}),
         "verification snapshot.paths[].indexDigest must be null or lowercase hex"),
        (verification(scopePaths=None),
         "verification scopePaths must be a list of non-blank strings"),
        (verification(commands=[]), "verification commands must be a non-empty list"),
        (verification(commands="pytest"), "verification commands must be a non-empty list"),
        (command(command=" "), "verification command must not be blank"),
        (command(args="-q"), "verification command args must be strings"),
        (command(args=[1]), "verification command args must be strings"),
        (command(exitCode=True), "verification exitCode must be a safe integer"),
        (command(exitCode=0.0), "verification exitCode must be a safe integer"),
        (command(exitCode=-(2**53)), "verification exitCode must be a safe integer"),
        (command(stdout=None), "verification stdout and stderr must be strings"),
        (command(stderr=b""), "verification stdout and stderr must be strings"),
        (command(durationMs=-1), "verification durationMs must be a finite number >= 0"),
        (command(durationMs=float("inf")), "verification durationMs must be a finite number >= 0"),
        (command(durationMs=float("nan")), "verification durationMs must be a finite number >= 0"),
        (command(durationMs=True), "verification durationMs must be a finite number >= 0"),
        (command(durationMs="12"), "verification durationMs must be a finite number >= 0"),
        (verification(environment={"node": "v22", "platform": "", "arch": "x64"}),
         "verification environment values must not be blank"),
        (verification(review=None), "review must be an object"),
        (verification(review={"outcome": "dirty", "findings": []}),
         "review outcome must be clean or findings"),
        (verification(review={"outcome": "findings", "findings": ["x", "x"]}),
         "review findings must not repeat entries"),
        (verification(residualRisks=[1]), "residualRisks must be a list of unique strings"),
        (verification(residualRisks=["", ""]), "residualRisks must be a list of unique strings"),
    ],
)
def test_a_verification_binding_value_of_the_wrong_type_is_refused(item, message):
    assert evidence_refusal(item) == message


def test_a_verification_binding_keeps_its_odd_but_valid_values():
    """Integers of any size and blank residual risks were valid, and stay so."""
    for item in (command(durationMs=10**400), command(durationMs=12.5),
                 command(exitCode=-(2**53 - 1)), verification(residualRisks=[""])):
        assert gov.validate_evidence(item) is None


def test_a_version_equal_to_one_is_taken_as_before_the_schema():
    """`!= 1` let 1.0 through, and true where no boolean check stood (the snapshot's)."""
    state = make_state()
    state["schemaVersion"] = 1.0
    state["contentBaseline"] = {**snapshot(), "version": True}
    assert gov.validate_state(state, WORK_ID) is None


@pytest.mark.parametrize(
    ("validate", "item", "message"),
    [
        (gov.validate_pending_mutation, {**pending_mutation(), "target": 5},
         "pending mutation fields must not be blank"),
        (gov.validate_pending_mutation, {**pending_mutation(), "startedAt": None},
         "pending mutation startedAt must be a canonical UTC time"),
        (gov.validate_pending_commit, {**pending_commit(), "toolCallId": ""},
         "pending commit ids must not be blank"),
        (gov.validate_pending_commit, {**pending_commit(), "beforeHead": "xyz"},
         "pending commit beforeHead must be null or lowercase hex"),
        (gov.validate_pending_commit, {**pending_commit(), "expectedTree": None},
         "pending commit expectedTree must be lowercase hex"),
        (gov.validate_pending_commit, {**pending_commit(), "untrackedDigest": "F" * 64},
         "pending commit untrackedDigest must be lowercase hex"),
        (gov.validate_pending_commit, {**pending_commit(), "startedAt": "now"},
         "pending commit startedAt must be a canonical UTC time"),
    ],
)
def test_a_pending_value_of_the_wrong_type_is_refused(validate, item, message):
    assert refusal(lambda: validate(item)) == message


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"id": "a1", "kind": "plan", "status": "granted", "recordedAt": at(0), "summary": "ok"},
         "approval kind or status is not known"),
        ({"id": "a1", "kind": "plan", "status": "approved", "recordedAt": at(0), "summary": None},
         "approval id and summary must not be blank"),
        ("a1", "approval must be an object"),
    ],
)
def test_an_approval_of_the_wrong_shape_is_refused(item, message):
    assert state_refusal(lambda state: state.update(approvals=[item])) == message


# --- missing keys, unknown keys, and which is said first ------------------------------------


@pytest.mark.parametrize(
    ("validate", "item", "message"),
    [
        (gov.validate_evidence, without(record("e1", "inspection", "observed"), "summary", "id"),
         "evidence record is missing id, summary"),
        (gov.validate_pending_mutation, without(pending_mutation(), "target"),
         "pending mutation is missing target"),
        (gov.validate_pending_commit, without(pending_commit(), "startedAt", "beforeHead"),
         "pending commit is missing beforeHead, startedAt"),
        (gov.validate_pending_commit, {},
         "pending commit is missing beforeHead, expectedTree, id, requestId, startedAt, "
         "toolCallId, unstagedDigest, untrackedDigest, verifiedSnapshotDigest"),
    ],
)
def test_every_missing_key_is_named_in_sorted_order(validate, item, message):
    assert refusal(lambda: validate(item)) == message


def test_a_state_missing_required_keys_names_them_and_not_the_omittable_ones():
    state = without(make_state(), "revision", "workId", "pendingMutations", "pendingCommits",
                    "lifecycleTransitions")
    assert refusal(lambda: gov.validate_state(state)) == (
        "governance state is missing revision, workId"
    )


def test_the_omittable_state_keys_may_be_left_out():
    state = without(make_state(), "pendingMutations", "pendingCommits", "lifecycleTransitions")
    assert "contentBaseline" not in state
    assert gov.validate_state(state, WORK_ID) is None


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s.update(zeta=1, alpha=2), "governance state has unknown keys alpha, zeta"),
        (lambda s: s["repository"].update(remote="origin"), "repository has unknown keys remote"),
        (lambda s: s["decision"].update(confidence=0.9), "decision has unknown keys confidence"),
        (lambda s: s.update(contentBaseline={**snapshot(), "extra": 1}),
         "contentBaseline has unknown keys extra"),
        (lambda s: s.update(contentBaseline={**snapshot(), "paths": [
            {"path": "a", "indexDigest": None, "worktreeDigest": None, "mode": "100644"}]}),
         "contentBaseline.paths[] has unknown keys mode"),
        (lambda s: s.update(lifecycleTransitions=[{"id": "l1", "from": "active", "to": "paused",
                                                   "reason": "r", "by": "me",
                                                   "recordedAt": "2026-08-10T05:00:00.000Z"}]),
         "lifecycle transition has unknown keys by"),
        (lambda s: s.update({1: "one"}), "governance state has unknown keys 1"),
    ],
)
def test_gedpi_refuses_unknown_keys_at_every_level(mutate, message):
    assert state_refusal(mutate) == message


def test_missing_keys_are_said_before_unknown_keys_and_unknown_keys_before_values():
    state = make_state()
    del state["summary"]
    state["extra"] = 1
    state["lifecycle"] = "done"
    assert refusal(lambda: gov.validate_state(state)) == "governance state is missing summary"
    state["summary"] = "Fix login"
    assert refusal(lambda: gov.validate_state(state)) == "governance state has unknown keys extra"
    del state["extra"]
    assert refusal(lambda: gov.validate_state(state)) == "lifecycle is not known"


def test_values_are_checked_in_gedpis_order():
    state = make_state()
    state["revision"] = -1
    state["lifecycle"] = "done"
    state["evidence"] = "none"
    assert refusal(lambda: gov.validate_state(state)) == (
        "governance revision must be a safe integer >= 0"
    )


def test_an_outer_objects_keys_are_said_before_an_inner_objects_values():
    state = make_state()
    state["decision"]["mode"] = "sideways"
    del state["lifecycle"]
    assert refusal(lambda: gov.validate_state(state)) == "governance state is missing lifecycle"


def test_the_first_faulty_item_of_a_list_is_the_one_named():
    state = make_state()
    state["evidence"] = [record("e1", "inspection", "observed"),
                         {**record("e2", "inspection", "observed"), "source": "robot"},
                         record("", "inspection", "observed")]
    assert refusal(lambda: gov.validate_state(state)) == (
        "evidence source must be human, runtime or agent"
    )


def test_a_key_that_holds_braces_is_quoted_not_formatted():
    state = make_state()
    state["{what}"] = 1
    assert refusal(lambda: gov.validate_state(state)) == (
        "governance state has unknown keys {what}"
    )


# --- the document as a whole ----------------------------------------------------------------


@pytest.mark.parametrize("list_name", ["approvals", "evidence", "pendingMutations",
                                       "pendingCommits"])
def test_ids_repeat_in_no_list(list_name):
    item = {
        "approvals": {"id": "a1", "kind": "plan", "status": "approved",
                      "recordedAt": "2026-08-10T05:00:00.000Z", "summary": "ok"},
        "evidence": record("e1", "inspection", "observed"),
        "pendingMutations": pending_mutation(),
        "pendingCommits": pending_commit(),
    }[list_name]
    other = {**item, "summary": "again"} if "summary" in item else {**item, "requestId": "r2"}
    assert state_refusal(lambda state: state.update({list_name: [item, other]})) == (
        f"{list_name} ids must be unique"
    )


def test_the_embedded_work_id_must_be_the_requested_one():
    other = f"other-20260810050000000-{'9' * 32}"
    assert refusal(lambda: gov.validate_state(make_state(), other)) == (
        "governance workId does not match the requested work item"
    )


@pytest.mark.parametrize(
    ("transitions", "lifecycle", "message"),
    [
        ([("active", "paused"), ("active", "completed")], "completed",
         "lifecycle transitions must form a contiguous chain"),
        ([("completed", "active")], "active", "lifecycle transition is not an allowed move"),
        ([("active", "paused")], "active",
         "the last lifecycle transition must end at the current lifecycle"),
    ],
)
def test_lifecycle_transitions_chain_to_the_current_lifecycle(transitions, lifecycle, message):
    steps = [{"id": f"l{n}", "from": start, "to": end, "reason": "r", "recordedAt": at(n)}
             for n, (start, end) in enumerate(transitions)]
    assert state_refusal(
        lambda state: state.update(lifecycleTransitions=steps, lifecycle=lifecycle)
    ) == message


@pytest.mark.parametrize("document", ["{}", None, 42, b"{}", ["a list"]])
def test_a_document_that_is_not_an_object_is_refused(document):
    assert refusal(lambda: gov.validate_state(document)) == "governance state must be an object"


def test_a_hex_value_with_one_trailing_newline_is_still_taken():
    """Python's `$` took it before the schema existed; stored documents may hold one."""
    state = make_state()
    state["repository"]["repositoryId"] = "1" * 64 + "\n"
    assert gov.validate_state(state, WORK_ID) is None
    state["repository"]["repositoryId"] = "1" * 64 + "\n\n"
    assert refusal(lambda: gov.validate_state(state)) == "repositoryId must be lowercase hex"


# --- huge inputs: refused in linear time, with the same sentence -----------------------------


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s.update(summary=" " * N), "governance summary must not be blank"),
        (lambda s: s.update(workId="a" * N), "governance workId is not a generated work id"),
        (lambda s: s.update(workId="a-" * (N // 2) + "20260810050000000-" + "0" * 32),
         "governance workId is not a generated work id"),
        (lambda s: s["repository"].update(repositoryId="a" * N),
         "repositoryId must be lowercase hex"),
        (lambda s: s["repository"].update(worktreeId="a" * (N - 1) + "G"),
         "worktreeId must be lowercase hex"),
        (lambda s: s.update(createdAt="2026-08-10T05:00:00.000Z" * (N // 24)),
         "governance createdAt must be a canonical UTC time"),
        (lambda s: s.update(revision=1 << N),
         "governance revision must be a safe integer >= 0"),
        (lambda s: s.update(evidence=[record(f"e{n}", "inspection", "observed")
                                      for n in range(10_000)] + [record("e0", "plan", "failed")]),
         "evidence ids must be unique"),
    ],
)
def test_a_huge_value_is_refused_with_the_same_sentence(mutate, message):
    assert state_refusal(mutate) == message


def test_a_huge_unknown_key_is_named_in_full():
    key = "k" * N
    assert state_refusal(lambda state: state.update({key: 1})) == (
        f"governance state has unknown keys {key}"
    )


def test_huge_valid_text_is_taken_as_it_is():
    state = make_state()
    state["summary"] = "x" * N
    state["currentSlice"] = "T" + " " * N + "1"
    given_state = copy.deepcopy(state)
    assert gov.validate_state(state, WORK_ID) is None
    assert state == given_state


# --- a refusal changes nothing ---------------------------------------------------------------


def test_a_refused_write_leaves_the_state_and_the_record_as_they_were():
    state = make_state()
    bad = {**record("e1", "inspection", "observed"), "source": "robot", "extra": [1]}
    given_state, given_bad = copy.deepcopy(state), copy.deepcopy(bad)
    assert refusal(lambda: gov.append_evidence(state, bad, T0 + timedelta(minutes=1))) == (
        "evidence record has unknown keys extra"
    )
    assert state == given_state and bad == given_bad
    assert refusal(lambda: gov.cas_update(state, {"decision": {"mode": "read-only"}}, T0)) == (
        "decision is missing reason, reasonCode, requiresDecision"
    )
    assert state == given_state


def test_validation_never_repairs_the_document():
    state = make_state()
    state["evidence"] = [command(durationMs=10**400)]
    given_state = copy.deepcopy(state)
    assert gov.validate_state(state, WORK_ID) is None
    assert state == given_state
    assert type(state["evidence"][0]["binding"]["commands"][0]["durationMs"]) is int


# --- the schema itself ------------------------------------------------------------------------


def test_every_reason_code_the_schema_takes_has_its_sentence():
    assert set(get_args(gov.ReasonCode)) == set(gov.REASONS)


def test_a_shape_field_without_gedpis_sentence_is_refused_when_declared():
    with pytest.raises(TypeError, match="_Unworded.note has no Refusal"):
        class _Unworded(gov._Shape):
            what = "unworded"
            note: Annotated[str, "no sentence"]
