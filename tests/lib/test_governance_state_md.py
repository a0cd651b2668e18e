"""GedPi's STATE.md projection (gedpi-behaviour.md §2.9), compared as whole texts.

STATE.md's bytes are a contract, so each test pins a complete rendering.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from gedweb.lib import governance as gov
from tests.lib.test_governance import (
    DIRECT_INPUT,
    T0,
    WORK_ID,
    make_state,
    pending_commit,
    pending_mutation,
    record,
    snapshot,
    transition,
)

ACTIVE_NEXT = "Follow the authoritative governance decision and current slice."
CLOSED_NEXT = "No further lifecycle transition or repository mutation is authorized."
DIRECT_REASON = gov.REASONS["direct-change-eligible"][1]


def expected(*, phase: str, task: str, status: str, blockers: str, next_step: str,
             revision: int, lifecycle: str, profile: str = "solo", evidence: int = 0,
             approvals: int = 0, mutations: int = 0, commits: int = 0, transitions: int = 0,
             baseline: str = "legacy-unbound") -> str:
    return (
        "# State\n\n"
        f"Current Phase: {phase}\n"
        f"Active Task: {task}\n"
        f"Status Summary: {status}\n"
        f"Blockers: {blockers}\n"
        f"Next Step: {next_step}\n\n"
        "## Governance\n\n"
        f"- Work ID: {WORK_ID}\n"
        f"- Revision: {revision}\n"
        f"- Lifecycle: {lifecycle}\n"
        f"- Execution profile: {profile}\n"
        f"- Evidence records: {evidence}\n"
        f"- Approval records: {approvals}\n"
        f"- Pending mutations: {mutations}\n"
        f"- Pending commits: {commits}\n"
        f"- Lifecycle transitions: {transitions}\n"
        f"- Content baseline: {baseline}\n"
    )


def test_new_active_work_renders_its_decision_and_summary():
    assert gov.render_state_md(make_state()) == (
        "# State\n"
        "\n"
        "Current Phase: Build\n"
        "Active Task: Fix login\n"
        f"Status Summary: direct-change — {DIRECT_REASON}\n"
        "Blockers: None\n"
        f"Next Step: {ACTIVE_NEXT}\n"
        "\n"
        "## Governance\n"
        "\n"
        f"- Work ID: {WORK_ID}\n"
        "- Revision: 0\n"
        "- Lifecycle: active\n"
        "- Execution profile: solo\n"
        "- Evidence records: 0\n"
        "- Approval records: 0\n"
        "- Pending mutations: 0\n"
        "- Pending commits: 0\n"
        "- Lifecycle transitions: 0\n"
        "- Content baseline: legacy-unbound\n"
    )


def test_a_document_without_the_optional_lists_renders_them_as_zero():
    state = make_state()
    for key in ("pendingMutations", "pendingCommits", "lifecycleTransitions"):
        del state[key]
    assert gov.render_state_md(state) == expected(
        phase="Build", task="Fix login", status=f"direct-change — {DIRECT_REASON}",
        blockers="None", next_step=ACTIVE_NEXT, revision=0, lifecycle="active")


def test_the_current_slice_is_the_active_task_with_whitespace_collapsed():
    state = gov.cas_update(make_state(), {"currentSlice": "  T01\t slice \n one ",
                                          "executionProfile": "assisted"},
                           T0 + timedelta(minutes=1))
    assert gov.render_state_md(state) == expected(
        phase="Build", task="T01 slice one", status=f"direct-change — {DIRECT_REASON}",
        blockers="None", next_step=ACTIVE_NEXT, revision=1, lifecycle="active",
        profile="assisted")


def test_paused_work_shows_the_transition_reason_and_how_to_resume():
    state = gov.append_evidence(make_state(summary="Fix   the\nlogin"),
                                record("e1", "inspection", "observed"), T0)
    state = transition(state, "pause", reason="  waiting   for review ")
    assert gov.render_state_md(state) == expected(
        phase="Paused", task="Fix the login", status="paused — waiting for review",
        blockers="Lifecycle is paused",
        next_step=f"Resume exact work ID {WORK_ID} with ged_lifecycle before continuing.",
        revision=2, lifecycle="paused", evidence=1, transitions=1)


def test_resumed_work_shows_the_last_transition_reason():
    state = transition(transition(make_state(), "pause", reason="first"), "resume",
                       reason="second", transition_id="lifecycle-2")
    assert gov.render_state_md(state) == expected(
        phase="Build", task="Fix login", status="active — second", blockers="None",
        next_step=ACTIVE_NEXT, revision=2, lifecycle="active", transitions=2)


def test_closed_work_has_no_active_task_and_no_next_step():
    state = transition(gov.cas_update(make_state(), {"currentSlice": "T02"}, T0),
                       "abandon", reason="no longer needed")
    assert gov.render_state_md(state) == expected(
        phase="Closed", task="None", status="abandoned — no longer needed",
        blockers="Lifecycle is abandoned", next_step=CLOSED_NEXT, revision=2,
        lifecycle="abandoned", transitions=1)


def test_completed_work_renders_as_closed():
    state = make_state()
    state["evidence"] = [record("v", "verification", "satisfied")]
    state = transition(state, "complete", reason="done")
    assert gov.render_state_md(state) == expected(
        phase="Closed", task="None", status="completed — done",
        blockers="Lifecycle is completed", next_step=CLOSED_NEXT, revision=1,
        lifecycle="completed", evidence=1, transitions=1)


def test_a_required_decision_is_the_first_blocker_of_active_work():
    decision = gov.resolve_mode(**{**DIRECT_INPUT, "ambiguity": "decision-needed"})
    state = make_state(decision=decision, pendingMutations=[pending_mutation()],
                       pendingCommits=[pending_commit()])
    assert gov.render_state_md(state) == expected(
        phase="Build", task="Fix login",
        status=f"planned-change — {gov.REASONS['decision-needed'][1]}",
        blockers="A user-owned decision is required", next_step=ACTIVE_NEXT, revision=0,
        lifecycle="active", mutations=1, commits=1)


def test_a_pending_mutation_blocks_before_a_pending_commit():
    state = make_state(pendingMutations=[pending_mutation(), pending_mutation("mutation-2",
                                                                              tool_call_id="c2")],
                       pendingCommits=[pending_commit()])
    assert gov.render_state_md(state) == expected(
        phase="Build", task="Fix login", status=f"direct-change — {DIRECT_REASON}",
        blockers="A mutation is pending durable completion evidence", next_step=ACTIVE_NEXT,
        revision=0, lifecycle="active", mutations=2, commits=1)


def test_a_pending_commit_is_a_blocker():
    state = make_state(pendingCommits=[pending_commit()])
    assert gov.render_state_md(state) == expected(
        phase="Build", task="Fix login", status=f"direct-change — {DIRECT_REASON}",
        blockers="A commit is pending durable reconciliation", next_step=ACTIVE_NEXT,
        revision=0, lifecycle="active", commits=1)


def test_a_content_baseline_shows_its_digest_and_approvals_are_counted():
    approval = {"id": "a1", "summary": "ok", "kind": "plan", "status": "approved",
                "recordedAt": gov.format_time(T0)}
    baseline: dict[str, Any] = {**snapshot(), "digest": "9" * 64}
    state = make_state(contentBaseline=baseline, approvals=[approval, {**approval, "id": "a2"}])
    gov.validate_state(state)
    assert gov.render_state_md(state) == expected(
        phase="Build", task="Fix login", status=f"direct-change — {DIRECT_REASON}",
        blockers="None", next_step=ACTIVE_NEXT, revision=0, lifecycle="active", approvals=2,
        baseline="9" * 64)
