"""Is a migration needed (§6.1)? Reads only."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gedweb.checkout import safefs
from gedweb.checkout.safefs import READ
from gedweb.checkout.v3.files import gedpi_walk, lstat, read
from gedweb.checkout.v3.journal import journal_evidence, read_completion
from gedweb.checkout.v3.layout import DECISIONS_PATH, GLOSSARY_PATH, LEGACY_DIRS
from gedweb.checkout.v3.pointers import needs_move
from gedweb.checkout.v3.texts import as_text, parse_version
from gedweb.lib.gedpi_placeholders import PLACEHOLDERS


def placeholder_present(root: Path, source_path: str, text: str) -> bool:
    safefs.check(root, source_path, READ)
    data = read(root, source_path)
    return data is not None and as_text(data) == text


def has_actionable_legacy_memory(root: Path) -> bool:
    for source_path, text in PLACEHOLDERS:
        if placeholder_present(root, source_path, text):
            return True
    journal = journal_evidence(root)
    for source_path in (GLOSSARY_PATH, DECISIONS_PATH):
        safefs.check(root, source_path, READ)
        if needs_move(root, source_path, read(root, source_path), journal):
            return True
    for directory in LEGACY_DIRS:
        files = gedpi_walk(root, f".ged/{directory}")
        if any(path.rsplit("/", 1)[-1] != "README.md" for path in files):
            return True
    return False


@dataclass(frozen=True)
class Assessment:
    """The one answer to "is a migration needed", for the run, the dry run and the status.

    ``status`` is "complete" (``completion`` is the record), "not-needed" or
    "needed"; ``version`` is .ged/VERSION's leading integer, None when the file
    is absent (``has_version``) or has none.
    """

    status: str
    completion: dict[str, Any] | None = None
    has_version: bool = False
    version: int | None = None


def assess(root: Path) -> Assessment:
    """GedPi's §6.1 decision; reads only."""
    completion = read_completion(root)
    if completion is not None:
        return Assessment("complete", completion)
    raw = read(root, ".ged/VERSION")
    if raw is None:
        return Assessment("not-needed")
    version = parse_version(raw)
    if version is not None and version >= 3 and not has_actionable_legacy_memory(root):
        return Assessment("not-needed", has_version=True, version=version)
    return Assessment("needed", has_version=True, version=version)


def missing_version_hint(root: Path, shown: str = "PATH") -> str:
    """What to do with a tree that has no .ged/VERSION (GedPi migrates only versioned trees).

    ``shown`` is how the checkout is named in the command to run again.
    """
    if lstat(root, ".ged") is None:
        return (f"{shown} has no .ged/ folder, so it is not a GedPi checkout: give the "
                "repository root where GedPi keeps .ged/")
    return ("GedPi writes .ged/VERSION (`3`) the first time it starts in a checkout and "
            "migrates legacy memory on the start after that: start GedPi in it once, or "
            f"write `3` to .ged/VERSION yourself, then run `manage.py ged_migrate_v3 {shown}` "
            "again")


def migration_status(root: Path) -> str:
    """"complete", "not-needed" or "needed"; reads only (§6.1)."""
    return assess(Path(root)).status
