"""Redaction: an entry's content leaves GedWeb, its place in the chain stays.

An operator redacts an entry written in chain format 2 (gedweb.lib.chain):
one transaction, under the project's write lock, appends the redaction
record (an entry of category "redaction" whose content is the reason and
whose ``redacts`` names the entry; append-only, chained and checkpointed
like any other) and replaces the entry's content with the record's notice,
``[redacted by <who> at <when>: <reason>]``. That UPDATE is the one the
database's append-only triggers let through (memory 0014). The entry keeps
its seq, hash, author and time; its hash commits to the content's digest,
which the record does not change, so every verifier still finds the chain
intact and the notice the record explains.

After the commit the mirror is rebuilt without the content and the old
bytes are purged from the database files (``purge``): on SQLite with
``secure_delete`` on (freed space is zeroed), the FTS5 index merged so the
old tokens' segments are freed, and the WAL checkpointed and truncated; on
PostgreSQL with VACUUM (``full``: VACUUM FULL, which rewrites the table and
takes an exclusive lock on it while it runs). Stored context bundles that
delivered the entry are scrubbed in the same transaction (registered by
governance), and the pages' cached renderings of the text are dropped
(memory.rendering). docs/operations.md says what stays (the digest, backups,
PostgreSQL's WAL archive).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, transaction

from gedweb.errors import InvalidState
from gedweb.lib.chain import redaction_notice
from gedweb.validation import collect_errors
from memory import checkpoints, mirror, rendering, secret_scan
from memory.locks import lock_project
from memory.models import MemoryCandidate, MemoryEntry, Project
from memory.recall.vectors import forget_entry
from memory.validators import validate_content

logger = logging.getLogger(__name__)

REDACTION_CATEGORY = "redaction"
MAX_BY_CHARS = 64  # MemoryEntry.author


# Tables of other apps that keep copies of memory content (governance's stored
# context bundles), registered when those apps load: memory cannot import them.
# name -> (project, entry, notice, record) -> how many rows it scrubbed, inside
# the redaction's transaction.
Scrubber = Callable[[Project, MemoryEntry, str, MemoryEntry], int]
_COPIES: dict[str, Scrubber] = {}


def register_copies(name: str, scrubber: Scrubber) -> None:
    _COPIES[name] = scrubber


@dataclass
class RedactionResult:
    entry: MemoryEntry
    record: MemoryEntry
    # What the purge did, engine by engine (see purge()).
    purge: dict[str, Any] = field(default_factory=dict)
    mirror_rebuilt: bool = False
    # Copies elsewhere that the redaction scrubbed too, by kind (stored
    # context bundles that delivered the entry).
    copies_scrubbed: dict[str, int] = field(default_factory=dict)


def _validate(reason: Any, by: Any) -> str:
    def check_reason(value: Any) -> None:
        if not isinstance(value, str) or not value.strip():
            raise ValidationError("say why the content is redacted")
        validate_content(value)

    def check_by(value: Any) -> None:
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_BY_CHARS:
            raise ValidationError(f"name who redacts (1-{MAX_BY_CHARS} characters)")

    collect_errors({"reason": (check_reason, reason), "by": (check_by, by)})
    stripped: str = reason.strip()
    return stripped


def pre_format_entries(project: Project) -> int:
    """How many of the project's entries are in chain format 1 and can never be redacted."""
    return int(MemoryEntry.objects.for_project(project).filter(content_sha256__isnull=True)
               .count())


def memory_entry_redact(
    *, project: Project, seq: int, reason: str, by: str, full_vacuum: bool = False
) -> RedactionResult:
    """Redact entry ``seq`` of ``project``; refuse with one clear error, changing nothing."""
    from memory.services import _append_locked

    reason = _validate(reason, by)
    # The reason is text that stays: it must not be a secret itself.
    secret_scan.refuse_secrets(project, {"reason": reason})
    with _secure_delete():
        with transaction.atomic():
            lock_project(project)
            entry = MemoryEntry.objects.for_project(project).filter(seq=seq).first()
            if entry is None:
                raise ValidationError({"seq": [f"no entry #{seq} in project {project.pk}"]})
            _refuse_unless_redactable(project, entry)
            redacted_text = entry.content
            record = _append_locked(
                project=project, author=by, category=REDACTION_CATEGORY, content=reason,
                source="operator", corrects=None, idempotency_key=None, request_hash=None,
                redacts=entry,
            ).entry
            notice = redaction_notice(by, record.created_at_text, reason)
            with connection.cursor() as cursor:
                # The ORM refuses every change to an entry; this one UPDATE is
                # the redaction the triggers allow (memory 0014).
                cursor.execute("UPDATE memory_memoryentry SET content = %s WHERE id = %s",
                               [notice, entry.pk])
            # A candidate that became this entry holds the same text.
            MemoryCandidate.objects.filter(entry=entry).update(content=notice)
            # Its vector was made from the text: it goes too, after the UPDATE,
            # whose row lock an indexer's write waits on (memory.recall.indexer).
            copies: dict[str, int] = {"recall_vectors": forget_entry(entry)}
            copies.update({name: scrub(project, entry, notice, record)
                           for name, scrub in _COPIES.items()})
            if checkpoints.due(record.seq, record.seq):
                transaction.on_commit(partial(
                    checkpoints.after_commit, project.pk, record.seq, record.hash))
        entry.refresh_from_db()
        # The pages' cached renderings of the text (memory/rendering.py): of the
        # entry and of the candidate it came from, which share its digest.
        rendering.forget(redacted_text)
        result = RedactionResult(entry=entry, record=record, copies_scrubbed=copies)
        try:
            mirror.rebuild(project)
            result.mirror_rebuilt = True
        except (mirror.MirrorPathError, OSError):
            # Committed: the next `memory mirror --rebuild` writes the file without it.
            logger.exception("mirror rebuild after redacting %s#%s failed", project.pk, seq)
        result.purge = purge(full=full_vacuum)
    return result


def _refuse_unless_redactable(project: Project, entry: MemoryEntry) -> None:
    if entry.content_sha256 is None:
        raise InvalidState(
            f"entry #{entry.seq} predates chain format 2: its hash commits to its content's "
            "bytes, so removing them would break every later link; it cannot be redacted "
            f"(`manage.py doctor` lists the {pre_format_entries(project)} such entries of "
            f"{project.pk})",
            seq=entry.seq,
        )
    if entry.redacts_id is not None:
        raise InvalidState(f"entry #{entry.seq} is a redaction record: it cannot be redacted",
                           seq=entry.seq)
    earlier = entry.redactions.first()
    if earlier is not None:
        raise InvalidState(
            f"entry #{entry.seq} was already redacted by {earlier.author} at "
            f"{earlier.created_at_text} (record #{earlier.seq})", seq=entry.seq)


class _secure_delete:
    """SQLite's secure_delete on this connection for the redaction: freed space is zeroed."""

    def __enter__(self) -> None:
        self.before: int | None = None
        if connection.vendor == "sqlite":
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA secure_delete")
                self.before = cursor.fetchone()[0]
                cursor.execute("PRAGMA secure_delete = ON")

    def __exit__(self, *exc: object) -> None:
        if self.before is not None:
            with connection.cursor() as cursor:
                cursor.execute(f"PRAGMA secure_delete = {int(self.before)}")


def purge(*, full: bool = False) -> dict[str, Any]:
    """Take the old bytes out of the database files, as far as the engine lets a client.

    Run after the redaction commits and outside any transaction (VACUUM and
    the WAL checkpoint cannot run inside one): inside a caller's transaction
    it only says so.
    """
    if connection.in_atomic_block:
        return {"skipped": "inside a transaction: run `manage.py memory purge` after it"}
    if connection.vendor == "sqlite":
        with _secure_delete(), connection.cursor() as cursor:
            # FTS5 keeps a deleted row's tokens in older segments until they
            # merge; 'optimize' merges them all, freeing (and zeroing) those pages.
            with transaction.atomic():
                cursor.execute(
                    "INSERT INTO memory_entry_fts(memory_entry_fts) VALUES ('optimize')")
            if full:
                cursor.execute("VACUUM")
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            busy, log_frames, checkpointed = cursor.fetchone()
        return {"engine": "sqlite", "secure_delete": True, "fts_optimized": True,
                "vacuum": "VACUUM" if full else None,
                "wal_checkpoint": {"truncated": not busy, "log_frames": log_frames,
                                   "checkpointed_frames": checkpointed}}
    statement = "VACUUM (FULL) memory_memoryentry" if full else "VACUUM memory_memoryentry"
    with connection.cursor() as cursor:
        # VACUUM by anyone but the owner only warns and skips the table; the
        # application role of docs/security.md is not the owner.
        cursor.execute(
            "SELECT rolsuper OR pg_has_role(current_user, tableowner, 'USAGE') FROM pg_tables"
            " JOIN pg_roles ON rolname = current_user"
            " WHERE schemaname = current_schema() AND tablename = 'memory_memoryentry'")
        (may_vacuum,) = cursor.fetchone()
        if not may_vacuum:
            return {"engine": "postgresql", "vacuum": None,
                    "skipped": "only the tables' owner may VACUUM them: run `manage.py memory "
                    "purge` as the owner role (docs/security.md)"}
        cursor.execute(statement)
        # The candidates and the stored bundles held the text too.
        cursor.execute("VACUUM memory_memorycandidate")
        cursor.execute("VACUUM memory_entryvector")
        cursor.execute("VACUUM governance_contextbundle")
    return {"engine": "postgresql", "vacuum": statement}
