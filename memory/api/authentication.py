"""Bearer-token authentication for the API: the admin token, a project token, or an OAuth
access token on a request the MCP endpoint forwards (gedweb/oauth/grants.py)."""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from gedweb.db.compiled import CompiledRead
from memory.models import Project, ProjectToken, hash_token

if TYPE_CHECKING:
    from gedweb.oauth.scopes import GrantScope

ADMIN_AUTHOR = "admin"
# Set by /mcp on the requests it forwards in process (gedweb/remote_mcp.py), in
# the WSGI environ, where no client header can reach: OAuth access tokens are
# issued for /mcp (their RFC 8707 audience) and are accepted only there.
VIA_MCP_ENVIRON = "gedweb.via_mcp"


@dataclass(frozen=True)
class Principal:
    """Who made a request. ``name`` becomes the author of what they write."""

    kind: str  # "admin", "project" or "oauth"
    name: str
    project_id: str | None = None
    token_id: int | None = None
    # A project token's project, read in the same query as the token, so a
    # request under /v1/projects/{id}/ need not fetch it again.
    project: Project | None = field(default=None, compare=False, repr=False)
    # Who the rate limits count (gedweb/throttling.py): part of the token's
    # SHA-256, unique across installations, so two GedWebs sharing one Redis
    # never count each other's requests (token ids would collide).
    rate_key: str = field(default="", compare=False, repr=False)
    # An OAuth token's grant: its memory scope and project (None: every call a
    # project token may make), and a digest of (client, person, project) for its keys.
    oauth_scope: GrantScope | None = None
    oauth_grant: str | None = None

    is_authenticated = True

    @property
    def is_admin(self) -> bool:
        return self.kind == "admin"

    @property
    def idempotency_scope(self) -> str:
        """Whose Idempotency-Keys these are: each token's are its own."""
        if self.oauth_grant is not None:
            return f"oauth:{self.oauth_grant}"
        return "admin" if self.is_admin else f"token:{self.token_id}"

    def covers(self, project_id: str) -> bool:
        return self.is_admin or self.project_id == project_id


def admin_token_matches(raw: str) -> bool:
    """True when ``raw`` is the configured admin token; always False when none is.

    The API's authentication and GET /metrics (gedweb/metrics.py) both ask here.
    """
    configured = settings.ADMIN_TOKEN
    if not configured:
        return False
    # Comparing fixed-length digests keeps the time independent of how much
    # of the token, and of its length, a caller guessed right.
    return hmac.compare_digest(hash_token(raw), hash_token(configured))


def principal_for_token(raw: str) -> Principal | None:
    digest = hash_token(raw)
    if admin_token_matches(raw):
        return Principal(kind="admin", name=ADMIN_AUTHOR, rate_key=f"admin:{digest[:24]}")
    token = _ACTIVE_TOKEN.first(token_hash=digest)
    if token is None or not hmac.compare_digest(token["token_hash"], digest):
        return None
    project = Project.from_db(
        DEFAULT_DB_ALIAS,
        ["id", "name", "created_at"],
        [token["project_id"], token["project__name"], token["project__created_at"]],
    )
    return Principal(
        kind="project",
        name=token["name"],
        project_id=token["project_id"],
        token_id=token["id"],
        project=project,
        rate_key=f"token:{digest[:24]}",
    )


# Every API request runs this lookup; compiled once, it costs a query, not
# a query plus the ORM's work of building it (gedweb/db/compiled.py).
_ACTIVE_TOKEN = CompiledRead(
    lambda token_hash: ProjectToken.objects.active()
    .filter(token_hash=token_hash)
    .values("id", "name", "project_id", "token_hash", "project__name", "project__created_at")[:1],
    "token_hash",
)


def bearer_token(header: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None when it is malformed."""
    scheme, _, raw = header.partition(" ")
    raw = raw.strip()
    if scheme.lower() != "bearer" or not raw or " " in raw or not raw.isprintable():
        return None
    return raw


class BearerTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Principal, str] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        raw = bearer_token(header)
        if raw is None:
            raise exceptions.AuthenticationFailed()
        principal = principal_for_token(raw)
        if principal is None and request.META.get(VIA_MCP_ENVIRON):
            from gedweb.oauth.grants import access_token_principal

            origin = f"{request.scheme}://{request.get_host()}"
            principal = access_token_principal(raw, origin=origin)
        if principal is None:
            raise exceptions.AuthenticationFailed()
        return principal, raw

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"
