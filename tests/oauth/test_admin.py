"""Operators see and revoke OAuth clients, grants and tokens in the admin (docs/oauth.md)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, RefreshToken

from gedweb.oauth import grants
from memory.models import Membership, Project

pytestmark = pytest.mark.django_db


@pytest.fixture
def granted(django_user_model):
    project = Project.objects.create(id="shop", name="Shop")
    alice = django_user_model.objects.create_user("alice", "a@example.org", "pw-alice-123")
    Membership.objects.create(user=alice, project=project, role="operator")
    app = Application.objects.create(
        name="Agent", client_type="public", authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1/callback")
    access = AccessToken(user=alice, application=app, scope="memory:read project:shop",
                         expires=timezone.now() + timedelta(hours=1),
                         resource=["http://testserver/mcp"])
    access._raw_token = "raw-access-token"
    access.save()
    refresh = RefreshToken(user=alice, application=app, access_token=access)
    refresh._raw_token = "raw-refresh-token"
    refresh.save()
    return alice, app, access


def test_the_admin_lists_clients_and_tokens_for_operators(client, django_user_model, granted):
    root = django_user_model.objects.create_superuser("root", "r@example.org", "pw-root-123")
    client.force_login(root)
    clients = client.get("/admin/oauth2_provider/application/")
    assert clients.status_code == 200
    assert "Agent" in clients.content.decode()
    tokens = client.get("/admin/oauth2_provider/accesstoken/")
    assert tokens.status_code == 200
    assert "alice" in tokens.content.decode()


def test_the_person_sees_the_grant_and_revoking_it_ends_every_token(granted):
    alice, app, access = granted
    listed = grants.grant_list(user=alice)
    assert [(g.client, g.project_id, g.memory) for g in listed] == [("Agent", "shop",
                                                                     "memory:read")]
    assert grants.access_token_principal("raw-access-token", origin="http://testserver")
    assert grants.grant_revoke(user=alice, application_id=app.pk,
                               scope="memory:read project:shop") == 1
    assert not AccessToken.objects.filter(pk=access.pk).exists()
    assert RefreshToken.objects.get(user=alice).revoked is not None
    assert grants.grant_list(user=alice) == []
    assert grants.access_token_principal("raw-access-token", origin="http://testserver") is None


def test_a_token_names_the_person_and_the_client_and_its_project(granted):
    principal = grants.access_token_principal("raw-access-token", origin="http://testserver")
    assert principal is not None
    assert (principal.kind, principal.name, principal.project_id) == (
        "oauth", "user:alice via Agent", "shop")
    assert principal.oauth_scope is not None and principal.oauth_scope.memory == "memory:read"
    assert principal.idempotency_scope.startswith("oauth:")
    assert len(principal.idempotency_scope) <= 80


def test_a_token_is_refused_for_another_origin_or_when_the_role_no_longer_allows_it(granted):
    alice, _, access = granted
    assert grants.access_token_principal("raw-access-token", origin="http://other") is None
    access.scope = "memory:write project:shop"
    access.save(update_fields=["scope"])
    assert grants.access_token_principal("raw-access-token", origin="http://testserver")
    Membership.objects.filter(user=alice).update(role="viewer")
    assert grants.access_token_principal("raw-access-token", origin="http://testserver") is None
