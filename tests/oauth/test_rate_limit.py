"""GEDWEB_OAUTH_RATE_LIMIT: open registration and the token endpoint are counted per
client address, with the API's counters (gedweb/oauth/views.py)."""

from __future__ import annotations

from typing import Any

import pytest
from oauth2_provider.models import Application

from gedweb.lib.rates import Rate

pytestmark = pytest.mark.django_db(transaction=True)

REGISTRATION = {"client_name": "flood", "redirect_uris": ["http://127.0.0.1:1/cb"],
                "token_endpoint_auth_method": "none"}


@pytest.fixture
def two_a_minute(settings: Any) -> None:
    settings.REDIS_URL = None
    settings.OAUTH_RATE_LIMIT = Rate.parse("2/minute")


def test_registrations_past_the_limit_are_429_and_store_nothing(client: Any,
                                                                two_a_minute: None) -> None:
    for _ in range(2):
        answer = client.post("/oauth/register/", REGISTRATION, content_type="application/json",
                             REMOTE_ADDR="203.0.113.9")
        assert answer.status_code == 201, answer.content
    refused = client.post("/oauth/register/", REGISTRATION, content_type="application/json",
                          REMOTE_ADDR="203.0.113.9")
    assert refused.status_code == 429
    assert refused.json()["error"] == "temporarily_unavailable"
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert Application.objects.count() == 2
    # Another address has its own count.
    other = client.post("/oauth/register/", REGISTRATION, content_type="application/json",
                        REMOTE_ADDR="203.0.113.10")
    assert other.status_code == 201
    assert Application.objects.count() == 3


def test_the_token_endpoint_is_counted_too(client: Any, two_a_minute: None) -> None:
    statuses = [client.post("/oauth/token/", {"grant_type": "authorization_code"},
                            REMOTE_ADDR="203.0.113.11").status_code for _ in range(3)]
    assert statuses == [400, 400, 429]
