"""GedPi's legacy checkpoint backup and import, ``legacy-checkpoints-v1`` (gedpi-behaviour.md §6.9).

Older GedPi builds kept per-branch work state in ``.ged/runtime/<slug>/checkpoints.json``
(and, older still, one ``.ged/runtime/checkpoints.json``). ``ged_migrate_v3`` runs this
step first. It backs up every legacy file that belongs to a checkpoint, byte for byte,
and imports at most one of them as a new work item that can never authorise anything:
paused, planned-change, waiting for a user decision, with one failed
``migration-required`` evidence record. The legacy sources are never moved, rewritten or
trusted; after completion a rerun verifies only the backups and the imported target.

The run is a journal of exclusively published files under
``.ged/runtime/migrations/legacy-checkpoints-v1/``: PLAN.json, then the phase markers
``10-backup-complete.json``, ``20-import-started.json`` (imports only),
``30-import-complete.json`` and ``40-complete.json``. Every file is create-only and every
derived value is recomputed on resume, so an interrupted run resumes to exactly one
target and concurrent runs converge on one plan.

One concern per module: layout (paths and markers), errors, classify (which
checkpoint is imported, and as what; pure), formats (bytes and ids; pure),
discovery (the legacy files and the plan built from them), journal (PLAN.json
and the markers, validated), backups, target (the imported work item), run
(``migrate_legacy_checkpoints``), views (the dry run and doctor's findings).
This package's names are the import's interface.

Every file access goes through :mod:`gedweb.checkout.safefs`: a symbolic link, FIFO,
socket or device anywhere in the scanned layout is ``unsafe-layout``, and a FIFO is never
opened. Standard library only; the Django side never imports this at module load.
"""

from __future__ import annotations

from gedweb.checkout.checkpoints.classify import classify, logical_work_id
from gedweb.checkout.checkpoints.errors import ERROR_CODES, CheckpointError
from gedweb.checkout.checkpoints.run import CheckpointResult, migrate_legacy_checkpoints
from gedweb.checkout.checkpoints.views import checkpoint_problems, plan_legacy_checkpoints

__all__ = [
    "ERROR_CODES", "CheckpointError", "CheckpointResult", "checkpoint_problems", "classify",
    "logical_work_id", "migrate_legacy_checkpoints", "plan_legacy_checkpoints",
]
