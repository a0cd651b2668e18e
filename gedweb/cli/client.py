"""A small client for the GedWeb REST API, on httpx (the ``httpx2`` package).

Every call goes to ``/v1`` over HTTP, or, for the server's own remote MCP
endpoint, through an in-process WSGI transport to the same Django application
(gedweb/remote_mcp.py); nothing here imports Django or touches a database.
Errors become two exception types the CLI and the MCP server turn into
one-line messages: ``ApiError`` (the server answered with an error) and
``NetworkError`` (no usable answer, after the retries allowed).
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import random
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import httpx2

from gedweb.progress import Advance, Progress, unshown

DEFAULT_URL = "http://127.0.0.1:8787"
DEFAULT_TIMEOUT = 30.0
# Statuses a proxy or a restarting server gives while the request may or may not
# have reached GedWeb: safe to retry only with the same idempotency key.
TRANSIENT_STATUSES = frozenset({502, 503, 504})
MAX_ATTEMPTS = 5
BACKOFF_BASE = 0.25
BACKOFF_CAP = 4.0
# An entry's or a candidate's chain links: left out of what the CLI prints and
# the MCP tools answer unless asked for (``--hashes``, ``hashes: true``),
# since an agent pays for every byte of them in its context.
HASH_FIELDS = ("prev_hash", "hash", "content_sha256")
# gedweb push and pull's archive (gedweb.checkout.archive.MEDIA_TYPE).
ARCHIVE_MEDIA_TYPE = "application/gzip"


class ApiError(Exception):
    """The server answered with an error status and (usually) a JSON error body."""

    def __init__(self, status: int, code: str, message: str, fields: Any = None,
                 retry_after: str | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields
        # A 429's Retry-After, which the remote MCP endpoint passes on.
        self.retry_after = retry_after

    def one_line(self) -> str:
        text = f"{self.status} {self.code}: {self.message}"
        if self.fields:
            text += " " + json.dumps(self.fields, ensure_ascii=False, separators=(",", ":"))
        return " ".join(text.split())


class NetworkError(Exception):
    """No answer from the server (refused, reset, timed out) after every attempt."""


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


def is_loopback(host: str) -> bool:
    """localhost, *.localhost (RFC 6761) or a loopback address: traffic never leaves the machine."""
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def warn_once_on_stderr(message: str) -> None:
    sys.stderr.write(f"gedweb: warning: {message}\n")
    sys.stderr.flush()


def client_version() -> str:
    """The installed gedweb's version: ``gedweb --version`` and the MCP server's."""
    try:
        return version("gedweb")
    except PackageNotFoundError:  # pragma: no cover - run from a tree that is not installed
        return "unknown"


def without_hashes(record: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in record.items() if name not in HASH_FIELDS}


def new_idempotency_key() -> str:
    return f"gedweb-cli-{uuid.uuid4().hex}"


def _error_from(response: Response, reason: str) -> ApiError:
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        return ApiError(response.status, body["code"], str(body.get("message", "")),
                        body.get("fields"), response.headers.get("retry-after"))
    return ApiError(response.status, "http_error", reason or "unexpected response",
                    retry_after=response.headers.get("retry-after"))


@dataclass
class Client:
    url: str = DEFAULT_URL
    token: str | None = None
    memory_token: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    max_attempts: int = MAX_ATTEMPTS
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    warn: Callable[[str], None] = field(default=warn_once_on_stderr, repr=False)
    # Where requests go instead of the network: the remote MCP endpoint passes
    # an httpx2.WSGITransport to the server's own application.
    transport: httpx2.BaseTransport | None = field(default=None, repr=False)
    # Headers sent on every request (the remote MCP endpoint forwards Host).
    extra_headers: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--url must be an http(s) URL, got {self.url!r}")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        # Anyone on the path can read a token sent in clear to another host.
        self._warn_plain_http = (self._scheme == "http" and not is_loopback(self._host)
                                 and self.transport is None)
        self._http: httpx2.Client | None = None
        self._http_lock = threading.Lock()

    def _connection_pool(self) -> httpx2.Client:
        # One pool per Client, made on first use, so a long MCP session
        # reuses its keep-alive connections; the environment's proxy and
        # certificate variables are not read (trust_env=False), as before.
        with self._http_lock:
            if self._http is None:
                self._http = httpx2.Client(timeout=self.timeout, transport=self.transport,
                                           trust_env=False, follow_redirects=False)
            return self._http

    def close(self) -> None:
        with self._http_lock:
            if self._http is not None:
                self._http.close()
                self._http = None

    # --- transport -----------------------------------------------------------

    def _once(self, method: str, path: str, body: bytes | None,
              headers: dict[str, str], max_bytes: int | None = None,
              progress: Progress | None = None) -> Response:
        base = urlsplit(self.url)
        url = f"{base.scheme}://{base.netloc}{self._prefix}{path}"
        content: bytes | Iterator[bytes] | None = body
        if progress is not None and body:
            # Sent in pieces, each counted once it is handed to the connection.
            content = _pieces(body, progress(len(body), "upload", "B"))
            headers = {**headers, "Content-Length": str(len(body))}
        if max_bytes is None:
            raw = self._connection_pool().request(method, url, content=content, headers=headers)
            return Response(raw.status_code, {k.lower(): v for k, v in raw.headers.items()},
                            raw.content)
        # A body read as it arrives and refused past max_bytes (decoded bytes, so a
        # Content-Encoding bomb is cut off too): gedweb pull's archive.
        with self._connection_pool().stream(method, url, content=content,
                                            headers=headers) as streamed:
            advance: Advance = unshown
            if progress is not None and streamed.status_code < 400:
                size_header = streamed.headers.get("content-length") or ""
                total = int(size_header) if size_header.isdigit() else 0
                advance = progress(total, "download", "B")
            chunks, size, counted = [], 0, 0
            for chunk in streamed.iter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise ApiError(streamed.status_code, "bad_response",
                                   f"the answer is larger than {max_bytes:,} bytes")
                chunks.append(chunk)
                # Bytes as they crossed the network: what Content-Length counts.
                advance(streamed.num_bytes_downloaded - counted)
                counted = streamed.num_bytes_downloaded
            return Response(streamed.status_code,
                            {k.lower(): v for k, v in streamed.headers.items()}, b"".join(chunks))

    def request(self, method: str, path: str, *, query: dict[str, Any] | None = None,
                json_body: Any = None, headers: dict[str, str] | None = None,
                retry: bool = True, retry_conflict_codes: frozenset[str] = frozenset(),
                raw_body: tuple[bytes, str] | None = None, max_bytes: int | None = None,
                progress: Progress | None = None) -> Response:
        """One API call; raises ApiError for status >= 400, NetworkError when unreachable.

        With retry, network errors and 502/503/504 are retried with bounded
        exponential backoff and jitter, sending exactly the same request (so a
        POST must carry an Idempotency-Key to be retried safely). ``raw_body`` is
        (bytes, content type), for a body that is not JSON (gedweb push's archive).
        ``progress`` is told of the body's upload and of a streamed answer's
        download (``max_bytes``), on every attempt.
        """
        if query:
            pairs = {k: v for k, v in query.items() if v is not None}
            if pairs:
                path += "?" + urlencode(pairs)
        all_headers = {"Accept": "application/json, text/plain;q=0.9, */*;q=0.1",
                       "User-Agent": "gedweb-cli/1", **self.extra_headers}
        if self.token:
            all_headers["Authorization"] = f"Bearer {self.token}"
        if self._warn_plain_http and (self.token or self.memory_token):
            self._warn_plain_http = False
            self.warn(f"sending a token over plain http:// to {self._host}, which is not this "
                      "machine; anyone on the network path can read it (use https://)")
        data = None
        if json_body is not None:
            data = json.dumps(json_body, ensure_ascii=False).encode("utf-8")
            all_headers["Content-Type"] = "application/json"
        elif raw_body is not None:
            data, all_headers["Content-Type"] = raw_body
        if method in ("POST", "PUT", "PATCH", "DELETE") and self.memory_token:
            all_headers["X-Memory-Token"] = self.memory_token
        if headers:
            all_headers.update(headers)
        attempts = self.max_attempts if retry else 1
        last_problem = ""
        for attempt in range(1, attempts + 1):
            try:
                response = self._once(method, path, data, all_headers, max_bytes, progress)
            except (OSError, httpx2.TransportError) as exc:
                last_problem = _describe(exc)
            else:
                if response.status < 400:
                    return response
                error = _error_from(response, http.client.responses.get(response.status, ""))
                transient = (response.status in TRANSIENT_STATUSES
                             or error.code in retry_conflict_codes)
                if not transient or attempt == attempts:
                    raise error
                last_problem = error.one_line()
            if attempt < attempts:
                delay = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempt - 1))
                self.sleep(delay * (0.5 + random.random() / 2))
        raise NetworkError(
            f"cannot reach {self.url}: {last_problem} (after {attempts} attempt"
            f"{'s' if attempts != 1 else ''})"
        )

    def get_json(self, path: str, **query: Any) -> Any:
        return self.request("GET", path, query=query).json()

    # --- API -----------------------------------------------------------------

    @staticmethod
    def project_path(project: str, *rest: str) -> str:
        parts = ["v1", "projects", project, *rest]
        return "/" + "/".join(quote(str(p), safe="") for p in parts)

    def memory_add(self, project: str, category: str, content: str, source: str | None = None,
                   corrects: str | int | None = None,
                   idempotency_key: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"category": category, "content": content}
        if source is not None:
            body["source"] = source
        if corrects is not None:
            body["corrects"] = corrects
        return self._keyed_post(self.project_path(project, "memory"), body, idempotency_key)

    def memory_recall(self, project: str, query: str, **fields: Any) -> dict[str, Any]:
        """The entries that best answer ``query`` (POST /recall: any length of question).

        A read, so retried like one; ``fields`` are recall's others (limit,
        mode, view, category, source, since, until), left out when None.
        """
        body = {"q": query, **{k: v for k, v in fields.items() if v is not None}}
        answer: dict[str, Any] = self.request(
            "POST", self.project_path(project, "recall"), json_body=body).json()
        return answer

    def _keyed_post(self, path: str, body: dict[str, Any],
                    idempotency_key: str | None) -> dict[str, Any]:
        # One key for every attempt, so a retry of a request that was
        # committed but whose answer was lost gets the original back.
        key = idempotency_key or new_idempotency_key()
        response = self.request(
            "POST", path, json_body=body, headers={"Idempotency-Key": key},
            # The first attempt may still be running on the server.
            retry_conflict_codes=frozenset({"idempotency_in_flight"}),
        )
        created: dict[str, Any] = response.json()
        return created

    def project(self, project: str) -> dict[str, Any]:
        found: dict[str, Any] = self.get_json(self.project_path(project))
        return found

    def candidate_propose(self, project: str, category: str, content: str,
                          source: str | None = None,
                          idempotency_key: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"category": category, "content": content}
        if source is not None:
            body["source"] = source
        return self._keyed_post(self.project_path(project, "memory", "candidates"), body,
                                idempotency_key)

    def candidates_page(self, project: str, **query: Any) -> dict[str, Any]:
        page: dict[str, Any] = self.get_json(
            self.project_path(project, "memory", "candidates"), **query)
        return page

    def candidate_decide(self, project: str, candidate_id: str, decision: str) -> dict[str, Any]:
        """approve (answers the new entry), reject or withdraw (the candidate); never
        retried: a lost answer to an approval is found by listing the candidates."""
        if decision not in ("approve", "reject", "withdraw"):
            raise ValueError(f"unknown decision {decision!r}")
        answer: dict[str, Any] = self.request(
            "POST", self.project_path(project, "memory", "candidates", candidate_id, decision),
            retry=False).json()
        return answer

    def documents(self, project: str, prefix: str | None = None) -> dict[str, Any]:
        listing: dict[str, Any] = self.get_json(self.project_path(project, "documents"),
                                                prefix=prefix)
        return listing

    def document(self, project: str, path: str, revision: int | None = None) -> dict[str, Any]:
        # A document path keeps its slashes (adr/0001-x.md); each part is quoted.
        found: dict[str, Any] = self.get_json(
            self.project_path(project, "documents", *path.split("/")), revision=revision)
        return found

    def work_page(self, project: str, **query: Any) -> dict[str, Any]:
        page: dict[str, Any] = self.get_json(self.project_path(project, "work"), **query)
        return page

    def work_get(self, project: str, work_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.get_json(self.project_path(project, "work", work_id))
        return found

    def mirror_text(self, project: str) -> str:
        return self.request("GET", self.project_path(project, "memory.md")).text

    def memory_page(self, project: str, **query: Any) -> dict[str, Any]:
        page: dict[str, Any] = self.get_json(self.project_path(project, "memory"), **query)
        return page

    def iter_items(self, path: str, *, page_size: int,
                   cursor_type: type[int] | type[str] = int, descending: bool = False,
                   **query: Any) -> Iterator[dict[str, Any]]:
        """Every item of a cursor-paged listing, in the listing's order, following next_cursor.

        The one way a client reads a whole listing: each page is asked for
        ``after`` the previous page's ``next_cursor`` (``cursor_type``: a seq
        or an id, or a work id as ``str``), or ``before`` it when the listing
        runs newest first (``descending``, memory's ``order=desc``); a cursor
        of another type or one that does not move on is refused rather than
        followed forever. Items come as each page arrives and only that page
        is held, so a listing of a million entries takes the memory of one
        page; a failure on a later page raises after the earlier items.
        """
        cursor_name = "before" if descending else "after"
        position: int | str | None = None
        while True:
            page = self.get_json(path, limit=page_size, **{cursor_name: position}, **query)
            batch = page.get("items") if isinstance(page, dict) else None
            if not isinstance(batch, list):
                raise ApiError(200, "bad_response", "the listing has no items array")
            yield from batch
            cursor = page.get("next_cursor")
            if cursor is None:
                return
            if not _advances(cursor, position, cursor_type, descending=descending):
                raise ApiError(200, "bad_response", f"next_cursor does not advance: {cursor!r}")
            position = cursor

    def memory_iter(self, project: str, page_size: int = 500, order: str = "asc",
                    **query: Any) -> Iterator[dict[str, Any]]:
        """Every entry in seq order, page by page: oldest first, or newest first
        with ``order="desc"``."""
        return self.iter_items(self.project_path(project, "memory"), page_size=page_size,
                               descending=order == "desc", order=order, **query)

    def memory_get(self, project: str, ref: str | int) -> dict[str, Any]:
        entry: dict[str, Any] = self.get_json(self.project_path(project, "memory", str(ref)))
        return entry

    def context(self, project: str, work_id: str | None = None, task: str | None = None,
                budget: int | None = None, session: str | None = None,
                only: str | None = None) -> str:
        """The framed bundle; with ``task``, the entries recalled for it within ``budget``.

        ``session`` names the agent's session in the delivery log; ``only="recalled"``
        asks for the relevant recalled entries alone, "" when none is (204).
        """
        return self.request("GET", self.project_path(project, "context"),
                            query={"work_id": work_id, "task": task, "budget": budget,
                                   "session": session, "only": only}).text

    def standards(self, project: str) -> str:
        return self.request("GET", self.project_path(project, "standards")).text

    def work_open(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        # Not idempotent on the server: never retried, so work is opened at most once.
        opened: dict[str, Any] = self.request("POST", self.project_path(project, "work"),
                                              json_body=body, retry=False).json()
        return opened

    def governance(self, project: str, work_id: str) -> dict[str, Any]:
        state: dict[str, Any] = self.get_json(
            self.project_path(project, "work", work_id, "governance"))
        return state

    def checkout_push(self, project: str, archive: bytes, *, name: str,
                      dry_run: bool = False, progress: Progress | None = None,
                      ) -> dict[str, Any]:
        """Import a checkout's layout (a tar.gz) and answer ged_import's report.

        Retried like a read: an import of the same tree twice writes nothing the
        second time (docs/interop.md), so a retry after a lost answer is harmless.
        """
        report: dict[str, Any] = self.request(
            "POST", self.project_path(project, "checkout"),
            query={"dry_run": "true" if dry_run else "false", "name": name},
            raw_body=(archive, ARCHIVE_MEDIA_TYPE), progress=progress).json()
        return report

    def checkout_pull(self, project: str, max_bytes: int,
                      progress: Progress | None = None) -> bytes:
        """The project's layout as ged_export writes it, a tar.gz of at most ``max_bytes``
        (read as hostile input: gedweb.checkout.archive)."""
        return self.request("GET", self.project_path(project, "checkout"),
                            headers={"Accept": ARCHIVE_MEDIA_TYPE}, max_bytes=max_bytes,
                            progress=progress).body

    def guard(self, project: str, work_id: str, action: str) -> dict[str, Any]:
        # The guard only reads state, so a retry is harmless.
        verdict: dict[str, Any] = self.request(
            "POST", self.project_path(project, "work", work_id, "governance", "guard"),
            json_body={"action": action}).json()
        return verdict


UPLOAD_PIECE = 64 * 1024


def _pieces(body: bytes, advance: Advance) -> Iterator[bytes]:
    """``body`` in pieces of UPLOAD_PIECE bytes, advancing ``advance`` after each is sent."""
    for start in range(0, len(body), UPLOAD_PIECE):
        piece = body[start:start + UPLOAD_PIECE]
        yield piece
        advance(len(piece))


def _advances(cursor: Any, position: int | str | None,
              cursor_type: type[int] | type[str], *, descending: bool = False) -> bool:
    """A next cursor is of the listing's type and past the one its page was asked from:
    above it in an ascending listing, below it in a descending one."""
    if isinstance(cursor, bool) or not isinstance(cursor, cursor_type):
        return False  # JSON's true is no seq, though Python's bool is an int
    if position is None:
        return True
    # position is an earlier cursor that passed this same check, so of cursor's type.
    if isinstance(cursor, int) and isinstance(position, int):
        return cursor < position if descending else cursor > position
    if isinstance(cursor, str) and isinstance(position, str):
        return cursor < position if descending else cursor > position
    return False


def _describe(exc: BaseException) -> str:
    """One short phrase for what went wrong, from httpx's error or the OS error under it."""
    if isinstance(exc, httpx2.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx2.RemoteProtocolError):
        return "connection closed before a response"
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, ConnectionResetError):
            return "connection closed before a response"
        if isinstance(cause, (TimeoutError, socket.timeout)):
            return "timed out"
        if isinstance(cause, socket.gaierror):
            return "unknown host"
        cause = cause.__cause__ or cause.__context__
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())
