"""Remote MCP: the server's own Model Context Protocol endpoint at ``/mcp``.

Agents that connect to MCP servers by URL reach the same tools as
``gedweb mcp`` (stdio) over the official SDK's streamable HTTP transport, in
its stateless mode with JSON answers: every HTTP request is one exchange, so
any worker of any app server can answer it and nothing is kept between
requests.

One implementation of the tools serves both transports:
``gedweb.cli.mcp_server.build_server(client, project)``, whose tools are REST
calls through ``gedweb.cli.client.Client``. Here that client carries the
request's own ``Authorization`` and memory write token headers and reaches
the REST API in process, through an httpx WSGI transport to this same Django
application, so the API stays the one authority: authentication, project
scoping, the memory write boundary, rate limits, quotas and validation
answer a tool call exactly as they answer the same REST request.

The endpoint is an ASGI application (the SDK's transport is ASGI) served
under the WSGI server of ``make run`` by a2wsgi (``with_remote_mcp``, used by
gedweb/wsgi.py). It runs no Django middleware of its own: the Host header,
the token and the project are checked by the in-process REST call that
opens every exchange (``GET /v1/projects/{id}``). Errors of this layer, and
the SDK's transport errors, are GedWeb's JSON error shape (docs/api.md).

OAuth (docs/oauth.md): a 401 names the protected resource metadata
(RFC 9728) and the scopes, so an MCP client without a token can find the
authorization server. An OAuth access token is accepted by the REST API only
on the requests forwarded from here (the WSGI environ's ``gedweb.via_mcp``,
which no client header can set), because /mcp is its audience; it goes no
further than this process.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

import anyio
import httpx2
from a2wsgi import ASGIMiddleware
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from gedweb.cli.client import ApiError, Client, NetworkError
from gedweb.cli.mcp_server import build_server
from gedweb.lib.ids import PROJECT_ID_RE

MCP_PATH = "/mcp"
# The project an exchange works on: this header or ?project=; a project
# token without either works on its own project.
PROJECT_HEADER = "x-gedweb-project"
MEMORY_TOKEN_HEADERS = ("x-memory-token", "x-ferryman-memory-token")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# The codes of docs/api.md for the statuses the SDK's transport answers with.
_CODES = {400: "bad_request", 401: "unauthenticated", 403: "forbidden", 404: "not_found",
          405: "method_not_allowed", 406: "not_acceptable", 413: "payload_too_large",
          415: "unsupported_media_type", 429: "rate_limited", 503: "unavailable"}


def _error_body(status: int, code: str, message: str, **extra: Any) -> bytes:
    return json.dumps({"code": code, "message": message, **extra}, ensure_ascii=False,
                      separators=(",", ":")).encode("utf-8")


async def _answer(send: Send, status: int, body: bytes,
                  headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


def _headers(scope: Scope) -> dict[str, str]:
    # Of a repeated header the last one counts, as in Django's META.
    return {name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope.get("headers", [])}


def _bearer(headers: dict[str, str]) -> str | None:
    scheme, _, raw = headers.get("authorization", "").partition(" ")
    raw = raw.strip()
    if scheme.lower() != "bearer" or not raw or " " in raw or not raw.isprintable():
        return None
    return raw


def _requested_project(scope: Scope, headers: dict[str, str]) -> str | None:
    if PROJECT_HEADER in headers:
        return headers[PROJECT_HEADER]
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("project")
    return values[-1] if values else None


# The REST API's 401 (gedweb.exceptions), word for word: a client cannot tell
# the two endpoints apart by how they refuse a token.
UNAUTHENTICATED_MESSAGE = "missing, malformed, unknown or revoked bearer token"
ADMIN = "admin"


_HOST_RE = re.compile(r"[A-Za-z0-9.:\[\]-]{1,255}")


def _origin(scope: Scope, headers: dict[str, str]) -> str:
    """The origin as the client named it. Not yet checked against ALLOWED_HOSTS (the inner
    REST call does that), so a Host that is no host name never reaches a header."""
    host = headers.get("host", "")
    if not _HOST_RE.fullmatch(host):
        host = f"{scope['server'][0]}:{scope['server'][1]}"
    return f"{scope['scheme']}://{host}"


def _challenge(origin: str) -> bytes:
    """The 401's WWW-Authenticate: where the resource metadata is, and the scopes (RFC 9728 5.1)."""
    from gedweb.oauth.scopes import CHALLENGE_SCOPE

    metadata = f"{origin}/.well-known/oauth-protected-resource{MCP_PATH}"
    return (f'Bearer resource_metadata="{metadata}", scope="{CHALLENGE_SCOPE}"'
            .encode("latin-1", "replace"))


def _token_project(token: str, origin: str) -> str | None:
    """The project a project token (or an OAuth access token) belongs to; ``ADMIN`` for the
    admin token; None for a token that authenticates nothing (unknown, wrong, revoked,
    expired, or issued for another resource).

    The API's own authentication, so the endpoint names a token's project
    exactly as every /v1 route would scope it.
    """
    from django.db import close_old_connections

    from gedweb.oauth.grants import access_token_principal
    from memory.api.authentication import principal_for_token

    try:
        principal = principal_for_token(token) or access_token_principal(token, origin=origin)
    finally:
        # This thread is no Django request: keep its connection only as
        # long as CONN_MAX_AGE would keep a request's (request_finished does
        # the same for the in-process REST calls).
        close_old_connections()
    if principal is None:
        return None
    return principal.project_id if principal.project_id is not None else ADMIN


def _no_store(send: Send) -> Send:
    """Every answer says Cache-Control: no-store, as /v1's do: tool results carry memory."""

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(name, value) for name, value in message.get("headers", [])
                       if name.lower() != b"cache-control"]
            message = {**message, "headers": [*headers, (b"cache-control", b"no-store")]}
        await send(message)

    return wrapped


def _wrap_transport_errors(send: Send) -> Send:
    """The SDK's own error answers (406, 405, 413, a malformed message) in GedWeb's shape.

    Its body is a JSON-RPC error; its members stay beside ``code`` and
    ``message``, so MCP clients read it as the protocol defines and every
    other client as every /v1 error.
    """
    held: dict[str, Any] = {}

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] >= 400:
            held["start"], held["body"] = message, b""
            return
        if "start" not in held or message["type"] != "http.response.body":
            await send(message)
            return
        held["body"] += message.get("body", b"")
        if message.get("more_body"):
            return
        status = held["start"]["status"]
        try:
            protocol = json.loads(held["body"])
        except ValueError:
            protocol = None
        extra = protocol if isinstance(protocol, dict) else {}
        error = extra.get("error")
        text = (error.get("message") if isinstance(error, dict) else None) or (
            held["body"].decode("utf-8", "replace").strip() or f"HTTP {status}")
        # The first line: a validation error's full report stays in `error`.
        text = str(text).splitlines()[0][:200]
        kept = [(name, value) for name, value in held["start"].get("headers", [])
                if name.lower() not in (b"content-type", b"content-length")]
        extra = {k: v for k, v in extra.items() if k not in ("code", "message")}
        await _answer(send, status,
                      _error_body(status, _CODES.get(status, "mcp_error"), text, **extra),
                      kept)

    return wrapped


class RemoteMCP:
    """The ASGI application of ``/mcp``: one stateless MCP exchange per HTTP request."""

    def __init__(self, django_application: WSGIApp, max_request_body_size: int) -> None:
        self.django_application = django_application
        self.max_request_body_size = max_request_body_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # a2wsgi sends only HTTP; nothing else is served here
            return
        send = _no_store(send)
        if scope["path"] != MCP_PATH:
            await _answer(send, 404, _error_body(404, "not_found", "no such route"))
            return
        headers = _headers(scope)
        token = _bearer(headers)
        origin = _origin(scope, headers)
        unauthenticated = (401, _error_body(401, "unauthenticated", UNAUTHENTICATED_MESSAGE),
                           [(b"www-authenticate", _challenge(origin))])
        if token is None:
            await _answer(send, *unauthenticated)
            return
        if scope["method"] != "POST":
            # Stateless: no session to end (DELETE), and no server-initiated
            # stream (GET), which would hold a worker for as long as the
            # client keeps it open. The spec lets a server refuse both.
            await _answer(send, 405, _error_body(
                405, "method_not_allowed", f"method {scope['method']} is not allowed: "
                "the MCP endpoint takes one JSON-RPC message per POST"), [(b"allow", b"POST")])
            return
        project = _requested_project(scope, headers)
        if project is None:
            project = await anyio.to_thread.run_sync(_token_project, token, origin)
            if project is None:
                # A wrong or revoked token is a 401 as on /v1, never a request
                # to name the project it could not have named anyway.
                await _answer(send, *unauthenticated)
                return
            if project == ADMIN:
                await _answer(send, 400, _error_body(
                    400, "validation_error",
                    "name the project: the X-GedWeb-Project header or ?project= "
                    "(needed with the admin token)",
                    fields={"project": ["this field is required"]}))
                return
        if not PROJECT_ID_RE.fullmatch(project):
            # Never sent on: like a /v1 path value that cannot be an id.
            await _answer(send, 404, _error_body(404, "not_found", "no such project"))
            return
        client = self._client(scope, headers, token)
        try:
            try:
                await anyio.to_thread.run_sync(client.project, project)
            except ApiError as refused:
                await self._pass_on(send, refused, origin)
                return
            except (NetworkError, ValueError):
                await _answer(send, 503, _error_body(503, "unavailable",
                                                     "the API did not answer"))
                return
            manager = StreamableHTTPSessionManager(
                app=build_server(client, project), json_response=True, stateless=True,
                max_request_body_size=self.max_request_body_size)
            async with manager.run():
                await manager.handle_request(scope, receive, _wrap_transport_errors(send))
        finally:
            client.close()

    def _client(self, scope: Scope, headers: dict[str, str], token: str) -> Client:
        # The inner requests look like the outer one: same scheme, Host,
        # mount point and client address, so ALLOWED_HOSTS, HTTPS rules and
        # the rate limits see what they would see over the network.
        host = headers.get("host") or f"{scope['server'][0]}:{scope['server'][1]}"
        remote = scope.get("client") or ("127.0.0.1", 0)
        memory_token = next((headers[name] for name in MEMORY_TOKEN_HEADERS if name in headers),
                            None)
        transport = httpx2.WSGITransport(app=self._forwarded,
                                         script_name=scope.get("root_path", ""),
                                         remote_addr=remote[0])
        return Client(url=f"{scope['scheme']}://{host}", token=token, memory_token=memory_token,
                      max_attempts=1, transport=transport, warn=lambda _: None)

    def _forwarded(self, environ: dict[str, Any],
                   start_response: Callable[..., Any]) -> Iterable[bytes]:
        """The REST API, told that this request comes from /mcp (so OAuth tokens count)."""
        from memory.api.authentication import VIA_MCP_ENVIRON

        return self.django_application({**environ, VIA_MCP_ENVIRON: True}, start_response)

    @staticmethod
    async def _pass_on(send: Send, refused: ApiError, origin: str) -> None:
        extra: dict[str, Any] = {"fields": refused.fields} if refused.fields else {}
        headers = [(b"www-authenticate", _challenge(origin))] if refused.status == 401 else []
        if refused.retry_after is not None and refused.retry_after.isascii():
            headers.append((b"retry-after", refused.retry_after.encode("ascii")))
        await _answer(send, refused.status,
                      _error_body(refused.status, refused.code, refused.message, **extra),
                      headers)


def with_remote_mcp(django_application: WSGIApp, max_request_body_size: int) -> WSGIApp:
    """The site's WSGI application: ``/mcp`` (and below it) to RemoteMCP, the rest to Django."""
    mcp = ASGIMiddleware(RemoteMCP(django_application, max_request_body_size))  # type: ignore[arg-type]

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == MCP_PATH or path.startswith(MCP_PATH + "/"):
            return mcp(environ, start_response)  # type: ignore[arg-type]
        return django_application(environ, start_response)

    return application
