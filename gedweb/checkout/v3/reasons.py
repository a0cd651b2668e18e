"""The reasons an entry of the completion record gives, verbatim (GedPi's and GedWeb's)."""

from __future__ import annotations

# GedPi's reasons, verbatim (§6.6-6.7).
REASON_NO_OWNER = "Legacy task artifact has no unambiguous active work destination."
REASON_DEST_DIFFERS = "Work-scoped task destination contains different bytes."
REASON_CHANGED_AFTER_COPY = (
    "Legacy task source changed after copy; preserved for manual reconciliation."
)
REASON_AMBIGUOUS = "No unambiguous canonical destination; preserved in place."
REASON_SKILLS = (
    "Legacy task-generated or edited skills lack unchanged provenance; quarantined from "
    "native .agents/skills discovery until explicitly promoted."
)
REASON_GLOBAL = "Legacy global artifact has no unambiguous canonical work destination."

# GedWeb's own reasons for what GedPi skips silently (gap G-9).
REASON_TASK_SUBDIR = (
    "Legacy task subdirectory is not a recognised task artifact layout; preserved in place."
)
REASON_BRANCH_WORK = (
    "Legacy branch-scoped work artifact has no generated work identity; preserved in place."
)
REASONS_KEPT_CANONICAL = {
    ".ged/PROJECT.md": "Substantive project summary is already canonical; preserved in place.",
    ".ged/STANDARDS.md": (
        "Imported standards snapshot stays in place; only an explicit standards import "
        "regenerates it."
    ),
    ".ged/SKILLS-STATE.json": (
        "Skill provenance registry stays in place; records without hashes remain "
        "legacy-unverified."
    ),
    ".pi/agents/ged-brain.md": (
        "Edited legacy brain agent definition has no canonical destination; preserved in place."
    ),
}
