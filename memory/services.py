"""Writes that span models: projects and tokens, entries, candidates.

API views, admin actions and management commands all call these; each
takes plain values and runs in one transaction.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from gedweb.db.compiled import CompiledInsert
from gedweb.errors import Conflict, IdempotencyInFlight, IdempotencyKeyReused, ReviewRefused
from gedweb.lib.canonical import canonical_json
from gedweb.lib.chain import GENESIS_HASH, entry_hash
from gedweb.lib.digest import sha256_text
from gedweb.validation import collect_errors, validation_error_line
from memory import checkpoints, metrics, mirror, quotas, secret_scan
from memory.demo import DEMO_PROJECT_ID, DEMO_PROJECT_NAME, DEMO_TOKEN, DEMO_TOKEN_NAME
from memory.locks import lock_project
from memory.models import (
    ChainVerification,
    Membership,
    MemoryCandidate,
    MemoryEntry,
    Project,
    ProjectToken,
    format_timestamp,
    hash_token,
)
from memory.querysets import newest_chain_row
from memory.validators import (
    validate_category,
    validate_content,
    validate_idempotency_key,
    validate_project_id,
    validate_project_name,
    validate_source,
    validate_supplied_token,
    validate_token_name,
)

if TYPE_CHECKING:
    # settings.AUTH_USER_MODEL: the memberships' foreign key points at it.
    from django.contrib.auth.models import User

DEFAULT_TOKEN_NAME = "default"
CLI_AUTHOR = "cli"

logger = logging.getLogger("memory.services")


# --- projects and tokens -------------------------------------------------


def generate_project_token() -> str:
    return "gwp_" + secrets.token_urlsafe(32)


def _token_create(*, project: Project, name: str, raw: str) -> ProjectToken:
    if raw in (settings.ADMIN_TOKEN, settings.MEMORY_WRITE_TOKEN):
        # The admin token is checked first, so a project token equal to it
        # would act as admin.
        raise ValidationError({"token": ["must differ from the server's admin and memory tokens"]})
    if ProjectToken.objects.filter(token_hash=hash_token(raw)).exists():
        raise Conflict("that token is already in use; choose another")
    if ProjectToken.objects.active().filter(project=project, name=name).exists():
        raise Conflict(f"project {project.id} already has an active token named {name!r}")
    # The prefix only helps a person recognise a token; a quarter of it at
    # most, so a short supplied token is not left a few guesses from its hash.
    prefix = raw[: min(8, len(raw) // 4)]
    return ProjectToken.objects.create(
        project=project, name=name, token_hash=hash_token(raw), prefix=prefix
    )


def project_create(
    *, project_id: str, name: str, token: str | None = None, token_name: str = DEFAULT_TOKEN_NAME
) -> tuple[Project, str]:
    """Create a project with its first token; returns the raw token (shown once)."""
    checks: dict[str, tuple[Any, Any]] = {
        "id": (validate_project_id, project_id),
        "name": (validate_project_name, name),
        "token_name": (validate_token_name, token_name),
    }
    if token is not None:
        checks["token"] = (validate_supplied_token, token)
    collect_errors(checks)
    raw = token if token is not None else generate_project_token()
    try:
        with transaction.atomic():
            if Project.objects.filter(pk=project_id).exists():
                raise Conflict(f"project {project_id} already exists")
            project = Project.objects.create(id=project_id, name=name)
            _token_create(project=project, name=token_name, raw=raw)
            quotas.quota_rows_create(project)
    except IntegrityError:
        # A concurrent create of the same id or token lost the race.
        raise Conflict(f"project {project_id} or its token already exists") from None
    return project, raw


def project_token_create(
    *, project: Project, name: str, token: str | None = None
) -> tuple[ProjectToken, str]:
    checks: dict[str, tuple[Any, Any]] = {"name": (validate_token_name, name)}
    if token is not None:
        checks["token"] = (validate_supplied_token, token)
    collect_errors(checks)
    raw = token if token is not None else generate_project_token()
    try:
        with transaction.atomic():
            record = _token_create(project=project, name=name, raw=raw)
    except IntegrityError:
        raise Conflict(f"project {project.id} already has an active token named {name!r}") from None
    return record, raw


def project_token_revoke(*, project: Project, name: str) -> int:
    """Revoke the project's active tokens with this name; returns how many."""
    tokens = list(ProjectToken.objects.active().filter(project=project, name=name))
    for record in tokens:
        record.revoke()
    return len(tokens)


def demo_project_ensure() -> Project:
    """The development demo project and its well-known token, idempotently."""
    with transaction.atomic():
        project, _ = Project.objects.get_or_create(
            id=DEMO_PROJECT_ID, defaults={"name": DEMO_PROJECT_NAME}
        )
        # Token hashes are unique, so a revoked demo token cannot be issued
        # again: it stays revoked instead of failing every later start.
        if not ProjectToken.objects.filter(token_hash=hash_token(DEMO_TOKEN)).exists():
            ProjectToken.objects.active().filter(project=project, name=DEMO_TOKEN_NAME).update(
                revoked_at=timezone.now()
            )
            _token_create(project=project, name=DEMO_TOKEN_NAME, raw=DEMO_TOKEN)
        # As for any new project: its four quotas are in the admin before its
        # first write (post_migrate runs after memory 0010's backfill).
        quotas.quota_rows_create(project)
    return project


# --- memory entries --------------------------------------------------------


@dataclass(frozen=True)
class AppendResult:
    entry: MemoryEntry
    replayed: bool
    # The chain rows of the entry before it (when there is one) and of the
    # entry itself: what the mirror writer needs to confirm the file's last
    # block and append the new one without reading either back.
    mirror_rows: tuple[dict[str, Any], ...] = ()


def _validate_entry_fields(project: Project, category: Any, content: Any, source: Any) -> None:
    """The fields' rules (400), then the secret scan (422): entries and candidates alike.

    Before any lock: the scan costs the append its CPU, not the writers
    queued behind it (docs/performance.md).
    """
    collect_errors(
        {
            "category": (validate_category, category),
            "content": (validate_content, content),
            "source": (validate_source, source),
        }
    )
    secret_scan.refuse_secrets(project, {"content": content, "source": source})


# --- idempotency keys (entry appends and candidate proposals) -------------
#
# One rule for both writes: a key belongs to (project, scope), scope naming
# the token that sent it; the same key and body replay the stored row, the
# same key with another body is refused, and a key in flight is refused at
# once on PostgreSQL. Each kind of write has its own advisory-lock namespace,
# so an entry key and a candidate key with the same text never block each
# other. The entries' namespace is the text it always was, so servers of the
# previous release still share its locks during a rolling upgrade.
ENTRY_KEYS = "gedweb.idempotency"
CANDIDATE_KEYS = "gedweb.idempotency.candidate"

KeyedRow = TypeVar("KeyedRow", MemoryEntry, MemoryCandidate)


def idempotency_key_digest(key: str) -> str:
    """What is stored of an Idempotency-Key: its SHA-256, never the key itself.

    Keys are client text that no secret scan reads (a client may send a
    credential as one); a replay needs only equality, which the digest keeps.
    The advisory lock of a key in flight takes the key as sent: it is
    never stored.
    """
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _stored_key(key: str | None) -> str | None:
    return None if key is None else idempotency_key_digest(key)


def request_fingerprint(body: dict[str, Any]) -> str:
    """Canonical form of a request body, so key order and spacing do not matter."""
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def _keyed_request_hash(
    key: str | None, request_hash: str | None, body: dict[str, Any]
) -> str | None:
    """What a keyed write stores to tell a replay from a reuse; None without a key.

    Validates the key first, so a malformed one is a 400 naming the header
    and nothing is stored. ``request_hash`` is the API's fingerprint of the
    body as sent; service callers leave it None and ``body`` is fingerprinted.
    """
    if key is None:
        return None
    collect_errors({"Idempotency-Key": (validate_idempotency_key, key)})
    return request_hash if request_hash is not None else request_fingerprint(body)


def _claim_idempotency_key(project: Project, scope: str, key: str, *, namespace: str) -> None:
    # On PostgreSQL a transaction-scoped advisory lock marks the key as in
    # flight: a concurrent request with the same key is told so at once
    # instead of queueing behind it. SQLite serialises writers with BEGIN
    # IMMEDIATE, so a second request there simply waits and replays.
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))",
            # \x1f cannot occur in a key (printable ASCII only) or a scope.
            [f"{namespace}\x1f{project.pk}\x1f{scope}\x1f{key}"],
        )
        (acquired,) = cursor.fetchone()
    if not acquired:
        raise IdempotencyInFlight("a request with this Idempotency-Key is still being processed")


def _replay_of(earlier: KeyedRow | None, request_hash: str | None) -> KeyedRow | None:
    """The row a keyed request replays, or None when its key stored nothing yet.

    Call it with the key claimed, so no other request can store under it
    meanwhile. A stored row with another request hash means the key was
    reused for a different body: refused, never answered with that row.
    """
    if earlier is None:
        return None
    if earlier.request_hash != request_hash:
        raise IdempotencyKeyReused("this Idempotency-Key was used with a different request body")
    return earlier


def _keyed_entry(project: Project, scope: str, author: str, key: str) -> MemoryEntry | None:
    """The entry stored under this key by this scope, if any.

    Rows from before keys had a scope (idempotency_scope NULL) were keyed
    per project; such a row still answers a replay from its own author, so a
    retry across the upgrade never doubles an entry, but never another's.
    """
    return (
        MemoryEntry.objects.for_project(project)
        .filter(idempotency_key=idempotency_key_digest(key))
        .filter(Q(idempotency_scope=scope) | Q(idempotency_scope__isnull=True, author=author))
        .first()
    )


# The entry's INSERT, compiled once per thread (gedweb/db/compiled.py).
_ENTRY_INSERT = CompiledInsert(MemoryEntry)


def _append_locked(
    *,
    project: Project,
    author: str,
    category: str,
    content: str,
    source: str,
    corrects: str | int | None,
    idempotency_key: str | None,
    request_hash: str | None,
    idempotency_scope: str | None = None,
    created_at: datetime | None = None,
    redacts: MemoryEntry | None = None,
) -> AppendResult:
    """The one append: replay by key, or take the next seq and link it to the head.

    Every entry is written in chain format 2 (gedweb.lib.chain): its hash
    commits to the content's digest. ``redacts`` is set by memory.redaction
    alone, on the record of a redaction.

    The caller holds a transaction and the project row lock (memory.locks.lock_project),
    has validated the fields, and schedules the mirror update on commit.
    created_at is None for a new entry (now) and the original time for an
    import, kept as given even if an earlier seq carries a later time.
    """
    scope = idempotency_scope or author
    if idempotency_key is not None:
        earlier = _replay_of(_keyed_entry(project, scope, author, idempotency_key), request_hash)
        if earlier is not None:
            return AppendResult(earlier, replayed=True)
    corrected = None
    if corrects is not None:
        corrected = (
            MemoryEntry.objects.for_project(project).by_ref(corrects).only("id", "uuid").first()
        )
        if corrected is None:
            raise ValidationError({"corrects": ["no entry with this id or seq in this project"]})
    head = newest_chain_row(project.pk)
    head_row, head_created_at = head if head is not None else (None, None)
    if created_at is None:
        created_at = timezone.now()
        if head_created_at is not None and created_at < head_created_at:
            # Keep created_at in seq order even if the wall clock steps back.
            created_at = head_created_at + timedelta(microseconds=1)
    entry = MemoryEntry(
        project=project,
        seq=head_row["seq"] + 1 if head_row else 1,
        category=category,
        content=content,
        source=source,
        corrects=corrected,
        author=author,
        created_at=created_at,
        content_sha256=sha256_text(content),
        redacts=redacts,
        prev_hash=head_row["hash"] if head_row else GENESIS_HASH,
        idempotency_key=_stored_key(idempotency_key),
        idempotency_scope=scope if idempotency_key is not None else None,
        request_hash=request_hash if idempotency_key is not None else None,
    )
    entry.hash = entry_hash(entry.prev_hash, entry.chained_fields())
    checkpoints.seal(entry)
    # After the replay check (a replay stores nothing, so costs nothing) and
    # under the project lock the caller took: the quota row is the last lock.
    quotas.quota_charge(project=project, kind="entries", size_bytes=quotas.text_bytes(content))
    _ENTRY_INSERT.insert(entry)
    transaction.on_commit(metrics.APPENDS.inc, robust=True)  # /metrics; never fails the append
    entry.corrected_by_rows = []
    rows = (head_row, entry.chain_row()) if head_row else (entry.chain_row(),)
    return AppendResult(entry, replayed=False, mirror_rows=rows)


def memory_entry_create(
    *,
    project: Project,
    author: str,
    category: str,
    content: str,
    source: str = "operator",
    corrects: str | int | None = None,
    idempotency_key: str | None = None,
    request_hash: str | None = None,
    idempotency_scope: str | None = None,
) -> AppendResult:
    """Append one entry with the next seq and its hash link.

    An Idempotency-Key belongs to ``idempotency_scope``, the token that sent
    it (the API passes Principal.idempotency_scope), or else to the author:
    the same key from two tokens is two independent keys.

    seq and prev_hash come from the project's newest entry, read while the
    project row is locked (SELECT ... FOR UPDATE on PostgreSQL, the write
    lock of BEGIN IMMEDIATE on SQLite), so concurrent appends queue and
    every seq is taken exactly once; UNIQUE(project, seq) is the backstop.
    """
    _validate_entry_fields(project, category, content, source)
    request_hash = _keyed_request_hash(
        idempotency_key,
        request_hash,
        {"category": category, "content": content, "source": source, "corrects": corrects},
    )
    # Only a transaction of our own commits here; inside a caller's, the
    # mirror's turn would be held until that one ends.
    outermost = not transaction.get_connection().in_atomic_block
    reservation = None
    try:
        with transaction.atomic():
            if idempotency_key is not None:
                _claim_idempotency_key(
                    project, idempotency_scope or author, idempotency_key, namespace=ENTRY_KEYS
                )
            lock_project(project)
            result = _append_locked(
                project=project,
                author=author,
                category=category,
                content=content,
                source=source,
                corrects=corrects,
                idempotency_key=idempotency_key,
                request_hash=request_hash,
                idempotency_scope=idempotency_scope,
            )
            if not result.replayed:
                if outermost and connection.vendor == "postgresql":
                    # Under the row lock, so writers reach the mirror in commit order.
                    reservation = mirror.reserve(project.pk)
                transaction.on_commit(partial(
                    mirror.after_commit, project.pk, result.entry.seq, result.mirror_rows,
                    reservation))
                if checkpoints.due(result.entry.seq, result.entry.seq):
                    transaction.on_commit(partial(
                        checkpoints.after_commit, project.pk, result.entry.seq,
                        result.entry.hash))
    except IntegrityError:
        raise Conflict("another write to this project's memory won the race; retry") from None
    finally:
        if reservation is not None:
            reservation.release()  # rolled back, or the writer released it already
    return result


@dataclass(frozen=True)
class ImportRow:
    """One entry from another system, with its original time and a stable key.

    ``key`` is stored as the entry's idempotency key, so importing the same
    row again replays it; ``label`` names the row in error messages.
    """

    key: str
    category: str
    content: str
    source: str
    created_at: datetime
    label: str


@dataclass(frozen=True)
class ImportResult:
    imported: list[MemoryEntry]
    present: list[MemoryEntry]


def import_fingerprint(row: ImportRow) -> str:
    """What a re-import must match: the fields as stored, time included."""
    return request_fingerprint(
        {
            "category": row.category,
            "content": row.content,
            "source": row.source,
            "created_at": format_timestamp(row.created_at),
        }
    )


def _validate_import_row(row: ImportRow) -> None:
    try:
        collect_errors(
            {
                "category": (validate_category, row.category),
                "content": (validate_content, row.content),
                "source": (validate_source, row.source),
                "key": (validate_idempotency_key, row.key),
            }
        )
        if row.created_at.tzinfo is None or row.created_at.utcoffset() is None:
            raise ValidationError({"created_at": ["must carry a UTC offset"]})
    except ValidationError as exc:
        raise ValidationError(f"{row.label}: {validation_error_line(exc)}") from None


def memory_entries_import(
    *, project: Project, rows: list[ImportRow], author: str = CLI_AUTHOR
) -> ImportResult:
    """Append rows in the order given, keeping their original created_at; all or nothing.

    Every row is validated before anything is written. A row whose key is
    already stored with the same fields is counted as present; the same key
    with different fields is a Conflict and nothing of the run is kept.
    Every row is scanned for secrets too: rows holding one are refused
    together, each named, and nothing of the run is kept.
    """
    for row in rows:
        _validate_import_row(row)
    secret_scan.refuse_items(
        project, ((row.label, {"content": row.content, "source": row.source}) for row in rows),
        "entries",
    )
    imported: list[MemoryEntry] = []
    present: list[MemoryEntry] = []
    try:
        with transaction.atomic(), quotas.deferred():
            lock_project(project)
            for row in rows:
                try:
                    result = _append_locked(
                        project=project,
                        author=author,
                        category=row.category,
                        content=row.content,
                        source=row.source,
                        corrects=None,
                        idempotency_key=row.key,
                        request_hash=import_fingerprint(row),
                        created_at=row.created_at.astimezone(UTC),
                    )
                except IdempotencyKeyReused:
                    # Raised only when an entry is stored under this key.
                    earlier = cast(MemoryEntry, _keyed_entry(project, author, author, row.key))
                    raise Conflict(
                        f"{row.label} was imported as seq {earlier.seq} and has changed since "
                        "(category, content, source or time); nothing was imported"
                    ) from None
                (present if result.replayed else imported).append(result.entry)
            if imported:
                transaction.on_commit(
                    partial(mirror.after_commit, project.pk, imported[0].seq))
                if checkpoints.due(imported[0].seq, imported[-1].seq):
                    transaction.on_commit(partial(
                        checkpoints.after_commit, project.pk, imported[-1].seq,
                        imported[-1].hash))
    except IntegrityError:
        raise Conflict("another write to this project's memory won the race; retry") from None
    return ImportResult(imported, present)


def memory_chain_verify(
    *, project: Project, checkpoint: bool = False,
    on_entry: Callable[[int], object] | None = None,
) -> checkpoints.VerifyReport:
    """Recompute every link and check the log against every stored checkpoint.

    With checkpoint=True (`memory verify`, `doctor`), a chain that verifies
    has its head recorded as a new checkpoint, and the CHECKPOINTS file is
    caught up with the table. The API's GET /verify only reads.
    """
    report = checkpoints.verify(project.pk, on_entry)
    if checkpoint and report.ok:
        taken = chain_checkpoint_take(project=project, head=(report.entries, report.head))
        if taken is not None:
            report = replace(report, checkpoint=taken)
    if checkpoint:
        # What the pages' chain badge shows (memory.services.chain_status).
        ChainVerification.objects.update_or_create(project=project, defaults={
            "checked_at": timezone.now(), "ok": report.ok, "entries": report.entries,
            "first_bad_seq": report.first_bad_seq,
            "problem": report.problems[0].message if report.problems else "",
        })
    return report


@dataclass(frozen=True)
class ChainStatus:
    """What the pages' badge says of a project's chain: the last check, and what came since.

    ``state`` is "verified" (the last check held and covered every entry),
    "behind" (it held, but entries were written since: those are unchecked),
    "failed" (the last check found a problem) or "never" (never checked).
    """

    state: str
    checked_at: datetime | None
    checked_entries: int
    head_seq: int
    first_bad_seq: int | None
    problem: str

    @property
    def unchecked(self) -> int:
        """Entries written after the last check, which it could not cover."""
        return max(self.head_seq - self.checked_entries, 0)


def chain_status(*, project: Project) -> ChainStatus:
    """The last recorded verification of the project's chain against its head now."""
    newest = MemoryEntry.objects.for_project(project).head()
    head_seq = newest["seq"] if newest else 0
    last = ChainVerification.objects.filter(project=project).first()
    if last is None:
        return ChainStatus("never", None, 0, head_seq, None, "")
    if not last.ok:
        state = "failed"
    elif last.entries < head_seq:
        state = "behind"
    else:
        state = "verified"
    return ChainStatus(state, last.checked_at, last.entries, head_seq, last.first_bad_seq,
                       last.problem)


CHECKPOINT_FILE_WAIT_SECONDS = 5.0


def chain_checkpoint_take(
    *, project: Project, head: tuple[int, str] | None = None
) -> checkpoints.Checkpoint | None:
    """Record the head (seq, hash) as a checkpoint and catch the CHECKPOINTS file up.

    head defaults to the project's newest entry. None when the project has
    no entries; the head's existing checkpoint when one is on record already.
    """
    if head is None:
        newest = MemoryEntry.objects.for_project(project).head()
        head = (newest["seq"], newest["hash"]) if newest else (0, GENESIS_HASH)
    seq, head_hash = head
    if seq < 1:
        return None
    taken = checkpoints.take(project.pk, seq, head_hash)
    try:
        # Bounded: a command must not hang on a mirror lock that someone
        # never releases (the doctor reports such a lock).
        checkpoints.sync_file(project.pk, wait=CHECKPOINT_FILE_WAIT_SECONDS)
    except (mirror.MirrorPathError, OSError):
        # The table holds the checkpoint, and the next checkpoint catches the
        # file up; the doctor reports the directory or the lock.
        logger.warning("cannot write the CHECKPOINTS file of %s", project.pk, exc_info=True)
    if taken is None:
        taken = next(
            (c for c in checkpoints.recorded_at(project.pk, seq) if c.hash == head_hash), None
        )
    return taken


# --- candidates ------------------------------------------------------------


@dataclass(frozen=True)
class ProposalResult:
    candidate: MemoryCandidate
    replayed: bool


def candidate_propose(
    *,
    project: Project,
    author: str,
    category: str,
    content: str,
    source: str = "operator",
    idempotency_key: str | None = None,
    request_hash: str | None = None,
    idempotency_scope: str | None = None,
) -> ProposalResult:
    """Store a pending candidate, or answer a retried proposal with the one its key stored.

    Keys follow memory_entry_create's rules: they belong to
    ``idempotency_scope`` (the sending token) or else to the author; a replay
    stores nothing and charges no quota; another body under the same key is
    IdempotencyKeyReused; a key in flight on PostgreSQL is IdempotencyInFlight.
    """
    _validate_entry_fields(project, category, content, source)
    request_hash = _keyed_request_hash(
        idempotency_key, request_hash, {"category": category, "content": content, "source": source}
    )
    scope = idempotency_scope or author
    try:
        with transaction.atomic():
            if idempotency_key is not None:
                _claim_idempotency_key(project, scope, idempotency_key, namespace=CANDIDATE_KEYS)
                keyed = (
                    MemoryCandidate.objects.for_project(project)
                    .filter(idempotency_scope=scope,
                            idempotency_key=idempotency_key_digest(idempotency_key))
                    .first()
                )
                earlier = _replay_of(keyed, request_hash)
                if earlier is not None:
                    return ProposalResult(earlier, replayed=True)
            quotas.quota_charge(
                project=project, kind="entries", size_bytes=quotas.text_bytes(content)
            )
            candidate = MemoryCandidate.objects.create(
                project=project,
                author=author,
                category=category,
                content=content,
                source=source,
                idempotency_key=_stored_key(idempotency_key),
                idempotency_scope=scope if idempotency_key is not None else None,
                request_hash=request_hash,
            )
    except IntegrityError:
        # UNIQUE(project, scope, key) is the backstop behind the key claim.
        raise Conflict("another proposal with this Idempotency-Key won the race; retry") from None
    return ProposalResult(candidate, replayed=False)


def candidate_create(
    *, project: Project, author: str, category: str, content: str, source: str = "operator"
) -> MemoryCandidate:
    """A proposal without a key (admin, fixtures, other services): the new candidate."""
    return candidate_propose(
        project=project, author=author, category=category, content=content, source=source
    ).candidate


# The review gate. A principal is known by the author name it writes under:
# a project token by its name (a token reissued under a revoked one's name is
# the same principal), the admin token as ``admin``, a person as
# ``user:<login>``; token names can be neither of the last two, so the three
# never collide. Who may decide at all is each face's own check (the memory
# write boundary on the API, the operator role on the pages, the admin's
# permissions); whether *this* principal may take *this* decision is here.
APPROVE, REJECT, WITHDRAW = "approve", "reject", "withdraw"


def candidate_refusal(*, candidate: MemoryCandidate, by: str, action: str) -> str | None:
    """Why ``by`` may not ``action`` (approve, reject, withdraw) ``candidate``; None if it may.

    No principal approves its own proposal, so a proposer that holds the
    write right cannot turn its own text into memory in two calls; it
    cannot reject it either (that is a reviewer's decision), it withdraws
    it. Only the proposer withdraws.
    """
    own = by == candidate.author
    if action in (APPROVE, REJECT) and own:
        return (f"{by} proposed this candidate and may not {action} it: another principal "
                "(an operator on the team pages or the admin, or the memory write token's "
                "holder) decides it; its proposer may only withdraw it")
    if action == WITHDRAW and not own:
        return (f"only the candidate's proposer ({candidate.author}) may withdraw it; "
                "a reviewer rejects it instead")
    if action not in (APPROVE, REJECT, WITHDRAW):
        raise ValueError(f"unknown candidate action {action!r}")
    return None


def _pending_candidate(
    project: Project, candidate: MemoryCandidate, *, by: str, action: str
) -> MemoryCandidate:
    locked = MemoryCandidate.objects.select_for_update().get(pk=candidate.pk, project=project)
    if locked.status != MemoryCandidate.Status.PENDING:
        raise Conflict(f"candidate is {locked.status}, not pending")
    refusal = candidate_refusal(candidate=locked, by=by, action=action)
    if refusal is not None:
        raise ReviewRefused(refusal)
    return locked


def candidate_approve(*, project: Project, candidate: MemoryCandidate, by: str) -> MemoryEntry:
    """Turn a pending candidate into exactly one entry, even under concurrent approvals."""
    with transaction.atomic():
        locked = _pending_candidate(project, candidate, by=by, action=APPROVE)
        result = memory_entry_create(
            project=project,
            author=by,
            category=locked.category,
            content=locked.content,
            source=locked.source,
        )
        updated = MemoryCandidate.objects.filter(
            pk=locked.pk, status=MemoryCandidate.Status.PENDING
        ).update(
            status=MemoryCandidate.Status.APPROVED,
            entry=result.entry,
            resolved_at=timezone.now(),
            resolved_by=by,
        )
        if updated != 1:
            # The row lock makes this unreachable; the conditional update is
            # the second guard, and raising rolls the new entry back.
            raise Conflict("candidate is no longer pending")
    return result.entry


def _candidate_close(
    project: Project, candidate: MemoryCandidate, by: str, action: str, status: str
) -> MemoryCandidate:
    with transaction.atomic():
        locked = _pending_candidate(project, candidate, by=by, action=action)
        locked.status = status
        locked.resolved_at = timezone.now()
        locked.resolved_by = by
        locked.save(update_fields=["status", "resolved_at", "resolved_by"])
    return locked


def candidate_reject(*, project: Project, candidate: MemoryCandidate, by: str) -> MemoryCandidate:
    return _candidate_close(project, candidate, by, REJECT, MemoryCandidate.Status.REJECTED)


def candidate_withdraw(
    *, project: Project, candidate: MemoryCandidate, by: str
) -> MemoryCandidate:
    """The proposer takes its own pending candidate back: withdrawn, never memory."""
    return _candidate_close(project, candidate, by, WITHDRAW, MemoryCandidate.Status.WITHDRAWN)


# --- memberships -------------------------------------------------------------


def membership_set(
    *, user: User, project: Project, role: str
) -> tuple[Membership, bool]:
    """Give ``user`` ``role`` in ``project``: a new membership or a changed role.

    Returns the membership and whether anything was written; the same role
    again writes nothing.
    """
    if role not in Membership.Role.values:
        raise ValidationError({"role": [f"must be one of {', '.join(Membership.Role.values)}"]})
    with transaction.atomic():
        # The row lock orders two changes of one membership; get_or_create
        # falls back to a read when a concurrent add wins the unique constraint.
        membership, created = Membership.objects.select_for_update().get_or_create(
            user=user, project=project, defaults={"role": role}
        )
        if created:
            return membership, True
        if membership.role == role:
            return membership, False
        membership.role = role
        membership.save(update_fields=["role"])
    return membership, True


def membership_remove(*, user: User, project: Project) -> int:
    """Delete ``user``'s membership of ``project``; returns how many were deleted (0 or 1)."""
    with transaction.atomic():
        deleted, _ = Membership.objects.filter(user=user, project=project).delete()
    return deleted
