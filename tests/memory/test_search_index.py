"""Full-text search is answered by an index on both databases, never a table scan."""

from __future__ import annotations

import pytest
from django.db import connection

from gedweb.pagination import keyset_slice
from memory import selectors, services
from memory.models import MemoryEntry
from memory.querysets import seq_order_key


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


def test_within_a_project_ids_grow_with_seq(alpha, beta):
    # seq_order_key() relies on it: a SQLite search is ordered by id.
    for index in range(6):
        order = (alpha.project, beta.project) if index % 2 else (beta.project, alpha.project)
        for project in order:
            services.memory_entry_create(project=project, author="t", category="note",
                                         content=f"entry {index}")
    for project in (alpha.project, beta.project):
        rows = MemoryEntry.objects.for_project(project)
        assert list(rows.order_by("pk").values_list("seq", flat=True)) == list(range(1, 7))


def test_a_search_page_is_ordered_by_seq_on_both_databases(alpha, beta):
    for index in range(1, 8):
        services.memory_entry_create(project=alpha.project, author="t", category="note",
                                     content=f"kestrel {index}")
        services.memory_entry_create(project=beta.project, author="t", category="note",
                                     content=f"kestrel elsewhere {index}")
    found = selectors.entry_list(project=alpha.project, q="kestrel")
    ascending = [e.seq for e in keyset_slice(
        found, key="seq", limit=10, order=seq_order_key(searched=True)).items]
    descending = [e.seq for e in keyset_slice(
        found, key="seq", limit=10, descending=True, order=seq_order_key(searched=True)).items]
    assert ascending == list(range(1, 8))
    assert descending == list(range(7, 0, -1))


@pytest.mark.parametrize("descending", [True, False], ids=["newest-first", "oldest-first"])
def test_a_sqlite_search_page_walks_the_match_list_not_the_project(alpha, descending):
    if connection.vendor != "sqlite":
        return
    services.memory_entry_create(project=alpha.project, author="t", category="note",
                                 content="a rare quetzal")
    key = seq_order_key(searched=True)
    page = (selectors.entry_list(project=alpha.project, q="quetzal")
            .order_by(f"-{key}" if descending else key)[:101])
    plan = _plan(page)
    # Ordered by the FTS rowid, the rows come out of the FTS match list in
    # that order: no walk of the (project, seq) index, no sort of the
    # matches, and the match list is not collected first (LIST SUBQUERY,
    # every match of a common word in a million-entry project), so the
    # read stops at the page.
    assert "memory_entry_fts" in plan.splitlines()[0]
    assert "USE TEMP B-TREE FOR ORDER BY" not in plan
    assert "sqlite_autoindex_memory_memoryentry_2" not in plan
    assert "LIST SUBQUERY" not in plan


def test_the_sqlite_index_answers_for_one_project_only(alpha, beta):
    services.memory_entry_create(project=alpha.project, author="t", category="note",
                                 content="kestrel in alpha")
    services.memory_entry_create(project=beta.project, author="t", category="note",
                                 content="kestrel in beta")
    # Without the outer project filter, the index alone must keep beta's entry out.
    found = MemoryEntry.objects.search("kestrel", project=alpha.project)
    assert [e.content for e in found] == (
        ["kestrel in alpha"] if connection.vendor == "sqlite"
        else ["kestrel in alpha", "kestrel in beta"]  # PostgreSQL: the caller filters
    )


def test_project_ids_with_separators_are_one_exact_token(make_project):
    first, second = make_project("a-b"), make_project("a-b-c")
    for project in (first, second):
        services.memory_entry_create(project=project.project, author="t", category="note",
                                     content=f"quetzal of {project.id}")
    for project in (first, second):
        found = MemoryEntry.objects.for_project(project.project).search(
            "quetzal", project=project.project)
        assert [e.content for e in found] == [f"quetzal of {project.id}"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite never sorts the matches")
def test_a_sorted_search_page_looks_up_its_links_for_the_page_only(alpha):
    # A rare word's page is its matches sorted (migration 0015). The uuids
    # of the corrected entries are looked up per row of the page, after the
    # LIMIT, not joined to every match before the sort (with_links).
    first = services.memory_entry_create(project=alpha.project, author="t", category="note",
                                         content="quetzal 0").entry
    for index in range(1, 30):
        services.memory_entry_create(project=alpha.project, author="t", category="note",
                                     content=f"quetzal {index}", corrects=first.seq)
    page = selectors.entry_list(project=alpha.project, q="quetzal").order_by("-seq")[:5]
    assert [e.corrects_uuid for e in page] == [first.uuid] * 5
    sql, params = page.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")  # the sort, as for a rare word
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
        (plan,) = cursor.fetchone()

    def nodes(node):
        yield node
        for child in node.get("Plans", []):
            yield from nodes(child)

    found = list(nodes(plan[0]["Plan"]))
    assert any(node["Node Type"] == "Sort" for node in found)
    assert not [node["Node Type"] for node in found
                if "Join" in node["Node Type"] or node["Node Type"] == "Nested Loop"]
    lookups = [node for node in found if node.get("Subplan Name")]
    assert len(lookups) == 2
    assert {node["Actual Loops"] for node in lookups} == {5}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's planner statistics")
def test_postgresql_samples_the_search_vector_enough_to_count_rare_words(db):
    # Migration 0015: with the default target a rare word's matches were
    # overestimated fivefold at a million entries, and its search page
    # walked the project instead of taking the GIN index (bench/million.py).
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attstattarget FROM pg_attribute"
            " WHERE attrelid = 'memory_memoryentry'::regclass AND attname = 'content_tsv'")
        assert cursor.fetchone() == (1000,)
