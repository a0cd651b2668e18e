"""GedWeb's rules on top of django-oauth-toolkit's OAuth2Validator.

The toolkit runs the protocol (PKCE, codes, tokens, rotation, revocation,
registration, client ID metadata documents); here are the few decisions that
are GedWeb's own:

- only the authorization code grant (with its refresh tokens): no client
  credentials, no device flow, so every token has a person behind it;
- scopes are the three memory scopes and ``project:<id>`` (gedweb/oauth/scopes.py);
- every code, so every token, is bound to this server as its RFC 8707
  audience; a ``resource`` naming anything else is ``invalid_target``;
- http redirect URIs only on loopback addresses (RFC 8252 7.3), where any
  port matches (the toolkit's loopback rule); everything else matches exactly.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

from django.http import HttpRequest
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors

from gedweb.oauth import grants, scopes

GRANT_TYPES = frozenset({"authorization_code", "refresh_token"})


def is_loopback_http(uri: str) -> bool:
    parts = urlsplit(uri)
    if parts.scheme != "http" or not parts.hostname:
        return False
    try:
        return ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        return False


class _HeadersRequest(HttpRequest):
    """A Django request of an oauthlib request's headers (the toolkit copies META there)."""

    def __init__(self, headers: Any) -> None:
        super().__init__()
        self.META = headers
        self._secure = bool(headers.get("X_DJANGO_OAUTH_TOOLKIT_SECURE"))

    def _get_scheme(self) -> str:
        return "https" if self._secure else "http"


def request_origin(request: Any) -> str:
    """The origin the authorization request came to, its host checked as Django checks it."""
    django_request = _HeadersRequest(request.headers)
    return f"{django_request.scheme}://{django_request.get_host()}"


class GedWebOAuth2Validator(OAuth2Validator):  # type: ignore[misc]  # the toolkit is untyped
    def validate_grant_type(
        self, client_id: str, grant_type: str, client: Any, request: Any, *args: Any,
        **kwargs: Any,
    ) -> bool:
        if grant_type not in GRANT_TYPES:
            return False
        return bool(super().validate_grant_type(client_id, grant_type, client, request,
                                                *args, **kwargs))

    def validate_response_type(
        self, client_id: str, response_type: str, client: Any, request: Any, *args: Any,
        **kwargs: Any,
    ) -> bool:
        if response_type != "code":
            return False
        return bool(super().validate_response_type(client_id, response_type, client, request,
                                                   *args, **kwargs))

    def validate_scopes(
        self, client_id: str, scopes_: list[str], client: Any, request: Any, *args: Any,
        **kwargs: Any,
    ) -> bool:
        return all(scopes.is_known(word) for word in scopes_)

    def validate_redirect_uri(
        self, client_id: str, redirect_uri: str, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        if urlsplit(redirect_uri).scheme == "http" and not is_loopback_http(redirect_uri):
            return False
        return bool(super().validate_redirect_uri(client_id, redirect_uri, request,
                                                  *args, **kwargs))

    def save_authorization_code(
        self, client_id: str, code: dict[str, Any], request: Any, *args: Any, **kwargs: Any
    ) -> None:
        origin = request_origin(request)
        requested = getattr(request, "resource", None) or []
        if isinstance(requested, str):
            requested = requested.split()
        for uri in requested:
            if not grants.is_this_resource(uri, origin):
                raise errors.CustomOAuth2Error(
                    error="invalid_target",
                    description=f"this server issues tokens for {origin}/mcp only",
                    request=request,
                )
        # A client that names no resource (an MCP client older than 2025-06-18)
        # still gets a token for this server alone.
        request.resource = requested or [grants.resource_identifiers(origin)[1]]
        super().save_authorization_code(client_id, code, request, *args, **kwargs)
