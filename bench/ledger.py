"""What the trust ledger costs a write, in process (`make bench-ledger`).

Every insert of a trust-bearing row appends a governance.LedgerRecord in the
same transaction (governance/ledger.py: the project lock, the head query,
digest, link and HMAC, the INSERT) and queues one on_commit per transaction
that appends the new lines to <GEDWEB_MEMORY_ROOT>/<project>/LEDGER-CHECKPOINTS
under the mirror lock with fsync (governance/ledger_checkpoints.py).

    .venv/bin/python bench/ledger.py [--samples N] [--database-url postgres://...]

For each database (a temporary SQLite file always; each --database-url as
well, dropped and recreated, then dropped), a fresh database is migrated
(bench/run.py's Database and manage) and a child process of this script
times N sequential calls of each service, with a temporary mirror root and
GEDWEB_MIRROR_WRITER=inline (the default):

- memory.documents.document_put: a new ADR each call (one record);
- governance.services.evidence_append on a direct-change work item opened
  with governance.services.work_open (one governance revision and one
  evidence record: two records, one file catch-up);
- governance.skills.skill_put: a new skill each call (one record). A new
  version of an existing skill needs different content, which skill_put
  refuses (409), so each call writes version 1 of a new name.

The ledger's share is timed in the same calls: this script (never product
code) wraps governance.ledger.ledger_append and
governance.ledger_checkpoints.after_commit with time.perf_counter. The write
time is the whole service call, so the share is ledger time / call time,
median over the calls. 20 unmeasured calls of each service warm up first.

Prints a markdown table; --json PATH also writes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

WARMUP = 20


# --- child: one database, in process ----------------------------------------------------


def _child(samples: int) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gedweb.settings")
    import django

    django.setup()

    from django.db import connection
    from run import percentile

    from governance import ledger, ledger_checkpoints, services, skills
    from memory import documents
    from memory import services as memory_services

    spent = dict.fromkeys(
        ("ledger_append", "after_commit", "ledger_lock", "new_record", "insert"), 0.0)
    calls = dict.fromkeys(spent, 0)

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - started
                calls[name] += 1
        return wrapper

    # record_created and _FileSync look both names up at call time.
    ledger.ledger_append = timed("ledger_append", ledger.ledger_append)
    ledger_checkpoints.after_commit = timed("after_commit", ledger_checkpoints.after_commit)
    # Inside ledger_append: the project lock, the digest, link and HMAC of the
    # record, the INSERT (LedgerRecord.objects.create, the same manager object on
    # every access); the rest of it is mostly the head query.
    ledger.lock_project = timed("ledger_lock", ledger.lock_project)
    ledger.new_record = timed("new_record", ledger.new_record)
    manager = ledger.LedgerRecord.objects
    manager.create = timed("insert", manager.create)  # type: ignore[method-assign]
    assert ledger.LedgerRecord.objects.create is manager.create

    project, _ = memory_services.project_create(project_id="bench-ledger", name="Ledger")
    work = services.work_open(
        project=project, author="bench", summary="Fix the login button",
        minimum_mode="direct-change", ambiguity="sufficient", risk="low", clear_scope=True,
        bounded=True, reversible=True, deterministic_check=True,
    ).work

    def put_adr(i: int) -> None:
        documents.document_put(project=project, path=f"adr/{i:04d}-decision.md", author="bench",
                               content=f"# ADR {i}\n\nWe decided thing {i}.\n")

    def add_evidence(i: int) -> None:
        services.evidence_append(
            work=work, expected_revision=services.latest_revision(work).revision,
            evidence={"kind": "inspection", "source": "agent", "summary": f"check {i} observed",
                      "outcome": "observed"},
            policy="none", author="bench",
        )

    def put_skill(i: int) -> None:
        name = f"skill-{i}"
        skills.skill_put(project=project, name=name, reason="bench", source=None, author="bench",
                         content=f"---\nname: {name}\ndescription: Ships release {i}.\n---\n"
                                 f"Run the deploy script {i}.\n")

    operations = {
        "memory.documents.document_put (new ADR)": put_adr,
        "governance.services.evidence_append": add_evidence,
        "governance.skills.skill_put (new skill)": put_skill,
    }
    ms = 1000.0
    results: dict[str, Any] = {}
    counter = iter(range(1, 10**9))
    for label, operation in operations.items():
        for _ in range(WARMUP):
            operation(next(counter))
        write, appends, catch_up, share = [], [], [], []
        locks, building, inserts = [], [], []
        records = 0
        for _ in range(samples):
            before = dict(spent)
            before_calls = calls["ledger_append"]
            started = time.perf_counter()
            operation(next(counter))
            elapsed = time.perf_counter() - started
            append_s = spent["ledger_append"] - before["ledger_append"]
            file_s = spent["after_commit"] - before["after_commit"]
            records += calls["ledger_append"] - before_calls
            locks.append(spent["ledger_lock"] - before["ledger_lock"])
            building.append(spent["new_record"] - before["new_record"])
            inserts.append(spent["insert"] - before["insert"])
            write.append(elapsed)
            appends.append(append_s)
            catch_up.append(file_s)
            share.append((append_s + file_s) / elapsed)

        def stats(values: list[float], scale: float = ms) -> dict[str, float]:
            ordered = sorted(values)
            return {"p50": round(percentile(ordered, 50) * scale, 3),
                    "p95": round(percentile(ordered, 95) * scale, 3),
                    "mean": round(sum(values) / len(values) * scale, 3)}

        results[label] = {
            "write_ms": stats(write),
            "ledger_append_ms": stats(appends),
            "file_catch_up_ms": stats(catch_up),
            "ledger_append_parts_ms": {
                "project_lock": stats(locks),
                "digest_link_hmac": stats(building),
                "insert": stats(inserts),
                "head_query_and_rest": stats(
                    [a - lock - b - i
                     for a, lock, b, i in zip(appends, locks, building, inserts, strict=True)]),
            },
            "ledger_share_pct": stats(share, 100.0),
            "records_per_call": records / samples,
        }
    return {"vendor": connection.vendor, "samples": samples, "operations": results}


# --- parent: databases, table ---------------------------------------------------------------


def _measure(url: str | None, samples: int, log: Callable[[str], None]) -> dict[str, Any]:
    import run

    with tempfile.TemporaryDirectory(prefix="gedweb-bench-ledger-") as tmp_name:
        tmp = Path(tmp_name)
        db = run.Database(url, tmp)
        env = {k: v for k, v in os.environ.items()
               if k not in ("GEDWEB_MEMORY_WRITE_TOKEN", "GEDWEB_FAILPOINT", "DJANGO_SECRET_KEY")}
        env.update({
            "DJANGO_SETTINGS_MODULE": "gedweb.settings",
            "DATABASE_URL": db.url,
            "GEDWEB_MEMORY_ROOT": str(tmp / "memory"),
            "GEDWEB_DEMO_PROJECT": "false",
            "GEDWEB_PRODUCTION": "false",
            "GEDWEB_MIRROR_WRITER": "inline",
        })
        db.create()
        try:
            log(f"{db.vendor}: migrating a fresh database")
            run.manage(env, "migrate", "--noinput", "-v0")
            log(f"{db.vendor}: {samples} calls of each service (after {WARMUP} warm-up calls)")
            proc = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--child",
                 "--samples", str(samples)],
                cwd=REPO, env=env, capture_output=True, text=True, timeout=1800, check=False,
            )
            if proc.returncode != 0:
                raise run.BenchError(f"measuring failed:\n{proc.stdout[-2000:]}"
                                     f"{proc.stderr[-3000:]}")
            result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
            result["database_version"] = db.version()
            return result
        finally:
            db.drop()


def table(runs: list[dict[str, Any]]) -> str:
    names = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
    lines = [
        "| operation | database | write p50 | write p95 | ledger_append p50 "
        "| file catch-up p50 | ledger share of the write (p50) | records per call |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label in runs[0]["operations"]:
        for result in runs:
            figures = result["operations"][label]
            lines.append(
                f"| {label} | {names.get(result['vendor'], result['vendor'])} "
                f"| {figures['write_ms']['p50']:.2f} ms | {figures['write_ms']['p95']:.2f} ms "
                f"| {figures['ledger_append_ms']['p50']:.2f} ms "
                f"| {figures['file_catch_up_ms']['p50']:.2f} ms "
                f"| {figures['ledger_share_pct']['p50']:.1f} % "
                f"| {figures['records_per_call']:g} |"
            )
    lines += ["", "Inside ledger_append, p50 per call: project lock / digest, link and HMAC "
              "/ INSERT / head query and the rest"]
    for label in runs[0]["operations"]:
        for result in runs:
            parts = result["operations"][label]["ledger_append_parts_ms"]
            lines.append(f"- {label}, {names.get(result['vendor'], result['vendor'])}: "
                         + " / ".join(f"{part['p50']:.2f} ms" for part in parts.values()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300,
                        help="measured calls per service and database (default 300)")
    parser.add_argument("--database-url", action="append", default=[],
                        help="also measure on postgres://...@127.0.0.1:5432/NAME (dropped and "
                        "recreated, then dropped); repeatable; SQLite always runs")
    parser.add_argument("--no-sqlite", action="store_true", help="skip the SQLite run")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not 10 <= args.samples <= 100_000:
        parser.error("--samples must be 10..100,000")
    if args.child:
        print(json.dumps(_child(args.samples)))
        return 0

    import run

    log = lambda text: print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)  # noqa: E731
    urls: list[str | None] = ([] if args.no_sqlite else [None]) + args.database_url
    if not urls:
        parser.error("nothing to measure: --no-sqlite without --database-url")
    runs: list[dict[str, Any]] = []
    try:
        for url in urls:
            runs.append(_measure(url, args.samples, log))
    except run.BenchError as error:
        print(f"bench/ledger.py: {error}", file=sys.stderr)
        return 1
    meta = {"time": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "nproc": os.cpu_count(), "loadavg": os.getloadavg()}
    print()
    print(table(runs))
    print(f"\n{meta['time']}, {meta['nproc']} CPUs, load average "
          + " ".join(f"{value:.2f}" for value in meta["loadavg"]))
    if args.json is not None:
        args.json.write_text(json.dumps({"meta": meta, "runs": runs}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
