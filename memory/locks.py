"""The project lock: the first lock every write of a project's trust-bearing data takes.

One lock, one way to take it. Memory appends, document and skill writes,
standards imports and decisions, governance writes and the trust ledger's
records all take it first, so their transactions queue in one order and
never deadlock.

It is also the one lock of every version counter: next_version() takes it
and only then reads the newest row, so document revisions, skill versions,
work files and task artifacts are numbered the same way, gap-free, whether
a single write or ged_import numbers them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from django.db import connection, models

from gedweb.db.compiled import CompiledRead
from memory.models import Project

Row = TypeVar("Row", bound=models.Model)

# NO KEY UPDATE serialises the project's writers without blocking inserts
# that merely reference the project (tokens, candidates: the FOR KEY SHARE
# every foreign-key insert takes), which plain FOR UPDATE would. Compiled
# once: every append on PostgreSQL takes it (gedweb/db/compiled.py).
_PROJECT_ROW_LOCK = CompiledRead(
    lambda project_id: Project.objects.select_for_update(no_key=True)
    .filter(pk=project_id)
    .values("id")[:1],
    "project_id",
)


def lock_project(project: Project | str) -> None:
    """Take the project lock for the rest of the caller's transaction.

    Taking it again in the same transaction waits for nothing (the trust
    ledger's records and next_version() do, under a service that holds it).

    Raises Project.DoesNotExist for a project that does not exist.
    """
    # On SQLite the transaction began with BEGIN IMMEDIATE (behind the
    # writer queue of gedweb.db.sqlite3) and already holds the database's
    # only write lock: a row lock would add a query and nothing else.
    if connection.vendor == "sqlite":
        return
    project_id = project.pk if isinstance(project, Project) else project
    if _PROJECT_ROW_LOCK.first(project_id=project_id) is None:
        raise Project.DoesNotExist(f"project {project_id} does not exist")


@dataclass(frozen=True)
class NextVersion(Generic[Row]):
    """The newest row of a counter, read under the project lock, and the number after it."""

    current: Row | None
    number: int


def next_version(
    *, project: Project | str, rows: models.QuerySet[Row], field: str = "version"
) -> NextVersion[Row]:
    """Take the project lock, then read the newest of ``rows`` by ``field``.

    ``rows`` are the versions of one thing (one document's revisions, one
    skill's versions); ``number`` is what the next one takes: 1 for the
    first. Reading after the lock is what makes the numbers gap-free and
    unique: a second writer waits, then sees the first one's row. The
    caller holds a transaction (the lock lasts until it ends) and inserts
    the new row in it; the counter's UNIQUE constraint is the backstop.
    """
    lock_project(project)
    current = rows.order_by(f"-{field}").first()
    return NextVersion(current, getattr(current, field) + 1 if current is not None else 1)
