"""``ged_migrate_v3``'s two migrations in GedPi's order (§6.0): legacy checkpoints, then v3."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gedweb.checkout.checkpoints import (
    CheckpointResult,
    migrate_legacy_checkpoints,
    plan_legacy_checkpoints,
)
from gedweb.checkout.v3 import (
    DEFAULT_WAIT_SECONDS,
    MigrationHooks,
    V3Result,
    migrate_v3,
    plan_v3,
    refuse_hard_links,
)


@dataclass
class CheckoutResult:
    checkpoints: CheckpointResult
    v3: V3Result


def migrate_checkout(root: Path, *, hooks: MigrationHooks | None = None,
                     wait_seconds: float = DEFAULT_WAIT_SECONDS) -> CheckoutResult:
    """GedPi's order: the legacy checkpoint import, then the v3 migration.

    A CheckpointError (an integrity failure) propagates and the v3 migration
    does not start, as GedPi's startup stops (§6.0).
    """
    refuse_hard_links(Path(root))
    checkpoints = migrate_legacy_checkpoints(Path(root))
    return CheckoutResult(checkpoints, migrate_v3(root, hooks=hooks, wait_seconds=wait_seconds))


def plan_checkout(root: Path) -> list[str]:
    """The dry run of both: the lines ``ged_migrate_v3 --dry-run`` prints."""
    refuse_hard_links(Path(root))
    return list(plan_legacy_checkpoints(Path(root))) + plan_v3(root)
