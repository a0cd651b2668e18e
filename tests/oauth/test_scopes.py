"""The scope rules of OAuth grants (gedweb/oauth/scopes.py), without a server."""

from __future__ import annotations

import pytest

from gedweb.oauth import scopes


def test_a_grant_scope_is_one_memory_scope_and_one_project() -> None:
    grant = scopes.parse("memory:propose project:shop")
    assert grant == scopes.GrantScope(memory="memory:propose", project_id="shop")
    assert grant.as_string() == "memory:propose project:shop"


@pytest.mark.parametrize("scope", [
    "", "memory:read", "project:shop", "memory:read memory:write project:shop",
    "memory:read project:shop project:other", "memory:read project:Shop",
    "oauth2_provider:registration", "memory:admin project:shop",
])
def test_anything_else_is_no_grant(scope: str) -> None:
    assert scopes.parse(scope) is None


def test_scopes_include_the_lower_ones() -> None:
    write = scopes.GrantScope(memory="memory:write", project_id="p")
    propose = scopes.GrantScope(memory="memory:propose", project_id="p")
    read = scopes.GrantScope(memory="memory:read", project_id="p")
    assert write.allows("memory:read") and write.allows("memory:propose")
    assert propose.allows("memory:read") and not propose.allows("memory:write")
    assert read.allows("memory:read") and not read.allows("memory:propose")


def test_a_person_grants_no_more_than_their_role() -> None:
    assert scopes.grantable("viewer") == ("memory:read",)
    assert scopes.grantable("operator") == scopes.MEMORY_SCOPES
    assert scopes.grantable("superuser") == scopes.MEMORY_SCOPES
    assert scopes.grantable(None) == ()
    assert scopes.grantable("") == ()
