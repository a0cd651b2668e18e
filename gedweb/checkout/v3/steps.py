"""A run executes the plan's actions (A to H, then the completion record), each destructive one
journaled first; every crash point and every re-check of a source is here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gedweb.checkout import safefs
from gedweb.checkout.safefs import READ, WRITE, sha256_hex
from gedweb.checkout.v3.errors import MigrationError
from gedweb.checkout.v3.files import read
from gedweb.checkout.v3.journal import entry_key, make_entry, read_journal
from gedweb.checkout.v3.layout import (
    CONTEXT_PATH,
    DECISIONS_PATH,
    GLOSSARY_PATH,
    JOURNAL_PATH,
    MIGRATION_ID,
    SCHEMA_VERSION,
    STATE_PATH,
    backup_path,
)
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
)
from gedweb.checkout.v3.reasons import (
    REASON_CHANGED_AFTER_COPY,
    REASON_DEST_DIFFERS,
    REASON_NO_OWNER,
)
from gedweb.checkout.v3.texts import (
    adr_text,
    as_text,
    context_after_append,
    decisions_pointer,
    dump_json,
    glossary_pointer,
    marker,
)
from gedweb.failpoints import failpoint
from gedweb.lib.governance import format_time


@dataclass
class MigrationHooks:
    """Test seams at GedPi's hook points (``beforeSourceCommit``/``afterSourceCommit``).

    ``before_commit(source_path)`` runs after a source was read and backed up,
    right before the migration re-checks it and commits; ``after_commit`` runs
    after the source was replaced or removed.
    """

    before_commit: Callable[[str], None] | None = None
    after_commit: Callable[[str], None] | None = None


# Retained entries written to the journal per rewrite at most (see Run.record).
JOURNAL_BATCH = 256


class Run:
    """One migration under the lock: the journal it resumes, and the actions it executes."""

    def __init__(self, root: Path, hooks: MigrationHooks | None) -> None:
        self.root = root
        self.hooks = hooks or MigrationHooks()
        self.entries: list[dict[str, Any]] = read_journal(root)
        self.keys = {entry_key(entry) for entry in self.entries}
        self.unflushed = 0
        self.state: dict[str, Any] | None = None

    # journal ---------------------------------------------------------------------------

    def record(self, entry: dict[str, Any], *, deferred: bool = False) -> None:
        """Add an entry (once) and rewrite the journal, as GedPi's recordEntry does.

        GedWeb defers the rewrite for entries that precede no destructive step
        (retained files, which stay in place), up to JOURNAL_BATCH of them: the
        journal is rewritten whole each time, so writing it per retained file
        made a large migration quadratic in I/O. A crash loses at most those
        deferred entries, and the rerun recreates them from the same files and
        backups in the same order. Every entry that precedes a destructive step
        is written (with all deferred ones) before that step, as in GedPi.
        """
        key = entry_key(entry)
        if key not in self.keys:
            self.keys.add(key)
            self.entries.append(entry)
        self.unflushed += 1
        if not deferred or self.unflushed >= JOURNAL_BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.unflushed:
            return
        journal = {"schemaVersion": 1, "migrationId": MIGRATION_ID, "entries": self.entries}
        safefs.atomic_write(self.root, JOURNAL_PATH, dump_json(journal), keep_mode=True)
        self.unflushed = 0

    def before(self, source_path: str) -> None:
        if self.hooks.before_commit is not None:
            self.hooks.before_commit(source_path)

    def after(self, source_path: str) -> None:
        if self.hooks.after_commit is not None:
            self.hooks.after_commit(source_path)

    # shared steps ----------------------------------------------------------------------

    def backup(self, source_path: str, content: bytes) -> tuple[str, str]:
        digest = sha256_hex(content)
        rel = backup_path(source_path)
        if not safefs.publish_exclusive(self.root, rel, content):
            existing = read(self.root, rel)
            if existing is None or sha256_hex(existing) != digest:
                raise MigrationError(f"Durable-memory backup conflict for {source_path}.")
        return digest, rel

    def require_unchanged(self, source_path: str, digest: str) -> None:
        self.before(source_path)
        current = read(self.root, source_path)
        if current is None or sha256_hex(current) != digest:
            raise MigrationError(
                f"Legacy source changed during durable-memory migration: {source_path}"
            )

    def retain(self, source_path: str, reason: str, step: str = "retained") -> None:
        safefs.check(self.root, source_path, READ)
        content = read(self.root, source_path)
        if content is None:
            return
        digest, backup = self.backup(source_path, content)
        failpoint(f"migrate_v3.{step}.backed_up")
        self.record(make_entry(source_path, "retained-substantive", sha256=digest,
                               backup=backup, reason=reason), deferred=True)
        failpoint(f"migrate_v3.{step}.journaled")

    def planned_content(self, source_path: str, digest: str) -> bytes:
        """The bytes the plan decided on; a source changed since is left alone."""
        content = read(self.root, source_path)
        if content is None or sha256_hex(content) != digest:
            raise MigrationError(
                f"Legacy source changed during durable-memory migration: {source_path}"
            )
        return content

    # the plan's actions ----------------------------------------------------------------

    def execute(self, action: Action) -> None:
        match action:
            case RemovePlaceholder():
                self.remove_placeholder(action)
            case MoveGlossary():
                self.move_glossary(action)
            case MoveDecisions():
                self.move_decisions(action)
            case MoveTask():
                self.move_task(action)
            case RetainTask():
                self.retain_task(action)
            case Retain():
                self.retain(action.source_path, action.reason, action.step)
            case WriteCompletion():
                self.state = self.complete()
            case KeepPointer():
                pass  # a pointer (written by a migration or by hand) stays as it is

    # A ---------------------------------------------------------------------------------

    def remove_placeholder(self, action: RemovePlaceholder) -> None:
        source_path = action.source_path
        self.before(source_path)
        current = read(self.root, source_path)
        if current is None or as_text(current) != action.text:
            raise MigrationError(
                f"Legacy placeholder changed during durable-memory migration: {source_path}"
            )
        self.record(make_entry(source_path, "removed-placeholder"))
        failpoint("migrate_v3.placeholder.journaled")
        safefs.remove(self.root, source_path)
        failpoint("migrate_v3.placeholder.removed")
        self.after(source_path)

    # B ---------------------------------------------------------------------------------

    def move_glossary(self, action: MoveGlossary) -> None:
        content = self.planned_content(GLOSSARY_PATH, action.sha256)
        digest, backup = self.backup(GLOSSARY_PATH, content)
        failpoint("migrate_v3.glossary.backed_up")
        self.require_unchanged(GLOSSARY_PATH, digest)
        safefs.check(self.root, CONTEXT_PATH, WRITE)
        existing_bytes = read(self.root, CONTEXT_PATH)
        existing = as_text(existing_bytes) if existing_bytes is not None else ""
        if marker("context", digest) not in existing:
            text = context_after_append(existing, as_text(content), digest)
            safefs.atomic_write(self.root, CONTEXT_PATH, text.encode("utf-8"), keep_mode=True)
        failpoint("migrate_v3.glossary.appended")
        self.record(make_entry(GLOSSARY_PATH, "migrated-context", sha256=digest, backup=backup,
                               destination=CONTEXT_PATH))
        failpoint("migrate_v3.glossary.journaled")
        safefs.atomic_write(self.root, GLOSSARY_PATH, glossary_pointer(digest).encode("utf-8"),
                            keep_mode=True)
        failpoint("migrate_v3.glossary.pointer_written")
        self.after(GLOSSARY_PATH)

    # C ---------------------------------------------------------------------------------

    def move_decisions(self, action: MoveDecisions) -> None:
        content = self.planned_content(DECISIONS_PATH, action.sha256)
        digest, backup = self.backup(DECISIONS_PATH, content)
        failpoint("migrate_v3.decisions.backed_up")
        self.require_unchanged(DECISIONS_PATH, digest)
        destination = action.destination
        safefs.check(self.root, destination, WRITE)
        existing = read(self.root, destination)
        if existing is not None and marker("decisions", digest) not in as_text(existing):
            raise MigrationError(f"ADR destination conflict at {destination}.")
        if existing is None:
            safefs.atomic_write(self.root, destination,
                                adr_text(as_text(content), digest).encode("utf-8"))
        failpoint("migrate_v3.decisions.adr_written")
        self.record(make_entry(DECISIONS_PATH, "migrated-decisions", sha256=digest,
                               backup=backup, destination=destination))
        failpoint("migrate_v3.decisions.journaled")
        safefs.atomic_write(self.root, DECISIONS_PATH,
                            decisions_pointer(digest).encode("utf-8"), keep_mode=True)
        failpoint("migrate_v3.decisions.pointer_written")
        self.after(DECISIONS_PATH)

    # D ---------------------------------------------------------------------------------

    def retain_task(self, action: RetainTask) -> None:
        source_path = action.source_path
        content = read(self.root, source_path)
        if content is None:
            return
        digest, backup = self.backup(source_path, content)
        failpoint("migrate_v3.task.backed_up")
        self.record(make_entry(source_path, "retained-substantive", sha256=digest,
                               backup=backup, reason=REASON_NO_OWNER), deferred=True)

    def move_task(self, action: MoveTask) -> None:
        source_path, destination = action.source_path, action.destination
        content = read(self.root, source_path)
        if content is None:
            return
        digest, backup = self.backup(source_path, content)
        failpoint("migrate_v3.task.backed_up")
        self.require_unchanged(source_path, digest)
        safefs.check(self.root, destination, WRITE)
        # The destination is checked again here, not taken from the plan: its
        # create-only publication is what decides, whoever wrote it meanwhile.
        created = safefs.publish_exclusive(self.root, destination, content)
        if not created:
            present = read(self.root, destination)
            if present is None or sha256_hex(present) != digest:
                self.record(make_entry(source_path, "retained-substantive", sha256=digest,
                                       backup=backup, reason=REASON_DEST_DIFFERS))
                return
        failpoint("migrate_v3.task.copied")
        latest = read(self.root, source_path)
        if latest is None or sha256_hex(latest) != digest:
            self.record(make_entry(source_path, "retained-substantive", sha256=digest,
                                   backup=backup, destination=destination,
                                   reason=REASON_CHANGED_AFTER_COPY))
            return
        self.record(make_entry(source_path, "migrated-task-artifact", sha256=digest,
                               backup=backup, destination=destination))
        failpoint("migrate_v3.task.journaled")
        safefs.remove(self.root, source_path)
        failpoint("migrate_v3.task.removed")
        self.after(source_path)

    # completion ------------------------------------------------------------------------

    def complete(self) -> dict[str, Any]:
        self.flush()
        failpoint("migrate_v3.before_completion")
        state = {
            "schemaVersion": SCHEMA_VERSION,
            "migrationId": MIGRATION_ID,
            "status": "complete",
            "completedAt": format_time(datetime.now(UTC)),
            "entries": self.entries,
        }
        # GedWeb (G-9): create-only, so a record, once written, is never replaced.
        if not safefs.publish_exclusive(self.root, STATE_PATH, dump_json(state)):
            raise MigrationError(
                "Ged durable-memory migration completion record appeared while this "
                f"migration held the lock: {STATE_PATH}"
            )
        failpoint("migrate_v3.completed")
        return state
