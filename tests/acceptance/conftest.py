"""GedWeb started the way the README starts it, driven only from outside.

`make run` itself runs (migrate, collectstatic, gunicorn with gunicorn.conf.py)
with the README's environment: no DJANGO_SECRET_KEY, no WEB_CONCURRENCY (so
gunicorn.conf.py's 2 x CPUs + 1 workers), the demo project of development,
GEDWEB_ADMIN_TOKEN exported as in "Try it", and a fresh data directory.
On the PostgreSQL pass DATABASE_URL names a fresh database, as a team's
installation would; on the SQLite pass it is left unset, so the default
database in the data directory is used.

Tests talk to it over HTTP (a new TCP connection per request, so requests
spread over the workers), through Debian's chromium, and through
`manage.py` run beside it as an operator would.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.django_fixtures import *  # noqa: F403  (the Django suite's shared fixtures)
from tests.live_server import (
    REPO,
    ServerProcess,
    free_port,
    fresh_postgres_url,
    http_request,
    pg_admin,
    suite_engine,
)

MANAGE = [sys.executable, "manage.py"]
PASSWORD = "acceptance-horse-battery-7"


class MadeRun(ServerProcess):
    """One `make run` server in its own process group, with its own data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.admin_token = f"acceptance-admin-{secrets.token_urlsafe(24)}"
        port = free_port()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GEDWEB_", "DJANGO_", "GUNICORN_", "FERRYMAN_"))
               and k not in ("DATABASE_URL", "WEB_CONCURRENCY", "REDIS_URL", "HOST", "PORT",
                             "PROMETHEUS_MULTIPROC_DIR")}
        env.update({"GEDWEB_DATA_DIR": str(data_dir), "GEDWEB_ADMIN_TOKEN": self.admin_token,
                    "PORT": str(port)})
        self.pg_name: str | None = None
        if suite_engine() == "postgresql":
            self.pg_name, env["DATABASE_URL"] = fresh_postgres_url("gedweb_accept")
        super().__init__(["make", "--no-print-directory", "run"], env, port,
                         data_dir.parent / "make-run.log")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    start_timeout = 180.0  # migrate + collectstatic + workers booting

    def start(self, env: dict[str, str] | None = None) -> None:
        if self.pg_name:
            pg_admin(f'CREATE DATABASE "{self.pg_name}"')
        super().start(env)
        # Every worker up, so that requests really spread over them.
        deadline = time.monotonic() + 180
        while len(self.worker_pids()) < self.configured_workers():
            if time.monotonic() > deadline:
                raise AssertionError(f"workers did not boot: {self.log_tail()}")
            time.sleep(0.2)

    def stop(self) -> None:
        super().stop()
        if self.pg_name:
            pg_admin(f'DROP DATABASE IF EXISTS "{self.pg_name}" WITH (FORCE)')

    # --- what the log says ------------------------------------------------------------------

    def configured_workers(self) -> int:
        """The worker count gunicorn.conf.py gives in the server's environment."""
        code = "import runpy; print(runpy.run_path('gunicorn.conf.py')['workers'])"
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=self.env,
                              capture_output=True, text=True, timeout=30, check=True)
        return int(done.stdout)

    def worker_pids(self) -> set[int]:
        return {int(pid) for pid in re.findall(r"Booting worker with pid: (\d+)", self.log_text())}

    def log_size(self) -> int:
        return self.log_path.stat().st_size

    def answering_workers(self, since: int) -> set[int]:
        """The pids of the workers that answered the requests logged after byte ``since``.

        gunicorn.conf.py ends each access-log line with the worker's <pid>.
        """
        with open(self.log_path, "rb") as log:
            log.seek(since)
            text = log.read().decode(errors="replace")
        return {int(pid) for pid in re.findall(r'" \d{3} .* <(\d+)>$', text, flags=re.MULTILINE)}

    # --- talking to it ----------------------------------------------------------------------

    def request(self, method: str, path: str, token: str | None = None, body: Any = None,
                headers: dict[str, str] | None = None,
                cookies: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
        """One request on a new connection, as a fresh client (or a new worker) sees it."""
        return http_request(self.port, method, path, token, body, headers, cookies, timeout=60)

    def manage(self, *args: str, stdin: str | None = None,
               **extra_env: str) -> subprocess.CompletedProcess[str]:
        """`.venv/bin/python manage.py ...` beside the server, with its environment."""
        return subprocess.run([*MANAGE, *args], cwd=REPO, env={**self.env, **extra_env},
                              input=stdin, capture_output=True, text=True, timeout=180,
                              check=False)

    def shell(self, code: str) -> str:
        done = self.manage("shell", "-c", code)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout


@pytest.fixture(scope="module")
def made_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MadeRun]:
    server = MadeRun(tmp_path_factory.mktemp("made-run") / "data")
    try:
        server.start()
        yield server
    finally:
        server.stop()
