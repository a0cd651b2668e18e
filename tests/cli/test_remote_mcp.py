"""The server's own MCP endpoint, /mcp, driven by the SDK's streamable HTTP client.

A real gunicorn as `make run` serves the site (gunicorn.conf.py, gthread
workers), on the suite's database: SQLite on the first pass, PostgreSQL on
the second. The tools are the stdio server's (gedweb.cli.mcp_server); here
the point is the transport: the same bearer tokens, the memory write
boundary, the project a request works on, and every refusal in GedWeb's JSON
error shape.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.cli.conftest import GEDWEB
from tests.live_server import REPO, LiveGunicorn, http_request

pytestmark = [pytest.mark.live_server]

PROJECT = "remote-shop"
MCP_ACCEPT = "application/json, text/event-stream"


class Remote:
    def __init__(self, server: LiveGunicorn, project_token: str) -> None:
        self.server = server
        self.port = server.port
        self.project_token = project_token
        self.url = f"http://127.0.0.1:{server.port}/mcp"

    def entries(self, project: str = PROJECT) -> list[dict[str, Any]]:
        status, body, _ = http_request(self.port, "GET", f"/v1/projects/{project}/memory?limit=500",
                                       self.server.admin_token)
        assert status == 200, body
        items: list[dict[str, Any]] = body["items"]
        return items

    def post(self, body: Any, *, token: str | None = None, path: str = "/mcp",
             headers: dict[str, str] | None = None,
             method: str = "POST") -> tuple[int, Any, dict[str, str]]:
        all_headers = {"Accept": MCP_ACCEPT, **(headers or {})}
        return http_request(self.port, method, path, token, body, all_headers, timeout=10)


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Remote]:
    with LiveGunicorn.running(tmp_path_factory.mktemp("remote-mcp")) as server:
        status, body, _ = http_request(server.port, "POST", "/v1/projects", server.admin_token,
                                       {"id": PROJECT, "name": "Remote shop"})
        assert status == 201, body
        status, other, _ = http_request(server.port, "POST", "/v1/projects", server.admin_token,
                                        {"id": "elsewhere", "name": "Elsewhere"})
        assert status == 201, other
        yield Remote(server, body["token"])


def with_session(url: str, headers: dict[str, str],
                 body: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=30) as session:
                    await session.initialize()
                    return await body(session)

    return asyncio.run(asyncio.wait_for(main(), timeout=60))


def text_of(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


async def described(session: ClientSession, init: Any) -> dict[str, Any]:
    """Everything a client learns of the server before calling a tool."""
    return {
        "server": init.server_info.model_dump(),
        "instructions": init.instructions,
        "tools": [t.model_dump() for t in (await session.list_tools()).tools],
        "resources": [r.model_dump() for r in (await session.list_resources()).resources],
        "templates": [t.model_dump() for t in
                      (await session.list_resource_templates()).resource_templates],
        "prompts": [p.model_dump() for p in (await session.list_prompts()).prompts],
    }


def stdio_description(remote: Remote) -> dict[str, Any]:
    """What `gedweb mcp` describes, started over stdio against the same server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEDWEB_")}
    env.update({"GEDWEB_URL": f"http://127.0.0.1:{remote.port}",
                "GEDWEB_TOKEN": remote.project_token})

    async def main() -> dict[str, Any]:
        params = StdioServerParameters(command=str(GEDWEB), args=["mcp", "--project", PROJECT],
                                       env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=30) as session:
                return await described(session, await session.initialize())

    return asyncio.run(asyncio.wait_for(main(), timeout=60))


def test_the_same_tools_and_a_write_through_the_memory_boundary(remote: Remote) -> None:
    headers = {"Authorization": f"Bearer {remote.project_token}",
               "X-Memory-Token": remote.server.memory_token}

    async def session(s: ClientSession) -> Any:
        tools = await s.list_tools()
        added = await s.call_tool("memory_add", {"category": "decision",
                                                 "content": "Remote MCP is served at /mcp."})
        listed = await s.call_tool("memory_list", {"limit": 5})
        return tools, added, listed

    tools, added, listed = with_session(remote.url, headers, session)
    # One implementation behind both transports: the same names, schemas, annotations.
    assert [t.model_dump() for t in tools.tools] == stdio_description(remote)["tools"]
    assert not added.is_error, text_of(added)
    entries = remote.entries()
    assert [e["content"] for e in entries] == ["Remote MCP is served at /mcp."]
    # Written by the token, as the same REST call would be: author is its name.
    assert entries[0]["author"] == "default"
    assert not listed.is_error
    assert "Remote MCP is served at /mcp." in text_of(listed)


def test_without_the_memory_token_a_write_is_a_tool_error_and_nothing_is_written(
        remote: Remote) -> None:
    before = len(remote.entries())

    async def session(s: ClientSession) -> Any:
        return await s.call_tool("memory_add", {"category": "note", "content": "not allowed"})

    result = with_session(remote.url, {"Authorization": f"Bearer {remote.project_token}"},
                          session)
    assert result.is_error
    assert "403 memory_write_forbidden" in text_of(result)
    assert len(remote.entries()) == before


def test_the_ferryman_memory_token_header_is_honoured_too(remote: Remote) -> None:
    headers = {"Authorization": f"Bearer {remote.project_token}",
               "X-Ferryman-Memory-Token": remote.server.memory_token}

    async def session(s: ClientSession) -> Any:
        return await s.call_tool("memory_add", {"category": "note", "content": "ferry header"})

    assert not with_session(remote.url, headers, session).is_error
    assert remote.entries()[-1]["content"] == "ferry header"


def test_the_admin_token_names_its_project_by_header_or_query(remote: Remote) -> None:
    admin = {"Authorization": f"Bearer {remote.server.admin_token}"}

    async def session(s: ClientSession) -> Any:
        return await s.call_tool("memory_list", {"limit": 1})

    by_header = with_session(remote.url, {**admin, "X-GedWeb-Project": "elsewhere"}, session)
    assert not by_header.is_error
    assert json.loads(text_of(by_header))["items"] == []
    by_query = with_session(remote.url + f"?project={PROJECT}", admin, session)
    assert not by_query.is_error
    assert json.loads(text_of(by_query))["items"]

    status, body, _ = remote.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                  token=remote.server.admin_token)
    assert status == 400
    assert body["code"] == "validation_error" and "project" in body["fields"]


def revoked_token(remote: Remote) -> str:
    """A token of PROJECT issued and revoked by the operator's commands, on the server's data."""
    def manage(*args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", "project", *args], cwd=REPO,
                              env=remote.server.env, capture_output=True, text=True, timeout=60,
                              check=True)
        return done.stdout

    raw: str = json.loads(manage("token", PROJECT, "--name", "retired"))["token"]
    manage("revoke", PROJECT, "--name", "retired")
    return raw


def _tools_list() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def test_tokens_are_checked_before_anything_else(remote: Remote) -> None:
    """A missing, wrong or revoked token is /v1's 401: status and body, whether or not
    the request names its project (issue 34 §8). Its WWW-Authenticate adds where an
    OAuth client finds the authorization server (issue 38; docs/oauth.md)."""
    rest_status, rest_body, rest_headers = http_request(
        remote.port, "GET", f"/v1/projects/{PROJECT}/memory", "wrong-token")
    assert rest_status == 401
    revoked = revoked_token(remote)
    for token in (None, "wrong-token", remote.project_token + "x", revoked):
        for path in (f"/mcp?project={PROJECT}", "/mcp"):
            status, body, headers = remote.post(_tools_list(), token=token, path=path)
            assert (status, body) == (rest_status, rest_body), (token, path, body)
            assert rest_headers["www-authenticate"] == "Bearer"
            assert headers.get("www-authenticate") == (
                f'Bearer resource_metadata="http://127.0.0.1:{remote.port}/.well-known/'
                'oauth-protected-resource/mcp", scope="memory:read memory:propose memory:write"')
            assert headers.get("cache-control") == rest_headers["cache-control"] == "no-store"
    # Malformed bearer headers never reach a lookup.
    status, body, _ = remote.post(_tools_list(), headers={"Authorization": "Basic abc"})
    assert (status, body["code"]) == (401, "unauthenticated")


def test_every_answer_says_no_store_as_the_api_does(remote: Remote) -> None:
    """A tool's result carries memory: no cache may keep it (issue 34 §9)."""
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "memory_list", "arguments": {"limit": 5}}}
    for body in (_tools_list(), call):
        status, answer, headers = remote.post(body, token=remote.project_token)
        assert status == 200, answer
        assert headers.get("cache-control") == "no-store", headers
    status, _, headers = remote.post(None, token=remote.project_token, method="GET")
    assert (status, headers.get("cache-control")) == (405, "no-store")


def test_another_projects_token_learns_nothing(remote: Remote) -> None:
    for project in ("elsewhere", "no-such-project", "NOT AN ID"):
        status, body, _ = remote.post(_tools_list(), token=remote.project_token,
                                      headers={"X-GedWeb-Project": project})
        assert (status, body["code"]) == (404, "not_found"), project


def test_only_post_and_only_the_one_path(remote: Remote) -> None:
    for method in ("GET", "DELETE", "PUT"):
        status, body, headers = remote.post(None, token=remote.project_token, method=method)
        assert status == 405, method
        assert body["code"] == "method_not_allowed"
        assert headers.get("allow") == "POST"
    status, body, _ = remote.post(_tools_list(), token=remote.project_token, path="/mcp/extra")
    assert (status, body["code"]) == (404, "not_found")


def test_transport_errors_keep_both_shapes(remote: Remote) -> None:
    token = remote.project_token
    conn = httpx2.Client(base_url=f"http://127.0.0.1:{remote.port}", timeout=10)
    auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    malformed = conn.post("/mcp", content=b"{bad", headers={**auth, "Accept": MCP_ACCEPT})
    assert malformed.status_code == 400
    body = malformed.json()
    assert body["code"] == "bad_request" and body["error"]["code"] == -32700
    html_only = conn.post("/mcp", json=_tools_list(), headers={**auth, "Accept": "text/html"})
    assert html_only.status_code == 406
    assert html_only.json()["code"] == "not_acceptable"
    too_big = conn.post("/mcp", headers={**auth, "Accept": MCP_ACCEPT},
                        content=json.dumps({**_tools_list(),
                                            "params": {"x": "a" * 1_100_000}}).encode())
    assert too_big.status_code == 413
    assert too_big.json()["code"] == "payload_too_large"
    conn.close()
    # None of these wrote anything.
    assert all(e["content"] != "a" for e in remote.entries())


def test_a_host_outside_allowed_hosts_is_refused(remote: Remote) -> None:
    status, body, _ = remote.post(_tools_list(), token=remote.project_token,
                                  headers={"Host": "evil.example"})
    assert (status, body["code"]) == (400, "bad_request")


def test_both_transports_describe_the_same_server(remote: Remote) -> None:
    async def main() -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {remote.project_token}"}
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(remote.url, http_client=http) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=30) as session:
                    return await described(session, await session.initialize())

    over_http = asyncio.run(asyncio.wait_for(main(), timeout=60))
    assert over_http == stdio_description(remote)
    assert over_http["server"]["name"] == "gedweb" and over_http["server"]["version"]
    assert f"project {PROJECT}" in over_http["instructions"]
    assert [p["name"] for p in over_http["prompts"]] == ["load_context"]
    assert f"gedweb://{PROJECT}/MEMORY.md" in [r["uri"] for r in over_http["resources"]]


def test_a_project_token_alone_proposes_over_http_and_a_retry_answers_the_first(
        remote: Remote) -> None:
    """The agent of issue 18: no memory write token, only its project's token."""
    entries_before = remote.entries()
    proposal = {"category": "decision", "content": "Proposed over HTTP.",
                "idempotency_key": "remote-proposal-1"}

    async def session(s: ClientSession) -> Any:
        first = await s.call_tool("memory_propose", proposal)
        again = await s.call_tool("memory_propose", proposal)
        listed = await s.call_tool("candidates_list", {"status": "pending"})
        bad = await s.call_tool("candidates_list", {"status": "pending", "limit": 0})
        memory = await s.read_resource(f"gedweb://{PROJECT}/MEMORY.md")
        return first, again, listed, bad, memory

    first, again, listed, bad, memory = with_session(
        remote.url, {"Authorization": f"Bearer {remote.project_token}"}, session)
    assert not first.is_error, text_of(first)
    assert json.loads(text_of(first)) == json.loads(text_of(again))
    pending = json.loads(text_of(listed))["items"]
    assert [c["content"] for c in pending].count("Proposed over HTTP.") == 1
    assert all("hash" not in c for c in pending)
    assert bad.is_error and text_of(bad) == "invalid arguments: limit must be at least 1"
    assert memory.contents[0].text.startswith(f"# Project memory: {PROJECT}")
    assert remote.entries() == entries_before


def test_a_token_over_its_rate_is_429_with_retry_after(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    with LiveGunicorn.running(tmp_path_factory.mktemp("remote-mcp-rate"),
                              GEDWEB_RATE_LIMIT="3/minute") as server:
        status, body, _ = http_request(server.port, "POST", "/v1/projects", server.admin_token,
                                       {"id": PROJECT, "name": "Rated"})
        assert status == 201, body
        remote = Remote(server, body["token"])
        answers = [remote.post(_tools_list(), token=remote.project_token) for _ in range(4)]
    assert [status for status, _, _ in answers[:3]] == [200, 200, 200]
    status, body, headers = answers[3]
    assert (status, body["code"]) == (429, "rate_limited")
    assert 1 <= int(headers["retry-after"]) <= 60
