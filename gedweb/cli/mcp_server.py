"""`gedweb mcp --project P`: a Model Context Protocol server over stdio.

Built on the official `mcp` SDK's low-level server so every tool carries an
explicit JSON input schema and annotations. Each tool is one or a few REST
calls through gedweb.cli.client (never the database); every failure, from the
server or the network, becomes a tool result with isError set, so a bad call
never ends the session. Writes send the configured memory token as
X-Memory-Token, so the server's memory write boundary decides.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

from gedweb.cli.client import ApiError, Client, NetworkError
from gedweb.lib.ids import CATEGORY

READ_ONLY = types.ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                  idempotent_hint=True, open_world_hint=False)

_REF = {"description": "entry uuid or seq", "type": ["string", "integer"]}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": 500, "default": 20}


def _schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


TOOLS: list[types.Tool] = [
    types.Tool(
        name="memory_add",
        description="Append an entry to the project's append-only memory. Retried with one "
                    "idempotency key, so it never doubles an entry.",
        input_schema=_schema({
            "category": {"type": "string", "pattern": f"^{CATEGORY}$",
                         "description": "e.g. decision, note, fact"},
            "content": {"type": "string", "minLength": 1},
            "source": {"type": "string", "description": "default: operator"},
            "corrects": _REF | {"description": "uuid or seq of the entry this corrects"},
        }, ("category", "content")),
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                          idempotent_hint=False, open_world_hint=False),
    ),
    types.Tool(
        name="memory_list",
        description="List memory entries, newest first by default.",
        input_schema=_schema({
            "limit": _LIMIT,
            "category": {"type": "string"},
            "order": {"type": "string", "enum": ["asc", "desc"], "default": "desc"},
            "after": {"type": "integer", "minimum": 0},
            "before": {"type": "integer", "minimum": 1},
            "current_only": {"type": "boolean", "default": False,
                             "description": "leave out entries a later entry corrects"},
        }),
        annotations=READ_ONLY,
    ),
    types.Tool(
        name="memory_search",
        description="Full-text search of memory: every word must match (case-insensitive).",
        input_schema=_schema({"query": {"type": "string", "minLength": 1},
                              "limit": _LIMIT, "category": {"type": "string"}},
                             ("query",)),
        annotations=READ_ONLY,
    ),
    types.Tool(
        name="memory_get",
        description="One memory entry by uuid or seq, with corrected_by.",
        input_schema=_schema({"ref": _REF}, ("ref",)),
        annotations=READ_ONLY,
    ),
    types.Tool(
        name="context_get",
        description="The framed agent context bundle (trusted instructions and labelled "
                    "data); pass work_id for the runtime sections.",
        input_schema=_schema({"work_id": {"type": "string"}}),
        annotations=READ_ONLY,
    ),
    types.Tool(
        name="standards_get",
        description="STANDARDS.md built from the accepted standards imports.",
        input_schema=_schema({}),
        annotations=READ_ONLY,
    ),
    types.Tool(
        name="work_open",
        description="Open a work item; the server resolves direct- or planned-change.",
        input_schema=_schema({
            "summary": {"type": "string", "minLength": 1},
            "minimum_mode": {"type": "string", "enum": ["direct-change", "planned-change"]},
            "ambiguity": {"type": "string", "enum": ["sufficient", "decision-needed"]},
            "risk": {"type": "string", "enum": ["low", "normal", "high"]},
            "clear_scope": {"type": "boolean"},
            "bounded": {"type": "boolean"},
            "reversible": {"type": "boolean"},
            "deterministic_check": {"type": "boolean"},
            "escalation_reason": {"type": "string"},
            "execution_profile": {"type": "string",
                                  "enum": ["solo", "assisted", "coordinated", "high-stakes"]},
            "branch": {"type": "string"},
            "base_head": {"type": "string"},
        }, ("summary", "minimum_mode", "ambiguity", "risk", "clear_scope", "bounded",
            "reversible", "deterministic_check")),
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                          idempotent_hint=False, open_world_hint=False),
    ),
    types.Tool(
        name="governance_get",
        description="The work item's current governance document (GedPi governance.json).",
        input_schema=_schema({"work_id": {"type": "string"}}, ("work_id",)),
        annotations=READ_ONLY,
    ),
    types.Tool(
        name="governance_guard",
        description="Ask whether an action is allowed now: {allowed, reason}. Reads only.",
        input_schema=_schema({
            "work_id": {"type": "string"},
            "action": {"type": "string",
                       "enum": ["metadata-mutation", "source-mutation", "commit"]},
        }, ("work_id", "action")),
        annotations=READ_ONLY,
    ),
]
TOOL_NAMES = frozenset(tool.name for tool in TOOLS)


class ToolInputError(Exception):
    pass


def _require(args: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = args.get(name)
    if value is None:
        raise ToolInputError(f"{name} is required")
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ToolInputError(f"{name} has the wrong type")
    return value


def _optional(args: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    if args.get(name) is None:
        return None
    return _require(args, name, kind)


def make_handlers(client: Client, project: str) -> dict[str, Callable[[dict[str, Any]], Any]]:
    """Tool name -> a blocking function of the arguments returning str or JSON data."""

    def memory_add(a: dict[str, Any]) -> Any:
        return client.memory_add(project, _require(a, "category", str),
                                 _require(a, "content", str), _optional(a, "source", str),
                                 _optional(a, "corrects", (str, int)))

    def memory_list(a: dict[str, Any]) -> Any:
        return client.memory_page(
            project, limit=_optional(a, "limit", int) or 20,
            category=_optional(a, "category", str), order=_optional(a, "order", str) or "desc",
            after=_optional(a, "after", int), before=_optional(a, "before", int),
            view="current" if a.get("current_only") is True else None,
        )

    def memory_search(a: dict[str, Any]) -> Any:
        return client.memory_page(project, q=_require(a, "query", str),
                                  limit=_optional(a, "limit", int) or 20,
                                  category=_optional(a, "category", str), order="desc")

    def memory_get(a: dict[str, Any]) -> Any:
        return client.memory_get(project, _require(a, "ref", (str, int)))

    def context_get(a: dict[str, Any]) -> Any:
        return client.context(project, _optional(a, "work_id", str))

    def standards_get(a: dict[str, Any]) -> Any:
        return client.standards(project)

    def work_open(a: dict[str, Any]) -> Any:
        return client.work_open(project, {k: v for k, v in a.items() if v is not None})

    def governance_get(a: dict[str, Any]) -> Any:
        return client.governance(project, _require(a, "work_id", str))

    def governance_guard(a: dict[str, Any]) -> Any:
        return client.guard(project, _require(a, "work_id", str), _require(a, "action", str))

    return {name: fn for name, fn in locals().items() if name in TOOL_NAMES}


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                is_error=True)


def build_server(client: Client, project: str) -> Server:
    handlers = make_handlers(client, project)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        handler = handlers.get(params.name)
        if handler is None:
            return _error(f"unknown tool: {params.name}")
        arguments = dict(params.arguments or {})
        try:
            result = await anyio.to_thread.run_sync(handler, arguments)
        except ApiError as exc:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"gedweb: {exc.one_line()}")],
                structured_content={"status": exc.status, "code": exc.code,
                                    "message": exc.message},
                is_error=True,
            )
        except NetworkError as exc:
            return _error(f"gedweb: {exc}")
        except ToolInputError as exc:
            return _error(f"invalid arguments: {exc}")
        except (ValueError, UnicodeDecodeError):
            return _error("gedweb: the server's answer is not the JSON the API promises")
        if isinstance(result, str):
            return types.CallToolResult(content=[types.TextContent(type="text", text=result)])
        return types.CallToolResult(
            content=[types.TextContent(type="text",
                                       text=json.dumps(result, ensure_ascii=False, indent=2))],
            structured_content=result if isinstance(result, dict) else None,
        )

    return Server("gedweb", on_list_tools=list_tools, on_call_tool=call_tool)


def serve(client: Client, project: str) -> int:
    server = build_server(client, project)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
    return 0
