"""Who may call what. Project scoping itself lives in ProjectAPIView."""

from __future__ import annotations

import hmac
from typing import Any

from django.conf import settings
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from gedweb.exceptions import MemoryWriteForbidden, NoAdminToken
from memory.models import hash_token

MEMORY_TOKEN_HEADERS = ("HTTP_X_MEMORY_TOKEN", "HTTP_X_FERRYMAN_MEMORY_TOKEN")


class IsAuthenticatedPrincipal(BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        return request.user is not None and getattr(request.user, "is_authenticated", False)


class IsAdmin(BasePermission):
    message = "this endpoint needs the admin token"

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user is not None and getattr(request.user, "is_admin", False))


class AdminEndpoint:
    """A view for the admin token alone: a mixin before GedWebAPIView, with IsAdmin.

    On a server without GEDWEB_ADMIN_TOKEN such an endpoint is off: 401 for
    every caller, never merely forbidden to some (contract section 1), and
    before any token is looked at, so the answer says that the server has
    none instead of blaming the caller's.
    """

    def perform_authentication(self, request: Request) -> None:
        if not settings.ADMIN_TOKEN:
            raise NoAdminToken()
        super().perform_authentication(request)  # type: ignore[misc]  # a mixin of APIView


def memory_write_allowed(request: Request) -> bool:
    """The Ferryman boundary: with a write token configured, writes must carry it."""
    configured = settings.MEMORY_WRITE_TOKEN
    if not configured:
        return True
    grant = getattr(request.user, "oauth_scope", None)
    if grant is not None:
        # An OAuth grant of memory:write was given by someone who showed the
        # write token on the consent page (gedweb/oauth/views.py); no other
        # grant passes, whatever header comes with it.
        return bool(grant.allows("memory:write"))
    expected = hash_token(configured)
    for header in MEMORY_TOKEN_HEADERS:
        presented = request.META.get(header)
        if presented and hmac.compare_digest(hash_token(presented), expected):
            return True
    return False


def require_memory_write(request: Request) -> None:
    if not memory_write_allowed(request):
        raise MemoryWriteForbidden()
