"""Bearer tokens, found by their SHA-256 (its own module: DRF imports it from settings)."""

from __future__ import annotations

import hashlib
from typing import Any

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from django_floor.models import Token


class BearerDigestAuthentication(BaseAuthentication):
    """``Authorization: Bearer <token>``, looked up by its SHA-256 in one query."""

    def authenticate(self, request: Request) -> tuple[Any, Token] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header.startswith("Bearer "):
            return None
        digest = hashlib.sha256(header[7:].encode()).hexdigest()
        token = Token.objects.select_related("project").filter(digest=digest).first()
        if token is None:
            raise exceptions.AuthenticationFailed("unknown token")
        return token.name, token

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"
