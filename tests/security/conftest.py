"""The live gunicorn server of the CLI tests, for what only a real server can send."""

from __future__ import annotations

from tests.cli.conftest import gedweb_server  # noqa: F401  (a session fixture, re-exported)
from tests.django_fixtures import *  # noqa: F403  (the Django suite's shared fixtures)
