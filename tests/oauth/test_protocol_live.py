"""OAuth 2.1 on /mcp against a live server, over plain HTTP: discovery, registration both
ways, PKCE, audience, rotation, revocation, and every refusal with its OAuth error code
and nothing stored (docs/oauth.md)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest

from tests.live_server import http_request
from tests.oauth.conftest import OTHER, PROJECT, OAuthSite
from tests.oauth.support import Browserless, pkce_pair

pytestmark = [pytest.mark.live_server]

CALLBACK = "http://127.0.0.1:53682/callback"
MCP_ACCEPT = "application/json, text/event-stream"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"}}}


def register(site: OAuthSite, **metadata: Any) -> dict[str, Any]:
    body = {"client_name": "Raw client", "redirect_uris": [CALLBACK],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "none", **metadata}
    answer = httpx2.post(site.base + "/oauth/register/", json=body, timeout=30)
    assert answer.status_code == 201, answer.text
    registered: dict[str, Any] = answer.json()
    return registered


def auth_params(client_id: str, challenge: str, **extra: str) -> dict[str, str]:
    return {"response_type": "code", "client_id": client_id, "redirect_uri": CALLBACK,
            "code_challenge": challenge, "code_challenge_method": "S256", "state": "s1",
            "scope": "memory:read memory:propose memory:write", **extra}


def token_request(site: OAuthSite, **form: str) -> httpx2.Response:
    return httpx2.post(site.base + "/oauth/token/", data=form, timeout=30)


def exchange(site: OAuthSite, client_id: str, code: str, verifier: str,
             redirect_uri: str = CALLBACK) -> httpx2.Response:
    return token_request(site, grant_type="authorization_code", code=code,
                         redirect_uri=redirect_uri, client_id=client_id, code_verifier=verifier,
                         resource=site.mcp)


def mcp_post(site: OAuthSite, token: str | None, body: Any = INITIALIZE,
             host: str = "127.0.0.1") -> tuple[int, Any, dict[str, str]]:
    headers = {"Accept": MCP_ACCEPT, "Host": f"{host}:{site.server.port}"}
    return http_request(site.server.port, "POST", "/mcp", token, body, headers, timeout=30)


def access_tokens(site: OAuthSite, client_id: str) -> int:
    return site.count("oauth2_provider_accesstoken a JOIN oauth2_provider_application p "
                      "ON a.application_id = p.id", "p.client_id = %s AND a.user_id IS NOT NULL",
                      (client_id,))


@pytest.fixture(scope="module")
def alice(site: OAuthSite) -> Browserless:
    return Browserless(site.base, "alice")


def grant(site: OAuthSite, alice: Browserless, *, scope: str = "memory:read",
          project: str = PROJECT) -> tuple[str, dict[str, Any]]:
    """A fresh client, a consent and a code exchanged: (client_id, token answer)."""
    client_id = register(site)["client_id"]
    verifier, challenge = pkce_pair()
    code = alice.code_for(auth_params(client_id, challenge, resource=site.mcp),
                          project=project, scope=scope,
                          memory_token=site.server.memory_token)
    answer = exchange(site, client_id, code, verifier)
    assert answer.status_code == 200, answer.text
    return client_id, answer.json()


# --- discovery ------------------------------------------------------------------------


def test_a_401_from_mcp_names_the_resource_metadata_and_the_scopes(site: OAuthSite) -> None:
    status, body, headers = mcp_post(site, None)
    assert status == 401
    assert body["code"] == "unauthenticated"
    assert headers["www-authenticate"] == (
        f'Bearer resource_metadata="{site.base}/.well-known/oauth-protected-resource/mcp", '
        'scope="memory:read memory:propose memory:write"')


def test_the_protected_resource_metadata_names_this_server_and_its_scopes(
        site: OAuthSite) -> None:
    for path, resource in (("/.well-known/oauth-protected-resource/mcp", site.mcp),
                           ("/.well-known/oauth-protected-resource", site.base)):
        answer = httpx2.get(site.base + path, timeout=30)
        assert answer.status_code == 200, answer.text
        metadata = answer.json()
        assert metadata["resource"] == resource
        assert metadata["authorization_servers"] == [site.base]
        assert metadata["scopes_supported"] == ["memory:propose", "memory:read", "memory:write"]
        assert metadata["bearer_methods_supported"] == ["header"]


def test_the_authorization_server_metadata_offers_code_with_s256_only(site: OAuthSite) -> None:
    answer = httpx2.get(site.base + "/.well-known/oauth-authorization-server", timeout=30)
    assert answer.status_code == 200, answer.text
    metadata = answer.json()
    assert metadata["issuer"] == site.base
    assert metadata["authorization_endpoint"] == site.base + "/oauth/authorize/"
    assert metadata["token_endpoint"] == site.base + "/oauth/token/"
    assert metadata["registration_endpoint"] == site.base + "/oauth/register/"
    assert metadata["revocation_endpoint"] == site.base + "/oauth/revoke/"
    assert metadata["response_types_supported"] == ["code"]
    assert metadata["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["client_id_metadata_document_supported"] is True
    assert "introspection_endpoint" not in metadata


# --- the flow, and what a token may do ------------------------------------------------------


def test_a_read_grant_lists_through_mcp_and_refuses_a_write(site: OAuthSite,
                                                           alice: Browserless) -> None:
    _, tokens = grant(site, alice, scope="memory:read")
    assert tokens["scope"] == f"memory:read project:{PROJECT}"
    status, body, _ = mcp_post(site, tokens["access_token"])
    assert status == 200, body
    assert body["result"]["serverInfo"]["name"]
    before = site.count("memory_memoryentry")
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "memory_add", "arguments": {"category": "decision", "content": "no"}}}
    status, body, _ = mcp_post(site, tokens["access_token"], call)
    assert status == 200, body
    assert body["result"]["isError"] is True
    assert "memory:read" in body["result"]["content"][0]["text"]
    assert site.count("memory_memoryentry") == before


def test_a_write_grant_writes_as_the_person_and_the_client(site: OAuthSite,
                                                          alice: Browserless) -> None:
    _, tokens = grant(site, alice, scope="memory:write")
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "memory_add", "arguments": {"category": "decision",
                                            "content": "written over OAuth"}}}
    status, body, _ = mcp_post(site, tokens["access_token"], call)
    assert status == 200, body
    assert body["result"]["isError"] is False, body
    rows = site.server.sql("SELECT author FROM memory_memoryentry WHERE content = %s",
                           ("written over OAuth",))
    assert rows == [("user:alice via Raw client",)]


def test_an_oauth_token_is_refused_on_the_rest_api_directly(site: OAuthSite,
                                                           alice: Browserless) -> None:
    _, tokens = grant(site, alice)
    status, body, _ = http_request(site.server.port, "GET", f"/v1/projects/{PROJECT}/memory",
                                   tokens["access_token"])
    assert (status, body["code"]) == (401, "unauthenticated")


def test_a_refresh_rotates_and_a_replayed_refresh_token_ends_the_family(
        site: OAuthSite, alice: Browserless) -> None:
    client_id, tokens = grant(site, alice)
    first = token_request(site, grant_type="refresh_token", client_id=client_id,
                          refresh_token=tokens["refresh_token"])
    assert first.status_code == 200, first.text
    rotated = first.json()
    assert rotated["refresh_token"] != tokens["refresh_token"]
    assert rotated["scope"] == tokens["scope"]
    assert mcp_post(site, tokens["access_token"])[0] == 401
    assert mcp_post(site, rotated["access_token"])[0] == 200
    replay = token_request(site, grant_type="refresh_token", client_id=client_id,
                           refresh_token=tokens["refresh_token"])
    assert (replay.status_code, replay.json()["error"]) == (400, "invalid_grant")
    # The replay revoked the family: the rotated tokens stop too.
    assert mcp_post(site, rotated["access_token"])[0] == 401
    assert access_tokens(site, client_id) == 0


def test_revocation_stops_the_token_at_once(site: OAuthSite, alice: Browserless) -> None:
    client_id, tokens = grant(site, alice)
    assert mcp_post(site, tokens["access_token"])[0] == 200
    answer = httpx2.post(site.base + "/oauth/revoke/", timeout=30, data={
        "token": tokens["access_token"], "client_id": client_id})
    assert answer.status_code == 200, answer.text
    assert mcp_post(site, tokens["access_token"])[0] == 401
    again = token_request(site, grant_type="refresh_token", client_id=client_id,
                          refresh_token=tokens["refresh_token"])
    assert again.status_code == 400


def test_a_revoked_grant_on_the_page_stops_working_at_once(site: OAuthSite,
                                                          alice: Browserless) -> None:
    client_id, tokens = grant(site, alice)
    page = alice.http.get("/oauth/grants/")
    assert page.status_code == 200
    assert client_id in page.text
    application = site.server.sql(
        "SELECT id FROM oauth2_provider_application WHERE client_id = %s", (client_id,))[0][0]
    answer = alice.http.post("/oauth/grants/revoke", data={
        "application": str(application), "scope": tokens["scope"],
        "csrfmiddlewaretoken": alice.csrf(page.text)})
    assert answer.status_code == 302
    assert mcp_post(site, tokens["access_token"])[0] == 401
    assert client_id not in alice.http.get("/oauth/grants/").text
    refresh = token_request(site, grant_type="refresh_token", client_id=client_id,
                            refresh_token=tokens["refresh_token"])
    assert refresh.status_code == 400


# --- consent rules ------------------------------------------------------------------------


def test_a_viewer_cannot_grant_more_than_read(site: OAuthSite) -> None:
    victor = Browserless(site.base, "victor")
    client_id = register(site)["client_id"]
    _, challenge = pkce_pair()
    answer = victor.consent(auth_params(client_id, challenge), project=PROJECT,
                            scope="memory:propose")
    assert answer.status_code == 200
    assert "does not let you grant memory:propose" in answer.text
    assert site.count("oauth2_provider_grant g JOIN oauth2_provider_application p "
                      "ON g.application_id = p.id", "p.client_id = %s", (client_id,)) == 0


def test_write_needs_the_memory_write_token(site: OAuthSite, alice: Browserless) -> None:
    client_id = register(site)["client_id"]
    _, challenge = pkce_pair()
    answer = alice.consent(auth_params(client_id, challenge), project=PROJECT,
                           scope="memory:write", memory_token="not-the-token")
    assert answer.status_code == 200
    assert "needs this server&#x27;s memory write token" in answer.text
    assert site.count("oauth2_provider_grant g JOIN oauth2_provider_application p "
                      "ON g.application_id = p.id", "p.client_id = %s", (client_id,)) == 0


def test_a_project_the_person_is_not_a_member_of_cannot_be_granted(
        site: OAuthSite, alice: Browserless) -> None:
    client_id = register(site)["client_id"]
    _, challenge = pkce_pair()
    answer = alice.consent(auth_params(client_id, challenge), project=OTHER, scope="memory:read")
    assert answer.status_code == 200
    assert "Select a valid choice" in answer.text


def test_denying_sends_access_denied_and_stores_nothing(site: OAuthSite,
                                                       alice: Browserless) -> None:
    client_id = register(site)["client_id"]
    _, challenge = pkce_pair()
    answer = alice.consent(auth_params(client_id, challenge), project=PROJECT,
                           scope="memory:read", allow=False)
    assert answer.status_code == 302
    assert parse_qs(urlsplit(answer.headers["location"]).query)["error"] == ["access_denied"]
    assert site.count("oauth2_provider_grant g JOIN oauth2_provider_application p "
                      "ON g.application_id = p.id", "p.client_id = %s", (client_id,)) == 0


# --- refusals ------------------------------------------------------------------------------


def test_a_wrong_code_verifier_is_invalid_grant(site: OAuthSite, alice: Browserless) -> None:
    client_id = register(site)["client_id"]
    _, challenge = pkce_pair()
    other_verifier, _ = pkce_pair()
    code = alice.code_for(auth_params(client_id, challenge), project=PROJECT,
                          scope="memory:read")
    answer = exchange(site, client_id, code, other_verifier)
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_grant")
    assert access_tokens(site, client_id) == 0


def test_a_reused_authorization_code_is_invalid_grant(site: OAuthSite,
                                                      alice: Browserless) -> None:
    client_id = register(site)["client_id"]
    verifier, challenge = pkce_pair()
    code = alice.code_for(auth_params(client_id, challenge), project=PROJECT,
                          scope="memory:read")
    assert exchange(site, client_id, code, verifier).status_code == 200
    again = exchange(site, client_id, code, verifier)
    assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")
    assert access_tokens(site, client_id) == 1


def test_a_redirect_uri_not_registered_is_refused_without_a_redirect(
        site: OAuthSite, alice: Browserless) -> None:
    client_id = register(site)["client_id"]
    _, challenge = pkce_pair()
    answer = alice.authorize({**auth_params(client_id, challenge),
                              "redirect_uri": "https://attacker.example/callback"})
    assert answer.status_code == 400
    assert "location" not in answer.headers
    assert "invalid_request" in answer.text


def test_a_redirect_uri_differing_at_the_token_endpoint_is_refused(
        site: OAuthSite, alice: Browserless) -> None:
    client_id = register(site, redirect_uris=[CALLBACK, "http://127.0.0.1:53682/other"])[
        "client_id"]
    verifier, challenge = pkce_pair()
    code = alice.code_for(auth_params(client_id, challenge), project=PROJECT,
                          scope="memory:read")
    answer = exchange(site, client_id, code, verifier,
                      redirect_uri="http://127.0.0.1:53682/other")
    # oauthlib's MismatchingRedirectURIError: invalid_request (RFC 6749 5.2 lists the
    # case under invalid_grant; the library's code is kept, the refusal is the point).
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_request")
    assert "redirect" in answer.json()["error_description"].lower()
    assert access_tokens(site, client_id) == 0


def test_a_loopback_redirect_takes_any_port(site: OAuthSite, alice: Browserless) -> None:
    client_id = register(site)["client_id"]
    _, challenge = pkce_pair()
    code_answer = alice.consent({**auth_params(client_id, challenge),
                                 "redirect_uri": "http://127.0.0.1:40001/callback"},
                                project=PROJECT, scope="memory:read")
    assert code_answer.status_code == 302
    assert code_answer.headers["location"].startswith("http://127.0.0.1:40001/callback?code=")


def test_a_resource_other_than_this_server_is_invalid_target(site: OAuthSite,
                                                             alice: Browserless) -> None:
    client_id = register(site)["client_id"]
    _, challenge = pkce_pair()
    answer = alice.consent(auth_params(client_id, challenge,
                                       resource="https://elsewhere.example/mcp"),
                           project=PROJECT, scope="memory:read")
    assert answer.status_code == 302
    assert parse_qs(urlsplit(answer.headers["location"]).query)["error"] == ["invalid_target"]
    assert site.count("oauth2_provider_grant g JOIN oauth2_provider_application p "
                      "ON g.application_id = p.id", "p.client_id = %s", (client_id,)) == 0


def test_a_token_for_another_resource_is_a_401_at_mcp(site: OAuthSite) -> None:
    # The same server under another name (localhost) is another resource.
    at_localhost = Browserless(f"http://localhost:{site.server.port}", "alice")
    client_id = register(site)["client_id"]
    verifier, challenge = pkce_pair()
    elsewhere = f"http://localhost:{site.server.port}/mcp"
    code = at_localhost.code_for(auth_params(client_id, challenge, resource=elsewhere),
                                 project=PROJECT, scope="memory:read")
    answer = at_localhost.http.post("/oauth/token/", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK,
        "client_id": client_id, "code_verifier": verifier, "resource": elsewhere})
    assert answer.status_code == 200, answer.text
    token = answer.json()["access_token"]
    assert mcp_post(site, token, host="localhost")[0] == 200
    status, body, headers = mcp_post(site, token, host="127.0.0.1")
    assert (status, body["code"]) == (401, "unauthenticated")
    assert "resource_metadata=" in headers["www-authenticate"]


def test_an_expired_token_is_a_401_at_mcp(site: OAuthSite, alice: Browserless) -> None:
    client_id, tokens = grant(site, alice)
    assert mcp_post(site, tokens["access_token"])[0] == 200
    # RETURNING: the helper reads rows, which an UPDATE gives PostgreSQL only so.
    expired = site.server.sql(
        "UPDATE oauth2_provider_accesstoken SET expires = '2000-01-01 00:00:00+00:00' "
        "WHERE application_id = (SELECT id FROM oauth2_provider_application "
        "WHERE client_id = %s) AND user_id IS NOT NULL RETURNING id", (client_id,))
    assert len(expired) == 1
    status, body, _ = mcp_post(site, tokens["access_token"])
    assert (status, body["code"]) == (401, "unauthenticated")


@pytest.mark.parametrize("pkce", ["plain", "none"])
def test_pkce_other_than_s256_is_refused(site: OAuthSite, alice: Browserless,
                                         pkce: str) -> None:
    client_id = register(site)["client_id"]
    verifier, _ = pkce_pair()
    params = auth_params(client_id, verifier)
    if pkce == "plain":
        # Refused when the code would be issued (the toolkit's RFC 9700 gate).
        params["code_challenge_method"] = "plain"
        answer = alice.consent(params, project=PROJECT, scope="memory:read")
    else:
        del params["code_challenge"], params["code_challenge_method"]
        answer = alice.authorize(params)
    assert answer.status_code == 302, answer.text
    query = parse_qs(urlsplit(answer.headers["location"]).query)
    assert query["error"] == ["invalid_request"] and "code" not in query
    assert site.count("oauth2_provider_grant g JOIN oauth2_provider_application p "
                      "ON g.application_id = p.id", "p.client_id = %s", (client_id,)) == 0


def test_a_removed_membership_stops_the_tokens_it_granted(site: OAuthSite) -> None:
    from tests.oauth.conftest import add_member

    add_member(site.server, "walter", PROJECT, "viewer")
    walter = Browserless(site.base, "walter")
    _, tokens = grant(site, walter, scope="memory:read")
    assert mcp_post(site, tokens["access_token"])[0] == 200
    done = site.server.manage("member", "remove", "walter", PROJECT)
    assert done.returncode == 0, done.stderr
    assert mcp_post(site, tokens["access_token"])[0] == 401


# --- client ID metadata documents -------------------------------------------------------------


def cimd_document(url: str, **extra: Any) -> dict[str, Any]:
    return {"client_id": url, "client_name": "Document client", "redirect_uris": [CALLBACK],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "none", **extra}


def applications(site: OAuthSite, client_id: str) -> int:
    return site.count("oauth2_provider_application", "client_id = %s", (client_id,))


def test_a_client_id_metadata_document_registers_its_client(site: OAuthSite,
                                                           alice: Browserless) -> None:
    url = site.documents.url("good.json")
    site.documents.put("good.json", cimd_document(url))
    verifier, challenge = pkce_pair()
    page = alice.authorize(auth_params(url, challenge))
    assert page.status_code == 200, page.text
    assert "Document client" in page.text and "127.0.0.1:53682" in page.text
    code = alice.code_for(auth_params(url, challenge), project=PROJECT, scope="memory:read")
    answer = exchange(site, url, code, verifier)
    assert answer.status_code == 200, answer.text
    assert applications(site, url) == 1


@pytest.mark.parametrize("case", ["unreachable", "too-large", "wrong-client-id"])
def test_a_bad_client_id_metadata_document_is_refused_and_stores_nothing(
        site: OAuthSite, alice: Browserless, case: str) -> None:
    if case == "unreachable":
        url = "https://127.0.0.1:9/unreachable.json"  # the discard port: nothing listens
    else:
        url = site.documents.url(f"{case}.json")
        document = cimd_document(url if case == "too-large" else url + "?other")
        if case == "too-large":
            document["padding"] = "x" * (17 * 1024)
        site.documents.put(f"{case}.json", document)
    _, challenge = pkce_pair()
    answer = alice.authorize(auth_params(url, challenge))
    assert answer.status_code == 400
    # oauthlib's InvalidClientIdError: the client is unknown, so no redirect.
    assert "invalid_request: Invalid client_id parameter value." in answer.text, answer.text
    assert "location" not in answer.headers
    assert applications(site, url) == 0
    if case != "unreachable":
        assert f"/{case}.json" in site.documents.fetched  # fetched, then refused
