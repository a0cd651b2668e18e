"""The OpenAPI 3 schema at /v1/schema and the interactive docs at /v1/docs."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from django.urls import URLPattern
from drf_spectacular.validation import validate_schema

from memory import services
from memory.api import urls as api_urls
from memory.api.serializers import EntrySerializer
from memory.models import MemoryEntry

pytestmark = pytest.mark.django_db

ERROR_REF = "#/components/schemas/Error"
HTTP_METHODS = ("get", "post", "put", "patch", "delete")
# Approve and reject take no body (an empty object is tolerated), so the
# schema documents them without a requestBody.
BODYLESS_POSTS = {
    "/v1/projects/{project_id}/memory/candidates/{candidate_id}/approve",
    "/v1/projects/{project_id}/memory/candidates/{candidate_id}/reject",
    "/v1/projects/{project_id}/memory/candidates/{candidate_id}/withdraw",
}


def openapi_path(pattern: URLPattern) -> str:
    route = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", str(pattern.pattern))
    return f"/v1/{route}"


def routes() -> dict[str, set[str]]:
    """Every path of memory/api/urls.py with the methods its view implements."""
    found = {}
    for pattern in api_urls.urlpatterns:
        view_class = pattern.callback.view_class
        found[openapi_path(pattern)] = {m for m in HTTP_METHODS if hasattr(view_class, m)}
    return found


@pytest.fixture
def schema(client) -> dict:
    response = client.get("/v1/schema", {"format": "json"})
    assert response.status_code == 200
    return json.loads(response.content)


def operations(schema: dict):
    """The operations of memory/api/urls.py; other apps test their own."""
    memory_paths = set(routes())
    for path, item in schema["paths"].items():
        if path not in memory_paths:
            continue
        for method, operation in item.items():
            if method in HTTP_METHODS:
                yield path, method, operation


def test_the_schema_is_served_as_json_with_format_json(client):
    response = client.get("/v1/schema", {"format": "json"})

    assert response.status_code == 200
    assert "json" in response["Content-Type"]
    assert json.loads(response.content)["openapi"].startswith("3.")
    assert MemoryEntry.objects.count() == 0


@pytest.mark.parametrize("accept", ["application/vnd.oai.openapi+json", "application/json"])
def test_the_schema_is_served_as_json_by_accept_header(client, accept):
    response = client.get("/v1/schema", HTTP_ACCEPT=accept)

    assert response.status_code == 200
    assert response["Content-Type"].startswith(accept)
    assert json.loads(response.content)["openapi"].startswith("3.")
    assert MemoryEntry.objects.count() == 0


def test_the_schema_is_served_as_yaml_by_default(client, schema):
    response = client.get("/v1/schema")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi")
    assert yaml.safe_load(response.content) == schema
    assert MemoryEntry.objects.count() == 0


def test_the_schema_needs_no_token(client_for):
    response = client_for("not-a-token").get("/v1/schema", {"format": "json"})

    assert response.status_code == 200
    assert MemoryEntry.objects.count() == 0


def test_the_schema_is_valid_openapi_3(schema):
    assert schema["openapi"].startswith("3.")
    validate_schema(schema)


def test_the_schema_has_every_memory_api_path_with_its_methods(schema):
    expected = routes()

    documented = {
        path: {method for method in schema["paths"][path] if method in HTTP_METHODS}
        for path in expected
        if path in schema["paths"]
    }

    assert documented == expected


def test_every_operation_has_a_success_schema(schema):
    for path, method, operation in operations(schema):
        successes = {code: r for code, r in operation["responses"].items() if code.startswith("2")}
        assert successes, (path, method)
        for response in successes.values():
            assert response["content"], (path, method)
            for media in response["content"].values():
                assert media["schema"], (path, method)


def references_error(response: dict) -> bool:
    return response.get("content", {}).get("application/json", {}).get("schema") == {
        "$ref": ERROR_REF
    }


def test_every_api_operation_documents_its_error_responses(schema):
    for path, method, operation in operations(schema):
        responses = operation["responses"]
        needed = {"401"}
        if "{project_id}" in path:
            needed.add("404")
        queries = [p for p in operation.get("parameters", []) if p["in"] == "query"]
        if "requestBody" in operation or queries:
            needed.add("400")
        for status in needed:
            assert status in responses, (path, method, status)
        for status, response in responses.items():
            if status[0] in "45":
                assert references_error(response), (path, method, status)


def test_admin_operations_document_403(schema):
    for method in ("get", "post"):
        assert references_error(schema["paths"]["/v1/projects"][method]["responses"]["403"])


def test_memory_writes_document_the_write_boundary_and_idempotency(schema):
    operation = schema["paths"]["/v1/projects/{project_id}/memory"]["post"]

    headers = {p["name"] for p in operation["parameters"] if p["in"] == "header"}

    assert {"Idempotency-Key", "X-Memory-Token"} <= headers
    assert {"403", "409", "413", "415", "422"} <= set(operation["responses"])


def test_post_operations_have_a_request_body(schema):
    for path, method, operation in operations(schema):
        if method != "post" or path in BODYLESS_POSTS:
            continue
        body = operation.get("requestBody")
        assert body, path
        assert body["content"]["application/json"]["schema"]["$ref"].startswith(
            "#/components/schemas/"
        )


def test_the_entry_schema_matches_what_entries_return(alpha, schema):
    entry = services.memory_entry_create(
        project=alpha.project, author="t", category="c", content="x"
    ).entry

    properties = schema["components"]["schemas"]["Entry"]["properties"]

    assert set(properties) == set(EntrySerializer.render(entry))


def test_the_entry_input_schema_lists_only_caller_fields(schema):
    properties = schema["components"]["schemas"]["EntryCreateRequest"]["properties"]

    assert set(properties) == {"category", "content", "source", "corrects"}


def test_the_error_schema_matches_the_contract(schema):
    error = schema["components"]["schemas"]["Error"]

    assert set(error["properties"]) == {"code", "message", "fields"}
    assert set(error["required"]) == {"code", "message"}


def test_the_docs_page_is_served_without_external_scripts(client):
    response = client.get("/v1/docs")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert "<script" in html
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html, re.IGNORECASE)
    # A CDN's host name, not the letters: the page's random CSRF token may
    # hold "cdn" (it did, once in a while, and failed this test).
    for host in ("cdn", "unpkg", "jsdelivr", "cdnjs"):
        assert not re.search(rf"{host}[\w-]*\.[a-z]", html, re.IGNORECASE), host
    assert "/v1/schema" in html
    assert MemoryEntry.objects.count() == 0
