"""Full-text search is answered by an index on both databases, never a table scan."""

from __future__ import annotations

from django.db import connection

from memory import services
from memory.models import MemoryEntry


def _plan(queryset) -> str:
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # A handful of rows would make any plan cheap; switch off the
            # alternatives to prove the query's expression matches the GIN index.
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SET LOCAL enable_indexscan = off")
            cursor.execute("SET LOCAL enable_bitmapscan = on")
            cursor.execute(f"EXPLAIN {sql}", params)
        else:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return "\n".join(str(row) for row in cursor.fetchall())


def test_search_uses_the_full_text_index(alpha):
    for text in ("Orders stay on PostgreSQL", "Billing moves to a queue", "postgresql tuning"):
        services.memory_entry_create(project=alpha.project, author="t", category="note",
                                     content=text)
    found = MemoryEntry.objects.for_project(alpha.project).search("PostgreSQL")
    assert sorted(e.content for e in found) == ["Orders stay on PostgreSQL", "postgresql tuning"]
    if connection.vendor == "postgresql":
        # Without the project filter the planner has only the text condition
        # to work with, so the plan shows whether the GIN index can serve it.
        plan = _plan(MemoryEntry.objects.search("PostgreSQL"))
        assert "memory_entry_content_tsv" in plan
    else:
        plan = _plan(found)
        assert "VIRTUAL TABLE INDEX" in plan and "memory_entry_fts" in plan
