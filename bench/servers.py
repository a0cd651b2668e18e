"""Several app servers on one PostgreSQL, with the follower mirror writer (`make bench`).

Two gunicorn instances, each as `make run` starts it (gunicorn.conf.py,
gedweb.wsgi) on its own port, share one PostgreSQL database and one mirror
root; GEDWEB_MIRROR_WRITER=follower on both, so no request writes MEMORY.md
and one `manage.py memory mirror --follow` process keeps every mirror
current. --clients threads (default 16) append to --projects projects
(default 16), in rounds of --round-seconds: one instance alone, then both
(client i to instance i % 2), then both, then one (ABBA), so the machine's
drift falls on both sides alike. On a machine of 2 cores two instances
cannot add CPU; what this measures is that they add no cost and lose
nothing.

Afterwards, once the follower has caught up: every project's seqs are the
gap-free range of what was acknowledged, its chain verifies over HTTP with
that many entries, `manage.py memory verify` accepts it against every
checkpoint, `manage.py memory mirror --check` finds every mirror equal to a
rebuild, and no request failed. Writes bench/results/servers-postgresql.json.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from overhead import combine
from run import (
    HERE,
    PYTHON,
    REPO,
    BenchError,
    Client,
    CpuMeter,
    Database,
    Server,
    free_port,
    gedweb_env,
    machine_info,
    manage,
    run_guarded,
    spread_throughput,
    verify,
)

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/gedweb_servers"
CATCH_UP_SECONDS = 120.0


class Follower:
    """`manage.py memory mirror --follow` in its own process group."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env = env
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [PYTHON, "manage.py", "memory", "mirror", "--follow", "--interval", "0.2"],
                cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def run(args: argparse.Namespace, tmp: Path, results: dict[str, Any]) -> None:
    log = lambda text: print(f"[{datetime.now():%H:%M:%S}] {text}", flush=True)  # noqa: E731
    db = Database(args.database_url, tmp)
    if db.pg is None:
        raise BenchError("bench/servers.py needs a postgres:// --database-url")
    results["meta"] = machine_info(db)
    results["meta"].update(clients=args.clients, projects=args.projects,
                           round_seconds=args.round_seconds, mirror_writer="follower")
    admin_token = secrets.token_urlsafe(32)
    memory_root = tmp / "memory"
    base = gedweb_env(db, memory_root, admin_token, 0)
    base["GEDWEB_MIRROR_WRITER"] = "follower"
    servers: list[Server] = []
    follower = Follower(base, tmp / "follower.log")
    db.create()
    try:
        log("postgresql: migrating, starting two gunicorn instances and the mirror follower")
        manage(base, "migrate", "--noinput", "-v0")
        for index in range(2):
            port = free_port()
            env = dict(base, PORT=str(port),
                       PROMETHEUS_MULTIPROC_DIR=str(tmp / f"prometheus-{index}"))
            server = Server(env, port, tmp / f"gunicorn-{index}.log")
            server.start()
            servers.append(server)
        follower.start()
        admin = Client(servers[0].port, admin_token)
        targets = []
        for index in range(args.projects):
            project = f"servers-{index}"
            body = admin.json("POST", "/v1/projects", {"id": project, "name": project},
                              expect=201)
            targets.append((project, body["token"]))
        admin.close()
        ports = [server.port for server in servers]
        meters = [CpuMeter(server, db) for server in servers]
        seqs: dict[str, list[int]] = {project: [] for project, _ in targets}

        def round_(instances: int, seconds: float, seed: int) -> dict[str, Any]:
            before = [meter.snapshot() for meter in meters]
            result = spread_throughput(ports[:instances], targets, args.clients, 10**9,
                                       seconds, seed)
            after = [meter.snapshot() for meter in meters]
            server_cpu = sum(meter.delta(b, a, 0)["server_cpu_s"]
                             for meter, b, a in zip(meters, before, after, strict=True))
            result["cpu"] = {
                "server_cpu_s": round(server_cpu, 2),
                "server_cpu_ms_per_request": round(
                    server_cpu / max(result["acknowledged"], 1) * 1000, 2),
            }
            for project, acknowledged in result.pop("_seqs_by_project").items():
                seqs[project].extend(acknowledged)
            return result

        # Warm-up on both instances; its seqs are counted from what the server holds.
        spread_throughput(ports, targets, args.clients, 4 * args.clients, 120, seed=1)
        rounds: dict[str, list[dict[str, Any]]] = {"one_instance": [], "two_instances": []}
        for number, instances in enumerate((1, 2, 2, 1)):
            result = round_(instances, args.round_seconds, seed=10 + number)
            name = "one_instance" if instances == 1 else "two_instances"
            rounds[name].append(result)
            log(f"{name}: {result['appends_per_s']} appends/s, p50 "
                f"{result['latency'].get('p50_ms')} ms, errors {result['errors']}")
        combined = {name: combine(found) for name, found in rounds.items()}
        results["servers"] = combined
        results["ratio_two_over_one"] = round(
            combined["two_instances"]["appends_per_s"] / combined["one_instance"]["appends_per_s"],
            3)
        results["checks"] = check(base, servers[0].port, targets, seqs, follower, log)
    finally:
        follower.stop()
        for server in servers:
            server.stop()
        if not args.keep_db:
            db.drop()
    for name, figures in results["servers"].items():
        if figures["errors"]:
            results["problems"].append(f"{name}: {figures['errors']} failed requests")
    results["problems"] += [f"{name}: {value}" for name, value in results["checks"].items()
                            if value != "ok"]


def check(env: dict[str, str], port: int, targets: list[tuple[str, str]],
          seqs: dict[str, list[int]], follower: Follower, log: Any) -> dict[str, str]:
    """Gap-free seqs, verified chains and checkpoints, mirrors equal to a rebuild."""
    found: dict[str, list[str]] = {"seqs": [], "verify_http": [], "verify_checkpoints": [],
                                   "mirror": [], "follower": []}
    for project, token in targets:
        report, _ = verify(port, token, project)
        acknowledged = sorted(seqs[project])
        warm_up = report["entries"] - len(acknowledged)
        if acknowledged != list(range(warm_up + 1, report["entries"] + 1)):
            found["seqs"].append(f"{project}: the acknowledged seqs are not the gap-free "
                                 f"range after the warm-up's {warm_up}")
        if not report["ok"]:
            found["verify_http"].append(f"{project}: broken at {report['first_bad_seq']}")
        try:
            manage(env, "memory", "verify", "--project", project)
        except BenchError as exc:
            found["verify_checkpoints"].append(f"{project}: {exc}")
    log("waiting for the follower to catch up, then checking every mirror")
    deadline = time.monotonic() + CATCH_UP_SECONDS
    while True:
        try:
            manage(env, "memory", "mirror", "--check")
            break
        except BenchError as exc:
            if time.monotonic() > deadline:
                found["mirror"].append(str(exc)[-500:])
                break
            time.sleep(1)
    if not follower.alive():
        found["follower"].append("the follower process exited during the run")
    return {name: "ok" if not problems else "; ".join(problems)
            for name, problems in found.items()}


def print_report(results: dict[str, Any]) -> None:
    meta = results["meta"]
    print(f"\npostgresql, follower mirror writer: {meta['clients']} clients over "
          f"{meta['projects']} projects, ABBA rounds of {meta['round_seconds']} s")
    print(f"{'':<16}{'appends/s':>11}{'p50 ms':>9}{'p99 ms':>9}{'p99.9 ms':>10}{'errors':>8}")
    for name, figures in results["servers"].items():
        latency = figures["latency"]
        print(f"{name:<16}{figures['appends_per_s']:>11}{latency['p50_ms']:>9}"
              f"{latency['p99_ms']:>9}{latency['p99_9_ms']:>10}{figures['errors']:>8}")
    print(f"two instances / one: {results['ratio_two_over_one']}")
    for name, value in results["checks"].items():
        print(f"  {name}: {value}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--projects", type=int, default=16)
    parser.add_argument("--round-seconds", type=float, default=10.0)
    parser.add_argument("--database-url", default=DEFAULT_URL,
                        help=f"a dedicated PostgreSQL database (default {DEFAULT_URL})")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--keep-tmp", action="store_true")
    parser.add_argument("--keep-db", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results: dict[str, Any] = {"started_at": datetime.now(UTC).isoformat(timespec="seconds"),
                               "problems": []}
    failed = run_guarded(lambda tmp: run(args, tmp, results), results, keep_tmp=args.keep_tmp,
                         tmp_prefix="gedweb-servers-")
    if "checks" in results:
        print_report(results)
    path = args.json or HERE / "results" / "servers-postgresql.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results written to {path}")
    for problem in results["problems"]:
        print(f"problem: {problem}", file=sys.stderr)
    return 1 if failed or results["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
