"""Where ``legacy-checkpoints-v1`` reads and writes: GedPi's runtime paths and phase markers."""

from __future__ import annotations

MIGRATION_ID = "legacy-checkpoints-v1"
RUNTIME = ".ged/runtime"
WORK = ".ged/work"
MIGRATION_DIR = f"{RUNTIME}/migrations/{MIGRATION_ID}"
PLAN_PATH = f"{MIGRATION_DIR}/PLAN.json"
BACKUPS_DIR = f"{MIGRATION_DIR}/backups"
ROOT_CHECKPOINT = f"{RUNTIME}/checkpoints.json"
ROOT_SLUG = "root"
CHECKPOINT_NAME = "checkpoints.json"
# Runtime directories the direct-root candidate never claims (besides current generated
# work and branch candidates).
UNCLAIMED_RUNTIME_DIRS = ("migrations", "active-work")

BACKUP_COMPLETE = "10-backup-complete.json"
IMPORT_STARTED = "20-import-started.json"
IMPORT_COMPLETE = "30-import-complete.json"
COMPLETE = "40-complete.json"
MARKERS = (BACKUP_COMPLETE, IMPORT_STARTED, IMPORT_COMPLETE, COMPLETE)
MARKER_PHASES = {
    BACKUP_COMPLETE: "backup-complete",
    IMPORT_STARTED: "import-started",
    IMPORT_COMPLETE: "import-complete",
    COMPLETE: "complete",
}
