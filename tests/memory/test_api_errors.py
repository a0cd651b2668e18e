"""Every /v1 error is JSON {code, message, fields?}; nothing leaks from inside the server."""

from __future__ import annotations

import json

import pytest

from memory import services
from memory.models import MemoryEntry, Project

ENTRY = {"category": "decision", "content": "use postgres"}
LEAKS = ("Traceback", "/work", "SELECT", 'File "', "site-packages", "django.db")


def memory_url(project_id: str) -> str:
    return f"/v1/projects/{project_id}/memory"


def assert_error(response, status: int, *codes: str) -> dict:
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) <= {"code", "message", "fields"}
    assert body["code"] in codes
    assert isinstance(body["message"], str) and body["message"]
    if "fields" in body:
        assert isinstance(body["fields"], dict) and body["fields"]
        for messages in body["fields"].values():
            assert isinstance(messages, list)
            assert all(isinstance(message, str) for message in messages)
    text = json.dumps(body, ensure_ascii=False)
    for leak in LEAKS:
        assert leak not in text
    return body


def post_raw(client, path: str, data: bytes, content_type: str = "application/json"):
    return client.generic("POST", path, data, content_type=content_type)


@pytest.fixture
def entry(alpha) -> MemoryEntry:
    return services.memory_entry_create(
        project=alpha.project, author="default", category="decision", content="first"
    ).entry


# --- unknown routes --------------------------------------------------------------

UNKNOWN_PATHS = [
    "/v1",
    "/v1/",
    "/v1/nope",
    "/v1/projects/",
    "/v1/projects/alpha/nothing-here",
    "/v1/projects/alpha/memory/1/extra",
    "/v1/projects/alpha/memory/candidates/x/approve/more",
    "/v1/schema/",
]


@pytest.mark.parametrize("path", UNKNOWN_PATHS)
@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("with_token", [False, True], ids=["anonymous", "token"])
def test_it_answers_an_unknown_route_with_a_json_404(
    alpha, client_for, path, method, with_token
):
    client = client_for(alpha.token if with_token else None)

    response = client.generic(method, path, json.dumps(ENTRY), content_type="application/json")

    assert_error(response, 404, "not_found")
    assert MemoryEntry.objects.count() == 0


def test_it_answers_an_unknown_entry_with_a_json_404(alpha, client_for):
    response = client_for(alpha.token).get(f"{memory_url(alpha.id)}/1")

    assert_error(response, 404, "not_found")
    assert MemoryEntry.objects.count() == 0


@pytest.mark.parametrize(
    "ref", ["0", "-1", "abc", "99999999999999999999999999", "1.5", "00000000-0000-0000-0000"]
)
def test_it_answers_a_malformed_entry_reference_with_a_json_404(alpha, entry, client_for, ref):
    response = client_for(alpha.token).get(f"{memory_url(alpha.id)}/{ref}")

    assert_error(response, 404, "not_found")
    assert MemoryEntry.objects.count() == 1


# --- append-only: no updates, no deletes -----------------------------------------------


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("target", ["list", "seq", "uuid"])
def test_it_refuses_to_change_memory(alpha, entry, client_for, method, target):
    path = {
        "list": memory_url(alpha.id),
        "seq": f"{memory_url(alpha.id)}/1",
        "uuid": f"{memory_url(alpha.id)}/{entry.uuid}",
    }[target]
    before = list(MemoryEntry.objects.values())

    response = client_for(alpha.token).generic(
        method, path, json.dumps({"content": "rewritten"}), content_type="application/json"
    )

    assert_error(response, 405, "method_not_allowed")
    allowed = {name.strip() for name in response["Allow"].split(",")}
    assert "GET" in allowed
    assert method not in allowed
    assert list(MemoryEntry.objects.values()) == before


def test_it_refuses_to_change_memory_with_the_memory_token(
    alpha, entry, client_for, memory_write_token
):
    client = client_for(alpha.token, HTTP_X_MEMORY_TOKEN=memory_write_token)

    response = client.delete(f"{memory_url(alpha.id)}/{entry.uuid}")

    assert_error(response, 405, "method_not_allowed")
    assert MemoryEntry.objects.get().content == "first"


@pytest.mark.parametrize(
    ("method", "suffix"),
    [
        ("POST", "/memory/verify"),
        ("DELETE", "/memory/verify"),
        ("POST", "/memory.md"),
        ("PUT", "/memory.md"),
        ("PUT", "/memory/candidates"),
        ("DELETE", "/memory/candidates"),
        ("GET", "/memory/candidates/{candidate}/approve"),
        ("DELETE", "/memory/candidates/{candidate}/reject"),
        ("POST", "/memory/1"),
    ],
)
def test_it_refuses_methods_a_resource_does_not_have(alpha, entry, client_for, method, suffix):
    candidate = services.candidate_create(
        project=alpha.project, author="t", category="c", content="idea"
    )
    path = f"/v1/projects/{alpha.id}" + suffix.format(candidate=candidate.uuid)

    response = client_for(alpha.token).generic(method, path, "{}", content_type="application/json")

    assert_error(response, 405, "method_not_allowed")
    assert method not in response["Allow"]
    assert MemoryEntry.objects.count() == 1
    candidate.refresh_from_db()
    assert candidate.status == "pending"


# --- body limits and media types ----------------------------------------------------------


def test_it_refuses_a_body_over_one_mebibyte(alpha, client_for):
    body = json.dumps({"category": "big", "content": "x" * (1024 * 1024)}).encode()

    response = post_raw(client_for(alpha.token), memory_url(alpha.id), body)

    assert_error(response, 413, "payload_too_large")
    assert MemoryEntry.objects.count() == 0


def test_it_parses_a_body_of_exactly_one_mebibyte(alpha, client_for):
    prefix, suffix = b'{"category": "big", "content": "', b'"}'
    body = prefix + b"x" * (1024 * 1024 - len(prefix) - len(suffix)) + suffix
    assert len(body) == 1024 * 1024

    response = post_raw(client_for(alpha.token), memory_url(alpha.id), body)

    body = assert_error(response, 400, "validation_error")
    assert list(body["fields"]) == ["content"]
    assert MemoryEntry.objects.count() == 0


def test_it_refuses_a_large_project_creation_body(admin_client, db):
    body = json.dumps({"id": "big", "name": "n" * (1024 * 1024 + 1)}).encode()

    response = post_raw(admin_client, "/v1/projects", body)

    assert_error(response, 413, "payload_too_large")
    assert not Project.objects.exists()


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
def test_it_refuses_a_non_json_body(alpha, client_for, content_type):
    response = post_raw(
        client_for(alpha.token),
        memory_url(alpha.id),
        b"category=decision&content=x",
        content_type,
    )

    assert_error(response, 415, "unsupported_media_type")
    assert MemoryEntry.objects.count() == 0


MALFORMED = {
    "truncated": b'{"category": "decision", "content": ',
    "trailing-garbage": b'{"category": "decision", "content": "x"} x',
    "invalid-utf8": b'{"category": "decision", "content": "\xff\xfe"}',
    "latin1": '{"category": "decision", "content": "caf\u00e9"}'.encode("latin-1"),
    "duplicate-keys": b'{"category": "decision", "content": "a", "content": "b"}',
    "nan": b'{"category": "decision", "content": "x", "corrects": NaN}',
    "infinity": b'{"category": "decision", "content": "x", "corrects": -Infinity}',
    "deep": b"[" * 100000,
    "deep-object": b'{"a":' * 50000 + b"1" + b"}" * 50000,
    "single-quotes": b"{'category': 'decision'}",
}


@pytest.mark.parametrize("name", list(MALFORMED), ids=list(MALFORMED))
def test_it_refuses_malformed_json(alpha, client_for, name):
    response = post_raw(client_for(alpha.token), memory_url(alpha.id), MALFORMED[name])

    assert_error(response, 400, "bad_request")
    assert MemoryEntry.objects.count() == 0


@pytest.mark.parametrize(
    "body", [b"[]", b'["decision", "x"]', b'"decision"', b"42", b"null", b"true"],
)
def test_it_refuses_json_that_is_not_an_object(alpha, client_for, body):
    response = post_raw(client_for(alpha.token), memory_url(alpha.id), body)

    assert_error(response, 400, "bad_request", "validation_error")
    assert MemoryEntry.objects.count() == 0


def test_it_refuses_a_non_object_project_body(admin_client, db):
    response = post_raw(admin_client, "/v1/projects", b'["gamma"]')

    assert_error(response, 400, "bad_request", "validation_error")
    assert not Project.objects.exists()


def test_it_refuses_a_lone_surrogate_in_a_field_name(alpha, client_for):
    body = b'{"category": "decision", "content": "x", "\\ud800": 1}'

    response = post_raw(client_for(alpha.token), memory_url(alpha.id), body)

    assert_error(response, 400, "bad_request", "validation_error")
    assert MemoryEntry.objects.count() == 0


# --- query errors ----------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        {"limit": "abc"},
        {"limit": "1.5"},
        {"after": "-1"},
        {"order": "sideways"},
        {"view": "everything"},
        {"since": "yesterday"},
        {"unknown": "1"},
    ],
    ids=lambda query: "-".join(f"{k}={v}" for k, v in query.items()),
)
def test_it_refuses_a_bad_query(alpha, entry, client_for, query):
    response = client_for(alpha.token).get(memory_url(alpha.id), query)

    body = assert_error(response, 400, "validation_error", "bad_request")
    assert set(body["fields"]) == set(query)
    assert MemoryEntry.objects.count() == 1


@pytest.mark.parametrize(
    ("query", "expected"),
    [({"after": str(10**30)}, []), ({"before": str(10**30)}, [1]), ({"after": "0"}, [1])],
)
def test_it_treats_out_of_range_cursors_as_plain_bounds(
    alpha, entry, client_for, query, expected
):
    response = client_for(alpha.token).get(memory_url(alpha.id), query)

    assert response.status_code == 200
    assert [item["seq"] for item in response.json()["items"]] == expected
    assert MemoryEntry.objects.count() == 1


def test_it_refuses_a_correction_of_an_out_of_range_seq(alpha, entry, client_for):
    response = client_for(alpha.token).post(
        memory_url(alpha.id), {**ENTRY, "corrects": 10**30}, format="json"
    )

    body = assert_error(response, 400, "validation_error")
    assert set(body["fields"]) == {"corrects"}
    assert MemoryEntry.objects.count() == 1


# --- health --------------------------------------------------------------------------


def test_healthz_answers_without_a_token(client_for, db):
    response = client_for().get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "api_version": "v1"}
    assert not Project.objects.exists()


def test_healthz_ignores_a_bad_token(client_for, db):
    response = client_for("not-a-token").get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "api_version": "v1"}
    assert not Project.objects.exists()
