"""GedWeb against the framework it is built on, and its tails under load (`make bench`).

Three servers run side by side, each under ``gunicorn --config
gunicorn.conf.py`` as `make run` starts GedWeb:

- GedWeb (gedweb.wsgi) on the benchmark's database;
- the Django floor (bench/django_floor/: one DRF view that authenticates,
  takes the write turn, chains, inserts, commits and fsyncs a mirror block)
  on a database of its own of the same engine;
- the raw floor (bench/floor.py: no framework, SQLite WAL), the physical
  reference, whatever GedWeb's database.

The same --clients threads (default 16) append to each in turn for
--round-seconds (default 10), interleaved A B C, then C B A, and so on for
--rounds (default 2 of each), so that drift in the machine's load falls on
all three alike. The clients are spread over --projects projects (default 1
on SQLite, whose one write lock covers the whole database anyway, and 16 on
PostgreSQL, so that one project's row lock does not hide the framework's
cost). Afterwards every project's chain must verify with as many entries as
were acknowledged and gap-free seqs, for all three servers, and the Django
floor's mirror must hold one block per entry.

Reported: appends/s of each and the ratios GedWeb / Django floor (target at
least 0.9) and GedWeb / raw floor (no target); p50, p99 and p99.9 under the
16 clients and p99 / p50 (target at most 3). Writes
bench/results/overhead-<db>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import floor  # noqa: E402  (bench/, on the path from run)
from run import (
    HERE,
    PYTHON,
    REPO,
    BenchError,
    Client,
    CpuMeter,
    Database,
    Server,
    combine_cpu,
    free_port,
    gedweb_env,
    machine_info,
    manage,
    run_guarded,
    spread_throughput,
    summarize,
    verify,
)

TARGET_FRAMEWORK_RATIO = 0.9
TARGET_TAIL_RATIO = 3.0
SERVERS = ("gedweb", "django_floor", "raw_floor")


def floor_database(db: Database, tmp: Path) -> Database:
    """The Django floor's own database, of GedWeb's engine: a file, or <name>_django_floor."""
    if db.pg is None:
        (tmp / "django-floor").mkdir()
        return Database(None, tmp / "django-floor")
    parts = urlsplit(db.url)
    return Database(urlunsplit(parts._replace(path=f"/{db.name}_django_floor")), tmp)


class Bench:
    """The three servers, their projects and tokens, and every acknowledged seq."""

    def __init__(self, args: argparse.Namespace, tmp: Path, log: Any) -> None:
        self.args = args
        self.tmp = tmp
        self.log = log
        self.db = Database(args.database_url, tmp)
        self.floor_db = floor_database(self.db, tmp)
        self.projects = args.projects or (16 if self.db.pg is not None else 1)
        self.servers: dict[str, Server] = {}
        self.meters: dict[str, CpuMeter] = {}
        self.targets: dict[str, list[tuple[str, str]]] = {}
        self.seqs: dict[str, dict[str, list[int]]] = {name: {} for name in SERVERS}
        self.floor_mirror = tmp / "django-floor-mirror"
        self.raw_floor_path = tmp / "raw-floor.sqlite3"

    def _start(self, name: str, env: dict[str, str], app: str, db: Database) -> None:
        server = Server(env, int(env["PORT"]), self.tmp / f"{name}.log", app=app)
        self.servers[name] = server
        server.start()
        self.meters[name] = CpuMeter(server, db)

    def start(self) -> None:
        admin_token = secrets.token_urlsafe(32)
        env = gedweb_env(self.db, self.tmp / "gedweb-memory", admin_token, free_port())
        self.db.create()
        self.floor_db.create()
        self.log(f"{self.db.vendor}: migrating GedWeb's database, starting the three servers")
        manage(env, "migrate", "--noinput", "-v0")
        # Metrics files in the run's own directory, not ./.data/prometheus,
        # which a developer's `make run` may be using (gunicorn.conf.py makes it).
        self._start("gedweb", dict(env, PROMETHEUS_MULTIPROC_DIR=str(self.tmp / "gedweb-prom")),
                    "gedweb.wsgi", self.db)
        admin = Client(int(env["PORT"]), admin_token)
        gedweb_targets = []
        for index in range(self.projects):
            project = f"overhead-{index}"
            body = admin.json("POST", "/v1/projects", {"id": project, "name": project},
                              expect=201)
            gedweb_targets.append((project, body["token"]))
        admin.close()
        self.targets["gedweb"] = gedweb_targets

        bench_path = os.pathsep.join([str(HERE), str(REPO)])
        floor_env = {k: v for k, v in env.items() if not k.startswith(("GEDWEB_", "DJANGO_"))}
        floor_env.update({
            "PYTHONPATH": bench_path,
            "DJANGO_SETTINGS_MODULE": "django_floor.settings",
            "FLOOR_DATABASE_URL": self.floor_db.url,
            "FLOOR_MIRROR_ROOT": str(self.floor_mirror),
            "FLOOR_SECRET_KEY": secrets.token_urlsafe(48),
            # Django's DEBUG as GedWeb has it (gedweb/settings.py: on unless
            # GEDWEB_PRODUCTION), so both record their SQL statements alike.
            "FLOOR_DEBUG": "false" if env.get("GEDWEB_PRODUCTION") == "true" else "true",
            "PROMETHEUS_MULTIPROC_DIR": str(self.tmp / "django-floor-prometheus"),
            "PORT": str(free_port()),
        })
        provisioned = subprocess.run(
            [PYTHON, "-m", "django_floor.provision", str(self.projects)], cwd=REPO,
            env=floor_env, capture_output=True, text=True, timeout=300, check=False)
        if provisioned.returncode != 0:
            raise BenchError(f"django_floor.provision failed: {provisioned.stderr[-2000:]}")
        self.targets["django_floor"] = list(json.loads(provisioned.stdout).items())
        self._start("django_floor", floor_env, "django_floor.wsgi", self.floor_db)

        raw_token = secrets.token_urlsafe(32)
        raw_env = dict(floor_env, FLOOR_DATABASE=str(self.raw_floor_path), FLOOR_TOKEN=raw_token,
                       PROMETHEUS_MULTIPROC_DIR=str(self.tmp / "raw-floor-prometheus"),
                       PORT=str(free_port()))
        self._start("raw_floor", raw_env, "floor:app", Database(None, self.tmp))
        self.targets["raw_floor"] = [(f"raw-{i}", raw_token) for i in range(self.projects)]

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()
        for database in (self.db, self.floor_db):
            if not self.args.keep_db:
                database.drop()

    def append_round(self, name: str, count: int, seconds: float, seed: int,
                     measured: bool = True) -> dict[str, Any]:
        server = self.servers[name]
        result = spread_throughput([server.port], self.targets[name], self.args.clients,
                                   count, seconds, seed,
                                   self.meters[name] if measured else None)
        for project, seqs in result.pop("_seqs_by_project").items():
            self.seqs[name].setdefault(project, []).extend(seqs)
        return result

    # --- checks -------------------------------------------------------------------

    def check(self, names: tuple[str, ...] = SERVERS) -> dict[str, list[str]]:
        """Every project of each named server: a verified chain of exactly the acknowledged seqs."""
        problems: dict[str, list[str]] = {name: [] for name in names}
        for name in names:
            for project, token in self.targets[name]:
                seqs = sorted(self.seqs[name].get(project, []))
                report = self._verify(name, project, token)
                if not report["ok"]:
                    problems[name].append(f"{project}: chain broken at {report['first_bad_seq']}")
                if seqs != list(range(1, len(seqs) + 1)):
                    problems[name].append(f"{project}: acknowledged seqs are not gap-free")
                if report["entries"] != len(seqs):
                    problems[name].append(
                        f"{project}: {report['entries']} entries, {len(seqs)} acknowledged")
        for project, _ in self.targets["django_floor"] if "django_floor" in names else ():
            mirror = self.floor_mirror / project / "MEMORY.md"
            blocks = mirror.read_text(encoding="utf-8").count("\n<!-- entry ") if mirror.exists() \
                else 0
            if blocks != len(self.seqs["django_floor"].get(project, [])):
                problems["django_floor"].append(f"{project}: {blocks} mirror blocks")
        return problems

    def _verify(self, name: str, project: str, token: str) -> dict[str, Any]:
        if name == "gedweb":
            return verify(self.servers[name].port, token, project)[0]
        if name == "raw_floor":
            return floor.verify(str(self.raw_floor_path), project)
        query = ("SELECT uuid, seq, category, content, content_sha256, source, author,"
                 " created_at, prev_hash, hash FROM django_floor_entry WHERE project_id = {}"
                 " ORDER BY seq")
        if self.floor_db.pg is None:
            conn = sqlite3.connect(self.floor_db.path)
            try:
                rows = conn.execute(query.format("?"), (project,)).fetchall()
            finally:
                conn.close()
        else:
            import psycopg

            with psycopg.connect(self.floor_db.url) as conn:
                rows = conn.execute(query.format("%s"), (project,)).fetchall()
            rows = [(str(row[0]), *row[1:]) for row in rows]
        return floor.verify_rows(project, rows)


def combine(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    acknowledged = sum(r["acknowledged"] for r in rounds)
    seconds = sum(r["seconds"] for r in rounds)
    latency = summarize([value for r in rounds for value in r.pop("_latencies")])
    return {
        "rounds": rounds,
        "acknowledged": acknowledged,
        "seconds": round(seconds, 3),
        "appends_per_s": round(acknowledged / seconds, 1) if seconds else 0.0,
        "errors": sum(r["errors"] for r in rounds),
        "latency": latency,
        "p99_over_p50": round(latency["p99_ms"] / latency["p50_ms"], 2)
        if latency.get("p50_ms") else None,
        "cpu": combine_cpu([r["cpu"] for r in rounds if r.get("cpu")], acknowledged),
    }


def run(args: argparse.Namespace, tmp: Path, results: dict[str, Any]) -> None:
    log = lambda text: print(f"[{datetime.now():%H:%M:%S}] {text}", flush=True)  # noqa: E731
    bench = Bench(args, tmp, log)
    results["meta"] = machine_info(bench.db)
    results["meta"].update(clients=args.clients, projects=bench.projects,
                           round_seconds=args.round_seconds, rounds=args.rounds)
    try:
        bench.start()
        for index, name in enumerate(SERVERS):
            bench.append_round(name, 4 * args.clients, 120, seed=index, measured=False)
        rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in SERVERS}
        for number in range(args.rounds):
            order = SERVERS if number % 2 == 0 else tuple(reversed(SERVERS))
            for name in order:
                result = bench.append_round(name, 10**9, args.round_seconds,
                                            seed=100 + number * 10 + SERVERS.index(name))
                rounds[name].append(result)
                log(f"round {number + 1} {name}: {result['appends_per_s']} appends/s, "
                    f"p50 {result['latency'].get('p50_ms')} ms, "
                    f"p99 {result['latency'].get('p99_ms')} ms, errors {result['errors']}")
        combined = {name: combine(rounds[name]) for name in SERVERS}
        problems = bench.check()
    finally:
        bench.stop()
    results["servers"] = combined
    gedweb = combined["gedweb"]["appends_per_s"]
    results["ratios"] = {
        "gedweb_over_django_floor": round(gedweb / combined["django_floor"]["appends_per_s"], 3),
        "gedweb_over_raw_floor": round(gedweb / combined["raw_floor"]["appends_per_s"], 3),
        "django_floor_over_raw_floor": round(
            combined["django_floor"]["appends_per_s"] / combined["raw_floor"]["appends_per_s"], 3),
    }
    results["checks"] = {name: "ok" if not found else "; ".join(found)
                         for name, found in problems.items()}
    for name, found in problems.items():
        results["problems"] += [f"{name}: {p}" for p in found]
        if combined[name]["errors"]:
            results["problems"].append(f"{name}: {combined[name]['errors']} failed requests")
    results["targets"] = {
        "framework_ratio": {"target": f">= {TARGET_FRAMEWORK_RATIO}",
                            "value": results["ratios"]["gedweb_over_django_floor"],
                            "met": results["ratios"]["gedweb_over_django_floor"]
                            >= TARGET_FRAMEWORK_RATIO},
        "tail_ratio": {"target": f"<= {TARGET_TAIL_RATIO}",
                       "value": combined["gedweb"]["p99_over_p50"],
                       "met": (combined["gedweb"]["p99_over_p50"] or 99) <= TARGET_TAIL_RATIO},
    }


def print_report(results: dict[str, Any]) -> None:
    meta = results["meta"]
    print(f"\n{meta['database']}: {meta['clients']} clients over {meta['projects']} project(s), "
          f"{meta['rounds']} interleaved rounds of {meta['round_seconds']} s each")
    print(f"{'server':<14}{'appends/s':>11}{'p50 ms':>9}{'p99 ms':>9}{'p99.9 ms':>10}"
          f"{'p99/p50':>9}{'server CPU ms':>15}  check")
    for name, figures in results["servers"].items():
        latency = figures["latency"]
        cpu = (figures.get("cpu") or {}).get("server_cpu_ms_per_request")
        print(f"{name:<14}{figures['appends_per_s']:>11}{latency['p50_ms']:>9}"
              f"{latency['p99_ms']:>9}{latency['p99_9_ms']:>10}{figures['p99_over_p50']:>9}"
              f"{cpu!s:>15}  {results['checks'][name]}")
    ratios = results["ratios"]
    print(f"GedWeb / Django floor: {ratios['gedweb_over_django_floor']} "
          f"(target >= {TARGET_FRAMEWORK_RATIO}); GedWeb / raw floor: "
          f"{ratios['gedweb_over_raw_floor']}; Django floor / raw floor: "
          f"{ratios['django_floor_over_raw_floor']}")
    for name, target in results["targets"].items():
        print(f"  {name}: {target['value']} ({target['target']}): "
              f"{'met' if target['met'] else 'NOT met'}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--projects", type=int, default=0,
                        help="projects the clients are spread over (default 1 on SQLite, "
                             "16 on PostgreSQL)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each server")
    parser.add_argument("--round-seconds", type=float, default=10.0)
    parser.add_argument("--database-url", default=None,
                        help="postgres://...@127.0.0.1/NAME (default: SQLite in a temp dir)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--keep-tmp", action="store_true")
    parser.add_argument("--keep-db", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results: dict[str, Any] = {"started_at": datetime.now(UTC).isoformat(timespec="seconds"),
                               "problems": []}
    failed = run_guarded(lambda tmp: run(args, tmp, results), results, keep_tmp=args.keep_tmp,
                         tmp_prefix="gedweb-overhead-")
    if "servers" in results:
        print_report(results)
    database = results.get("meta", {}).get("database", "sqlite")
    path = args.json or HERE / "results" / f"overhead-{database}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results written to {path}")
    for problem in results["problems"]:
        print(f"problem: {problem}", file=sys.stderr)
    return 1 if failed or results["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
