"""A million entries among 10,000 projects (`make bench-million`; issue 20, target 2).

Everything runs on 127.0.0.1 with a fresh temporary database (SQLite, or a
PostgreSQL database given by --database-url that is created and dropped)
and mirror root, with gunicorn started exactly as bench/run.py starts it
(gunicorn.conf.py, gedweb.wsgi, its Server, Database, Client and CpuMeter):

1. migrate; start gunicorn; create the big project and the empty one with
   POST /v1/projects; create the other --projects - 2 through the service
   POST /v1/projects calls (bench/seed.py --projects, in process, 500 per
   transaction), then check a sample of their tokens over HTTP.
2. Seed the big project with --entries chained entries (bench/seed.py:
   bulk_create in batches, the signed checkpoints the appends would have
   taken every CHECKPOINT_EVERY entries and the CHECKPOINTS file, the
   entries quota raised and charged) and both projects with the same
   PROJECT.md, CONTEXT.md and --adrs ADRs, so the context bundle differs
   only in the memory behind it. Write the mirror with `manage.py memory
   mirror --rebuild --project`, then check the seed: GET .../memory/verify
   must report ok, every entry, the seeder's head and the newest
   checkpoint, and `manage.py memory mirror --check --project` must pass.
3. Append 20 entries holding both marker words to the empty project over
   HTTP (so that a search for either word fills an agent's page of 20 there
   too; the big project's matches are its seeded ones, spread through its
   history), then single-client latency alternating request by
   request between the empty project and the big one over one connection:
   bench/run.py's latency_suite (append, newest 100, search for the common
   and the rare marker word with the default page of up to 100, an entry
   by seq, the context bundle), then the same way token authentication
   (GET /v1/projects/{id}: the token query, which brings the project, and
   the project's JSON, nothing else) and each search as the MCP tool
   memory_search makes it (newest first, limit 20), whose answers are 20
   entries on both sides. Ratios big/empty of the p50s against the 1.3x
   target; latency_suite's searches are reported without one, since their
   answers differ in size (100 entries against a few).
4. Each of `manage.py memory mirror --check`, `manage.py memory verify`,
   `manage.py memory mirror --rebuild` (each with --project), `gedweb
   memory verify` and `gedweb memory list --all` (the installed CLI, over
   HTTP) as a subprocess, on the big project and, for the baseline of a
   process that holds nothing, on the empty one: wall time and peak RSS
   (ru_maxrss, taken by tests/peak_rss.py so that this process's own
   memory is not counted). Every output is read to its end and checked:
   the reports say ok with every entry and the head, and the listing is
   parsed as it streams and must hold seqs 1..head in order, once each.
5. Print a table; write bench/results/million-<db>.json (or --json PATH).

Run `bench/million.py --help` for the options; the exit status is non-zero
if any check fails or a target is missed.
"""

from __future__ import annotations

import argparse
import codecs
import hashlib
import json
import math
import os
import random
import re
import runpy
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import run  # noqa: E402  (bench/run.py: its server, database, client and latency phase)
from run import (  # noqa: E402
    BenchError,
    Client,
    CpuMeter,
    Database,
    Server,
    latency_suite,
    machine_info,
    ratio,
    summarize,
    write_json,
)

from gedweb.lib.chain import GENESIS_HASH  # noqa: E402
from tests.live_server import free_port  # noqa: E402
from tests.peak_rss import PeakRss  # noqa: E402

PYTHON = sys.executable
GEDWEB_CLI = Path(sys.executable).parent / "gedweb"
BIG = "million-big"
EMPTY = "million-empty"
FILLER_PREFIX = "fill"
RATIO_TARGET = 1.3
RSS_TARGET_MIB = 200.0
TOKEN_SAMPLE = 20
# Entry text plus quotas.ROW_OVERHEAD_BYTES per row is about 520 bytes;
# the big project's entries quota is raised to twice what it will hold.
QUOTA_BYTES_PER_ENTRY = 1040
LATENCY_LABELS = {
    "append": "POST memory (append)",
    "newest_100": "GET ?order=desc&limit=100",
    "agent_search_common": f"GET ?q={run.workload.COMMON_WORD}&order=desc&limit=20",
    "agent_search_rare": f"GET ?q={run.workload.RARE_WORD}&order=desc&limit=20",
    "get_by_seq": "GET memory/{seq}",
    "context": "GET context (bundle)",
    "token_auth": "GET /v1/projects/{id} (token auth)",
    "search_common": f"GET ?q={run.workload.COMMON_WORD} (page of 100)",
    "search_rare": f"GET ?q={run.workload.RARE_WORD} (page of 100)",
}
# latency_suite's searches, reported without a target: their answers differ in
# size (up to 100 entries in the big project, a few in the empty one).
UNEQUAL_ANSWERS = ("search_common", "search_rare")
COMMAND_LABELS = {
    "mirror_check": "manage.py memory mirror --check",
    "verify": "manage.py memory verify",
    "mirror_rebuild": "manage.py memory mirror --rebuild",
    "cli_verify": "gedweb memory verify",
    "cli_list_all": "gedweb memory list --all",
}
# The four commands issue 20 sets a target for; --check is timed as the seed's check.
RSS_TARGETED = ("verify", "mirror_rebuild", "cli_verify", "cli_list_all")

log = lambda text: print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)  # noqa: E731


# --- subprocesses with their peak memory ----------------------------------------------------


def measured(argv: list[str], env: dict[str, str], read: Callable[[IO[bytes]], Any],
             timeout: float) -> dict[str, Any]:
    """Run argv to its end; ``read`` consumes its whole stdout and returns what it found.

    Wall time and the peak resident set of the command itself
    (tests/peak_rss.py: forked from a small parent of its own, so this
    process's memory is not counted in it; the commands start no children).
    """
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        command = PeakRss(argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=errors)
        stdout = command.proc.stdout
        assert stdout is not None
        deadline = threading.Timer(timeout, command.kill)
        deadline.daemon = True
        deadline.start()
        try:
            found = read(stdout)
            rest = stdout.read()
            status, peak_mib = command.wait()
        except BaseException:
            command.kill()
            command.wait()
            raise
        finally:
            deadline.cancel()
            stdout.close()
        seconds = time.perf_counter() - started
        errors.seek(0)
        stderr = errors.read().decode(errors="replace")
    name = " ".join(Path(argv[0]).name if i == 0 else a for i, a in enumerate(argv[:4]))
    if status != 0:
        raise BenchError(f"{name} exited with {status}: {stderr[-1500:]}")
    if rest:
        raise BenchError(f"{name} wrote more than expected: {rest[:200]!r}")
    return {"seconds": round(seconds, 3), "peak_rss_mib": round(peak_mib, 1), "found": found}


def read_json(stream: IO[bytes]) -> Any:
    return json.loads(stream.read())


class ListingReader:
    """`gedweb memory list --all` (JSON) read as it streams: seqs 1..head, in order, once each.

    The answer is one line, {"items":[...],"next_cursor":null}, which at a
    million entries is hundreds of megabytes: each item is decoded and
    dropped as it arrives, so the bench holds one read buffer, not the list.
    """

    PREFIX = '{"items":['
    SUFFIX = '],"next_cursor":null}\n'

    def __init__(self, head: int) -> None:
        self.head = head

    def __call__(self, stream: IO[bytes]) -> dict[str, Any]:
        decoder = json.JSONDecoder()
        text = codecs.getincrementaldecoder("utf-8")()
        buffer = ""
        started = False
        expected = 1
        size = 0
        while True:
            chunk = stream.read(1 << 20)
            size += len(chunk)
            buffer += text.decode(chunk, final=not chunk)
            if not started:
                if len(buffer) < len(self.PREFIX) and chunk:
                    continue
                if not buffer.startswith(self.PREFIX):
                    raise BenchError(f"list --all does not start as a listing: {buffer[:80]!r}")
                buffer, started = buffer[len(self.PREFIX):], True
            position = 0
            while position < len(buffer) and buffer[position] != "]":
                if expected > 1:
                    if buffer[position] != ",":
                        raise BenchError(f"list --all: no comma after seq {expected - 1}")
                    if position + 1 == len(buffer):
                        break
                    start = position + 1
                else:
                    start = position
                try:
                    item, end = decoder.raw_decode(buffer, start)
                except json.JSONDecodeError:
                    if not chunk:
                        raise BenchError(f"list --all: cut off after seq {expected - 1}") from None
                    break  # the item continues in the next chunk
                if item.get("seq") != expected:
                    raise BenchError(f"list --all: seq {item.get('seq')} where {expected} belongs")
                expected += 1
                position = end
            buffer = buffer[position:]
            if not chunk:
                break
        if buffer != self.SUFFIX:
            raise BenchError(f"list --all does not end as a listing: {buffer[:80]!r}")
        if expected - 1 != self.head:
            raise BenchError(f"list --all: {expected - 1} entries, the project has {self.head}")
        return {"entries": expected - 1, "bytes": size}


# --- phases ------------------------------------------------------------------------------------


def create_projects(env: dict[str, str], port: int, tmp: Path, admin_token: str,
                    count: int, results: dict[str, Any]) -> dict[str, str]:
    """The two measured projects over HTTP, the rest through the service; tokens checked."""
    admin = Client(port, admin_token)
    tokens: dict[str, str] = {}
    try:
        for project in (BIG, EMPTY):
            body = admin.json("POST", "/v1/projects", {"id": project, "name": project},
                              expect=201)
            tokens[project] = body["token"]
    finally:
        admin.close()
    fillers = count - 2
    info: dict[str, Any] = {"total": count, "over_http": 2, "through_the_service": fillers}
    if fillers:
        log(f"creating {fillers:,} more projects through memory.services.project_create "
            "(bench/seed.py --projects)")
        tokens_file = tmp / "filler-tokens.json"
        started = time.perf_counter()
        out = seed(env, "--projects", str(fillers), "--prefix", FILLER_PREFIX,
                   "--tokens-file", str(tokens_file))
        info["seconds"] = round(time.perf_counter() - started, 3)
        info["service_seconds"] = out["seconds"]
        filler_tokens: dict[str, str] = json.loads(tokens_file.read_text())
        if len(filler_tokens) != fillers:
            raise BenchError(f"seed.py created {len(filler_tokens)} projects, not {fillers}")
        # Their tokens work over HTTP, and only for their own project.
        rng = random.Random(20)
        sample = rng.sample(sorted(filler_tokens), min(TOKEN_SAMPLE, fillers))
        for project in sample:
            client = Client(port, filler_tokens[project])
            try:
                body = client.json("GET", f"/v1/projects/{project}")
                if body["id"] != project:
                    raise BenchError(f"the token of {project} answered for {body['id']}")
                client.json("GET", f"/v1/projects/{BIG}", expect=404)
            finally:
                client.close()
        info["tokens_checked_over_http"] = len(sample)
        log(f"  {fillers:,} projects in {info['seconds']:.1f} s; "
            f"{len(sample)} of their tokens checked over HTTP")
    results["projects"] = info
    return tokens


def seed(env: dict[str, str], *args: str, timeout: float = 7200) -> dict[str, Any]:
    proc = subprocess.run([PYTHON, str(HERE / "seed.py"), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise BenchError(f"seed.py {' '.join(args[:4])} failed:\n"
                         f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def seed_big(env: dict[str, str], entries: int, adrs: int, results: dict[str, Any],
             ) -> dict[str, Any]:
    quota_mib = max(256, math.ceil(entries * QUOTA_BYTES_PER_ENTRY / (1 << 20)))
    log(f"seeding {entries:,} entries into {BIG} (bench/seed.py: bulk_create, checkpoints, "
        f"entries quota {quota_mib:,} MiB) and {adrs} ADRs into both projects")
    started = time.perf_counter()
    info = seed(env, "--project", BIG, "--count", str(entries), "--checkpoints",
                "--quota-mib", str(quota_mib), "--adrs", str(adrs))
    info["subprocess_seconds"] = round(time.perf_counter() - started, 3)
    info["entries_per_s"] = round(entries / info["insert_seconds"], 1)
    info["quota_mib"] = quota_mib
    every = info["checkpoint_every"]
    if info["checkpoints"] != entries // every:
        problem(results, f"seeded {info['checkpoints']} checkpoints, not {entries // every}")
    if adrs:
        seed(env, "--project", EMPTY, "--adrs", str(adrs))
    results["seed"] = info
    log(f"  inserted in {info['insert_seconds']:.1f} s ({info['entries_per_s']:,.0f} "
        f"entries/s), {info['checkpoints']:,} checkpoints")
    return info


def check_seed(env: dict[str, str], port: int, tokens: dict[str, str], info: dict[str, Any],
               memory_root: Path, results: dict[str, Any]) -> None:
    entries, every = info["entries"], info["checkpoint_every"]
    log(f"writing the mirror of {BIG} (manage.py memory mirror --rebuild --project)")
    rebuild = measured(manage_argv("mirror", "--rebuild", "--project", BIG), env, read_json,
                       timeout=3600)
    mirror = memory_root / BIG / "MEMORY.md"
    info["mirror"] = {"rebuild_seconds": rebuild["seconds"],
                      "rebuild_peak_rss_mib": rebuild["peak_rss_mib"],
                      "bytes": mirror.stat().st_size}
    log(f"  {info['mirror']['bytes']:,} bytes in {rebuild['seconds']:.1f} s; verifying the "
        "chain and its checkpoints over HTTP")
    report, seconds = run.verify(port, tokens[BIG], BIG)
    newest = entries - entries % every
    checkpoint = report.get("checkpoint") or {}
    info["verify_http"] = {"seconds": round(seconds, 3), "ok": report["ok"],
                           "entries": report["entries"], "checkpoint_seq": checkpoint.get("seq"),
                           "problems": report.get("problems")}
    if (not report["ok"] or report["entries"] != entries or report["head"] != info["head"]
            or report.get("problems") or (newest and checkpoint.get("seq") != newest)):
        problem(results, f"the seeded chain does not verify as seeded: {info['verify_http']}")
    log(f"  ok={report['ok']} entries={report['entries']:,} checkpoint at seq "
        f"{checkpoint.get('seq')} in {seconds:.1f} s; checking the mirror byte for byte")
    check = measured(manage_argv("mirror", "--check", "--project", BIG), env, read_json,
                     timeout=3600)
    info["mirror"]["check_seconds"] = check["seconds"]
    if check["found"].get("drifted") != []:
        problem(results, f"the seeded mirror drifted: {check['found']}")


AGENT_SEARCH_LIMIT = 20  # what the MCP tool memory_search asks for, newest first


def _agent_search(word: str) -> tuple[Callable[[str], str], Callable[[str, Any], bool]]:
    def path(project: str) -> str:
        return f"/v1/projects/{project}/memory?q={word}&order=desc&limit={AGENT_SEARCH_LIMIT}"

    def answered(project: str, body: Any) -> bool:
        seqs = [item["seq"] for item in body["items"]]
        return (len(seqs) == AGENT_SEARCH_LIMIT and seqs == sorted(seqs, reverse=True)
                and all(word in item["content"].lower() for item in body["items"]))

    return path, answered


# Reads measured beside latency_suite's, alternating the same way: token
# authentication on its cheapest route (the token query, which brings the
# project, and the project's JSON), and a search as an agent makes it, whose
# answer is 20 entries on both sides, so the ratio is the search's own cost
# and not the size of the answer (latency_suite's searches answer a page of
# up to 100 entries: 100 in the big project, a few in the empty one).
EXTRA_READS: dict[str, tuple[Callable[[str], str], Callable[[str, Any], bool]]] = {
    "token_auth": (lambda project: f"/v1/projects/{project}",
                   lambda project, body: body["id"] == project),
    "agent_search_common": _agent_search(run.workload.COMMON_WORD),
    "agent_search_rare": _agent_search(run.workload.RARE_WORD),
}


def alternating_reads(port: int, targets: list[tuple[str, str]], samples: int,
                      ) -> dict[str, dict[str, dict[str, Any]]]:
    """EXTRA_READS on each project, request by request over one connection, as latency_suite."""
    client = Client(port, targets[0][1])
    latencies: dict[str, dict[str, list[float]]] = {project: {} for project, _ in targets}
    try:
        for op, (path_of, answered) in EXTRA_READS.items():
            for index in range(samples):
                for project, token in (targets if index % 2 == 0 else targets[::-1]):
                    path = path_of(project)
                    status, payload, elapsed = client.request(
                        "GET", path, headers={"Authorization": f"Bearer {token}"})
                    if status != 200 or not answered(project, json.loads(payload)):
                        raise BenchError(f"GET {path} -> {status}: {payload[:300]!r}")
                    latencies[project].setdefault(op, []).append(elapsed)
    finally:
        client.close()
    return {project: {op: summarize(values) for op, values in ops.items()}
            for project, ops in latencies.items()}


def append_marker_entries(port: int, tokens: dict[str, str]) -> None:
    """AGENT_SEARCH_LIMIT entries holding both marker words in the empty project, over HTTP.

    So that an agent's search for either word fills its page there too. The
    big project gets none: its matches are the seeded ones, spread through
    its history (one in ten, one in a thousand), so its newest 20 are as far
    back as a real project's; entries of both words at its head would be
    found in its last few rows.
    """
    rng = random.Random(21)
    client = Client(port, tokens[EMPTY])
    try:
        for _ in range(AGENT_SEARCH_LIMIT):
            body = {"category": "note", "source": run.workload.SOURCE,
                    "content": run.workload.content_for(rng, common=True, rare=True)}
            client.json("POST", f"/v1/projects/{EMPTY}/memory", body, expect=201)
    finally:
        client.close()


def warm_up(port: int, tokens: dict[str, str], workers: int) -> None:
    """A few reads per worker on both projects: first requests compile and import."""
    for _ in range(workers):
        for project in (EMPTY, BIG):
            client = Client(port, tokens[project])
            try:
                for _ in range(5):
                    client.json("GET", f"/v1/projects/{project}/memory?order=desc&limit=100")
                    client.json("GET", f"/v1/projects/{project}")
            finally:
                client.close()


def measure_latency(port: int, tokens: dict[str, str], samples: int, meter: CpuMeter,
                    results: dict[str, Any]) -> None:
    targets = [(EMPTY, tokens[EMPTY]), (BIG, tokens[BIG])]
    log(f"single-client latency, alternating request by request between {EMPTY} and {BIG} "
        f"over one connection ({samples} samples each)")
    pair, results["cpu"] = latency_suite(port, targets, samples, 300.0, seed=4, meter=meter)
    for project, stats in alternating_reads(port, targets, samples).items():
        pair[project].update(stats)
    results["latency"] = {"empty": pair[EMPTY], "big": pair[BIG]}
    ratios: dict[str, Any] = {}
    for op in LATENCY_LABELS:
        big, empty = pair[BIG][op].get("p50_ms"), pair[EMPTY][op].get("p50_ms")
        value = ratio(big, empty)
        ratios[op] = {"empty_p50_ms": empty, "big_p50_ms": big, "ratio_p50": value,
                      "ratio_p99": ratio(pair[BIG][op].get("p99_ms"),
                                         pair[EMPTY][op].get("p99_ms"))}
        if op not in UNEQUAL_ANSWERS:
            ratios[op]["met"] = value is not None and value <= RATIO_TARGET
    results["ratios"] = ratios
    missed = [op for op, row in ratios.items() if row.get("met") is False]
    if missed:
        problem(results, f"p50 over {RATIO_TARGET}x of the empty project: "
                + ", ".join(f"{op} {ratios[op]['ratio_p50']}" for op in missed))


def head_of(port: int, token: str, project: str) -> tuple[int, str]:
    client = Client(port, token)
    try:
        items = client.json("GET", f"/v1/projects/{project}/memory?order=desc&limit=1")["items"]
    finally:
        client.close()
    return (items[0]["seq"], items[0]["hash"]) if items else (0, GENESIS_HASH)


def manage_argv(*args: str) -> list[str]:
    return [PYTHON, "manage.py", "memory", *args]


def measure_commands(env: dict[str, str], port: int, tokens: dict[str, str],
                     memory_root: Path, results: dict[str, Any]) -> None:
    commands: dict[str, Any] = {}
    results["commands"] = commands
    for project in (BIG, EMPTY):
        head, head_hash = head_of(port, tokens[project], project)
        cli_env = {k: v for k, v in env.items() if not k.startswith("GEDWEB_")}
        cli_env.update({"GEDWEB_URL": f"http://127.0.0.1:{port}", "GEDWEB_TOKEN": tokens[project],
                        "PYTHONPATH": str(REPO)})
        cli = [str(GEDWEB_CLI)]
        runs: dict[str, tuple[list[str], dict[str, str], Callable[[IO[bytes]], Any]]] = {
            "mirror_check": (manage_argv("mirror", "--check", "--project", project), env,
                             read_json),
            "verify": (manage_argv("verify", "--project", project), env, read_json),
            "mirror_rebuild": (manage_argv("mirror", "--rebuild", "--project", project), env,
                               read_json),
            "cli_verify": ([*cli, "memory", "verify", "--project", project, "--timeout", "300"],
                           cli_env, read_json),
            "cli_list_all": ([*cli, "memory", "list", "--all", "--project", project,
                              "--timeout", "300"], cli_env, ListingReader(head)),
        }
        side = "big" if project == BIG else "empty"
        for name, (argv, run_env, reader) in runs.items():
            log(f"{COMMAND_LABELS[name]} on {project} ({head:,} entries)")
            before = mirror_digest(memory_root, project) if name == "mirror_rebuild" else None
            outcome = measured(argv, run_env, reader, timeout=3600)
            found = outcome.pop("found")
            outcome["entries"] = head
            check_command(name, found, head, head_hash, project, results)
            if before is not None and mirror_digest(memory_root, project) != before:
                problem(results, f"the rebuild of {project}'s mirror changed its bytes")
            commands.setdefault(name, {})[side] = outcome
            log(f"  {outcome['seconds']:.1f} s, peak RSS {outcome['peak_rss_mib']:.1f} MiB")
    for name in RSS_TARGETED:
        row = commands[name]
        row["met"] = row["big"]["peak_rss_mib"] < RSS_TARGET_MIB
        row["growth_mib"] = round(row["big"]["peak_rss_mib"] - row["empty"]["peak_rss_mib"], 1)
        if not row["met"]:
            problem(results, f"{COMMAND_LABELS[name]}: peak RSS {row['big']['peak_rss_mib']} MiB"
                    f" over {RSS_TARGET_MIB:g}")


def check_command(name: str, found: Any, head: int, head_hash: str, project: str,
                  results: dict[str, Any]) -> None:
    """What each command must have answered about a project of ``head`` entries."""
    if name == "mirror_check":
        ok = found == {"checked": 1, "drifted": []}
    elif name == "mirror_rebuild":
        ok = found == {"rebuilt": [project]}
    elif name == "cli_list_all":
        ok = found["entries"] == head
    else:  # both verify reports
        ok = (found.get("ok") is True and found.get("entries") == head
              and found.get("head") == head_hash and not found.get("problems"))
        if name == "verify":  # it records the head it verified as a checkpoint
            ok = ok and (found.get("checkpoint") or {}).get("seq") == head
    if not ok:
        problem(results, f"{COMMAND_LABELS[name]} on {project}: unexpected answer "
                f"{json.dumps(found)[:400]}")


def mirror_digest(memory_root: Path, project: str) -> str:
    digest = hashlib.sha256()
    with open(memory_root / project / "MEMORY.md", "rb") as mirror:
        while block := mirror.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def problem(results: dict[str, Any], text: str) -> None:
    log(f"  PROBLEM: {text}")
    results["problems"].append(text)


# --- report ------------------------------------------------------------------------------------


def _num(value: Any, width: int, digits: int = 2) -> str:
    if isinstance(value, (int, float)):
        return f"{value:>{width},.{digits}f}"
    return f"{'-':>{width}}"


def print_report(results: dict[str, Any]) -> None:
    meta = results.get("meta", {})
    args = results["args"]
    out = print
    out("")
    out(f"GedWeb, a million entries: {meta.get('database')} {meta.get('database_version')}, "
        f"{args['entries']:,} entries in {BIG} among {args['projects']:,} projects, "
        f"{meta.get('nproc')} CPU ({meta.get('cpu_model', '?')})")
    seed_info = results.get("seed")
    if seed_info:
        projects = results.get("projects", {})
        out(f"projects: {projects.get('total', 0):,} ({projects.get('through_the_service', 0):,} "
            f"through the service in {projects.get('seconds', 0):.1f} s, "
            f"{projects.get('tokens_checked_over_http', 0)} tokens checked over HTTP)")
        out(f"seeding: {seed_info['insert_seconds']:.1f} s ({seed_info['entries_per_s']:,.0f} "
            f"entries/s), {seed_info['checkpoints']:,} checkpoints")
        mirror = seed_info.get("mirror", {})
        verify = seed_info.get("verify_http", {})
        out(f"mirror: {mirror.get('bytes', 0):,} bytes, rebuilt in "
            f"{mirror.get('rebuild_seconds', 0):.1f} s, checked in "
            f"{mirror.get('check_seconds', 0):.1f} s; GET .../memory/verify "
            f"ok={verify.get('ok')} in {verify.get('seconds', 0):.1f} s, checkpoint at seq "
            f"{verify.get('checkpoint_seq')}")
    ratios = results.get("ratios")
    if ratios:
        out("")
        out(f"{'single client, alternating, ms':44} {'empty p50':>10} {'big p50':>10} "
            f"{'ratio':>6} {'p99 ratio':>9}  target {RATIO_TARGET}x")
        for op, label in LATENCY_LABELS.items():
            row = ratios[op]
            verdict = {True: "met", False: "MISSED"}.get(row.get("met"), "(answers differ)")
            out(f"{label:44} {_num(row['empty_p50_ms'], 10)} {_num(row['big_p50_ms'], 10)} "
                f"{_num(row['ratio_p50'], 6)} {_num(row['ratio_p99'], 9)}  {verdict}")
    commands = results.get("commands")
    if commands:
        out("")
        out(f"{'command':36} {'big s':>8} {'big MiB':>8} {'empty s':>8} {'empty MiB':>9}  "
            f"target < {RSS_TARGET_MIB:g} MiB")
        for name, label in COMMAND_LABELS.items():
            row = commands.get(name)
            if not row or "big" not in row or "empty" not in row:
                continue
            verdict = ("met" if row["met"] else "MISSED") if "met" in row else "(not a target)"
            out(f"{label:36} {_num(row['big']['seconds'], 8, 1)} "
                f"{_num(row['big']['peak_rss_mib'], 8, 1)} {_num(row['empty']['seconds'], 8, 1)} "
                f"{_num(row['empty']['peak_rss_mib'], 9, 1)}  {verdict}")
    status = "OK" if not results["problems"] else "FAILED: " + "; ".join(results["problems"])
    out(f"result: {status}")


# --- main --------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/million.py",
                                     description="A million entries among 10,000 projects "
                                     "(see module doc).")
    parser.add_argument("--entries", type=int, default=1_000_000,
                        help="entries in the big project (default 1000000, at least 20000)")
    parser.add_argument("--projects", type=int, default=10_000,
                        help="projects in all, the big and the empty one included "
                        "(default 10000)")
    parser.add_argument("--adrs", type=int, default=200,
                        help="ADRs in both measured projects, for the context bundle "
                        "(default 200)")
    parser.add_argument("--samples", type=int, default=300,
                        help="requests per latency figure and project (default 300)")
    parser.add_argument("--database-url", default=None,
                        help="postgres://...@127.0.0.1:5432/NAME (e.g. gedweb_million); NAME is "
                        "dropped and recreated, and dropped at the end")
    parser.add_argument("--json", type=Path, default=None,
                        help="results file (default bench/results/million-<db>.json)")
    parser.add_argument("--keep-tmp", action="store_true",
                        help="keep the temporary directory (database, mirrors, server log)")
    parser.add_argument("--keep-db", action="store_true",
                        help="do not drop the PostgreSQL database at the end")
    args = parser.parse_args(argv)
    # The big project's rare-word page of 20 comes from its seeded matches.
    fewest = AGENT_SEARCH_LIMIT * run.workload.RARE_EVERY
    if not fewest <= args.entries <= 5_000_000:
        parser.error(f"--entries must be {fewest:,}..5,000,000 (an agent's page of "
                     f"{AGENT_SEARCH_LIMIT} needs that many for the rare word)")
    if not 2 <= args.projects <= 100_000:
        parser.error("--projects must be 2..100,000")
    if not 0 <= args.adrs <= 1_000:
        parser.error("--adrs must be 0..1,000")
    if not 100 <= args.samples <= 100_000:
        parser.error("--samples must be 100..100,000 (newest-100 needs 100 entries)")
    return args


def server_env(db: Database, tmp: Path, port: int, admin_token: str) -> dict[str, str]:
    """bench/run.py's environment: development settings, limits past any load, no access log."""
    # The server's metrics files and the installation's keys in the run's own
    # directory, never those of a developer's `make run` in ./.data.
    (tmp / "prometheus").mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("GEDWEB_MEMORY_WRITE_TOKEN", "GEDWEB_FAILPOINT", "DJANGO_SECRET_KEY")}
    env.update({
        "DJANGO_SETTINGS_MODULE": "gedweb.settings",
        "DATABASE_URL": db.url,
        "GEDWEB_DATA_DIR": str(tmp / "data"),
        "GEDWEB_MEMORY_ROOT": str(tmp / "bridge-memory"),
        "GEDWEB_ADMIN_TOKEN": admin_token,
        "GEDWEB_DEMO_PROJECT": "false",
        "GEDWEB_PRODUCTION": "false",
        "GEDWEB_MIRROR_WRITER": "inline",
        "GEDWEB_RATE_LIMIT": os.environ.get("GEDWEB_RATE_LIMIT", run.BENCH_RATE),
        "GEDWEB_WRITE_RATE_LIMIT": os.environ.get("GEDWEB_WRITE_RATE_LIMIT", run.BENCH_RATE),
        "GUNICORN_ACCESS_LOG": "",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "PROMETHEUS_MULTIPROC_DIR": str(tmp / "prometheus"),
    })
    return env


def bench(args: argparse.Namespace, tmp: Path, results: dict[str, Any]) -> None:
    db = Database(args.database_url, tmp)
    results["meta"] = {"database": db.vendor}
    port = free_port()
    admin_token = secrets.token_urlsafe(32)
    env = server_env(db, tmp, port, admin_token)
    memory_root = Path(env["GEDWEB_MEMORY_ROOT"])
    gunicorn_config = runpy.run_path(str(REPO / "gunicorn.conf.py"))
    results["meta"] = machine_info(db)
    results["meta"]["server"] = {
        "command": "gunicorn --config gunicorn.conf.py --control-socket <tmp> gedweb.wsgi",
        "workers": gunicorn_config["workers"], "threads": gunicorn_config["threads"],
        "mirror_writer": "inline", "access_log": "off",
    }
    db.create()
    server = Server(env, port, tmp / "gunicorn.log")
    try:
        log(f"{db.vendor}: migrating a fresh database")
        _, results["meta"]["migrate_seconds"] = run.manage(env, "migrate", "--noinput", "-v0")
        log(f"starting gunicorn on 127.0.0.1:{port}")
        server.start()
        tokens = create_projects(env, port, tmp, admin_token, args.projects, results)
        info = seed_big(env, args.entries, args.adrs, results)
        check_seed(env, port, tokens, info, memory_root, results)
        append_marker_entries(port, tokens)
        warm_up(port, tokens, gunicorn_config["workers"])
        measure_latency(port, tokens, args.samples, CpuMeter(server, db), results)
        measure_commands(env, port, tokens, memory_root, results)
    finally:
        server.stop()
        results["meta"]["server_log_tail"] = server.log_lines(10)
        if not args.keep_db:
            db.drop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "targets": {"latency_ratio_p50": RATIO_TARGET, "peak_rss_mib": RSS_TARGET_MIB},
        "problems": [],
    }
    if args.database_url:
        results["args"]["database_url"] = re.sub(r"//([^:@/]*):[^@/]*@", r"//\1:***@",
                                                 args.database_url)
    started = time.perf_counter()
    failed = run.run_guarded(lambda tmp: bench(args, tmp, results), results,
                             keep_tmp=args.keep_tmp, tmp_prefix="gedweb-million-")
    results["wall_seconds"] = round(time.perf_counter() - started, 1)
    print_report(results)
    db_name = results.get("meta", {}).get("database", "sqlite")
    out_path = args.json or HERE / "results" / f"million-{db_name}.json"
    write_json(out_path, results)
    print(f"results written to {out_path} (run took {results['wall_seconds'] / 60:.1f} min)")
    return 1 if failed or results["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
