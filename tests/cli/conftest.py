"""A real GedWeb server for the CLI and MCP tests (session-scoped).

gunicorn runs as `make run` starts it (gunicorn.conf.py, gedweb.wsgi) on a
free 127.0.0.1 port against its own temporary SQLite database and mirror
root, whatever DATABASE_URL the rest of the suite uses; it never touches the
pytest-django test database. The server has a memory write token, so tests
that write pass it and one test checks the boundary without it.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.django_fixtures import *  # noqa: F403  (the Django suite's shared fixtures)
from tests.security.live_server import ServerDown, http_request

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
GEDWEB = BIN / "gedweb"
PROJECT = "cli-shop"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
    assert GEDWEB.exists(), "install the package first: .venv/bin/pip install -e ."
    tmp = tmp_path_factory.mktemp("gedweb-live")
    port = free_port()
    admin_token = secrets.token_urlsafe(32)
    memory_token = secrets.token_urlsafe(32)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GEDWEB_") and k not in ("DJANGO_SECRET_KEY", "DATABASE_URL")}
    env.update({
        "DJANGO_SETTINGS_MODULE": "gedweb.settings",
        "DATABASE_URL": f"sqlite:///{tmp / 'gedweb.sqlite3'}",
        "GEDWEB_MEMORY_ROOT": str(tmp / "memory"),
        "GEDWEB_ADMIN_TOKEN": admin_token,
        "GEDWEB_MEMORY_WRITE_TOKEN": memory_token,
        "GEDWEB_DEMO_PROJECT": "false",
        "GEDWEB_PRODUCTION": "false",
        "GEDWEB_MIRROR_WRITER": "inline",
        "GUNICORN_ACCESS_LOG": "",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "WEB_CONCURRENCY": "1",
        "GUNICORN_THREADS": "4",
    })
    migrate = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
                             cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
                             check=False)
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr
    log_path = tmp / "gunicorn.log"
    command = [str(BIN / "gunicorn"), "--config", "gunicorn.conf.py",
               "--control-socket", str(tmp / "gunicorn.ctl"), "gedweb.wsgi"]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(f"gunicorn exited: {log_path.read_text(errors='replace')[-2000:]}")
            try:
                status, body = http_json(port, "GET", "/healthz")
                if status == 200:
                    break
            except (ServerDown, ValueError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"no /healthz in 30 s: {log_path.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
        status, body = http_json(port, "POST", "/v1/projects", admin_token,
                                 {"id": PROJECT, "name": "CLI shop"})
        assert status == 201, body
        yield LiveServer(port, admin_token, memory_token, PROJECT, body["token"])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
