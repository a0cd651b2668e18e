"""A real GedWeb server for the CLI and MCP tests (session-scoped).

tests/live_server.py's gunicorn, on a free 127.0.0.1 port against its own
temporary SQLite database and mirror root, whatever DATABASE_URL the rest of
the suite uses; it never touches the pytest-django test database. The server
has a memory write token, so tests that write pass it and one test checks
the boundary without it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.django_fixtures import *  # noqa: F403  (the Django suite's shared fixtures)
from tests.live_server import BIN, LiveGunicorn, http_request

GEDWEB = BIN / "gedweb"
PROJECT = "cli-shop"


def http_json(port: int, method: str, path: str, token: str | None = None,
              body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    status, payload, _ = http_request(port, method, path, token, body, headers, timeout=10)
    return status, payload


@dataclass
class LiveServer:
    port: int
    admin_token: str
    memory_token: str
    project: str
    project_token: str
    # The server itself, for `manage.py` against its database (ged_export in the sync tests).
    gunicorn: LiveGunicorn | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def entries(self, project: str | None = None) -> list[dict[str, Any]]:
        status, body = http_json(self.port, "GET",
                                 f"/v1/projects/{project or self.project}/memory?limit=500",
                                 self.admin_token)
        assert status == 200, body
        return body["items"]

    def new_project(self, project_id: str) -> str:
        status, body = http_json(self.port, "POST", "/v1/projects", self.admin_token,
                                 {"id": project_id, "name": project_id})
        assert status == 201, body
        return body["token"]

    def cli_env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GEDWEB_")}
        env.update({"GEDWEB_URL": self.url, "GEDWEB_TOKEN": self.project_token,
                    "GEDWEB_MEMORY_TOKEN": self.memory_token})
        env.update(extra)
        return env


def run_cli(*args: str, env: dict[str, str], timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([str(GEDWEB), *args], env=env, capture_output=True, text=True,
                          timeout=timeout, check=False, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="session")
def gedweb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    assert GEDWEB.exists(), "install the package first: make test"
    tmp = tmp_path_factory.mktemp("gedweb-live")
    with LiveGunicorn.running(tmp, engine="sqlite", WEB_CONCURRENCY="1") as server:
        status, body = http_json(server.port, "POST", "/v1/projects", server.admin_token,
                                 {"id": PROJECT, "name": "CLI shop"})
        assert status == 201, body
        yield LiveServer(server.port, server.admin_token, server.memory_token, PROJECT,
                         body["token"], server)
