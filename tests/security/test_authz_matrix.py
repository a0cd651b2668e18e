"""Runs the authorization matrix (tests/security/authz_matrix.py) cell by cell.

One world (projects A and B with every kind of object, built through the
services) is created once per module inside a transaction; every test runs
in a savepoint of it and is rolled back, so a write allowed in one cell is
never seen by the next. Requests are real: the full middleware, DRF and
database stack, no mocks.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.django_fixtures import MEMORY_WRITE_TOKEN
from tests.security import authz_matrix as m

NOT_FOUND = {"code": "not_found", "message": "not found"}
snapshot, changed, credentials, bearer = m.snapshot, m.changed, m.credentials, m.bearer
MEMORY_HEADER = {"HTTP_X_MEMORY_TOKEN": MEMORY_WRITE_TOKEN}


@pytest.fixture(scope="module")
def world(django_db_setup: None, django_db_blocker: Any,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[m.World]:
    """Built once per module; rolled back at its end (the tests nest savepoints inside)."""
    yield from m.world_in_rollback(django_db_blocker, tmp_path_factory.mktemp("matrix"))


def variant_requests(world: m.World, variant: str) -> list[tuple[dict[str, str], str | None]]:
    """(headers, extra query) pairs for credentials that must never authenticate."""
    token = world.tokens["a"]
    basic = base64.b64encode(f"alpha:{token}".encode()).decode()
    return {
        "query": [({}, f"access_token={token}"), ({}, f"token={token}")],
        "basic": [({"HTTP_AUTHORIZATION": f"Basic {basic}"}, None)],
        "memory-bearer": [(bearer(MEMORY_WRITE_TOKEN), None)],
        "memory-header": [({**MEMORY_HEADER,
                            "HTTP_X_FERRYMAN_MEMORY_TOKEN": MEMORY_WRITE_TOKEN}, None)],
        "session": [({"HTTP_COOKIE": world.session_cookie}, None)],
    }[variant]


def call(row: m.Row, world: m.World, headers: dict[str, str], query: str | None = None,
         method: str | None = None) -> Any:
    url = row.url.format(**world.ids)
    if query:
        url += ("&" if "?" in url else "?") + query
    body = world.bodies[row.body] if row.body else None
    verb = method or ("GET" if row.method == "ANY" else row.method)
    data, content_type = m.encode_body(body)
    return APIClient().generic(verb, url, data, content_type=content_type, **headers)


def assert_status(response: Any, status: int, row: m.Row) -> None:
    assert response.status_code == status, response.content[:500]
    if status == 401:
        assert response["WWW-Authenticate"] == "Bearer"
        assert response.json() == {"code": "unauthenticated",
                                   "message": "missing, malformed, unknown or revoked bearer "
                                              "token"}
    elif status == 403:
        assert response.json()["code"] == row.code_403
    elif status == 404:
        assert response.json() == NOT_FOUND


def assert_writes(before: dict[str, list], response: Any, row: m.Row) -> None:
    allowed = 200 <= response.status_code < 300
    expected = set(row.writes) if allowed else set()
    assert changed(before, snapshot()) == expected


def cell_id(row: m.Row, label: str, status: int) -> str:
    return f"{row.label} [{label}] -> {status}"


API_CELLS = [
    pytest.param(row, principal, id=cell_id(row, m.PRINCIPAL_LABELS[principal],
                                            row.status(principal)))
    for row in m.API
    for principal in m.PRINCIPALS
]


# --- completeness ---------------------------------------------------------------------------


def test_every_api_route_and_method_has_exactly_one_row() -> None:
    rows = [(row.method, row.route) for row in m.API]
    assert len(rows) == len(set(rows)), "a route and method appear twice"
    routes = m.api_routes()
    assert set(rows) - routes == set(), "rows naming routes that no longer exist"
    assert routes - set(rows) == set(), "routes without a row in the matrix"


def test_every_page_route_has_exactly_one_row() -> None:
    rows = [page.route for page in m.PAGES]
    assert len(rows) == len(set(rows))
    assert set(rows) == m.page_routes()


_FAKE_IDS: dict[str, Any] = {key: 1 for key in (
    "rev_work", "rev_mutating", "rev_verified", "rev_committing", "work", "pending_sha256")}


def test_every_row_has_a_status_for_every_principal() -> None:
    assert all(len(row.expect) == len(m.PRINCIPALS) for row in m.API)
    assert all(len(page.expect) == len(m.PAGE_PRINCIPALS) for page in m.PAGES)
    assert all(row.body in (None, *m.request_bodies(_FAKE_IDS)) for row in m.API)


def test_only_routes_behind_the_memory_boundary_write_memory_entries() -> None:
    """With test_api_cell asserting each allowed write's exact tables, this proves no
    route outside the boundary (documents, work, governance, ...) appends memory."""
    writers = {row.label for row in m.API if m.MEMORY in row.writes}
    guarded = {row.label for row in m.API if row.code_403 == "memory_write_forbidden"}
    assert writers <= guarded
    assert writers == {"POST /v1/projects/{p}/memory",
                       "POST /v1/projects/{p}/memory/candidates/{candidate_id}/approve"}


def test_the_docs_section_is_generated_from_the_table() -> None:
    """docs/security.md's Authorization section is markdown(); regenerate with --write."""
    text = m.DOCS.read_text(encoding="utf-8")
    assert m.section_of(text) == m.markdown(), (
        "regenerate: .venv/bin/python -m tests.security.authz_matrix --write"
    )


def test_write_docs_replaces_only_its_own_section(tmp_path: Path) -> None:
    docs = tmp_path / "security.md"
    docs.write_text("# S\n\n## Before\n\nkeep\n\n## Authorization\n\nold\n\n## After\n\nkeep too\n")
    m.write_docs(docs)
    text = docs.read_text()
    assert text.startswith("# S\n\n## Before\n\nkeep\n\n## Authorization\n")
    assert text.endswith("\n## After\n\nkeep too\n")
    assert m.section_of(text) == m.markdown()


# --- the API matrix ---------------------------------------------------------------------------


@pytest.mark.parametrize(("row", "principal"), API_CELLS)
def test_api_cell(world: m.World, db: None, memory_write_token: str, row: m.Row,
                  principal: str) -> None:
    before = snapshot()
    response = call(row, world, credentials(world, principal))
    assert_status(response, row.status(principal), row)
    assert_writes(before, response, row)
    # Answers carry memory and instructions: no cache keeps one, nor a refusal.
    assert response["Cache-Control"] == "no-store"


@pytest.mark.parametrize(
    ("row", "variant"),
    [pytest.param(row, variant, id=cell_id(row, variant, row.status("none")))
     for row in m.API for variant in m.ANONYMOUS_VARIANTS],
)
def test_credentials_that_never_authenticate(world: m.World, db: None, memory_write_token: str,
                                             row: m.Row, variant: str) -> None:
    before = snapshot()
    for headers, query in variant_requests(world, variant):
        response = call(row, world, headers, query)
        assert_status(response, row.status("none"), row)
    assert changed(before, snapshot()) == set()


def test_a_token_in_the_query_string_is_not_logged(world: m.World, db: None,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    token = world.tokens["a"]
    with caplog.at_level("DEBUG"):
        response = APIClient().get(f"/v1/projects/alpha/memory?access_token={token}")
    assert response.status_code == 401
    assert caplog.records, "the refusal is logged (django.request), without the query string"
    assert token not in caplog.text


def options_status(row: m.Row, principal: str) -> int:
    """OPTIONS meets the same authentication and scoping as the route, then answers 200."""
    status = row.status(principal)
    refused = status in (401, 404) or (status == 403 and row.code_403 == "forbidden")
    return status if refused else 200


@pytest.mark.parametrize("row", [pytest.param(row, id=row.label) for row in m.API])
def test_head_and_options_are_gated_like_the_route(world: m.World, db: None,
                                                   memory_write_token: str, row: m.Row) -> None:
    for principal in m.PRINCIPALS:
        headers = credentials(world, principal)
        options = call(row, world, headers, method="OPTIONS")
        assert options.status_code == options_status(row, principal), principal
        if row.method in ("GET", "ANY"):
            head = call(row, world, headers, method="HEAD")
            assert head.status_code == row.status(principal), principal
            assert content(head) == b""


MEMORY_BOUNDARY_ROWS = [row for row in m.API if row.code_403 == "memory_write_forbidden"]


@pytest.mark.parametrize("row", [pytest.param(row, id=row.label) for row in MEMORY_BOUNDARY_ROWS])
def test_without_a_memory_write_token_configured_project_tokens_write_memory(
    world: m.World, db: None, row: m.Row
) -> None:
    """Contract section 2: "Unset: project tokens may write" (the fixture leaves it unset)."""
    before = snapshot()
    response = call(row, world, credentials(world, "project"))
    assert_status(response, row.status("memory"), row)
    assert_writes(before, response, row)


ONE_ROW_PER_ROUTE = list({row.route: row for row in m.API if row.method != "ANY"}.values())


@pytest.mark.parametrize("row", [pytest.param(row, id=m.display(row.route))
                                 for row in ONE_ROW_PER_ROUTE])
def test_methods_a_route_does_not_serve_answer_405(world: m.World, db: None,
                                                   memory_write_token: str, row: m.Row) -> None:
    """The matrix lists every method a route serves; any other one is 405 with Allow."""
    served = {r.method for r in m.API if r.route == row.route}
    unserved = sorted({"GET", "POST", "PUT", "PATCH", "DELETE"} - served)
    # A principal the route admits, so the method is the only thing wrong.
    principal = next(p for p in ("memory", "admin") if 200 <= row.status(p) < 300)
    before = snapshot()
    for method in unserved:
        response = call(row, world, credentials(world, principal), method=method)
        assert response.status_code == 405, (method, response.content[:300])
        assert response.json()["code"] == "method_not_allowed"
        assert set(response["Allow"].replace(" ", "").split(",")) >= served
    assert changed(before, snapshot()) == set()


content = m.response_bytes


# --- the pages matrix -------------------------------------------------------------------------


PAGE_CELLS = [
    pytest.param(page, principal, id=cell_id(page, m.PAGE_LABELS[principal],
                                             page.status(principal)))
    for page in m.PAGES
    for principal in m.PAGE_PRINCIPALS
]


@pytest.mark.parametrize(("page", "principal"), PAGE_CELLS)
def test_page_cell(world: m.World, db: None, page: m.PageRow, principal: str) -> None:
    client = Client()
    if world.users[principal] is not None:
        client.force_login(world.users[principal])
    status = page.status(principal)
    for template in page.urls:
        url = template.format(**world.ids)
        response = client.generic(page.method, url)
        assert response.status_code == status, url
        if status == 302:
            location = response["Location"]
            assert location == page.redirect or location.startswith(page.redirect + "?"), url
        if page.route.startswith("p/"):
            body = content(response).decode()
            for word in m.B_MARKERS:
                assert word not in body, (url, word)
