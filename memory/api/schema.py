"""OpenAPI descriptions drf-spectacular cannot infer on its own."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


# drf-spectacular's OpenApiAuthenticationExtension.__init_subclass__ is unannotated.
class BearerTokenScheme(  # type: ignore[no-untyped-call]  # untyped upstream, see above
    OpenApiAuthenticationExtension
):
    target_class = "memory.api.authentication.BearerTokenAuthentication"
    name = "BearerToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "The admin token or a project token (gwp_...).",
        }
