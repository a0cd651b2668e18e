"""GedWeb benchmark over real HTTP against the production server (`make bench`).

Everything runs on 127.0.0.1 with a fresh temporary database and mirror root
(never ./.data), and the server is always stopped at the end:

1. migrate the database; start gunicorn exactly as `make run` does
   (gunicorn.conf.py, gedweb.wsgi; access log off) on a free port; create
   the projects through POST /v1/projects with a random admin token;
   warm up every worker thread.
2. Append throughput: --clients threads, each with its own keep-alive
   connection, POST /v1/projects/{id}/memory for --duration seconds (or
   --appends requests) on a project starting empty. Afterwards GET
   .../memory/verify must say ok with entries == acknowledged appends, and
   the acknowledged seqs must be exactly 1..n.
3. Single-client latency of appends, then of reads (newest 100, full-text
   search for a common and a rare word, one entry by seq) on a project
   starting empty; then bench/layers.py splits an append's CPU time by
   layer, in process, on the same database.
4. Seed a project with --seed entries in a subprocess (bench/seed.py:
   bulk_create with a correct hash chain), time `manage.py memory mirror
   --rebuild --project` and an HTTP verify of the whole chain.
5. Repeat 3 alternating request by request between a fresh project and the
   seeded one over one connection (same load, same worker), and repeat 2 in
   ABBA rounds (fresh, seeded, seeded, fresh); the ratios seeded/empty come
   from these paired runs.
6. Check every mirror byte for byte (`manage.py memory mirror --check`),
   print a table, write bench/results/latest-<db>.json (or --json PATH).

CPU time of the server, of this client and of the whole machine is recorded
per phase, so a run disturbed by other work on the machine shows it.
Run `bench/run.py --help` for the options.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import platform
import random
import re
import runpy
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import workload  # noqa: E402

from tests.live_server import ServerFailed, ServerProcess, free_port, gunicorn_command  # noqa: E402

PYTHON = sys.executable
HARD_TIME_LIMIT = 1800.0  # no phase loop runs longer than this, whatever the options
MAX_APPENDS = 1_000_000
BENCH_RATE = "1000000000/minute"
FORBIDDEN_DATABASES = {"test", "test_test", "postgres", "template0", "template1"}


class BenchError(Exception):
    """A failed step: the run stops, the server is stopped, exit status 1."""


# --- statistics -------------------------------------------------------------------


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return float("nan")
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def summarize(latencies: list[float]) -> dict[str, Any]:
    values = sorted(latencies)
    if not values:
        return {"n": 0}
    ms = 1000.0
    return {
        "n": len(values),
        "p50_ms": round(percentile(values, 50) * ms, 3),
        "p90_ms": round(percentile(values, 90) * ms, 3),
        "p99_ms": round(percentile(values, 99) * ms, 3),
        "p99_9_ms": round(percentile(values, 99.9) * ms, 3),
        "mean_ms": round(sum(values) / len(values) * ms, 3),
        "min_ms": round(values[0] * ms, 3),
        "max_ms": round(values[-1] * ms, 3),
    }


# --- HTTP ----------------------------------------------------------------------------


class Client:
    """One keep-alive connection to 127.0.0.1 with a bearer token."""

    def __init__(self, port: int, token: str, timeout: float = 120.0) -> None:
        self.port = port
        self.timeout = timeout
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
        }
        self.conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes, float]:
        """(status, body, seconds); a network error closes the connection and raises."""
        all_headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            all_headers["Content-Type"] = "application/json"
        if headers:
            all_headers.update(headers)
        conn = self._connection()
        started = time.perf_counter()
        try:
            conn.request(method, path, body=data, headers=all_headers)
            response = conn.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise
        elapsed = time.perf_counter() - started
        if response.will_close:
            self.close()
        return response.status, payload, elapsed

    def json(self, method: str, path: str, body: Any = None, expect: int = 200) -> Any:
        status, payload, _ = self.request(method, path, body)
        if status != expect:
            raise BenchError(f"{method} {path} -> {status}, expected {expect}: {payload[:300]!r}")
        return json.loads(payload)


# --- database ---------------------------------------------------------------------------


class Database:
    """The benchmark's database: a temporary SQLite file or a PostgreSQL database."""

    def __init__(self, url: str | None, tmp: Path, query: str = "") -> None:
        self.pg: dict[str, Any] | None = None
        suffix = f"?{query}" if query else ""
        if url is None:
            self.vendor = "sqlite"
            self.path = tmp / "gedweb-bench.sqlite3"
            self.url = f"sqlite:///{self.path}{suffix}"
            return
        parts = urlsplit(url)
        if parts.scheme not in ("postgres", "postgresql"):
            raise BenchError("--database-url must be a postgres:// URL (SQLite is the default)")
        if parts.hostname != "127.0.0.1":
            raise BenchError("--database-url must point at 127.0.0.1: the benchmark stays local")
        name = unquote(parts.path.lstrip("/"))
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name) or name in FORBIDDEN_DATABASES:
            raise BenchError(
                f"refusing database name {name!r}: use a dedicated one such as gedweb_bench"
            )
        if parts.query and query:
            raise BenchError("give URL options either in --database-url or in --url-query")
        self.vendor = "postgresql"
        self.url = url + suffix
        self.name = name
        self.pg = {
            "host": "127.0.0.1",
            "port": parts.port or 5432,
            "user": unquote(parts.username or "postgres"),
            "password": unquote(parts.password) if parts.password else None,
        }

    def _admin(self) -> Any:
        import psycopg

        assert self.pg is not None
        params = {k: v for k, v in self.pg.items() if v is not None}
        return psycopg.connect(dbname="postgres", autocommit=True, connect_timeout=10, **params)

    def create(self) -> None:
        if self.pg is None:
            return
        from psycopg import sql

        with self._admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(self.name)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name)))

    def drop(self) -> None:
        if self.pg is None:
            return
        from psycopg import sql

        with self._admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(self.name)))

    def backend_pids(self) -> list[int]:
        """PostgreSQL backends connected to the bench database (for CPU accounting)."""
        if self.pg is None:
            return []
        try:
            with self._admin() as conn:
                rows = conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s", (self.name,)
                ).fetchall()
        except Exception:  # accounting only; never fail the run for it
            return []
        return [int(row[0]) for row in rows]

    def version(self) -> str:
        if self.pg is None:
            return sqlite3.sqlite_version
        with self._admin() as conn:
            row = conn.execute("SHOW server_version").fetchone()
            return str(row[0])

    def settings(self) -> dict[str, str]:
        if self.pg is None:
            return {"journal_mode": "wal", "synchronous": "FULL (from gedweb/settings.py)"}
        with self._admin() as conn:
            return {
                name: str(conn.execute(f"SHOW {name}").fetchone()[0])
                for name in ("fsync", "synchronous_commit", "wal_sync_method", "shared_buffers")
            }


# --- the server -------------------------------------------------------------------------


class Server(ServerProcess):
    """gunicorn with gunicorn.conf.py and gedweb.wsgi, as `make run` starts it.

    tests/live_server.py's launcher: its own process group and control socket.
    """

    def __init__(self, env: dict[str, str], port: int, log_path: Path,
                 app: str = "gedweb.wsgi") -> None:
        super().__init__(gunicorn_command(log_path.with_suffix(".ctl"), app), env, port,
                         log_path)

    start_timeout = 60.0

    def healthy(self, body: Any) -> bool:
        return isinstance(body, dict) and body.get("status") == "ok"

    def start(self, env: dict[str, str] | None = None) -> None:
        try:
            super().start(env)
        except ServerFailed as exc:
            raise BenchError(str(exc)) from exc

    def log_lines(self, count: int = 30) -> str:
        return "\n".join(self.log_text().splitlines()[-count:])


# --- CPU accounting -------------------------------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_stat(pid: int) -> tuple[int, float] | None:
    """(ppid, utime + stime in seconds) of a live process, from /proc."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK


def _machine_busy() -> float:
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError):
        return float("nan")
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / _TICK


class CpuMeter:
    """CPU seconds of the server (gunicorn master and workers), of this client
    process, of the database server's backends for the bench database
    (PostgreSQL only) and of the whole machine, between two snapshots."""

    def __init__(self, server: Server, db: Database) -> None:
        self.server = server
        self.db = db

    def _server_pids(self) -> list[int]:
        master = self.server.proc.pid if self.server.proc else None
        if master is None:
            return []
        pids = [master]
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                stat = _proc_stat(int(entry.name))
                if stat is not None and stat[0] == master:
                    pids.append(int(entry.name))
        return pids

    def snapshot(self) -> dict[str, Any]:
        per_pid = {}
        for pid in self._server_pids():
            stat = _proc_stat(pid)
            if stat is not None:
                per_pid[pid] = stat[1]
        backends = {}
        for pid in self.db.backend_pids():
            stat = _proc_stat(pid)
            if stat is not None:
                backends[pid] = stat[1]
        return {
            "wall": time.perf_counter(),
            "server": per_pid,
            "db": backends,
            "client": time.process_time(),
            "machine": _machine_busy(),
        }

    @staticmethod
    def _delta_pids(before: dict[int, float], after: dict[int, float]) -> float:
        return sum(value - before.get(pid, 0.0) for pid, value in after.items())

    def delta(self, before: dict[str, Any], after: dict[str, Any], ops: int) -> dict[str, Any]:
        wall = after["wall"] - before["wall"]
        server = self._delta_pids(before["server"], after["server"])
        client = after["client"] - before["client"]
        machine = after["machine"] - before["machine"]
        result = {
            "wall_s": round(wall, 3),
            "server_cpu_s": round(server, 2),
            "client_cpu_s": round(client, 2),
            "machine_busy_cpu_s": round(machine, 2),
            "machine_busy_fraction": round(machine / wall / (os.cpu_count() or 1), 3)
            if wall else None,
        }
        other = machine - server - client
        if self.db.pg is not None:
            database = self._delta_pids(before["db"], after["db"])
            result["database_cpu_s"] = round(database, 2)
            other -= database
        result["other_cpu_s"] = round(other, 2)
        if ops:
            result["server_cpu_ms_per_request"] = round(server / ops * 1000, 2)
            result["client_cpu_ms_per_request"] = round(client / ops * 1000, 2)
            if self.db.pg is not None:
                result["database_cpu_ms_per_request"] = round(
                    result["database_cpu_s"] / ops * 1000, 2)
        return result


def manage(env: dict[str, str], *args: str, timeout: float = 600) -> tuple[str, float]:
    """Run manage.py with the benchmark's environment; (stdout, seconds)."""
    started = time.perf_counter()
    result = subprocess.run(
        [PYTHON, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=timeout, check=False,
    )
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise BenchError(
            f"manage.py {' '.join(args)} failed ({result.returncode}):\n"
            f"{result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
    return result.stdout, elapsed


# --- phases ---------------------------------------------------------------------------------


class Budget:
    """A shared request budget: bounded in count and in time."""

    def __init__(self, count: int, seconds: float) -> None:
        self.remaining = count
        self.deadline = time.monotonic() + seconds
        self.lock = threading.Lock()

    def take(self) -> bool:
        if time.monotonic() >= self.deadline:
            return False
        with self.lock:
            if self.remaining <= 0:
                return False
            self.remaining -= 1
            return True


def append_throughput(
    port: int, token: str, project: str, clients: int, count: int, seconds: float, seed: int,
    meter: CpuMeter | None = None,
) -> dict[str, Any]:
    """clients threads append to one project until the budget runs out."""
    result = spread_throughput([port], [(project, token)], clients, count, seconds, seed, meter)
    result["_seqs"] = result.pop("_seqs_by_project")[project]
    return result


def spread_throughput(
    ports: list[int], targets: list[tuple[str, str]], clients: int, count: int,
    seconds: float, seed: int, meter: CpuMeter | None = None,
) -> dict[str, Any]:
    """clients threads append until the budget runs out; every 201 is acknowledged.

    Client i sends to server ports[i % len(ports)] and project
    targets[i % len(targets)] (a (project, token) pair), each on its own
    keep-alive connection.
    """
    budget = Budget(count, seconds)
    latencies: list[list[float]] = [[] for _ in range(clients)]
    seqs: list[list[int]] = [[] for _ in range(clients)]
    errors: list[str] = []
    errors_lock = threading.Lock()
    start_gate = threading.Barrier(clients + 1)

    def worker(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        project, token = targets[index % len(targets)]
        path = f"/v1/projects/{project}/memory"
        client = Client(ports[index % len(ports)], token)
        try:
            start_gate.wait(timeout=30)
            while budget.take():
                body = workload.request_body(rng)
                try:
                    status, payload, elapsed = client.request("POST", path, body)
                except (OSError, http.client.HTTPException) as exc:
                    with errors_lock:
                        errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                if status == 201:
                    latencies[index].append(elapsed)
                    seqs[index].append(json.loads(payload)["seq"])
                else:
                    with errors_lock:
                        errors.append(f"HTTP {status}: {payload[:200]!r}")
        finally:
            client.close()

    threads = [
        threading.Thread(target=worker, args=(i,), name=f"bench-append-{i}", daemon=True)
        for i in range(clients)
    ]
    for thread in threads:
        thread.start()
    cpu_before = meter.snapshot() if meter else None
    start_gate.wait(timeout=30)
    started = time.perf_counter()
    for thread in threads:
        thread.join(timeout=seconds + 180)
    elapsed = time.perf_counter() - started
    cpu = meter.delta(cpu_before, meter.snapshot(), sum(map(len, latencies))) if meter else None
    if any(thread.is_alive() for thread in threads):
        raise BenchError("append clients did not finish in time")
    all_latencies = [value for chunk in latencies for value in chunk]
    by_project: dict[str, list[int]] = {project: [] for project, _ in targets}
    for index, chunk in enumerate(seqs):
        by_project[targets[index % len(targets)][0]].extend(chunk)
    return {
        "clients": clients,
        "servers": len(ports),
        "projects": len(targets),
        "seconds": round(elapsed, 3),
        "acknowledged": len(all_latencies),
        "appends_per_s": round(len(all_latencies) / elapsed, 1) if elapsed > 0 else 0.0,
        "errors": len(errors),
        "error_samples": errors[:5],
        "latency": summarize(all_latencies),
        "cpu": cpu,
        "_seqs_by_project": {project: sorted(values) for project, values in by_project.items()},
        "_latencies": all_latencies,
    }


def floor_throughput(
    env: dict[str, str], tmp: Path, clients: int, count: int, seconds: float,
    problems: list[str], log: Any,
) -> dict[str, Any]:
    """The same append load against bench/floor.py under the same gunicorn config.

    The floor always writes SQLite WAL (synchronous=FULL), whatever database
    GedWeb runs on: it is the reference for "the least a server must do".
    """
    import floor

    port = free_port()
    database = tmp / "floor.sqlite3"
    token = secrets.token_urlsafe(32)
    floor_env = dict(env, PORT=str(port), FLOOR_DATABASE=str(database), FLOOR_TOKEN=token,
                     PYTHONPATH=os.pathsep.join([str(HERE), str(REPO)]),
                     PROMETHEUS_MULTIPROC_DIR=str(tmp / "floor-prometheus"))
    server = Server(floor_env, port, tmp / "floor-gunicorn.log", app="floor:app")
    log(f"floor server (bench/floor.py, same gunicorn config): {clients} clients")
    server.start()
    try:
        append_throughput(port, token, "floor-warmup", clients, 4 * clients, 120, seed=1)
        result = append_throughput(port, token, "floor", clients, count, seconds, seed=2)
    finally:
        server.stop()
    problems += [f"floor: {p}" for p in check_throughput(result, 0, floor.verify(str(database),
                                                                                "floor"))]
    log(f"  {result['appends_per_s']} appends/s, p50 {result['latency'].get('p50_ms')} ms, "
        f"errors {result['errors']}, {result['check']}")
    return result


def combine_rounds(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Several throughput rounds on one project as one figure."""
    acknowledged = sum(r["acknowledged"] for r in rounds)
    seconds = sum(r["seconds"] for r in rounds)
    return {
        "clients": rounds[0]["clients"],
        "rounds": rounds,
        "seconds": round(seconds, 3),
        "acknowledged": acknowledged,
        "appends_per_s": round(acknowledged / seconds, 1) if seconds else 0.0,
        "errors": sum(r["errors"] for r in rounds),
        "latency": summarize([value for r in rounds for value in r.pop("_latencies")]),
        "check": "ok" if all(r["check"] == "ok" for r in rounds) else "failed",
        "cpu": combine_cpu([r["cpu"] for r in rounds if r.get("cpu")], acknowledged),
    }


def combine_cpu(parts: list[dict[str, Any]], ops: int) -> dict[str, Any] | None:
    if not parts:
        return None
    total: dict[str, Any] = {}
    for key in ("wall_s", "server_cpu_s", "client_cpu_s", "machine_busy_cpu_s",
                "database_cpu_s", "other_cpu_s"):
        if key in parts[0]:
            total[key] = round(sum(p[key] for p in parts), 2)
    if ops:
        for name in ("server", "client", "database"):
            if f"{name}_cpu_s" in total:
                total[f"{name}_cpu_ms_per_request"] = round(
                    total[f"{name}_cpu_s"] / ops * 1000, 2)
    return total


def loadavg() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def check_throughput(result: dict[str, Any], before: int, verify: dict[str, Any]) -> list[str]:
    """Problems found: errors, verify not ok, count or seq range not as acknowledged."""
    problems = []
    seqs = result.pop("_seqs")
    acknowledged = result["acknowledged"]
    if result["errors"]:
        problems.append(f"{result['errors']} append errors, e.g. {result['error_samples'][:2]}")
    if not verify["ok"]:
        problems.append(f"chain broken at seq {verify['first_bad_seq']}")
    if verify["entries"] != before + acknowledged:
        problems.append(
            f"verify counts {verify['entries']} entries, expected {before} + {acknowledged}"
        )
    if seqs != list(range(before + 1, before + acknowledged + 1)):
        problems.append("acknowledged seqs are not the gap-free range after the previous head")
    result["verify"] = verify
    result["entries_before"] = before
    result["check"] = "ok" if not problems else "; ".join(problems)
    return problems


class Target:
    """One project measured by one client on its own keep-alive connection."""

    def __init__(self, client: Client, token: str, project: str, seed: int) -> None:
        self.project = project
        self.client = client
        self.auth = {"Authorization": f"Bearer {token}"}
        self.base = f"/v1/projects/{project}/memory"
        self.rng = random.Random(seed)
        self.head = 0
        self.latencies: dict[str, list[float]] = {}

    def record(self, op: str, seconds: float) -> None:
        self.latencies.setdefault(op, []).append(seconds)

    def get(self, path: str) -> tuple[Any, float]:
        status, payload, elapsed = self.client.request("GET", path, headers=self.auth)
        if status != 200:
            raise BenchError(f"GET {path} -> {status}: {payload[:300]!r}")
        return json.loads(payload), elapsed

    # Each operation checks its answer, so a fast wrong answer cannot pass.

    def append(self, index: int) -> None:
        body = workload.request_body(self.rng)
        status, payload, elapsed = self.client.request("POST", self.base, body, self.auth)
        if status != 201:
            raise BenchError(f"append to {self.project} -> {status}: {payload[:300]!r}")
        seq = json.loads(payload)["seq"]
        if self.head and seq != self.head + 1:
            raise BenchError(f"append to {self.project} got seq {seq} after {self.head}")
        self.head = seq
        self.record("append", elapsed)

    def newest_100(self, index: int) -> None:
        body, elapsed = self.get(f"{self.base}?order=desc&limit=100")
        seqs = [item["seq"] for item in body["items"]]
        want = list(range(self.head, max(self.head - 100, 0), -1))
        if seqs != want:
            raise BenchError(f"newest 100 of {self.project}: {seqs[:3]}..., want {want[:3]}...")
        self.record("newest_100", elapsed)

    def _search(self, op: str, word: str) -> None:
        body, elapsed = self.get(f"{self.base}?q={quote(word)}")
        for item in body["items"]:
            if word not in item["content"].lower():
                raise BenchError(f"search {word!r} in {self.project}: seq {item['seq']} lacks it")
        self.record(op, elapsed)

    def search_common(self, index: int) -> None:
        self._search("search_common", workload.COMMON_WORD)

    def search_rare(self, index: int) -> None:
        self._search("search_rare", workload.RARE_WORD)

    def context(self, index: int) -> None:
        path = f"/v1/projects/{self.project}/context"
        # The bundle's own form, as an agent asks for it: text/plain (an
        # Accept of JSON alone is 406, since ?format= chooses the form).
        status, payload, elapsed = self.client.request(
            "GET", path, headers={**self.auth, "Accept": "text/plain"})
        if status != 200 or not payload:
            raise BenchError(f"GET {path} -> {status}: {payload[:300]!r}")
        self.record("context", elapsed)

    def get_by_seq(self, index: int) -> None:
        seq = random.Random(index * 7919 + self.head).randint(1, self.head)
        body, elapsed = self.get(f"{self.base}/{seq}")
        if body["seq"] != seq:
            raise BenchError(f"GET {self.base}/{seq} returned seq {body['seq']}")
        self.record("get_by_seq", elapsed)


LATENCY_OPS = ("append", "newest_100", "search_common", "search_rare", "get_by_seq", "context")


def latency_suite(
    port: int, targets: list[tuple[str, str]], samples: int, seconds: float, seed: int,
    meter: CpuMeter | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Single-client latency on one or more projects: appends first, then reads.

    With several projects the requests alternate between them (the order
    flips every round) over one keep-alive connection, so each sees the same
    machine load and the same server worker, and the ratio between them is
    not skewed by whatever else the machine does meanwhile.
    """
    # One connection for all projects: a keep-alive connection stays with one
    # gunicorn worker, so sharing it keeps the worker out of the comparison.
    client = Client(port, targets[0][1])
    states = [Target(client, token, project, seed + i)
              for i, (project, token) in enumerate(targets)]
    try:
        result: dict[str, dict[str, Any]] = {}
        for state in states:
            report, _ = state.get(f"{state.base}/verify")
            state.head = report["entries"]
            result[state.project] = {"entries_before": report["entries"]}
        cpu: dict[str, Any] = {}
        for op in LATENCY_OPS:
            deadline = time.monotonic() + seconds
            before = meter.snapshot() if meter else None
            requests = 0
            for index in range(samples):
                if time.monotonic() >= deadline:
                    break
                for state in (states if index % 2 == 0 else states[::-1]):
                    getattr(state, op)(index)
                    requests += 1
            if meter:
                cpu[op] = meter.delta(before, meter.snapshot(), requests)
        for state in states:
            entry = result[state.project]
            entry["entries_after_appends"] = state.head
            for op in LATENCY_OPS:
                entry[op] = summarize(state.latencies.get(op, []))
            # How many entries each search matches (not timed).
            for op, word in (("search_common", workload.COMMON_WORD),
                             ("search_rare", workload.RARE_WORD)):
                body, _ = state.get(f"{state.base}?q={quote(word)}&limit=500")
                entry[op]["word"] = word
                entry[op]["matches_up_to_500"] = len(body["items"])
        return result, cpu
    finally:
        client.close()


def verify(port: int, token: str, project: str) -> tuple[dict[str, Any], float]:
    client = Client(port, token, timeout=300)
    try:
        status, payload, elapsed = client.request("GET", f"/v1/projects/{project}/memory/verify")
    finally:
        client.close()
    if status != 200:
        raise BenchError(f"verify {project} -> {status}: {payload[:300]!r}")
    return json.loads(payload), elapsed


# --- machine and report ---------------------------------------------------------------------


def machine_info(db: Database) -> dict[str, Any]:
    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "database": db.vendor,
        "database_version": db.version(),
        "database_settings": db.settings(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["mem_total_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    try:
        import django
        import gunicorn

        info["django"] = django.get_version()
        info["gunicorn"] = gunicorn.__version__
    except ImportError:
        pass
    return info


def ratio(seeded: Any, empty: Any) -> float | None:
    if not isinstance(seeded, (int, float)) or not isinstance(empty, (int, float)) or not empty:
        return None
    return round(seeded / empty, 2)


def _num(value: Any, width: int, digits: int = 2) -> str:
    if isinstance(value, (int, float)):
        return f"{value:>{width},.{digits}f}"
    return f"{'-':>{width}}"


def print_report(results: dict[str, Any]) -> None:
    meta = results["meta"]
    n = results["args"]["seed"]
    out = print
    out("")
    out(f"GedWeb benchmark: {meta['database']} {meta['database_version']}, "
        f"gunicorn {meta['server']['workers']} workers x {meta['server']['threads']} threads, "
        f"{meta['nproc']} CPU ({meta.get('cpu_model', '?')}), Python {meta['python']}, "
        f"load at start {results['load'].get('start')}")
    out("")
    out(f"{'append throughput':42} {'clients':>7} {'appends/s':>10} {'p50 ms':>8} "
        f"{'p99 ms':>8} {'errors':>6} {'acked':>7} {'srv cpu/op':>10} {'busy':>5}  check")
    rows = (
        ("floor: bench/floor.py, SQLite WAL", "floor"),
        ("phase 1: project starting empty", "empty"),
        ("ABBA: project starting empty", "empty_abba"),
        (f"ABBA: project with {n:,}+ entries", "seeded"),
    )
    for label, key in rows:
        row = results["throughput"].get(key)
        if not row:
            continue
        lat = row["latency"]
        cpu = row.get("cpu") or {}
        busy = cpu.get("machine_busy_cpu_s", 0) / cpu["wall_s"] / (meta["nproc"] or 1) \
            if cpu.get("wall_s") else None
        out(f"{label:42} {row['clients']:>7} {_num(row['appends_per_s'], 10, 1)} "
            f"{_num(lat.get('p50_ms'), 8)} {_num(lat.get('p99_ms'), 8)} "
            f"{row['errors']:>6} {row['acknowledged']:>7} "
            f"{_num(cpu.get('server_cpu_ms_per_request'), 10)} "
            f"{(f'{busy:.0%}' if busy is not None else '-'):>5}  {row.get('check', '-')}")
    out("(srv cpu/op: gunicorn CPU ms per append; busy: whole-machine CPU use during the run)")
    floor_row, empty_row = results["throughput"].get("floor"), results["throughput"].get("empty")
    if floor_row and empty_row and floor_row["appends_per_s"]:
        out(f"GedWeb / floor throughput: "
            f"{empty_row['appends_per_s'] / floor_row['appends_per_s']:.2f}")
    out("")
    latency = results["latency"]
    mid = results["args"].get("mid_seed") or 0
    columns = [("empty", "before seeding"), ("empty_interleaved", "empty, alt."),
               ("mid", f"{mid:,}, alt."), ("seeded", f"{n:,}, alt.")]
    columns = [(key, title) for key, title in columns if key in latency]
    header = f"{'single client, ms':30}"
    for _, title in columns:
        header += f" {title + ' p50':>20} {'p99':>7}"
    if "seeded" in latency:
        header += f" {'ratio p50':>10}"
    out(header)
    labels = {
        "append": "POST memory (append)",
        "newest_100": "GET ?order=desc&limit=100",
        "search_common": f"GET ?q={workload.COMMON_WORD} (1 in 10)",
        "search_rare": f"GET ?q={workload.RARE_WORD} (1 in 1000)",
        "get_by_seq": "GET memory/{seq}",
        "context": "GET context (bundle)",
    }
    ratios = results.get("ratios", {})
    for op, label in labels.items():
        line = f"{label:30}"
        for key, _ in columns:
            stats = latency[key].get(op, {})
            line += f" {_num(stats.get('p50_ms'), 20)} {_num(stats.get('p99_ms'), 7)}"
        if "seeded" in latency:
            line += f" {_num(ratios.get(f'{op}_p50'), 10)}"
        out(line)
    cpu = results.get("cpu", {}).get("latency_empty")
    if cpu:
        out("server CPU ms per request, single client before seeding: " + ", ".join(
            f"{op} {cpu[op].get('server_cpu_ms_per_request', '-')}" for op in cpu))
    layers = results.get("layers")
    if layers:
        out("")
        out(f"append in process (no HTTP server): {layers['cpu_ms_per_append']} ms CPU, "
            f"statements {' '.join(layers['statements'])}; per layer, ms:")
        out("  " + ", ".join(f"{name} {ms}" for name, ms in layers["layers_ms"].items()))
    seed = results.get("seed")
    if seed:
        out("")
        out(f"seeding {seed['entries']:,} entries (subprocess, bulk_create, chained): "
            f"{seed['insert_seconds']:.1f} s ({seed['entries_per_s']:,.0f} entries/s)")
        out(f"mirror rebuild (manage.py memory mirror --rebuild --project): "
            f"{seed['mirror_rebuild_seconds']:.1f} s, {seed['mirror_bytes']:,} bytes")
        out(f"GET .../memory/verify of the seeded chain: {seed['verify_seconds']:.2f} s, "
            f"ok={seed['verify']['ok']}, entries={seed['verify']['entries']:,}")
    if ratios:
        out("")
        out(f"ratios {n:,}/empty (alternating requests): append p50 {ratios.get('append_p50')}, "
            f"newest-100 p50 {ratios.get('newest_100_p50')}, "
            f"append throughput (ABBA) {ratios.get('append_throughput')}")
        if "append_p50_mid" in ratios:
            out(f"ratios {mid:,}/empty (alternating requests): append p50 "
                f"{ratios.get('append_p50_mid')}, newest-100 p50 "
                f"{ratios.get('newest_100_p50_mid')}, search rare p50 "
                f"{ratios.get('search_rare_p50_mid')}")
        out(f"ratios {n:,}/empty (seeded vs before seeding): append p50 "
            f"{ratios.get('append_p50_vs_before_seeding')}, newest-100 p50 "
            f"{ratios.get('newest_100_p50_vs_before_seeding')}")
    migration = results.get("migration")
    if migration:
        out("")
        out(f"ged_migrate_v3 on {migration['tree']['files']:,} legacy files "
            f"({migration['journal_entries']:,} journal entries): first run "
            f"{migration['first_run_seconds']:.1f} s, second run (no-op, byte-identical) "
            f"{migration['second_run_seconds']:.2f} s; manage.py start-up alone "
            f"{migration['manage_py_startup_seconds']:.2f} s")
    out(f"mirror check: {results['checks'].get('mirror', '-')}")
    status = "OK" if not results["problems"] else "FAILED: " + "; ".join(results["problems"])
    out(f"result: {status}")


def without_private(value: Any) -> Any:
    """Drop the raw sample lists (keys starting with "_") before writing JSON."""
    if isinstance(value, dict):
        return {k: without_private(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [without_private(v) for v in value]
    return value


def write_json(path: Path, results: dict[str, Any]) -> None:
    results = without_private(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


# --- main ---------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/run.py", description="GedWeb benchmark over real HTTP (see module doc)."
    )
    parser.add_argument("--clients", type=int, default=16, help="append threads (default 16)")
    amount = parser.add_mutually_exclusive_group()
    amount.add_argument("--duration", type=float, default=None,
                        help="seconds of each throughput run (default 20)")
    amount.add_argument("--appends", type=int, default=None,
                        help="appends per throughput run instead of a duration")
    parser.add_argument("--seed", type=int, default=100_000,
                        help="entries seeded into the large project (default 100000; 0 skips)")
    parser.add_argument("--mid-seed", type=int, default=10_000,
                        help="entries of the middle growth point (default 10000; 0 skips)")
    parser.add_argument("--adrs", type=int, default=200,
                        help="ADRs written into the large project for the context bundle "
                        "(default 200)")
    parser.add_argument("--migration-files", type=int, default=5000,
                        help="files in the ged_migrate_v3 checkout (default 5000; 0 skips)")
    parser.add_argument("--samples", type=int, default=300,
                        help="requests per single-client latency figure (default 300)")
    parser.add_argument("--database-url", default=None,
                        help="postgres://...@127.0.0.1:5432/NAME; NAME is dropped and recreated")
    parser.add_argument("--url-query", default="",
                        help="options appended to DATABASE_URL, e.g. conn_max_age=60 "
                        "(django-environ URL options; for experiments)")
    parser.add_argument("--json", type=Path, default=None,
                        help="results file (default bench/results/latest-<db>.json)")
    parser.add_argument("--keep-tmp", action="store_true",
                        help="keep the temporary directory (database, mirrors, server log)")
    parser.add_argument("--no-floor", action="store_true",
                        help="skip the floor server (bench/floor.py) throughput run")
    parser.add_argument("--keep-db", action="store_true",
                        help="do not drop the PostgreSQL database at the end")
    args = parser.parse_args(argv)
    if not 1 <= args.clients <= 256:
        parser.error("--clients must be 1..256")
    if args.duration is not None and not 1 <= args.duration <= 600:
        parser.error("--duration must be 1..600 seconds")
    if args.appends is not None and not 1 <= args.appends <= MAX_APPENDS:
        parser.error(f"--appends must be 1..{MAX_APPENDS}")
    if args.migration_files and not 2_000 <= args.migration_files <= 100_000:
        parser.error("--migration-files must be 0 or 2,000..100,000")
    if not 0 <= args.mid_seed <= 5_000_000:
        parser.error("--mid-seed must be 0..5,000,000")
    if not 0 <= args.seed <= 5_000_000:
        parser.error("--seed must be 0..5,000,000")
    if not 100 <= args.samples <= 100_000:
        parser.error("--samples must be 100..100,000 (newest-100 needs 100 entries)")
    return args


def gedweb_env(db: Database, memory_root: Path, admin_token: str, port: int) -> dict[str, str]:
    """The server's environment: this one's, minus secrets, plus the benchmark's settings."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("GEDWEB_MEMORY_WRITE_TOKEN", "GEDWEB_FAILPOINT", "DJANGO_SECRET_KEY")}
    env.update({
        "DJANGO_SETTINGS_MODULE": "gedweb.settings",
        "DATABASE_URL": db.url,
        "GEDWEB_MEMORY_ROOT": str(memory_root),
        "GEDWEB_ADMIN_TOKEN": admin_token,
        "GEDWEB_DEMO_PROJECT": "false",
        "GEDWEB_PRODUCTION": "false",
        "GEDWEB_MIRROR_WRITER": "inline",
        # The benchmark measures capacity, far past the default per-token
        # rates; limits this high are still counted on every request, so the
        # figures include what rate limiting costs (GEDWEB_RATE_LIMIT=off
        # GEDWEB_WRITE_RATE_LIMIT=off in the environment measures without).
        "GEDWEB_RATE_LIMIT": os.environ.get("GEDWEB_RATE_LIMIT", BENCH_RATE),
        "GEDWEB_WRITE_RATE_LIMIT": os.environ.get("GEDWEB_WRITE_RATE_LIMIT", BENCH_RATE),
        "GUNICORN_ACCESS_LOG": "",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "HOST": "127.0.0.1",
        "PORT": str(port),
    })
    return env


def run(args: argparse.Namespace, tmp: Path, results: dict[str, Any]) -> None:
    db = Database(args.database_url, tmp, args.url_query)
    results["meta"] = {"database": db.vendor}
    if args.duration is None and args.appends is None:
        args.duration = 20.0
    tp_count = args.appends if args.appends is not None else MAX_APPENDS
    tp_seconds = args.duration if args.duration is not None else HARD_TIME_LIMIT
    phase_seconds = 120.0  # per latency operation; the sample count normally ends it first

    admin_token = secrets.token_urlsafe(32)
    port = free_port()
    memory_root = tmp / "bridge-memory"
    env = gedweb_env(db, memory_root, admin_token, port)
    gunicorn_config = runpy.run_path(str(REPO / "gunicorn.conf.py"))
    results["meta"] = machine_info(db)
    results["meta"]["server"] = {
        "command": "gunicorn --config gunicorn.conf.py --control-socket <tmp> gedweb.wsgi",
        # What the server's config file makes of this environment.
        "workers": gunicorn_config["workers"],
        "threads": gunicorn_config["threads"],
        "mirror_writer": "inline",
        "access_log": "off",
        "rate_limits": {"requests": env["GEDWEB_RATE_LIMIT"],
                        "writes": env["GEDWEB_WRITE_RATE_LIMIT"]},
    }
    log = lambda text: print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)  # noqa: E731

    db.create()
    # The server's metrics files in the run's own directory: gunicorn.conf.py
    # would otherwise use (and empty at start) ./.data/prometheus, which a
    # developer's `make run` may be using.
    server = Server(dict(env, PROMETHEUS_MULTIPROC_DIR=str(tmp / "prometheus")), port,
                    tmp / "gunicorn.log")
    meter = CpuMeter(server, db)
    try:
        log(f"{db.vendor}: migrating a fresh database")
        _, results["meta"]["migrate_seconds"] = manage(env, "migrate", "--noinput", "-v0")
        log(f"starting gunicorn on 127.0.0.1:{port}")
        server.start()
        admin = Client(port, admin_token)
        tokens: dict[str, str] = {}
        for project in ("bench-warmup", "bench-tput", "bench-empty", "bench-seeded",
                        "bench-mid", "bench-zero", "bench-zero-tput"):
            body = admin.json("POST", "/v1/projects", {"id": project, "name": project},
                              expect=201)
            tokens[project] = body["token"]
        admin.close()

        log("warm-up: 4 appends per client and a few reads")
        warm = append_throughput(port, tokens["bench-warmup"], "bench-warmup", args.clients,
                                 4 * args.clients, 120, seed=1)
        if warm["errors"]:
            raise BenchError(f"warm-up appends failed: {warm['error_samples']}")
        warm_client = Client(port, tokens["bench-warmup"])
        for _ in range(20):
            warm_client.json("GET", "/v1/projects/bench-warmup/memory?order=desc&limit=100")
            warm_client.json("GET", f"/v1/projects/bench-warmup/memory?q={workload.COMMON_WORD}")
        warm_client.close()

        problems: list[str] = results["problems"]
        results["throughput"] = {}
        results["latency"] = {}
        results["cpu"] = {}

        log(f"append throughput on an empty project: {args.clients} clients, "
            + (f"{args.duration:g} s" if args.appends is None else f"{args.appends} appends"))
        results["load"]["throughput_empty"] = loadavg()
        tput = append_throughput(port, tokens["bench-tput"], "bench-tput", args.clients,
                                 tp_count, tp_seconds, seed=2, meter=meter)
        report, _ = verify(port, tokens["bench-tput"], "bench-tput")
        problems += check_throughput(tput, 0, report)
        results["throughput"]["empty"] = tput
        log(f"  {tput['appends_per_s']} appends/s, p50 {tput['latency'].get('p50_ms')} ms, "
            f"errors {tput['errors']}, {tput['check']}")

        if not args.no_floor:
            results["throughput"]["floor"] = floor_throughput(
                env, tmp, args.clients, tp_count, tp_seconds, problems, log)

        log(f"single-client latency on a project starting empty ({args.samples} samples each)")
        results["load"]["latency_empty"] = loadavg()
        single, results["cpu"]["latency_empty"] = latency_suite(
            port, [("bench-empty", tokens["bench-empty"])], args.samples, phase_seconds, seed=3,
            meter=meter,
        )
        results["latency"]["empty"] = single["bench-empty"]

        log("time per layer of an append, in process (bench/layers.py, cProfile shares)")
        proc = subprocess.run(
            [PYTHON, str(HERE / "layers.py"), "--project", "bench-layers", "--appends", "1000"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=1200, check=False,
        )
        if proc.returncode != 0:
            raise BenchError(f"layers failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        results["layers"] = json.loads(proc.stdout.strip().splitlines()[-1])

        if args.seed:
            n = args.seed
            seed_info: dict[str, Any] = {}
            log(f"seeding {n:,} entries into bench-seeded (subprocess, bulk_create)")
            started = time.perf_counter()
            proc = subprocess.run(
                [PYTHON, str(HERE / "seed.py"), "--project", "bench-seeded", "--count", str(n),
                 "--adrs", str(args.adrs)],
                cwd=REPO, env=env, capture_output=True, text=True, timeout=1200, check=False,
            )
            if proc.returncode != 0:
                raise BenchError(f"seeding failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
            seed_info.update(json.loads(proc.stdout.strip().splitlines()[-1]))
            seed_info["subprocess_seconds"] = round(time.perf_counter() - started, 3)
            seed_info["entries_per_s"] = round(n / seed_info["insert_seconds"], 1)
            log(f"  inserted in {seed_info['insert_seconds']} s; rebuilding the mirror")
            _, rebuild_seconds = manage(env, "memory", "mirror", "--rebuild",
                                        "--project", "bench-seeded", timeout=900)
            seed_info["mirror_rebuild_seconds"] = round(rebuild_seconds, 3)
            seed_info["mirror_bytes"] = (memory_root / "bench-seeded" / "MEMORY.md").stat().st_size
            log(f"  mirror rebuilt in {rebuild_seconds:.1f} s; verifying the chain over HTTP")
            report, seconds = verify(port, tokens["bench-seeded"], "bench-seeded")
            seed_info["verify"] = report
            seed_info["verify_seconds"] = round(seconds, 3)
            if not report["ok"] or report["entries"] != n or report["head"] != seed_info["head"]:
                problems.append(f"seeded chain does not verify: {report}")
            results["seed"] = seed_info
            log(f"  verify: ok={report['ok']} entries={report['entries']} in {seconds:.2f} s")

            targets = [("bench-zero", tokens["bench-zero"])]
            if args.mid_seed:
                log(f"seeding {args.mid_seed:,} entries into bench-mid")
                proc = subprocess.run(
                    [PYTHON, str(HERE / "seed.py"), "--project", "bench-mid",
                     "--count", str(args.mid_seed)],
                    cwd=REPO, env=env, capture_output=True, text=True, timeout=1200, check=False,
                )
                if proc.returncode != 0:
                    raise BenchError(f"seeding bench-mid failed:\n{proc.stderr[-2000:]}")
                targets.append(("bench-mid", tokens["bench-mid"]))
            targets.append(("bench-seeded", tokens["bench-seeded"]))
            log("single-client latency, alternating request by request between projects with "
                + ", ".join(("0" if p == "bench-zero" else f"{args.mid_seed:,}"
                             if p == "bench-mid" else f"{n:,}") for p, _ in targets)
                + " entries")
            results["load"]["latency_interleaved"] = loadavg()
            pair, results["cpu"]["latency_interleaved"] = latency_suite(
                port, targets, args.samples, phase_seconds, seed=4, meter=meter,
            )
            results["latency"]["empty_interleaved"] = pair["bench-zero"]
            results["latency"]["seeded"] = pair["bench-seeded"]
            if "bench-mid" in pair:
                results["latency"]["mid"] = pair["bench-mid"]

            # Throughput in ABBA rounds (small, seeded, seeded, small) so that
            # a drift in machine load affects both sides alike.
            log("append throughput, ABBA rounds: a project starting empty vs the seeded one")
            results["load"]["throughput_abba"] = loadavg()
            rounds = {"bench-zero-tput": [], "bench-seeded": []}
            half_count = max(1, tp_count // 2)
            half_seconds = tp_seconds / 2
            for number, project in enumerate(("bench-zero-tput", "bench-seeded",
                                               "bench-seeded", "bench-zero-tput")):
                before, _ = verify(port, tokens[project], project)
                tput = append_throughput(port, tokens[project], project, args.clients,
                                         half_count, half_seconds, seed=10 + number,
                                         meter=meter)
                report, _ = verify(port, tokens[project], project)
                problems += check_throughput(tput, before["entries"], report)
                rounds[project].append(tput)
                log(f"  round {number + 1} {project}: {tput['appends_per_s']} appends/s, "
                    f"p50 {tput['latency'].get('p50_ms')} ms, errors {tput['errors']}, "
                    f"{tput['check']}")
            results["throughput"]["empty_abba"] = combine_rounds(rounds["bench-zero-tput"])
            results["throughput"]["seeded"] = combine_rounds(rounds["bench-seeded"])

            empty, seeded = results["latency"]["empty_interleaved"], results["latency"]["seeded"]
            before_seed = results["latency"]["empty"]
            ratios: dict[str, Any] = {}
            for op in LATENCY_OPS:
                for stat in ("p50_ms", "p99_ms"):
                    key = f"{op}_{stat[:3]}"
                    ratios[key] = ratio(seeded[op].get(stat), empty[op].get(stat))
                    if "mid" in results["latency"]:
                        ratios[f"{key}_mid"] = ratio(
                            results["latency"]["mid"][op].get(stat), empty[op].get(stat))
                    ratios[f"{key}_vs_before_seeding"] = ratio(
                        seeded[op].get(stat), before_seed[op].get(stat))
            ratios["append_throughput"] = ratio(
                results["throughput"]["seeded"]["appends_per_s"],
                results["throughput"]["empty_abba"]["appends_per_s"])
            ratios["append_throughput_vs_phase_1"] = ratio(
                results["throughput"]["seeded"]["appends_per_s"],
                results["throughput"]["empty"]["appends_per_s"])
            results["ratios"] = ratios

        if args.migration_files:
            log(f"ged_migrate_v3 on a legacy checkout of {args.migration_files:,} files, "
                "then its second run (bench/migration.py)")
            proc = subprocess.run(
                [PYTHON, str(HERE / "migration.py"), "--files", str(args.migration_files)],
                cwd=REPO, env=env, capture_output=True, text=True, timeout=3600, check=False,
            )
            if proc.returncode != 0:
                problems.append(f"migration bench failed: {proc.stdout[-500:]}"
                                f"{proc.stderr[-1500:]}")
            else:
                results["migration"] = json.loads(proc.stdout.strip().splitlines()[-1])
                log(f"  first run {results['migration']['first_run_seconds']} s, "
                    f"second run {results['migration']['second_run_seconds']} s")

        log("checking every mirror byte for byte (manage.py memory mirror --check)")
        try:
            out, seconds = manage(env, "memory", "mirror", "--check", timeout=900)
            results["checks"]["mirror"] = f"ok ({json.loads(out)['checked']} projects, "
            results["checks"]["mirror"] += f"{seconds:.1f} s)"
        except BenchError as exc:
            results["checks"]["mirror"] = "drifted"
            problems.append(f"mirror check failed: {exc}")
    finally:
        server.stop()
        results["meta"]["server_log_tail"] = server.log_lines(10)
        if not args.keep_db:
            db.drop()


def run_guarded(body: Callable[[Path], None], results: dict[str, Any], *, keep_tmp: bool,
                tmp_prefix: str) -> bool:
    """Run one benchmark's body in a fresh temporary directory; True if it failed.

    SIGTERM becomes SystemExit, so the body's ``finally`` blocks stop its
    servers; a BenchError, Ctrl-C or any other error goes into
    results["problems"] (the caller still writes the JSON); the directory
    is removed unless keep_tmp. Sets results["finished_at"] and the load.
    """

    def terminate(signum: int, frame: Any) -> None:
        raise SystemExit(f"bench: stopped by signal {signum}")

    signal.signal(signal.SIGTERM, terminate)
    tmp = Path(tempfile.mkdtemp(prefix=tmp_prefix))
    results.setdefault("load", {})["start"] = loadavg()
    failed = True
    try:
        body(tmp)
        failed = False
    except BenchError as exc:
        results["problems"].append(str(exc))
        print(f"bench: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        results["problems"].append("interrupted")
        print("bench: interrupted; the server was stopped", file=sys.stderr)
    except Exception as exc:  # e.g. PostgreSQL not reachable: report it, keep the JSON
        results["problems"].append(f"{type(exc).__name__}: {exc}")
        traceback.print_exc()
    finally:
        if keep_tmp:
            print(f"bench: kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    results["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    results["load"]["end"] = loadavg()
    return failed


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "problems": [],
        "checks": {},
    }
    if args.database_url:
        results["args"]["database_url"] = re.sub(r"//([^:@/]*):[^@/]*@", r"//\1:***@",
                                                 args.database_url)
    failed = run_guarded(lambda tmp: run(args, tmp, results), results, keep_tmp=args.keep_tmp,
                         tmp_prefix="gedweb-bench-")
    if "throughput" in results:
        print_report(results)
    db_name = results.get("meta", {}).get("database", "sqlite")
    out_path = args.json or HERE / "results" / f"latest-{db_name}.json"
    write_json(out_path, results)
    print(f"results written to {out_path}")
    return 1 if failed or results["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
