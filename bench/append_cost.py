"""What an append costs GedWeb's server and the Django floor's, under load, by kind.

    python bench/append_cost.py [--rounds 2] [--round-seconds 10] [--database-url ...]

bench/overhead.py says how far GedWeb's throughput is from the Django
floor's; this says where the difference is spent. The same two servers
(overhead.Bench: the same gunicorn configuration, databases, projects and
clients) take turns, GedWeb then the floor, for --rounds rounds, and for
each round every server process's counters from /proc are read before and
after: user and system CPU, voluntary and involuntary context switches, and
read and write system calls (``/proc/<pid>/io`` syscr, syscw), each divided
by the round's acknowledged appends. The raw floor is started by Bench but
not measured here. Prints a table and one JSON line; not part of `make
bench` (docs/performance.md, "Where the rest of the gap is").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import overhead  # noqa: E402
from run import run_guarded  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")
MEASURED = ("gedweb", "django_floor")
COUNTERS = ("user_ms", "system_ms", "voluntary_switches", "involuntary_switches",
            "read_syscalls", "write_syscalls")


def process_counters(pids: list[int]) -> dict[str, float]:
    """The sums of COUNTERS over the live processes of ``pids`` (CPU in seconds here)."""
    total = dict.fromkeys(COUNTERS, 0.0)
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            status = Path(f"/proc/{pid}/status").read_text()
            io = Path(f"/proc/{pid}/io").read_text()
        except OSError:  # the process ended between the listing and the read
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        total["user_ms"] += int(fields[11]) / _TICK * 1000
        total["system_ms"] += int(fields[12]) / _TICK * 1000
        values = dict(line.split(":", 1) for line in (status + io).splitlines() if ":" in line)
        total["voluntary_switches"] += int(values["voluntary_ctxt_switches"])
        total["involuntary_switches"] += int(values["nonvoluntary_ctxt_switches"])
        total["read_syscalls"] += int(values["syscr"])
        total["write_syscalls"] += int(values["syscw"])
    return total


def measure(bench: overhead.Bench, name: str, seconds: float, seed: int) -> dict[str, Any]:
    pids = bench.meters[name]._server_pids()
    before = process_counters(pids)
    result = bench.append_round(name, 10**9, seconds, seed, measured=False)
    after = process_counters(pids)
    appends = result["acknowledged"] or 1
    return {
        "appends_per_s": result["appends_per_s"],
        "errors": result["errors"],
        **{key: round((after[key] - before[key]) / appends, 3) for key in COUNTERS},
    }


def run(args: argparse.Namespace, tmp: Path, results: dict[str, Any]) -> None:
    log = lambda text: print(f"[{datetime.now():%H:%M:%S}] {text}", flush=True)  # noqa: E731
    bench_args = argparse.Namespace(clients=args.clients, projects=0, rounds=args.rounds,
                                    round_seconds=args.round_seconds,
                                    database_url=args.database_url, keep_db=False)
    bench = overhead.Bench(bench_args, tmp, log)
    results["rounds"] = []
    try:
        bench.start()
        for index, name in enumerate(MEASURED):
            bench.append_round(name, 4 * args.clients, 120, seed=index, measured=False)
        for number in range(args.rounds):
            for name in MEASURED:
                found = measure(bench, name, args.round_seconds, seed=100 + number)
                results["rounds"].append({"server": name, "round": number + 1, **found})
                print(f"{name:13} round {number + 1}: {found['appends_per_s']:7.1f} appends/s; "
                      "per append: " + ", ".join(f"{key} {found[key]}" for key in COUNTERS),
                      flush=True)
        problems = bench.check(MEASURED)
    finally:
        bench.stop()
    results["problems"] += [f"{name}: {p}" for name in MEASURED for p in problems[name]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/append_cost.py",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--round-seconds", type=float, default=10.0)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"problems": []}
    failed = run_guarded(lambda tmp: run(args, tmp, results), results, keep_tmp=False,
                         tmp_prefix="gedweb-append-cost-")
    print(json.dumps(results))
    return 1 if failed or results["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
