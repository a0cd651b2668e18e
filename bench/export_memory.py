"""Memory use of the JSON Lines export over a long log: flat, whatever the entry count.

Seeds a fresh SQLite database (or DATABASE_URL) with N chained entries
(bench/seed.py's bulk seeding), then streams GET /p/<p>/memory.jsonl's body
(memory.exports.memory_export_response, the pages' and the API's) to nowhere
while tracemalloc records the peak of Python allocations, and reports the
process's peak RSS too. Prints one JSON line:

    python bench/export_memory.py --count 100000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="gedweb-export-"))
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{scratch / 'bench.sqlite3'}")
    os.environ.setdefault("GEDWEB_DATA_DIR", str(scratch / "data"))
    sys.path[:0] = [str(HERE.parent), str(HERE)]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gedweb.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    import seed as bench_seed  # bench/seed.py

    from memory import services
    from memory.exports import memory_export_response

    project, _ = services.project_create(project_id="export-bench", name="Export bench")
    started = time.perf_counter()
    bench_seed.seed(project, args.count, 2_000)
    seeded = time.perf_counter() - started
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    started = time.perf_counter()
    size = lines = 0
    for chunk in memory_export_response(project).streaming_content:
        size += len(chunk)
        lines += chunk.count(b"\n")
    streamed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({
        "entries": args.count, "lines": lines, "export_bytes": size,
        "seed_seconds": round(seeded, 1), "export_seconds": round(streamed, 1),
        "tracemalloc_peak_bytes": peak,
        "max_rss_kib_before": rss_before, "max_rss_kib_after": rss_after,
    }))


if __name__ == "__main__":
    main()
