"""Worst-case time of the text rules, old pattern against new code (issue 15 §1).

For each rule rewritten to run in linear time, the input that made its old
pattern backtrack is timed at 10,000 and 1,000,000 characters: the new code
in this process, the old pattern (kept below as a string literal, for
reference only) in a child process killed after --limit seconds, reported
as "> LIMIT s". The table is printed; --write replaces or appends the
section "Text rules: worst cases" at the end of docs/performance.md.

    .venv/bin/python bench/text_rules.py [--limit 20] [--write]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gedweb.lib import mirror, skills, substantive  # noqa: E402

SIZES = (10_000, 1_000_000)
SECTION = "## Text rules: worst cases"
UUID = "0f8e2c3a-1b2c-4d5e-8f90-a1b2c3d4e5f6"

# The old patterns, for reference only: this script is their one remaining user.
OLD_HEADING = r"#{1,6}(?:{S}+{DOT}*)?"  # gedweb/lib/substantive.py, fullmatch per trimmed line
OLD_DESCRIPTION = r"^description:[ \t]*(.*?)[ \t]*$"  # gedweb/lib/skills.py, re.MULTILINE
OLD_TRAILER = (  # gedweb/lib/mirror.py, match from the start of the last line
    r"_Source: .* \| Author: .* \| Entry: (?P<id>[0-9a-f-]{36})"
    r" \| Corrects: (?:[0-9a-f-]{36}|-) \| Hash: (?P<hash>[0-9a-f]{64})_\n\Z"
)


def _old_is_substantive(text: str) -> bool:
    pattern = OLD_HEADING.replace("{S}", substantive._S).replace("{DOT}", substantive._DOT)
    heading = re.compile(pattern)
    rules = (heading, *substantive._SCAFFOLDING[1:])
    for raw_line in text.split("\n"):
        line = substantive.js_trim(raw_line)
        if line and not any(rule.fullmatch(line) for rule in rules):
            return True
    return False


def _old_description(content: str) -> str | None:
    block = skills.front_matter(content)
    match = None if block is None else re.compile(OLD_DESCRIPTION, re.MULTILINE).search(block)
    return None if match is None else skills._unquote(match.group(1).strip())


def _old_last_trailer(tail: str) -> tuple[str, str] | None:
    match = re.compile(OLD_TRAILER).match(tail, tail.rfind("\n", 0, len(tail) - 1) + 1)
    return None if match is None else (match["id"], match["hash"])


# name: (where, worst case for n characters, old code, new code)
RULES: dict[str, tuple[str, Callable[[int], str], Callable[[str], Any], Callable[[str], Any]]] = {
    "heading": (
        "substantive.py, context bundle",
        lambda n: "# " + " " * n + "a\rb",
        _old_is_substantive,
        substantive.is_substantive,
    ),
    "description": (
        "skills.py, PUT /skills and every list",
        lambda n: "---\ndescription: " + " \t" * (n // 4) + "x" + " \t" * (n // 4) + "y\n---\n",
        _old_description,
        skills.description,
    ),
    "trailer": (
        "mirror.py, the mirror's tail check",
        lambda n: "_Source: " + " | Author:  | Entry: " * (n // 21) + "_\n",
        _old_last_trailer,
        mirror.parse_last_trailer,
    ),
}


def _seconds(code: Callable[[str], Any], text: str) -> tuple[float, Any]:
    start = time.perf_counter()
    result = code(text)
    return time.perf_counter() - start, result


def _old_in_child(name: str, size: int, limit: float) -> float | None:
    """Seconds the old pattern took in a child process, or None past the limit."""
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--old", name, str(size)],
            capture_output=True, text=True, timeout=limit, check=True,
        )
    except subprocess.TimeoutExpired:
        return None
    return float(done.stdout.split()[0])


def _format(seconds: float | None, limit: float) -> str:
    if seconds is None:
        return f"> {limit:g} s"
    if seconds < 0.001:
        return f"{seconds * 1_000_000:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds:.1f} s"


def measure(limit: float) -> list[list[str]]:
    rows = []
    for name, (where, make, old, new) in RULES.items():
        for size in SIZES:
            text = make(size)
            new_time, new_result = min(_seconds(new, text) for _ in range(3))
            if size <= SIZES[0]:
                assert old(text) == new_result, name  # same answer where the old one finishes
            old_time = _old_in_child(name, size, limit)
            rows.append([name, where, f"{len(text):,}", _format(old_time, limit),
                         _format(new_time, limit)])
            print(" | ".join(rows[-1]), flush=True)
    return rows


def table(rows: list[list[str]]) -> str:
    lines = ["| rule | where | characters | old pattern | new code |",
             "| --- | --- | ---: | ---: | ---: |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def section(rows: list[list[str]], limit: float) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"""{SECTION}

`bench/text_rules.py --write` ({stamp}, Python {platform.python_version()},
{os.cpu_count()} CPUs shared with other work). Each rule gets the input that
made its old pattern backtrack: for `heading`, a TASKS.md line `"# "`,
spaces, `"a\\rb"`; for `description`, a `description:` line of spaces and
tabs around two words; for `trailer`, a last mirror line repeating
`" | Author:  | Entry: "`. The old pattern runs in a child process killed
after {limit:g} s; the new code is the best of three runs. At 10,000
characters both give the same answer (the script checks it), and
tests/lib/test_linear_text.py runs each worst case at 1,000,000 characters
under a 10 s timeout and compares old and new answers on generated inputs.

{table(rows)}

The mirror's tail check reads at most the last 4,096 bytes of MEMORY.md
(`memory/mirror.py`), so the old trailer pattern cost at most a few
milliseconds there; the rewrite makes the library function safe for any
input. The other patterns of gedweb/lib, the markdown filter and the
validators were timed on their worst cases too and were already linear;
the test file keeps the table separator, placeholder bullet, front matter,
trigger words and backtick runs among its cases. STANDARDS.md frames in
ged_import (governance/gedpi_import.py) and Ferryman's MEMORY.md parser
(memory/ferryman.py) are outside this table.
"""


def write(text: str) -> None:
    path = ROOT / "docs" / "performance.md"
    current = path.read_text(encoding="utf-8")
    if SECTION in current:
        start = current.index(SECTION)
        following = current.find("\n## ", start + len(SECTION))
        rest = "" if following < 0 else current[following + 1:]
        current = current[:start].rstrip("\n") + "\n\n" + text + ("\n" + rest if rest else "")
    else:
        current = current.rstrip("\n") + "\n\n" + text
    path.write_text(current, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=float, default=20.0, help="seconds for an old pattern")
    parser.add_argument("--write", action="store_true", help="update docs/performance.md")
    parser.add_argument("--old", nargs=2, metavar=("RULE", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.old:
        name, size = args.old
        _, make, old, _ = RULES[name]
        print(_seconds(old, make(int(size)))[0])
        return
    rows = measure(args.limit)
    print()
    print(table(rows))
    if args.write:
        write(section(rows, args.limit))


if __name__ == "__main__":
    main()
