"""What the request metrics middleware costs an append, in process (bench/metrics.py runs it).

Run in a subprocess with the benchmark's DATABASE_URL and a
PROMETHEUS_MULTIPROC_DIR of its own, so the metrics are written to files as
under gunicorn:

    python bench/metrics_in_process.py --blocks 25 --block 20

1. Two Django WSGI handlers in this process, one with settings.MIDDLEWARE
   as deployed and one without gedweb.metrics.RequestMetricsMiddleware.
   Appends go through them in ABBA blocks of --block requests, each side to
   a project of its own; the CPU time of each request (time.process_time)
   is added to its side. Without HTTP, gunicorn and the machine's other
   work, the difference is far less noisy than a throughput's.
2. The middleware alone: --calls calls of RequestMetricsMiddleware around
   a view that returns at once, on a real request resolved to the append
   route, against the same calls of the bare view; the difference is the
   middleware's own work per request (two clock reads, the labels lookup,
   one histogram observation written to its file).

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gedweb.settings")

import django  # noqa: E402

django.setup()

import workload  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.handlers.wsgi import WSGIHandler  # noqa: E402
from django.http import HttpRequest, HttpResponse  # noqa: E402
from django.test import RequestFactory, override_settings  # noqa: E402
from django.urls import resolve  # noqa: E402
from layers import _call as wsgi_request  # noqa: E402  (one request through a handler)

from gedweb.metrics import RequestMetricsMiddleware  # noqa: E402
from memory import services  # noqa: E402

MIDDLEWARE = "gedweb.metrics.RequestMetricsMiddleware"


def handlers() -> dict[str, WSGIHandler]:
    on = WSGIHandler()
    # The handler reads MIDDLEWARE once, when it is built.
    with override_settings(MIDDLEWARE=[m for m in settings.MIDDLEWARE if m != MIDDLEWARE]):
        off = WSGIHandler()
    return {"on": on, "off": off}


def appends(blocks: int, block: int) -> dict[str, Any]:
    apps = handlers()
    tokens, paths = {}, {}
    for side in apps:
        project = f"metrics-in-process-{side}"
        _, tokens[side] = services.project_create(project_id=project, name=project)
        paths[side] = f"/v1/projects/{project}/memory"
    rng = random.Random(11)

    def run(side: str, count: int) -> float:
        spent = 0.0
        for _ in range(count):
            body = workload.request_body(rng)
            started = time.process_time()
            status = wsgi_request(apps[side], paths[side], body, tokens[side])
            spent += time.process_time() - started
            if status != 201:
                raise SystemExit(f"metrics_in_process: an append was refused ({status})")
        return spent

    for side in apps:  # warm: connections, compiled reads, the mirror files
        run(side, 100)
    cpu = dict.fromkeys(apps, 0.0)
    per_block: list[float] = []
    for _ in range(blocks):
        block_cpu = dict.fromkeys(apps, 0.0)
        for side in ("on", "off", "off", "on"):
            block_cpu[side] += run(side, block)
        per_block.append(round(block_cpu["on"] / block_cpu["off"], 4))
        for side in apps:
            cpu[side] += block_cpu[side]
    count = 2 * blocks * block
    return {
        "appends_per_side": count,
        "cpu_ms_per_append": {side: round(cpu[side] / count * 1000, 4) for side in apps},
        "cpu_on_over_off": round(cpu["on"] / cpu["off"], 4),
        "cpu_on_over_off_per_block": per_block,
    }


def middleware_alone(calls: int) -> dict[str, Any]:
    path = "/v1/projects/metrics-in-process-on/memory"
    request = RequestFactory().post(path)
    request.resolver_match = resolve(path)
    response = HttpResponse(status=201)

    def view(request: HttpRequest) -> HttpResponse:
        return response

    timed = RequestMetricsMiddleware(view)
    best = {"bare": float("inf"), "middleware": float("inf")}
    for _ in range(5):  # best of five: the least disturbed run
        for name, call in (("bare", view), ("middleware", timed)):
            started = time.perf_counter()
            for _ in range(calls):
                call(request)
            best[name] = min(best[name], time.perf_counter() - started)
    return {
        "calls": calls,
        "us_per_request": round((best["middleware"] - best["bare"]) / calls * 1e6, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=25)
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    if settings.METRICS_MULTIPROCESS_DIR is None:
        raise SystemExit("metrics_in_process: set PROMETHEUS_MULTIPROC_DIR (as gunicorn does)")
    result = appends(args.blocks, args.block)
    result["middleware_alone"] = middleware_alone(args.calls)
    result["vendor"] = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
