"""Recall's costs, measured: latency, memory, install size and the indexer's lag (docs/recall.md).

Each figure is measured on this machine; targets are reported beside them, never asserted.

1. **Latency.** For each --sizes N, a fresh database (a SQLite file in a
   temporary directory, or the PostgreSQL database of --database-url,
   recreated) holds one project of N entries among four of 300. The
   entries are chained rows (seq, prev_hash, hash as an append makes them,
   every 250th correcting one of the previous batch), bulk-inserted as
   bench/seed.py does, with realistic varied text: the evaluation sets'
   entries (bench/recall/sets/), alone or two together, their numbers and
   commit ids changed, often with an identifier added (a ticket, a commit,
   a path, an error code), and on half of them a ticket reference of
   their own. Their vectors are not made by running the model on every
   entry: --distinct texts are embedded once with the real model
   (all-MiniLM-L6-v2, gedweb.embedding.MiniLM), quantised with
   memory.recall.vectors.quantise, and each entry gets the vector of the
   text it was varied from, written as EntryVector rows with the
   RecallProgress and RecallCursor rows that say the index has reached
   the head. Then a new process asks 50 queries (set questions and
   identifiers, and ticket references seeded in the big project) through
   ``GET /v1/projects/{id}/recall`` (django.test.Client, in process, as
   bench/recall/evaluate.py does) in each mode: the first recall after the
   process starts (it loads the model and the project's matrix), the first
   after the matrix is dropped (the model already loaded), then one
   warm-up round and --rounds measured rounds, the modes interleaved query
   by query. Targets: p50 <= 60 ms at 10,000 entries, <= 150 ms at 100,000.
2. **Memory** (VmRSS of a fresh process, /proc/self/status): what loading
   the model and embedding one text adds (target <= 250 MiB), and what a
   project's cached matrix adds (memory.recall.vectors.project_matrix) at
   each size, per entry, extrapolated to a million entries; with the peak
   (VmHWM, reset through /proc/self/clear_refs) while it loads and while a
   query scores it.
3. **Install growth**: two fresh venvs (``python3.12 -m venv``, ``pip
   install --require-hashes --no-deps -r``, as the Makefile installs) from
   requirements/base.txt as it was before recall (``git show
   3705969:requirements/base.txt``, read only) and as it is now; their
   sizes on disk and the difference (target <= 200 MB, no torch).
4. **Indexer lag**: a real gunicorn as `make run` starts it
   (tests/live_server.py's LiveGunicorn, gunicorn.conf.py's own worker and
   thread counts, GEDWEB_RECALL_INDEXER=auto, GEDWEB_RECALL_MODEL=minilm,
   the rate limits off). First a backlog of --backlog entries seeded before
   the server starts gives the indexer's throughput (entries/s, and per CPU
   second of the indexer process). Then a client appends realistic
   entries over HTTP at --rate per second for --lag-seconds (an open-loop
   schedule: each append starts at its time whatever the previous one
   took), while another thread polls ``GET /recall?mode=keyword`` every
   --poll seconds; each entry's lag is from its append's answer to the
   first poll answer whose ``index.through_seq`` reaches its seq (so it is
   measured to within a poll). Target p95 <= 5 s.

Before each timed phase it waits (up to --quiet-wait seconds) for the
machine to be quiet, and records the load average before and after each
phase with the CPUs the rest of the machine used meanwhile (Quiet).
Writes bench/results/recall-costs-<engine>.json with --write.

    .venv/bin/python bench/recall/costs.py [--database-url postgres://...] [--write]
        [--sizes 10000,100000] [--skip-lag] [--skip-install]
"""

from __future__ import annotations

import argparse
import bisect
import gc
import json
import os
import platform
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[2]
SETS = Path(__file__).resolve().parent / "sets"
RESULTS = ROOT / "bench" / "results"
MODES = ("hybrid", "semantic", "keyword")
# requirements/base.txt before recall added its model and runtime.
BEFORE_RECALL = "3705969"

TARGET_P50_MS = {10_000: 60.0, 100_000: 150.0, 1_000_000: 500.0}
# A million-entry project's vectors in one app server: every worker's matrix.
TARGET_MILLION_SERVER_MIB = 400.0
# gunicorn.conf.py's worker count on this machine (WEB_CONCURRENCY unset).
WORKERS = 2 * len(os.sched_getaffinity(0)) + 1
TARGET_MODEL_MIB = 250.0
TARGET_INSTALL_MB = 200.0
TARGET_LAG_P95_S = 5.0

SMALL_PROJECTS = 4
SMALL_ENTRIES = 300
BATCH = 2000
CORRECT_EVERY = 250
QUERIES = {"reworded": 20, "conversation": 12, "identifier": 8}
SEEDED_REF_QUERIES = 10

log = lambda text: print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)  # noqa: E731


# --- realistic text ------------------------------------------------------------------------

PREFIXES = ("HAR", "LUM", "OPS", "WEB", "API", "INFRA", "DATA", "SEC")
DIRS = ("src/gedweb", "app/models", "services/billing", "web/static/js", "deploy/k8s",
        "scripts", "lib/index", "tests/integration", "crates/lumen-core", "config")
NAMES = ("settings", "worker", "router", "schema", "cache", "retry", "upload", "auth_backend",
         "queue", "exporter", "thumbnails", "migrations", "ingest", "scheduler")
EXTS = ("py", "ts", "rs", "yaml", "toml", "go", "sql", "md", "json")
CODES = ("ERR_CONN_RESET", "ETIMEDOUT", "E_LOCK_TIMEOUT", "OOMKilled", "ENOSPC", "SIGSEGV",
         "ERR_TLS_CERT_ALTNAME_INVALID", "HTTP 503", "HTTP 429", "EADDRINUSE", "ECONNREFUSED")
TAILS = ("Tracked in {ticket}.", "Fixed in commit {commit}.", "The change is in {path}.",
         "The log said {code} each time.", "Reverted in {ticket}; see {path}.",
         "Pinned to {version} until {ticket} is done.", "It listens on port {port} in staging.",
         "Bumped to {version} in commit {commit}.", "{code} again after the deploy; {ticket}.")
_HEX_ID = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,12}\b")
_NUMBER = re.compile(r"\b\d+\b")


def _hex(rng: random.Random, length: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(length))


def _ticket(rng: random.Random, digits: tuple[int, int] = (100, 100_000)) -> str:
    return f"{rng.choice(PREFIXES)}-{rng.randrange(*digits)}"


def _tail(rng: random.Random) -> str:
    return rng.choice(TAILS).format(
        ticket=_ticket(rng), commit=_hex(rng, rng.randint(7, 10)),
        path=f"{rng.choice(DIRS)}/{rng.choice(NAMES)}.{rng.choice(EXTS)}",
        code=rng.choice(CODES) if rng.random() < 0.6 else f"E{rng.randrange(1000, 10000)}",
        version=f"{rng.randint(0, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}",
        port=rng.randrange(1024, 65536))


def _vary(rng: random.Random, text: str) -> str:
    """The text with its commit ids and numbers changed (years kept); 30% left as written."""
    if rng.random() < 0.3:
        return text
    text = _HEX_ID.sub(lambda m: _hex(rng, len(m.group())), text)

    def number(match: re.Match[str]) -> str:
        digits = match.group()
        if len(digits) == 4 and digits.startswith("20"):
            return digits
        if len(digits) == 1:
            return digits if rng.random() < 0.5 else str(rng.randrange(1, 10))
        return str(rng.randrange(10 ** (len(digits) - 1), 10 ** len(digits)))

    return _NUMBER.sub(number, text)


def _sets() -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(SETS.glob("*.json"))]


def realistic_texts(rng: random.Random, count: int) -> list[dict[str, str]]:
    """``count`` distinct entry texts (with a category and source) varied from the sets' entries."""
    entries = [entry for data in _sets() for entry in data["entries"]]
    texts: list[dict[str, str]] = []
    seen: set[str] = set()
    while len(texts) < count:
        index = rng.randrange(len(entries))
        entry = entries[index]
        content = entry["content"]
        if rng.random() < 0.3:  # with a neighbour: the same set, usually the same thread
            content += " " + entries[(index + rng.randint(1, 5)) % len(entries)]["content"]
        content = _vary(rng, content)
        if rng.random() < 0.35:
            content += " " + _tail(rng)
        if content in seen:
            continue
        seen.add(content)
        texts.append({"content": content, "category": entry["category"],
                      "source": entry["source"]})
    return texts


def set_queries(rng: random.Random) -> list[str]:
    by_type: dict[str, list[str]] = defaultdict(list)
    for data in _sets():
        for query in data["queries"]:
            by_type[query["type"]].append(query["q"])
    picked: list[str] = []
    for kind, count in QUERIES.items():
        picked += rng.sample(by_type[kind], count)
    return picked


# --- measuring -----------------------------------------------------------------------------


def _status_kib(field: str, pid: str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def rss_mib(pid: str = "self") -> float:
    return _status_kib("VmRSS", pid) / 1024


def peak_mib() -> float:
    return _status_kib("VmHWM") / 1024


def reset_peak() -> bool:
    """Reset this process's VmHWM to its current RSS (Linux >= 4.0); False if refused."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def summary_ms(seconds: list[float]) -> dict[str, float]:
    return {"n": len(seconds), "p50": round(percentile(seconds, 0.5) * 1000, 1),
            "p95": round(percentile(seconds, 0.95) * 1000, 1),
            "mean": round(sum(seconds) / len(seconds) * 1000, 1),
            "max": round(max(seconds) * 1000, 1)}


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def _machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (user, nice, system, irq, steal)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = values[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds() -> float:
    """This process's CPU, and its children's that have been waited for (subprocess, gunicorn)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _postgres_cpu_seconds() -> float:
    """CPU of the local PostgreSQL server: its live processes, and the backends it has reaped."""
    total = 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "postgres":
                continue
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
        if fields[1] == "1":  # the postmaster: its children's that have ended
            total += (int(fields[13]) + int(fields[14])) / ticks
    return total


QUIET_WINDOW = 5.0


class Quiet:
    """How busy the rest of the machine was while a phase ran (in CPUs, others' share).

    Before a timed phase, waits up to --quiet-wait seconds for a 5-second window
    in which the machine is at most --quiet-busy busy (another agent's tests
    come and go). Afterwards, the machine's busy CPU seconds less this
    process tree's (every process the phase started has ended and been
    waited for by then) and the local PostgreSQL server's (this run's queries,
    reported apart) over the wall time: what others took meanwhile.
    """

    def __init__(self, args: argparse.Namespace, loads: dict[str, Any], name: str,
                 wait: bool = True) -> None:
        self.args, self.loads, self.name, self.wait = args, loads, name, wait

    def __enter__(self) -> Quiet:
        waited = time.monotonic()
        told = 0.0
        while True:
            machine, start = _machine_busy_seconds(), time.monotonic()
            time.sleep(QUIET_WINDOW)
            busy = (_machine_busy_seconds() - machine) / (time.monotonic() - start)
            busy /= len(os.sched_getaffinity(0))
            if (not self.wait or busy <= self.args.quiet_busy
                    or time.monotonic() - waited > self.args.quiet_wait):
                break
            if time.monotonic() - told > 30:
                log(f"{self.name}: waiting for a quiet machine ({busy:.0%} busy)")
                told = time.monotonic()
        self.loads[self.name] = {"load_before": load_average(),
                                 "waited_seconds": round(time.monotonic() - waited
                                                         - QUIET_WINDOW, 1),
                                 "machine_busy_before": round(busy, 2)}
        self.started = time.monotonic()
        self.machine = _machine_busy_seconds()
        self.own = _own_cpu_seconds()
        self.postgres = _postgres_cpu_seconds()
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.monotonic() - self.started
        postgres = _postgres_cpu_seconds() - self.postgres
        others = ((_machine_busy_seconds() - self.machine) - (_own_cpu_seconds() - self.own)
                  - postgres)
        self.loads[self.name].update({"load_after": load_average(),
                                      "others_cpus": round(max(0.0, others) / wall, 2),
                                      "postgres_cpus": round(postgres / wall, 2)})


# --- phases run in processes of their own (--phase) ----------------------------------------


def _django(database_url: str, data_dir: Path) -> None:
    """Django on that database, set up as bench/recall/evaluate.py sets it up (the real model)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from evaluate import _configure

    _configure(database_url, data_dir, "minilm")


def _result(tmp: Path, name: str, data: dict[str, Any]) -> None:
    (tmp / f"result-{name}.json").write_text(json.dumps(data, indent=2))


def phase_corpus(args: argparse.Namespace) -> None:
    """Embed --distinct realistic texts with the real model, once, for every size's vectors."""
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from gedweb.embedding import MiniLM

    tmp = Path(args.tmp)
    texts = realistic_texts(random.Random(20260301), args.distinct)
    model = MiniLM()
    model.load()
    started = time.perf_counter()
    vectors = model.embed([text["content"] for text in texts])
    seconds = time.perf_counter() - started
    np.save(tmp / "corpus.npy", vectors)
    (tmp / "corpus.json").write_text(json.dumps(texts))
    _result(tmp, "corpus", {
        "texts": len(texts), "seconds": round(seconds, 1),
        "texts_per_second": round(len(texts) / seconds, 1),
        "mean_chars": round(sum(len(t["content"]) for t in texts) / len(texts))})


def phase_model(args: argparse.Namespace) -> None:
    """What loading the model and embedding one text add to a process's RSS."""
    import numpy  # noqa: F401  (a worker has it already: memory.recall imports it)

    sys.path.insert(0, str(ROOT))
    from gedweb.embedding import MiniLM

    tmp = Path(args.tmp)
    sample = [t["content"] for t in json.loads((tmp / "corpus.json").read_text())[:200]]
    gc.collect()
    before = rss_mib()
    peak_ok = reset_peak()
    model = MiniLM()
    started = time.perf_counter()
    model.load()
    loaded = time.perf_counter() - started
    model.embed(["why do the workers crash on windows laptops?"])
    first = time.perf_counter() - started
    gc.collect()
    after_one = rss_mib()
    peak_one = peak_mib()
    for text in sample:
        model.embed([text])
    gc.collect()
    after_many = rss_mib()
    _result(tmp, "model", {
        "rss_before_mib": round(before, 1), "rss_after_one_embed_mib": round(after_one, 1),
        "gain_mib": round(after_one - before, 1),
        "peak_gain_mib": round(peak_one - before, 1) if peak_ok else None,
        "gain_after_200_embeds_mib": round(after_many - before, 1),
        "load_seconds": round(loaded, 3), "load_and_first_embed_seconds": round(first, 3)})


def _seed_project(project: Any, count: int, rng: random.Random, texts: list[dict[str, str]],
                  quantised: list[tuple[bytes, float]], model: str,
                  refs: list[tuple[int, str]] | None = None) -> None:
    """``count`` chained entries and their vectors, in batches of one transaction each."""
    from django.db import reset_queries, transaction

    from gedweb.lib.chain import GENESIS_HASH, entry_hash
    from gedweb.lib.digest import sha256_text
    from memory import checkpoints
    from memory.models import EntryVector, MemoryEntry

    step = timedelta(milliseconds=1)
    base = datetime.now(UTC) - timedelta(hours=2) - step * count
    prev = GENESIS_HASH
    previous: list[Any] = []
    for start in range(1, count + 1, BATCH):
        rows, made_from = [], []
        for seq in range(start, min(start + BATCH, count + 1)):
            chosen = rng.randrange(len(texts))
            text = texts[chosen]
            content = text["content"]
            if rng.random() < 0.5:
                ref = _ticket(rng, (10_000, 1_000_000))
                content += f" Ref {ref}."
                if refs is not None:
                    refs.append((seq, ref))
            corrects = (previous[seq % len(previous)]
                        if previous and seq % CORRECT_EVERY == 0 else None)
            entry = MemoryEntry(
                project=project, seq=seq,
                category="correction" if corrects is not None else text["category"],
                content=content, source=text["source"], corrects=corrects, author="bench",
                created_at=base + step * seq, content_sha256=sha256_text(content),
                prev_hash=prev)
            entry.hash = entry_hash(prev, entry.chained_fields())
            checkpoints.seal(entry)  # signed as an append would be
            prev = entry.hash
            rows.append(entry)
            made_from.append(chosen)
        with transaction.atomic():
            MemoryEntry.objects.bulk_create(rows)
            if any(row.pk is None for row in rows):
                raise SystemExit("the database did not return primary keys")
            EntryVector.objects.bulk_create([
                EntryVector(entry_id=row.pk, project=project, seq=row.seq, model=model,
                            content_sha256=row.content_sha256, vector=quantised[chosen][0],
                            scale=quantised[chosen][1])
                for row, chosen in zip(rows, made_from)], batch_size=1000)
        previous = rows
        reset_queries()


def _vector_bytes_on_disk() -> int | None:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_total_relation_size('memory_entryvector')")
            return int(cursor.fetchone()[0])
        try:
            cursor.execute("SELECT SUM(pgsize) FROM dbstat WHERE name = 'memory_entryvector'"
                           " OR tbl_name = 'memory_entryvector'")
        except Exception:  # SQLite built without dbstat
            return None
        value = cursor.fetchone()[0]
        return int(value) if value is not None else None


def phase_seed(args: argparse.Namespace) -> None:
    """Migrate; seed the small projects and the big one with entries, vectors and progress."""
    import numpy as np

    tmp = Path(args.tmp)
    _django(args.database_url, tmp / f"size-{args.size}" / "data")
    from django.core.management import call_command
    from django.db import connection
    from django.db.models import Max

    from memory import services
    from memory.models import MemoryEntry, RecallCursor, RecallProgress
    from memory.recall.vectors import embedder, quantise

    call_command("migrate", verbosity=0)
    texts = json.loads((tmp / "corpus.json").read_text())
    quantised = quantise(np.load(tmp / "corpus.npy"))
    model = embedder().model_id
    started = time.perf_counter()
    projects: dict[str, Any] = {"small": []}
    refs: list[tuple[int, str]] = []
    plan = [(f"small-{n}", SMALL_ENTRIES) for n in range(1, SMALL_PROJECTS + 1)]
    plan.insert(2, ("big", args.size))  # its ids between the small projects'
    for project_id, count in plan:
        project, token = services.project_create(project_id=project_id, name=project_id)
        _seed_project(project, count, random.Random(f"{args.size}-{project_id}"), texts,
                      quantised, model, refs if project_id == "big" else None)
        RecallProgress.objects.create(project=project, model=model, through_seq=count)
        record = {"id": project_id, "token": token, "entries": count}
        if project_id == "big":
            projects["big"] = record
        else:
            projects["small"].append(record)
        log(f"seeded {project_id}: {count} entries")
    RecallCursor.objects.update_or_create(
        model=model, defaults={"through_id": MemoryEntry.objects.aggregate(m=Max("id"))["m"]})
    seconds = time.perf_counter() - started
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # what autovacuum does soon after a bulk load
            cursor.execute("ANALYZE memory_memoryentry")
            cursor.execute("ANALYZE memory_entryvector")
    rng = random.Random(f"queries-{args.size}")
    queries = set_queries(rng)
    for n, (_, ref) in enumerate(rng.sample(refs, SEEDED_REF_QUERIES)):
        queries.append(ref if n % 2 == 0 else f"what was {ref} about?")
    rng.shuffle(queries)
    vector_bytes = _vector_bytes_on_disk()
    total = args.size + SMALL_PROJECTS * SMALL_ENTRIES
    (tmp / f"seed-{args.size}.json").write_text(json.dumps({"projects": projects,
                                                            "queries": queries}))
    _result(tmp, f"seed-{args.size}", {
        "entries": total, "seconds": round(seconds, 1),
        "entries_per_second": round(total / seconds),
        "vector_table_bytes_per_entry": (round(vector_bytes / total) if vector_bytes else None)})


def _breakdown(project_id: str, queries: list[str]) -> dict[str, dict[str, float]]:
    """Where a recall's time goes: the query's embedding, scoring the matrix, the keyword query."""
    from memory.models import Project
    from memory.recall import keyword, vectors
    from memory.recall.indexer import head_seq
    from memory.selectors import entry_filter

    project = Project.objects.get(pk=project_id)
    embedder = vectors.embedder()
    matrix = vectors.project_matrix(project, embedder.model_id, embedder.dimension,
                                    vectors.progress_of(project, embedder.model_id))
    head = head_seq(project)
    parts: dict[str, list[float]] = {"embed_query": [], "score_matrix": [], "keyword_rank": []}
    for q in queries:
        started = time.perf_counter()
        query = embedder.embed([q])[0]
        parts["embed_query"].append(time.perf_counter() - started)
        started = time.perf_counter()
        matrix.scores(query)
        parts["score_matrix"].append(time.perf_counter() - started)
        started = time.perf_counter()
        keyword.rank(entry_filter(project=project, current=True), project_id=project.pk,
                     text=q, limit=100, project_size=head)
        parts["keyword_rank"].append(time.perf_counter() - started)
    return {name: summary_ms(values) for name, values in parts.items()}


def phase_latency(args: argparse.Namespace) -> None:
    """The first recalls of a fresh process, then every query in every mode, --rounds times."""
    tmp = Path(args.tmp)
    _django(args.database_url, tmp / f"size-{args.size}" / "data")
    from django.test import Client

    from memory.recall import vectors

    seeded = json.loads((tmp / f"seed-{args.size}.json").read_text())
    big = seeded["projects"]["big"]
    queries: list[str] = seeded["queries"]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {big['token']}")
    url = f"/v1/projects/{big['id']}/recall"

    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}

    def ask(project_url: str, who: Client, q: str, mode: str) -> tuple[float, dict[str, Any]]:
        started, cpu_started = time.perf_counter(), time.process_time()
        response = who.get(project_url, {"q": q, "mode": mode, "limit": 10})
        seconds = time.perf_counter() - started
        cpu[mode].append(time.process_time() - cpu_started)
        if response.status_code != 200:
            raise SystemExit(f"recall {q!r} {mode}: {response.status_code} "
                             f"{response.content[:300]!r}")
        body: dict[str, Any] = response.json()
        if "degraded" in body:
            raise SystemExit(f"recall answered degraded: {body['degraded']}")
        return seconds, body

    # Django's own first request (imports, URL resolver) is not recall's cost.
    warm = client.get(f"/v1/projects/{big['id']}")
    if warm.status_code != 200:
        raise SystemExit(f"GET project: {warm.status_code}")
    first, body = ask(url, client, queries[0], "hybrid")
    index = body["index"]
    if index["through_seq"] != index["head_seq"] or index["head_seq"] != args.size:
        raise SystemExit(f"the index is not at the head: {index}")
    vectors.forget_cached()
    matrix_only, _ = ask(url, client, queries[1], "hybrid")
    for q in queries:  # warm-up round, not counted
        for mode in MODES:
            ask(url, client, q, mode)
    timings: dict[str, list[float]] = {mode: [] for mode in MODES}
    results: dict[str, int] = {mode: 0 for mode in MODES}
    cpu.update({mode: [] for mode in MODES})
    for round_ in range(args.rounds):
        for n, q in enumerate(queries):
            shift = (n + round_) % len(MODES)
            for mode in MODES[shift:] + MODES[:shift]:
                seconds, body = ask(url, client, q, mode)
                timings[mode].append(seconds)
                results[mode] += len(body["items"])
    process_cpu = {mode: summary_ms(cpu[mode]) for mode in MODES}
    parts = _breakdown(big["id"], queries)
    small = seeded["projects"]["small"][0]
    small_client = Client(HTTP_AUTHORIZATION=f"Bearer {small['token']}")
    small_url = f"/v1/projects/{small['id']}/recall"
    small_timings: dict[str, list[float]] = {mode: [] for mode in MODES}
    for q in queries:
        for mode in MODES:
            ask(small_url, small_client, q, mode)
    for q in queries:
        for mode in MODES:
            small_timings[mode].append(ask(small_url, small_client, q, mode)[0])
    _result(tmp, f"latency-{args.size}", {
        "queries": len(queries), "rounds": args.rounds,
        "first_recall_ms": round(first * 1000, 1),
        "first_recall_model_loaded_ms": round(matrix_only * 1000, 1),
        "modes": {mode: summary_ms(timings[mode]) for mode in MODES},
        # CPU time of this process per request (every thread: numpy's too), whatever the
        # machine's load; on PostgreSQL the server's share of the work is not in it.
        "process_cpu_ms": process_cpu,
        "parts_ms": parts,
        "mean_items": {mode: round(results[mode] / len(timings[mode]), 1) for mode in MODES},
        "small_project": {"entries": small["entries"],
                          "modes": {mode: summary_ms(small_timings[mode]) for mode in MODES}},
        "sample_queries": queries[:12]})


def phase_matrix(args: argparse.Namespace) -> None:
    """What the big project's cached matrix adds to a process that has the model loaded."""
    tmp = Path(args.tmp)
    _django(args.database_url, tmp / f"size-{args.size}" / "data")
    from memory.models import Project
    from memory.recall import vectors

    seeded = json.loads((tmp / f"seed-{args.size}.json").read_text())
    embedder = vectors.embedder()
    query = embedder.embed(["which release broke the upload retries?"])[0]
    project = Project.objects.get(pk=seeded["projects"]["big"]["id"])
    progress = vectors.progress_of(project, embedder.model_id)
    gc.collect()
    before = rss_mib()
    peak_ok = reset_peak()
    started = time.perf_counter()
    matrix = vectors.project_matrix(project, embedder.model_id, embedder.dimension, progress)
    load_seconds = time.perf_counter() - started
    load_peak = peak_mib()
    gc.collect()
    after = rss_mib()
    arrays = (matrix.ids.nbytes + matrix.seqs.nbytes + matrix.vectors.nbytes
              + matrix.scales.nbytes)
    reset_peak()
    base = rss_mib()
    started = time.perf_counter()
    scores = matrix.scores(query)
    score_seconds = time.perf_counter() - started
    score_peak = peak_mib() - base
    del scores
    size = matrix.size
    _result(tmp, f"matrix-{args.size}", {
        "rows": size, "load_seconds": round(load_seconds, 3),
        "rss_gain_mib": round(after - before, 1),
        "rss_gain_bytes_per_entry": round((after - before) * 2**20 / size),
        "array_bytes_per_entry": round(arrays / size),
        "load_peak_gain_mib": round(load_peak - before, 1) if peak_ok else None,
        "score_seconds": round(score_seconds, 4),
        "score_peak_gain_mib": round(score_peak, 1) if peak_ok else None})


def phase_backlog(args: argparse.Namespace) -> None:
    """A project with --backlog chained entries and no vectors, for the indexer to catch up on."""
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()  # the server's environment, as given
    from memory import services
    from memory.models import RecallProgress

    tmp = Path(args.tmp)
    project, _ = services.project_create(project_id="backlog", name="backlog")
    texts = realistic_texts(random.Random(20260302), 3000)
    from django.db import reset_queries, transaction

    from gedweb.lib.chain import GENESIS_HASH, entry_hash
    from gedweb.lib.digest import sha256_text
    from memory import checkpoints
    from memory.models import MemoryEntry

    rng = random.Random(20260303)
    base = datetime.now(UTC) - timedelta(hours=1)
    prev = GENESIS_HASH
    rows = []
    for seq in range(1, args.backlog + 1):
        text = rng.choice(texts)
        entry = MemoryEntry(project=project, seq=seq, category=text["category"],
                            content=text["content"], source=text["source"], author="bench",
                            created_at=base + timedelta(milliseconds=seq),
                            content_sha256=sha256_text(text["content"]), prev_hash=prev)
        entry.hash = prev = entry_hash(prev, entry.chained_fields())
        checkpoints.seal(entry)
        rows.append(entry)
    with transaction.atomic():
        MemoryEntry.objects.bulk_create(rows, batch_size=500)
    reset_queries()
    assert not RecallProgress.objects.exists()
    _result(tmp, "backlog", {"entries": args.backlog,
                             "mean_chars": round(sum(len(r.content) for r in rows) / len(rows))})


PHASES = {"corpus": phase_corpus, "model": phase_model, "seed": phase_seed,
          "latency": phase_latency, "matrix": phase_matrix, "backlog": phase_backlog}


# --- the conductor -------------------------------------------------------------------------


def run_phase(args: argparse.Namespace, tmp: Path, phase: str, name: str | None = None,
              env: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    """Run one phase in a new process; its result file."""
    command = [sys.executable, str(Path(__file__).resolve()), "--phase", phase,
               "--tmp", str(tmp), "--rounds", str(args.rounds),
               "--distinct", str(args.distinct), "--backlog", str(args.backlog)]
    if args.database_url:
        command += ["--database-url", args.database_url]
    for key, value in extra.items():
        command += [f"--{key.replace('_', '-')}", str(value)]
    done = subprocess.run(command, cwd=ROOT, env=env, check=False, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise SystemExit(f"phase {phase} failed with {done.returncode}")
    result: dict[str, Any] = json.loads((tmp / f"result-{name or phase}.json").read_text())
    return result


def pg_recreate(url: str, drop_only: bool = False) -> None:
    import psycopg

    parsed = urlparse(url)
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{parsed.path[1:]}" WITH (FORCE)')
        if not drop_only:
            connection.execute(f'CREATE DATABASE "{parsed.path[1:]}"')


def measure_size(args: argparse.Namespace, tmp: Path, size: int,
                 loads: dict[str, Any]) -> dict[str, Any]:
    url = args.database_url
    if url:
        pg_recreate(url)
    else:
        (tmp / f"size-{size}").mkdir()
        url = f"sqlite:///{tmp / f'size-{size}' / 'recall.sqlite3'}"
    sized = argparse.Namespace(**{**vars(args), "database_url": url})
    log(f"{size} entries: seeding")
    seed = run_phase(sized, tmp, "seed", f"seed-{size}", size=size)
    log(f"{size} entries: seeded in {seed['seconds']} s; recall latency")
    with Quiet(args, loads, f"latency-{size}"):
        latency = run_phase(sized, tmp, "latency", f"latency-{size}", size=size)
    log(f"{size} entries: matrix memory")
    with Quiet(args, loads, f"matrix-{size}", wait=False):  # memory, not time
        matrix = run_phase(sized, tmp, "matrix", f"matrix-{size}", size=size)
    return {"seed": seed, **latency, "matrix": matrix}


def _tree_bytes(path: Path) -> tuple[int, int, int]:
    """(apparent bytes, bytes allocated on disk, apparent bytes outside __pycache__) under path."""
    apparent = allocated = source = 0
    for folder, _, files in os.walk(path):
        for name in files:
            stat = os.lstat(os.path.join(folder, name))
            if not os.path.islink(os.path.join(folder, name)):
                apparent += stat.st_size
                allocated += stat.st_blocks * 512
                if "__pycache__" not in folder:
                    source += stat.st_size
    return apparent, allocated, source


def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python*/site-packages"))


def install_growth(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    old = subprocess.run(["git", "show", f"{BEFORE_RECALL}:requirements/base.txt"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    (tmp / "base-before.txt").write_text(old)
    report: dict[str, Any] = {"python": args.python}
    freezes: dict[str, set[str]] = {}
    tops: dict[str, dict[str, int]] = {}
    for label, requirements in (("before", tmp / "base-before.txt"),
                                ("now", ROOT / "requirements" / "base.txt")):
        venv = tmp / f"venv-{label}"
        started = time.perf_counter()
        subprocess.run([args.python, "-m", "venv", str(venv)], check=True)
        # As the Makefile installs a lock: complete, so without resolving
        # dependencies (today's leaves out tokenizers' huggingface-hub).
        installed = subprocess.run([str(venv / "bin" / "pip"), "install", "-q",
                                    "--require-hashes", "--no-deps", "-r", str(requirements)],
                                   capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if installed.returncode != 0:
            raise SystemExit(f"pip install -r {requirements} failed: {installed.stderr[-3000:]}")
        seconds = time.perf_counter() - started
        apparent, allocated, without_bytecode = _tree_bytes(venv)
        freeze = subprocess.run([str(venv / "bin" / "pip"), "freeze"], capture_output=True,
                                text=True, check=True).stdout.split()
        freezes[label] = {line.split("==")[0].lower() for line in freeze}
        site = _site_packages(venv)
        tops[label] = {child.name: _tree_bytes(child)[0] if child.is_dir()
                       else child.stat().st_size for child in site.iterdir()}
        report[label] = {"requirements": (f"git show {BEFORE_RECALL}:requirements/base.txt"
                                          if label == "before" else "requirements/base.txt"),
                         "seconds": round(seconds, 1), "packages": len(freeze),
                         "mb": round(apparent / 1e6, 1), "mb_on_disk": round(allocated / 1e6, 1),
                         "mb_without_bytecode": round(without_bytecode / 1e6, 1)}
        log(f"install {label}: {report[label]['mb']} MB in {seconds:.0f} s")
    report["growth_mb"] = round(report["now"]["mb"] - report["before"]["mb"], 1)
    for unit in ("mb_on_disk", "mb_without_bytecode"):
        report[f"growth_{unit}"] = round(report["now"][unit] - report["before"][unit], 1)
    report["added_packages"] = sorted(freezes["now"] - freezes["before"])
    report["removed_packages"] = sorted(freezes["before"] - freezes["now"])
    grown = {name: size - tops["before"].get(name, 0) for name, size in tops["now"].items()}
    report["largest_growth_mb"] = {name: round(size / 1e6, 1) for name, size
                                   in sorted(grown.items(), key=lambda kv: -kv[1])[:8]}
    report["torch_installed"] = any(name.startswith("torch") for name in freezes["now"])
    for label in ("before", "now"):
        shutil.rmtree(tmp / f"venv-{label}", ignore_errors=True)
    return report


def _proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _indexer_pid(session: int) -> int | None:
    """The `manage.py memory index --follow` process in the server's session (not a supervisor)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if (len(argv) > 1 and argv[1].endswith(b"manage.py") and b"index" in argv
                    and b"--follow" in argv and os.getsid(int(entry.name)) == session):
                return int(entry.name)
        except (OSError, ProcessLookupError):
            continue
    return None


def indexer_lag(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from tests.live_server import LiveGunicorn

    lag_tmp = tmp / "lag"
    lag_tmp.mkdir()
    workers = 2 * len(os.sched_getaffinity(0)) + 1  # gunicorn.conf.py's, as `make run` runs
    server = LiveGunicorn(lag_tmp, "sqlite", GEDWEB_RECALL_INDEXER="auto",
                          GEDWEB_RECALL_MODEL="minilm", GEDWEB_RATE_LIMIT="off",
                          GEDWEB_WRITE_RATE_LIMIT="off", WEB_CONCURRENCY=str(workers),
                          GUNICORN_THREADS="1")
    if args.database_url:
        server.engine = "postgresql"
        server.pg_name = urlparse(args.database_url).path[1:]
        server.database_url = args.database_url
        server.env["DATABASE_URL"] = args.database_url
        pg_recreate(args.database_url)
    migrated = server.manage("migrate", "--noinput", "-v0", timeout=300)
    if migrated.returncode != 0:
        raise SystemExit(migrated.stdout + migrated.stderr)
    run_phase(args, tmp, "backlog", env=server.env)
    report: dict[str, Any] = {
        "server": {"workers": workers, "threads": 1, "indexer": "started by gunicorn.conf.py"},
        "rate_per_second": args.rate, "seconds": args.lag_seconds, "poll_seconds": args.poll}
    model = "all-MiniLM-L6-v2-onnx-int8"
    progress_sql = ("SELECT through_seq FROM memory_recallprogress"
                    " WHERE project_id = %s AND model = %s")
    try:
        started = time.monotonic()
        server.start()
        log("lag: server up; the indexer catches up on the backlog")
        indexer = None
        samples: list[tuple[float, int]] = []
        cpu_start = None
        while True:
            if indexer is None and server.proc is not None:
                indexer = _indexer_pid(server.proc.pid)
            rows = server.sql(progress_sql, ("backlog", model))
            through = int(rows[0][0]) if rows else 0
            now = time.monotonic()
            if through and cpu_start is None and indexer is not None:
                cpu_start = _proc_cpu_seconds(indexer)
            samples.append((now, through))
            if through >= args.backlog:
                break
            if now - started > 900:
                raise SystemExit(f"the indexer reached only {through} of the backlog in 900 s")
            time.sleep(0.1)
        first = next((t, s) for t, s in samples if s > 0)
        last = samples[-1]
        backlog = {"entries": args.backlog,
                   "seconds_to_first_batch": round(first[0] - started, 2),
                   "entries_per_second": round((last[1] - first[1]) / (last[0] - first[0]), 1)}
        if indexer is not None and cpu_start is not None:
            cpu = _proc_cpu_seconds(indexer) - cpu_start
            backlog["entries_per_cpu_second"] = round((last[1] - first[1]) / cpu, 1)
        report["backlog"] = backlog
        log(f"lag: backlog indexed at {backlog['entries_per_second']} entries/s")

        token = server.new_project("recall-lag")
        texts = realistic_texts(random.Random(20260304), int(args.rate * args.lag_seconds) + 10)
        acks: dict[int, float] = {}
        append_seconds: list[float] = []
        failures: list[str] = []
        polls: list[tuple[float, int]] = []
        polling = threading.Event()
        lock = threading.Lock()
        recall_path = "/v1/projects/recall-lag/recall?q=deploy+release&mode=keyword&limit=1"

        def poll() -> None:
            while not polling.is_set():
                begun = time.monotonic()
                status, body, _ = server.request("GET", recall_path, token)
                if status == 200:
                    polls.append((time.monotonic(), int(body["index"]["through_seq"])))
                time.sleep(max(0.0, args.poll - (time.monotonic() - begun)))

        def append(text: dict[str, str]) -> None:
            begun = time.monotonic()
            status, body, _ = server.append("recall-lag", token, dict(text))
            answered = time.monotonic()
            with lock:
                if status == 201:
                    acks[int(body["seq"])] = answered
                    append_seconds.append(answered - begun)
                else:
                    failures.append(f"{status} {str(body)[:200]}")

        cpu_before = _proc_cpu_seconds(indexer) if indexer is not None else None
        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        count = int(args.rate * args.lag_seconds)
        log(f"lag: appending {count} entries at {args.rate}/s")
        with ThreadPoolExecutor(max_workers=8) as pool:
            begin = time.monotonic()
            for n in range(count):
                delay = begin + n / args.rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                pool.submit(append, texts[n])
        sent = time.monotonic() - begin
        head = max(acks) if acks else 0
        deadline = time.monotonic() + 300
        while (not polls or polls[-1][1] < head) and time.monotonic() < deadline:
            time.sleep(0.05)
        polling.set()
        poller.join(timeout=30)
        drained = time.monotonic() - begin
        cpu = (_proc_cpu_seconds(indexer) - cpu_before
               if indexer is not None and cpu_before is not None else None)
        report["indexer_rss_mib"] = (round(rss_mib(str(indexer)), 1)
                                     if indexer is not None else None)
        times = [t for t, _ in polls]
        throughs = [s for _, s in polls]
        lags, unseen = [], 0
        for seq, acked in acks.items():
            at = bisect.bisect_left(throughs, seq)
            if at == len(polls):
                unseen += 1
            else:
                lags.append(max(0.0, times[at] - acked))
        poll_gaps = [b - a for a, b in zip(times, times[1:])]
        ack_times = sorted(acks.values())
        timeline = []  # every 5 s: entries acknowledged, and the index's through_seq
        for second in range(0, int(drained) + 1, 5):
            moment = begin + second
            seen = bisect.bisect_right(times, moment)
            timeline.append([second, bisect.bisect_right(ack_times, moment),
                             throughs[seen - 1] if seen else 0])
        report.update({
            "appended": len(acks), "failed": len(failures), "failures": failures[:5],
            "achieved_rate_per_second": round(len(acks) / sent, 1),
            "append_ms": summary_ms(append_seconds) if append_seconds else None,
            "polls": len(polls),
            "poll_gap_ms_p50": round(percentile(poll_gaps, 0.5) * 1000, 1) if poll_gaps else None,
            "lag_seconds": ({"p50": round(percentile(lags, 0.5), 3),
                             "p95": round(percentile(lags, 0.95), 3),
                             "max": round(max(lags), 3), "n": len(lags)} if lags else None),
            "never_indexed": unseen,
            "seconds_until_indexed_all": round(drained, 1),
            "indexer_cpu_seconds": round(cpu, 1) if cpu is not None else None,
            "indexer_entries_per_cpu_second": (round(len(acks) / cpu, 1) if cpu else None),
            "indexer_cpu_share": round(cpu / drained, 2) if cpu is not None else None,
            "timeline_seconds_acked_indexed": timeline,
        })
    finally:
        server.stop()
        if args.database_url:
            pg_recreate(args.database_url, drop_only=True)
    return report


def misses(report: dict[str, Any]) -> list[str]:
    found = []
    for size, result in report["latency"].items():
        target = TARGET_P50_MS.get(int(size))
        for mode, timing in result["modes"].items():
            if target is not None and timing["p50"] > target:
                found.append(f"{mode} p50 {timing['p50']} ms at {size} entries > {target} ms")
    million = report["memory"].get("matrices", {}).get("1000000")
    if million and million["rss_gain_mib"] * WORKERS > TARGET_MILLION_SERVER_MIB:
        found.append(f"a million entries' matrices {million['rss_gain_mib']} MiB x {WORKERS}"
                     f" workers > {TARGET_MILLION_SERVER_MIB} MiB an app server")
    model = report["memory"].get("model")
    if model and model["gain_mib"] > TARGET_MODEL_MIB:
        found.append(f"model RSS +{model['gain_mib']} MiB > {TARGET_MODEL_MIB} MiB")
    install = report.get("install")
    if install:
        if install["growth_mb"] > TARGET_INSTALL_MB:
            found.append(f"install +{install['growth_mb']} MB > {TARGET_INSTALL_MB} MB")
        if install["torch_installed"]:
            found.append("torch is installed")
    lag = report.get("lag")
    if lag:
        if lag["lag_seconds"] is None or lag["lag_seconds"]["p95"] > TARGET_LAG_P95_S:
            found.append(f"indexer lag p95 {lag['lag_seconds']} > {TARGET_LAG_P95_S} s")
        if lag["never_indexed"]:
            found.append(f"{lag['never_indexed']} appended entries never indexed")
    return found


def print_report(report: dict[str, Any]) -> None:
    print(f"\nrecall costs on {report['engine']} (load average at start "
          f"{report['load_average']['start']})")
    print(f"{'entries':>8} {'mode':9} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'target':>7}"
          f" {'small p50':>9}")
    for size, result in report["latency"].items():
        target = TARGET_P50_MS.get(int(size))
        for mode, timing in result["modes"].items():
            small = result["small_project"]["modes"][mode]["p50"]
            print(f"{int(size):>8} {mode:9} {timing['p50']:>7} {timing['p95']:>7}"
                  f" {timing['max']:>7} {target if target else '-':>7} {small:>9}")
        print(f"{int(size):>8} first recall of a fresh process {result['first_recall_ms']} ms;"
              f" after its matrix is dropped {result['first_recall_model_loaded_ms']} ms")
        parts = result["parts_ms"]
        print(f"{int(size):>8} parts p50: query embedding {parts['embed_query']['p50']} ms,"
              f" scoring the matrix {parts['score_matrix']['p50']} ms, keyword ranking"
              f" {parts['keyword_rank']['p50']} ms")
    memory = report["memory"]
    model = memory.get("model")
    if model:
        print(f"model: +{model['gain_mib']} MiB RSS after load and one embed (target "
              f"{TARGET_MODEL_MIB}), peak +{model['peak_gain_mib']}, after 200 embeds "
              f"+{model['gain_after_200_embeds_mib']}; load {model['load_seconds']} s")
    for size, matrix in memory["matrices"].items():
        print(f"matrix {int(size):>7}: +{matrix['rss_gain_mib']} MiB RSS "
              f"({matrix['rss_gain_bytes_per_entry']} B/entry, arrays "
              f"{matrix['array_bytes_per_entry']} B/entry), load peak "
              f"+{matrix['load_peak_gain_mib']} MiB in {matrix['load_seconds']} s; one scoring "
              f"+{matrix['score_peak_gain_mib']} MiB peak, {matrix['score_seconds'] * 1000:.0f} ms")
    if memory.get("million"):
        million = memory["million"]
        print(f"a million entries: ~{million['rss_mib']} MiB RSS per process "
              f"(arrays {million['arrays_mib']} MiB), load peak ~{million['load_peak_mib']} MiB")
    install = report.get("install")
    if install:
        print(f"install: before {install['before']['mb']} MB, now {install['now']['mb']} MB, "
              f"growth {install['growth_mb']} MB (target {TARGET_INSTALL_MB}); added "
              f"{', '.join(install['added_packages'])}; torch: "
              f"{'yes' if install['torch_installed'] else 'no'}")
    lag = report.get("lag")
    if lag:
        print(f"indexer: backlog {lag['backlog']['entries_per_second']} entries/s "
              f"({lag['backlog'].get('entries_per_cpu_second')} per CPU s); lag at "
              f"{lag['achieved_rate_per_second']}/s over {lag['seconds']} s: {lag['lag_seconds']}"
              f" (target p95 {TARGET_LAG_P95_S} s); never indexed {lag['never_indexed']}")
    corpus = report.get("corpus")
    if corpus:
        print(f"embedding alone (one thread, in process): {corpus['texts_per_second']} texts/s"
              f" of {corpus['mean_chars']} characters on average")
    others = ", ".join(f"{name} {phase['others_cpus']}" for name, phase
                       in report["load_average"].items()
                       if isinstance(phase, dict) and "others_cpus" in phase)
    print(f"CPUs the rest of the machine used meanwhile: {others}")
    for miss in report["misses"]:
        print(f"MISSED: {miss}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", help="a PostgreSQL URL (its database is recreated "
                        "and dropped); default: SQLite files in a temporary directory")
    parser.add_argument("--sizes", default="10000,100000",
                        help="entries of the big project, comma-separated")
    parser.add_argument("--skip-lag", action="store_true")
    parser.add_argument("--skip-install", action="store_true")
    parser.add_argument("--write", action="store_true",
                        help="write bench/results/recall-costs-<engine>.json")
    parser.add_argument("--json", help="also write the report to this path")
    parser.add_argument("--rounds", type=int, default=2, help="measured rounds of the queries")
    parser.add_argument("--distinct", type=int, default=3000,
                        help="distinct texts embedded by the real model, reused by the entries")
    parser.add_argument("--backlog", type=int, default=1500,
                        help="entries the indexer catches up on, for its throughput")
    parser.add_argument("--rate", type=float, default=50.0, help="appends per second (lag)")
    parser.add_argument("--lag-seconds", type=float, default=60.0)
    parser.add_argument("--poll", type=float, default=0.25, help="seconds between lag polls")
    parser.add_argument("--python", default="python3.12", help="the venvs' interpreter")
    parser.add_argument("--quiet-busy", type=float, default=0.1,
                        help="before a timed phase, wait for the machine to be at most this busy")
    parser.add_argument("--quiet-wait", type=float, default=600.0,
                        help="... for at most this many seconds")
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--tmp", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        PHASES[args.phase](args)
        return
    engine = "postgresql" if args.database_url else "sqlite"
    if args.database_url and not args.database_url.startswith("postgres"):
        raise SystemExit("--database-url must be a PostgreSQL URL")
    sizes = [int(size) for size in args.sizes.split(",") if size]
    loads: dict[str, Any] = {"start": load_average()}
    report: dict[str, Any] = {
        "engine": engine,
        "command": " ".join(["bench/recall/costs.py", *sys.argv[1:]]),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "memory_gib": round(os.sysconf("SC_PAGE_SIZE")
                                        * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)},
        "targets": {"p50_ms": TARGET_P50_MS, "model_rss_mib": TARGET_MODEL_MIB,
                    "million_server_mib": TARGET_MILLION_SERVER_MIB, "workers": WORKERS,
                    "install_growth_mb": TARGET_INSTALL_MB, "lag_p95_seconds": TARGET_LAG_P95_S},
        "load_average": loads,
        "latency": {}, "memory": {"matrices": {}},
    }
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gedweb-recall-costs-") as name:
        tmp = Path(name)
        log(f"embedding {args.distinct} distinct texts with the real model")
        with Quiet(args, loads, "corpus"):
            report["corpus"] = run_phase(args, tmp, "corpus")
        log("the model's memory")
        with Quiet(args, loads, "model", wait=False):
            report["memory"]["model"] = run_phase(args, tmp, "model")
        try:
            for size in sizes:
                result = measure_size(args, tmp, size, loads)
                report["memory"]["matrices"][str(size)] = result.pop("matrix")
                report["latency"][str(size)] = result
        finally:
            if args.database_url:
                pg_recreate(args.database_url, drop_only=True)
        matrices = report["memory"]["matrices"]
        if matrices:
            largest = matrices[str(max(sizes))]
            report["memory"]["million"] = {
                "from_size": max(sizes),
                "rss_mib": round(largest["rss_gain_bytes_per_entry"] * 1e6 / 2**20),
                "arrays_mib": round(largest["array_bytes_per_entry"] * 1e6 / 2**20),
                "load_peak_mib": (round(largest["load_peak_gain_mib"] * 1e6 / max(sizes))
                                  if largest["load_peak_gain_mib"] is not None else None),
                "note": "linear in the entries; per process that recalls the project"}
        if not args.skip_install:
            log("install growth: two fresh venvs")
            loads["install"] = {"load_before": load_average()}
            report["install"] = install_growth(args, tmp)
        if not args.skip_lag:
            with Quiet(args, loads, "lag"):
                report["lag"] = indexer_lag(args, tmp)
    loads["end"] = load_average()
    report["seconds"] = round(time.monotonic() - started)
    report["misses"] = misses(report)
    print_report(report)
    if args.write:
        out = RESULTS / f"recall-costs-{engine}.json"
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {out.relative_to(ROOT)}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
