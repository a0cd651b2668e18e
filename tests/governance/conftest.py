"""Fixtures for the governance API tests (project clients and opened work)."""

from __future__ import annotations

from typing import Any

import pytest

from governance.models import WorkItem
from tests.django_fixtures import *  # noqa: F403  (the Django suite's shared fixtures)
from tests.governance.support import DIRECT, PLANNED, open_work


@pytest.fixture
def api(alpha: Any, client_for: Any) -> Any:
    """An API client with alpha's project token."""
    return client_for(alpha.token)


@pytest.fixture
def direct_work(alpha: Any) -> WorkItem:
    return open_work(alpha.project, DIRECT)


@pytest.fixture
def planned_work(alpha: Any) -> WorkItem:
    return open_work(alpha.project, PLANNED)
