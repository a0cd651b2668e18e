"""``migrate_v3``: the assessment, the lock, then the plan's actions, executed in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gedweb.checkout import safefs
from gedweb.checkout.safefs import WRITE
from gedweb.checkout.v3.journal import read_journal
from gedweb.checkout.v3.layout import LOCKS_DIR
from gedweb.checkout.v3.lock import DEFAULT_WAIT_SECONDS, Lock, acquire
from gedweb.checkout.v3.plan import plan_actions
from gedweb.checkout.v3.status import assess, missing_version_hint
from gedweb.checkout.v3.steps import MigrationHooks, Run
from gedweb.failpoints import failpoint


@dataclass
class V3Result:
    status: str  # "not-needed" | "completed" | "already-complete"
    entries: list[dict[str, Any]] = field(default_factory=list)
    state: dict[str, Any] | None = None
    # What to do when "not-needed" only means "no .ged/VERSION" (missing_version_hint).
    hint: str | None = None


def migrate_v3(root: Path, *, hooks: MigrationHooks | None = None,
               wait_seconds: float = DEFAULT_WAIT_SECONDS) -> V3Result:
    """Run GedPi's durable-memory v3 migration on the checkout at ``root``."""
    root = Path(root)
    assessment = assess(root)
    if assessment.completion is not None:
        return V3Result("already-complete", assessment.completion["entries"],
                        assessment.completion)
    if assessment.status == "not-needed":
        hint = None if assessment.has_version else missing_version_hint(root, str(root))
        return V3Result("not-needed", hint=hint)
    # GedWeb: a damaged journal aborts before the lock, so the refusal touches
    # nothing (not even a dead run's lock). Read again under the lock by Run.
    read_journal(root)

    safefs.check(root, LOCKS_DIR, WRITE)
    lock = Lock(root)
    try:
        lock.publish()
        failpoint("migrate_v3.lock.published")
        converged = acquire(root, lock, wait_seconds)
        if converged is not None:
            return V3Result("already-complete", converged["entries"], converged)
        failpoint("migrate_v3.lock.acquired")
        run = Run(root, hooks)
        # The plan is made under the lock, from the journal the run resumes.
        for action in plan_actions(root, list(run.entries)):
            run.execute(action)
        return V3Result("completed", run.entries, run.state)
    finally:
        lock.release()


FAILPOINTS = (
    "migrate_v3.lock.published",
    "migrate_v3.lock.acquired",
    "migrate_v3.placeholder.journaled",
    "migrate_v3.placeholder.removed",
    "migrate_v3.glossary.backed_up",
    "migrate_v3.glossary.appended",
    "migrate_v3.glossary.journaled",
    "migrate_v3.glossary.pointer_written",
    "migrate_v3.decisions.backed_up",
    "migrate_v3.decisions.adr_written",
    "migrate_v3.decisions.journaled",
    "migrate_v3.decisions.pointer_written",
    "migrate_v3.task.backed_up",
    "migrate_v3.task.copied",
    "migrate_v3.task.journaled",
    "migrate_v3.task.removed",
    "migrate_v3.retained.backed_up",
    "migrate_v3.retained.journaled",
    "migrate_v3.reported.backed_up",
    "migrate_v3.reported.journaled",
    "migrate_v3.before_completion",
    "migrate_v3.completed",
)
