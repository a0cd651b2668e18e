"""Where an append's CPU time goes, layer by layer, in process (`make bench` runs it).

Run by bench/run.py in a subprocess with the benchmark's DATABASE_URL and
mirror root:

    python bench/layers.py --project bench-layers --appends 1000

It creates the project, sends appends through Django's WSGI handler in this
process (no HTTP server, so gunicorn's share is left out), and measures:

- CPU per append (time.process_time, no profiler);
- the SQL statements of one append;
- the share of each layer, from a cProfile run with process_time as its
  clock, applied to the unprofiled CPU figure. cProfile slows every Python
  call by about the same factor, so shares survive it better than times.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
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
from django.core.handlers.wsgi import WSGIHandler  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from memory import services  # noqa: E402

# (file suffix, function name) of the functions whose inclusive time makes a layer.
MARKERS = {
    "total": ("django/core/handlers/wsgi.py", "__call__"),
    "drf_dispatch": ("rest_framework/views.py", "dispatch"),
    "view_initial": ("gedweb/api/views.py", "initial"),
    "rate_limits": ("gedweb/throttling.py", "allow_request"),
    "view_post": ("memory/api/views.py", "post"),
    "serializer": ("rest_framework/serializers.py", "is_valid"),
    "service": ("memory/services.py", "memory_entry_create"),
    "writer_queue": ("gedweb/db/sqlite3/base.py", "acquire"),
    "row_lock": ("memory/locks.py", "lock_project"),
    "head_read": ("memory/querysets.py", "newest_chain_row"),
    "insert": ("gedweb/append_only.py", "save"),
    "quota": ("memory/quotas.py", "quota_charge"),
    "secret_scan": ("memory/secret_scan.py", "refuse_secrets"),
    "commit": ("django/db/backends/base/base.py", "commit"),
    "mirror": ("memory/mirror.py", "after_commit"),
}


def _call(app: WSGIHandler, path: str, body: dict[str, Any], token: str) -> int:
    data = json.dumps(body).encode()
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": path, "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80", "HTTP_HOST": "127.0.0.1",
        "REMOTE_ADDR": "127.0.0.1", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(data),
        "CONTENT_LENGTH": str(len(data)), "CONTENT_TYPE": "application/json",
        "HTTP_AUTHORIZATION": f"Bearer {token}",
    }
    status: list[str] = []
    response = app(environ, lambda s, headers, exc_info=None: status.append(s))
    b"".join(response)
    response.close()
    return int(status[0].split()[0])


def _inclusive(stats: pstats.Stats) -> dict[str, float]:
    # The largest inclusive time among the matching functions, not their sum:
    # ProjectAPIView.initial calls GedWebAPIView.initial, and adding both
    # counted the inner one twice.
    found = dict.fromkeys(MARKERS, 0.0)
    for (filename, _, name), (_, _, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        for layer, (suffix, function) in MARKERS.items():
            if name == function and filename.endswith(suffix):
                found[layer] = max(found[layer], cumulative)
    return found


def layers(project_id: str, appends: int) -> dict[str, Any]:
    _, token = services.project_create(project_id=project_id, name="Layers")
    app = WSGIHandler()
    rng = random.Random(7)
    path = f"/v1/projects/{project_id}/memory"

    def run(n: int) -> None:
        for _ in range(n):
            if _call(app, path, workload.request_body(rng), token) != 201:
                raise SystemExit("layers: an append was refused")

    run(200)  # warm: connection, compiled reads, the mirror file
    started = time.process_time()
    run(appends)
    cpu_ms = (time.process_time() - started) / appends * 1000

    with CaptureQueriesContext(connection) as captured:
        run(1)
    statements = [query["sql"].split()[0].upper() for query in captured.captured_queries]

    profile = cProfile.Profile(time.process_time)
    profile.enable()
    run(appends)
    profile.disable()
    inclusive = _inclusive(pstats.Stats(profile))
    total = inclusive["total"] or 1.0
    share = {layer: seconds / total for layer, seconds in inclusive.items()}
    service_parts = ("secret_scan", "writer_queue", "row_lock", "head_read", "quota", "insert",
                     "commit", "mirror")
    breakdown = {
        # Django's handler and middleware, URL routing, rendering the JSON response.
        "django_request_cycle": share["total"] - share["drf_dispatch"],
        # DRF's dispatch around the view: request wrapping, exception handling.
        "drf_dispatch": share["drf_dispatch"] - share["view_initial"] - share["view_post"],
        # DRF's initial(): the token query (which brings the project),
        # permissions, content negotiation.
        "authentication_and_project": share["view_initial"] - share["rate_limits"],
        # Counting the request and the write against the token's two rates
        # (gedweb/throttling.py: one upsert each without REDIS_URL).
        "rate_limits": share["rate_limits"],
        "input_serializer": share["serializer"],
        "view_response_building": share["view_post"] - share["service"] - share["serializer"],
        **{f"service_{part}": share[part] for part in service_parts},
        # Field validation, the transaction, hashing, scheduling the mirror.
        "service_other": share["service"] - sum(share[part] for part in service_parts),
    }
    return {
        "appends": appends,
        "vendor": connection.vendor,
        "cpu_ms_per_append": round(cpu_ms, 3),
        "statements": statements,
        "layers_ms": {name: round(value * cpu_ms, 3) for name, value in breakdown.items()},
        "layers_share": {name: round(value, 3) for name, value in breakdown.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", default="bench-layers")
    parser.add_argument("--appends", type=int, default=1000)
    args = parser.parse_args()
    print(json.dumps(layers(args.project, args.appends)))


if __name__ == "__main__":
    main()
