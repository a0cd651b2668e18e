"""Reusable reads for memory models, attached with QuerySet.as_manager()."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from django.db import connection, models
from django.db.models import BooleanField, Exists, F, OuterRef, Prefetch, UUIDField
from django.db.models.expressions import RawSQL

from gedweb.append_only import AppendOnlyQuerySet
from gedweb.db.compiled import CompiledRead

if TYPE_CHECKING:
    # The bases name MemoryCandidate, Project and ProjectToken in strings,
    # which ruff does not read as uses.
    from memory.models import (  # noqa: F401
        DocumentRevision,
        MemoryCandidate,
        MemoryEntry,
        Project,
        ProjectToken,
    )

_WORD = re.compile(r"\w+", re.UNICODE)


def search_words(text: str) -> list[str]:
    """The words a full-text query must all match, in the index's own tokens."""
    return [word.lower() for word in _WORD.findall(text)]


# The FTS rowid a SQLite search given its project selects, by this name.
FTS_ROWID = "fts_rowid"


def fts_project_token(project_id: str) -> str:
    """The SQLite FTS token of a project: ``p`` + hex of the id (migration memory/0007)."""
    return "p" + project_id.encode().hex()


def seq_order_key(searched: bool) -> str:
    """What orders one project's entries by seq: ``seq``, or for a SQLite search the FTS rowid.

    Within one project ids grow with seq: both are assigned under the project's
    write lock, and entries are never updated or deleted. A SQLite full-text
    search given its project (EntryQuerySet.search) joins the FTS table and
    selects its rowid, the entry's id, as FTS_ROWID: ordered by it, SQLite
    walks the project's match list in rowid order, either way, and stops at
    the page size. Ordered by seq it walks the project's whole (project, seq)
    index and probes every row, which for a rare word is the whole project
    (docs/performance.md, observation 3); ordered by the entry's own id it
    first collects every match (docs/performance.md, "A million entries").
    """
    return FTS_ROWID if searched and connection.vendor == "sqlite" else "seq"


class ProjectQuerySet(models.QuerySet["Project"]):
    def visible_to(self, user: Any) -> ProjectQuerySet:
        """Projects a signed-in person may read: all for superusers, else their memberships.

        Every team page fetches its project through this, so a project a
        user is not a member of answers exactly like a missing one.
        """
        if user is None or not user.is_authenticated or not user.is_active:
            return self.none()
        if user.is_superuser:
            return self.all()
        return self.filter(memberships__user=user)


class ProjectTokenQuerySet(models.QuerySet["ProjectToken"]):
    def active(self) -> ProjectTokenQuerySet:
        return self.filter(revoked_at__isnull=True)


class EntryQuerySet(AppendOnlyQuerySet):
    """Reads of memory entries; bulk writes other than inserts are refused."""

    def for_project(self, project: Any) -> EntryQuerySet:
        return self.filter(project=project)

    def by_ref(self, ref: str | int) -> EntryQuerySet:
        """Entries named by a uuid or a seq (as int or decimal text); empty if malformed."""
        if isinstance(ref, int) and not isinstance(ref, bool):
            return self.filter(seq=ref) if ref >= 1 else self.none()
        text = str(ref)
        if text.isdigit() and text.isascii():
            return self.filter(seq=int(text)) if int(text) >= 1 else self.none()
        try:
            return self.filter(uuid=uuid.UUID(text))
        except ValueError:
            return self.none()

    def current(self) -> EntryQuerySet:
        """Leave out entries that a later entry corrects."""
        from memory.models import MemoryEntry

        return self.exclude(Exists(MemoryEntry.objects.filter(corrects=OuterRef("pk"))))

    def with_links(self) -> EntryQuerySet:
        """Load what EntrySerializer needs for corrections in two queries, not one per row.

        On PostgreSQL the uuids of the entries corrected and redacted are
        scalar subqueries, not joins: it evaluates a subquery of the select
        list after ORDER BY ... LIMIT, for the page's rows only, where a join
        is done for every row before the sort. A rare word's search page
        sorts its matches (migration 0015), 1,000 of them in a million
        entries: joined, 2,000 index probes for a page of 20. They are
        written as SQL because the ORM's Subquery costs about 0.4 ms to
        compile per listing. SQLite never sorts a page's matches (its FTS
        table returns them in order, see search()), and a correlated
        subquery costs it more than the join, so it keeps the joins.
        """
        from memory.models import MemoryEntry

        if connection.vendor == "postgresql":
            # Constant SQL: name is one of the two literals below; no parameters.
            links: dict[str, Any] = {
                f"{name}_uuid": RawSQL(  # nosec B611
                    "(SELECT linked.uuid FROM memory_memoryentry linked"  # nosec B608
                    f" WHERE linked.id = memory_memoryentry.{name}_id)", (),
                    output_field=UUIDField())
                for name in ("corrects", "redacts")
            }
        else:
            links = {"corrects_uuid": F("corrects__uuid"), "redacts_uuid": F("redacts__uuid")}
        # AppendOnlyQuerySet is not generic, so mypy sees Any: name the type it is.
        linked: EntryQuerySet = self.annotate(**links).prefetch_related(
            Prefetch(
                "corrected_by",
                queryset=MemoryEntry.objects.only("uuid", "corrects_id", "seq").order_by("seq"),
                to_attr="corrected_by_rows",
            )
        )
        return linked

    def search(self, text: str, *, project: Any = None) -> EntryQuerySet:
        """Entries whose content holds every word of text, through the full-text index.

        SQLite answers from the FTS5 table memory_entry_fts (migrations 0002
        and 0007). Given the project, it asks the index for that project's
        matches only (the project filter itself stays the caller's) and
        joins the FTS table, selecting its rowid as FTS_ROWID to order by
        (seq_order_key): SQLite then reads the match list in that order and
        stops at the page, where ``id IN (SELECT rowid ...)`` first collects
        every match, 100,000 of them for a word in one entry in ten of a
        million. Without the project (the admin's search, which ORs it with
        other conditions, where a join would multiply the rows) it stays
        that ``IN``. PostgreSQL answers from the GIN index on the stored
        column content_tsv, to_tsvector('simple', content) (migration 0004).
        """
        words = search_words(text)
        if not words:
            nothing: EntryQuerySet = self.none()
            if connection.vendor == "sqlite":
                # Nothing to match, but orderable as a SQLite search page is (seq_order_key).
                return cast(EntryQuerySet, nothing.annotate(**{FTS_ROWID: F("pk")}))
            return nothing
        if connection.vendor == "postgresql":
            return self.filter(RawSQL(
                "memory_memoryentry.content_tsv @@ plainto_tsquery('simple'::regconfig, %s)",
                [" ".join(words)],
                output_field=BooleanField(),
            ))
        phrases = " AND ".join('"' + word.replace('"', '""') + '"' for word in words)
        if project is None:
            return self.filter(RawSQL(
                "memory_memoryentry.id IN"
                " (SELECT rowid FROM memory_entry_fts WHERE memory_entry_fts MATCH %s)",
                [f"content : ({phrases})"],
                output_field=BooleanField(),
            ))
        # QuerySet.extra: the ORM joins no table without a model, and a
        # model of the FTS table would give Django a join to trim, ordering
        # by the entry's id again. Every SQL string here is a constant; the
        # match is a query parameter.
        return cast(EntryQuerySet, self.extra(  # nosec B610
            tables=["memory_entry_fts"],
            select={FTS_ROWID: "memory_entry_fts.rowid"},
            where=["memory_entry_fts.rowid = memory_memoryentry.id",
                   "memory_entry_fts MATCH %s"],
            params=[f"project : {fts_project_token(project.pk)} AND content : ({phrases})"],
        ))


    def distinct_values(self, project: Any, field: str, limit: int = 200) -> list[str]:
        """The project's distinct categories or sources, in order, one index probe each.

        A loose index scan over (project, field, seq): neither SQLite nor
        PostgreSQL skips through an index for DISTINCT, and a plain DISTINCT
        reads one index entry per memory entry.
        """
        if field not in ("category", "source"):
            raise ValueError(f"no index to list distinct {field!r} values")
        # {field} is one of the two column names checked above; every value
        # is a query parameter.
        sql = (
            f"WITH RECURSIVE t(v) AS ("  # nosec B608
            f" SELECT MIN({field}) FROM memory_memoryentry WHERE project_id = %s"
            f" UNION ALL"
            f" SELECT (SELECT MIN({field}) FROM memory_memoryentry"
            f"  WHERE project_id = %s AND {field} > t.v)"
            f" FROM t WHERE t.v IS NOT NULL"
            f") SELECT v FROM t WHERE v IS NOT NULL LIMIT %s"
        )
        project_id = getattr(project, "pk", project)
        with connection.cursor() as cursor:
            cursor.execute(sql, [project_id, project_id, limit])
            return [row[0] for row in cursor.fetchall()]

    def _chain_values(self, order: str, *extra: str
                      ) -> models.QuerySet[MemoryEntry, tuple[Any, ...]]:
        rows: models.QuerySet[MemoryEntry, tuple[Any, ...]] = (
            self.order_by(order)
            .annotate(corrects_uuid=F("corrects__uuid"), redacts_uuid=F("redacts__uuid"))
            .values_list(*_CHAIN_COLUMNS, *extra)
        )
        return rows

    def chain_rows(self, *, sealed: bool = False) -> Iterator[dict[str, Any]]:
        """Every entry's chained fields plus its links, in seq order, streamed.

        sealed=True adds each entry's ``mac`` and ``key_id`` (verification
        reads them; the mirror and the exports do not show them).
        """
        if not sealed:
            for values in self._chain_values("seq").iterator(chunk_size=2000):
                yield _chain_row(values)
            return
        for values in self._chain_values("seq", "mac", "key_id").iterator(chunk_size=2000):
            row = _chain_row(values[:-2])
            row["mac"], row["key_id"] = values[-2:]
            yield row

    def head(self) -> dict[str, Any] | None:
        """seq, hash and created_at of the newest entry, from the (project, seq) index."""
        return self.order_by("-seq").values("seq", "hash", "created_at").first()



_CHAIN_COLUMNS = (
    "uuid",
    "seq",
    "project_id",
    "category",
    "content",
    "source",
    "corrects_uuid",
    "author",
    "created_at",
    "content_sha256",
    "redacts_uuid",
    "prev_hash",
    "hash",
)


def newest_chain_row(project_id: str) -> tuple[dict[str, Any], datetime] | None:
    """The project's newest entry as chain_rows() gives it, and its created_at as a datetime.

    One indexed read for the append: the row links the new entry and lets
    the mirror writer confirm the file's last block without reading it
    back. Compiled once (gedweb/db/compiled.py): it runs on every append.
    The read takes the links' ids from the row itself, and only the rare
    head that corrects or redacts another entry costs a second read for
    their uuids: joining the two links into every head read cost
    PostgreSQL four times the planning of the read alone.
    """
    from memory.models import MemoryEntry

    values = _NEWEST_CHAIN_ROW.first(project_id=project_id)
    if values is None:
        return None
    links = {values["corrects_id"], values["redacts_id"]} - {None}
    uuids = dict(MemoryEntry.objects.filter(pk__in=links).values_list("pk", "uuid")) if links \
        else {}
    values["corrects_uuid"] = uuids.get(values["corrects_id"])
    values["redacts_uuid"] = uuids.get(values["redacts_id"])
    return _chain_row(tuple(values[name] for name in _CHAIN_COLUMNS)), values["created_at"]


# The head's own columns: _CHAIN_COLUMNS with the links' ids in place of their uuids.
_HEAD_COLUMNS = tuple({"corrects_uuid": "corrects_id", "redacts_uuid": "redacts_id"}.get(name, name)
                      for name in _CHAIN_COLUMNS)


def _newest_chain_values(project_id: str) -> models.QuerySet[MemoryEntry, dict[str, Any]]:
    from memory.models import MemoryEntry

    newest: models.QuerySet[MemoryEntry, dict[str, Any]] = (
        MemoryEntry.objects.filter(project_id=project_id).order_by("-seq")
        .values(*_HEAD_COLUMNS)[:1]
    )
    return newest


_NEWEST_CHAIN_ROW = CompiledRead(_newest_chain_values, "project_id")


def _chain_row(values: tuple[Any, ...]) -> dict[str, Any]:
    """A row of _CHAIN_COLUMNS in the form of MemoryEntry.chain_row()."""
    from memory.models import format_timestamp

    (entry_uuid, seq, project_id, category, content, source, corrects_uuid, author,
     created_at, content_sha256, redacts_uuid, prev_hash, entry_hash) = values
    return {
        "id": str(entry_uuid),
        "seq": seq,
        "project_id": project_id,
        "category": category,
        "content": content,
        "source": source,
        "corrects": str(corrects_uuid) if corrects_uuid is not None else None,
        "author": author,
        "created_at": format_timestamp(created_at),
        "content_sha256": content_sha256,
        "redacts": str(redacts_uuid) if redacts_uuid is not None else None,
        "prev_hash": prev_hash,
        "hash": entry_hash,
    }


class ChainCheckpointQuerySet(AppendOnlyQuerySet):
    """Reads of chain checkpoints; bulk writes other than inserts are refused."""

    def for_project(self, project: Any) -> ChainCheckpointQuerySet:
        return self.filter(project=project)


class CandidateQuerySet(models.QuerySet["MemoryCandidate"]):
    def for_project(self, project: Any) -> CandidateQuerySet:
        return self.filter(project=project)

    def with_entry_uuid(self) -> CandidateQuerySet:
        return self.annotate(entry_uuid=F("entry__uuid"))


class DocumentRevisionQuerySet(AppendOnlyQuerySet):
    """Reads of document revisions; bulk writes other than inserts are refused."""

    def for_project(self, project: Any) -> DocumentRevisionQuerySet:
        return self.filter(project=project)

    def for_path(self, path: str) -> DocumentRevisionQuerySet:
        return self.filter(path=path)

    def current(self) -> DocumentRevisionQuerySet:
        """Only each document's newest revision."""
        from memory.models import DocumentRevision

        newer = DocumentRevision.objects.filter(
            project=OuterRef("project"), path=OuterRef("path"), revision__gt=OuterRef("revision")
        )
        return self.exclude(Exists(newer))

    def newest(self) -> DocumentRevision | None:
        revision: DocumentRevision | None = self.order_by("-revision").first()
        return revision
