"""`gedweb mcp`: driven by the official SDK's stdio client against the live server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.cli.conftest import GEDWEB, LiveServer

pytestmark = [pytest.mark.live_server]

READ_ONLY = {"memory_list", "memory_search", "memory_get", "context_get", "standards_get",
             "governance_get", "governance_guard"}
WRITES = {"memory_add", "work_open"}


def with_session(env: dict[str, str], project: str,
                 body: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        params = StdioServerParameters(command=str(GEDWEB), args=["mcp", "--project", project],
                                       env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=30) as session:
                await session.initialize()
                return await body(session)

    return asyncio.run(asyncio.wait_for(main(), timeout=45))


def text_of(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


def test_tools_add_list_search_get_and_errors(gedweb_server: LiveServer) -> None:
    project = "mcp-shop"
    token = gedweb_server.new_project(project)
    env = gedweb_server.cli_env(GEDWEB_TOKEN=token)

    async def body(session: ClientSession) -> dict[str, Any]:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        added = await session.call_tool("memory_add", {"category": "decision",
                                                       "content": "use mcp for agents"})
        await session.call_tool("memory_add", {"category": "note", "content": "second note"})
        listed = await session.call_tool("memory_list", {"limit": 10})
        found = await session.call_tool("memory_search", {"query": "agents"})
        got = await session.call_tool("memory_get", {"ref": 1})
        missing = await session.call_tool("memory_get", {"ref": 999})
        bad_args = await session.call_tool("memory_add", {"category": "note"})
        context = await session.call_tool("context_get", {})
        opened = await session.call_tool("work_open", {
            "summary": "Add a login page", "minimum_mode": "direct-change",
            "ambiguity": "sufficient", "risk": "normal", "clear_scope": True, "bounded": True,
            "reversible": True, "deterministic_check": True})
        work_id = json.loads(text_of(opened))["work_id"]
        governance = await session.call_tool("governance_get", {"work_id": work_id})
        guard = await session.call_tool("governance_guard",
                                         {"work_id": work_id, "action": "commit"})
        return locals()

    r = with_session(env, project, body)
    tools = r["tools"]
    assert set(tools) == READ_ONLY | WRITES
    for name, tool in tools.items():
        assert tool.input_schema["type"] == "object"
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (name in READ_ONLY), name
    assert tools["memory_add"].input_schema["required"] == ["category", "content"]

    assert not r["added"].is_error, text_of(r["added"])
    entry = json.loads(text_of(r["added"]))
    assert entry["seq"] == 1 and entry["content"] == "use mcp for agents"
    listed = json.loads(text_of(r["listed"]))["items"]
    assert [e["seq"] for e in listed] == [2, 1]  # newest first
    assert [e["seq"] for e in json.loads(text_of(r["found"]))["items"]] == [1]
    assert json.loads(text_of(r["got"]))["id"] == entry["id"]
    assert r["missing"].is_error and "404 not_found" in text_of(r["missing"])
    assert r["bad_args"].is_error
    assert not r["context"].is_error and "use mcp for agents" in text_of(r["context"])
    assert not r["opened"].is_error, text_of(r["opened"])
    assert json.loads(text_of(r["governance"]))["schemaVersion"] == 1
    assert set(json.loads(text_of(r["guard"]))) == {"allowed", "reason"}
    assert len(gedweb_server.entries(project)) == 2


def test_memory_write_boundary_without_memory_token(gedweb_server: LiveServer) -> None:
    env = gedweb_server.cli_env()
    del env["GEDWEB_MEMORY_TOKEN"]
    before = len(gedweb_server.entries())

    async def body(session: ClientSession) -> Any:
        return await session.call_tool("memory_add", {"category": "note", "content": "nope"})

    result = with_session(env, gedweb_server.project, body)
    assert result.is_error
    assert "403 memory_write_forbidden" in text_of(result)
    assert len(gedweb_server.entries()) == before
