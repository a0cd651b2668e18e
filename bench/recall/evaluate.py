"""Recall's quality on the evaluation sets, in each mode, through GET /recall (make bench-recall).

Each set in bench/recall/sets/ (FORMAT.md says what one holds) becomes a
project of a fresh database: its entries appended in order through the
service every face uses, then indexed by the real model (the backfill of
`manage.py memory index`). Every query is then asked through
``GET /v1/projects/{id}/recall`` with ``limit=10``, in each mode, and judged:

- recall@k: the share of queries with a relevant entry among the first k;
- MRR: the mean of 1 / the rank of the first relevant entry (0 if none in 10);

per set and per query type (reworded, identifier, conversation), with each
request's latency (p50 and p95, in process). ``--weights`` sweeps the hybrid
blend's semantic weight, to choose it on every set at once, never on one.

    .venv/bin/python bench/recall/evaluate.py [--database-url postgres://...] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[2]
SETS = Path(__file__).resolve().parent / "sets"
RESULTS = ROOT / "bench" / "results"
MODES = ("hybrid", "semantic", "keyword")


def _configure(database_url: str, data_dir: Path, model: str) -> None:
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "gedweb.settings",
        "DATABASE_URL": database_url,
        "GEDWEB_DATA_DIR": str(data_dir),
        "GEDWEB_MEMORY_ROOT": str(data_dir / "memory"),
        "GEDWEB_DEMO_PROJECT": "false",
        "GEDWEB_RECALL_MODEL": model,
        "GEDWEB_RATE_LIMIT": "off",
        "GEDWEB_WRITE_RATE_LIMIT": "off",
        "DJANGO_ALLOWED_HOSTS": "testserver",
        "DJANGO_DEBUG": "false",
    })
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def _create_postgres(url: str) -> None:
    import psycopg

    parsed = urlparse(url)
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{parsed.path[1:]}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{parsed.path[1:]}"')


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _project_id(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:60]


def _seed(data: dict[str, Any]) -> tuple[Any, str, dict[str, int], float]:
    """The set's project, its token, key -> seq, and the seconds indexing took."""
    from memory import services
    from memory.recall import indexer, vectors

    project, token = services.project_create(project_id=_project_id(data["name"]),
                                             name=data["name"])
    seqs: dict[str, int] = {}
    for entry in data["entries"]:
        corrects = seqs[entry["corrects"]] if entry.get("corrects") else None
        created = services.memory_entry_create(
            project=project, author="bench", category=entry["category"],
            content=entry["content"], source=entry["source"], corrects=corrects).entry
        seqs[entry["key"]] = created.seq
    start = time.perf_counter()
    indexer.backfill(project, vectors.embedder())
    return project, token, seqs, time.perf_counter() - start


def _judge(ranked: list[int], relevant: set[int]) -> tuple[bool, bool, float]:
    first = next((rank for rank, seq in enumerate(ranked, 1) if seq in relevant), None)
    return (first is not None and first <= 5, first is not None and first <= 10,
            1.0 / first if first else 0.0)


def _score(rows: list[tuple[bool, bool, float]]) -> dict[str, float]:
    return {"queries": len(rows),
            "recall@5": round(sum(r[0] for r in rows) / len(rows), 3),
            "recall@10": round(sum(r[1] for r in rows) / len(rows), 3),
            "mrr": round(sum(r[2] for r in rows) / len(rows), 3)}


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def evaluate(sets: list[Path], modes: tuple[str, ...], weights: list[float]) -> dict[str, Any]:
    from django.test import Client

    from memory.recall import ranking

    report: dict[str, Any] = {"sets": {}, "sweep": {}}
    for path in sets:
        data = _load(path)
        project, token, seqs, indexing = _seed(data)
        client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
        url = f"/v1/projects/{project.pk}/recall"
        runs = [(mode, None) for mode in modes]
        runs += [("hybrid", weight) for weight in weights]
        per_set: dict[str, Any] = {"kind": data["kind"], "entries": len(data["entries"]),
                                   "indexing_seconds": round(indexing, 2), "modes": {}}
        for mode, weight in runs:
            if weight is not None:
                ranking.SEMANTIC_WEIGHT = weight
            by_type: dict[str, list[tuple[bool, bool, float]]] = defaultdict(list)
            latencies: list[float] = []
            for query in data["queries"]:
                start = time.perf_counter()
                response = client.get(url, {"q": query["q"], "limit": 10, "mode": mode})
                latencies.append(time.perf_counter() - start)
                if response.status_code != 200:
                    raise SystemExit(f"{path.name} {query['id']}: {response.status_code} "
                                     f"{response.content[:300]!r}")
                ranked = [item["seq"] for item in response.json()["items"]]
                relevant = {seqs[key] for key in query["relevant"]}
                by_type[query["type"]].append(_judge(ranked, relevant))
            scores = {kind: _score(rows) for kind, rows in sorted(by_type.items())}
            scores["latency_ms"] = {"p50": round(_percentile(latencies, 0.5) * 1000, 1),
                                    "p95": round(_percentile(latencies, 0.95) * 1000, 1)}
            if weight is None:
                per_set["modes"][mode] = scores
            else:
                report["sweep"].setdefault(str(weight), {})[path.stem] = scores
        ranking.SEMANTIC_WEIGHT = DEFAULT_WEIGHT
        report["sets"][path.stem] = per_set
    return report


DEFAULT_WEIGHT = 0.0  # set from memory.recall.ranking once Django is up


def _print(report: dict[str, Any]) -> None:
    print(f"{'set':28} {'mode':9} {'type':13} {'n':>4} {'R@5':>6} {'R@10':>6} {'MRR':>6}"
          f" {'p50 ms':>7}")
    for name, result in report["sets"].items():
        for mode, scores in result["modes"].items():
            latency = scores["latency_ms"]["p50"]
            for kind, score in scores.items():
                if kind == "latency_ms":
                    continue
                print(f"{name:28} {mode:9} {kind:13} {score['queries']:>4}"
                      f" {score['recall@5']:>6.3f} {score['recall@10']:>6.3f}"
                      f" {score['mrr']:>6.3f} {latency:>7.1f}")
    for weight, by_set in report["sweep"].items():
        cells = []
        for name, scores in by_set.items():
            for kind, score in scores.items():
                if kind != "latency_ms":
                    cells.append(f"{name}/{kind} R@5 {score['recall@5']:.3f}"
                                 f" R@10 {score['recall@10']:.3f} MRR {score['mrr']:.3f}")
        print(f"hybrid weight {weight}: " + "; ".join(cells))


def main() -> None:
    global DEFAULT_WEIGHT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", help="a PostgreSQL URL (its database is recreated); "
                        "default: a SQLite file in a temporary directory")
    parser.add_argument("--model", default="minilm", choices=["minilm", "hashing"])
    parser.add_argument("--sets", nargs="*", help="set files (default: every set)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--weights", default="",
                        help="comma-separated semantic weights to sweep the hybrid blend over")
    parser.add_argument("--write", action="store_true",
                        help="write bench/results/recall-<engine>.json")
    args = parser.parse_args()
    sets = [Path(p) for p in args.sets] if args.sets else sorted(SETS.glob("*.json"))
    with tempfile.TemporaryDirectory(prefix="gedweb-recall-") as tmp:
        url = args.database_url or f"sqlite:///{tmp}/recall.sqlite3"
        if url.startswith("postgres"):
            _create_postgres(url)
        _configure(url, Path(tmp) / "data", args.model)
        from django.core.management import call_command

        from memory.recall import ranking

        DEFAULT_WEIGHT = ranking.SEMANTIC_WEIGHT
        call_command("migrate", verbosity=0)
        started = time.time()
        report = evaluate(sets, tuple(m for m in args.modes.split(",") if m),
                          [float(w) for w in args.weights.split(",") if w])
        engine = "postgresql" if url.startswith("postgres") else "sqlite"
        report.update({"engine": engine, "model": args.model,
                       "semantic_weight": ranking.SEMANTIC_WEIGHT,
                       "seconds": round(time.time() - started, 1),
                       "machine": {"python": platform.python_version(),
                                   "cpus": os.cpu_count()},
                       "command": " ".join(["bench/recall/evaluate.py", *sys.argv[1:]])})
        _print(report)
        if args.write:
            out = RESULTS / f"recall-{engine}.json"
            out.write_text(json.dumps(report, indent=2) + "\n")
            print(f"wrote {out.relative_to(ROOT)}")
        if url.startswith("postgres"):
            from django.db import connections

            connections.close_all()
            _drop_postgres(url)


def _drop_postgres(url: str) -> None:
    import psycopg

    parsed = urlparse(url)
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{parsed.path[1:]}" WITH (FORCE)')


if __name__ == "__main__":
    main()
