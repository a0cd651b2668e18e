"""The secret scanner's cost per append and its corpus rates (issue 22), run by `make bench`.

In process, no server: the scan is pure CPU before any lock
(memory.services._validate_entry_fields), so its cost adds to each append's
CPU time. Timed: a typical 300-byte entry, a 32,000-byte entry (the largest
an entry may be), a 200,000-character document, a 1,000,000-character work
file of prose, and the slowest hostile megabyte of
tests/security/test_secret_scan.py. Then the two corpora of
tests/security/secret_corpus.py: the false-positive rate of the realistic one
and the detection rate of the fake credentials. --write replaces or appends
the section "Secret scan" at the end of docs/performance.md.

    .venv/bin/python bench/secret_scan.py [--write]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gedweb.secretscan import Scanner  # noqa: E402
from tests.security.secret_corpus import (  # noqa: E402
    FAKES,
    KNOWN,
    REALISTIC,
    embeddings,
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
    texts = [*REALISTIC, *realistic_pages().values()]
    false_alarms = sum(1 for text in texts if scanner.scan("content", text))
    cases = [(kind, text) for kind, secret in [*FAKES, *KNOWN.items()]
             for text in embeddings(kind, secret)]
    caught = sum(1 for kind, text in cases
                 if any(f.kind == kind for f in scanner.scan("content", text)))
    return false_alarms, len(texts), caught, len(cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update docs/performance.md")
    args = parser.parse_args()
    scanner = Scanner(KNOWN)
    entry = REALISTIC[0]
    entry = (entry * 2)[:300]
    cases = [
        ("typical entry (300 bytes)", entry, 2.0),
        ("largest entry (32,000 bytes of prose)", prose(32_000), 2.0),
        ("largest document (200,000 characters)", prose(200_000), 3.0),
        ("largest work file (1,000,000 characters)", prose(1_000_000), 5.0),
        ("hostile megabyte (eyJa. x 200,000)", "eyJa." * 200_000, 5.0),
    ]
    rows = []
    for name, text, budget in cases:
        seconds = per_call(lambda text=text: scanner.scan("content", text), budget)
        rows.append((name, seconds))
    false_alarms, texts, caught, fakes = rates(scanner)
    lines = [
        SECTION, "",
        f"`bench/secret_scan.py` on {platform.python_implementation()} "
        f"{platform.python_version()}, {platform.machine()} (`make bench` runs it): the "
        "scan of one text, best of five rounds. It runs before any lock, so it adds to an "
        "append's CPU time, not to the time writers queue behind it.", "",
        "| text | scan |", "| --- | --- |",
        *(f"| {name} | {seconds * 1e3:,.3f} ms |" for name, seconds in rows), "",
        f"Corpora (tests/security/secret_corpus.py): {false_alarms} false positives in "
        f"{texts} realistic texts ({100 * false_alarms / texts:.1f}%), {caught} of {fakes} "
        f"fake credentials caught ({100 * caught / fakes:.1f}%).", "",
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


if __name__ == "__main__":
    main()
