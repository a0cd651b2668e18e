"""OAuth grants: who an access token speaks for, which grants a person has, revoking one.

A grant is what one consent made: one person, one client, one scope string
(``"<memory scope> project:<id>"``, gedweb/oauth/scopes.py). Its tokens are
django-oauth-toolkit's rows (AccessToken, RefreshToken); a grant is live while
one of them is. Revoking it deletes its access tokens and revokes its refresh
tokens, so the next request with any of them is a 401.

``access_token_principal`` is the API's one way to read an OAuth access token
(memory/api/authentication.py): the token, its audience, its scope and the
person's role, checked on every request, so a revoked grant, a removed
membership or a lowered role stops a token at once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from oauth2_provider.models import AccessToken, RefreshToken, revoke_access_token

from gedweb.oauth import scopes
from memory.models import Membership, Project

if TYPE_CHECKING:
    from memory.api.authentication import Principal

MCP_PATH = "/mcp"
# An author is at most 64 characters (MemoryEntry.author).
AUTHOR_MAX = 64


def resource_identifiers(origin: str) -> tuple[str, str]:
    """The RFC 8707 resource indicators that name this server: its origin (the root
    protected-resource metadata's ``resource``) and its MCP endpoint (the path form's)."""
    return origin, origin + MCP_PATH


def _normalised(uri: str) -> tuple[str, str, int | None, str] | None:
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname or parts.username or parts.fragment:
        return None
    scheme = parts.scheme.lower()
    port = port or {"http": 80, "https": 443}.get(scheme)
    return scheme, parts.hostname.lower(), port, parts.path.rstrip("/") or "/"


def is_this_resource(resource: str, origin: str) -> bool:
    """Whether ``resource`` names this server (origin or /mcp), compared component-wise."""
    wanted = {_normalised(uri) for uri in resource_identifiers(origin)}
    found = _normalised(resource)
    return found is not None and found in wanted


def audience_ok(token_resources: Any, origin: str) -> bool:
    """A token is for this server only when it names it, and nothing else, as its audience.

    A token without a resource is refused: every token this server issues is
    bound to it at the authorization step (GedWebOAuth2Validator).
    """
    if not isinstance(token_resources, list) or not token_resources:
        return False
    return all(isinstance(uri, str) and is_this_resource(uri, origin) for uri in token_resources)


def role_of(user: Any, project_id: str) -> str | None:
    """The person's role in the project: a membership's, "superuser", or None."""
    if not user.is_active:
        return None
    if user.is_superuser:
        return "superuser"
    role: str | None = (
        Membership.objects.filter(user=user, project_id=project_id)
        .values_list("role", flat=True)
        .first()
    )
    return role


def client_label(application: Any) -> str:
    """How a client is named to people and in authors: its name, else its client_id's host."""
    name = " ".join(str(application.name or "").split())
    if name:
        return "".join(ch for ch in name if ch.isprintable())
    host = urlsplit(application.client_id).hostname if "://" in application.client_id else None
    return host or f"client {application.client_id[:12]}"


def author_name(user: Any, application: Any) -> str:
    """The author of what an OAuth token writes: the person, then the client.

    ``user:<login>`` is how the pages name a person; the client follows after
    " via ". Token names can contain no ":" (memory/validators.py), so no
    project token writes under this name.
    """
    return f"user:{user.get_username()} via {client_label(application)}"[:AUTHOR_MAX]


def access_token_principal(raw: str, *, origin: str) -> Principal | None:
    """The principal an OAuth access token speaks for on this server; None when it speaks
    for none (unknown, expired, revoked, for another resource, not a grant, or beyond
    what the person may still grant)."""
    from memory.api.authentication import Principal

    checksum = hashlib.sha256(raw.encode("utf-8")).hexdigest()
    token = (
        AccessToken.objects.select_related("application", "user")
        .filter(token_checksum=checksum)
        .first()
    )
    if token is None or token.user is None or token.application is None or token.is_expired():
        return None
    grant = scopes.parse(token.scope)
    if grant is None or not audience_ok(token.resource, origin):
        return None
    if grant.memory not in scopes.grantable(role_of(token.user, grant.project_id)):
        return None
    project = Project.objects.filter(pk=grant.project_id).first()
    if project is None:
        return None
    # Rate limits and Idempotency-Keys belong to the grant, not to one access
    # token: a refresh neither resets the counters nor forgets the keys.
    grant_key = f"{token.application_id}:{token.user_id}:{grant.project_id}"
    return Principal(
        kind="oauth",
        name=author_name(token.user, token.application),
        project_id=grant.project_id,
        project=project,
        rate_key="oauth:" + hashlib.sha256(
            f"{token.application.client_id}\0{grant_key}".encode()
        ).hexdigest()[:24],
        oauth_scope=grant,
        # Idempotency scopes are at most 80 characters (MemoryEntry).
        oauth_grant=hashlib.sha256(grant_key.encode()).hexdigest()[:32],
    )


# --- grants, for the pages and the admin -----------------------------------------------


@dataclass(frozen=True)
class Grant:
    """One live grant, as the person's grants page lists it."""

    application_id: int
    client: str
    client_id: str
    scope: str
    memory: str
    project_id: str
    created: datetime
    expires: datetime | None


def grant_list(*, user: Any) -> list[Grant]:
    """The person's live grants, newest first: one per (client, scope) with a token that
    still works (an unexpired access token, or a live refresh token bound to one)."""
    now = timezone.now()
    live = AccessToken.objects.filter(
        Q(expires__gt=now) | Q(refresh_token__revoked__isnull=True,
                               refresh_token__isnull=False),
        user=user,
    ).select_related("application").order_by("created")
    found: dict[tuple[int, str], Grant] = {}
    for token in live:
        grant = scopes.parse(token.scope or "")
        if token.application is None or grant is None:
            continue
        key = (token.application_id, token.scope)
        earlier = found.get(key)
        found[key] = Grant(
            application_id=token.application_id, client=client_label(token.application),
            client_id=token.application.client_id, scope=token.scope, memory=grant.memory,
            project_id=grant.project_id,
            created=earlier.created if earlier else token.created, expires=token.expires,
        )
    return sorted(found.values(), key=lambda g: g.created, reverse=True)


def grant_revoke(*, user: Any, application_id: int, scope: str) -> int:
    """Revoke one grant: every token of this person, client and scope; how many access
    tokens it had. Each refresh token family goes whole, so no refresh token outlives
    the grant, even one whose access token is already gone."""
    with transaction.atomic():
        tokens = list(AccessToken.objects.filter(
            user=user, application_id=application_id, scope=scope))
        families = {family for family in RefreshToken.objects.filter(access_token__in=tokens)
                    .values_list("token_family", flat=True) if family is not None}
        for token in tokens:
            revoke_access_token(token)
        for family in families:
            RefreshToken.revoke_family(family)
    return len(tokens)
