"""Checkouts shaped like the real ones issue 19 met, for the migration, ged_import and doctor.

- ``issue_reproduction(root)``: the issue's reproduction, byte for byte: VERSION 3, a
  hand-written glossary pointer, a CONTEXT.md with a term.
- ``gedpi_clone(root)``: a fresh clone of GedPi's own repository (EdGy2k/Omni-Pi at
  43cd168): VERSION 3 and GedPi's .gitignore; its hand-written GLOSSARY and DECISIONS
  pointers (the glossary's bytes are GedPi's own file's), the ADR the decisions pointer
  names; substantive legacy ARCHITECTURE, PATTERNS, PROGRESS, SKILLS and CONTEXT-MAP that
  stayed in place; two work items with META and their work files but, as in every clone,
  no ``.ged/runtime/`` (GedPi's .gitignore keeps it out of Git).
- ``working_checkout(root)``: that clone where GedPi has run since: ``.ged/runtime/``
  exists with an active-work pointer and the bootstrap work item's empty runtime folder,
  still no governance.json for either work item.
"""

from __future__ import annotations

from pathlib import Path

from tests.checkout.trees import (
    CREATED_A,
    CREATED_B,
    GITIGNORE_TEMPLATE,
    WORK_A,
    WORK_B,
    meta,
    pretty,
    tasks_md,
    write_tree,
)

ISSUE_GLOSSARY = "# Glossary moved\n\nSee [../CONTEXT.md](../CONTEXT.md).\n"
ISSUE_CONTEXT = "# Context\n\n**Term**: meaning.\n"

# GedPi's own .ged/GLOSSARY.md at 43cd168, byte for byte.
GEDPI_GLOSSARY = (
    "# Glossary moved\n\nCanonical project/domain vocabulary lives in "
    "[`../CONTEXT.md`](../CONTEXT.md).\nThis compatibility pointer is not a writable "
    "authority.\n"
)
GEDPI_ADR = "docs/adr/0000-gedpi-workflow-decisions.md"
GEDPI_DECISIONS = (
    f"# Decisions moved\n\nCanonical durable decisions live in [`../{GEDPI_ADR}`]"
    f"(../{GEDPI_ADR}).\nThis compatibility pointer is not a writable authority.\n"
)
GEDPI_ADR_TEXT = (
    "# ADR 0000: GedPi workflow decisions\n\nStatus: accepted\n\n"
    "- Work modes are read-only, direct-change and planned-change.\n"
    "- Governance depth and execution staffing are separate selectors.\n"
)
GEDPI_CONTEXT = (
    "# Context\n\n**Work item**: an immutable unit of work with a generated id.\n"
    "**Coordinator**: the one agent that owns scope, acceptance and commits.\n"
)
# Substantive legacy files GedPi's migration leaves where they are (§6.7).
GEDPI_LEGACY = {
    ".ged/ARCHITECTURE.md": "# Architecture\n\nAn extension, a governance store and a brain.\n",
    ".ged/PATTERNS.md": "# Patterns\n\nWrite through atomic helpers; never trust projections.\n",
    ".ged/PROGRESS.md": (
        "# Legacy progress archive\n\nThis retained historical note is not prompt context.\n"
        "\n## 2026-08-10\n\n- Completed the read-only workflow audit.\n"
    ),
    ".ged/SKILLS.md": "# Skills\n\n## Installed\n\n- ged-planning: used for every plan.\n",
    ".ged/CONTEXT-MAP.md": "# Context Map\n\nRoot memory lives in CONTEXT.md and docs/adr/.\n",
}
CLONE_WORK = {
    WORK_A: ("Add login", CREATED_A),
    WORK_B: ("Fix search", CREATED_B),
}


def issue_reproduction(root: Path) -> Path:
    return write_tree(root, {".ged/VERSION": "3\n", ".ged/GLOSSARY.md": ISSUE_GLOSSARY,
                             "CONTEXT.md": ISSUE_CONTEXT})


def gedpi_clone(root: Path) -> Path:
    files: dict[str, bytes | str] = {
        ".ged/VERSION": "3\n",
        ".ged/.gitignore": GITIGNORE_TEMPLATE,
        ".ged/IMPORT-STATE.json": pretty({"accepted": [], "rejected": [], "pending": [],
                                          "standardsHash": None}),
        ".ged/GLOSSARY.md": GEDPI_GLOSSARY,
        ".ged/DECISIONS.md": GEDPI_DECISIONS,
        ".ged/PROJECT.md": "# GedPi\n\nA coding agent harness with durable, governed memory.\n",
        "CONTEXT.md": GEDPI_CONTEXT,
        GEDPI_ADR: GEDPI_ADR_TEXT,
        **GEDPI_LEGACY,
    }
    for work_id, (summary, created) in CLONE_WORK.items():
        files[f".ged/work/{work_id}/META.json"] = meta(work_id, summary, created)
        files[f".ged/work/{work_id}/SPEC.md"] = f"# Spec\n\n## Problem\n\n{summary}.\n"
        files[f".ged/work/{work_id}/TASKS.md"] = tasks_md("T01")
    return write_tree(root, files)


def working_checkout(root: Path) -> Path:
    gedpi_clone(root)
    (root / ".ged/runtime" / WORK_A).mkdir(parents=True)
    return write_tree(root, {
        ".ged/runtime/active-work/0123456789abcdef0123456789abcdef.json": pretty({
            "schemaVersion": 1, "sessionId": "ged-default-session", "workId": WORK_A,
            "operation": "open", "selectedAt": CREATED_A, "requestId": "req-1"}),
    })

