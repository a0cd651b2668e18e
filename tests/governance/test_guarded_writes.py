"""Guarded writes apply the accepted plan's binding, and pointers need the guard."""

from __future__ import annotations

from gedweb.lib.fingerprint import file_set_fingerprint
from gedweb.lib.governance import PLANNED_TEMPLATES
from governance import services
from governance.models import ActiveWork, GovernanceRevision
from tests.governance.support import (
    add_evidence,
    assert_error,
    commit_body,
    evidence,
    gov_url,
    revision_of,
    stored,
    work_url,
)


def _accept_plan(api, project_id, work):
    fingerprint = file_set_fingerprint(
        {f".ged/work/{work.work_id}/{n}": t.encode() for n, t in PLANNED_TEMPLATES.items()}
    )
    body = {
        "expected_revision": 0,
        "policy": "record-satisfied",
        "evidence": evidence("plan", "satisfied", binding={"type": "plan-content", **fingerprint}),
    }
    response = api.post(gov_url(project_id, work.work_id, "evidence"), body, format="json")
    assert response.status_code == 200, response.json()


def test_a_mutation_is_refused_once_the_accepted_plan_bytes_change(api, alpha, planned_work):
    _accept_plan(api, alpha.id, planned_work)
    begin = {"expected_revision": 1, "request_id": "r", "tool_call_id": "c", "target": "x.py"}
    url = gov_url(alpha.id, planned_work.work_id, "mutations")
    edited = api.put(work_url(alpha.id, planned_work.work_id, "files", "SPEC.md"),
                     {"content": "# Spec\n\nChanged after acceptance.\n"}, format="json")
    assert edited.status_code == 200
    refused = api.post(url, begin, format="json")
    assert refused.status_code == 409
    assert refused.json()["code"] == "governance_blocked"
    assert "plan bytes changed after acceptance" in refused.json()["message"]
    assert GovernanceRevision.objects.filter(work=planned_work).count() == 2


def test_a_mutation_is_allowed_while_the_plan_bytes_are_unchanged(api, alpha, planned_work):
    _accept_plan(api, alpha.id, planned_work)
    begin = {"expected_revision": 1, "request_id": "r", "tool_call_id": "c", "target": "x.py"}
    allowed = api.post(gov_url(alpha.id, planned_work.work_id, "mutations"), begin,
                       format="json")
    assert allowed.status_code == 200
    assert len(allowed.json()["pendingMutations"]) == 1


def _verified_then_spec_changed(api, alpha, work) -> None:
    """Plan accepted with its bytes bound, verification satisfied, then SPEC.md edited."""
    _accept_plan(api, alpha.id, work)
    add_evidence(work, "verification", "satisfied")
    edited = api.put(work_url(alpha.id, work.work_id, "files", "SPEC.md"),
                     {"content": "# Spec\n\nChanged after acceptance.\n"}, format="json")
    assert edited.status_code == 200


def _accept_the_current_plan_again(work) -> None:
    fingerprint = services.plan_fingerprint(work)
    add_evidence(work, "plan", "satisfied", binding={"type": "plan-content", **fingerprint})
    add_evidence(work, "verification", "satisfied")


def _lifecycle_complete(api, alpha, work):
    return api.post(gov_url(alpha.id, work.work_id, "lifecycle"), {
        "expected_revision": revision_of(work), "action": "complete", "reason": "done",
        "expected_lifecycle": "active"}, format="json")


def test_a_commit_begin_is_refused_once_the_accepted_plan_bytes_change(api, alpha, planned_work):
    _verified_then_spec_changed(api, alpha, planned_work)
    before = stored(planned_work)
    body = assert_error(api.post(gov_url(alpha.id, planned_work.work_id, "commits"),
                                 commit_body(revision_of(planned_work)), format="json"),
                        409, "governance_blocked")
    assert "plan bytes changed after acceptance" in body["message"]
    assert stored(planned_work) == before

    _accept_the_current_plan_again(planned_work)
    allowed = api.post(gov_url(alpha.id, planned_work.work_id, "commits"),
                       commit_body(revision_of(planned_work)), format="json")
    assert allowed.status_code == 200, allowed.json()
    assert len(allowed.json()["pendingCommits"]) == 1


def test_lifecycle_complete_is_refused_once_the_accepted_plan_bytes_change(
    api, alpha, planned_work
):
    _verified_then_spec_changed(api, alpha, planned_work)
    before = stored(planned_work)
    body = assert_error(_lifecycle_complete(api, alpha, planned_work), 409,
                        "governance_blocked")
    assert "plan bytes changed after acceptance" in body["message"]
    assert stored(planned_work) == before
    assert services.governance_document(planned_work)["lifecycle"] == "active"

    _accept_the_current_plan_again(planned_work)
    completed = _lifecycle_complete(api, alpha, planned_work)
    assert completed.status_code == 200, completed.json()
    assert completed.json()["lifecycle"] == "completed"


def test_a_session_cannot_open_a_pointer_to_paused_work(api, alpha, direct_work):
    services.lifecycle_transition(work=direct_work, expected_revision=0, action="pause",
                                  reason="waiting", expected_lifecycle="active", author="t")
    response = api.put(f"/v1/projects/{alpha.id}/sessions/s-1/active-work",
                       {"work_id": direct_work.work_id, "operation": "open",
                        "request_id": "req-1"}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "governance_blocked"
    assert not ActiveWork.objects.exists()
