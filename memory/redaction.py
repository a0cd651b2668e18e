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

Every other stored text the secret scan reads (candidates, documents,
standards imports, skills, work items and files, task artifacts, evidence,
governance revisions) is redacted by ``finding_redact``: the span a
memory.SecretFinding names becomes the notice, recorded in an append-only
memory.TextRedaction (who, when, why, where, the text's digest before and
after). The tables' triggers let exactly that UPDATE through (memory 0025,
governance 0015), and whatever hashed the text (the trust ledger, a
document's or standards import's sha256, a skill's recorded hash) checks
``committed_sha256``, which follows the records back to the digest it
committed to. Each source registers how to find its row
(``register_redactable``); governance registers its own.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.utils import timezone

from gedweb.errors import InvalidState
from gedweb.lib.canonical import canonical_json
from gedweb.lib.chain import redaction_notice
from gedweb.lib.digest import sha256_text
from gedweb.validation import collect_errors
from memory import checkpoints, mirror, rendering, secret_scan
from memory.locks import lock_project
from memory.models import (
    DocumentRevision,
    DocumentVector,
    MemoryCandidate,
    MemoryEntry,
    Project,
    SecretFinding,
    TextRedaction,
    format_timestamp,
)
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


def purge(*, full: bool = False, tables: Iterable[str] = ()) -> dict[str, Any]:
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
        # A text redaction's table and the copies derived from it.
        others = list(dict.fromkeys(tables))
        for table in others:
            cursor.execute(f"VACUUM {connection.ops.quote_name(table)}")
    return {"engine": "postgresql", "vacuum": statement, **({"tables": others} if others else {})}


# --- secrets in every other stored text -------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """Where a finding's secret is stored: one column of one row, and its span there."""

    model: type[models.Model]
    row_id: int
    column: str
    text: str  # the column's stored text
    start: int  # the secret's span in ``text``, in characters
    length: int
    # What the span becomes in the column (the notice, escaped for a JSON column).
    encode: Callable[[str], str] = str
    # Append-only rows change by the one UPDATE their triggers allow; a
    # candidate is an ordinary row.
    append_only: bool = True


# (project, finding, the field's stored text as the scanner read it) -> Target;
# raises ValidationError when the row or field is gone.
Locator = Callable[[Project, SecretFinding], tuple["Target", str]]
# (project, target, secret, notice, record) -> rows scrubbed, inside the transaction.
CopyScrubber = Callable[[Project, "Target", str, str, TextRedaction], int]


@dataclass(frozen=True)
class Redactable:
    locate: Locator
    # The tables it may change (vacuumed by `manage.py memory purge`).
    tables: tuple[str, ...]
    # The copies derived from rows of this source (besides the stored bundles,
    # which every redaction scrubs), by name.
    copies: dict[str, CopyScrubber] = field(default_factory=dict)


_REDACTABLE: dict[str, Redactable] = {}
_TEXT_COPIES: dict[str, CopyScrubber] = {}


def register_redactable(source: str, redactable: Redactable) -> None:
    """How to redact a finding of scan source ``source`` (memory.secret_scan.register_source)."""
    _REDACTABLE[source] = redactable


def register_text_copies(name: str, scrubber: CopyScrubber) -> None:
    """A table of another app holding copies of any stored text (governance's bundles)."""
    _TEXT_COPIES[name] = scrubber


def redactable(finding: SecretFinding) -> bool:
    """Whether the finding has a redaction: an entry's content, or a registered source."""
    if finding.source == "entry":
        return finding.field == "content" and finding.seq is not None
    return finding.source in _REDACTABLE


def why_not_redactable(finding: SecretFinding) -> str:
    if finding.source == "entry" and finding.field == "idempotency_key":
        # Keys are stored as their SHA-256 since memory 0021: a key from
        # before that upgrade is the one way a secret could sit there.
        return (f"entry #{finding.seq}'s idempotency key is a column no redaction changes "
                "(keys are stored as digests)")
    if finding.source == "entry":
        return (f"entry #{finding.seq}'s {finding.field} is part of its hash, byte for byte")
    return f"{finding.source} rows have no redaction"


@dataclass
class TextRedactionResult:
    redaction: TextRedaction
    purge: dict[str, Any] = field(default_factory=dict)
    copies_scrubbed: dict[str, int] = field(default_factory=dict)


def finding_redact(*, finding_id: int, reason: str, by: str, full_vacuum: bool = False,
                   project: Project | None = None) -> RedactionResult | TextRedactionResult:
    """Redact what SecretFinding ``finding_id`` found, or refuse with one clear error.

    An entry's content goes through ``memory_entry_redact`` (the whole
    content, as entries are redacted); any other text loses exactly the
    secret's span, which must still hold the secret the scan found.
    """
    reason = _validate(reason, by)
    found = SecretFinding.objects.select_related("project").filter(pk=finding_id)
    if project is not None:  # the caller's project only
        found = found.filter(project=project)
    finding = found.first() if isinstance(finding_id, int) else None
    if finding is None:
        where = f" in project {project.pk}" if project is not None else ""
        raise ValidationError({"finding": [f"no secret finding {finding_id!r}{where}: run "
                                           "`manage.py memory scan` again"]})
    project = finding.project
    if finding.source == "entry":
        if not redactable(finding):
            raise InvalidState(f"{why_not_redactable(finding)}: only an entry's content can "
                               "be redacted")
        redacted = memory_entry_redact(project=project, seq=int(finding.seq or 0),
                                       reason=reason, by=by, full_vacuum=full_vacuum)
        # Answered; the next scan replaces the entry's other findings too.
        SecretFinding.objects.filter(project=project, source="entry",
                                     seq=finding.seq).delete()
        return redacted
    source = _REDACTABLE.get(finding.source)
    if source is None:
        raise InvalidState(why_not_redactable(finding))
    secret_scan.refuse_secrets(project, {"reason": reason})
    with _secure_delete():
        with transaction.atomic():
            lock_project(project)
            target, field_text = source.locate(project, finding)
            secret = _still_there(finding, target, field_text)
            now = timezone.now()
            notice = redaction_notice(by, format_timestamp(now), reason)
            cut = target.encode(notice)
            after = target.text[:target.start] + cut + target.text[target.start + target.length:]
            record = TextRedaction(
                project=project, source=finding.source, row=finding.row, field=finding.field,
                table_name=target.model._meta.db_table, row_id=target.row_id,
                column_name=target.column, cut_start=target.start, cut_length=target.length,
                notice=cut, before_length=len(target.text),
                before_sha256=sha256_text(target.text), after_sha256=sha256_text(after),
                kind=finding.kind, fingerprint=finding.fingerprint, reason=reason,
                redacted_by=by, created_at=now)
            seal_text_redaction(record)
            record.save(force_insert=True)
            _update(target, after)
            copies = {name: scrub(project, target, secret, notice, record)
                      for name, scrub in {**source.copies, **_TEXT_COPIES}.items()}
            # This finding is answered; the next scan replaces the rest.
            SecretFinding.objects.filter(pk=finding.pk).delete()
        # The pages' cached renderings of the text (memory/rendering.py).
        rendering.forget(target.text)
        rendering.forget(field_text)
        tables = [target.model._meta.db_table, *_copy_tables]
        result = TextRedactionResult(redaction=record, copies_scrubbed=copies)
        result.purge = purge(full=full_vacuum, tables=tables)
    return result


# Tables that hold copies (vacuumed after any text redaction on PostgreSQL).
_copy_tables: list[str] = [DocumentVector._meta.db_table]


def redactable_tables() -> list[str]:
    """Every table a text redaction may change or scrub, for the purge."""
    return list(dict.fromkeys([table for source in _REDACTABLE.values()
                               for table in source.tables] + _copy_tables))


def register_copy_table(table: str) -> None:
    if table not in _copy_tables:
        _copy_tables.append(table)


def _still_there(finding: SecretFinding, target: Target, field_text: str) -> str:
    """The secret, if the stored text still holds the finding exactly; else a clear refusal."""
    found = [f for f in secret_scan.scanner().scan(finding.field, field_text)
             if (f.fingerprint, f.offset, f.length)
             == (finding.fingerprint, finding.offset, finding.length)]
    if not found:
        raise InvalidState(
            f"the stored text of {finding.source} {finding.where()} no longer holds this "
            f"{finding.kind} at line {finding.line}, column {finding.column}: run "
            "`manage.py memory scan` again")
    secret = field_text[finding.offset:finding.offset + finding.length]
    if target.encode(secret) != target.text[target.start:target.start + target.length]:
        raise InvalidState(f"{finding.source} {finding.where()}: the secret's place in the "
                           "stored text could not be found; nothing was changed")
    return secret


def _update(target: Target, after: str) -> None:
    table = connection.ops.quote_name(target.model._meta.db_table)
    column = connection.ops.quote_name(target.column)
    with connection.cursor() as cursor:
        # An append-only table's triggers let this one UPDATE through, as the
        # record just inserted describes it (memory 0025, governance 0015).
        cursor.execute(f"UPDATE {table} SET {column} = %s WHERE id = %s",  # nosec B608: names from the models
                       [after, target.row_id])
        if cursor.rowcount != 1:
            raise InvalidState(f"{target.model.__name__} {target.row_id} is gone; nothing "
                               "was changed")


def text_target(model: type[models.Model], row_id: int, column: str, text: str | None,
                finding: SecretFinding, *, append_only: bool = True) -> tuple[Target, str]:
    """The Target of a finding in a plain text column (the field is the column)."""
    if text is None:
        raise InvalidState(f"{finding.source} {finding.where()} has no {column} any more")
    return Target(model=model, row_id=row_id, column=column, text=text, start=finding.offset,
                  length=finding.length, append_only=append_only), text


def json_target(model: type[models.Model], row_id: int, column: str, raw: str,
                finding: SecretFinding, strings: dict[str, str | None]) -> tuple[Target, str]:
    """The Target of a finding in a string of a JSON column: the secret's escaped form in it.

    ``strings`` are the JSON value's strings by the scan's path names. The
    span is the first place the secret's JSON-escaped text appears in the
    stored JSON, which must be inside a string: the notice, escaped the same
    way, keeps the document valid JSON (checked before anything is written).
    """
    value = strings.get(finding.field)
    if value is None:
        raise InvalidState(f"{finding.source} {finding.where()} has no {finding.field} any more")
    secret = value[finding.offset:finding.offset + finding.length]
    for ascii_only in (True, False):
        escaped = json.dumps(secret, ensure_ascii=ascii_only)[1:-1]
        start = raw.find(escaped) if escaped else -1
        if start < 0:
            continue

        def encode(text: str, ascii_only: bool = ascii_only) -> str:
            return json.dumps(text, ensure_ascii=ascii_only)[1:-1]

        after = raw[:start] + encode("[redacted]") + raw[start + len(escaped):]
        try:
            json.loads(after)
        except ValueError:
            continue
        return Target(model=model, row_id=row_id, column=column, text=raw, start=start,
                      length=len(escaped), encode=encode), value
    raise InvalidState(f"{finding.source} {finding.where()}: the secret's place in the stored "
                       "JSON could not be found; nothing was changed")


def committed_sha256(row: models.Model, column: str) -> str | None:
    """The digest a hash over ``row``'s ``column`` committed to, through its redactions.

    sha256 of the text, unless redactions (memory.TextRedaction) changed it:
    then, when the records lead from a first digest, record by record, to
    the text stored now, that first digest; when they do not, the text's
    own digest, which then fails whatever check holds the original.
    """
    text = getattr(row, column)
    if text is None:
        return None
    digest = sha256_text(text)
    # Only a redacted text holds a notice (JSON escapes leave its opening words
    # as they are); a migration may run before the records' table exists.
    if ("[redacted by " not in text
            or TextRedaction._meta.db_table not in connection.introspection.table_names()):
        return digest
    # Only records GedWeb signed explain a change (seal_text_redaction).
    records = [(record.before_sha256, record.after_sha256)
               for record in TextRedaction.objects.filter(
                   table_name=row._meta.db_table, row_id=row.pk, column_name=column,
               ).order_by("id")
               if text_redaction_authentic(record)]
    if not records or records[-1][1] != digest:
        return digest
    for (_, after), (before, _) in zip(records, records[1:], strict=False):
        if after != before:
            return digest
    committed: str = records[0][0]
    return committed


TEXT_REDACTION_MAC_SALT = "gedweb.memory.TextRedaction.v1"
_SIGNED_FIELDS = ("project_id", "source", "row", "field", "table_name", "row_id",
                  "column_name", "cut_start", "cut_length", "notice", "before_length",
                  "before_sha256", "after_sha256", "kind", "fingerprint", "reason",
                  "redacted_by")


def _record_digest(record: TextRedaction) -> str:
    fields = {name: getattr(record, name) for name in _SIGNED_FIELDS}
    fields["created_at"] = format_timestamp(record.created_at)
    return sha256_text(canonical_json(fields))


def _signed(record: TextRedaction) -> checkpoints.Checkpoint:
    return checkpoints.Checkpoint(0, _record_digest(record), format_timestamp(record.created_at),
                                  record.mac, record.key_id)


def seal_text_redaction(record: TextRedaction) -> None:
    """Set the record's ``mac`` and ``key_id``: the HMAC of all it says, under the signing key."""
    record.key_id = checkpoints.key_id()
    record.mac = checkpoints.checkpoint_mac(
        record.project_id, 0, _record_digest(record), format_timestamp(record.created_at),
        salt=TEXT_REDACTION_MAC_SALT)


def text_redaction_authentic(record: TextRedaction) -> bool:
    return checkpoints.authentic(record.project_id, _signed(record),
                                 salt=TEXT_REDACTION_MAC_SALT)


def text_redaction_problems(project: Project) -> tuple[int, list[str]]:
    """How many text redactions the project has, and what is wrong with any of them.

    A record GedWeb did not sign (inserted behind its back) explains
    nothing; a record whose row no longer holds its notice, or whose text
    no longer hashes as the records lead, was changed since.
    """
    records = list(TextRedaction.objects.filter(project=project).order_by("id"))
    problems = []
    for record in records:
        if not text_redaction_authentic(record):
            problems.append(f"text redaction {record.pk} ({record.table_name} row "
                            f"{record.row_id}) fails its MAC: {_forged_hint(record)}")
    return len(records), problems


def _forged_hint(record: TextRedaction) -> str:
    return ("inserted behind GedWeb's back, or signed with a key this server no longer "
            f"holds (key id {record.key_id or 'none'})")


# --- memory's own sources ---------------------------------------------------------------------


def _locate_candidate(project: Project, finding: SecretFinding) -> tuple[Target, str]:
    ident = finding.row.get("id")
    candidate = (MemoryCandidate.objects.select_for_update().filter(project=project, pk=ident)
                 .first() if str(ident).isdigit() else None)
    if candidate is None or finding.field not in ("content", "source", "idempotency_key"):
        raise InvalidState(f"candidate {ident} of {project.pk} is gone: run "
                           "`manage.py memory scan` again")
    return text_target(MemoryCandidate, candidate.pk, finding.field,
                       getattr(candidate, finding.field), finding, append_only=False)


def _locate_document(project: Project, finding: SecretFinding) -> tuple[Target, str]:
    revision = DocumentRevision.objects.filter(
        project=project, path=finding.row.get("path"), revision=finding.row.get("revision"),
    ).first()
    if revision is None or finding.field not in ("content", "reason"):
        raise InvalidState(f"document {finding.where()} of {project.pk} is gone: run "
                           "`manage.py memory scan` again")
    return text_target(DocumentRevision, revision.pk, finding.field,
                       getattr(revision, finding.field), finding)


def _forget_document_vectors(project: Project, target: Target, secret: str, notice: str,
                             record: TextRedaction) -> int:
    # Made from the text with the secret in it; the indexer embeds the new text.
    if target.model is not DocumentRevision:
        return 0
    deleted, _ = DocumentVector.objects.filter(revision_id=target.row_id).delete()
    return int(deleted)


register_redactable("candidate", Redactable(
    locate=_locate_candidate, tables=(MemoryCandidate._meta.db_table,)))
register_redactable("document", Redactable(
    locate=_locate_document, tables=(DocumentRevision._meta.db_table,),
    copies={"document_vectors": _forget_document_vectors}))
