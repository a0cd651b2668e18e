"""The authorization matrix: every route, every principal, one table.

The table is test data (``tests/security/test_authz_matrix.py`` performs
every cell as a real request against two real projects) and documentation
(the "Authorization" section of ``docs/security.md`` is ``markdown()``, and
a test asserts the two are equal byte for byte). After editing the table,
regenerate the docs section with::

    .venv/bin/python -m tests.security.authz_matrix --write

The seven API principals, exactly as contract section 2 defines them. The
server runs in the production shape: ``GEDWEB_ADMIN_TOKEN`` and
``GEDWEB_MEMORY_WRITE_TOKEN`` are both set. Requests go to project A.

- ``none``: no ``Authorization`` header.
- ``bad``: ``Authorization: Bearer garbage``.
- ``revoked``: A's revoked project token, sent with a valid ``X-Memory-Token``
  (so the revocation is the only defect).
- ``other``: B's project token on A's routes, sent with a valid
  ``X-Memory-Token`` (so the project is the only defect).
- ``project``: A's project token alone. It reads and writes everything in A
  except memory writes (entries, candidate approve/reject), which need the
  memory write token too: 403 ``memory_write_forbidden``.
- ``memory``: the memory write token. The contract makes it no principal of
  its own: it is the header ``X-Memory-Token`` sent *alongside* a project
  token, so this column is A's project token plus ``X-Memory-Token``. Alone,
  or as a bearer, it authenticates nothing (see ``ANONYMOUS_VARIANTS``).
- ``admin``: the admin token alone (no ``X-Memory-Token``). It covers every
  project, creates projects and decides standards imports; memory writes
  still need the memory write token, so they answer 403 to it.

``ANONYMOUS_VARIANTS`` are credentials that must never authenticate: each
answers every route exactly as ``none`` does.

Status codes follow the contract (which wins over the reliability
catalogue): 401 ``unauthenticated`` with ``WWW-Authenticate: Bearer``; 403
``forbidden`` or ``memory_write_forbidden`` (the row's note says which); 404
``not_found`` with one body for "absent" and "another project's".

``writes`` names the tables an allowed request changes; a refused request
changes no table at all.

Nothing here imports Django at module level, so ``markdown()`` runs without
settings.
"""

from __future__ import annotations

import io
import re
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PRINCIPALS = ("none", "bad", "revoked", "other", "project", "memory", "admin")
PRINCIPAL_LABELS = {
    "none": "no token",
    "bad": "bad token",
    "revoked": "revoked token",
    "other": "other project's token",
    "project": "project token",
    "memory": "memory token",
    "admin": "admin",
}
ANONYMOUS_VARIANTS = {
    "query": "A's token in the query string (`?access_token=`, `?token=`), no header",
    "basic": "A's token in the `Basic` scheme (`alpha:<token>`)",
    "memory-bearer": "the memory write token as the bearer token",
    "memory-header": "`X-Memory-Token` (and the Ferryman header) without `Authorization`",
    "session": "a superuser's signed-in session cookie (the API takes bearer tokens only)",
}

# Column patterns, in PRINCIPALS order.
READ = (401, 401, 401, 404, 200, 200, 200)
PUBLIC_200 = (200,) * 7
UNKNOWN_404 = (404,) * 7
ADMIN_READ = (401, 401, 401, 403, 403, 403, 200)
ADMIN_CREATE = (401, 401, 401, 403, 403, 403, 201)
DECIDE = (401, 401, 401, 404, 403, 403, 200)
MEMORY_APPEND = (401, 401, 401, 404, 403, 201, 403)
MEMORY_DECIDE = (401, 401, 401, 404, 403, 200, 403)
WITHDRAW = (401, 401, 401, 404, 200, 200, 403)


def write(status: int) -> tuple[int, ...]:
    """A project-scoped write any token of the project (or the admin) may make."""
    return (401, 401, 401, 404, status, status, status)


P = "v1/projects/<project:project_id>"
W = f"{P}/work/<work:work_id>"
G = f"{W}/governance"

MEMORY = "memory.MemoryEntry"
CANDIDATE = "memory.MemoryCandidate"
DOCUMENT = "memory.DocumentRevision"
REVISION = "governance.GovernanceRevision"


@dataclass(frozen=True)
class Row:
    """One route and method: its status per principal, and how to call it."""

    method: str
    route: str  # the URL resolver's pattern, prefixes joined
    expect: tuple[int, ...]  # one status per PRINCIPALS entry
    note: str
    url: str  # the concrete path; {names} come from the world's ids
    body: str | None = None  # a key of the test's request bodies
    writes: frozenset[str] = field(default_factory=frozenset)
    code_403: str = "forbidden"

    def status(self, principal: str) -> int:
        return self.expect[PRINCIPALS.index(principal)]

    @property
    def label(self) -> str:
        return f"{self.method} {display(self.route)}"


def rw(*labels: str) -> frozenset[str]:
    return frozenset(labels)


# Every write that stores text also charges its project's quota (memory/quotas.py).
QUOTA = "memory.ProjectQuota"
# Every trust-bearing write appends its record to the project's ledger (governance/ledger.py).
LEDGER = "governance.LedgerRecord"
GOV_WRITES = rw(REVISION, "governance.EvidenceRecord", QUOTA, LEDGER)
MW = "memory_write_forbidden"

API: list[Row] = [
    # --- projects ------------------------------------------------
    Row("GET", "v1/projects", ADMIN_READ, "admin only", "/v1/projects"),
    Row("POST", "v1/projects", ADMIN_CREATE, "admin only", "/v1/projects", "project",
        rw("memory.Project", "memory.ProjectToken", QUOTA)),
    Row("GET", P, READ, "its project token or the admin", "/v1/projects/{p}"),
    # --- memory ------------------------------------------------
    Row("GET", f"{P}/memory", READ, "list, search, filter", "/v1/projects/{p}/memory"),
    Row("POST", f"{P}/memory", MEMORY_APPEND, "memory write: project token + X-Memory-Token; "
        "403 memory_write_forbidden", "/v1/projects/{p}/memory", "entry", rw(MEMORY, QUOTA), MW),
    Row("GET", f"{P}/memory/<ref:ref>", READ, "by seq or uuid", "/v1/projects/{p}/memory/{seq}"),
    Row("GET", f"{P}/memory/verify", READ, "", "/v1/projects/{p}/memory/verify"),
    Row("GET", f"{P}/recall", READ, "ranked recall, a read", "/v1/projects/{p}/recall?q=matrix"),
    Row("POST", f"{P}/recall", READ, "the same read, its question in a JSON body",
        "/v1/projects/{p}/recall", "recall"),
    Row("GET", f"{P}/memory.md", READ, "the mirror text", "/v1/projects/{p}/memory.md"),
    Row("GET", f"{P}/memory.jsonl", READ, "every entry, JSON Lines",
        "/v1/projects/{p}/memory.jsonl"),
    Row("GET", f"{P}/memory/candidates", READ, "", "/v1/projects/{p}/memory/candidates"),
    Row("POST", f"{P}/memory/candidates", write(201), "any project token proposes",
        "/v1/projects/{p}/memory/candidates", "candidate", rw(CANDIDATE, QUOTA)),
    Row("POST", f"{P}/memory/candidates/<uuid_text:candidate_id>/approve", MEMORY_DECIDE,
        "memory write; 403 memory_write_forbidden",
        "/v1/projects/{p}/memory/candidates/{candidate}/approve", None,
        rw(CANDIDATE, MEMORY, QUOTA), MW),
    Row("POST", f"{P}/memory/candidates/<uuid_text:candidate_id>/reject", MEMORY_DECIDE,
        "memory write; 403 memory_write_forbidden",
        "/v1/projects/{p}/memory/candidates/{candidate}/reject", None, rw(CANDIDATE), MW),
    Row("POST", f"{P}/memory/candidates/<uuid_text:candidate_id>/withdraw", WITHDRAW,
        "its proposer only (here A's token proposed it); 403 review_forbidden",
        "/v1/projects/{p}/memory/candidates/{own_candidate}/withdraw", None, rw(CANDIDATE),
        "review_forbidden"),
    # --- documents ------------------------------------------------
    Row("GET", f"{P}/documents", READ, "", "/v1/projects/{p}/documents"),
    Row("GET", f"{P}/documents.zip", READ, "every revision, zip", "/v1/projects/{p}/documents.zip"),
    Row("GET", f"{P}/documents/<docpath:path>", READ, "", "/v1/projects/{p}/documents/PROJECT.md"),
    Row("PUT", f"{P}/documents/<docpath:path>", write(201), "not a memory write",
        "/v1/projects/{p}/documents/adr/0002-matrix.md", "document", rw(DOCUMENT, QUOTA, LEDGER)),
    Row("GET", f"{P}/documents/<docpath:path>/revisions", READ, "",
        "/v1/projects/{p}/documents/PROJECT.md/revisions"),
    Row("GET", f"{P}/documents/handoff/<work:work_id>.md", READ, "a work item's handoff",
        "/v1/projects/{p}/documents/handoff/{work}.md"),
    Row("PUT", f"{P}/documents/handoff/<work:work_id>.md", write(201),
        "not a memory write; a work item of the project", "/v1/projects/{p}/documents/handoff/"
        "{verified}.md", "handoff", rw(DOCUMENT, QUOTA, LEDGER)),
    # --- context and inventory --------------------------------------------------------------
    Row("GET", f"{P}/context", READ, "every delivery is logged", "/v1/projects/{p}/context",
        writes=rw("governance.ContextDelivery")),
    Row("GET", "v1/contract", PUBLIC_200, "static artifact inventory, no auth", "/v1/contract"),
    # --- work items ----------------------------------------------------------------------------
    Row("GET", f"{P}/work", READ, "", "/v1/projects/{p}/work"),
    Row("POST", f"{P}/work", write(201), "", "/v1/projects/{p}/work", "work",
        rw("governance.WorkItem", REVISION, "governance.WorkFile", QUOTA, LEDGER)),
    Row("GET", W, READ, "", "/v1/projects/{p}/work/{work}"),
    Row("GET", f"{W}/files/<filename:name>", READ, "",
        "/v1/projects/{p}/work/{work}/files/DIRECT.md"),
    Row("PUT", f"{W}/files/<filename:name>", write(200), "",
        "/v1/projects/{p}/work/{work}/files/DIRECT.md", "file",
        rw("governance.WorkFile", QUOTA, LEDGER)),
    Row("GET", f"{W}/tasks/<task:task_id>/<filename:name>", READ, "",
        "/v1/projects/{p}/work/{work}/tasks/t1/BRIEF.md"),
    Row("PUT", f"{W}/tasks/<task:task_id>/<filename:name>", write(200), "",
        "/v1/projects/{p}/work/{work}/tasks/t1/BRIEF.md", "file",
        rw("governance.TaskArtifact", QUOTA, LEDGER)),
    # --- governance ------------------------------------------------
    Row("GET", G, READ, "", "/v1/projects/{p}/work/{work}/governance"),
    Row("GET", f"{G}/state.md", READ, "", "/v1/projects/{p}/work/{work}/governance/state.md"),
    Row("GET", f"{G}/revisions", READ, "", "/v1/projects/{p}/work/{work}/governance/revisions"),
    Row("GET", f"{G}/revisions/<number:number>", READ, "",
        "/v1/projects/{p}/work/{work}/governance/revisions/1"),
    Row("POST", f"{G}/evidence", write(200), "", "/v1/projects/{p}/work/{work}/governance/evidence",
        "evidence", GOV_WRITES),
    Row("POST", f"{G}/update", write(200), "", "/v1/projects/{p}/work/{work}/governance/update",
        "update", rw(REVISION, LEDGER)),
    Row("POST", f"{G}/mutations", write(200), "",
        "/v1/projects/{p}/work/{work}/governance/mutations", "mutation", rw(REVISION, LEDGER)),
    Row("POST", f"{G}/mutations/<text:pending_id>/complete", write(200), "",
        "/v1/projects/{p}/work/{mutating}/governance/mutations/mut-a/complete",
        "mutation_complete", GOV_WRITES),
    Row("POST", f"{G}/mutations/<text:pending_id>/clear", write(200), "",
        "/v1/projects/{p}/work/{mutating}/governance/mutations/mut-a/clear", "mutation_clear",
        rw(REVISION, LEDGER)),
    Row("POST", f"{G}/commits", write(200), "",
        "/v1/projects/{p}/work/{verified}/governance/commits", "commit", rw(REVISION, LEDGER)),
    Row("POST", f"{G}/commits/<text:pending_id>/complete", write(200), "",
        "/v1/projects/{p}/work/{committing}/governance/commits/commit-a/complete",
        "commit_complete", GOV_WRITES),
    Row("POST", f"{G}/commits/<text:pending_id>/clear", write(200), "",
        "/v1/projects/{p}/work/{committing}/governance/commits/commit-a/clear", "commit_clear",
        rw(REVISION, LEDGER)),
    Row("POST", f"{G}/lifecycle", write(200), "",
        "/v1/projects/{p}/work/{work}/governance/lifecycle", "lifecycle", rw(REVISION, LEDGER)),
    Row("POST", f"{G}/guard", write(200), "a question; writes nothing",
        "/v1/projects/{p}/work/{work}/governance/guard", "guard"),
    Row("GET", f"{P}/sessions/<session:session_id>/active-work", READ, "",
        "/v1/projects/{p}/sessions/sess-a/active-work"),
    Row("PUT", f"{P}/sessions/<session:session_id>/active-work", write(200), "",
        "/v1/projects/{p}/sessions/sess-new/active-work", "active_work",
        rw("governance.ActiveWork")),
    Row("DELETE", f"{P}/sessions/<session:session_id>/active-work", write(204), "",
        "/v1/projects/{p}/sessions/sess-a/active-work", None, rw("governance.ActiveWork")),
    # --- trust ledger ------------------------------------------------
    Row("GET", f"{P}/ledger/verify", READ, "catches LEDGER-CHECKPOINTS up, no table",
        "/v1/projects/{p}/ledger/verify"),
    # --- standards ------------------------------------------------
    Row("GET", f"{P}/standards", READ, "STANDARDS.md", "/v1/projects/{p}/standards"),
    Row("GET", f"{P}/standards/state", READ, "", "/v1/projects/{p}/standards/state"),
    Row("GET", f"{P}/standards/imports", READ, "", "/v1/projects/{p}/standards/imports"),
    Row("POST", f"{P}/standards/imports", write(201), "offer a file for approval",
        "/v1/projects/{p}/standards/imports", "standards_import",
        rw("governance.StandardsImport", LEDGER, QUOTA)),
    Row("GET", f"{P}/standards/imports/<standards_import:import_id>", READ, "",
        "/v1/projects/{p}/standards/imports/{pending_import}"),
    Row("POST", f"{P}/standards/imports/<standards_import:import_id>/accept", DECIDE,
        "admin decides; 403 forbidden",
        "/v1/projects/{p}/standards/imports/{pending_import}/accept", "decide",
        rw("governance.StandardsDecision", LEDGER)),
    Row("POST", f"{P}/standards/imports/<standards_import:import_id>/reject", DECIDE,
        "admin decides; 403 forbidden",
        "/v1/projects/{p}/standards/imports/{pending_import}/reject", "decide",
        rw("governance.StandardsDecision", LEDGER)),
    # --- skills ------------------------------------------------
    Row("GET", f"{P}/skills", READ, "", "/v1/projects/{p}/skills"),
    Row("GET", f"{P}/skills/match", READ, "", "/v1/projects/{p}/skills/match?text=flaky"),
    Row("GET", f"{P}/skills/<text:name>", READ, "", "/v1/projects/{p}/skills/fix-flaky-test"),
    Row("PUT", f"{P}/skills/<text:name>", write(201), "", "/v1/projects/{p}/skills/matrix-skill",
        "skill", rw("governance.Skill", QUOTA, LEDGER)),
    # --- GedPi sync ------------------------------------------------
    Row("GET", f"{P}/checkout", READ, "the tar.gz ged_export writes",
        "/v1/projects/{p}/checkout"),
    Row("POST", f"{P}/checkout", write(200), "ged_import of a tar.gz; writes no memory entry",
        "/v1/projects/{p}/checkout", "checkout", rw(DOCUMENT, QUOTA, LEDGER)),
    # --- fallback ------------------------------------------------
    Row("ANY", "^v1(?:/.*)?$", UNKNOWN_404, "unknown /v1 path: JSON 404, no auth step",
        "/v1/no-such-route"),
]


# --- team pages -----------------------------------------------------------------------------

PAGE_PRINCIPALS = ("anonymous", "non-member", "viewer", "operator", "superuser")
PAGE_LABELS = {
    "anonymous": "anonymous",
    "non-member": "logged-in non-member",
    "viewer": "viewer",
    "operator": "operator",
    "superuser": "superuser",
}

PROJECT_PAGE = (302, 404, 200, 200, 200)
# A review decision: viewers are refused, operators and superusers decide and are
# sent back to the queue (303); anonymous visitors go to the login page (302).
DECIDE_PAGE = (302, 404, 403, 303, 303)
OPEN_PAGE = (200,) * 5


@dataclass(frozen=True)
class PageRow:
    """One page route: status per session principal, and the URLs that exercise it."""

    method: str
    route: str
    expect: tuple[int, ...]  # one status per PAGE_PRINCIPALS entry
    note: str
    urls: tuple[str, ...]
    redirect: str = "/accounts/login/"  # where every 302 of the row leads

    def status(self, principal: str) -> int:
        return self.expect[PAGE_PRINCIPALS.index(principal)]

    @property
    def label(self) -> str:
        return f"{self.method} {display(self.route)}"


PP = "p/<project:project_id>/"
LOGIN_NOTE = ""  # the rule is stated once, above the table in markdown()

PAGES: list[PageRow] = [
    PageRow("GET", "", OPEN_PAGE, "lists only the visitor's projects", ("/",)),
    PageRow("GET", "healthz", OPEN_PAGE, "no auth", ("/healthz",)),
    PageRow("GET", "metrics", (404,) * 5,
            "a session never reads it: the admin token or `GEDWEB_METRICS_ALLOW` only "
            "(tests/site/test_metrics.py); anyone else gets the 404 page", ("/metrics",)),
    PageRow("GET", "accounts/login/", (200, 302, 302, 302, 302),
            "signed-in people go home", ("/accounts/login/",), redirect="/"),
    PageRow("POST", "accounts/logout/", (302,) * 5, "", ("/accounts/logout/",)),
    PageRow("GET", "admin/", (302, 302, 302, 302, 200),
            "staff only; the operator role grants no staff status",
            ("/admin/", "/admin/memory/membership/"), redirect="/admin/login/"),
    PageRow("GET", "v1/schema", OPEN_PAGE, "OpenAPI schema, public", ("/v1/schema",)),
    PageRow("GET", "v1/docs", OPEN_PAGE, "Swagger UI, public", ("/v1/docs",)),
    PageRow("GET", ".well-known/oauth-authorization-server", OPEN_PAGE,
            "RFC 8414 metadata, public (docs/oauth.md)",
            ("/.well-known/oauth-authorization-server",)),
    PageRow("GET", ".well-known/oauth-protected-resource", OPEN_PAGE,
            "RFC 9728 metadata, public", ("/.well-known/oauth-protected-resource",)),
    PageRow("GET", ".well-known/oauth-protected-resource/mcp", OPEN_PAGE,
            "RFC 9728 metadata of /mcp, public",
            ("/.well-known/oauth-protected-resource/mcp",)),
    PageRow("GET", "oauth/authorize/", (302, 400, 400, 400, 400),
            "the consent page, behind the login; without a client, its error page",
            ("/oauth/authorize/",)),
    PageRow("POST", "oauth/token/", (400,) * 5,
            "OAuth clients only; a session is no credential (`unsupported_grant_type`)",
            ("/oauth/token/",)),
    PageRow("POST", "oauth/revoke/", (400,) * 5,
            "OAuth clients only (`invalid_request` without a token)", ("/oauth/revoke/",)),
    PageRow("POST", "oauth/register/", (400,) * 5,
            "open registration (RFC 7591); an empty body is `invalid_client_metadata`",
            ("/oauth/register/",)),
    PageRow("GET", "oauth/register/<str:client_id>/", (401,) * 5,
            "the registration access token only (RFC 7592)", ("/oauth/register/nobody/",)),
    PageRow("GET", "oauth/grants/", (302, 200, 200, 200, 200),
            "the signed-in person's own OAuth grants", ("/oauth/grants/",)),
    PageRow("POST", "oauth/grants/revoke", (302, 400, 400, 400, 400),
            "revokes one of the person's own grants; without one named, 400",
            ("/oauth/grants/revoke",)),
    PageRow("GET", PP, PROJECT_PAGE, LOGIN_NOTE, ("/p/{p}/",)),
    PageRow("GET", f"{PP}memory/", PROJECT_PAGE, LOGIN_NOTE,
            ("/p/{p}/memory/", "/p/{p}/memory/?q=postgresql",
             "/p/{p}/memory/?category=decision&source=architect")),
    PageRow("GET", f"{PP}memory/<ref:ref>", PROJECT_PAGE, LOGIN_NOTE,
            ("/p/{p}/memory/{seq}", "/p/{p}/memory/{uuid}")),
    PageRow("GET", f"{PP}memory/authors/<str:author>/", PROJECT_PAGE, LOGIN_NOTE,
            ("/p/{p}/memory/authors/agent-claude/",)),
    PageRow("GET", f"{PP}mirror/", PROJECT_PAGE, LOGIN_NOTE, ("/p/{p}/mirror/",)),
    PageRow("GET", f"{PP}MEMORY.md", PROJECT_PAGE, LOGIN_NOTE, ("/p/{p}/MEMORY.md",)),
    PageRow("GET", f"{PP}memory.jsonl", PROJECT_PAGE, LOGIN_NOTE, ("/p/{p}/memory.jsonl",)),
    PageRow("GET", f"{PP}documents.zip", PROJECT_PAGE, LOGIN_NOTE, ("/p/{p}/documents.zip",)),
    PageRow("GET", f"{PP}documents/", PROJECT_PAGE, LOGIN_NOTE, ("/p/{p}/documents/",)),
    PageRow("GET", f"{PP}documents/<docpath:path>", PROJECT_PAGE, LOGIN_NOTE,
            ("/p/{p}/documents/PROJECT.md",
             "/p/{p}/documents/adr/0001-orders-on-postgresql.md?revision=1")),
    PageRow("GET", f"{PP}compare/<docpath:path>", PROJECT_PAGE, LOGIN_NOTE,
            ("/p/{p}/compare/adr/0001-orders-on-postgresql.md?from=1&to=2",)),
    PageRow("GET", f"{PP}review/", PROJECT_PAGE, LOGIN_NOTE,
            ("/p/{p}/review/", "/p/{p}/review/?status=resolved")),
    PageRow("POST", f"{PP}review/<uuid_text:candidate_id>/approve", DECIDE_PAGE,
            "operators decide; viewers 403", ("/p/{p}/review/{candidate}/approve",)),
    PageRow("POST", f"{PP}review/<uuid_text:candidate_id>/reject", DECIDE_PAGE,
            "operators decide; viewers 403", ("/p/{p}/review/{candidate}/reject",)),
    PageRow("GET", f"{PP}work/", PROJECT_PAGE, LOGIN_NOTE, ("/p/{p}/work/",)),
    PageRow("GET", f"{PP}work/<work:work_id>/", PROJECT_PAGE, LOGIN_NOTE, ("/p/{p}/work/{work}/",)),
    PageRow("GET", f"{PP}work/<work:work_id>/revisions/<number:number>", PROJECT_PAGE, LOGIN_NOTE,
            ("/p/{p}/work/{work}/revisions/1",)),
    PageRow("GET", f"{PP}standards/", PROJECT_PAGE, LOGIN_NOTE, ("/p/{p}/standards/",)),
    PageRow("GET", f"{PP}STANDARDS.md", PROJECT_PAGE, LOGIN_NOTE, ("/p/{p}/STANDARDS.md",)),
    PageRow("GET", f"{PP}standards/<standards_import:import_id>", PROJECT_PAGE, LOGIN_NOTE,
            ("/p/{p}/standards/{accepted_import}",)),
    PageRow("GET", f"{PP}skills/", PROJECT_PAGE, LOGIN_NOTE, ("/p/{p}/skills/",)),
    PageRow("GET", f"{PP}skills/<text:name>", PROJECT_PAGE, LOGIN_NOTE,
            ("/p/{p}/skills/fix-flaky-test",)),
    PageRow("GET", f"{PP}context/", PROJECT_PAGE, LOGIN_NOTE, ("/p/{p}/context/",)),
    PageRow("GET", f"{PP}context/<number:delivery_id>", PROJECT_PAGE, LOGIN_NOTE,
            ("/p/{p}/context/{delivery}",)),
    PageRow("GET", f"{PP}context/<number:delivery_id>/bundle", PROJECT_PAGE, LOGIN_NOTE,
            ("/p/{p}/context/{delivery}/bundle",)),
]


def response_bytes(response: Any) -> bytes:
    """A response's body; for a zip archive, its members' bytes, so B's words cannot hide
    compressed."""
    body: bytes = (b"".join(response.streaming_content) if response.streaming
                   else response.content)
    if body and response.get("Content-Type") == "application/zip":
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            return b"\n".join(archive.read(name) for name in archive.namelist())
    return body


# --- route enumeration ---------------------------------------------------------------------------

API_PREFIX = "v1/"
PAGE_ONLY_API_ROUTES = ("v1/schema", "v1/docs")  # served without auth, listed with the pages
COLLAPSED_INCLUDES = ("admin/",)  # Django admin's own routes: one row


def display(route: str) -> str:
    """``v1/projects/<project:project_id>/memory`` -> ``/v1/projects/{p}/memory``."""
    shown = route.replace("<project:project_id>", "{p}")
    shown = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", shown)
    return "/" + shown


def resolver_routes() -> list[tuple[str, Any]]:
    """Every URL pattern as (joined pattern text, callback); admin collapsed to one."""
    from django.urls import URLPattern, URLResolver, get_resolver

    found: list[tuple[str, Any]] = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for pattern in patterns:
            text = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                if text in COLLAPSED_INCLUDES:
                    found.append((text, None))
                else:
                    walk(pattern.url_patterns, text)
            elif isinstance(pattern, URLPattern):
                found.append((text, pattern.callback))

    walk(get_resolver().url_patterns, "")
    return found


def _methods(callback: Any) -> list[str]:
    view_class = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
    if view_class is None:
        return ["ANY"]
    handlers = [m for m in ("get", "post", "put", "patch", "delete") if hasattr(view_class, m)]
    return [m.upper() for m in handlers] or ["ANY"]


def is_api_route(route: str) -> bool:
    return route.lstrip("^").startswith("v1") and route not in PAGE_ONLY_API_ROUTES


def api_routes() -> set[tuple[str, str]]:
    """(method, route) for every API route and every method its view handles."""
    return {
        (method, route)
        for route, callback in resolver_routes()
        if is_api_route(route)
        for method in _methods(callback)
    }


def page_routes() -> set[str]:
    return {route for route, _ in resolver_routes() if not is_api_route(route)}


# --- the world: two real projects, built through GedWeb's own services -----------------------

# Words, names and paths only project B holds; none may ever reach a response about A.
B_MARKERS = ("zanzibar", "quokka", "wombat", "narwhal", "okapi", "axolotl")


@dataclass
class World:
    ids: dict[str, Any]  # URL names for A (``{p}``, ``{seq}``, ``{work}``, ...)
    b_ids: dict[str, Any]  # the same names for B's objects
    tokens: dict[str, str]  # raw tokens: "a", "b", "revoked"
    users: dict[str, Any]  # PAGE_PRINCIPALS -> user (None for anonymous)
    session_cookie: str = ""  # "name=value" of a signed-in superuser's session
    bodies: dict[str, Any] = field(default_factory=dict)  # for A's rows, by Row.body


def _work_open(project: Any, summary: str, mode: str = "direct-change") -> Any:
    from governance import services as gs

    return gs.work_open(
        project=project, author="seed", summary=summary, minimum_mode=mode,
        ambiguity="sufficient", risk="low", clear_scope=True, bounded=True, reversible=True,
        deterministic_check=True,
    ).work


def _evidence(kind: str, outcome: str, **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "source": "agent", "summary": f"{kind} {outcome}", "outcome": outcome,
            **extra}


HEAD_A, HEAD_B, TREE, DIGEST = "a" * 40, "b" * 40, "c" * 40, "d" * 64
COMMIT_FIELDS = {"request_id": "req-c", "tool_call_id": "call-c", "before_head": HEAD_A,
                 "expected_tree": TREE, "unstaged_digest": "e" * 64,
                 "untracked_digest": "f" * 64, "verified_snapshot_digest": DIGEST}
MILESTONE = _evidence("milestone", "observed", binding={
    "type": "commit-milestone", "beforeHead": HEAD_A, "afterHead": HEAD_B,
    "committedTree": TREE, "verifiedSnapshotDigest": DIGEST})


def _governed(project: Any, tag: str, word: str) -> dict[str, Any]:
    """Work items in the states the governance rows need: pending mutation, pending commit."""
    from governance import services as gs

    def rev(work: Any) -> int:
        return gs.latest_revision(work).revision

    mutating = _work_open(project, f"Mutating {word}")
    gs.mutation_begin(work=mutating, expected_revision=0, request_id="req-1",
                      tool_call_id="call-1", target="src/app.py", action="source-mutation",
                      author="seed", mutation_id=f"mut-{tag}")
    verified = _work_open(project, f"Verified {word}")
    gs.evidence_append(work=verified, expected_revision=0, policy="none", author="seed",
                       evidence=_evidence("verification", "satisfied"))
    committing = _work_open(project, f"Committing {word}")
    gs.evidence_append(work=committing, expected_revision=0, policy="none", author="seed",
                       evidence=_evidence("verification", "satisfied"))
    gs.commit_begin(work=committing, expected_revision=1, author="seed",
                    commit_id=f"commit-{tag}",
                    fields={"requestId": "req-c", "toolCallId": "call-c", "beforeHead": HEAD_A,
                            "expectedTree": TREE, "unstagedDigest": "e" * 64,
                            "untrackedDigest": "f" * 64, "verifiedSnapshotDigest": DIGEST})
    return {"mutating": mutating.work_id, "verified": verified.work_id,
            "committing": committing.work_id, "rev_mutating": rev(mutating),
            "rev_verified": rev(verified), "rev_committing": rev(committing)}


def build_world() -> World:
    """Projects A (alpha) and B (beta) with every kind of object, tokens and people."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    from governance import services as gs
    from governance.handoffs import handoff_put
    from governance.models import ContextDelivery, WorkItem
    from governance.skills import skill_put
    from governance.standards import standards_import_submit
    from memory import services
    from memory.documents import document_put
    from memory.models import Membership, MemoryEntry
    from tests.pages.seed import SKILL, seed_project

    pa, token_a = services.project_create(project_id="alpha", name="Web shop")
    pb, token_b = services.project_create(project_id="beta", name="Secret lab")
    _, revoked = services.project_token_create(project=pa, name="retired")
    services.project_token_revoke(project=pa, name="retired")
    a = seed_project(pa)
    b = seed_project(pb, author="agent-beta")

    # A: what the rows act on.
    candidate_a = services.candidate_create(project=pa, author="agent", category="idea",
                                            content="cache the context bundle")
    # Proposed by A's project token itself: the one candidate it may withdraw.
    own_candidate_a = services.candidate_create(project=pa, author=services.DEFAULT_TOKEN_NAME,
                                                category="idea", content="my own idea")
    gs.task_artifact_write(work=a.work, task_id="t1", name="BRIEF.md", content="# Brief\n",
                           author="agent")
    gs.active_work_select(project=pa, session_id="sess-a", work=a.work, operation="open",
                          request_id="r-a")
    handoff_put(project=pa, work_id=a.work.work_id, author="agent",
                content="# Handoff\n\nNext: the checkout page.\n")
    ids: dict[str, Any] = {
        "p": "alpha", "seq": a.correction.seq, "uuid": a.correction.uuid,
        "candidate": candidate_a.uuid, "own_candidate": own_candidate_a.uuid,
        "work": a.work.work_id,
        "rev_work": gs.latest_revision(a.work).revision,
        "pending_import": a.extra["claude"].public_id, "pending_sha256": a.extra["claude"].sha256,
        "accepted_import": a.extra["accepted"].public_id, "session": "sess-a",
        "delivery": ContextDelivery.objects.filter(project=pa).order_by("id")[0].pk,
        **_governed(pa, "a", "alpha"),
    }

    # B: the same kinds of objects, plus words A never holds.
    for number in range(5):
        services.memory_entry_create(project=pb, author="agent-beta", category="zanzibar",
                                     source="zanzibar-lab", content=f"zanzibar plans {number}")
    candidate_b = services.candidate_create(project=pb, author="agent-beta", category="quokka",
                                            content="quokka candidate")
    services.candidate_create(project=pb, author="agent-beta", category="quokka",
                              content="second quokka candidate")
    document_put(project=pb, path="adr/0002-wombat.md", author="agent-beta",
                 content="# ADR 0002: wombat\n\n## Decision\n\nThe wombat service stays.\n")
    skill_put(project=pb, name="narwhal-skill", reason="narwhal wrangling", author="agent-beta",
              source=None,
              content=SKILL.format(name="narwhal-skill", title="Narwhal",
                                   description='Tames narwhals. Triggers include "narwhal"'))
    okapi, _ = standards_import_submit(project=pb, path="GEMINI.md", author="agent-beta",
                                       content="okapi rules apply\n")
    served, _ = standards_import_submit(project=pb, path=".cursorrules", author="agent-beta",
                                        content="okapi cursor rules\n")
    served.accept(by="user:olga", sha256=served.sha256)
    services.memory_entry_create(project=pb, author="agent-beta", category="zanzibar",
                                 content="zanzibar keyed", idempotency_key="shared-key")
    axolotl = _work_open(pb, "axolotl migration")
    gs.task_artifact_write(work=axolotl, task_id="tb1", name="BRIEF.md", author="agent-beta",
                           content="# axolotl brief\n")
    gs.active_work_select(project=pb, session_id="sess-b", work=axolotl, operation="open",
                          request_id="r-b")
    b_ids: dict[str, Any] = {
        "p": "beta", "seq": b.correction.seq, "uuid": b.correction.uuid,
        "last_seq": MemoryEntry.objects.filter(project=pb).order_by("-seq")
        .values_list("seq", flat=True).first(),
        "entry_uuids": [str(u) for u in MemoryEntry.objects.filter(project=pb)
                        .values_list("uuid", flat=True)],
        "candidate": candidate_b.uuid, "own_candidate": candidate_b.uuid,
        "work": axolotl.work_id,
        "works": list(WorkItem.objects.filter(project=pb).values_list("work_id", flat=True)),
        "pending_import": okapi.public_id, "pending_sha256": okapi.sha256,
        "accepted_import": b.extra["accepted"].public_id, "session": "sess-b",
        "document": "adr/0002-wombat.md", "skill": "narwhal-skill",
        **_governed(pb, "b", "axolotl"),
    }

    people = get_user_model().objects
    viewer = people.create_user("vera", "vera@example.org")
    operator = people.create_user("otto", "otto@example.org")
    outsider = people.create_user("nina", "nina@example.org")
    root = people.create_superuser("root", "root@example.org", None)
    Membership.objects.create(user=viewer, project=pa)
    Membership.objects.create(user=operator, project=pa, role=Membership.Role.OPERATOR)
    Membership.objects.create(user=outsider, project=pb)
    users = {"anonymous": None, "non-member": outsider, "viewer": viewer,
             "operator": operator, "superuser": root}

    browser = Client()
    browser.force_login(root)
    cookie = browser.cookies[settings.SESSION_COOKIE_NAME]

    world = World(ids=ids, b_ids=b_ids, users=users,
                  tokens={"a": token_a, "b": token_b, "revoked": revoked},
                  session_cookie=f"{cookie.key}={cookie.value}")
    world.bodies = request_bodies(ids)
    return world


def request_bodies(ids: dict[str, Any]) -> dict[str, Any]:
    """Valid bodies for A's rows: an allowed principal's request succeeds."""
    from tests.pages.seed import SKILL

    return {
        "project": {"id": "gamma", "name": "Gamma"},
        "entry": {"category": "decision", "content": "every route has a row"},
        "recall": {"q": "which route has a row?", "limit": 5},
        "candidate": {"category": "idea", "content": "a matrix candidate"},
        "document": {"content": "# ADR 0002: Matrix\n\n## Decision\n\nEvery route has a row "
                                "in the authorization matrix.\n"},
        "work": {"summary": "Matrix work", "minimum_mode": "direct-change",
                 "ambiguity": "sufficient", "risk": "low", "clear_scope": True, "bounded": True,
                 "reversible": True, "deterministic_check": True},
        "handoff": {"content": "# Handoff\n\nNext: a row for every route.\n"},
        "file": {"content": "# Matrix\n\nA new version.\n"},
        "evidence": {"expected_revision": ids["rev_work"],
                     "evidence": _evidence("inspection", "observed")},
        "update": {"expected_revision": ids["rev_work"],
                   "changes": {"currentSlice": "matrix slice"}},
        "mutation": {"expected_revision": ids["rev_work"], "request_id": "req-m",
                     "tool_call_id": "call-m", "target": "src/app.py"},
        "mutation_complete": {"expected_revision": ids["rev_mutating"],
                              "evidence": _evidence("implementation", "observed")},
        "mutation_clear": {"expected_revision": ids["rev_mutating"]},
        "commit": {"expected_revision": ids["rev_verified"], **COMMIT_FIELDS},
        "commit_complete": {"expected_revision": ids["rev_committing"], "evidence": MILESTONE},
        "commit_clear": {"expected_revision": ids["rev_committing"]},
        "lifecycle": {"expected_revision": ids["rev_work"], "action": "pause",
                      "reason": "matrix", "expected_lifecycle": "active"},
        "guard": {"action": "commit"},
        "active_work": {"work_id": ids["work"], "operation": "open", "request_id": "r-2"},
        "standards_import": {"path": "GEMINI.md", "content": "Use tabs.\n"},
        "decide": {"sha256": ids["pending_sha256"]},
        "skill": {"content": SKILL.format(name="matrix-skill", title="Matrix",
                                          description='Checks routes. Triggers include "matrix"'),
                  "reason": "matrix"},
        # Not JSON: POST .../checkout takes a checkout's layout as a tar.gz.
        "checkout": RawBody("application/gzip", _checkout_archive()),
    }


@dataclass(frozen=True)
class RawBody:
    """A request body sent as it is, with its own media type."""

    content_type: str
    data: bytes


def encode_body(body: Any) -> tuple[bytes | str, str]:
    """A row's request body as sent: (data, content type); JSON unless a RawBody."""
    import json

    if isinstance(body, RawBody):
        return body.data, body.content_type
    return (json.dumps(body) if body is not None else ""), "application/json"


def _checkout_archive() -> bytes:
    from gedweb.checkout.archive import pack

    return pack({".ged/VERSION": b"3\n",
                 "docs/adr/0003-pushed.md": b"# ADR 0003: Pushed\n\nThrough the matrix.\n"})


# --- shared by the test modules: the world in a transaction, snapshots, credentials ----------

def world_in_rollback(django_db_blocker: Any, memory_root: Path) -> Iterator[World]:
    """Build the world once inside a transaction that is rolled back afterwards.

    Use from a module-scoped fixture: each test's ``db`` savepoint nests
    inside, so an allowed write in one test is gone before the next.
    """
    from django.db import transaction
    from django.test import override_settings

    from tests.django_fixtures import ADMIN_TOKEN

    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            with override_settings(MEMORY_ROOT=memory_root, MIRROR_WRITER="inline",
                                   ADMIN_TOKEN=ADMIN_TOKEN, MEMORY_WRITE_TOKEN=None):
                built = build_world()
            yield built
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


def snapshot() -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every memory and governance table."""
    from tests.django_fixtures import stored_models

    return {
        model._meta.label: list(model._base_manager.order_by("pk").values_list())
        for model in stored_models()
    }


def changed(before: dict[str, list], after: dict[str, list]) -> set[str]:
    return {label for label in before if before[label] != after[label]}


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def memory_header() -> dict[str, str]:
    from tests.django_fixtures import MEMORY_WRITE_TOKEN

    return {"HTTP_X_MEMORY_TOKEN": MEMORY_WRITE_TOKEN}


def credentials(world: World, principal: str) -> dict[str, str]:
    """The request headers of each of PRINCIPALS (see the module docstring)."""
    from tests.django_fixtures import ADMIN_TOKEN

    tokens = world.tokens
    return {
        "none": {},
        "bad": {"HTTP_AUTHORIZATION": "Bearer garbage"},
        "revoked": {**bearer(tokens["revoked"]), **memory_header()},
        "other": {**bearer(tokens["b"]), **memory_header()},
        "project": bearer(tokens["a"]),
        "memory": {**bearer(tokens["a"]), **memory_header()},
        "admin": bearer(ADMIN_TOKEN),
    }[principal]


# --- documentation ------------------------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "security.md"
HEADING = "## Authorization\n"


def _cell(status: int) -> str:
    return str(status)


def markdown() -> str:
    """The body of docs/security.md's "Authorization" section (after its heading)."""
    out: list[str] = [
        "",
        "<!-- generated from tests/security/authz_matrix.py; edit the table there, then run",
        "     .venv/bin/python -m tests.security.authz_matrix --write -->",
        "",
        "Every route under `/v1` and every method it serves, against every principal. "
        "The table below is generated from `tests/security/authz_matrix.py`, the same "
        "table `tests/security/test_authz_matrix.py` runs cell by cell as real requests "
        "against two real projects A and B (requests go to A), so the documentation "
        "cannot drift from the tests. A test also fails when a route exists without a "
        "row, or a row names a route that no longer exists.",
        "",
        "The server runs as in production: the admin token and "
        "`GEDWEB_MEMORY_WRITE_TOKEN` are both set. Principals:",
        "",
        "- **no token**: no `Authorization` header.",
        "- **bad token**: `Authorization: Bearer garbage`.",
        "- **revoked token**: A's revoked project token (with a valid `X-Memory-Token`).",
        "- **other project's token**: B's project token on A's routes (with a valid "
        "`X-Memory-Token`).",
        "- **project token**: A's project token alone.",
        "- **memory token**: the memory write token is no principal of its own (contract "
        "section 2): it is the header `X-Memory-Token` sent *with* a project token, so this "
        "column is A's project token plus `X-Memory-Token`.",
        "- **admin**: the admin token alone.",
        "",
        "These never authenticate and answer every route exactly like **no token**:",
        "",
    ]
    out += [f"- {text}." for text in ANONYMOUS_VARIANTS.values()]
    out += [
        "",
        "Each cell is the status code. 401 is always `unauthenticated` with "
        "`WWW-Authenticate: Bearer`; 404 is always `not_found` with the same body as a "
        "missing object, so another project's existence never leaks; 403 is `forbidden` "
        "unless the note says `memory_write_forbidden`. For every refused cell the test "
        "compares every memory and governance table before and after: nothing changes. "
        "For every allowed request it checks that exactly the tables in the writes "
        "column changed. "
        "`{p}` is the project id.",
        "",
        "`HEAD` answers like `GET` for every principal. `OPTIONS` is authenticated and "
        "scoped like the route: a principal the route refuses with 401, 404 or 403 "
        "`forbidden` gets the same answer, so `OPTIONS` reveals no project either.",
        "",
        "| route | " + " | ".join(PRINCIPAL_LABELS[p] for p in PRINCIPALS)
        + " | allowed request writes | note |",
        "| --- | " + " | ".join("---" for _ in PRINCIPALS) + " | --- | --- |",
    ]
    for row in API:
        cells = " | ".join(_cell(status) for status in row.expect)
        writes = ", ".join(sorted(label.split(".")[1] for label in row.writes)) or "-"
        out.append(f"| `{row.label}` | {cells} | {writes} | {row.note or '-'} |")
    out += [
        "",
        "Team pages use Django session login (contract section 8). Project pages are "
        "requested for project A; the non-member is a member of B only; the superuser is "
        "a member of nothing. 302 goes to the login page (Django admin's own login for "
        "`/admin/`, the project list for a signed-in visitor of the login page). Every "
        "project page answers a non-member with 404, the same page as a missing project, "
        "and no project page of A ever contains B's data.",
        "",
        "| page | " + " | ".join(PAGE_LABELS[p] for p in PAGE_PRINCIPALS) + " | note |",
        "| --- | " + " | ".join("---" for _ in PAGE_PRINCIPALS) + " | --- |",
    ]
    for page in PAGES:
        cells = " | ".join(_cell(status) for status in page.expect)
        out.append(f"| `{page.label}` | {cells} | {page.note or '-'} |")
    out += [
        "",
        "Beyond the matrix, `tests/security/test_bola.py` shows that B's ids (seq, uuid, "
        "candidate, work, pending mutation and commit, standards import, document path, "
        "skill name, session) under A's routes answer exactly like ids that do not exist; "
        "that A's lists, searches, filters, exports and cursors never return B's rows; that "
        "server-controlled fields (`project_id`, `id`, `seq`, `prev_hash`, `hash`, "
        "`created_at`, `author`, `approved`, ...) in a request body are refused with 400 "
        "and write nothing; and that tokens are stored only as SHA-256 plus a short "
        "prefix, looked up by hash, never compared as raw strings.",
        "",
    ]
    return "\n".join(_wrap(line) for line in out) + "\n"


def _wrap(line: str) -> str:
    """Wrap prose at 78 columns like the rest of the docs; table rows stay whole."""
    if line.startswith(("|", "<!--", "     ")) or len(line) <= 78:
        return line
    indent = "  " if line.startswith("- ") else ""
    return textwrap.fill(line, width=78, subsequent_indent=indent, break_on_hyphens=False,
                         break_long_words=False)


def section_of(text: str) -> str:
    """The text between the Authorization heading and the next heading."""
    start = text.index(HEADING) + len(HEADING)
    end = text.find("\n## ", start)
    return text[start:] if end == -1 else text[start : end + 1]


def write_docs(path: Path = DOCS) -> None:
    """Replace only the Authorization section; re-read first, other sections are others'."""
    text = path.read_text(encoding="utf-8")
    start = text.index(HEADING) + len(HEADING)
    end = text.find("\n## ", start)
    end = len(text) if end == -1 else end + 1
    path.write_text(text[:start] + markdown() + text[end:], encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write_docs()
    else:
        sys.stdout.write(markdown())
