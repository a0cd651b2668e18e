"""GedPi's STATE.md projection, rendered on request from the current revision."""

from __future__ import annotations

from gedweb.lib.governance import render_state_md
from governance import services
from tests.governance.support import evidence, gov_url


def _state_md(api, project_id, work):
    response = api.get(gov_url(project_id, work.work_id, "state.md"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/markdown")
    return response


def test_open_work_projects_as_build_with_no_blockers(api, alpha, direct_work):
    response = _state_md(api, alpha.id, direct_work)
    text = response.content.decode()
    assert text.startswith("# State\n\nCurrent Phase: Build\n")
    assert "Active Task: Fix the login button\n" in text
    assert "Blockers: None\n" in text
    assert "- Revision: 0\n" in text
    assert "- Content baseline: legacy-unbound\n" in text
    assert response["X-Governance-Revision"] == "0"
    assert text == render_state_md(services.governance_document(direct_work))


def test_completed_work_projects_as_closed(api, alpha, planned_work):
    write = dict(work=planned_work, author="t")
    services.evidence_append(expected_revision=0, policy="record-satisfied",
                             evidence=evidence("plan", "satisfied"), **write)
    services.evidence_append(expected_revision=1, policy="record-satisfied",
                             evidence=evidence("verification", "satisfied"), **write)
    services.lifecycle_transition(expected_revision=2, action="pause", reason="lunch",
                                  expected_lifecycle="active", **write)
    services.lifecycle_transition(expected_revision=3, action="resume", reason="back",
                                  expected_lifecycle="paused", **write)
    services.lifecycle_transition(expected_revision=4, action="complete", reason="shipped",
                                  expected_lifecycle="active", **write)
    response = _state_md(api, alpha.id, planned_work)
    text = response.content.decode()
    assert "Current Phase: Closed\n" in text
    assert "Active Task: None\n" in text
    assert "Status Summary: completed — shipped\n" in text
    assert "Blockers: Lifecycle is completed\n" in text
    assert (
        "Next Step: No further lifecycle transition or repository mutation is authorized.\n"
        in text
    )
    assert "- Lifecycle transitions: 3\n" in text
    assert response["X-Governance-Revision"] == "5"


def test_paused_work_names_the_resume_step(api, alpha, direct_work):
    services.lifecycle_transition(work=direct_work, expected_revision=0, action="pause",
                                  reason="waiting", expected_lifecycle="active", author="t")
    text = _state_md(api, alpha.id, direct_work).content.decode()
    assert "Current Phase: Paused\n" in text
    assert f"Next Step: Resume exact work ID {direct_work.work_id} with ged_lifecycle" in text
