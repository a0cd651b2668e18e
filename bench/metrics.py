"""What the request metrics cost an append, over real HTTP (`make bench` runs it).

Two gunicorns as `make run` starts them (gunicorn.conf.py, gedweb.wsgi),
each with a fresh database and a multiprocess metrics directory of its own:

- A, "metrics on": gedweb.settings, as deployed;
- B, "metrics off": bench/metrics_off_settings.py, the same settings without
  gedweb.metrics.RequestMetricsMiddleware.

After a warm-up of each, both servers are loaded at the same time: half
of --clients threads append to a fresh project on A, the other half to
one on B, for --round-seconds, --rounds times (which side's clients start
first alternates). Loaded together, both sides meet the same machine at
every moment, so neither other work on the machine nor its drift from one
round to the next can favour one of them. Each side has a database of its
own: sharing one, as SQLite's single writer lock is shared, split the
appends by who got the lock (0.4 to 3.4 to 1 from round to round). Each
round is verified like bench/run.py's (every seq acknowledged once, the
chain intact). The figure is the throughput ratio on / off, over all
rounds and per round; the gunicorn CPU per append of each side is recorded
too. Both sides count appends (memory.metrics, in the service), so the
difference is the middleware's timing and histogram.

Then A is scraped --scrapes times with the admin token: the time of a
scrape, and a check that its appends counter equals the appends A
acknowledged (summed over its workers' files) while B's histogram is
empty. Last, bench/metrics_in_process.py measures the same difference
without HTTP: CPU per append through two Django handlers in one process,
and the middleware's own work per request. Writes
bench/results/metrics-<db>.json (or --json PATH).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402
from run import (  # noqa: E402
    BENCH_RATE,
    MAX_APPENDS,
    PYTHON,
    REPO,
    BenchError,
    Client,
    CpuMeter,
    Database,
    Server,
    append_throughput,
    check_throughput,
    combine_rounds,
    free_port,
    loadavg,
    manage,
    summarize,
    verify,
    write_json,
)

APPEND_ROUTE = "v1/projects/<project:project_id>/memory"
SIDES = {"on": "gedweb.settings", "off": "metrics_off_settings"}


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/metrics.py", description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=16,
                        help="append threads, half on each server (default 16)")
    # 24: a round's ratio moves by 5-10 % on two CPUs (an A/A run of two
    # identical servers gave 0.87-1.08), so 8 rounds could not resolve the
    # 3 % target once an append got cheaper (docs/performance.md).
    parser.add_argument("--rounds", type=int, default=24,
                        help="rounds of both servers under load at once (default 24)")
    parser.add_argument("--round-seconds", type=float, default=5.0,
                        help="seconds of each round (default 5)")
    parser.add_argument("--scrapes", type=int, default=20, help="scrapes of /metrics (default 20)")
    parser.add_argument("--database-url", default=None,
                        help="postgres://...@127.0.0.1:5432/NAME; NAME is dropped and recreated")
    parser.add_argument("--json", type=Path, default=None,
                        help="results file (default bench/results/metrics-<db>.json)")
    args = parser.parse_args(argv)
    if not 2 <= args.clients <= 256:
        parser.error("--clients must be 2..256")
    if not 1 <= args.rounds <= 100:
        parser.error("--rounds must be 1..100")
    if not 1 <= args.round_seconds <= 120:
        parser.error("--round-seconds must be 1..120")
    if not 1 <= args.scrapes <= 1000:
        parser.error("--scrapes must be 1..1000")
    return args


def scrape(port: int, admin_token: str) -> tuple[dict[tuple[str, tuple[Any, ...]], float], float]:
    client = Client(port, admin_token)
    try:
        status, payload, elapsed = client.request("GET", "/metrics")
    finally:
        client.close()
    if status != 200:
        raise BenchError(f"GET /metrics -> {status}: {payload[:300]!r}")
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(payload.decode())
        for sample in family.samples
    }
    return samples, elapsed


def append_count(samples: dict[tuple[str, tuple[Any, ...]], float]) -> float:
    labels = tuple(sorted({"route": APPEND_ROUTE, "method": "POST", "status": "2xx"}.items()))
    return samples.get(("gedweb_http_request_duration_seconds_count", labels), 0.0)


def side_database(url: str | None, tmp: Path, side: str) -> Database:
    """Each side's own database: a writer lock shared by both would decide the split."""
    if url is None:
        directory = tmp / side
        directory.mkdir()
        return Database(None, directory)
    parts = urlsplit(url)
    return Database(parts._replace(path=f"{parts.path}_{side}").geturl(), tmp)


def run(args: argparse.Namespace, tmp: Path, results: dict[str, Any]) -> None:
    dbs = {side: side_database(args.database_url, tmp, side) for side in SIDES}
    vendor = dbs["on"].vendor
    results["meta"] = {"database": vendor, "nproc": os.cpu_count()}
    admin_token = secrets.token_urlsafe(32)
    env = {k: v for k, v in os.environ.items()
           if k not in ("GEDWEB_MEMORY_WRITE_TOKEN", "GEDWEB_FAILPOINT", "DJANGO_SECRET_KEY",
                        "PROMETHEUS_MULTIPROC_DIR", "DATABASE_URL")}
    env.update({
        "DJANGO_SETTINGS_MODULE": "gedweb.settings",
        # The run's own installation: keys, mirrors and metrics files in tmp.
        "GEDWEB_DATA_DIR": str(tmp / "data"),
        "GEDWEB_MEMORY_ROOT": str(tmp / "bridge-memory"),
        "GEDWEB_ADMIN_TOKEN": admin_token,
        "GEDWEB_DEMO_PROJECT": "false",
        "GEDWEB_PRODUCTION": "false",
        "GEDWEB_MIRROR_WRITER": "inline",
        "GEDWEB_RATE_LIMIT": os.environ.get("GEDWEB_RATE_LIMIT", BENCH_RATE),
        "GEDWEB_WRITE_RATE_LIMIT": os.environ.get("GEDWEB_WRITE_RATE_LIMIT", BENCH_RATE),
        "GUNICORN_ACCESS_LOG": "",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "HOST": "127.0.0.1",
    })
    servers: dict[str, Server] = {}
    try:
        ports = {}
        for side, settings_module in SIDES.items():
            side_env = dict(env, DATABASE_URL=dbs[side].url)
            dbs[side].create()
            log(f"{vendor}: migrating a fresh database for metrics {side}")
            manage(side_env, "migrate", "--noinput", "-v0")
            ports[side] = free_port()
            servers[side] = Server(
                dict(side_env, PORT=str(ports[side]), DJANGO_SETTINGS_MODULE=settings_module,
                     PROMETHEUS_MULTIPROC_DIR=str(tmp / f"prometheus-{side}"),
                     PYTHONPATH=os.pathsep.join([str(HERE), str(REPO)])),
                ports[side], tmp / f"gunicorn-{side}.log",
            )
            log(f"starting gunicorn, metrics {side} ({settings_module}) on port {ports[side]}")
            servers[side].start()
        meters = {side: CpuMeter(server, dbs[side]) for side, server in servers.items()}

        tokens: dict[str, str] = {}
        for side in SIDES:
            admin = Client(ports[side], admin_token)
            for project in [f"metrics-{side}-{n}" for n in range(args.rounds)] + [
                    f"metrics-{side}-warmup"]:
                tokens[project] = admin.json(
                    "POST", "/v1/projects", {"id": project, "name": project}, expect=201,
                )["token"]
            admin.close()

        acknowledged = dict.fromkeys(SIDES, 0)
        for side in SIDES:
            project = f"metrics-{side}-warmup"
            warm = append_throughput(ports[side], tokens[project], project, args.clients,
                                     4 * args.clients, 120, seed=1)
            if warm["errors"]:
                raise BenchError(f"warm-up on {side} failed: {warm['error_samples']}")
            acknowledged[side] += warm["acknowledged"]

        half = max(1, args.clients // 2)
        log(f"{args.rounds} rounds of {args.round_seconds:g} s: {half} clients on each "
            "server at the same time")
        results["load"]["rounds"] = loadavg()
        rounds: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
        per_round: list[float | None] = []
        for number in range(args.rounds):
            outcome: dict[str, dict[str, Any]] = {}

            def load(side: str, number: int = number) -> None:
                project = f"metrics-{side}-{number}"
                outcome[side] = append_throughput(
                    ports[side], tokens[project], project, half, MAX_APPENDS,
                    args.round_seconds, seed=10 + number, meter=meters[side])

            # Which side's clients start first alternates from round to round.
            sides = list(SIDES) if number % 2 == 0 else list(reversed(SIDES))
            threads = [threading.Thread(target=load, args=(side,)) for side in sides]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=args.round_seconds + 300)
            if len(outcome) != len(SIDES):
                raise BenchError(f"round {number + 1} did not finish")
            for side, tput in outcome.items():
                project = f"metrics-{side}-{number}"
                report, _ = verify(ports[side], tokens[project], project)
                results["problems"].extend(f"round {number + 1} ({side}): {problem}"
                                           for problem in check_throughput(tput, 0, report))
                acknowledged[side] += tput["acknowledged"]
                rounds[side].append(tput)
            on, off = (outcome[side]["appends_per_s"] for side in SIDES)
            per_round.append(round(on / off, 4) if off else None)
            log(f"  round {number + 1}: metrics on {on} appends/s, off {off} appends/s, "
                f"on / off {per_round[-1]}")

        combined = {side: combine_rounds(rounds[side]) for side in SIDES}
        results["throughput"] = combined
        on, off = combined["on"]["appends_per_s"], combined["off"]["appends_per_s"]
        cpu_on = (combined["on"]["cpu"] or {}).get("server_cpu_ms_per_request")
        cpu_off = (combined["off"]["cpu"] or {}).get("server_cpu_ms_per_request")
        results["ratio"] = {
            "throughput_on_over_off": round(on / off, 4) if off else None,
            "per_round": per_round,
            "server_cpu_ms_per_append": {"on": cpu_on, "off": cpu_off},
        }

        log(f"{args.scrapes} scrapes of /metrics on the metrics-on server")
        timings = []
        samples: dict[tuple[str, tuple[Any, ...]], float] = {}
        for _ in range(args.scrapes):
            samples, elapsed = scrape(ports["on"], admin_token)
            timings.append(elapsed)
        counted = samples.get(("gedweb_memory_appends_total", ()), 0.0)
        results["scrape"] = {
            "latency": summarize(timings),
            "projects": samples.get(("gedweb_projects", ()), 0.0),
            "state_seconds": samples.get(("gedweb_memory_state_seconds", ()), 0.0),
            "appends_counted": counted,
            "appends_acknowledged": acknowledged["on"],
            "append_requests_timed": append_count(samples),
        }
        if counted != acknowledged["on"] or append_count(samples) != acknowledged["on"]:
            results["problems"].append(
                f"the metrics-on server counted {counted} appends and timed "
                f"{append_count(samples)} append requests; it acknowledged {acknowledged['on']}")
        off_samples, _ = scrape(ports["off"], admin_token)
        if append_count(off_samples) != 0:
            results["problems"].append("the metrics-off server timed requests: middleware on")

        log("in process: CPU per append with and without the middleware, and the "
            "middleware alone (bench/metrics_in_process.py)")
        directory = tmp / "prometheus-in-process"
        directory.mkdir()
        proc = subprocess.run(
            [PYTHON, str(HERE / "metrics_in_process.py")], cwd=REPO,
            env=dict(env, DATABASE_URL=dbs["on"].url, PROMETHEUS_MULTIPROC_DIR=str(directory)),
            capture_output=True, text=True, timeout=600, check=False,
        )
        if proc.returncode != 0:
            raise BenchError(f"metrics_in_process.py failed:\n{proc.stderr[-2000:]}")
        results["in_process"] = json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        for server in servers.values():
            server.stop()
        for database in dbs.values():
            database.drop()


def print_report(results: dict[str, Any]) -> None:
    ratio = results["ratio"]
    on, off = results["throughput"]["on"], results["throughput"]["off"]
    print()
    print(f"append throughput, metrics on:  {on['appends_per_s']:8.1f} appends/s "
          f"(p50 {on['latency'].get('p50_ms')} ms, {on['acknowledged']} appends)")
    print(f"append throughput, metrics off: {off['appends_per_s']:8.1f} appends/s "
          f"(p50 {off['latency'].get('p50_ms')} ms, {off['acknowledged']} appends)")
    print(f"on / off: {ratio['throughput_on_over_off']} (per round: "
          f"{', '.join(str(r) for r in ratio['per_round'])}; target: at least 0.97)")
    cpu = ratio["server_cpu_ms_per_append"]
    print(f"gunicorn CPU per append: {cpu['on']} ms on, {cpu['off']} ms off")
    scrape = results.get("scrape")
    if scrape:
        print(f"GET /metrics: p50 {scrape['latency'].get('p50_ms')} ms with "
              f"{scrape['projects']:.0f} projects (reading their state: "
              f"{scrape['state_seconds'] * 1000:.2f} ms); counted {scrape['appends_counted']:.0f} "
              f"appends, acknowledged {scrape['appends_acknowledged']}")
    local = results.get("in_process")
    if local:
        cpu = local["cpu_ms_per_append"]
        print(f"in process, CPU per append: {cpu['on']} ms on, {cpu['off']} ms off "
              f"(on / off {local['cpu_on_over_off']}, per ABBA block "
              f"{min(local['cpu_on_over_off_per_block'])}..."
              f"{max(local['cpu_on_over_off_per_block'])}); the middleware alone: "
              f"{local['middleware_alone']['us_per_request']} us per request")
    for problem in results["problems"]:
        print(f"PROBLEM: {problem}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="gedweb-bench-metrics-"))
    results: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                 if k != "database_url"},
        "problems": [],
        "load": {"start": loadavg()},
    }
    try:
        run(args, tmp, results)
    except (BenchError, KeyboardInterrupt) as exc:
        results["problems"].append(str(exc) or "interrupted")
        print(f"bench/metrics.py: {exc}", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    if "ratio" in results:
        print_report(results)
    database = results.get("meta", {}).get("database", "sqlite")
    out_path = args.json or HERE / "results" / f"metrics-{database}.json"
    write_json(out_path, results)
    print(f"results written to {out_path}")
    return 1 if results["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
