"""Work items over HTTP (contract §5; gedpi-behaviour.md §7.1, §7.2, §7.5, §7.7).

Opening work, META, the mode artifacts, versioned work files and task
artifacts, and project scoping. Each test checks the answer and the rows.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from gedweb.lib import governance as gov
from governance import services
from governance.models import (
    ActiveWork,
    EvidenceRecord,
    GovernanceRevision,
    TaskArtifact,
    WorkFile,
    WorkItem,
)
from tests.governance.support import (
    CANONICAL_TIME,
    DIRECT,
    HEX64,
    PLANNED,
    WORK_ID,
    assert_error,
    gov_url,
    open_work,
    stored,
    transition,
    work_url,
)


def open_via_api(api, project_id: str = "alpha", **body):
    return api.post(work_url(project_id), body, format="json")


def call(api, method: str, url: str, body: dict):
    """GET sends no body (it would become the query string); writes send JSON."""
    if method == "get":
        return api.get(url)
    return getattr(api, method)(url, body, format="json")


def assert_nothing_created() -> None:
    assert WorkItem.objects.count() == 0
    assert GovernanceRevision.objects.count() == 0
    assert EvidenceRecord.objects.count() == 0
    assert WorkFile.objects.count() == 0
    assert ActiveWork.objects.count() == 0


# --- opening work ----------------------------------------------------------------------------


def test_opening_direct_work_answers_201_with_work_id_meta_and_governance(api, alpha):
    response = open_via_api(api, **DIRECT)
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {"work_id", "meta", "governance"}
    assert WORK_ID.match(body["work_id"])
    assert body["work_id"].startswith("fix-the-login-button-")
    governance = body["governance"]
    assert governance["revision"] == 0
    assert governance["lifecycle"] == "active"
    assert governance["approvals"] == [] and governance["evidence"] == []
    assert governance["decision"]["mode"] == "direct-change"
    assert governance["decision"]["reasonCode"] == "direct-change-eligible"
    work = WorkItem.objects.get(work_id=body["work_id"])
    assert (work.project_id, work.mode, work.summary) == ("alpha", "direct-change",
                                                          "Fix the login button")
    revisions = GovernanceRevision.objects.filter(work=work)
    assert list(revisions.values_list("revision", flat=True)) == [0]
    assert not EvidenceRecord.objects.filter(work=work).exists()


def test_opened_direct_work_has_exactly_direct_md(api):
    body = open_via_api(api, **DIRECT).json()
    work = WorkItem.objects.get(work_id=body["work_id"])
    assert list(WorkFile.objects.filter(work=work).values_list("name", "version")) == [
        ("DIRECT.md", 1)
    ]


def test_direct_md_holds_gedpis_text(api):
    body = open_via_api(api, **{**DIRECT, "deterministic_check": True}).json()
    response = api.get(work_url("alpha", body["work_id"], "files", "DIRECT.md"))
    assert response.status_code == 200
    expected = gov.render_direct_md(body["work_id"], "Fix the login button",
                                    body["governance"]["decision"], True)
    assert response.json()["content"] == expected
    assert response.json()["version"] == 1
    assert expected.startswith(f"# Direct change\n\n- Work ID: {body['work_id']}\n")


def test_opened_planned_work_has_exactly_the_three_templates_byte_identical(api):
    response = open_via_api(api, **PLANNED)
    assert response.status_code == 201
    body = response.json()
    work = WorkItem.objects.get(work_id=body["work_id"])
    rows = {row.name: (row.version, row.content) for row in WorkFile.objects.filter(work=work)}
    assert rows == {name: (1, text) for name, text in gov.PLANNED_TEMPLATES.items()}
    for name, text in gov.PLANNED_TEMPLATES.items():
        served = api.get(work_url("alpha", body["work_id"], "files", name)).json()["content"]
        assert served.encode("utf-8") == text.encode("utf-8")
    governance = body["governance"]
    assert (governance["revision"], governance["lifecycle"]) == (0, "active")
    assert governance["approvals"] == [] and governance["evidence"] == []
    assert governance["decision"]["reasonCode"] == "user-requested-plan"


def test_meta_is_gedpis_shape_and_matches_governance(api):
    body = open_via_api(api, **DIRECT, branch="main", base_head="a" * 40).json()
    meta, governance = body["meta"], body["governance"]
    assert meta == {"schemaVersion": 1, "workId": body["work_id"],
                    "summary": "Fix the login button", "createdAt": governance["createdAt"],
                    "branch": "main", "baseHead": "a" * 40}
    assert CANONICAL_TIME.match(meta["createdAt"])
    assert governance["repository"]["branch"] == "main"
    assert governance["repository"]["baseHead"] == "a" * 40
    assert governance["summary"] == meta["summary"]
    assert governance["workId"] == body["work_id"]


def test_the_summary_is_normalised_before_it_names_the_work(api):
    body = open_via_api(api, **{**DIRECT, "summary": "  feat/\x1badd \t\n" + "x" * 300}).json()
    expected = gov.normalize_summary("  feat/\x1badd \t\n" + "x" * 300)
    assert body["meta"]["summary"] == expected
    assert len(expected) == 240
    assert body["work_id"].startswith("feat-add-x")
    assert WorkItem.objects.get(work_id=body["work_id"]).summary == expected


def test_execution_profile_defaults_to_solo_and_can_be_chosen(api):
    solo = open_via_api(api, **DIRECT).json()
    coordinated = open_via_api(api, **DIRECT, execution_profile="coordinated").json()
    assert solo["governance"]["executionProfile"] == "solo"
    assert coordinated["governance"]["executionProfile"] == "coordinated"
    assert services.governance_document(
        WorkItem.objects.get(work_id=coordinated["work_id"]))["executionProfile"] == "coordinated"


def test_an_escalation_opens_planned_work_with_the_reason_embedded(api):
    response = open_via_api(api, **DIRECT, escalation_reason="touches payments")
    assert response.status_code == 201
    decision = response.json()["governance"]["decision"]
    assert decision["reasonCode"] == "coordinator-escalation"
    assert "touches payments" in decision["reason"]
    work = WorkItem.objects.get(work_id=response.json()["work_id"])
    assert set(WorkFile.objects.filter(work=work).values_list("name", flat=True)) == {
        "SPEC.md", "TASKS.md", "TESTS.md"}


def test_ineligible_direct_work_opens_as_planned_change(api):
    response = open_via_api(api, **{**DIRECT, "reversible": False})
    assert response.status_code == 201
    assert response.json()["governance"]["decision"]["reasonCode"] == "direct-change-ineligible"
    assert WorkItem.objects.get().mode == "planned-change"


def test_reading_opened_work_back_gives_the_identical_document(api):
    opened = open_via_api(api, **PLANNED).json()
    response = api.get(work_url("alpha", opened["work_id"]))
    assert response.status_code == 200
    read = response.json()
    # Nothing of work GedWeb opened was imported from a checkout.
    assert read.pop("provenance") == {"evidence": [], "approvals": [],
                                      "lifecycle_transitions": [], "lifecycle": None}
    assert read == opened
    assert list(read["governance"]) == list(opened["governance"])


def test_a_decision_needed_open_is_422_and_creates_nothing(api):
    response = open_via_api(api, **{**DIRECT, "ambiguity": "decision-needed"})
    assert_error(response, 422, "decision_required")
    assert_nothing_created()


@pytest.mark.parametrize("field", ["summary", "minimum_mode", "ambiguity", "risk", "clear_scope",
                                   "bounded", "reversible", "deterministic_check"])
def test_an_open_without_a_governance_field_is_400_and_creates_nothing(api, field):
    body = {k: v for k, v in DIRECT.items() if k != field}
    error = assert_error(open_via_api(api, **body), 400, "validation_error")
    assert field in error["fields"]
    assert_nothing_created()


@pytest.mark.parametrize("field", ["clear_scope", "bounded", "reversible", "deterministic_check"])
@pytest.mark.parametrize("value", ["true", 1, None])
def test_an_open_with_a_non_boolean_flag_is_400_and_creates_nothing(api, field, value):
    error = assert_error(open_via_api(api, **{**DIRECT, field: value}), 400, "validation_error")
    assert field in error["fields"]
    assert_nothing_created()


@pytest.mark.parametrize(("field", "value"), [
    ("minimum_mode", "read-only"), ("ambiguity", "unclear"), ("risk", "extreme"),
    ("execution_profile", "team"), ("summary", 42), ("summary", " \t\x00 "),
    ("escalation_reason", "x" * 241), ("branch", 7),
])
def test_an_open_with_a_bad_value_is_400_and_creates_nothing(api, field, value):
    assert_error(open_via_api(api, **{**DIRECT, field: value}), 400, "validation_error")
    assert_nothing_created()


@pytest.mark.parametrize("field", ["work_id", "mode", "lifecycle", "revision", "minimumMode"])
def test_an_open_with_an_unknown_field_is_400_and_creates_nothing(api, field):
    error = assert_error(open_via_api(api, **{**DIRECT, field: "x"}), 400, "validation_error")
    assert field in error["fields"]
    assert_nothing_created()


def test_an_open_with_a_non_json_body_is_refused_and_creates_nothing(api):
    response = api.generic("POST", work_url("alpha"), b"{not json",
                           content_type="application/json")
    assert_error(response, 400, "bad_request")
    assert_nothing_created()


# --- META is immutable ----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["put", "patch", "delete", "post"])
def test_meta_cannot_be_changed_or_deleted(api, direct_work, method):
    before = stored(direct_work)
    body_before = api.get(work_url("alpha", direct_work.work_id)).json()
    response = getattr(api, method)(work_url("alpha", direct_work.work_id),
                                    {"summary": "rewritten"}, format="json")
    assert_error(response, 405, "method_not_allowed")
    assert "GET" in response["Allow"]
    assert api.get(work_url("alpha", direct_work.work_id)).json() == body_before
    assert stored(direct_work) == before
    assert WorkItem.objects.get(pk=direct_work.pk).summary == "Fix the login button"


@pytest.mark.parametrize(("method", "suffix"), [
    ("put", "governance"), ("delete", "governance"), ("patch", "governance"),
    ("put", "governance/revisions/0"), ("delete", "governance/revisions/0"),
    ("delete", "files/DIRECT.md"), ("delete", "tasks/T01/BRIEF.md"),
])
def test_append_only_governance_data_answers_405(api, direct_work, method, suffix):
    before = stored(direct_work)
    response = getattr(api, method)(work_url("alpha", direct_work.work_id, suffix), {},
                                    format="json")
    assert_error(response, 405, "method_not_allowed")
    assert stored(direct_work) == before


# --- scoping ---------------------------------------------------------------------------------

WORK_ROUTES = [
    ("get", ""), ("get", "files/DIRECT.md"), ("put", "files/DIRECT.md"),
    ("get", "tasks/T01/BRIEF.md"), ("put", "tasks/T01/BRIEF.md"),
    ("get", "governance"), ("get", "governance/revisions"), ("get", "governance/revisions/0"),
    ("post", "governance/evidence"), ("post", "governance/update"),
    ("post", "governance/mutations"), ("post", "governance/mutations/m1/complete"),
    ("post", "governance/mutations/m1/clear"), ("post", "governance/commits"),
    ("post", "governance/commits/c1/complete"), ("post", "governance/commits/c1/clear"),
    ("post", "governance/lifecycle"), ("post", "governance/guard"),
]
WRITE_BODY = {"expected_revision": 0, "content": "# hijack\n", "action": "commit",
              "evidence": {"kind": "inspection", "source": "agent", "summary": "x",
                           "outcome": "observed"}}


NOT_FOUND = {"code": "not_found", "message": "not found"}


def test_another_projects_token_gets_404_on_every_work_route(client_for, alpha, beta,
                                                             direct_work):
    before = stored(direct_work)
    intruder = client_for(beta.token)
    for method, suffix in WORK_ROUTES:
        response = call(intruder, method, work_url("alpha", direct_work.work_id, suffix),
                        WRITE_BODY)
        assert (response.status_code, response.json()) == (404, NOT_FOUND), (method, suffix)
    assert stored(direct_work) == before


def test_a_work_item_of_another_project_is_404_under_ones_own_project(client_for, alpha, beta,
                                                                       direct_work):
    before = stored(direct_work)
    neighbour = client_for(beta.token)
    for method, suffix in WORK_ROUTES:
        response = call(neighbour, method, work_url("beta", direct_work.work_id, suffix),
                        WRITE_BODY)
        assert (response.status_code, response.json()) == (404, NOT_FOUND), (method, suffix)
    assert stored(direct_work) == before


def test_an_unknown_work_id_is_404_on_every_work_route(api, direct_work):
    before = stored(direct_work)
    unknown = f"fix-the-login-button-20260810050000000-{'0' * 32}"
    for method, suffix in WORK_ROUTES:
        response = call(api, method, work_url("alpha", unknown, suffix), WRITE_BODY)
        assert (response.status_code, response.json()) == (404, NOT_FOUND), (method, suffix)
    assert WorkItem.objects.count() == 1
    assert stored(direct_work) == before


def test_a_work_list_shows_only_the_projects_own_work(api, client_for, alpha, beta, direct_work):
    open_work(beta.project)
    items = api.get(work_url("alpha")).json()["items"]
    assert [item["work_id"] for item in items] == [direct_work.work_id]
    assert WorkItem.objects.count() == 2


# --- listing ---------------------------------------------------------------------------------


def test_work_is_listed_by_work_id_with_pagination(api, alpha):
    ids = sorted(open_work(alpha.project, summary=f"task {n}").work_id for n in range(5))
    first = api.get(work_url("alpha"), {"limit": 2})
    assert first.status_code == 200
    page = first.json()
    assert [item["work_id"] for item in page["items"]] == ids[:2]
    assert page["next_cursor"] == ids[1]
    second = api.get(work_url("alpha"), {"limit": 2, "after": page["next_cursor"]}).json()
    assert [item["work_id"] for item in second["items"]] == ids[2:4]
    third = api.get(work_url("alpha"), {"limit": 2, "after": second["next_cursor"]}).json()
    assert [item["work_id"] for item in third["items"]] == ids[4:]
    assert third["next_cursor"] is None
    assert set(page["items"][0]) == {"work_id", "summary", "mode", "created_at", "author"}


@pytest.mark.parametrize("query", [{"limit": -1}, {"limit": "1.5"}, {"limit": "x"}, {"page": 2}])
def test_a_bad_work_list_query_is_400(api, direct_work, query):
    assert_error(api.get(work_url("alpha"), query), 400, "validation_error")


# --- work files ------------------------------------------------------------------------------


def file_url(work, name: str) -> str:
    return work_url("alpha", work.work_id, "files", name)


def test_a_file_put_adds_a_version_and_keeps_the_earlier_ones(api, planned_work):
    response = api.put(file_url(planned_work, "SPEC.md"), {"content": "# Spec\n\nv2\n"},
                       format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["version"], response.json()["content"]) == (2, "# Spec\n\nv2\n")
    assert api.get(file_url(planned_work, "SPEC.md")).json()["content"] == "# Spec\n\nv2\n"
    first = api.get(file_url(planned_work, "SPEC.md"), {"version": 1})
    assert first.json()["content"] == gov.SPEC_TEMPLATE
    assert list(WorkFile.objects.filter(work=planned_work, name="SPEC.md")
                .values_list("version", "content")) == [(1, gov.SPEC_TEMPLATE),
                                                        (2, "# Spec\n\nv2\n")]


def test_a_work_file_over_a_million_characters_is_refused_on_every_path(api, planned_work):
    too_long = "x" * (services.MAX_WORK_FILE_CHARS + 1)
    before = list(WorkFile.objects.values_list("work_id", "name", "version"))
    with pytest.raises(ValidationError) as refused:
        services.work_file_import(work=planned_work, name="SPEC.md", content=too_long,
                                  author="importer")
    assert refused.value.message_dict == {"content": ["must be at most 1,000,000 characters"]}
    with pytest.raises(ValidationError):
        services.task_artifact_import(work=planned_work, task_id="T1", name="BRIEF.md",
                                      content=too_long, author="importer")
    assert list(WorkFile.objects.values_list("work_id", "name", "version")) == before
    assert not TaskArtifact.objects.exists()
    exactly = "x" * services.MAX_WORK_FILE_CHARS
    assert services.work_file_import(work=planned_work, name="SPEC.md", content=exactly,
                                     author="importer") is True


def test_a_file_put_is_not_a_governance_revision(api, direct_work):
    api.put(file_url(direct_work, "DIRECT.md"), {"content": "# Direct change\n"}, format="json")
    assert stored(direct_work)["revisions"][-1][0] == 0


def test_a_file_put_records_its_author(api, alpha, direct_work):
    response = api.put(file_url(direct_work, "DIRECT.md"), {"content": "x\n"}, format="json")
    row = WorkFile.objects.get(work=direct_work, version=2)
    assert response.json()["author"] == row.author
    assert row.author != "seed"


def test_a_file_put_with_the_current_version_is_accepted(api, direct_work):
    response = api.put(file_url(direct_work, "DIRECT.md"),
                       {"content": "new\n", "expected_version": 1}, format="json")
    assert response.status_code == 200
    assert WorkFile.objects.filter(work=direct_work).count() == 2


@pytest.mark.parametrize("expected_version", [0, 2, 7])
def test_a_file_put_with_a_stale_expected_version_is_409(api, direct_work, expected_version):
    before = stored(direct_work)
    response = api.put(file_url(direct_work, "DIRECT.md"),
                       {"content": "new\n", "expected_version": expected_version}, format="json")
    assert_error(response, 409, "conflict")
    assert stored(direct_work) == before


@pytest.mark.parametrize("method", ["get", "put"])
@pytest.mark.parametrize("name", ["SPEC.md", "TASKS.md", "TESTS.md"])
def test_planned_files_are_a_conflict_on_direct_work(api, direct_work, method, name):
    before = stored(direct_work)
    response = call(api, method, file_url(direct_work, name), {"content": "# Spec\n"})
    assert_error(response, 409, "conflict")
    assert stored(direct_work) == before


@pytest.mark.parametrize("method", ["get", "put"])
def test_direct_md_is_a_conflict_on_planned_work(api, planned_work, method):
    before = stored(planned_work)
    response = call(api, method, file_url(planned_work, "DIRECT.md"), {"content": "x\n"})
    assert_error(response, 409, "conflict")
    assert stored(planned_work) == before


@pytest.mark.parametrize("method", ["get", "put"])
@pytest.mark.parametrize("name", ["NOTES.md", "META.json", "governance.json", "spec.md",
                                  "STATE.md"])
def test_an_unknown_file_name_is_404(api, planned_work, method, name):
    before = stored(planned_work)
    response = call(api, method, file_url(planned_work, name), {"content": "x\n"})
    assert_error(response, 404, "not_found")
    assert stored(planned_work) == before


def test_an_unknown_file_version_is_404(api, planned_work):
    assert_error(api.get(file_url(planned_work, "SPEC.md"), {"version": 2}), 404, "not_found")


@pytest.mark.parametrize("body", [{}, {"content": 5}, {"content": "x", "version": 3},
                                  {"content": "x", "expected_version": "1"}])
def test_a_malformed_file_put_is_400(api, planned_work, body):
    before = stored(planned_work)
    assert_error(api.put(file_url(planned_work, "SPEC.md"), body, format="json"), 400,
                 "validation_error")
    assert stored(planned_work) == before


def test_a_file_put_on_paused_work_is_governance_blocked(api, planned_work):
    transition(planned_work, "pause")
    before = stored(planned_work)
    response = api.put(file_url(planned_work, "SPEC.md"), {"content": "# Spec\n"}, format="json")
    body = assert_error(response, 409, "governance_blocked")
    assert "has lifecycle paused" in body["message"]
    assert stored(planned_work) == before


def test_a_file_put_on_terminal_work_is_governance_blocked(api, direct_work):
    transition(direct_work, "abandon")
    before = stored(direct_work)
    response = api.put(file_url(direct_work, "DIRECT.md"), {"content": "x\n"}, format="json")
    assert_error(response, 409, "governance_blocked")
    assert stored(direct_work) == before


def test_a_file_put_on_planned_work_needs_no_plan_evidence(api, planned_work):
    response = api.put(file_url(planned_work, "TASKS.md"), {"content": "# Tasks\n"},
                       format="json")
    assert response.status_code == 200
    assert WorkFile.objects.filter(work=planned_work, name="TASKS.md").count() == 2


# --- task artifacts (§7.7) -------------------------------------------------------------------


def task_url(work, task_id: str, name: str) -> str:
    return work_url("alpha", work.work_id, "tasks", task_id, name)


@pytest.mark.parametrize(("name", "content"), [
    ("BRIEF.md", "# T01: Login\n\n## Objective\n\nFix it.\n"),
    ("HISTORY.json", '[{"summary": "first attempt"}]'),
    ("RECOVERY.md", "# Recovery\n\n- Prior attempts: 1\n"),
])
def test_a_task_artifact_can_be_written_and_read(api, planned_work, name, content):
    response = api.put(task_url(planned_work, "T01", name), {"content": content}, format="json")
    assert response.status_code == 200, response.content
    assert (response.json()["name"], response.json()["version"]) == (name, 1)
    read = api.get(task_url(planned_work, "T01", name))
    assert read.status_code == 200
    assert read.json()["content"] == content
    row = TaskArtifact.objects.get(work=planned_work)
    assert (row.task_id, row.name, row.version, row.content) == ("T01", name, 1, content)


def test_a_task_artifact_keeps_every_version(api, planned_work):
    for n in (1, 2, 3):
        api.put(task_url(planned_work, "T01", "HISTORY.json"), {"content": f"[{n}]"},
                format="json")
    assert api.get(task_url(planned_work, "T01", "HISTORY.json")).json()["content"] == "[3]"
    assert api.get(task_url(planned_work, "T01", "HISTORY.json"),
                   {"version": 1}).json()["content"] == "[1]"
    assert list(TaskArtifact.objects.filter(work=planned_work).order_by("version")
                .values_list("version", flat=True)) == [1, 2, 3]


def test_a_task_artifact_put_with_a_stale_expected_version_is_409(api, planned_work):
    api.put(task_url(planned_work, "T01", "BRIEF.md"), {"content": "# T01\n"}, format="json")
    before = stored(planned_work)
    response = api.put(task_url(planned_work, "T01", "BRIEF.md"),
                       {"content": "# T01 again\n", "expected_version": 0}, format="json")
    assert_error(response, 409, "conflict")
    assert stored(planned_work) == before


@pytest.mark.parametrize("content", ["{}", "not json", '"attempt"', "null", "", "[1,"])
def test_history_json_must_be_a_json_array(api, planned_work, content):
    response = api.put(task_url(planned_work, "T01", "HISTORY.json"), {"content": content},
                       format="json")
    error = assert_error(response, 400, "validation_error")
    assert "content" in error["fields"]
    assert not TaskArtifact.objects.exists()


def test_repeated_task_ids_are_isolated_per_work_item(api, alpha, planned_work):
    """Scenario 7."""
    other = open_work(alpha.project, summary="Another planned item", minimum_mode="planned-change")
    api.put(task_url(planned_work, "T01", "HISTORY.json"), {"content": '["first"]'}, format="json")
    api.put(task_url(other, "T01", "HISTORY.json"), {"content": '["second"]'}, format="json")
    assert api.get(task_url(planned_work, "T01", "HISTORY.json")).json()["content"] == '["first"]'
    assert api.get(task_url(other, "T01", "HISTORY.json")).json()["content"] == '["second"]'
    assert TaskArtifact.objects.get(work=planned_work).content == '["first"]'
    assert TaskArtifact.objects.get(work=other).content == '["second"]'
    assert TaskArtifact.objects.get(work=other).version == 1


@pytest.mark.parametrize("method", ["get", "put"])
@pytest.mark.parametrize("task_id", [".hidden", "-x", "_x", "..", "a" * 129, "T 01", "T01%00"])
def test_a_bad_task_id_is_404(api, planned_work, method, task_id):
    response = call(api, method, task_url(planned_work, task_id, "BRIEF.md"), {"content": "# x\n"})
    assert_error(response, 404, "not_found")
    assert not TaskArtifact.objects.exists()


@pytest.mark.parametrize("task_id", [".hidden", "-x", "..", "../x", "a/b", "a" * 129, "T 01",
                                     "T01\x00", ""])
@pytest.mark.parametrize("service", ["task_artifact_write", "task_artifact_import"])
def test_the_services_refuse_a_bad_task_id_whoever_calls_them(planned_work, service, task_id):
    """The rule is the services', not only the view's: ged_import and commands call them."""
    with pytest.raises(ValidationError) as refused:
        getattr(services, service)(work=planned_work, task_id=task_id, name="BRIEF.md",
                                   content="# x\n", author="seed")
    assert list(refused.value.message_dict) == ["task_id"]
    assert not TaskArtifact.objects.exists()


@pytest.mark.parametrize("method", ["get", "put"])
def test_a_traversing_task_path_is_404(api, planned_work, method):
    url = work_url("alpha", planned_work.work_id, "tasks", "..", "x", "BRIEF.md")
    response = call(api, method, url, {"content": "# x\n"})
    assert_error(response, 404, "not_found")
    assert not TaskArtifact.objects.exists()


@pytest.mark.parametrize("name", ["NOTES.md", "history.json", "BRIEF.MD"])
def test_an_unknown_task_artifact_name_is_404(api, planned_work, name):
    response = api.put(task_url(planned_work, "T01", name), {"content": "x"}, format="json")
    assert_error(response, 404, "not_found")
    assert not TaskArtifact.objects.exists()


def test_an_upper_case_task_id_is_used_as_given(api, planned_work):
    api.put(task_url(planned_work, "T01.Login", "BRIEF.md"), {"content": "# a\n"}, format="json")
    assert TaskArtifact.objects.get().task_id == "T01.Login"
    assert_error(api.get(task_url(planned_work, "t01.login", "BRIEF.md")), 404, "not_found")


def test_an_unwritten_task_artifact_is_404(api, planned_work):
    assert_error(api.get(task_url(planned_work, "T01", "BRIEF.md")), 404, "not_found")


def test_a_task_artifact_put_on_paused_work_is_governance_blocked(api, planned_work):
    transition(planned_work, "pause")
    response = api.put(task_url(planned_work, "T01", "BRIEF.md"), {"content": "# T01\n"},
                       format="json")
    assert_error(response, 409, "governance_blocked")
    assert not TaskArtifact.objects.exists()


# --- reading governance of opened work --------------------------------------------------------


def test_opened_work_governance_identity_is_64_hex(api, direct_work):
    repository = api.get(gov_url("alpha", direct_work.work_id)).json()["repository"]
    assert HEX64.match(repository["repositoryId"])
    assert HEX64.match(repository["worktreeId"])
    assert (repository["branch"], repository["baseHead"]) == (None, None)
