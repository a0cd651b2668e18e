"""A real gunicorn GedWeb that tests can kill, restart and inspect with SQL.

It runs as `make run` serves the site (gunicorn.conf.py, gedweb.wsgi), in
its own process group, against a database of its own on the same engine as
the suite: a temporary SQLite file on the SQLite pass, a fresh PostgreSQL
database (created here, dropped afterwards) on the PostgreSQL pass. It never
touches the pytest-django test database.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerDown(Exception):
    """The request got no HTTP answer: refused, reset or cut off mid-response."""


def suite_engine() -> str:
    return "postgresql" if "postgresql" in settings.DATABASES["default"]["ENGINE"] else "sqlite"


def _pg_admin(sql: str) -> None:
    import psycopg

    db = settings.DATABASES["default"]
    with psycopg.connect(host=db.get("HOST") or "127.0.0.1", port=db.get("PORT") or 5432,
                         user=db.get("USER") or "postgres", password=db.get("PASSWORD") or None,
                         dbname="postgres", autocommit=True) as conn:
        conn.execute(sql)


def http_request(port: int, method: str, path: str, token: str | None = None, body: Any = None,
                 headers: dict[str, str] | None = None, cookies: dict[str, str] | None = None,
                 timeout: float = 30) -> tuple[int, Any, dict[str, str]]:
    """One request on a new connection to 127.0.0.1:port: (status, JSON or bytes, headers)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    all_headers = {"Accept": "application/json", **(headers or {})}
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    if cookies:
        all_headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        all_headers["Content-Type"] = "application/json"
    try:
        conn.request(method, path, body=data, headers=all_headers)
        response = conn.getresponse()
        payload = response.read()
        response_headers = {k.lower(): v for k, v in response.getheaders()}
    except (OSError, http.client.HTTPException) as exc:
        raise ServerDown(repr(exc)) from exc
    finally:
        conn.close()
    content_type = response_headers.get("content-type", "")
    parsed = json.loads(payload) if payload and "json" in content_type else payload
    return response.status, parsed, response_headers


class LiveGunicorn:
    def __init__(self, tmp: Path, **extra_env: str) -> None:
        self.tmp = tmp
        self.port = free_port()
        self.admin_token = secrets.token_urlsafe(32)
        self.memory_token = secrets.token_urlsafe(32)
        self.engine = suite_engine()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = tmp / "gunicorn.log"
        if self.engine == "postgresql":
            db = settings.DATABASES["default"]
            self.pg_name = f"gedweb_live_{os.getpid()}_{secrets.token_hex(4)}"
            user = db.get("USER") or "postgres"
            password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
            host = db.get("HOST") or "127.0.0.1"
            port = db.get("PORT") or 5432
            self.database_url = f"postgres://{user}{password}@{host}:{port}/{self.pg_name}"
        else:
            self.sqlite_path = tmp / "gedweb.sqlite3"
            self.database_url = f"sqlite:///{self.sqlite_path}"
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("GEDWEB_") and k not in ("DJANGO_SECRET_KEY", "DATABASE_URL")}
        env.update({
            "DJANGO_SETTINGS_MODULE": "gedweb.settings",
            "DATABASE_URL": self.database_url,
            # An installation of its own: its own secret key, static files.
            "GEDWEB_DATA_DIR": str(tmp / "data"),
            "GEDWEB_MEMORY_ROOT": str(tmp / "memory"),
            "GEDWEB_ADMIN_TOKEN": self.admin_token,
            "GEDWEB_MEMORY_WRITE_TOKEN": self.memory_token,
            "GEDWEB_DEMO_PROJECT": "false",
            "GEDWEB_PRODUCTION": "false",
            "GEDWEB_MIRROR_WRITER": "inline",
            "GUNICORN_ACCESS_LOG": "",
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "WEB_CONCURRENCY": "2",
            "GUNICORN_THREADS": "4",
        })
        env.update(extra_env)
        self.env = env

    # --- lifecycle ---------------------------------------------------------------------

    def create_database(self) -> None:
        if self.engine == "postgresql":
            _pg_admin(f'CREATE DATABASE "{self.pg_name}"')
        done = self.manage("migrate", "--noinput", "-v0", timeout=180)
        assert done.returncode == 0, done.stdout + done.stderr

    def drop_database(self) -> None:
        if self.engine == "postgresql":
            _pg_admin(f'DROP DATABASE IF EXISTS "{self.pg_name}" WITH (FORCE)')

    @classmethod
    @contextmanager
    def running(cls, tmp: Path, **extra_env: str) -> Iterator[LiveGunicorn]:
        """A server on its own migrated database, stopped and dropped afterwards."""
        server = cls(tmp, **extra_env)
        server.create_database()
        try:
            server.start()
            yield server
        finally:
            server.stop()
            server.drop_database()

    def start(self, **extra_env: str) -> None:
        assert self.proc is None or self.proc.poll() is not None
        env = {**self.env, **extra_env}
        command = [str(BIN / "gunicorn"), "--config", "gunicorn.conf.py", "gedweb.wsgi"]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"gunicorn exited: {self.log_tail()}")
            try:
                if self.request("GET", "/healthz")[0] == 200:
                    return
            except ServerDown:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"no /healthz within 30 s: {self.log_tail()}")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL the whole process group: arbiter and every worker, no clean-up."""
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=25)
        except subprocess.TimeoutExpired:
            self.kill()

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]

    # --- talking to it ------------------------------------------------------------------

    def request(self, method: str, path: str, token: str | None = None, body: Any = None,
                headers: dict[str, str] | None = None,
                timeout: float = 30) -> tuple[int, Any, dict[str, str]]:
        return http_request(self.port, method, path, token, body, headers, timeout=timeout)

    def new_project(self, project_id: str) -> str:
        status, body, _ = self.request("POST", "/v1/projects", self.admin_token,
                                       {"id": project_id, "name": project_id})
        assert status == 201, body
        return body["token"]

    def append(self, project: str, token: str, body: dict[str, Any],
               key: str | None = None) -> tuple[int, Any, dict[str, str]]:
        headers = {"X-Memory-Token": self.memory_token}
        if key is not None:
            headers["Idempotency-Key"] = key
        return self.request("POST", f"/v1/projects/{project}/memory", token, body, headers)

    def verify(self, project: str, token: str) -> dict[str, Any]:
        status, body, _ = self.request("GET", f"/v1/projects/{project}/memory/verify", token)
        assert status == 200, body
        return body

    def manage(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=self.env,
                              capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Read the server's database directly; %s placeholders on both engines."""
        if self.engine == "postgresql":
            import psycopg

            with psycopg.connect(self.database_url.replace("postgres://", "postgresql://"),
                                 autocommit=True) as conn:
                return list(conn.execute(query, params).fetchall())
        with sqlite3.connect(self.sqlite_path, timeout=30) as conn:
            return list(conn.execute(query.replace("%s", "?"), params).fetchall())
