"""Where the v3 migration reads and writes in a checkout: GedPi's paths, verbatim."""

from __future__ import annotations

MIGRATION_ID = "durable-memory-v3"
SCHEMA_VERSION = 1
STATE_PATH = ".ged/MEMORY-MIGRATION.json"
RUNTIME = ".ged/runtime/migrations/durable-memory-v3"
JOURNAL_PATH = f"{RUNTIME}/JOURNAL.json"
LOCKS_DIR = f"{RUNTIME}/LOCKS"
BACKUPS_DIR = f"{RUNTIME}/backups"
GLOSSARY_PATH = ".ged/GLOSSARY.md"
DECISIONS_PATH = ".ged/DECISIONS.md"
CONTEXT_PATH = "CONTEXT.md"


AMBIGUOUS_LEGACY_PATHS = (
    ".ged/CONFIG.md",
    ".ged/CONTEXT-MAP.md",
    ".ged/ARCHITECTURE.md",
    ".ged/PATTERNS.md",
    ".ged/IDEAS.md",
    ".ged/PROGRESS.md",
    ".ged/SKILLS.md",
)
LEGACY_DIRS = ("tasks", "project-skills", "plans", "research", "specs")
GLOBAL_DIRS = ("plans", "research", "specs")


def adr_path(sha256: str) -> str:
    return f"docs/adr/0000-migrated-ged-decisions-{sha256[:12]}.md"


def backup_path(source_path: str) -> str:
    return f"{BACKUPS_DIR}/{source_path}"
