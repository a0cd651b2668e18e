"""mutmut with a named configuration: ``python tests/mutants.py services run``.

mutmut reads one configuration, ``[tool.mutmut]`` in pyproject.toml, which
mutates the pure rules (gedweb/lib) against tests/lib with Django absent. The
services need another: their mutants are caught by Django tests, on a test
database. This launcher takes ``[tool.gedweb.mutants.<name>]`` from
pyproject.toml in its place, then hands the rest of the command line to
mutmut's own CLI (``run``, ``results``, ``show <mutant>``, ...), so a pass is
run and read with the same commands as the default one (docs/testing.md,
"Mutation testing").

It runs as a script, not as ``-m tests.mutants``: a module of the ``tests``
package would import ``tests`` from the checkout, and the mutated copy's
tests (``mutants/tests``) would then fail to import as that same package.

mutmut keeps its state in ``mutants/``; run one pass at a time, from a clean
``mutants/`` (``make mutants`` and ``make mutants-services`` remove it first).
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mutmut.configuration


def reader(name: str) -> Callable[[str, Any], Any]:
    """The key lookup mutmut's configuration loader expects, over one named pass."""
    tool = tomllib.loads(Path("pyproject.toml").read_text("utf-8"))["tool"]
    passes = tool["gedweb"]["mutants"]
    if name not in passes:
        raise SystemExit(f"no mutation pass named {name!r}; pyproject.toml has {sorted(passes)}")
    section = passes[name]
    return lambda key, default: section.get(key, default)


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: python tests/mutants.py <pass> <mutmut command> [args...]")
    name, *rest = argv
    section = reader(name)
    # mutmut loads its configuration through this reader, once per process, and
    # its CLI module already does so on import: replace the reader first, then
    # import the CLI. Its workers are forks of this process and inherit the pass.
    mutmut.configuration._config_reader = lambda: section
    mutmut.configuration.reset_config()
    from mutmut.__main__ import cli

    cli.main(args=rest, prog_name=f"python tests/mutants.py {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
