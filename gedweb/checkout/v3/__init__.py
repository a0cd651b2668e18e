"""GedPi's durable-memory v3 migration of a checkout (gedpi-behaviour.md §6.1-6.8).

A faithful port of GedPi's ``migrateDurableMemory`` (memory-migration.ts): the
same paths, JSON shapes, entry order, reasons and error messages, so a
checkout migrated here is indistinguishable to GedPi from one GedPi migrated,
and GedPi and GedWeb processes can share the lock directory.

Step order (each destructive step is journaled first):
  A. delete byte-exact placeholders (Appendix A);
  B. glossary -> appended once to root CONTEXT.md, source replaced by a pointer;
  C. decisions -> content-addressed ADR, source replaced by a pointer;
  D. global task files -> a work item's tasks/ folder when exactly one owns them;
  E-G. everything else under the legacy paths is backed up and reported;
  H. (GedWeb, gap G-9) files GedPi skips silently are backed up and reported;
  then the completion record, written last and create-only.

One concern per module: layout (paths), reasons, errors, texts (the bytes
written, pure), files (GedPi's reads and walks), journal (entries, journal,
completion record), pointers (pointer trust), sources (which files a step
takes), status (is a migration needed: ``assess``, one answer for the run,
the dry run and ``migration_status``), lock, hard_links, plan (the actions a
run takes, which the dry run prints), steps (``Run``, which executes them),
run (``migrate_v3``), doctor. This
package's names are the migration's interface. Deviations from GedPi are
listed in docs/migration.md; each is marked "GedWeb:" where it is made.
Everything touches the checkout through gedweb.checkout.safefs.
"""

from __future__ import annotations

from gedweb.checkout.safefs import sha256_hex
from gedweb.checkout.v3.doctor import checkout_problems
from gedweb.checkout.v3.errors import MigrationError
from gedweb.checkout.v3.hard_links import (
    LAYOUT_DIRS,
    LAYOUT_FILES,
    hard_link_problems,
    refuse_hard_links,
)
from gedweb.checkout.v3.journal import (
    ACTIONS,
    entry_key,
    make_entry,
    parse_entry,
    read_completion,
    read_journal,
)
from gedweb.checkout.v3.layout import (
    AMBIGUOUS_LEGACY_PATHS,
    BACKUPS_DIR,
    CONTEXT_PATH,
    DECISIONS_PATH,
    GLOBAL_DIRS,
    GLOSSARY_PATH,
    JOURNAL_PATH,
    LEGACY_DIRS,
    LOCKS_DIR,
    MIGRATION_ID,
    RUNTIME,
    STATE_PATH,
    adr_path,
    backup_path,
)
from gedweb.checkout.v3.lock import DEFAULT_WAIT_SECONDS, holder_alive, read_lock_candidates
from gedweb.checkout.v3.plan import (
    Action,
    KeepPointer,
    MoveDecisions,
    MoveGlossary,
    MoveTask,
    RemovePlaceholder,
    Retain,
    RetainTask,
    WriteCompletion,
    plan_actions,
    plan_v3,
)
from gedweb.checkout.v3.pointers import destination_holds_content, pointer_kind
from gedweb.checkout.v3.reasons import (
    REASON_AMBIGUOUS,
    REASON_BRANCH_WORK,
    REASON_CHANGED_AFTER_COPY,
    REASON_DEST_DIFFERS,
    REASON_GLOBAL,
    REASON_NO_OWNER,
    REASON_SKILLS,
    REASON_TASK_SUBDIR,
    REASONS_KEPT_CANONICAL,
)
from gedweb.checkout.v3.run import FAILPOINTS, V3Result, migrate_v3
from gedweb.checkout.v3.status import Assessment, assess, migration_status, missing_version_hint
from gedweb.checkout.v3.steps import MigrationHooks, Run
from gedweb.checkout.v3.texts import decisions_pointer, dump_json, glossary_pointer, marker

__all__ = [
    "ACTIONS", "AMBIGUOUS_LEGACY_PATHS", "BACKUPS_DIR", "CONTEXT_PATH", "DECISIONS_PATH",
    "DEFAULT_WAIT_SECONDS", "FAILPOINTS", "GLOBAL_DIRS", "GLOSSARY_PATH", "JOURNAL_PATH",
    "LAYOUT_DIRS", "LAYOUT_FILES", "LEGACY_DIRS", "LOCKS_DIR", "MIGRATION_ID", "RUNTIME",
    "STATE_PATH", "REASON_AMBIGUOUS", "REASON_BRANCH_WORK", "REASON_CHANGED_AFTER_COPY",
    "REASON_DEST_DIFFERS", "REASON_GLOBAL", "REASON_NO_OWNER", "REASON_SKILLS",
    "REASON_TASK_SUBDIR", "REASONS_KEPT_CANONICAL", "MigrationError", "MigrationHooks", "Run",
    "V3Result", "adr_path", "backup_path", "checkout_problems", "decisions_pointer",
    "dump_json", "entry_key", "glossary_pointer", "hard_link_problems", "holder_alive",
    "make_entry", "marker", "migrate_v3", "migration_status", "parse_entry", "plan_v3",
    "read_completion", "read_journal", "read_lock_candidates", "refuse_hard_links",
    "sha256_hex", "Action", "Assessment", "KeepPointer", "MoveDecisions", "MoveGlossary",
    "MoveTask", "RemovePlaceholder", "Retain", "RetainTask", "WriteCompletion", "assess",
    "plan_actions", "destination_holds_content", "missing_version_hint", "pointer_kind",
]
