"""The secret scanner's cost per append and its corpus rates (issues 22, 35), run by `make bench`.

In process, no server: the scan is pure CPU before any lock
(memory.services._validate_entry_fields), so its cost adds to each append's
CPU time. Timed: a typical 300-character entry (target: at most 0.1 ms), a
32,000-byte entry (the largest an entry may be), a 200,000-character
document, a 1,000,000-character work file of prose, and every hostile
megabyte of tests/security/test_secret_scan.py (target: each at most 1 s).
Then the two corpora of tests/security/secret_corpus.py: the false-positive
rate of the realistic one (and of docs/ and the shared reference) and the
detection rate of fresh credentials of every format, alone, in prose and in
code, from five seeds. --write replaces or appends the section "Secret scan"
at the end of docs/performance.md.

    .venv/bin/python bench/secret_scan.py [--write]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import random  # noqa: E402

from gedweb.secretrules import RULES, gitleaks_version  # noqa: E402
from gedweb.secretscan import Scanner  # noqa: E402
from tests.security.secret_corpus import (  # noqa: E402
    FORMATS,
    HOSTILE,
    KNOWN,
    REALISTIC,
    credentials,
    embeddings,
    realistic_corpus,
    realistic_pages,
)

SECTION = "## Secret scan"


def per_call(call: Callable[[], object], budget: float = 1.0) -> float:
    """Seconds per call: the best of five rounds, each at least ``budget`` / 5 long."""
    call()
    rounds = []
    for _ in range(5):
        count, start = 0, time.perf_counter()
        while True:
            call()
            count += 1
            elapsed = time.perf_counter() - start
            if elapsed >= budget / 5:
                break
        rounds.append(elapsed / count)
    return min(rounds)


def prose(size: int) -> str:
    page = (ROOT / "docs" / "architecture.md").read_text()
    return (page * (size // len(page) + 1))[:size]


def rates(scanner: Scanner) -> tuple[int, int, int, int]:
    texts = [*realistic_corpus(), *realistic_pages().values()]
    false_alarms = sum(1 for text in texts if scanner.scan("content", text))
    caught = cases = 0
    for seed in range(5):
        for credential in credentials(random.Random(seed)):
            for text in embeddings(credential):
                cases += 1
                start = text.index(credential.secret)
                end = start + len(credential.secret)
                caught += any(f.offset < end and start < f.offset + f.length
                              for f in scanner.scan("content", text))
    return false_alarms, len(texts), caught, cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update docs/performance.md")
    args = parser.parse_args()
    scanner = Scanner(KNOWN)
    entry = (REALISTIC[0] * 2)[:300]
    cases = [
        ("typical entry (300 characters)", entry, 2.0),
        ("entry of 300 characters with a URL, a digest and credential words", (
            "Set DATABASE_URL=postgres://app@db.internal:5432/billing; the password= comes "
            "from PGPASSFILE and the API call sends Authorization: Bearer $GEDWEB_TOKEN. "
            f"Commit {'3f2a9c1e4b5d6f7a8b9c0d1e2f3a4b5c6d7e8f90'} ran the suite: sha256 "
            f"{'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'}, "
            "see https://ci.example.org/runs/4821 ." * 2)[:300], 2.0),
        ("largest entry (32,000 bytes of prose)", prose(32_000), 2.0),
        ("largest document (200,000 characters)", prose(200_000), 3.0),
        ("largest work file (1,000,000 characters)", prose(1_000_000), 5.0),
    ]
    rows = []
    for name, text, budget in cases:
        seconds = per_call(lambda text=text: scanner.scan("content", text), budget)
        rows.append((name, seconds))
    hostile = []
    for name, text in sorted(HOSTILE.items()):
        # One call each, best of three: a megabyte scan is its own round.
        seconds = min(timed(scanner, text) for _ in range(3))
        hostile.append((f"hostile megabyte: {name}", seconds))
    worst = max(hostile, key=lambda row: row[1])
    false_alarms, texts, caught, fakes = rates(scanner)
    lines = [
        SECTION, "",
        f"`bench/secret_scan.py` on {platform.python_implementation()} "
        f"{platform.python_version()}, {platform.machine()} (`make bench` runs it; alone: "
        "`.venv/bin/python bench/secret_scan.py`): the scan of one text, best of five rounds "
        "(a hostile megabyte: best of three calls). It runs before any lock, so it adds to "
        "an append's CPU time, not to the time writers queue behind it. "
        f"{len(RULES)} rules (gitleaks {gitleaks_version().split(' ')[0]} and GedWeb's own), "
        "all on RE2. Targets (issue 35): a 300-character entry in at most 0.1 ms, a "
        "hostile megabyte in at most 1 s. Load average when it ran: "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs.", "",
        "| text | scan |", "| --- | --- |",
        *(f"| {name} | {seconds * 1e3:,.3f} ms |" for name, seconds in rows + hostile), "",
        f"Slowest hostile megabyte: {worst[0].split(': ', 1)[1]}, {worst[1] * 1e3:,.0f} ms.", "",
        f"Corpora (tests/security/secret_corpus.py): {false_alarms} false positives in "
        f"{texts} realistic texts ({100 * false_alarms / texts:.1f}%); {caught} of {fakes} "
        f"fresh credentials caught ({100 * caught / fakes:.1f}%): {len(FORMATS)} formats, "
        "five seeds, each alone, in prose and in code.", "",
    ]
    print("\n".join(lines))
    if args.write:
        path = ROOT / "docs" / "performance.md"
        text = path.read_text()
        if SECTION in text:
            head, _, rest = text.partition(SECTION)
            following = rest.find("\n## ")
            tail = rest[following + 1:] if following >= 0 else ""
            text = head + "\n".join(lines) + ("\n" + tail if tail else "")
        else:
            text = text.rstrip("\n") + "\n\n" + "\n".join(lines)
        path.write_text(text)


def timed(scanner: Scanner, text: str) -> float:
    start = time.perf_counter()
    scanner.scan("content", text)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
