"""The project lock: the first lock every write of a project's trust-bearing data takes.

One lock, one way to take it. Memory appends, document and skill writes,
standards imports and decisions, governance writes (before their work
item's row lock, governance.services._lock_work) and the trust ledger's
records all take it first, so their transactions queue in one order and
never deadlock.
"""

from __future__ import annotations

from django.db import connection

from gedweb.db.compiled import CompiledRead
from memory.models import Project

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
