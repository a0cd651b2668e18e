"""Seed one empty project with N chained entries, fast, through the ORM.

Run by bench/run.py and bench/million.py in a subprocess with the
benchmark's DATABASE_URL:

    python bench/seed.py --project P --count 100000
    python bench/seed.py --project P --count 1000000 --checkpoints --quota-mib 1024
    python bench/seed.py --projects 9998 --prefix fill --tokens-file F

Each entry is built exactly as memory.services.memory_entry_create builds
it (seq from 1, prev_hash from the previous entry or GENESIS_HASH, hash from
gedweb.lib.chain.entry_hash over MemoryEntry.chained_fields(), created_at
strictly increasing and in the past) and inserted with bulk_create in
batches; on SQLite the FTS insert trigger indexes every row. Every 250th
entry from the second batch on corrects an entry of the previous batch, so
reads also exercise the correction links.

With --checkpoints the chain also gets the checkpoints its appends would
have left: a signed row at every multiple of settings.CHECKPOINT_EVERY
(memory.checkpoints.checkpoint_mac under the installation's signing key,
as checkpoints.take signs them), inserted with its batch, and at the end
the CHECKPOINTS file caught up from the table (checkpoints.sync_file), so
`memory verify` checks the log against them. With --quota-mib the
project's entries quota is raised to that many MiB (the operator's
override in the admin) and charged for every seeded entry, as appends
charge it, so the seeded project is also at its real usage.

--projects creates that many empty projects through the service that
POST /v1/projects calls (memory.services.project_create: the project,
its first token and its quota rows), in transactions of 500, and writes
their generated tokens to --tokens-file (JSON, mode 0600), so they can be
used over HTTP. Prints one JSON line.
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
from django.conf import settings  # noqa: E402
from django.db import connection, reset_queries, transaction  # noqa: E402

from gedweb.lib.chain import GENESIS_HASH, entry_hash  # noqa: E402
from gedweb.lib.digest import sha256_text  # noqa: E402
from memory import checkpoints, quotas, services  # noqa: E402
from memory.models import ChainCheckpoint, MemoryEntry, Project, ProjectQuota  # noqa: E402

AUTHOR = "seed"
CORRECT_EVERY = 250
PROJECTS_PER_TRANSACTION = 500


def _checkpoint_row(entry: MemoryEntry, signer: str) -> ChainCheckpoint:
    """The checkpoint checkpoints.after_commit takes after this entry commits.

    Its time is the entry's own: the seeded entries are back-dated, and a
    checkpoint is taken just after its entry commits.
    """
    created_at = entry.created_at_text
    return ChainCheckpoint(
        project_id=entry.project_id, seq=entry.seq, hash=entry.hash,
        created_at=entry.created_at,
        mac=checkpoints.checkpoint_mac(entry.project_id, entry.seq, entry.hash, created_at),
        key_id=signer,
    )


def seed(project: Project, count: int, batch_size: int, *, with_checkpoints: bool = False,
         ) -> tuple[str, int, int]:
    """(head hash, text bytes, checkpoint rows) after seeding ``count`` entries."""
    if MemoryEntry.objects.for_project(project).exists():
        raise SystemExit(f"seed: project {project.pk} is not empty")
    every = settings.CHECKPOINT_EVERY
    signer = checkpoints.key_id()
    text_bytes = 0
    checkpointed = 0
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
            checkpoints.seal(entry)  # signed as an append would be
            prev = entry.hash
            text_bytes += quotas.text_bytes(entry.content)
            rows.append(entry)
        taken = [_checkpoint_row(row, signer) for row in rows
                 if with_checkpoints and row.seq % every == 0]
        with transaction.atomic():
            MemoryEntry.objects.bulk_create(rows)
            ChainCheckpoint.objects.bulk_create(taken)
        if any(row.pk is None for row in rows):
            raise SystemExit("seed: the database did not return primary keys")
        checkpointed += len(taken)
        previous_batch = rows
        # DEBUG (development settings) keeps every statement's SQL, here
        # megabytes per batch: the seeder's memory stays bounded without it.
        reset_queries()
    if checkpointed:
        checkpoints.sync_file(project.pk)
    return prev, text_bytes, checkpointed


def charge_quota(project: Project, *, limit_mib: int, text_bytes: int, rows: int) -> None:
    """Raise the entries quota (the admin's override) and charge it for the seeded rows."""
    ProjectQuota.objects.filter(project=project, kind=ProjectQuota.Kind.ENTRIES).update(
        limit_mib=limit_mib)
    quotas.quota_charge(project=project, kind=ProjectQuota.Kind.ENTRIES,
                        size_bytes=text_bytes, rows=rows)


def create_projects(count: int, prefix: str) -> dict[str, str]:
    """``count`` projects with their first token, as POST /v1/projects creates them."""
    tokens: dict[str, str] = {}
    width = len(str(count - 1))
    for start in range(0, count, PROJECTS_PER_TRANSACTION):
        with transaction.atomic():
            for number in range(start, min(start + PROJECTS_PER_TRANSACTION, count)):
                project_id = f"{prefix}-{number:0{width}d}"
                _, tokens[project_id] = services.project_create(
                    project_id=project_id, name=f"Filler project {number}")
        reset_queries()
    return tokens


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


def main_projects(args: argparse.Namespace) -> None:
    if not 1 <= args.projects <= 100_000 or not args.tokens_file:
        raise SystemExit("seed: --projects must be 1..100,000, with --tokens-file")
    started = time.perf_counter()
    tokens = create_projects(args.projects, args.prefix)
    seconds = time.perf_counter() - started
    fd = os.open(args.tokens_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(tokens, out)
    print(json.dumps({"projects": len(tokens), "prefix": args.prefix,
                      "seconds": round(seconds, 3), "vendor": connection.vendor}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", help="the project to seed with entries")
    parser.add_argument("--count", type=int, default=0, help="entries to seed into --project")
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--adrs", type=int, default=0,
                        help="also write PROJECT.md, CONTEXT.md and this many ADRs")
    parser.add_argument("--checkpoints", action="store_true",
                        help="also the signed checkpoints the appends would have taken")
    parser.add_argument("--quota-mib", type=int, default=0,
                        help="raise the project's entries quota to this and charge the entries")
    parser.add_argument("--projects", type=int, default=0,
                        help="instead: create this many empty projects (with --tokens-file)")
    parser.add_argument("--prefix", default="fill", help="id prefix of --projects")
    parser.add_argument("--tokens-file", help="where --projects writes {id: token} (new file)")
    args = parser.parse_args()
    if args.projects:
        main_projects(args)
        return
    if args.project is None:
        raise SystemExit("seed: --project (or --projects) is required")
    if not 0 <= args.count <= 10_000_000 or not 1 <= args.batch <= 10_000:
        raise SystemExit("seed: --count must be 0..10,000,000 and --batch 1..10,000")
    if not args.count and not args.adrs:
        raise SystemExit("seed: nothing to do: give --count or --adrs")
    project = Project.objects.get(pk=args.project)
    started = time.perf_counter()
    head, text_bytes, checkpointed = (
        seed(project, args.count, args.batch, with_checkpoints=args.checkpoints)
        if args.count else (GENESIS_HASH, 0, 0))
    inserted = time.perf_counter() - started
    if args.quota_mib and args.count:
        charge_quota(project, limit_mib=args.quota_mib, text_bytes=text_bytes, rows=args.count)
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
        "checkpoints": checkpointed,
        "checkpoint_every": settings.CHECKPOINT_EVERY,
        "text_bytes": text_bytes,
        "adrs": args.adrs,
        "analyze_seconds": round(analyzed, 3),
        "vendor": connection.vendor,
    }))


if __name__ == "__main__":
    main()
