"""The byte-exact legacy placeholder texts of GedPi's durable-memory v3 migration.

gedpi-behaviour.md Appendix A: the migration deletes one of these files only
when its bytes, decoded as UTF-8, equal the text here exactly; any other
bytes (one extra newline, CRLF) keep the file. The order of PLACEHOLDERS is
GedPi's removal order (``LEGACY_PLACEHOLDERS`` in memory-migration.ts),
which is also the order of the journal entries, so it must not be sorted.

HISTORICAL_VARIANTS catalogues template texts GedPi shipped at other times
that the v3 migration does **not** remove (Appendix A "Variants that are not
recognised", gap G-9a). GedWeb keeps GedPi's result (retained and reported)
and uses the catalogue only to say, in plans and reasons, which template a
retained file is. A text belongs here only when its full bytes are known and
match the SHA-256 recorded in the reference.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from gedweb.lib.digest import sha256_text

# --- Appendix A, in GedPi's order ---------------------------------------------------

CONTEXT_MAP = (
    "# Context Map\n"
    "\n"
    "Ged memory is current-state oriented. Durable root files describe the project as it is "
    "now; active work and runtime state are scoped by immutable work-item IDs rather than "
    "branches.\n"
    "\n"
    "## Durable root memory\n"
    "\n"
    "- `.ged/PROJECT.md` \u2014 product goal, users, constraints, success criteria, repo "
    "signals.\n"
    "- `.ged/ARCHITECTURE.md` \u2014 current component boundaries and system shape.\n"
    "- `.ged/PATTERNS.md` \u2014 conventions and implementation patterns.\n"
    "- `.ged/GLOSSARY.md` \u2014 project/domain vocabulary.\n"
    "- `.ged/DECISIONS.md` \u2014 durable decisions and rationale.\n"
    "- `.ged/STANDARDS.md` \u2014 imported repo-wide agent standards.\n"
    "- `.ged/SKILLS.md` \u2014 durable skill guidance.\n"
    "\n"
    "## Active work memory\n"
    "\n"
    "- `.ged/work/<work-id>/SPEC.md`\n"
    "- `.ged/work/<work-id>/TASKS.md`\n"
    "- `.ged/work/<work-id>/TESTS.md`\n"
    "- `.ged/work/<work-id>/NOTES.md`\n"
    "- `.ged/work/<work-id>/META.json`\n"
    "\n"
    "## Runtime memory\n"
    "\n"
    "- `.ged/runtime/active-work/<session-key>.json` (ignored session selection)\n"
    "- `.ged/runtime/<work-id>/governance.json` (authoritative structured state)\n"
    "- `.ged/runtime/<work-id>/STATE.md`\n"
    "- `.ged/runtime/<work-id>/SESSION-SUMMARY.md`\n"
)

PROJECT = (
    "# Project\n"
    "\n"
    "## Goal\n"
    "\n"
    "Describe what this project should achieve.\n"
    "\n"
    "## Users\n"
    "\n"
    "- Primary users:\n"
    "- Secondary users:\n"
    "\n"
    "## Constraints\n"
    "\n"
    "- Technical constraints:\n"
    "- Product constraints:\n"
    "\n"
    "## Success Criteria\n"
    "\n"
    "- What does success look like?\n"
)

ARCHITECTURE = (
    "# Architecture\n"
    "\n"
    "Describe current system components, boundaries, and data flow.\n"
)

PATTERNS = (
    "# Patterns\n"
    "\n"
    "Record implementation conventions and recurring workflow patterns.\n"
)

GLOSSARY = (
    "# Glossary\n"
    "\n"
    "Record domain terms and definitions.\n"
)

IDEAS = (
    "# Ideas\n"
    "\n"
    "## Active ideas\n"
    "\n"
    "-\n"
    "\n"
    "## Future ideas\n"
    "\n"
    "-\n"
    "\n"
    "## Parking lot\n"
    "\n"
    "-\n"
)

DECISIONS = (
    "# Decisions\n"
    "\n"
    "Record important choices here as the project evolves.\n"
    "\n"
    "## Entries\n"
    "\n"
    "- Date: YYYY-MM-DD\n"
    "  - Decision:\n"
    "  - Why:\n"
    "  - Impact:\n"
)

STANDARDS = (
    "# Imported Standards\n"
    "\n"
    "These standards were imported from other harness-specific instruction files and "
    "approved for Ged use.\n"
    "\n"
    "No imported standards have been accepted yet.\n"
)

SKILLS = (
    "# Skills\n"
    "\n"
    "## Installed\n"
    "\n"
    "- None yet\n"
    "\n"
    "## Recommended\n"
    "\n"
    "- None yet\n"
    "\n"
    "## Deferred\n"
    "\n"
    "- None yet\n"
    "\n"
    "## Rejected\n"
    "\n"
    "- None yet\n"
    "\n"
    "## Usage Notes\n"
    "\n"
    "- Record why a skill was installed, recommended, or skipped.\n"
)

PROGRESS = (
    "# Progress\n"
    "\n"
    "Ongoing log of project progress.\n"
    "\n"
)

PLANS_INDEX = (
    "# Plan Index\n"
    "\n"
    "| ID | Title | Status | Created | Completed |\n"
    "| --- | --- | --- | --- | --- |\n"
)

PROJECT_SKILLS_README = (
    "# Project Skills\n"
    "\n"
    "Store project-scoped skills that Ged auto-installs or creates for active tasks here.\n"
)

RESEARCH_README = (
    "# Research\n"
    "\n"
    "Store external research summaries and package notes here.\n"
)

SPECS_README = (
    "# Specs\n"
    "\n"
    "Store durable detailed specs here when they remain useful after active work completes.\n"
)

TASKS_README = (
    "# Task Artifacts\n"
    "\n"
    "Store per-task briefs, outputs, and failure histories here when they should outlive "
    "runtime summaries.\n"
)

SKILLS_STATE = (
    "{\n"
    "  \"managed\": []\n"
    "}\n"
)

GED_BRAIN = (
    "---\n"
    "name: ged-brain\n"
    "description: GedPi brain for user-facing clarifying, planning, and implementation\n"
    "model: anthropic/claude-opus-4-6\n"
    "tools: read, grep, find, ls, bash\n"
    "skill: ged-planning, ged-execution, ged-verification\n"
    "---\n"
    "\n"
    "You are GedPi's only user-facing agent.\n"
    "\n"
    "Clarify with grill-me until the requested behavior, constraints, and success criteria "
    "are concrete enough to implement safely.\n"
    "Write durable project context into .ged/PROJECT.md and active work context into "
    ".ged/work/<work-id>/SPEC.md.\n"
    "Break the work into bounded slices in .ged/work/<work-id>/TASKS.md before editing "
    "code.\n"
    "Run the planned checks, record outcomes in .ged/runtime/<work-id>/STATE.md and "
    ".ged/runtime/<work-id>/SESSION-SUMMARY.md, and tighten the plan if a slice fails.\n"
)

PLACEHOLDERS: tuple[tuple[str, str], ...] = (
    (".ged/CONTEXT-MAP.md", CONTEXT_MAP),
    (".ged/PROJECT.md", PROJECT),
    (".ged/ARCHITECTURE.md", ARCHITECTURE),
    (".ged/PATTERNS.md", PATTERNS),
    (".ged/GLOSSARY.md", GLOSSARY),
    (".ged/IDEAS.md", IDEAS),
    (".ged/DECISIONS.md", DECISIONS),
    (".ged/STANDARDS.md", STANDARDS),
    (".ged/SKILLS.md", SKILLS),
    (".ged/PROGRESS.md", PROGRESS),
    (".ged/plans/INDEX.md", PLANS_INDEX),
    (".ged/project-skills/README.md", PROJECT_SKILLS_README),
    (".ged/research/README.md", RESEARCH_README),
    (".ged/specs/README.md", SPECS_README),
    (".ged/tasks/README.md", TASKS_README),
    (".ged/SKILLS-STATE.json", SKILLS_STATE),
    (".pi/agents/ged-brain.md", GED_BRAIN),
)

PLACEHOLDER_BY_PATH: dict[str, str] = dict(PLACEHOLDERS)

# --- historical variants (never removed) -------------------------------------------

# The standalone GedPi (edgyarmati/gedpi, VERSION 2) CONTEXT-MAP.md: "...live
# under branch/work scoped directories." with checkpoints.json in the runtime
# list. Appendix A gives its SHA-256 (7df83dd2...); these 992 bytes hash to it.
CONTEXT_MAP_STANDALONE = (
    "# Context Map\n"
    "\n"
    "Ged memory is current-state oriented. Durable root files describe the project as it is "
    "now; active work and runtime state live under branch/work scoped directories.\n"
    "\n"
    "## Durable root memory\n"
    "\n"
    "- `.ged/PROJECT.md` \u2014 product goal, users, constraints, success criteria, repo "
    "signals.\n"
    "- `.ged/ARCHITECTURE.md` \u2014 current component boundaries and system shape.\n"
    "- `.ged/PATTERNS.md` \u2014 conventions and implementation patterns.\n"
    "- `.ged/GLOSSARY.md` \u2014 project/domain vocabulary.\n"
    "- `.ged/DECISIONS.md` \u2014 durable decisions and rationale.\n"
    "- `.ged/STANDARDS.md` \u2014 imported repo-wide agent standards.\n"
    "- `.ged/SKILLS.md` \u2014 durable skill guidance.\n"
    "\n"
    "## Active work memory\n"
    "\n"
    "- `.ged/work/<work-id>/SPEC.md`\n"
    "- `.ged/work/<work-id>/TASKS.md`\n"
    "- `.ged/work/<work-id>/TESTS.md`\n"
    "- `.ged/work/<work-id>/NOTES.md`\n"
    "- `.ged/work/<work-id>/META.json`\n"
    "\n"
    "## Runtime memory\n"
    "\n"
    "- `.ged/runtime/<work-id>/STATE.md`\n"
    "- `.ged/runtime/<work-id>/SESSION-SUMMARY.md`\n"
    "- `.ged/runtime/<work-id>/checkpoints.json`\n"
)


@dataclass(frozen=True)
class TemplateVariant:
    path: str
    origin: str
    sha256: str
    text: str


def _variant(path: str, origin: str, text: str) -> TemplateVariant:
    return TemplateVariant(path, origin, sha256_text(text), text)


HISTORICAL_VARIANTS: tuple[TemplateVariant, ...] = (
    _variant(".ged/CONTEXT-MAP.md", "standalone GedPi (VERSION 2)", CONTEXT_MAP_STANDALONE),
)

CURRENT_TEMPLATES: tuple[TemplateVariant, ...] = tuple(
    _variant(path, "GedPi 41f5230 templates (removed by v3)", text) for path, text in PLACEHOLDERS
)


def template_variant(path: str, data: bytes) -> TemplateVariant | None:
    """The known template (current or historical) whose bytes ``data`` are, if any."""
    digest = hashlib.sha256(data).hexdigest()
    for variant in CURRENT_TEMPLATES + HISTORICAL_VARIANTS:
        if variant.path == path and variant.sha256 == digest:
            return variant
    return None
