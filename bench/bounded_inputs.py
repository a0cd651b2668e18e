"""How long the hostile inputs of the suite take: the speed claims the tests no longer make.

No test asserts wall-clock time (issue 34 §13: a busy machine failed them);
each keeps its behaviour (the answer, the refusal, the memory bound) and a
hang fails on the suite's timeout. Their inputs are timed here instead,
in process, best of --rounds, each against the bound its test once asserted:

- the compare page's line diff (tests/lib/test_textdiff.py, tests/pages/test_inspect.py):
  each hostile pair at MAX_LINES, and 5,000 shuffled lines;
- MEMORY.md's provenance line (tests/lib/test_mirror_format.py);
- GedPi's approved standards sections without an end (tests/interop/test_hostile_imports.py);
- Ferryman's worst MEMORY.md files of a million characters (same file);
- a push's gzip bomb and 512 MiB of zeros (tests/interop/test_sync_api.py).

The secret scan's hostile megabytes are bench/secret_scan.py's.

    .venv/bin/python bench/bounded_inputs.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tarfile
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent


def best_seconds(call: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def gzip_bomb() -> bytes:
    header = tarfile.TarInfo("././@PaxHeader")
    header.type, header.size = tarfile.XHDTYPE, 256 * 1024 * 1024
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [compressor.compress(header.tobuf(tarfile.USTAR_FORMAT))]
    zeros = b"\0" * (1 << 20)
    parts += [compressor.compress(zeros) for _ in range(256)]
    return b"".join(parts) + compressor.flush()


def zeros_archive() -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = b"\0" * (1 << 20)
    return b"".join(compressor.compress(zeros) for _ in range(512)) + compressor.flush()


def cases() -> list[tuple[str, float, Callable[[], object]]]:
    """(what, the bound its test asserted in seconds, the call)."""
    from gedweb.checkout import archive, sync
    from gedweb.lib.mirror import parse_provenance
    from gedweb.lib.textdiff import MAX_LINES, line_diff
    from governance import gedpi_import
    from memory import ferryman
    from tests.interop.test_hostile_imports import WORST_MIRRORS
    from tests.lib.test_textdiff import _edited, _interleaved, _periodic, _reversed

    found: list[tuple[str, float, Callable[[], object]]] = []
    for make in (_interleaved, _periodic, _reversed, _edited):
        old, new = ("\n".join(side) for side in make(MAX_LINES))
        found.append((f"line diff, {make.__name__[1:]} {MAX_LINES:,} lines", 5.0,
                      lambda old=old, new=new: line_diff(old, new, context=10**9)))
    lines = [f"line {n}" for n in range(5_000)]
    shuffled = "\n".join(lines[1::2] + lines[0::2]) + "\n"
    found.append(("compare page's diff, 5,000 shuffled lines", 5.0,
                  lambda: line_diff("\n".join(lines) + "\n", shuffled)))
    for index, body in enumerate([
        "`" * 500_000, "``" + "`a" * 250_000, "``` " + "`` " * 150_000, "a " * 400_000 + "|",
        "`x` | Author: " + "`" * 500_000,
    ]):
        found.append((f"provenance line, hostile body {index + 1} ({len(body):,} chars)", 2.0,
                      lambda body=body: parse_provenance("_Source: " + body)))
    header = "## AGENTS.md\n\nApproved content hash: " + "0" * 64 + "\n\n"
    sections = "".join(header + f"<<<GED_APPROVED_{index:064X}:BEGIN>>>\nx\n"
                       for index in range(20_000))
    found.append(("standards, 20,000 sections without an end", 10.0,
                  lambda: gedpi_import._approved_sections(sections)))

    def refused_mirror(text: str) -> object:
        try:
            return ferryman.parse_mirror(text)
        except ferryman.FerrymanSourceError as exc:
            return exc

    for name, text in sorted(WORST_MIRRORS.items()):
        found.append((f"Ferryman MEMORY.md, {name}", 10.0,
                      lambda text=text: refused_mirror(text)))

    def refused_archive(data: bytes) -> object:
        try:
            return archive.read_all(data, sync.LIMITS, lambda name, is_dir: True)
        except archive.ArchiveError as exc:
            return exc

    bomb, zeros = gzip_bomb(), zeros_archive()
    found.append(("push, a gzip bomb (256 MiB header)", 5.0, lambda: refused_archive(bomb)))
    found.append(("push, 512 MiB of zeros", 5.0, lambda: refused_archive(zeros)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="gedweb-bounded-"))
    os.environ["DATABASE_URL"] = f"sqlite:///{scratch / 'bench.sqlite3'}"
    os.environ["GEDWEB_DATA_DIR"] = str(scratch / "data")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gedweb.settings")
    sys.path.insert(0, str(HERE.parent))
    import django

    django.setup()
    print(f"Hostile inputs of the suite: Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.2f}, best of {args.rounds}")
    print(f"{'input':<62} {'seconds':>8} {'bound':>6}")
    over = []
    for what, bound, call in cases():
        took = best_seconds(call, args.rounds)
        print(f"{what:<62} {took:>8.3f} {bound:>5.0f}s")
        if took >= bound:
            over.append(what)
    print("all within the bounds" if not over else f"over the bound: {', '.join(over)}")


if __name__ == "__main__":
    main()
