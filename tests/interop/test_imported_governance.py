"""Imported governance history never passes for GedWeb's own (issue 34 §4, docs/governance.md).

A checkout upload (ged_import, POST .../checkout) can bring evidence dated
before its work item existed, a "human" producer, an approved completion
and a completed lifecycle without GedWeb's lifecycle route. GedWeb keeps
those records as found, marks them as imported (per record: the import that
brought it), and counts none of them for the guard or a lifecycle step
until an operator trusts them (`ged_import --trust-governance`, `work
trust`), recorded as `ged_import:trusted-by:<name>` on the trust ledger.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from gedweb.checkout import archive, sync
from gedweb.lib import governance as gov
from governance import ledger, services
from governance.context import context_bundle
from governance.models import (
    EvidenceRecord,
    GovernanceRevision,
    GovernanceTrust,
    LedgerRecord,
    WorkItem,
)
from memory.models import Membership
from tests.governance.support import gov_url, work_url
from tests.interop.gedpi_trees import (
    PLANNED_ID,
    REPOSITORY,
    at,
    migrated_checkout,
    pretty,
    write_tree,
)

BEFORE_WORK = "2020-01-01T00:00:00.000Z"  # the work item was created at(1), in 2026
TRUSTED_BY = "ged_import:trusted-by:vera"


def record(ident: str, kind: str, outcome: str, *, source: str = "runtime",
           recorded_at: str | None = None, **extra: Any) -> dict[str, Any]:
    found = {"id": ident, "kind": kind, "source": source, **extra,
             "recordedAt": recorded_at or gov.format_time(at(3)),
             "summary": f"{kind} {outcome}", "outcome": outcome}
    return found


def planned(*records: dict[str, Any], approvals: list[dict[str, Any]] | None = None,
            lifecycle: str | None = None, revision_bump: int = 0) -> dict[str, Any]:
    """The planned work item's governance.json as a hostile checkout would carry it."""
    decision = gov.resolve_mode(minimum_mode="planned-change", ambiguity="sufficient",
                                risk="normal", clear_scope=True, bounded=True, reversible=True,
                                deterministic_check=True)
    state = gov.initial_state(work_id=PLANNED_ID, summary="Rework billing exports",
                              repository=REPOSITORY, decision=decision,
                              execution_profile="assisted", now=at(1))
    for item in records:
        state = gov.append_evidence(state, item, at(4))
    if approvals is not None:
        state = gov.cas_update(state, {"approvals": approvals}, at(5))
    if lifecycle is not None:
        state["lifecycle"] = lifecycle
    for _ in range(revision_bump):
        state = gov.cas_update(state, {"currentSlice": f"slice {state['revision']}"}, at(6))
    gov.validate_state(state, PLANNED_ID)
    return state


def checkout(root: Path, document: dict[str, Any]) -> Path:
    files = migrated_checkout()
    files[f".ged/runtime/{PLANNED_ID}/governance.json"] = pretty(document)
    files[f".ged/runtime/{PLANNED_ID}/STATE.md"] = gov.render_state_md(document).encode()
    return write_tree(root, files)


def ged_import(root: Path, project: str, *extra: str) -> dict[str, Any]:
    out = StringIO()
    call_command("ged_import", str(root), "--project", project, *extra, stdout=out,
                 stderr=StringIO())
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


def work_item() -> WorkItem:
    return WorkItem.objects.get(work_id=PLANNED_ID)


def detail(client: Any, project: str) -> dict[str, Any]:
    response = client.get(work_url(project, PLANNED_ID))
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


@pytest.fixture
def api(alpha: Any, client_for: Any) -> Any:
    return client_for(alpha.token)


# --- hole 1: evidence dated before its work item existed --------------------------------------


def test_evidence_dated_before_its_work_item_is_kept_flagged_and_counts_for_nothing(
        alpha, api, tmp_path):
    plan = record("ev-plan-early", "plan", "satisfied", recorded_at=BEFORE_WORK)
    ged_import(checkout(tmp_path / "c", planned(plan)), alpha.id)
    work = work_item()

    # Kept as found: the stored record is the checkout's, byte for byte.
    stored = EvidenceRecord.objects.get(work=work, evidence_id="ev-plan-early")
    assert json.loads(stored.record_json) == plan
    assert services.governance_document(work)["evidence"] == [plan]

    reason = services.guard_check(work=work, action="source-mutation")
    assert reason == (
        f"Ged work {PLANNED_ID}: plan evidence ev-plan-early was imported from a checkout "
        f"(governance revision 1, by ged_import:c) and not trusted by an operator; an operator "
        f"who has read it can trust it with `manage.py work trust {PLANNED_ID} --project "
        f"{alpha.id}`.")

    [shown] = detail(api, alpha.id)["provenance"]["evidence"]
    assert shown["id"] == "ev-plan-early"
    assert shown["claimed_at"] == BEFORE_WORK
    assert shown["time_flag"] == "dated before its work item was created"
    assert shown["imported"]["revision"] == 1
    assert shown["imported"]["author"] == "ged_import:c"
    assert shown["imported"]["trusted_by"] is None


def test_a_mutation_on_an_untrusted_imported_plan_is_refused_and_writes_nothing(
        alpha, api, tmp_path):
    ged_import(checkout(tmp_path / "c", planned(
        record("ev-plan-early", "plan", "satisfied", recorded_at=BEFORE_WORK))), alpha.id)
    work = work_item()
    response = api.post(gov_url(alpha.id, PLANNED_ID, "mutations"), {
        "expected_revision": 1, "request_id": "r1", "tool_call_id": "t1",
        "target": "billing/export.py"}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "governance_blocked"
    assert "plan evidence ev-plan-early was imported from a checkout" in response.json()[
        "message"]
    assert GovernanceRevision.objects.filter(work=work).count() == 1


# --- hole 2: a "human" producer ---------------------------------------------------------------


def test_imported_human_evidence_is_no_persons_word(alpha, api, tmp_path):
    plan = record("ev-plan-human", "plan", "satisfied", source="human", producerId="human")
    ged_import(checkout(tmp_path / "c", planned(plan)), alpha.id)
    work = work_item()
    assert "plan evidence ev-plan-human was imported from a checkout" in str(
        services.guard_check(work=work, action="source-mutation"))
    # Recording implementation rests on the plan too: refused, naming the record.
    response = api.post(gov_url(alpha.id, PLANNED_ID, "evidence"), {
        "expected_revision": 1, "policy": "record-implementation",
        "evidence": {"kind": "implementation", "source": "agent", "summary": "did it",
                     "outcome": "observed"}}, format="json")
    assert response.status_code == 409
    assert "plan evidence ev-plan-human was imported" in response.json()["message"]
    [shown] = detail(api, alpha.id)["provenance"]["evidence"]
    assert (shown["source"], shown["time_flag"]) == ("human", None)


# --- hole 3: an approved completion -----------------------------------------------------------


APPROVED = {"id": "approval-done", "kind": "completion", "status": "approved",
            "recordedAt": gov.format_time(at(5)), "summary": "Approved by the lead"}


def test_an_imported_approved_completion_does_not_let_the_work_complete(alpha, api, tmp_path):
    document = planned(
        record("ev-plan", "plan", "satisfied", source="human"),
        record("ev-verify", "verification", "satisfied", source="human"),
        approvals=[APPROVED])
    ged_import(checkout(tmp_path / "c", document), alpha.id)
    work = work_item()
    response = api.post(gov_url(alpha.id, PLANNED_ID, "lifecycle"), {
        "expected_revision": document["revision"], "action": "complete",
        "reason": "the lead approved it", "expected_lifecycle": "active"}, format="json")
    assert response.status_code == 409
    assert "plan evidence ev-plan was imported from a checkout" in response.json()["message"]
    assert services.governance_document(work)["lifecycle"] == "active"
    assert "plan evidence ev-plan was imported" in str(
        services.guard_check(work=work, action="commit"))
    [approval] = detail(api, alpha.id)["provenance"]["approvals"]
    assert approval["id"] == "approval-done"
    assert approval["status"] == "approved"
    assert approval["imported"]["trusted_by"] is None


def test_an_approval_gedweb_writes_carries_the_servers_time(alpha, api, tmp_path):
    ged_import(checkout(tmp_path / "c", planned(approvals=[APPROVED])), alpha.id)
    forged = {**APPROVED, "id": "approval-mine", "recordedAt": BEFORE_WORK}
    response = api.post(gov_url(alpha.id, PLANNED_ID, "update"), {
        "expected_revision": 1, "changes": {"approvals": [APPROVED, forged]}}, format="json")
    assert response.status_code == 200, response.json()
    kept, written = response.json()["approvals"]
    assert kept == APPROVED  # unchanged: its time as found
    assert written["recordedAt"] != BEFORE_WORK
    assert written["recordedAt"] == response.json()["updatedAt"]
    # The imported one is still shown as imported; GedWeb's own is not.
    shown = detail(api, alpha.id)["provenance"]["approvals"]
    assert [item["id"] for item in shown] == ["approval-done"]


# --- hole 4: a completion without the lifecycle route -----------------------------------------


def test_an_imported_completion_without_the_lifecycle_route_is_shown_as_imported(
        alpha, api, tmp_path, django_user_model):
    ged_import(checkout(tmp_path / "c", planned(
        record("ev-plan", "plan", "satisfied"), approvals=[APPROVED], lifecycle="completed")),
        alpha.id)
    work = work_item()
    reason = services.guard_check(work=work, action="metadata-mutation")
    assert reason == (
        f"Ged work {PLANNED_ID} has lifecycle completed; only active work can authorize "
        "mutation. Its lifecycle completed was imported from a checkout without GedWeb's "
        "lifecycle route (governance revision 2, by ged_import:c) and is not trusted by an "
        "operator.")
    lifecycle = detail(api, alpha.id)["provenance"]["lifecycle"]
    assert lifecycle["lifecycle"] == "completed"
    assert lifecycle["route"] is False
    assert lifecycle["imported"]["trusted_by"] is None

    bundle = context_bundle(project=alpha.project, work=work).text
    assert "Imported lifecycle: Its lifecycle completed was imported from a checkout" in bundle

    user = django_user_model.objects.create_user("vera", "vera@example.org", "pw-unused-1")
    Membership.objects.create(user=user, project=alpha.project)
    page = Client()
    page.force_login(user)
    html = page.get(f"/p/{alpha.id}/work/{PLANNED_ID}/").content.decode()
    assert "imported without GedWeb's lifecycle route" in html
    assert "not trusted by an operator" in html


def test_gedwebs_own_completion_is_not_marked_imported(alpha, api, tmp_path):
    ged_import(checkout(tmp_path / "c", planned()), alpha.id)
    response = api.post(gov_url(alpha.id, PLANNED_ID, "lifecycle"), {
        "expected_revision": 0, "action": "abandon", "reason": "dropped",
        "expected_lifecycle": "active"}, format="json")
    assert response.status_code == 200
    assert detail(api, alpha.id)["provenance"]["lifecycle"] is None
    assert "imported" not in str(services.guard_check(work=work_item(),
                                                      action="metadata-mutation"))


# --- the trust path ---------------------------------------------------------------------------


def test_trust_governance_lets_the_guard_pass_and_is_on_the_ledger(alpha, api, tmp_path):
    root = checkout(tmp_path / "c", planned(
        record("ev-plan", "plan", "satisfied", source="human")))
    result = ged_import(root, alpha.id, "--trust-governance", PLANNED_ID, "--by", "vera")
    work = work_item()
    assert services.guard_check(work=work, action="source-mutation") is None

    trust = GovernanceTrust.objects.get(work=work)
    assert (trust.revision, trust.trusted_by) == (1, TRUSTED_BY)
    assert result["trusted_governance"] == [{
        "work_id": PLANNED_ID, "revision": 1, "document_sha256": trust.document_sha256,
        "trusted_by": TRUSTED_BY}]
    on_ledger = LedgerRecord.objects.get(kind="governance_trust", row_id=trust.pk)
    assert on_ledger.digest == ledger.digest("governance_trust", trust)
    assert ledger.ledger_verify(alpha.project)[1] == []
    [shown] = detail(api, alpha.id)["provenance"]["evidence"]
    assert shown["imported"]["trusted_by"] == TRUSTED_BY

    # The same tree and option again write nothing.
    again = ged_import(root, alpha.id, "--trust-governance", PLANNED_ID, "--by", "vera")
    assert again["created"] == {}
    assert GovernanceTrust.objects.filter(work=work).count() == 1


def test_a_later_import_is_not_trusted_by_an_earlier_trust(alpha, tmp_path):
    first = planned(record("ev-plan", "plan", "satisfied"))
    ged_import(checkout(tmp_path / "a", first), alpha.id, "--trust-governance", PLANNED_ID,
               "--by", "vera")
    later = planned(record("ev-plan", "plan", "satisfied"),
                    record("ev-plan-2", "plan", "satisfied"), revision_bump=1)
    ged_import(checkout(tmp_path / "b", later), alpha.id)
    assert "plan evidence ev-plan-2 was imported from a checkout (governance revision 3, by " \
           "ged_import:b)" in str(services.guard_check(work=work_item(),
                                                      action="source-mutation"))


def test_work_trust_trusts_an_upload(alpha, api, tmp_path):
    root = checkout(tmp_path / "c", planned(record("ev-plan", "plan", "satisfied")))
    response = api.post(f"/v1/projects/{alpha.id}/checkout",
                        data=archive.pack(sync.collect_layout(root)),
                        content_type="application/gzip")
    assert response.status_code == 200, response.json()
    work = work_item()
    uploader = GovernanceRevision.objects.get(work=work, revision=1).author
    assert (f"plan evidence ev-plan was imported from a checkout (governance revision 1, by "
            f"{uploader})") in str(services.guard_check(work=work, action="source-mutation"))
    out = StringIO()
    call_command("work", "trust", PLANNED_ID, "--project", alpha.id, "--by", "otto", stdout=out)
    assert json.loads(out.getvalue())["trusted"]["trusted_by"] == "ged_import:trusted-by:otto"
    assert services.guard_check(work=work, action="source-mutation") is None
    # Trusting again changes nothing.
    out = StringIO()
    call_command("work", "trust", PLANNED_ID, "--project", alpha.id, "--by", "otto", stdout=out)
    assert json.loads(out.getvalue())["trusted"] is None
    assert GovernanceTrust.objects.filter(work=work).count() == 1


def test_work_trust_refuses_work_that_imported_nothing(alpha, api):
    response = api.post(work_url(alpha.id), {
        "summary": "Fix it", "minimum_mode": "direct-change", "ambiguity": "sufficient",
        "risk": "low", "clear_scope": True, "bounded": True, "reversible": True,
        "deterministic_check": True}, format="json")
    work_id = response.json()["work_id"]
    with pytest.raises(CommandError) as refused:
        call_command("work", "trust", work_id, "--project", alpha.id, "--by", "otto",
                     stdout=StringIO())
    assert str(refused.value) == f"Ged work {work_id} has no imported governance to trust"
    assert not GovernanceTrust.objects.exists()


def test_trust_governance_of_a_work_item_not_in_the_checkout_writes_nothing(alpha, tmp_path):
    root = checkout(tmp_path / "c", planned())
    with pytest.raises(CommandError) as refused:
        ged_import(root, alpha.id, "--trust-governance", "nope", "--by", "vera")
    assert str(refused.value) == ("--trust-governance nope: the checkout has no governance.json "
                                  "of that work item to trust; nothing was imported")
    assert not WorkItem.objects.exists()


def test_a_trust_inserted_behind_gedwebs_back_is_found_by_the_ledger(alpha, tmp_path):
    ged_import(checkout(tmp_path / "c", planned(record("ev-plan", "plan", "satisfied"))),
               alpha.id)
    work = work_item()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO governance_governancetrust "
            "(work_id, revision, document_sha256, trusted_by, trusted_at) "
            "VALUES (%s, 1, %s, %s, %s)",
            [work.pk, "0" * 64, TRUSTED_BY, "2026-12-07 10:00:00"])
    findings = ledger.ledger_verify(alpha.project)[1]
    assert [f.table for f in findings] == ["governance_governancetrust"]
    # A trust that is not on the ledger counts for nothing.
    assert "plan evidence ev-plan was imported from a checkout" in str(
        services.guard_check(work=work, action="source-mutation"))
