"""The indexer: follows the record and gives each entry its vector, off the append's path.

An append never waits for a model: it commits its entry, and the indexer
(``manage.py memory index --follow``, which `make run` starts beside the
workers) finds it by id after the model's cursor (RecallCursor), embeds it
outside any transaction, and writes the vector in a short transaction of its
own, with the cursor and the project's ``through_seq`` (RecallProgress).

Exactly one follower indexes a database at a time: it holds a lease (a
PostgreSQL advisory lock, or an flock on ``<database>-indexer`` beside a
SQLite file), and the others wait for it; a follower that dies releases it
with its connection or its file descriptors (docs/recall.md).

A redaction may commit between the embedding and the write. The write
therefore re-reads the batch's rows inside its transaction, locked against
the redaction's UPDATE on PostgreSQL (FOR NO KEY UPDATE; on SQLite the
transaction holds the one writer lock), and stores a vector only for a row
whose content is still the text embedded; a redaction that comes after it
deletes the vector in its own transaction (memory.redaction).
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Max
from django.utils import timezone

from gedweb.embedding import Embedder
from gedweb.lib.chain import is_redacted
from gedweb.lib.digest import sha256_text
from gedweb.lib.sections import markdown_sections
from memory.models import (
    DocumentRevision,
    DocumentVector,
    EntryVector,
    MemoryEntry,
    Project,
    RecallCursor,
    RecallProgress,
)
from memory.recall.vectors import quantise

logger = logging.getLogger(__name__)

# Entries embedded, then written, at a time: one short write transaction per batch.
BATCH = 32
# The advisory lock key of the PostgreSQL lease (an arbitrary constant: "GedWeb recall").
_ADVISORY_KEY = 0x6765647265636C


@dataclass
class Row:
    id: int
    project_id: str
    seq: int
    content: str
    content_sha256: str | None

    @property
    def indexable(self) -> bool:
        """A redacted entry's notice is not what was written: it gets no vector."""
        return not is_redacted(self.content, self.content_sha256)


@dataclass
class BatchResult:
    seen: int = 0
    indexed: int = 0
    skipped: int = 0
    last_id: int = 0
    projects: set[str] = field(default_factory=set)


_ROW_FIELDS = ("id", "project_id", "seq", "content", "content_sha256")


def _rows(entries: Iterable[tuple[Any, ...]]) -> list[Row]:
    return [Row(*values) for values in entries]


def index_rows(rows: list[Row], embedder: Embedder, *, move_cursor: bool = False) -> BatchResult:
    """Embed the rows, then store their vectors in one transaction; skip rows changed meanwhile.

    With ``move_cursor``, the model's cursor moves past the rows in the same
    transaction, so a follower killed at any point redoes at most one batch.
    """
    result = BatchResult(seen=len(rows), last_id=max((r.id for r in rows), default=0))
    todo = [row for row in rows if row.indexable]
    vectors = quantise(embedder.embed([row.content for row in todo])) if todo else []
    embedded = {row.id: (row, sha256_text(row.content), vector)
                for row, vector in zip(todo, vectors)}
    with transaction.atomic():
        current = MemoryEntry.objects.filter(id__in=list(embedded))
        if connection.vendor == "postgresql":
            current = current.select_for_update(no_key=True)
        still = {entry_id: sha256_text(content)
                 for entry_id, content in current.values_list("id", "content")}
        objects = []
        for entry_id, (row, digest, (vector, scale)) in embedded.items():
            if still.get(entry_id) != digest:
                continue  # redacted since it was read: the notice gets no vector
            objects.append(EntryVector(
                entry_id=entry_id, project_id=row.project_id, seq=row.seq,
                model=embedder.model_id, content_sha256=digest, vector=vector, scale=scale))
        EntryVector.objects.bulk_create(
            objects, update_conflicts=True, unique_fields=["entry"],
            update_fields=["project", "seq", "model", "content_sha256", "vector", "scale"])
        result.indexed = len(objects)
        result.skipped = len(rows) - len(objects)
        _advance(rows, embedder.model_id)
        if move_cursor:
            RecallCursor.objects.filter(model=embedder.model_id).update(
                through_id=result.last_id, updated_at=timezone.now())
    result.projects = {row.project_id for row in rows}
    return result


def _advance(rows: list[Row], model: str) -> None:
    """Move each project's through_seq over the rows, where they continue it without a gap."""
    by_project: dict[str, list[int]] = {}
    for row in rows:
        by_project.setdefault(row.project_id, []).append(row.seq)
    now = timezone.now()
    for project_id, seqs in by_project.items():
        progress, _ = RecallProgress.objects.get_or_create(project_id=project_id, model=model)
        through = progress.through_seq
        for seq in sorted(seqs):
            if seq == through + 1:
                through = seq
        if through != progress.through_seq:
            RecallProgress.objects.filter(pk=progress.pk).update(through_seq=through,
                                                                 updated_at=now)


# --- documents ---------------------------------------------------------------------------

# A section's first characters are what the model reads (it stops at 256
# tokens); the rest stays searchable by keyword.
SECTION_CHARS = 2_000
DOCUMENT_BATCH = 8


def documents_cursor_key(model: str) -> str:
    """The RecallCursor row of a model's document revisions (entries use the model id)."""
    return f"documents:{model}"[:64]


def index_revision(revision: DocumentRevision, embedder: Embedder) -> int:
    """Embed the revision's sections and make them its document's vectors; 0 if superseded.

    An older revision's sections are deleted in the same transaction: only
    a document's current revision is recalled.
    """
    parts = markdown_sections(revision.content)
    texts = [revision.content[part.start:part.end][:SECTION_CHARS] for part in parts]
    embedded = quantise(embedder.embed(texts)) if texts else []
    with transaction.atomic():
        newer = DocumentRevision.objects.filter(project_id=revision.project_id,
                                                path=revision.path,
                                                revision__gt=revision.revision)
        if newer.exists():
            return 0
        DocumentVector.objects.filter(project_id=revision.project_id,
                                      path=revision.path).delete()
        DocumentVector.objects.bulk_create([
            DocumentVector(revision=revision, project_id=revision.project_id, path=revision.path,
                           section=index, heading=part.heading[:500], start=part.start,
                           end=part.end, model=embedder.model_id,
                           content_sha256=sha256_text(text), vector=vector, scale=scale)
            for index, (part, text, (vector, scale)) in enumerate(zip(parts, texts, embedded))
        ])
    return len(parts)


def follow_documents_once(embedder: Embedder, batch: int = DOCUMENT_BATCH) -> BatchResult:
    """Index the next document revisions written after the model's documents cursor."""
    key = documents_cursor_key(embedder.model_id)
    cursor, _ = RecallCursor.objects.get_or_create(model=key)
    revisions = list(DocumentRevision.objects.filter(id__gt=cursor.through_id)
                     .order_by("id")[:batch])
    result = BatchResult(seen=len(revisions), last_id=cursor.through_id)
    for revision in revisions:
        result.indexed += index_revision(revision, embedder) > 0
        result.last_id = revision.pk
        RecallCursor.objects.filter(pk=key).update(through_id=revision.pk,
                                                   updated_at=timezone.now())
    return result


def backfill_documents(project: Project, embedder: Embedder) -> int:
    """Give every current document revision of the project its sections' vectors, if missing."""
    done = 0
    indexed = set(DocumentVector.objects.filter(project=project, model=embedder.model_id)
                  .values_list("revision_id", flat=True))
    for revision in DocumentRevision.objects.for_project(project).current().order_by("path"):
        if revision.pk not in indexed:
            done += index_revision(revision, embedder) > 0
    return done


def follow_once(embedder: Embedder, batch: int = BATCH) -> BatchResult:
    """Index the next batch of entries appended after the model's cursor."""
    cursor, _ = RecallCursor.objects.get_or_create(model=embedder.model_id)
    rows = _rows(MemoryEntry.objects.filter(id__gt=cursor.through_id).order_by("id")
                 .values_list(*_ROW_FIELDS)[:batch])
    if not rows:
        return BatchResult(last_id=cursor.through_id)
    return index_rows(rows, embedder, move_cursor=True)


def backfill(project: Project, embedder: Embedder,
             on_batch: Callable[[BatchResult, int], None] | None = None,
             batch: int = BATCH) -> int:
    """Give every entry of the project after its through_seq a current vector; resumable.

    Entries that already have a vector of this model made from their
    content are not embedded again. Each batch commits on its own, with the
    project's through_seq: a killed run resumes where it stopped.
    ``on_batch(result, through_seq)`` is called after each batch.
    """
    model = embedder.model_id
    done = 0
    while True:
        progress, _ = RecallProgress.objects.get_or_create(project=project, model=model)
        rows = _rows(MemoryEntry.objects.for_project(project)
                     .filter(seq__gt=progress.through_seq).order_by("seq")
                     .values_list(*_ROW_FIELDS)[:batch])
        if not rows:
            return done
        current = set(EntryVector.objects.filter(
            entry_id__in=[r.id for r in rows], model=model).values_list("entry_id",
                                                                        "content_sha256"))
        stale = [r for r in rows if (r.id, sha256_text(r.content)) not in current]
        if stale:
            result = index_rows(stale, embedder)
            done += result.indexed
        else:
            result = BatchResult(seen=len(rows))
        with transaction.atomic():
            _advance(rows, model)
        if on_batch is not None:
            on_batch(result, rows[-1].seq)


def rebuild(project: Project | None, model: str) -> None:
    """Forget the vectors of one project (or all) so they are made again from the start."""
    with transaction.atomic():
        vectors = EntryVector.objects.all()
        progress = RecallProgress.objects.filter(model=model)
        if project is not None:
            vectors = vectors.filter(project=project)
            progress = progress.filter(project=project)
        else:
            RecallCursor.objects.filter(model=model).update(through_id=0,
                                                            updated_at=timezone.now())
        vectors.delete()
        documents = DocumentVector.objects.all()
        if project is not None:
            documents = documents.filter(project=project)
        else:
            RecallCursor.objects.filter(model=documents_cursor_key(model)).update(
                through_id=0, updated_at=timezone.now())
        documents.delete()
        # Every process's matrix of these projects is dropped at its next recall.
        RecallProgress.objects.filter(
            project__in=progress.values("project")).update(generation=F("generation") + 1)
        progress.update(through_seq=0, updated_at=timezone.now())


def _cursor_id(model: str) -> int:
    cursor = RecallCursor.objects.filter(model=model).values_list("through_id", flat=True)
    return int(next(iter(cursor), 0))


def pending(model: str) -> int:
    """Entries appended after the cursor of this model: the follower's backlog."""
    return int(MemoryEntry.objects.filter(id__gt=_cursor_id(model)).count())


def backlog(model: str) -> tuple[int, datetime | None]:
    """The follower's backlog and when its oldest entry was appended (None when there is none).

    Counted by the entries' primary key past the cursor: at most a batch or
    two while the indexer keeps up.
    """
    after = MemoryEntry.objects.filter(id__gt=_cursor_id(model))
    oldest = after.order_by("id").values_list("created_at", flat=True).first()
    return (int(after.count()) if oldest is not None else 0), oldest


def head_seq(project: Project) -> int:
    head = MemoryEntry.objects.for_project(project).head()
    return int(head["seq"]) if head else 0


def projects_behind(model: str) -> Iterator[tuple[Project, int, int]]:
    """(project, through_seq, head_seq) of every project whose index is behind its record."""
    heads = dict(MemoryEntry.objects.values("project_id").annotate(head=Max("seq"))
                 .values_list("project_id", "head"))
    through = dict(RecallProgress.objects.filter(model=model)
                   .values_list("project_id", "through_seq"))
    for project in Project.objects.filter(pk__in=list(heads)).order_by("id"):
        if through.get(project.pk, 0) < heads[project.pk]:
            yield project, through.get(project.pk, 0), heads[project.pk]


class LeaseTaken(Exception):
    """Another indexer holds this database's lease."""


@contextmanager
def lease() -> Iterator[None]:
    """Hold the database's one indexer lease while the block runs; LeaseTaken if another has it."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [_ADVISORY_KEY])
            (taken,) = cursor.fetchone()
        if not taken:
            raise LeaseTaken("another indexer follows this database")
        try:
            yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [_ADVISORY_KEY])
        return
    name = str(connection.settings_dict["NAME"])
    if name == ":memory:" or "mode=memory" in name:
        yield  # one process's own database: nobody else can index it
        return
    descriptor = os.open(name + "-indexer", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LeaseTaken("another indexer follows this database") from None
        yield
    finally:
        os.close(descriptor)


def lease_held() -> bool:
    """Whether this connection still holds the PostgreSQL lease (a reconnect loses it)."""
    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'"
            " AND pid = pg_backend_pid() AND granted"
            " AND ((classid::bigint << 32) | objid::bigint) = %s)", [_ADVISORY_KEY])
        (held,) = cursor.fetchone()
    return bool(held)
