"""GedPi's governance rules as pure functions (gedpi-behaviour.md §2, §7, Appendix A/B).

No database: every operation takes a document and returns the next one or
raises GovernanceError with GedPi's code. Expected bytes and hashes come from
the reference, not from the module under test.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gedweb.lib import governance as gov
from gedweb.lib.fingerprint import file_set_fingerprint, record_digest

T0 = datetime(2026, 8, 10, 5, 0, tzinfo=UTC)
WORK_ID_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,47})-\d{17}-[a-f0-9]{32}$")
ENTROPY = "0123456789abcdef0123456789abcdef"
WORK_ID = f"fix-login-20260810050000000-{ENTROPY}"
REPOSITORY = {"repositoryId": "1" * 64, "worktreeId": "2" * 64, "branch": "main",
              "baseHead": "a" * 40}
HEAD_A, HEAD_B, TREE = "a" * 40, "b" * 40, "c" * 40
SNAPSHOT_DIGEST = "d" * 64

ALL_TRUE = {"clear_scope": True, "bounded": True, "reversible": True,
            "deterministic_check": True}
DIRECT_INPUT = {"minimum_mode": "direct-change", "ambiguity": "sufficient", "risk": "low",
                **ALL_TRUE}
PLANNED_INPUT = {**DIRECT_INPUT, "minimum_mode": "planned-change"}


def at(minutes: int) -> str:
    return gov.format_time(T0 + timedelta(minutes=minutes))


def make_state(mode: str = "direct-change", **overrides: Any) -> dict[str, Any]:
    state = gov.initial_state(
        work_id=WORK_ID,
        summary="Fix login",
        repository=REPOSITORY,
        decision=gov.resolve_mode(**(PLANNED_INPUT if mode == "planned-change" else DIRECT_INPUT)),
        execution_profile="solo",
        now=T0,
    )
    state.update(overrides)
    return state


def record(record_id: str, kind: str, outcome: str, recorded_at: str | None = None,
           **extra: Any) -> dict[str, Any]:
    return {"id": record_id, "kind": kind, "source": "agent",
            "recordedAt": recorded_at or at(0), "summary": f"{kind} {outcome}",
            "outcome": outcome, **extra}


def milestone(record_id: str = "m1", before_head: str | None = HEAD_A, tree: str = TREE,
              digest: str = SNAPSHOT_DIGEST) -> dict[str, Any]:
    return record(record_id, "milestone", "observed", binding={
        "type": "commit-milestone", "beforeHead": before_head, "afterHead": HEAD_B,
        "committedTree": tree, "verifiedSnapshotDigest": digest,
    })


def pending_mutation(pending_id: str = "mutation-1", request_id: str = "req-1",
                     tool_call_id: str = "call-1") -> dict[str, Any]:
    return {"id": pending_id, "requestId": request_id, "toolCallId": tool_call_id,
            "target": "src/app.py", "startedAt": at(1)}


def pending_commit(pending_id: str = "commit-1") -> dict[str, Any]:
    return {"id": pending_id, "requestId": "req-1", "toolCallId": "call-9",
            "beforeHead": HEAD_A, "expectedTree": TREE, "unstagedDigest": "e" * 64,
            "untrackedDigest": "f" * 64, "verifiedSnapshotDigest": SNAPSHOT_DIGEST,
            "startedAt": at(1)}


def snapshot() -> dict[str, Any]:
    return {"version": 1, "repositoryRoot": "/repo", "git": True, "head": HEAD_A,
            "headTree": TREE, "indexTree": TREE, "stagedDigest": "3" * 64,
            "unstagedDigest": "4" * 64, "untrackedDigest": "5" * 64, "stagedPaths": [],
            "unstagedPaths": ["src/app.py"], "untrackedPaths": [],
            "paths": [{"path": "src/app.py", "indexDigest": None, "worktreeDigest": "6" * 64}],
            "digest": SNAPSHOT_DIGEST}


def verification_binding() -> dict[str, Any]:
    return {
        "type": "verification-content",
        "snapshot": snapshot(),
        "scopePaths": ["src/app.py"],
        "commands": [{"command": "pytest", "args": ["-q"], "exitCode": 0, "stdout": "ok",
                      "stderr": "", "durationMs": 12.5}],
        "environment": {"node": "v22", "platform": "linux", "arch": "x64"},
        "review": {"outcome": "clean", "findings": []},
        "residualRisks": [],
    }


def verified(mode: str = "direct-change") -> dict[str, Any]:
    """Active work whose commit guard passes."""
    state = make_state(mode)
    if mode == "planned-change":
        state = gov.append_evidence(state, record("plan-1", "plan", "satisfied"), T0)
    return gov.append_evidence(state, record("verify-1", "verification", "satisfied"), T0)


def transition(state: dict[str, Any], action: str, reason: str = "because",
               expected: str | None = None, transition_id: str = "lifecycle-1") -> dict[str, Any]:
    return gov.transition(state, action=action, reason=reason,
                          expected_lifecycle=expected or state["lifecycle"],
                          transition_id=transition_id, now=T0 + timedelta(minutes=5))


def raises_code(code: str):
    return pytest.raises(gov.GovernanceError, check=lambda exc: exc.code == code)


# --- mode resolution (§2.10) -----------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "code", "mode"),
    [
        ({"mutation_intent": False, **PLANNED_INPUT, "ambiguity": "decision-needed",
          "risk": "high", "escalation_reason": "x"}, "no-mutation-intent", "read-only"),
        ({**PLANNED_INPUT, "ambiguity": "decision-needed", "risk": "high",
          "escalation_reason": "x"}, "decision-needed", "planned-change"),
        ({**PLANNED_INPUT, "risk": "high", "escalation_reason": "x"}, "user-requested-plan",
         "planned-change"),
        ({**DIRECT_INPUT, "risk": "high", "escalation_reason": "x"}, "high-risk",
         "planned-change"),
        ({**DIRECT_INPUT, "risk": "normal", "escalation_reason": "x"}, "coordinator-escalation",
         "planned-change"),
        ({**DIRECT_INPUT, "risk": "normal"}, "direct-change-eligible", "direct-change"),
        ({**DIRECT_INPUT, "clear_scope": False}, "direct-change-ineligible", "planned-change"),
        ({**DIRECT_INPUT, "bounded": False}, "direct-change-ineligible", "planned-change"),
        ({**DIRECT_INPUT, "reversible": False}, "direct-change-ineligible", "planned-change"),
        ({**DIRECT_INPUT, "deterministic_check": False}, "direct-change-ineligible",
         "planned-change"),
    ],
)
def test_resolve_mode_takes_the_first_matching_reason_in_gedpi_precedence(inputs, code, mode):
    decision = gov.resolve_mode(**inputs)
    assert decision["reasonCode"] == code
    assert decision["mode"] == mode
    assert decision["requiresDecision"] is (code == "decision-needed")
    assert list(decision) == ["mode", "reasonCode", "reason", "requiresDecision"]


@pytest.mark.parametrize("code", sorted(set(gov.REASONS) - {"coordinator-escalation"}))
def test_every_reason_code_has_its_fixed_sentence_and_implied_mode(code):
    inputs = {
        "no-mutation-intent": {"mutation_intent": False, **DIRECT_INPUT},
        "decision-needed": {**DIRECT_INPUT, "ambiguity": "decision-needed"},
        "user-requested-plan": PLANNED_INPUT,
        "high-risk": {**DIRECT_INPUT, "risk": "high"},
        "direct-change-eligible": DIRECT_INPUT,
        "direct-change-ineligible": {**DIRECT_INPUT, "bounded": False},
    }[code]
    decision = gov.resolve_mode(**inputs)
    assert (decision["mode"], decision["reason"]) == gov.REASONS[code]
    gov.validate_decision(decision)


@pytest.mark.parametrize("blank", ["", "   ", "\t\n"])
def test_an_escalation_with_a_blank_reason_uses_the_default_sentence(blank):
    decision = gov.resolve_mode(**DIRECT_INPUT, escalation_reason=blank)
    assert decision["reasonCode"] == "coordinator-escalation"
    assert decision["reason"] == gov.REASONS["coordinator-escalation"][1]


def test_an_escalation_reason_is_embedded_in_the_decision_reason():
    decision = gov.resolve_mode(**DIRECT_INPUT, escalation_reason="  touches billing code  ")
    assert decision["reasonCode"] == "coordinator-escalation"
    assert "touches billing code" in decision["reason"]
    assert decision["reason"] != gov.REASONS["coordinator-escalation"][1]
    gov.validate_decision(decision)


def test_no_escalation_reason_is_not_an_escalation():
    assert gov.resolve_mode(**DIRECT_INPUT, escalation_reason=None)["reasonCode"] == (
        "direct-change-eligible"
    )


# --- work ids (§7.1) ----------------------------------------------------------------------


def test_a_work_id_has_slug_timestamp_and_entropy():
    work_id = gov.work_id_for("Fix the Login button!", T0, ENTROPY)
    assert work_id == f"fix-the-login-button-20260810050000000-{ENTROPY}"
    assert WORK_ID_PATTERN.match(work_id)
    assert gov.is_work_id(work_id)


def test_summaries_that_normalise_to_the_same_slug_share_it():
    assert gov.work_slug("feat/a") == gov.work_slug("feat-a") == "feat-a"


def test_same_slug_summaries_still_get_distinct_ids_from_their_entropy():
    first = gov.work_id_for("feat/a", T0, "a" * 32)
    second = gov.work_id_for("feat-a", T0, "b" * 32)
    assert first != second
    assert first.rsplit("-", 1)[0] == second.rsplit("-", 1)[0]


@pytest.mark.parametrize("summary", ["", "   ", "///", "日本語"])
def test_an_empty_slug_becomes_work(summary):
    assert gov.work_slug(summary) == "work"
    assert gov.work_id_for(summary, T0, ENTROPY).startswith("work-20260810050000000-")


def test_the_slug_collapses_runs_and_strips_dashes():
    assert gov.work_slug("  --Hello,,  World--  ") == "hello-world"


def test_the_slug_is_cut_to_48_characters_without_a_trailing_dash():
    summary = "a" * 47 + " bcdef"
    assert gov.work_slug(summary) == "a" * 47
    assert len(gov.work_slug("b" * 60)) == 48
    assert WORK_ID_PATTERN.match(gov.work_id_for(summary, T0, ENTROPY))


def test_a_work_id_created_later_sorts_later():
    ids = [gov.work_id_for("same work", T0 + timedelta(milliseconds=ms), "f" * 32)
           for ms in (0, 1, 999, 1000, 60_000, 86_400_000)]
    ids.append(gov.work_id_for("same work", T0.replace(year=2027), "0" * 32))
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("entropy", ["", "a" * 31, "a" * 33, "A" * 32, "g" * 32, "-" * 32])
def test_bad_entropy_is_refused(entropy):
    with pytest.raises(ValueError):
        gov.work_id_for("x", T0, entropy)


@pytest.mark.parametrize("value", ["root", "../../escape", f"Fix-20260810050000000-{ENTROPY}",
                                   f"fix-2026081005000000-{ENTROPY}", 42, None])
def test_non_generated_ids_are_not_work_ids(value):
    assert not gov.is_work_id(value)


# --- summaries and times ------------------------------------------------------------------


def test_normalize_summary_turns_control_characters_into_spaces_and_collapses():
    assert gov.normalize_summary("  fix\x00the\x1b  login\t\n\x7fbutton  ") == (
        "fix the login button"
    )


def test_normalize_summary_cuts_to_240_characters():
    assert gov.normalize_summary("x" * 300) == "x" * 240


def test_normalize_summary_of_whitespace_is_empty():
    assert gov.normalize_summary(" \t\x01\n ") == ""


def test_format_time_is_utc_with_milliseconds_and_z():
    assert gov.format_time(T0) == "2026-08-10T05:00:00.000Z"
    assert gov.format_time(T0.replace(microsecond=123_999)) == "2026-08-10T05:00:00.123Z"
    plus_two = datetime(2026, 8, 10, 7, 0, tzinfo=timezone(timedelta(hours=2)))
    assert gov.format_time(plus_two) == "2026-08-10T05:00:00.000Z"


def test_a_canonical_time_round_trips_exactly():
    assert gov.is_canonical_time("2026-08-10T05:00:00.000Z")
    assert gov.is_canonical_time("2024-02-29T23:59:59.999Z")


@pytest.mark.parametrize("value", [
    "2026-08-10T05:00:00Z",
    "2026-08-10T05:00:00.000+00:00",
    "2026-08-10T05:00:00.0000Z",
    "2026-08-10 05:00:00.000Z",
    "2026-02-30T05:00:00.000Z",
    "2025-02-29T05:00:00.000Z",
    "2026-08-10T24:00:00.000Z",
    "2026-13-10T05:00:00.000Z",
    "",
    None,
    1786338000000,
])
def test_non_canonical_times_are_refused(value):
    assert not gov.is_canonical_time(value)


# --- templates (Appendix A) and DIRECT.md (§7.5) ---------------------------------------


@pytest.mark.parametrize(
    ("template", "sha256", "length"),
    [
        (gov.SPEC_TEMPLATE, "7f509a25e7248ceaa5d1fe3fe3e67d8ad41ea972e3301270004052a6872b3c0a", 85),
        (gov.TASKS_TEMPLATE, "2be064554a44304e6400cec41e7ff62d33fea80c9aeca6b28275caf483bf1e40",
         110),
        (gov.TESTS_TEMPLATE, "da9e0f67fa9ae6918d44a9769306f269ffb7d1a181707cfee433996f0cd43fb2",
         269),
    ],
)
def test_planned_templates_are_byte_exact(template, sha256, length):
    data = template.encode("utf-8")
    assert len(data) == length
    assert hashlib.sha256(data).hexdigest() == sha256


def test_planned_templates_are_exactly_spec_tasks_and_tests():
    assert gov.PLANNED_TEMPLATES == {"SPEC.md": gov.SPEC_TEMPLATE, "TASKS.md": gov.TASKS_TEMPLATE,
                                     "TESTS.md": gov.TESTS_TEMPLATE}


def test_direct_md_is_gedpis_exact_text():
    decision = gov.resolve_mode(**DIRECT_INPUT)
    text = gov.render_direct_md(WORK_ID, "  Fix login  ", decision, True)
    assert text == (
        "# Direct change\n"
        "\n"
        f"- Work ID: {WORK_ID}\n"
        "- Scope: Fix login\n"
        f"- Governance: {gov.REASONS['direct-change-eligible'][1]}\n"
        "- Deterministic check available: yes\n"
    )


def test_direct_md_says_no_without_a_deterministic_check():
    decision = gov.resolve_mode(**DIRECT_INPUT)
    text = gov.render_direct_md(WORK_ID, "x", decision, False)
    assert text.endswith("- Deterministic check available: no\n")


# --- validate_state (§2.2) ------------------------------------------------------------------


def test_the_initial_state_is_gedpis_revision_zero():
    state = make_state()
    gov.validate_state(state, WORK_ID)
    assert state["schemaVersion"] == 1
    assert state["revision"] == 0
    assert state["lifecycle"] == "active"
    assert state["approvals"] == state["evidence"] == []
    assert state["pendingMutations"] == state["pendingCommits"] == []
    assert state["lifecycleTransitions"] == []
    assert state["createdAt"] == state["updatedAt"] == "2026-08-10T05:00:00.000Z"
    assert json.loads(json.dumps(state)) == state


def _set(path: str, value: Any):
    def mutate(state: dict[str, Any]) -> None:
        *parents, leaf = path.split(".")
        target: Any = state
        for name in parents:
            target = target[int(name)] if isinstance(target, list) else target[name]
        target[leaf] = value
    return mutate


@pytest.mark.parametrize(
    "mutate",
    [
        _set("extra", 1),
        _set("schemaVersion", 99),
        _set("schemaVersion", True),
        _set("schemaVersion", "1"),
        _set("revision", -1),
        _set("revision", 1.5),
        _set("revision", True),
        _set("revision", 2**53),
        _set("workId", "root"),
        _set("summary", "   "),
        _set("summary", b"Fix login"),
        _set("repository.extra", "x"),
        _set("repository.repositoryId", "A" * 64),
        _set("repository.branch", 5),
        _set("createdAt", "2026-08-10T05:00:00Z"),
        _set("updatedAt", T0),
        _set("currentSlice", ""),
        _set("currentSlice", object()),
        _set("decision.mode", "planned-change"),
        _set("decision.requiresDecision", "true"),
        _set("decision.extra", None),
        _set("executionProfile", "team"),
        _set("approvals", ({"id": "a"},)),
        _set("approvals", [{"id": "a", "kind": "plan", "status": "granted",
                            "recordedAt": at(0), "summary": "ok"}]),
        _set("evidence", "[]"),
        _set("evidence", [record("e1", "inspection", "observed", recorded_at=T0)]),
        _set("evidence", [record("e1", "inspection", "observed"),
                          record("e1", "inspection", "failed")]),
        _set("pendingMutations", [{**pending_mutation(), "target": " "}]),
        _set("pendingCommits", [{**pending_commit(), "beforeHead": "xyz"}]),
        _set("lifecycle", "done"),
    ],
)
def test_validate_state_fails_closed_with_invalid_state(mutate):
    state = make_state()
    mutate(state)
    with raises_code(gov.INVALID_STATE):
        gov.validate_state(state)


@pytest.mark.parametrize("document", ["{}", "not json", ["a list"], None, 42, b"{}"])
def test_validate_state_refuses_a_document_that_is_not_an_object(document):
    with raises_code(gov.INVALID_STATE):
        gov.validate_state(document)


def test_validate_state_refuses_an_embedded_work_id_for_another_item():
    state = make_state()
    other = f"other-20260810050000000-{'9' * 32}"
    with raises_code(gov.INVALID_STATE):
        gov.validate_state(state, other)


def test_a_valid_approval_and_optional_lists_still_validate():
    state = make_state()
    state["approvals"] = [{"id": "a1", "kind": "plan", "status": "approved",
                           "recordedAt": at(0), "summary": "ok"}]
    for name in ("pendingMutations", "pendingCommits", "lifecycleTransitions"):
        del state[name]
    read = copy.deepcopy(state)
    assert gov.validate_state(read, WORK_ID) is None
    assert read == state  # the reader checks, it never repairs
    following = gov.cas_update(read, {"currentSlice": "T01"}, T0 + timedelta(minutes=1))
    assert (following["revision"], following["currentSlice"]) == (1, "T01")
    assert following["approvals"] == state["approvals"]
    assert "- Approval records: 1\n" in gov.render_state_md(following)


def test_lifecycle_transitions_must_be_contiguous_and_end_at_the_lifecycle():
    state = transition(transition(make_state(), "pause"), "resume", transition_id="lifecycle-2")
    gov.validate_state(state)
    broken = copy.deepcopy(state)
    broken["lifecycleTransitions"][1]["from"] = "active"
    with raises_code(gov.INVALID_STATE):
        gov.validate_state(broken)
    wrong_end = copy.deepcopy(state)
    wrong_end["lifecycle"] = "paused"
    with raises_code(gov.INVALID_STATE):
        gov.validate_state(wrong_end)


def test_a_transition_out_of_a_terminal_state_is_invalid():
    state = transition(make_state(), "abandon")
    state["lifecycleTransitions"].append({"id": "lifecycle-2", "from": "abandoned", "to": "active",
                                          "reason": "oops", "recordedAt": at(9)})
    state["lifecycle"] = "active"
    with raises_code(gov.INVALID_STATE):
        gov.validate_state(state)


# --- evidence records (§2.3) -----------------------------------------------------------------


def _assert_valid_evidence(item: dict[str, Any]) -> None:
    """Valid evidence: accepted as it is, and appended to a state unchanged, byte for byte."""
    given_item = copy.deepcopy(item)
    assert gov.validate_evidence(item) is None
    assert item == given_item
    following = gov.append_evidence(make_state(), item, T0 + timedelta(minutes=1))
    assert following["revision"] == 1
    assert following["evidence"] == [given_item]
    assert json.loads(json.dumps(following))["evidence"] == [given_item]


@pytest.mark.parametrize("kind", gov.EVIDENCE_KINDS)
def test_each_evidence_kind_validates(kind):
    item = milestone() if kind == "milestone" else record("e1", kind, "observed")
    _assert_valid_evidence(item)


def test_evidence_with_producer_and_every_binding_validates():
    items = [
        record("e1", "plan", "satisfied", producerId="coordinator",
               binding={"type": "plan-content", "digest": "7" * 64,
                        "paths": ["SPEC.md", "TASKS.md"]}),
        record("e2", "implementation", "observed", binding={
            "type": "mutation-content", "beforeDigest": "1" * 64, "afterDigest": "2" * 64,
            "changedPaths": ["@HEAD", "src/app.py"]}),
        record("e3", "verification", "satisfied", binding=verification_binding()),
        milestone(before_head=None),
    ]
    for item in items:
        _assert_valid_evidence(item)
    state = make_state()
    for item in items:
        state = gov.append_evidence(state, item, T0)
    assert state["evidence"] == items and state["revision"] == len(items)
    assert state["evidence"][0]["producerId"] == "coordinator"


def _without_review() -> dict[str, Any]:
    binding = verification_binding()
    del binding["review"]
    return binding


@pytest.mark.parametrize(
    "item",
    [
        {**record("e1", "inspection", "observed"), "extra": 1},
        {k: v for k, v in record("e1", "inspection", "observed").items() if k != "summary"},
        record("", "inspection", "observed"),
        record("e1", "guess", "observed"),
        {**record("e1", "inspection", "observed"), "source": "robot"},
        record("e1", "inspection", "observed", producerId=" "),
        record("e1", "inspection", "observed", recorded_at="2026-08-10T05:00:00Z"),
        {**record("e1", "inspection", "observed"), "summary": ""},
        record("e1", "inspection", "passed"),
        record("e1", "milestone", "observed"),
        {**milestone(), "outcome": "satisfied"},
        record("e1", "milestone", "observed", binding={"type": "plan-content", "digest": "7" * 64,
                                                       "paths": []}),
        record("e1", "plan", "satisfied", binding={"type": "plan-content", "digest": "7" * 64,
                                                   "paths": ["a", "a"]}),
        record("e1", "plan", "satisfied", binding={"type": "plan-content", "digest": "7" * 64,
                                                   "paths": [], "extra": 1}),
        record("e1", "plan", "satisfied", binding={"type": "plan-content", "digest": "7" * 63,
                                                   "paths": []}),
        record("e1", "implementation", "observed", binding={
            "type": "mutation-content", "beforeDigest": "1" * 64, "afterDigest": "1" * 64,
            "changedPaths": ["src/app.py"]}),
        record("e1", "implementation", "observed", binding={
            "type": "mutation-content", "beforeDigest": "1" * 64, "afterDigest": "2" * 64,
            "changedPaths": [""]}),
        record("e1", "verification", "satisfied", binding={**verification_binding(),
                                                           "commands": []}),
        record("e1", "verification", "satisfied", binding={
            **verification_binding(), "environment": {"node": "v22", "platform": "linux"}}),
        record("e1", "verification", "satisfied", binding={
            **verification_binding(), "snapshot": {**snapshot(), "extra": 1}}),
        record("e1", "verification", "satisfied", binding={
            **verification_binding(), "review": {"outcome": "dirty", "findings": []}}),
        record("e1", "verification", "satisfied", binding={
            **verification_binding(), "residualRisks": ["same", "same"]}),
        record("e1", "verification", "satisfied", binding={**_without_review(), "extra": 1}),
        record("e1", "verification", "satisfied", binding={**verification_binding(), "commands": [
            {"command": "pytest", "args": [], "exitCode": 0, "stdout": "", "stderr": "",
             "durationMs": float("nan")}]}),
        {**milestone(), "binding": {**milestone()["binding"], "afterHead": HEAD_A}},
        {**milestone(), "binding": {**milestone()["binding"], "extra": 1}},
        record("e1", "inspection", "observed", binding={"type": "mystery"}),
        record("e1", "inspection", "observed", binding=["plan-content"]),
    ],
)
def test_malformed_evidence_is_invalid_state(item):
    with raises_code(gov.INVALID_STATE):
        gov.validate_evidence(item)


def test_a_verification_binding_without_review_validates():
    item = record("e1", "verification", "satisfied", binding=_without_review())
    _assert_valid_evidence(item)
    assert "review" not in item["binding"]
    # Valid evidence is evidence the guard counts: the commit check passes on it.
    assert gov.guard(gov.append_evidence(make_state(), item, T0), "commit") is None


# --- the guard (§2.6) -------------------------------------------------------------------------


def test_freshness_goes_by_append_order_not_timestamps():
    """Scenario 15: each record is stamped earlier than the one before it."""
    state = make_state("planned-change")
    assert gov.guard(state, "metadata-mutation") is None
    assert "without satisfied plan evidence" in gov.guard(state, "source-mutation")

    state = gov.append_evidence(state, record("e1", "plan", "satisfied", at(60)), T0)
    assert gov.guard(state, "source-mutation") is None

    state = gov.append_evidence(state, record("e2", "verification", "satisfied", at(50)), T0)
    assert gov.guard(state, "commit") is None

    state = gov.append_evidence(state, record("e3", "implementation", "observed", at(40)), T0)
    assert "no satisfied verification evidence newer" in gov.guard(state, "commit")

    state = gov.append_evidence(state, record("e4", "verification", "satisfied", at(30)), T0)
    assert gov.guard(state, "commit") is None

    state = gov.append_evidence(state, record("e5", "verification", "failed", at(20)), T0)
    assert "no satisfied verification evidence newer" in gov.guard(state, "commit")

    state = gov.append_evidence(state, record("e6", "plan", "failed", at(10)), T0)
    assert "without satisfied plan evidence" in gov.guard(state, "source-mutation")
    assert gov.guard(state, "metadata-mutation") is None


def test_missing_state_is_denied_with_no_authoritative_governance_state():
    assert gov.missing_state_reason(WORK_ID) == (
        f"Ged work {WORK_ID} has no authoritative governance state."
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"decision": gov.resolve_mode(mutation_intent=False, **DIRECT_INPUT)},
         "is read-only and cannot authorize mutation."),
        ({"lifecycle": "paused"}, "has lifecycle paused; only active work can authorize mutation."),
        ({"decision": gov.resolve_mode(**{**DIRECT_INPUT, "ambiguity": "decision-needed"})},
         "still requires a user-owned decision before mutation."),
    ],
)
@pytest.mark.parametrize("action", gov.GUARD_ACTIONS)
def test_fail_closed_states_block_even_metadata_mutation(change, expected, action):
    """Scenario 16."""
    state = {**verified(), **change}
    assert gov.guard(state, action) == f"Ged work {WORK_ID} {expected}"


def test_the_guard_reports_the_first_failing_check_in_gedpi_order():
    state = make_state("planned-change")
    state["lifecycle"] = "paused"
    state["evidence"] = [record("legacy", "migration-required", "failed")]
    state["pendingCommits"] = [pending_commit()]
    state["pendingMutations"] = [pending_mutation()]
    state["decision"] = {"mode": "read-only", "reasonCode": "no-mutation-intent",
                         "reason": "r", "requiresDecision": True}
    work = f"Ged work {WORK_ID}"
    seen = []

    def check() -> str | None:
        reason = gov.guard(state, "commit")
        seen.append(reason)
        return reason

    assert check() == f"{work} has lifecycle paused; only active work can authorize mutation."
    state["lifecycle"] = "active"
    assert check() == f"{work} requires legacy migration review before it can authorize mutation."
    state["evidence"] = [record("legacy", "migration-required", "satisfied")]
    assert check() == f"{work} has an unproven commit pending reconciliation."
    state["pendingCommits"] = []
    assert check() == f"{work} is read-only and cannot authorize mutation."
    state["decision"] = gov.resolve_mode(**{**DIRECT_INPUT, "ambiguity": "decision-needed"})
    assert check() == f"{work} still requires a user-owned decision before mutation."
    state["decision"] = gov.resolve_mode(**PLANNED_INPUT)
    assert check() == f"{work} is planned-change work without satisfied plan evidence."
    state["evidence"].append(record("plan", "plan", "satisfied"))
    assert check() == f"{work} has a source mutation pending durable completion evidence."
    state["pendingMutations"] = []
    assert check() == (f"{work} has no satisfied verification evidence newer than its latest "
                       "implementation evidence.")
    state["evidence"].append(record("verify", "verification", "satisfied"))
    assert check() is None
    assert len(set(seen)) == len(seen)


def test_migration_required_evidence_that_is_not_failed_does_not_block():
    state = gov.append_evidence(make_state(), record("m", "migration-required", "observed"), T0)
    assert gov.guard(state, "source-mutation") is None


def test_direct_work_needs_no_plan_for_source_mutation():
    assert gov.guard(make_state(), "source-mutation") is None


def test_a_pending_mutation_blocks_only_commits():
    state = make_state()
    state["pendingMutations"] = [pending_mutation()]
    assert gov.guard(state, "source-mutation") is None
    assert gov.guard(state, "metadata-mutation") is None
    assert "pending durable completion evidence" in gov.guard(state, "commit")


# --- appending evidence and policies (§2.5) -------------------------------------------------


def test_append_evidence_adds_one_record_and_one_revision():
    state = make_state()
    following = gov.append_evidence(state, record("e1", "inspection", "observed"),
                                    T0 + timedelta(seconds=3))
    assert following["revision"] == 1
    assert following["evidence"] == [record("e1", "inspection", "observed")]
    assert following["updatedAt"] == "2026-08-10T05:00:03.000Z"
    assert following["createdAt"] == state["createdAt"]
    assert state["revision"] == 0 and state["evidence"] == []


def test_a_duplicate_evidence_id_is_refused():
    state = gov.append_evidence(make_state(), record("e1", "inspection", "observed"), T0)
    with raises_code(gov.DUPLICATE_EVIDENCE):
        gov.append_evidence(state, record("e1", "inspection", "failed"), T0)


def test_record_implementation_needs_implementation_observed():
    with raises_code(gov.INVALID_STATE):
        gov.record_implementation(make_state(), record("e1", "implementation", "satisfied"), T0)
    with raises_code(gov.INVALID_STATE):
        gov.record_implementation(make_state(), record("e1", "inspection", "observed"), T0)


def test_record_implementation_runs_the_source_mutation_guard():
    with raises_code(gov.GOVERNANCE_BLOCKED):
        gov.record_implementation(make_state("planned-change"),
                                  record("e1", "implementation", "observed"), T0)
    following = gov.record_implementation(make_state(), record("e1", "implementation", "observed"),
                                          T0)
    assert following["evidence"][-1]["id"] == "e1"


def test_record_satisfied_refuses_plan_evidence_for_direct_work():
    """Scenario 23, first half."""
    with pytest.raises(gov.GovernanceError, match="only valid for planned-change") as caught:
        gov.record_satisfied(make_state(), record("p1", "plan", "satisfied"), T0)
    assert caught.value.code == gov.GOVERNANCE_BLOCKED


def test_record_satisfied_refuses_planned_verification_before_a_satisfied_plan():
    """Scenario 23, second half."""
    with pytest.raises(gov.GovernanceError, match="requires satisfied plan evidence") as caught:
        gov.record_satisfied(make_state("planned-change"),
                             record("v1", "verification", "satisfied"), T0)
    assert caught.value.code == gov.GOVERNANCE_BLOCKED


def test_record_satisfied_refuses_planned_verification_after_a_failed_plan():
    state = gov.append_evidence(make_state("planned-change"), record("p1", "plan", "satisfied"), T0)
    state = gov.append_evidence(state, record("p2", "plan", "failed"), T0)
    with raises_code(gov.GOVERNANCE_BLOCKED):
        gov.record_satisfied(state, record("v1", "verification", "satisfied"), T0)


def test_record_satisfied_accepts_a_plan_then_a_verification_for_planned_work():
    state = gov.record_satisfied(make_state("planned-change"), record("p1", "plan", "satisfied"),
                                 T0)
    state = gov.record_satisfied(state, record("v1", "verification", "satisfied"), T0)
    assert [e["id"] for e in state["evidence"]] == ["p1", "v1"]
    assert state["revision"] == 2


def test_record_satisfied_accepts_direct_verification_without_a_plan():
    state = gov.record_satisfied(make_state(), record("v1", "verification", "satisfied"), T0)
    assert state["evidence"][-1]["kind"] == "verification"


@pytest.mark.parametrize("item", [record("x", "plan", "observed"),
                                  record("x", "verification", "failed"),
                                  record("x", "implementation", "satisfied")])
def test_record_satisfied_needs_plan_or_verification_satisfied(item):
    with raises_code(gov.INVALID_STATE):
        gov.record_satisfied(make_state("planned-change"), item, T0)


def test_record_satisfied_runs_the_metadata_guard():
    paused = transition(make_state(), "pause")
    with raises_code(gov.GOVERNANCE_BLOCKED):
        gov.record_satisfied(paused, record("v1", "verification", "satisfied"), T0)


# --- compare-and-swap (§2.4, scenario 10) -----------------------------------------------------


def test_cas_update_sets_the_current_slice_as_the_next_revision():
    state = make_state()
    following = gov.cas_update(state, {"currentSlice": "T01"}, T0 + timedelta(seconds=1))
    assert (following["revision"], following["currentSlice"]) == (1, "T01")
    assert state["currentSlice"] is None


def test_cas_update_may_change_decision_profile_and_approvals():
    approvals = [{"id": "a1", "kind": "plan", "status": "pending", "recordedAt": at(0),
                  "summary": "waiting"}]
    following = gov.cas_update(make_state(), {
        "decision": gov.resolve_mode(**PLANNED_INPUT), "executionProfile": "high-stakes",
        "approvals": approvals}, T0)
    assert following["decision"]["mode"] == "planned-change"
    assert following["executionProfile"] == "high-stakes"
    assert following["approvals"] == approvals


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("workId", f"other-20260810050000000-{ENTROPY}"),
        ("schemaVersion", 1),
        ("createdAt", at(1)),
        ("summary", "Something else"),
        ("contentBaseline", snapshot()),
        ("lifecycle", "paused"),
        ("lifecycleTransitions", []),
        ("repository", {**REPOSITORY, "repositoryId": "9" * 64}),
        ("revision", 7),
        ("updatedAt", at(1)),
    ],
)
def test_cas_update_refuses_immutable_fields(key, value):
    with raises_code(gov.INVALID_STATE):
        gov.cas_update(make_state(), {key: value}, T0)


@pytest.mark.parametrize("evidence", [[], [record("e1", "inspection", "failed")],
                                      [record("e1", "inspection", "observed"),
                                       record("e2", "inspection", "observed")]])
def test_cas_update_refuses_any_evidence_change(evidence):
    state = gov.append_evidence(make_state(), record("e1", "inspection", "observed"), T0)
    with raises_code(gov.INVALID_STATE):
        gov.cas_update(state, {"evidence": evidence}, T0)


@pytest.mark.parametrize("key", ["pendingMutations", "pendingCommits", "somethingElse"])
def test_cas_update_refuses_pending_lists_and_unknown_fields(key):
    with raises_code(gov.INVALID_STATE):
        gov.cas_update(make_state(), {key: []}, T0)


@pytest.mark.parametrize("changes", [
    {"currentSlice": "  "},
    {"executionProfile": "team"},
    {"decision": {**gov.resolve_mode(**DIRECT_INPUT), "mode": "planned-change"}},
    {"approvals": [{"id": "a1"}]},
])
def test_cas_update_refuses_a_resulting_invalid_document(changes):
    with raises_code(gov.INVALID_STATE):
        gov.cas_update(make_state(), changes, T0)


# --- pending mutations ------------------------------------------------------------------------


def test_begin_mutation_records_a_pending_mutation():
    following = gov.begin_mutation(make_state(), pending_mutation(), T0)
    assert following["pendingMutations"] == [pending_mutation()]
    assert following["revision"] == 1


@pytest.mark.parametrize("duplicate", [
    pending_mutation("mutation-1", "req-2", "call-2"),
    pending_mutation("mutation-2", "req-1", "call-1"),
])
def test_a_duplicate_pending_mutation_is_invalid_state(duplicate):
    state = gov.begin_mutation(make_state(), pending_mutation(), T0)
    with raises_code(gov.INVALID_STATE):
        gov.begin_mutation(state, duplicate, T0)


def test_a_second_mutation_from_another_tool_call_is_accepted():
    state = gov.begin_mutation(make_state(), pending_mutation(), T0)
    state = gov.begin_mutation(state, pending_mutation("mutation-2", "req-1", "call-2"), T0)
    assert [p["id"] for p in state["pendingMutations"]] == ["mutation-1", "mutation-2"]


def test_begin_mutation_runs_the_guard_for_its_action():
    planned = make_state("planned-change")
    with raises_code(gov.GOVERNANCE_BLOCKED):
        gov.begin_mutation(planned, pending_mutation(), T0)
    assert gov.begin_mutation(planned, pending_mutation(), T0, "metadata-mutation")["revision"] == 1


@pytest.mark.parametrize("pending", [
    {**pending_mutation(), "target": ""},
    {**pending_mutation(), "startedAt": "yesterday"},
    {**pending_mutation(), "extra": 1},
])
def test_a_malformed_pending_mutation_is_invalid_state(pending):
    with raises_code(gov.INVALID_STATE):
        gov.begin_mutation(make_state(), pending, T0)


def test_complete_mutation_swaps_the_pending_entry_for_evidence_in_one_revision():
    state = gov.begin_mutation(make_state(), pending_mutation(), T0)
    following = gov.complete_mutation(state, "mutation-1",
                                      record("impl", "implementation", "observed"), T0)
    assert following["pendingMutations"] == []
    assert [e["id"] for e in following["evidence"]] == ["impl"]
    assert following["revision"] == 2


@pytest.mark.parametrize("item", [record("impl", "verification", "satisfied"),
                                  record("impl", "implementation", "failed")])
def test_complete_mutation_needs_implementation_observed(item):
    state = gov.begin_mutation(make_state(), pending_mutation(), T0)
    with raises_code(gov.INVALID_STATE):
        gov.complete_mutation(state, "mutation-1", item, T0)


def test_complete_mutation_of_an_unknown_id_is_invalid_state():
    state = gov.begin_mutation(make_state(), pending_mutation(), T0)
    with raises_code(gov.INVALID_STATE):
        gov.complete_mutation(state, "mutation-9", record("impl", "implementation", "observed"),
                              T0)


def test_clear_mutation_removes_the_pending_entry_without_evidence():
    state = gov.begin_mutation(make_state(), pending_mutation(), T0)
    following = gov.clear_mutation(state, "mutation-1", T0)
    assert following["pendingMutations"] == [] and following["evidence"] == []
    assert following["revision"] == 2


# --- pending commits --------------------------------------------------------------------------


def test_begin_commit_needs_the_commit_guard():
    with pytest.raises(gov.GovernanceError, match="no satisfied verification") as caught:
        gov.begin_commit(make_state(), pending_commit(), T0)
    assert caught.value.code == gov.GOVERNANCE_BLOCKED


def test_only_one_commit_may_be_pending():
    state = gov.begin_commit(verified(), pending_commit(), T0)
    with raises_code(gov.GOVERNANCE_BLOCKED):
        gov.begin_commit(state, pending_commit("commit-2"), T0)


def test_a_matching_milestone_completes_the_pending_commit():
    state = gov.begin_commit(verified(), pending_commit(), T0)
    following = gov.complete_commit(state, "commit-1", milestone(), T0)
    assert following["pendingCommits"] == []
    assert following["evidence"][-1] == milestone()
    assert following["revision"] == state["revision"] + 1


@pytest.mark.parametrize("mismatch", [
    {"before_head": "e" * 40}, {"before_head": None}, {"tree": "e" * 40}, {"digest": "e" * 64},
])
def test_a_mismatched_milestone_is_refused_and_the_pending_commit_kept(mismatch):
    """Scenario 24."""
    state = gov.begin_commit(verified(), pending_commit(), T0)
    before = copy.deepcopy(state)
    with pytest.raises(gov.GovernanceError) as caught:
        gov.complete_commit(state, "commit-1", milestone(**mismatch), T0)
    assert caught.value.code == gov.INVALID_STATE
    assert caught.value.message == "Commit milestone does not match its durable pending commit."
    assert state == before
    assert state["pendingCommits"] == [pending_commit()]


def test_completing_a_commit_needs_a_milestone():
    state = gov.begin_commit(verified(), pending_commit(), T0)
    with raises_code(gov.INVALID_STATE):
        gov.complete_commit(state, "commit-1", record("x", "implementation", "observed"), T0)


def test_clear_commit_removes_the_pending_commit():
    state = gov.begin_commit(verified(), pending_commit(), T0)
    following = gov.clear_commit(state, "commit-1", T0)
    assert following["pendingCommits"] == []
    assert following["evidence"] == state["evidence"]


# --- lifecycle (§7.8) ------------------------------------------------------------------------


@pytest.mark.parametrize(("start", "action", "target"), [
    ("active", "pause", "paused"),
    ("paused", "resume", "active"),
    ("active", "complete", "completed"),
    ("active", "abandon", "abandoned"),
    ("active", "supersede", "superseded"),
    ("paused", "complete", "completed"),
    ("paused", "abandon", "abandoned"),
    ("paused", "supersede", "superseded"),
])
def test_allowed_lifecycle_moves_append_one_transition(start, action, target):
    state = verified()
    if start == "paused":
        state = transition(state, "pause", transition_id="lifecycle-0")
    following = transition(state, action, reason="  all\n done  ", transition_id="lifecycle-9")
    assert following["lifecycle"] == target
    assert following["revision"] == state["revision"] + 1
    assert following["lifecycleTransitions"][-1] == {
        "id": "lifecycle-9", "from": start, "to": target, "reason": "all done",
        "recordedAt": "2026-08-10T05:05:00.000Z"}
    assert following["lifecycleTransitions"][:-1] == state["lifecycleTransitions"]


@pytest.mark.parametrize(("start", "action"), [("active", "resume"), ("paused", "pause"),
                                               ("active", "reopen")])
def test_a_move_that_is_not_allowed_is_governance_blocked(start, action):
    state = verified()
    if start == "paused":
        state = transition(state, "pause")
    with pytest.raises(gov.GovernanceError) as caught:
        transition(state, action, transition_id="lifecycle-2")
    assert caught.value.code == gov.GOVERNANCE_BLOCKED
    assert caught.value.message == f"Lifecycle action {action} is invalid from {start}."


@pytest.mark.parametrize("terminal", ["complete", "abandon", "supersede"])
@pytest.mark.parametrize("action", list(gov.LIFECYCLE_ACTIONS))
def test_terminal_work_never_reopens(terminal, action):
    state = transition(verified(), terminal)
    with raises_code(gov.GOVERNANCE_BLOCKED):
        transition(state, action, transition_id="lifecycle-2")


def test_an_unexpected_lifecycle_is_governance_blocked_with_gedpis_message():
    state = transition(make_state(), "pause")
    with pytest.raises(gov.GovernanceError) as caught:
        transition(state, "abandon", expected="active", transition_id="lifecycle-2")
    assert caught.value.code == gov.GOVERNANCE_BLOCKED
    assert "lifecycle changed from expected active to paused" in caught.value.message
    assert caught.value.message.endswith("Retry from current authoritative state.")


@pytest.mark.parametrize("reason", ["", "   ", "\n\t", "x" * 501, "x " * 250 + "y"])
def test_a_blank_or_over_long_reason_is_refused(reason):
    """Scenario 22."""
    with raises_code(gov.INVALID_STATE):
        transition(make_state(), "pause", reason=reason)


@pytest.mark.parametrize("reason", ["x" * 500, "a" + " " * 1000 + "b", "  y  "])
def test_a_reason_is_measured_after_whitespace_normalisation(reason):
    following = transition(make_state(), "pause", reason=reason)
    assert following["lifecycleTransitions"][0]["reason"] == " ".join(reason.split())


@pytest.mark.parametrize("action", ["pause", "complete", "abandon", "supersede"])
def test_a_pending_mutation_blocks_every_transition(action):
    """Scenario 21."""
    state = gov.begin_mutation(verified(), pending_mutation(), T0)
    with raises_code(gov.GOVERNANCE_BLOCKED):
        transition(state, action)


@pytest.mark.parametrize("action", ["pause", "abandon"])
def test_a_pending_commit_blocks_transitions(action):
    state = gov.begin_commit(verified(), pending_commit(), T0)
    with raises_code(gov.GOVERNANCE_BLOCKED):
        transition(state, action)


def test_complete_requires_the_commit_rules():
    with pytest.raises(gov.GovernanceError, match="no satisfied verification") as caught:
        transition(make_state(), "complete")
    assert caught.value.code == gov.GOVERNANCE_BLOCKED


def test_complete_of_planned_work_requires_plan_evidence_first():
    with pytest.raises(gov.GovernanceError, match="without satisfied plan evidence"):
        transition(make_state("planned-change"), "complete")


def test_complete_from_paused_evaluates_the_commit_rules_as_if_active():
    state = transition(verified("planned-change"), "pause")
    assert transition(state, "complete", transition_id="lifecycle-2")["lifecycle"] == "completed"


def test_resume_requires_the_metadata_rules():
    state = transition(make_state(), "pause")
    state = gov.cas_update(state, {"decision": gov.resolve_mode(
        **{**DIRECT_INPUT, "ambiguity": "decision-needed"})}, T0)
    with pytest.raises(gov.GovernanceError, match="user-owned decision") as caught:
        transition(state, "resume", transition_id="lifecycle-2")
    assert caught.value.code == gov.GOVERNANCE_BLOCKED


def test_abandon_needs_no_evidence():
    assert transition(make_state("planned-change"), "abandon")["lifecycle"] == "abandoned"


# --- operations never change their input -----------------------------------------------------


def test_operations_leave_the_input_document_untouched():
    state = gov.begin_mutation(verified(), pending_mutation(), T0)
    before = copy.deepcopy(state)
    gov.append_evidence(state, record("e9", "inspection", "observed"), T0)
    gov.cas_update(state, {"currentSlice": "T02"}, T0)
    gov.complete_mutation(state, "mutation-1", record("i9", "implementation", "observed"), T0)
    gov.clear_mutation(state, "mutation-1", T0)
    assert state == before


# --- canonical record hash and plan fingerprint (§2.12, Appendix B) ---------------------------


def test_record_digest_matches_the_appendix_b_vectors():
    assert record_digest([("a", "bc")]) == (
        "5310a58788781ab25d5ad7c3f85035824b4eb7bdfa394e0ac2186271472b5492"
    )
    assert record_digest([("ab", "c")]) == (
        "430fb1b4ac43316eca81fab27a1930ab8eff8fef6a1dc7903dce44bbc2790dc5"
    )


def test_record_digest_prefixes_utf8_byte_lengths():
    utf8 = "ü".encode()
    expected = hashlib.sha256(b"2:" + utf8 + b"2:" + utf8).hexdigest()
    assert record_digest([("ü", "ü")]) == expected
    assert record_digest([("ü", utf8)]) == expected


def test_file_set_fingerprint_sorts_paths_and_binds_bytes():
    files = {"b/TESTS.md": b"t", "a/SPEC.md": b"s"}
    fingerprint = file_set_fingerprint(files)
    assert fingerprint["paths"] == ["a/SPEC.md", "b/TESTS.md"]
    assert fingerprint["digest"] == record_digest([
        ("format", "ged-file-set-v1"), ("path", "a/SPEC.md"), ("content", b"s"),
        ("path", "b/TESTS.md"), ("content", b"t")])
    assert file_set_fingerprint({"a/SPEC.md": b"s", "b/TESTS.md": b"t "})["digest"] != (
        fingerprint["digest"]
    )


# --- plan binding -----------------------------------------------------------------------------


def _accepted(digest: str) -> dict[str, Any]:
    return gov.append_evidence(make_state("planned-change"), record(
        "plan", "plan", "satisfied",
        binding={"type": "plan-content", "digest": digest, "paths": ["SPEC.md"]}), T0)


def test_plan_binding_holds_while_the_plan_bytes_are_unchanged():
    assert gov.plan_binding_reason(_accepted("7" * 64), "source-mutation",
                                   {"digest": "7" * 64, "paths": ["SPEC.md"]}) is None


def test_plan_binding_fails_when_the_plan_bytes_changed():
    reason = gov.plan_binding_reason(_accepted("7" * 64), "commit",
                                     {"digest": "8" * 64, "paths": ["SPEC.md"]})
    assert reason == (f"Ged work {WORK_ID} plan bytes changed after acceptance; accept the "
                      "current plan again.")


def test_plan_binding_does_not_apply_to_metadata_or_direct_work():
    changed = {"digest": "8" * 64, "paths": ["SPEC.md"]}
    assert gov.plan_binding_reason(_accepted("7" * 64), "metadata-mutation", changed) is None
    assert gov.plan_binding_reason(make_state(), "source-mutation", changed) is None


def test_plan_binding_ignores_a_plan_accepted_without_a_binding():
    state = gov.append_evidence(make_state("planned-change"), record("p", "plan", "satisfied"), T0)
    assert gov.plan_binding_reason(state, "source-mutation", {"digest": "8" * 64,
                                                              "paths": []}) is None


# --- property: any sequence of operations keeps the document valid ---------------------------

KIND_OUTCOMES = [(kind, outcome) for kind in gov.EVIDENCE_KINDS if kind != "milestone"
                 for outcome in gov.EVIDENCE_OUTCOMES]

OPERATIONS = st.one_of(
    st.tuples(st.just("evidence"), st.integers(0, 6), st.sampled_from(KIND_OUTCOMES)),
    st.tuples(st.just("satisfied"), st.integers(0, 9), st.sampled_from(["plan", "verification"])),
    st.tuples(st.just("implementation"), st.integers(0, 6), st.just(None)),
    st.tuples(st.just("slice"), st.integers(0, 6), st.just(None)),
    st.tuples(st.just("begin"), st.integers(0, 1), st.sampled_from(["source-mutation",
                                                                    "metadata-mutation"])),
    st.tuples(st.just("complete"), st.integers(0, 1), st.integers(0, 6)),
    st.tuples(st.just("clear"), st.integers(0, 1), st.just(None)),
    st.tuples(st.just("commit"), st.integers(0, 1), st.just(None)),
    st.tuples(st.just("milestone"), st.integers(0, 1), st.booleans()),
    st.tuples(st.just("clear-commit"), st.integers(0, 1), st.just(None)),
    st.tuples(st.just("lifecycle"), st.integers(0, 9), st.sampled_from(
        [(action, expected) for action in gov.LIFECYCLE_ACTIONS
         for expected in ("current", "active", "paused")])),
)


def _apply(state: dict[str, Any], op: tuple[str, int, Any], now: datetime) -> dict[str, Any]:
    name, n, arg = op
    if name == "evidence":
        return gov.append_evidence(state, record(f"e{n}", *arg, at(-n)), now)
    if name == "satisfied":
        return gov.record_satisfied(state, record(f"s{n}", arg, "satisfied"), now)
    if name == "implementation":
        return gov.record_implementation(state, record(f"i{n}", "implementation", "observed"),
                                         now)
    if name == "slice":
        return gov.cas_update(state, {"currentSlice": f"T0{n}"}, now)
    if name == "begin":
        return gov.begin_mutation(state, pending_mutation(f"m{n}", f"r{n}", "call"), now, arg)
    if name == "complete":
        return gov.complete_mutation(state, f"m{n}",
                                     record(f"c{arg}", "implementation", "observed"), now)
    if name == "clear":
        return gov.clear_mutation(state, f"m{n}", now)
    if name == "commit":
        return gov.begin_commit(state, pending_commit(f"k{n}"), now)
    if name == "milestone":
        return gov.complete_commit(state, f"k{n}",
                                   milestone(f"ms{n}", tree=TREE if arg else "e" * 40), now)
    if name == "clear-commit":
        return gov.clear_commit(state, f"k{n}", now)
    action, expected = arg
    return gov.transition(state, action=action, reason=f"step {n}",
                          expected_lifecycle=state["lifecycle"] if expected == "current"
                          else expected, transition_id=f"lifecycle-{n}", now=now)


@settings(max_examples=200, deadline=None)
@given(mode=st.sampled_from(["direct-change", "planned-change"]),
       operations=st.lists(OPERATIONS, max_size=30))
def test_any_sequence_of_operations_keeps_a_valid_append_only_document(mode, operations):
    state = make_state(mode)
    for step, op in enumerate(operations, start=1):
        before = copy.deepcopy(state)
        try:
            following = _apply(state, op, T0 + timedelta(seconds=step))
        except gov.GovernanceError as exc:
            assert exc.code in {gov.INVALID_STATE, gov.DUPLICATE_EVIDENCE,
                                gov.GOVERNANCE_BLOCKED}
            assert state == before
            continue
        assert state == before
        gov.validate_state(following, WORK_ID)
        assert following["revision"] == state["revision"] + 1
        assert following["evidence"][: len(state["evidence"])] == state["evidence"]
        assert len(following["evidence"]) - len(state["evidence"]) in (0, 1)
        for key in gov.IMMUTABLE_KEYS:
            if key not in ("lifecycle", "lifecycleTransitions"):
                assert following.get(key) == state.get(key)
        assert following["lifecycleTransitions"][: len(state["lifecycleTransitions"])] == (
            state["lifecycleTransitions"]
        )
        assert json.loads(json.dumps(following)) == following
        state = following
