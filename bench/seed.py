"""Seed one empty project with N chained entries, fast, through the ORM.

Run by bench/run.py in a subprocess with the benchmark's DATABASE_URL:

    python bench/seed.py --project P --count 100000

Each entry is built exactly as memory.services.memory_entry_create builds
it (seq from 1, prev_hash from the previous entry or GENESIS_HASH, hash from
gedweb.lib.chain.entry_hash over MemoryEntry.chained_fields(), created_at
strictly increasing and in the past) and inserted with bulk_create in
batches; on SQLite the FTS insert trigger indexes every row. Every 250th
entry from the second batch on corrects an entry of the previous batch, so
reads also exercise the correction links. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gedweb.settings")

import django  # noqa: E402

django.setup()

import workload  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from gedweb.lib.chain import GENESIS_HASH, entry_hash  # noqa: E402
from gedweb.lib.digest import sha256_text  # noqa: E402
from memory.models import MemoryEntry, Project  # noqa: E402

AUTHOR = "seed"
CORRECT_EVERY = 250


def seed(project: Project, count: int, batch_size: int) -> str:
    if MemoryEntry.objects.for_project(project).exists():
        raise SystemExit(f"seed: project {project.pk} is not empty")
    step = timedelta(milliseconds=1)
    # Strictly increasing and entirely in the past, so live appends that
    # follow keep created_at in seq order without the clock-step guard.
    base = datetime.now(UTC) - timedelta(hours=1) - step * count
    prev = GENESIS_HASH
    previous_batch: list[MemoryEntry] = []
    for start in range(1, count + 1, batch_size):
        rows: list[MemoryEntry] = []
        for seq in range(start, min(start + batch_size, count + 1)):
            fields = workload.seeded_fields(seq)
            corrects = None
            if previous_batch and seq % CORRECT_EVERY == 0:
                corrects = previous_batch[seq % len(previous_batch)]
                fields["category"] = "correction"
            entry = MemoryEntry(
                project=project,
                seq=seq,
                category=fields["category"],
                content=fields["content"],
                source=fields["source"],
                corrects=corrects,
                author=AUTHOR,
                created_at=base + step * seq,
                content_sha256=sha256_text(fields["content"]),  # chain format 2, as appends
                prev_hash=prev,
            )
            entry.hash = entry_hash(prev, entry.chained_fields())
            prev = entry.hash
            rows.append(entry)
        with transaction.atomic():
            MemoryEntry.objects.bulk_create(rows)
        if any(row.pk is None for row in rows):
            raise SystemExit("seed: the database did not return primary keys")
        previous_batch = rows
    return prev


def seed_documents(project: Project, adrs: int) -> None:
    """PROJECT.md, CONTEXT.md and ``adrs`` decision records, through the document service."""
    from memory.documents import document_put

    rng_words = workload.VOCABULARY
    document_put(project=project, path="PROJECT.md", author=AUTHOR,
                 content="# Project\n\nA benchmark project with a long memory.\n")
    document_put(project=project, path="CONTEXT.md", author=AUTHOR,
                 content="# Project Context\n\n" + " ".join(rng_words[:200]) + "\n")
    for number in range(1, adrs + 1):
        words = " ".join(rng_words[(number * 7 + k) % len(rng_words)] for k in range(120))
        document_put(
            project=project, path=f"adr/{number:04d}-decision-{number}.md", author=AUTHOR,
            content=f"# ADR {number:04d}: decision {number}\n\nStatus: accepted\n\n{words}\n",
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--adrs", type=int, default=0,
                        help="also write PROJECT.md, CONTEXT.md and this many ADRs")
    args = parser.parse_args()
    if not 1 <= args.count <= 10_000_000 or not 1 <= args.batch <= 10_000:
        raise SystemExit("seed: --count must be 1..10,000,000 and --batch 1..10,000")
    project = Project.objects.get(pk=args.project)
    started = time.perf_counter()
    head = seed(project, args.count, args.batch)
    inserted = time.perf_counter() - started
    if args.adrs:
        seed_documents(project, args.adrs)
    analyzed = 0.0
    if connection.vendor == "postgresql":
        # What autovacuum does shortly after a bulk load; done here so the
        # plans measured next do not depend on when autovacuum wakes up.
        moment = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE memory_memoryentry")
        analyzed = time.perf_counter() - moment
    print(json.dumps({
        "project": project.pk,
        "entries": args.count,
        "head": head,
        "insert_seconds": round(inserted, 3),
        "adrs": args.adrs,
        "analyze_seconds": round(analyzed, 3),
        "vendor": connection.vendor,
    }))


if __name__ == "__main__":
    main()
