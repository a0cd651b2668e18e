"""Hard links in the GedPi layout, refused before a migration writes anything."""

from __future__ import annotations

from pathlib import Path

from gedweb.checkout import safefs
from gedweb.checkout.safefs import UnsafePath
from gedweb.checkout.v3.layout import CONTEXT_PATH

# Where GedWeb's checkout commands look: the files a migration, an import or
# doctor reads. A hard link among them could publish a file from outside the
# checkout (safefs.hard_link_problem).
LAYOUT_FILES = (
    CONTEXT_PATH,
    "AGENTS.md",
    "AGENTS.override.md",
    "CLAUDE.md",
    "GEMINI.md",
    ".github/copilot-instructions.md",
    ".cursorrules",
    ".pi/agents/ged-brain.md",
)
LAYOUT_DIRS = (".ged", ".agents/skills", "docs/adr")


def hard_link_problems(root: Path) -> list[str]:
    """Every file of the GedPi layout under ``root`` that has more than one link."""
    return safefs.find_hard_links(Path(root), LAYOUT_FILES, LAYOUT_DIRS)


def refuse_hard_links(root: Path) -> None:
    """UnsafePath naming the first hard-linked layout file, before anything is written.

    GedWeb: the reads refuse a hard link on their own descriptor too, but a
    migration reads some files only after earlier steps have written; this
    survey makes it refuse before its first step.
    """
    problems = hard_link_problems(root)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UnsafePath(problems[0] + more)
