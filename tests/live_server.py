"""The one launcher of real GedWeb servers, for the tests and for bench/run.py.

`ServerProcess` starts a command (gunicorn as `make run` serves the site, or
`make run` itself) in its own process group, waits for /healthz and stops
the whole group. `LiveGunicorn` is the tests' gunicorn on a migrated
database of its own: a temporary SQLite file, or on the PostgreSQL pass a
fresh database (created here, dropped afterwards). It never touches the
pytest-django test database. Only the parts that read the suite's database
settings import Django, so bench/run.py uses this module without it.
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

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerDown(Exception):
    """The request got no HTTP answer: refused, reset or cut off mid-response."""


class ServerFailed(AssertionError):
    """The server exited, or never answered /healthz in time; carries its log's tail."""


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


def gunicorn_command(control_socket: Path, app: str = "gedweb.wsgi") -> list[str]:
    """gunicorn as `make run` starts it (gunicorn.conf.py), with a private control socket.

    gunicorn >= 25 opens a control socket at ~/.gunicorn/gunicorn.ctl by
    default; servers started side by side (xdist workers, a developer's
    `make run`) would take it from each other.
    """
    gunicorn = BIN / "gunicorn"
    command = [str(gunicorn)] if gunicorn.exists() else [sys.executable, "-m", "gunicorn"]
    return [*command, "--config", "gunicorn.conf.py", "--control-socket", str(control_socket),
            app]


class ServerProcess:
    """A server command in its own process group, its output appended to one log file."""

    start_timeout = 30.0

    def __init__(self, command: list[str], env: dict[str, str], port: int,
                 log_path: Path) -> None:
        self.command = command
        self.env = env
        self.port = port
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def healthy(self, body: Any) -> bool:
        """Whether a 200 from /healthz means up; any 200 does, unless a subclass asks more."""
        return True

    def start(self, env: dict[str, str] | None = None) -> None:
        """Start (with ``env`` instead of the server's), then wait for a healthy /healthz."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.command, cwd=REPO, env=env or self.env, stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self.proc.poll() is not None:
                raise ServerFailed(f"{self.command[0]} exited with {self.proc.returncode}: "
                                   f"{self.log_tail()}")
            try:
                status, body, _ = http_request(self.port, "GET", "/healthz", timeout=5)
                if status == 200 and self.healthy(body):
                    return
            except (ServerDown, ValueError):
                pass
            if time.monotonic() > deadline:
                raise ServerFailed(f"no /healthz within {self.start_timeout:.0f} s: "
                                   f"{self.log_tail()}")
            time.sleep(0.05)

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole process group: the server and every worker, no clean-up."""
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM the process group (gunicorn stops its workers gracefully), then SIGKILL."""
        if not self.is_running():
            return
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_text()[-chars:]


# --- the tests' gunicorn, on the suite's engine ----------------------------------------------


def suite_engine() -> str:
    from django.conf import settings

    return "postgresql" if "postgresql" in settings.DATABASES["default"]["ENGINE"] else "sqlite"


def pg_admin(sql: str) -> None:
    """One statement on the suite's PostgreSQL server, outside any database of GedWeb's."""
    import psycopg
    from django.conf import settings

    db = settings.DATABASES["default"]
    with psycopg.connect(host=db.get("HOST") or "127.0.0.1", port=db.get("PORT") or 5432,
                         user=db.get("USER") or "postgres", password=db.get("PASSWORD") or None,
                         dbname="postgres", autocommit=True) as conn:
        conn.execute(sql)


def fresh_postgres_url(prefix: str) -> tuple[str, str]:
    """(name, DATABASE_URL) of a database not yet created, on the suite's PostgreSQL server."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    name = f"{prefix}_{os.getpid()}_{secrets.token_hex(4)}"
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return name, f"postgres://{user}{password}@{host}:{port}/{name}"


class LiveGunicorn(ServerProcess):
    """A real gunicorn GedWeb that tests can kill, restart and inspect with SQL.

    ``engine`` defaults to the suite's; "sqlite" keeps a server on a SQLite
    file whatever DATABASE_URL the suite uses (the CLI tests).
    """

    def __init__(self, tmp: Path, engine: str | None = None, **extra_env: str) -> None:
        self.tmp = tmp
        # Never starting with "-": the tests pass them as `--memory-token VALUE`,
        # which argparse would read as an option (1 run in 64 failed so).
        self.admin_token = "admin-" + secrets.token_urlsafe(32)
        self.memory_token = "memory-" + secrets.token_urlsafe(32)
        self.engine = engine or suite_engine()
        if self.engine == "postgresql":
            self.pg_name, self.database_url = fresh_postgres_url("gedweb_live")
        else:
            self.sqlite_path = tmp / "gedweb.sqlite3"
            self.database_url = f"sqlite:///{self.sqlite_path}"
        port = free_port()
        # PROMETHEUS_MULTIPROC_DIR too: gunicorn.conf.py puts the metrics files
        # in the server's own data directory.
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("GEDWEB_")
               and k not in ("DJANGO_SECRET_KEY", "DATABASE_URL", "PROMETHEUS_MULTIPROC_DIR")}
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
            # The recall indexer only where a test asks for it (tests/memory/test_recall_live.py).
            "GEDWEB_RECALL_INDEXER": "off",
            "GUNICORN_ACCESS_LOG": "",
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "WEB_CONCURRENCY": "2",
            "GUNICORN_THREADS": "4",
        })
        env.update(extra_env)
        super().__init__(gunicorn_command(tmp / "gunicorn.ctl"), env, port, tmp / "gunicorn.log")

    # --- lifecycle ---------------------------------------------------------------------

    def create_database(self) -> None:
        if self.engine == "postgresql":
            pg_admin(f'CREATE DATABASE "{self.pg_name}"')
        done = self.manage("migrate", "--noinput", "-v0", timeout=180)
        assert done.returncode == 0, done.stdout + done.stderr

    def drop_database(self) -> None:
        if self.engine == "postgresql":
            pg_admin(f'DROP DATABASE IF EXISTS "{self.pg_name}" WITH (FORCE)')

    @classmethod
    @contextmanager
    def running(cls, tmp: Path, engine: str | None = None,
                       **extra_env: str) -> Iterator[LiveGunicorn]:
        """A server on its own migrated database, stopped and dropped afterwards."""
        server = cls(tmp, engine, **extra_env)
        server.create_database()
        try:
            server.start()
            yield server
        finally:
            server.stop()
            server.drop_database()

    def start(self, env: dict[str, str] | None = None, **extra_env: str) -> None:
        """Start (again, after kill or stop), with ``extra_env`` over the server's environment."""
        super().start({**self.env, **(env or {}), **extra_env})

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
