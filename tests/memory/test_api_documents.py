"""Durable documents with revision history (contract §6; gedpi-behaviour.md §1.1, §8,
§10 A scenarios 2-5 and 8, Gap G-11)."""

from __future__ import annotations

import hashlib

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction

from gedweb.append_only import AppendOnlyError
from gedweb.lib.governance import TASKS_TEMPLATE
from gedweb.lib.substantive import LEGACY_PROJECT_PLACEHOLDER
from memory import documents
from memory.models import DocumentRevision
from tests.django_fixtures import run_in_threads
from tests.governance.support import open_work, transition

SUMMARY = "# Project\n\nA shop for used bicycles.\n"
SUMMARY_2 = "# Project\n\nA shop for used and new bicycles.\n"
ADR = "# ADR 1\n\nUse PostgreSQL for scale.\n"
REPORT = "# Audit\n\nNo findings.\n"


@pytest.fixture
def api(alpha, client_for):
    return client_for(alpha.token)


def url(project_id: str, path: str | None = None, suffix: str = "") -> str:
    base = f"/v1/projects/{project_id}/documents"
    if path is not None:
        base += f"/{path}"
    return base + suffix


def put(api, project_id: str, path: str, content: str, **extra):
    return api.put(url(project_id, path), {"content": content, **extra}, format="json")


def rows(project, path: str | None = None) -> list[tuple]:
    qs = DocumentRevision.objects.filter(project=project)
    if path is not None:
        qs = qs.filter(path=path)
    return list(qs.order_by("path", "revision").values_list("path", "revision", "content"))


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["code"] == code
    return body


# --- create -------------------------------------------------------------------------


def test_it_creates_a_project_summary_as_revision_1(api, alpha):
    response = put(api, alpha.id, "PROJECT.md", SUMMARY, reason="first draft")
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"path", "revision", "content", "sha256", "author", "created_at", "reason"}
    assert body["path"] == "PROJECT.md"
    assert body["revision"] == 1
    assert body["content"] == SUMMARY
    assert body["sha256"] == hashlib.sha256(SUMMARY.encode()).hexdigest()
    assert body["author"] == "default"
    assert body["reason"] == "first draft"
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY)]


@pytest.mark.parametrize(
    "path", ["PROJECT.md", "CONTEXT.md", "adr/0001-use-postgres.md", "reports/audit.v1_a-b.md"]
)
def test_it_creates_every_kind_of_document(api, alpha, path):
    response = put(api, alpha.id, path, SUMMARY)
    assert response.status_code == 201
    assert rows(alpha.project) == [(path, 1, SUMMARY)]


def test_creating_with_expected_revision_0_is_allowed(api, alpha):
    response = put(api, alpha.id, "CONTEXT.md", SUMMARY, expected_revision=0)
    assert response.status_code == 201
    assert rows(alpha.project) == [("CONTEXT.md", 1, SUMMARY)]


def test_creating_with_a_positive_expected_revision_is_stale(api, alpha):
    body = assert_error(
        put(api, alpha.id, "CONTEXT.md", SUMMARY, expected_revision=2), 409, "stale_revision"
    )
    assert body["current_revision"] == 0
    assert rows(alpha.project) == []


def test_reason_is_optional_and_null_when_omitted(api, alpha):
    response = put(api, alpha.id, "PROJECT.md", SUMMARY)
    assert response.json()["reason"] is None
    assert DocumentRevision.objects.get(project=alpha.project).reason is None


# --- byte-for-byte ------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        "# Project\r\n\r\nLine one.\r\nLine two.\r\n",
        "# Projekt\n\nFahrräder für Zürich — 自転車 🚲\n",
        "  Leading and trailing spaces and no final newline  ",
        "\ufeffBOM first\n\n\n",
    ],
    ids=["crlf", "non-ascii", "spaces", "bom"],
)
def test_content_is_stored_and_returned_byte_for_byte(api, alpha, content):
    created = put(api, alpha.id, "PROJECT.md", content)
    assert created.status_code == 201
    stored = DocumentRevision.objects.get(project=alpha.project)
    assert stored.content == content
    assert stored.sha256 == hashlib.sha256(content.encode("utf-8")).hexdigest()
    fetched = api.get(url(alpha.id, "PROJECT.md"))
    assert fetched.json()["content"].encode("utf-8") == content.encode("utf-8")


# --- update and history -------------------------------------------------------------


def test_an_update_with_the_current_revision_adds_revision_2(api, alpha):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    response = put(api, alpha.id, "PROJECT.md", SUMMARY_2, expected_revision=1, reason="new too")
    assert response.status_code == 200
    assert response.json()["revision"] == 2
    assert response.json()["reason"] == "new too"
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY), ("PROJECT.md", 2, SUMMARY_2)]


def test_an_update_without_expected_revision_is_refused(api, alpha):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    body = assert_error(put(api, alpha.id, "PROJECT.md", SUMMARY_2), 400, "validation_error")
    assert list(body["fields"]) == ["expected_revision"]
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY)]


def test_an_update_with_a_stale_revision_is_refused_with_the_current_one(api, alpha):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    put(api, alpha.id, "PROJECT.md", SUMMARY_2, expected_revision=1)
    body = assert_error(
        put(api, alpha.id, "PROJECT.md", "# P\n\nThird.\n", expected_revision=1),
        409,
        "stale_revision",
    )
    assert body["current_revision"] == 2
    assert [r[1] for r in rows(alpha.project)] == [1, 2]


def test_expected_revision_0_on_an_existing_document_is_stale(api, alpha):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    body = assert_error(
        put(api, alpha.id, "PROJECT.md", SUMMARY_2, expected_revision=0), 409, "stale_revision"
    )
    assert body["current_revision"] == 1
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY)]


def test_an_update_with_unchanged_content_stores_nothing_and_returns_the_current_revision(
    api, alpha
):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    response = put(api, alpha.id, "PROJECT.md", SUMMARY, expected_revision=1, reason="again")
    assert response.status_code == 200
    assert response.json()["revision"] == 1
    assert response.json()["reason"] is None
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY)]


def test_an_adr_can_be_revised(api, alpha):
    put(api, alpha.id, "adr/0001.md", ADR)
    response = put(api, alpha.id, "adr/0001.md", ADR + "\nSuperseded by 0002.\n",
                   expected_revision=1)
    assert response.status_code == 200
    assert [r[1] for r in rows(alpha.project)] == [1, 2]


def test_get_returns_the_newest_revision(api, alpha):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    put(api, alpha.id, "PROJECT.md", SUMMARY_2, expected_revision=1)
    response = api.get(url(alpha.id, "PROJECT.md"))
    assert response.status_code == 200
    assert (response.json()["revision"], response.json()["content"]) == (2, SUMMARY_2)


def test_get_with_revision_returns_that_revision(api, alpha):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    put(api, alpha.id, "PROJECT.md", SUMMARY_2, expected_revision=1)
    response = api.get(url(alpha.id, "PROJECT.md"), {"revision": 1})
    assert response.status_code == 200
    assert (response.json()["revision"], response.json()["content"]) == (1, SUMMARY)


def test_get_of_an_unknown_revision_is_404(api, alpha):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    assert_error(api.get(url(alpha.id, "PROJECT.md"), {"revision": 2}), 404, "not_found")


def test_get_of_a_missing_document_is_404(api, alpha):
    assert_error(api.get(url(alpha.id, "CONTEXT.md")), 404, "not_found")


def test_revisions_lists_every_revision_oldest_first_without_content(api, alpha):
    put(api, alpha.id, "PROJECT.md", SUMMARY, reason="one")
    put(api, alpha.id, "PROJECT.md", SUMMARY_2, expected_revision=1, reason="two")
    response = api.get(url(alpha.id, "PROJECT.md", "/revisions"))
    assert response.status_code == 200
    body = response.json()
    assert body["path"] == "PROJECT.md"
    assert [(i["revision"], i["reason"]) for i in body["items"]] == [(1, "one"), (2, "two")]
    assert "content" not in body["items"][0]
    assert body["items"][1]["sha256"] == hashlib.sha256(SUMMARY_2.encode()).hexdigest()


def test_revisions_of_an_adr_path_with_a_slash_route_to_the_history(api, alpha):
    put(api, alpha.id, "adr/0001.md", ADR)
    response = api.get(url(alpha.id, "adr/0001.md", "/revisions"))
    assert response.status_code == 200
    assert [i["revision"] for i in response.json()["items"]] == [1]


def test_revisions_of_a_missing_document_is_404(api, alpha):
    assert_error(api.get(url(alpha.id, "PROJECT.md", "/revisions")), 404, "not_found")


# --- list ---------------------------------------------------------------------------


def test_the_list_shows_each_document_once_at_its_current_revision(api, alpha):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    put(api, alpha.id, "PROJECT.md", SUMMARY_2, expected_revision=1)
    put(api, alpha.id, "adr/0002.md", ADR)
    put(api, alpha.id, "adr/0001.md", ADR)
    response = api.get(url(alpha.id))
    assert response.status_code == 200
    items = response.json()["items"]
    assert [(i["path"], i["revision"]) for i in items] == [
        ("PROJECT.md", 2), ("adr/0001.md", 1), ("adr/0002.md", 1)
    ]
    assert items[0]["sha256"] == hashlib.sha256(SUMMARY_2.encode()).hexdigest()
    assert set(items[0]) == {"path", "revision", "sha256", "author", "updated_at"}


def test_the_list_filters_by_prefix(api, alpha):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    put(api, alpha.id, "adr/0001.md", ADR)
    put(api, alpha.id, "reports/audit.md", REPORT)
    response = api.get(url(alpha.id), {"prefix": "adr/"})
    assert [i["path"] for i in response.json()["items"]] == ["adr/0001.md"]


def test_the_prefix_filter_is_case_sensitive(api, alpha):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    response = api.get(url(alpha.id), {"prefix": "project"})
    assert response.json()["items"] == []


def test_the_list_refuses_unknown_query_parameters(api, alpha):
    assert_error(api.get(url(alpha.id), {"kind": "adr"}), 400, "validation_error")


# --- reports are write-once -----------------------------------------------------------


def test_a_second_put_of_a_report_is_a_conflict(api, alpha):
    put(api, alpha.id, "reports/audit.md", REPORT)
    assert_error(
        put(api, alpha.id, "reports/audit.md", REPORT + "More.\n", expected_revision=1),
        409,
        "conflict",
    )
    assert rows(alpha.project) == [("reports/audit.md", 1, REPORT)]


def test_a_second_put_of_a_report_with_identical_content_is_a_conflict(api, alpha):
    """Scenario 4: create-only, whatever the content."""
    put(api, alpha.id, "reports/audit.md", REPORT)
    assert_error(put(api, alpha.id, "reports/audit.md", REPORT), 409, "conflict")
    assert rows(alpha.project) == [("reports/audit.md", 1, REPORT)]


# --- the substantive-content rule (scenarios 2 and 3) --------------------------------


@pytest.mark.parametrize(
    ("path", "content"),
    [("PROJECT.md", "# Project\n\n"), ("reports/audit.md", "# Audit\n\n")],
)
def test_non_substantive_content_is_refused_and_nothing_is_stored(api, alpha, path, content):
    """Scenario 2."""
    body = assert_error(put(api, alpha.id, path, content), 400, "validation_error")
    assert list(body["fields"]) == ["content"]
    assert "substantive" in body["fields"]["content"][0]
    assert rows(alpha.project) == []


def test_the_legacy_project_placeholder_is_refused(api, alpha):
    """Scenario 3."""
    assert_error(put(api, alpha.id, "PROJECT.md", LEGACY_PROJECT_PLACEHOLDER), 400,
                 "validation_error")
    assert rows(alpha.project) == []


def test_a_work_template_is_refused(api, alpha):
    assert_error(put(api, alpha.id, "CONTEXT.md", TASKS_TEMPLATE), 400, "validation_error")
    assert rows(alpha.project) == []


def test_a_non_substantive_update_is_refused_and_the_document_is_unchanged(api, alpha):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    assert_error(put(api, alpha.id, "PROJECT.md", "# Project\n\n- TBD\n", expected_revision=1),
                 400, "validation_error")
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY)]


def test_content_over_200000_characters_is_refused(api, alpha):
    body = assert_error(put(api, alpha.id, "PROJECT.md", "x" * 200_001), 400, "validation_error")
    assert list(body["fields"]) == ["content"]
    assert rows(alpha.project) == []


def test_content_of_exactly_200000_characters_is_accepted(api, alpha):
    # Two-byte characters: the limit counts characters, not bytes.
    response = put(api, alpha.id, "PROJECT.md", "ü" * 200_000)
    assert response.status_code == 201
    assert len(DocumentRevision.objects.get(project=alpha.project).content) == 200_000


def test_content_with_a_nul_character_is_refused(api, alpha):
    assert_error(put(api, alpha.id, "PROJECT.md", "text\x00more"), 400, "validation_error")
    assert rows(alpha.project) == []


@pytest.mark.parametrize("body", [{}, {"content": 5}, {"content": None}, {"content": ["a"]}])
def test_a_missing_or_non_string_content_is_refused(api, alpha, body):
    response = api.put(url(alpha.id, "PROJECT.md"), body, format="json")
    assert list(assert_error(response, 400, "validation_error")["fields"]) == ["content"]
    assert rows(alpha.project) == []


@pytest.mark.parametrize("field", ["revision", "sha256", "author", "path_name"])
def test_unknown_and_server_fields_are_refused(api, alpha, field):
    body = assert_error(put(api, alpha.id, "PROJECT.md", SUMMARY, **{field: "x"}), 400,
                        "validation_error")
    assert field in body["fields"]
    assert rows(alpha.project) == []


def test_a_negative_expected_revision_is_refused(api, alpha):
    body = assert_error(put(api, alpha.id, "PROJECT.md", SUMMARY, expected_revision=-1), 400,
                        "validation_error")
    assert list(body["fields"]) == ["expected_revision"]


def test_a_blank_reason_is_refused(api, alpha):
    body = assert_error(put(api, alpha.id, "PROJECT.md", SUMMARY, reason="  "), 400,
                        "validation_error")
    assert list(body["fields"]) == ["reason"]
    assert rows(alpha.project) == []


# --- paths (scenario 5) --------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "reports/Audit.md",
        "reports/.hidden.md",
        "adr/.hidden.md",
        "adr/x/y.md",
        "reports/audit.txt",
        "reports/.md",
        "adr/-x.md",
        "adr/" + "a" * 129 + ".md",
        "project.md",
        "PROJECT.MD",
        "STANDARDS.md",
        "notes/x.md",
        "handoff/not-a-work-id.md",
        "handoff/root.md",
        "reports/audit.md/extra",
    ],
)
def test_a_path_outside_the_fixed_set_is_refused_with_nothing_stored(api, alpha, path):
    """Scenario 5: refused before anything is written."""
    body = assert_error(put(api, alpha.id, path, REPORT), 400, "validation_error")
    assert list(body["fields"]) == ["path"]
    assert rows(alpha.project) == []


@pytest.mark.parametrize("path", ["reports/..%2Fx.md", "reports/%2E%2E/x.md", "adr/..%5Cx.md"])
def test_encoded_traversal_is_refused(api, alpha, path):
    assert_error(put(api, alpha.id, path, REPORT), 400, "validation_error")
    assert rows(alpha.project) == []


def test_a_path_with_a_line_break_matches_no_route(api, alpha):
    # URL patterns do not match across a newline, so this is the JSON 404.
    assert_error(put(api, alpha.id, "adr/x%0A.md", REPORT), 404, "not_found")
    assert rows(alpha.project) == []


def test_reading_a_path_outside_the_fixed_set_is_refused(api, alpha):
    assert_error(api.get(url(alpha.id, "reports/Audit.md")), 400, "validation_error")


def test_the_longest_valid_id_is_accepted(api, alpha):
    path = "adr/" + "a" * 128 + ".md"
    assert put(api, alpha.id, path, ADR).status_code == 201
    assert rows(alpha.project) == [(path, 1, ADR)]


# --- handoffs (scenario 8, Gap G-11) ---------------------------------------------------


def test_a_handoff_for_a_work_item_of_the_project_is_created(api, alpha):
    """Scenario 8."""
    work = open_work(alpha.project)
    path = f"handoff/{work.work_id}.md"
    response = put(api, alpha.id, path, "# Handoff\n\nNext: write the tests.\n")
    assert response.status_code == 201
    assert rows(alpha.project) == [(path, 1, "# Handoff\n\nNext: write the tests.\n")]


def test_a_handoff_for_an_unknown_work_id_is_refused(api, alpha):
    """Scenario 8: a well-formed but unknown work id."""
    path = "handoff/fix-20260101000000000-" + "0" * 32 + ".md"
    body = assert_error(put(api, alpha.id, path, "# Handoff\n\nNext.\n"), 400,
                        "validation_error")
    assert list(body["fields"]) == ["path"]
    assert rows(alpha.project) == []


def test_a_handoff_for_another_projects_work_item_is_refused(api, alpha, beta):
    foreign = open_work(beta.project)
    path = f"handoff/{foreign.work_id}.md"
    assert_error(put(api, alpha.id, path, "# Handoff\n\nNext.\n"), 400, "validation_error")
    assert DocumentRevision.objects.count() == 0


def test_a_handoff_for_terminal_work_is_allowed(api, alpha):
    work = open_work(alpha.project)
    transition(work, "abandon")
    response = put(api, alpha.id, f"handoff/{work.work_id}.md", "# Handoff\n\nAbandoned: why.\n")
    assert response.status_code == 201
    assert DocumentRevision.objects.filter(project=alpha.project).count() == 1


def test_a_handoff_can_be_revised(api, alpha):
    work = open_work(alpha.project)
    path = f"handoff/{work.work_id}.md"
    put(api, alpha.id, path, "# Handoff\n\nOne.\n")
    response = put(api, alpha.id, path, "# Handoff\n\nTwo.\n", expected_revision=1)
    assert response.status_code == 200
    assert [r[1] for r in rows(alpha.project)] == [1, 2]


def test_a_handoff_for_an_unknown_work_id_names_the_rule(api, alpha):
    work_id = "fix-20260101000000000-" + "0" * 32
    body = assert_error(put(api, alpha.id, f"handoff/{work_id}.md", "# Handoff\n\nNext.\n"),
                        400, "validation_error")
    assert body["fields"] == {
        "path": [f"handoff needs an existing work item of project {alpha.id}: {work_id}"]
    }


def test_a_handoff_with_bad_content_names_the_content_before_the_work_item(api, alpha):
    # Every document write checks its values first; the work item comes after.
    path = "handoff/fix-20260101000000000-" + "0" * 32 + ".md"
    body = assert_error(put(api, alpha.id, path, "# Handoff\n"), 400, "validation_error")
    assert list(body["fields"]) == ["content"]
    assert rows(alpha.project) == []


def test_a_handoff_is_read_back_by_revision_and_listed(api, alpha):
    work = open_work(alpha.project)
    path = f"handoff/{work.work_id}.md"
    put(api, alpha.id, path, "# Handoff\n\nOne.\n", reason="first")
    put(api, alpha.id, path, "# Handoff\n\nTwo.\n", expected_revision=1)
    current = api.get(url(alpha.id, path))
    assert current.status_code == 200
    assert (current.json()["revision"], current.json()["content"]) == (2, "# Handoff\n\nTwo.\n")
    first = api.get(url(alpha.id, path), {"revision": 1})
    assert (first.json()["revision"], first.json()["reason"]) == (1, "first")
    assert_error(api.get(url(alpha.id, path), {"revision": 3}), 404, "not_found")
    history = api.get(url(alpha.id, path, "/revisions")).json()
    assert [item["revision"] for item in history["items"]] == [1, 2]
    listed = api.get(url(alpha.id), {"prefix": "handoff/"}).json()["items"]
    assert [(item["path"], item["revision"]) for item in listed] == [(path, 2)]


def test_an_absent_handoff_of_a_known_work_item_is_404(api, alpha):
    work = open_work(alpha.project)
    assert_error(api.get(url(alpha.id, f"handoff/{work.work_id}.md")), 404, "not_found")


@pytest.mark.parametrize(
    ("body", "query"),
    [
        ({"content": 5}, None),
        ({"content": "# Handoff\n\nNext.\n", "expected_revision": -1}, None),
        ({"content": "# Handoff\n\nNext.\n", "reason": 7}, None),
        ({"content": "# Handoff\n\nNext.\n", "author": "me"}, None),
        ({}, None),
        (None, {"revision": "0"}),
        (None, {"revision": "x"}),
        (None, {"revision": "1", "format": "json"}),
    ],
)
def test_the_handoff_route_refuses_bad_input_as_every_document_route_does(api, alpha, body,
                                                                          query):
    # Handoffs are served by governance's route (governance/api/handoffs.py),
    # every other document by memory's: the same input gets the same answer.
    work = open_work(alpha.project)
    answers = []
    for path in (f"handoff/{work.work_id}.md", "adr/0001-db.md"):
        if body is not None:
            response = api.put(url(alpha.id, path), body, format="json")
        else:
            response = api.get(url(alpha.id, path), query)
        answers.append((response.status_code, response.json()))
    assert answers[0] == answers[1]
    assert answers[0][0] == 400
    assert rows(alpha.project) == []


# --- scoping --------------------------------------------------------------------------


def test_another_projects_token_gets_404_on_write(client_for, alpha, beta):
    response = put(client_for(beta.token), alpha.id, "PROJECT.md", SUMMARY)
    assert_error(response, 404, "not_found")
    assert DocumentRevision.objects.count() == 0


def test_another_projects_token_gets_404_on_read(api, client_for, alpha, beta):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    other = client_for(beta.token)
    assert_error(other.get(url(alpha.id, "PROJECT.md")), 404, "not_found")
    assert_error(other.get(url(alpha.id)), 404, "not_found")
    assert_error(other.get(url(alpha.id, "PROJECT.md", "/revisions")), 404, "not_found")


def test_documents_of_two_projects_are_separate(api, client_for, alpha, beta):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    response = put(client_for(beta.token), beta.id, "PROJECT.md", SUMMARY_2)
    assert response.status_code == 201
    assert response.json()["revision"] == 1
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY)]
    assert rows(beta.project) == [("PROJECT.md", 1, SUMMARY_2)]


def test_without_a_token_it_is_401(client_for, alpha):
    assert_error(put(client_for(), alpha.id, "PROJECT.md", SUMMARY), 401, "unauthenticated")
    assert DocumentRevision.objects.count() == 0


def test_the_admin_token_writes_as_admin(admin_client, alpha):
    response = put(admin_client, alpha.id, "PROJECT.md", SUMMARY)
    assert response.status_code == 201
    assert DocumentRevision.objects.get(project=alpha.project).author == response.json()["author"]


def test_delete_is_not_allowed(api, alpha):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    assert_error(api.delete(url(alpha.id, "PROJECT.md")), 405, "method_not_allowed")
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY)]


def test_a_non_json_body_is_415(api, alpha):
    response = api.put(url(alpha.id, "PROJECT.md"), "content", content_type="text/plain")
    assert_error(response, 415, "unsupported_media_type")
    assert rows(alpha.project) == []


# --- read helpers for the context bundle ----------------------------------------------


def test_document_current_returns_the_newest_revision_or_none(api, alpha):
    assert documents.document_current(alpha.project, "PROJECT.md") is None
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    put(api, alpha.id, "PROJECT.md", SUMMARY_2, expected_revision=1)
    current = documents.document_current(alpha.project, "PROJECT.md")
    assert (current.revision, current.content) == (2, SUMMARY_2)


def test_a_path_ending_in_a_newline_is_not_a_valid_handoff_or_adr_path():
    work_id = "fix-20260101000000000-" + "0" * 32
    for path in (f"handoff/{work_id}\n.md", "adr/x\n.md", "PROJECT.md\n"):
        with pytest.raises(ValueError):
            documents.parse_document_path(path)


# --- admin ------------------------------------------------------------------------------


@pytest.fixture
def operator(client, django_user_model):
    user = django_user_model.objects.create_superuser("olga", "olga@example.org", "pw-olga-123")
    client.force_login(user)
    return client


def test_the_admin_lists_revisions_by_project_and_path(operator, api, alpha):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    put(api, alpha.id, "PROJECT.md", SUMMARY_2, expected_revision=1)
    page = operator.get("/admin/memory/documentrevision/", {"current": "yes"})
    assert page.status_code == 200
    assert page.context["cl"].result_count == 1
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY), ("PROJECT.md", 2, SUMMARY_2)]


def test_the_admin_shows_a_revisions_content_read_only(operator, api, alpha):
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    revision = DocumentRevision.objects.get(project=alpha.project)
    page = operator.get(f"/admin/memory/documentrevision/{revision.pk}/change/")
    assert page.status_code == 200
    assert b"A shop for used bicycles." in page.content
    assert b'name="content"' not in page.content
    posted = operator.post(f"/admin/memory/documentrevision/{revision.pk}/change/",
                           {"content": "changed"})
    assert posted.status_code == 403
    assert operator.get("/admin/memory/documentrevision/add/").status_code == 403
    assert operator.post(
        f"/admin/memory/documentrevision/{revision.pk}/delete/"
    ).status_code == 403
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY)]


# --- append-only ----------------------------------------------------------------------


@pytest.fixture
def stored(api, alpha) -> DocumentRevision:
    put(api, alpha.id, "PROJECT.md", SUMMARY)
    return DocumentRevision.objects.get(project=alpha.project)


def test_the_orm_refuses_to_save_a_changed_revision(stored, alpha):
    stored.content = "rewritten"
    with pytest.raises(AppendOnlyError):
        stored.save()
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY)]


def test_the_orm_refuses_to_delete_a_revision(stored, alpha):
    with pytest.raises(AppendOnlyError):
        stored.delete()
    with pytest.raises(AppendOnlyError):
        DocumentRevision.objects.filter(pk=stored.pk).delete()
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY)]


def test_the_orm_refuses_bulk_updates(stored, alpha):
    with pytest.raises(AppendOnlyError):
        DocumentRevision.objects.filter(pk=stored.pk).update(content="rewritten")
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY)]


def test_the_database_refuses_a_raw_update(stored, alpha):
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memory_documentrevision SET content = %s WHERE id = %s",
            ["rewritten", stored.pk],
        )
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY)]


def test_the_database_refuses_a_raw_delete(stored, alpha):
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM memory_documentrevision WHERE id = %s", [stored.pk])
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY)]


def test_the_database_refuses_a_duplicate_revision_number(stored, alpha):
    duplicate = DocumentRevision(
        project=alpha.project, path="PROJECT.md", revision=1, content="x", sha256="0" * 64,
        author="t", created_at=stored.created_at,
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        duplicate.save()
    assert rows(alpha.project) == [("PROJECT.md", 1, SUMMARY)]


# --- concurrency ------------------------------------------------------------------------


def test_of_two_concurrent_updates_with_the_same_expected_revision_exactly_one_wins(
    live_db, make_project
):
    target = make_project("race")
    documents.document_put(project=target.project, path="PROJECT.md", content=SUMMARY,
                           author="seed")

    def update(index: int) -> int:
        return documents.document_put(
            project=target.project,
            path="PROJECT.md",
            content=f"# Project\n\nWriter {index} was here.\n",
            author=f"writer-{index}",
            expected_revision=1,
        ).document.revision

    results = run_in_threads(update, 2)
    wins = [r for r in results if r == 2]
    losses = [r for r in results if isinstance(r, documents.StaleRevision)]
    assert (len(wins), len(losses)) == (1, 1), results
    assert losses[0].extra == {"current_revision": 2}
    stored = list(DocumentRevision.objects.filter(project=target.project)
                  .order_by("revision").values_list("revision", "author"))
    assert [r for r, _ in stored] == [1, 2]
    assert stored[1][1] in {"writer-0", "writer-1"}


def test_of_many_concurrent_report_creations_exactly_one_is_stored(live_db, make_project):
    target = make_project("race")

    def create(index: int) -> int:
        return documents.document_put(
            project=target.project, path="reports/audit.md",
            content=f"# Audit\n\nWriter {index}.\n", author=f"writer-{index}",
        ).document.revision

    results = run_in_threads(create, 8)
    assert results.count(1) == 1, results
    assert all(isinstance(r, documents.Conflict) for r in results if r != 1)
    assert DocumentRevision.objects.filter(project=target.project).count() == 1
