"""Every /v1 answer is the contract's JSON shape, in every mode (issue 15, section 2).

In-process on the suite's database (SQLite and PostgreSQL passes): path
values that cannot be ids (NUL, over-long, wrong pattern) on every
project-bound route of the authorization matrix, too many query parameters,
a disallowed Host with DEBUG on and off, an unacceptable Accept before and
after authentication, and the context bundle's own ``?format=``. Then a real
gunicorn for what only it decides: the request-line limit and the Host
header on the wire.

A client error is logged as one line: no record carries a traceback.
"""

from __future__ import annotations

import http.client
import inspect
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib import admin
from django.test import Client
from rest_framework.test import APIClient

from gedweb import errors
from gedweb.exceptions import STATUSES, domain_status
from memory.api.serializers import MAX_SEARCH_CHARS
from tests.live_server import LiveGunicorn
from tests.security import authz_matrix as m

LEAKS = ("Traceback", "/work/", "SELECT", 'File "', "site-packages", "django.db", "psycopg")
# Converters that only keep out what can never be a value (gedweb/converters.py):
# the view itself judges the pattern (skill names, document paths: 400).
LENIENT = {"text", "session", "docpath"}
BAD_VALUES = {"nul": "%00", "long": "a" * 300, "pattern": "Not~An%20Id"}
TOO_MANY = "&".join(f"p{i}=1" for i in range(1001))


@pytest.fixture(scope="module")
def world(django_db_setup: None, django_db_blocker: Any,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[m.World]:
    yield from m.world_in_rollback(django_db_blocker, tmp_path_factory.mktemp("shapes"))


@pytest.fixture
def gamma(make_project: Any) -> Any:
    # Not "alpha": the module's world holds alpha and beta until its end.
    return make_project("gamma")


def assert_json_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert set(body) <= {"code", "message", "fields"} and body["code"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    text = json.dumps(body)
    assert not any(leak in text for leak in LEAKS), text
    return body


def assert_one_line_logs(caplog: pytest.LogCaptureFixture) -> None:
    for record in caplog.records:
        assert record.exc_info is None, record.getMessage()
        assert "Traceback" not in record.getMessage()


def send(world: m.World, row: m.Row, url: str, headers: dict[str, str]) -> Any:
    body = world.bodies[row.body] if row.body else None
    data, content_type = m.encode_body(body)
    verb = "GET" if row.method == "ANY" else row.method
    return APIClient().generic(verb, url, data, content_type=content_type, **headers)


def admin_headers(world: m.World) -> dict[str, str]:
    # The admin token covers every project, so the project id reaches the
    # lookup that PostgreSQL refused with a NUL in it.
    return {**m.credentials(world, "admin"), **m.memory_header()}


def bad_urls(route: str, url: str) -> Iterator[tuple[str, str, str]]:
    """(converter, kind, url) with one path value of the row's URL replaced."""
    route_parts = route.lstrip("^").split("/")
    url_parts = url.split("?")[0].lstrip("/").split("/")
    for index, part in enumerate(route_parts):
        match = re.fullmatch(r"<(\w+):\w+>", part)
        if match is None:
            continue
        for kind, value in BAD_VALUES.items():
            if kind == "pattern" and match.group(1) in LENIENT:
                continue
            parts = list(url_parts)
            parts[index] = value
            yield match.group(1), kind, "/" + "/".join(parts)


def project_bound(rows: list[Any]) -> list[Any]:
    return [row for row in rows if "<project:project_id>" in row.route]


# --- path values ------------------------------------------------------------------------------


@pytest.mark.parametrize("row", project_bound(m.API), ids=lambda row: row.label)
def test_a_path_value_that_cannot_be_an_id_is_a_json_404(
    world: m.World, db: None, row: m.Row, caplog: pytest.LogCaptureFixture
) -> None:
    template = row.url.format(**world.ids)
    cases = list(bad_urls(row.route, template))
    assert cases
    for converter, kind, url in cases:
        response = send(world, row, url, admin_headers(world))
        assert response.status_code == 404, (converter, kind, url, response.content[:300])
        assert response.json() == {"code": "not_found", "message": "not found"}
    assert_one_line_logs(caplog)


@pytest.mark.parametrize("page", project_bound(m.PAGES), ids=lambda page: page.label)
def test_a_team_page_path_value_that_cannot_be_an_id_is_a_404(
    world: m.World, db: None, page: m.PageRow
) -> None:
    client = Client()
    client.force_login(world.users["superuser"])
    for template in page.urls:
        for converter, kind, url in bad_urls(page.route, template.format(**world.ids)):
            response = client.get(url)
            assert response.status_code == 404, (converter, kind, url)


def admin_object_urls() -> list[str]:
    return [f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
            for model in admin.site._registry]


@pytest.mark.parametrize("value", ["%00", "x%00y", "9" * 40, "a" * 2000])
def test_an_admin_object_url_never_fails_on_a_strange_id(
    world: m.World, db: None, value: str
) -> None:
    client = Client()
    client.force_login(world.users["superuser"])
    for base in admin_object_urls():
        for suffix in ("change/", "history/", "delete/"):
            response = client.get(f"{base}{value}/{suffix}")
            # The admin's own answers: a redirect with "doesn't exist", a 404
            # (always for a NUL), or 403 where the model is read-only.
            assert response.status_code in (302, 403, 404), (base, suffix,
                                                             response.status_code)
            if "%00" in value:
                assert response.status_code == 404


def test_a_nul_anywhere_in_a_v1_path_is_the_json_404(client: Client, db: None) -> None:
    for path in ("/v1/%00", "/v1/projects/%00", "/v1/schema%00", "/v1/contract/%00"):
        assert_json_error(client.get(path), 404, "not_found")


def test_every_valid_value_still_resolves(world: m.World, db: None) -> None:
    # The converters are no stricter than the rules they mirror.
    api = APIClient()
    headers = admin_headers(world)
    longest_project = "a" + "b" * 62 + "c"
    assert_json_error(api.get(f"/v1/projects/{longest_project}", **headers), 404, "not_found")
    assert api.get("/v1/projects/alpha", **headers).status_code == 200
    uuid = str(world.ids["uuid"])
    for ref in (str(world.ids["seq"]), uuid, uuid.replace("-", ""), uuid.upper()):
        response = api.get(f"/v1/projects/alpha/memory/{ref}", **headers)
        assert response.status_code == 200, ref


# --- too many query parameters ----------------------------------------------------------------


def _expected_for_too_many(row: m.Row, principal: str) -> int:
    if row.expect == m.UNKNOWN_404:
        return 404
    if row.status(principal) == 401:
        return 401
    return 400


@pytest.mark.parametrize("principal", ["none", "admin"])
@pytest.mark.parametrize("row", m.API, ids=lambda row: row.label)
def test_too_many_query_parameters_are_a_json_400_after_the_401(
    world: m.World, db: None, row: m.Row, principal: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = row.url.format(**world.ids) + "?" + TOO_MANY
    headers = admin_headers(world) if principal == "admin" else {}
    before = m.snapshot()

    response = send(world, row, url, headers)

    status = _expected_for_too_many(row, principal)
    code = {400: "bad_request", 401: "unauthenticated", 404: "not_found"}[status]
    body = assert_json_error(response, status, code)
    if status == 400:
        assert "1,000" in body["message"]
    assert m.changed(before, m.snapshot()) == set()
    assert_one_line_logs(caplog)


def test_a_thousand_query_parameters_are_still_read(gamma: Any, client_for: Any) -> None:
    query = "&".join(f"p{i}=1" for i in range(1000))
    response = client_for(gamma.token).get(f"/v1/projects/{gamma.id}/memory?{query}")
    body = assert_json_error(response, 400, "validation_error")
    assert "p999" in body["fields"]


@pytest.mark.parametrize("path", ["/v1/schema", "/v1/docs"])
def test_the_schema_and_its_docs_answer_errors_as_json(
    db: None, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert_json_error(Client().get(path, HTTP_ACCEPT="application/xml"), 406, "not_acceptable")
    assert_json_error(Client().get(f"{path}?{TOO_MANY}"), 400, "bad_request")
    assert Client().get(path).status_code == 200
    assert_one_line_logs(caplog)


# --- Host ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("debug", [True, False], ids=["debug", "production"])
@pytest.mark.parametrize("token", [False, True], ids=["anonymous", "token"])
def test_a_disallowed_host_under_v1_is_the_json_400(
    gamma: Any, settings: Any, caplog: pytest.LogCaptureFixture, debug: bool, token: bool
) -> None:
    settings.DEBUG = debug
    headers = {"HTTP_AUTHORIZATION": f"Bearer {gamma.token}"} if token else {}
    for path in (f"/v1/projects/{gamma.id}/memory", "/v1/no-such-route", "/v1/schema"):
        response = Client().get(path, HTTP_HOST="evil.example", **headers)
        assert_json_error(response, 400, "bad_request")
    assert_one_line_logs(caplog)


@pytest.mark.parametrize("debug", [True, False], ids=["debug", "production"])
@pytest.mark.parametrize("path", ["/v1/projects/%0a", "/v1/projects/%0a/memory",
                                  "/v1/no-such-route", "/v1/projects/alpha/memory/x/y/z"])
def test_a_path_no_route_matches_under_v1_is_the_json_404(db: None, settings: Any, debug: bool,
                                                         path: str) -> None:
    """With DEBUG on, Django's technical 404 would list every URL pattern (issue 36 §2)."""
    settings.DEBUG = debug
    response = Client().get(path)
    assert_json_error(response, 404, "not_found")
    assert b"URLconf" not in response.content and b"urlpatterns" not in response.content


@pytest.mark.parametrize("debug", [True, False], ids=["debug", "production"])
def test_a_disallowed_host_elsewhere_is_the_plain_400_page(
    db: None, settings: Any, caplog: pytest.LogCaptureFixture, debug: bool
) -> None:
    settings.DEBUG = debug
    for path in ("/", "/p/alpha/", "/admin/", "/accounts/login/"):
        response = Client().get(path, HTTP_HOST="evil.example")
        assert response.status_code == 400
        text = response.content.decode()
        assert "DisallowedHost" not in text and "ALLOWED_HOSTS" not in text
        assert "Traceback" not in text and "settings" not in text.lower()
    assert_one_line_logs(caplog)


@pytest.mark.parametrize("debug", [True, False], ids=["debug", "production"])
def test_too_many_parameters_outside_v1_are_the_plain_400_page(
    db: None, settings: Any, caplog: pytest.LogCaptureFixture, debug: bool
) -> None:
    settings.DEBUG = debug
    form = {f"p{i}": "1" for i in range(1001)}
    answers = [Client().get(f"{path}?{TOO_MANY}") for path in ("/", "/p/alpha/", "/admin/",
                                                                "/accounts/login/")]
    answers.append(Client().post("/accounts/login/", form))
    for response in answers:
        assert response.status_code == 400
        text = response.content.decode()
        assert "TooManyFieldsSent" not in text and "Traceback" not in text
    assert_one_line_logs(caplog)
    assert any("TooManyFieldsSent" in r.name for r in caplog.records)


# --- Accept ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("principal", ["none", "admin"])
@pytest.mark.parametrize("row", m.API, ids=lambda row: row.label)
def test_an_unacceptable_accept_is_refused_only_after_authentication(
    world: m.World, db: None, row: m.Row, principal: str
) -> None:
    url = row.url.format(**world.ids)
    headers = admin_headers(world) if principal == "admin" else {}
    before = m.snapshot()

    response = send(world, row, url, {**headers, "HTTP_ACCEPT": "application/xml"})

    if row.expect == m.UNKNOWN_404:
        assert_json_error(response, 404, "not_found")
    elif row.status(principal) == 401:
        assert_json_error(response, 401, "unauthenticated")
        assert response["WWW-Authenticate"] == "Bearer"
    else:
        assert_json_error(response, 406, "not_acceptable")
    assert m.changed(before, m.snapshot()) == set()


# --- the context bundle's ?format= ---------------------------------------------------------------


def context_url(gamma: Any) -> str:
    return f"/v1/projects/{gamma.id}/context"


@pytest.mark.parametrize("query", ["", "?format=text"])
def test_context_format_text_is_the_plain_bundle(gamma: Any, client_for: Any, query: str) -> None:
    response = client_for(gamma.token).get(context_url(gamma) + query)
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode().startswith("## Ged Project Context Trust Boundary")
    assert len(response["X-Context-Sha256"]) == 64


def test_context_format_json_is_the_sections(gamma: Any, client_for: Any) -> None:
    response = client_for(gamma.token).get(context_url(gamma) + "?format=json")
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["project_id"] == gamma.id and body["sections"]


def test_context_with_an_unknown_format_names_the_field(gamma: Any, client_for: Any) -> None:
    response = client_for(gamma.token).get(context_url(gamma) + "?format=xml")
    assert list(assert_json_error(response, 400, "validation_error")["fields"]) == ["format"]


@pytest.mark.parametrize(("query", "accept", "status"), [
    ("", "text/plain", 200),
    ("", "application/json, text/plain;q=0.9, */*;q=0.1", 200),
    ("", "application/json", 406),
    ("?format=json", "application/json", 200),
    ("?format=json", "text/plain", 406),
])
def test_context_accept_may_only_refuse_the_chosen_format(
    gamma: Any, client_for: Any, query: str, accept: str, status: int
) -> None:
    response = client_for(gamma.token).get(context_url(gamma) + query, HTTP_ACCEPT=accept)
    assert response.status_code == status, response.content[:300]
    if status == 406:
        assert_json_error(response, 406, "not_acceptable")


def test_context_without_a_token_is_401_whatever_the_format_or_accept(
    gamma: Any, client: Client
) -> None:
    for query in ("", "?format=json", "?format=xml"):
        response = client.get(context_url(gamma) + query, HTTP_ACCEPT="application/xml")
        assert_json_error(response, 401, "unauthenticated")


# --- the search bound -----------------------------------------------------------------------------


def test_a_search_longer_than_the_bound_names_q(gamma: Any, client_for: Any) -> None:
    api = client_for(gamma.token)
    url = f"/v1/projects/{gamma.id}/memory"
    assert api.get(url, {"q": "\U0001f600" * MAX_SEARCH_CHARS}).status_code == 200
    body = assert_json_error(api.get(url, {"q": "x" * (MAX_SEARCH_CHARS + 1)}), 400,
                             "validation_error")
    assert list(body["fields"]) == ["q"]


# --- a real gunicorn ------------------------------------------------------------------------


def longest_listing_path(project: str, q: str) -> str:
    """Every listing parameter at its maximum, 4-byte characters wherever allowed."""
    params = {
        "limit": "500", "after": "9" * 18, "before": "9" * 19, "order": "desc",
        "category": "c" * 64, "source": "\U0001f600" * 128,
        "since": "2026-11-30T08:00:00.123456+00:00", "q": q, "view": "current",
    }
    query = "&".join(f"{name}={quote(value, safe='')}" for name, value in params.items())
    return f"/v1/projects/{project}/memory?{query}"


def raw_request(port: int, path: str, headers: dict[str, str]) -> tuple[int, bytes, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest("GET", path, skip_host="Host" in headers, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read(), response.getheader("Content-Type", "")
    finally:
        conn.close()


@pytest.mark.live_server
def test_gunicorn_serves_the_longest_valid_request_line_and_a_bad_host_as_json(
    tmp_path: Any,
) -> None:
    with LiveGunicorn.running(tmp_path) as server:
        project = "p" * 63 + "q"
        token = server.new_project(project)
        auth = {"Authorization": f"Bearer {token}", "Accept": "application/json"}

        longest = longest_listing_path(project, "\U0001f600" * MAX_SEARCH_CHARS)
        line = f"GET {longest} HTTP/1.1"
        assert 7_500 < len(line) <= 8_190
        status, body, content_type = raw_request(server.port, longest, auth)
        assert status == 200, body[:300]
        assert json.loads(body)["items"] == []

        too_long = longest_listing_path(project, "\U0001f600" * (MAX_SEARCH_CHARS + 1))
        status, body, content_type = raw_request(server.port, too_long, auth)
        assert status == 400 and content_type.startswith("application/json"), body[:300]
        assert list(json.loads(body)["fields"]) == ["q"]

        for headers in ({**auth, "Host": "evil.example"}, {"Host": "evil.example"}):
            status, body, content_type = raw_request(
                server.port, f"/v1/projects/{project}/memory", headers)
            assert status == 400 and content_type.startswith("application/json"), body[:300]
            assert json.loads(body)["code"] == "bad_request"

        status, body, _ = raw_request(server.port, f"/v1/projects/{project}/memory?{TOO_MANY}",
                                      {"Accept": "application/json"})
        assert status == 401 and json.loads(body)["code"] == "unauthenticated"
        status, body, _ = raw_request(server.port, f"/v1/projects/{project}/memory?{TOO_MANY}",
                                      auth)
        assert status == 400 and json.loads(body)["code"] == "bad_request"

        status, body, _ = raw_request(server.port, f"/v1/projects/{project}/skills/%00", auth)
        assert status == 404 and json.loads(body)["code"] == "not_found"

        server.stop()
        assert "Traceback" not in server.log_path.read_text(errors="replace")



def test_every_domain_error_has_its_own_code_and_an_http_status_of_its_own():
    """A new domain error must be given a status on purpose, not inherit 409 by accident."""
    classes = [cls for _, cls in inspect.getmembers(errors, inspect.isclass)
               if issubclass(cls, errors.DomainError)]
    assert len(classes) >= 13
    assert set(classes) == set(STATUSES)
    codes = [cls.code for cls in classes if cls is not errors.DomainError]
    assert len(codes) == len(set(codes))
    assert domain_status(errors.CheckoutRefused("x")) == 422
    assert domain_status(errors.StaleRevision("x")) == 409


# --- GedWeb's words, not DRF's (issue 36 §4) ------------------------------------------------


@pytest.mark.parametrize(("raw", "kind"), [
    ("[]", "an array"), ('"text"', "a string"), ("7", "a number"), ("true", "true or false"),
    ("null", "null"),
])
def test_a_body_that_is_not_an_object_is_named_body_in_gedwebs_words(gamma: Any, raw: str,
                                                                      kind: str) -> None:
    response = Client().post(f"/v1/projects/{gamma.id}/memory", raw,
                             content_type="application/json",
                             HTTP_AUTHORIZATION=f"Bearer {gamma.token}")
    body = assert_json_error(response, 400, "validation_error")
    assert body["fields"] == {"body": [f"must be a JSON object, not {kind}"]}
    assert body["message"] == "invalid input: body"
    assert b"non_field_errors" not in response.content and b"dictionary" not in response.content
