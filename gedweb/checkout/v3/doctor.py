"""What ``doctor --checkout`` reports about a checkout's v3 migration."""

from __future__ import annotations

from pathlib import Path

from gedweb.checkout.checkpoints import checkpoint_problems
from gedweb.checkout.safefs import UnsafePath
from gedweb.checkout.v3.errors import MigrationError
from gedweb.checkout.v3.files import read
from gedweb.checkout.v3.hard_links import hard_link_problems
from gedweb.checkout.v3.journal import read_completion, read_journal
from gedweb.checkout.v3.layout import JOURNAL_PATH, LOCKS_DIR, STATE_PATH
from gedweb.checkout.v3.lock import holder_alive, read_lock_candidates
from gedweb.checkout.v3.status import migration_status


def checkout_problems(root: Path) -> list[str]:
    """Problems ``doctor --checkout`` reports for the migration state of a checkout.

    Reported: files of the layout with more than one link (hard_link_problems);
    an invalid completion record or journal; a journal without a
    completion record (an interrupted run); a pending migration; live locks
    (a migration is running or hung) and stale locks; a malformed lock; plus
    the legacy-checkpoint problems. ``STALE-*.json`` files are evidence of a
    recovered crash that GedPi keeps for ever; they are not problems.
    """
    root = Path(root)
    problems: list[str] = []
    try:
        problems.extend(hard_link_problems(root))
    except (UnsafePath, OSError) as exc:
        problems.append(f"hard links: {exc}")
    try:
        completed = read_completion(root)
    except (MigrationError, UnsafePath, OSError) as exc:
        problems.append(f"{STATE_PATH}: {exc}")
        completed = None
    try:
        journal_raw = read(root, JOURNAL_PATH)
        if journal_raw is not None:
            read_journal(root)
            if completed is None:
                problems.append(
                    f"{JOURNAL_PATH} exists without {STATE_PATH}: an interrupted durable-memory "
                    "migration; run `manage.py ged_migrate_v3 PATH` to resume it"
                )
    except (MigrationError, UnsafePath, OSError) as exc:
        problems.append(f"{JOURNAL_PATH}: {exc}")
    try:
        for candidate in read_lock_candidates(root):
            owner = candidate.owner
            if holder_alive(root, owner):
                problems.append(
                    f"{candidate.rel}: durable-memory migration lock held by live pid "
                    f"{owner.pid} since {owner.started_at} (running, or hung)"
                )
            else:
                problems.append(
                    f"{candidate.rel}: stale durable-memory migration lock (pid {owner.pid} is "
                    "gone); the next run quarantines it"
                )
    except (MigrationError, UnsafePath, OSError) as exc:
        problems.append(f"{LOCKS_DIR}: {exc}")
    if completed is None:
        try:
            if migration_status(root) == "needed":
                problems.append(
                    "durable-memory v3 migration is needed: run `manage.py ged_migrate_v3 PATH`"
                )
        except (MigrationError, UnsafePath, OSError) as exc:
            problems.append(f"durable-memory v3 status: {exc}")
    problems.extend(checkpoint_problems(root))
    return problems
