"""Bearer-token authentication for the API: the admin token or a project token."""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from django.conf import settings
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from memory.models import ProjectToken, hash_token

ADMIN_AUTHOR = "admin"


@dataclass(frozen=True)
class Principal:
    """Who made a request. ``name`` becomes the author of what they write."""

    kind: str  # "admin" or "project"
    name: str
    project_id: str | None = None
    token_id: int | None = None

    is_authenticated = True

    @property
    def is_admin(self) -> bool:
        return self.kind == "admin"

    def covers(self, project_id: str) -> bool:
        return self.is_admin or self.project_id == project_id


def _admin_token_matches(raw: str) -> bool:
    configured = settings.ADMIN_TOKEN
    if not configured:
        return False
    # Comparing fixed-length digests keeps the time independent of how much
    # of the token, and of its length, a caller guessed right.
    return hmac.compare_digest(hash_token(raw), hash_token(configured))


def principal_for_token(raw: str) -> Principal | None:
    if _admin_token_matches(raw):
        return Principal(kind="admin", name=ADMIN_AUTHOR)
    token = (
        ProjectToken.objects.active()
        .filter(token_hash=hash_token(raw))
        .values("id", "name", "project_id", "token_hash")
        .first()
    )
    if token is None or not hmac.compare_digest(token["token_hash"], hash_token(raw)):
        return None
    return Principal(
        kind="project", name=token["name"], project_id=token["project_id"], token_id=token["id"]
    )


class BearerTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Principal, str] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        raw = raw.strip()
        if scheme.lower() != "bearer" or not raw or " " in raw or not raw.isprintable():
            raise exceptions.AuthenticationFailed()
        principal = principal_for_token(raw)
        if principal is None:
            raise exceptions.AuthenticationFailed()
        return principal, raw

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"
