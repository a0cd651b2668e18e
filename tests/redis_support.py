"""The test Redis: .ci/run starts one at 127.0.0.1:6379; db 15 is the tests' own."""

from __future__ import annotations

import os

import pytest
import redis

REDIS_TEST_URL = "redis://127.0.0.1:6379/15"


def require_redis() -> redis.Redis:
    """A client of the test Redis; skipped where none runs, a failure on CI (.ci/run starts it)."""
    client = redis.Redis.from_url(REDIS_TEST_URL)
    try:
        client.ping()
    except redis.exceptions.ConnectionError:
        client.close()
        if os.environ.get("CI"):
            pytest.fail("no Redis at 127.0.0.1:6379 on CI", pytrace=False)
        pytest.skip("no Redis at 127.0.0.1:6379")
    return client
