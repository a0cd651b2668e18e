"""Concurrent appends (contract §4: seq gap-free without duplicates on SQLite and PostgreSQL).

Real threads with their own connections against committed data. On
PostgreSQL they contend on the project row lock; on SQLite on the write
lock that BEGIN IMMEDIATE takes, so no "database is locked" may surface.
The mirror is written inline after each commit, under its file lock.
"""

from __future__ import annotations

from collections import Counter

from gedweb.lib.mirror import render_full
from memory import mirror, services
from memory.models import MemoryEntry
from tests.django_fixtures import run_in_threads

THREADS = 16
APPENDS_PER_THREAD = 10


def append_many(project, index: int, count: int) -> list[int]:
    seqs = []
    for n in range(count):
        result = services.memory_entry_create(
            project=project,
            author=f"worker-{index}",
            category="race",
            content=f"thread {index} append {n} · ``` ü",
        )
        seqs.append(result.entry.seq)
    return seqs


def stored_seqs(project) -> list[int]:
    return list(
        MemoryEntry.objects.filter(project=project).order_by("seq").values_list("seq", flat=True)
    )


def errors_in(results: list) -> list[BaseException]:
    return [result for result in results if isinstance(result, BaseException)]


def test_concurrent_appends_take_every_seq_once_and_keep_chain_and_mirror_exact(
    live_db, make_project
):
    target = make_project("race")
    results = run_in_threads(lambda i: append_many(target.project, i, APPENDS_PER_THREAD), THREADS)
    assert errors_in(results) == []  # on SQLite: no "database is locked"
    total = THREADS * APPENDS_PER_THREAD
    returned = sorted(seq for seqs in results for seq in seqs)
    assert returned == stored_seqs(target.project) == list(range(1, total + 1))
    report = services.memory_chain_verify(project=target.project)
    assert (report.ok, report.entries) == (True, total)
    # Each committing thread caught the mirror up to at least its own entry
    # (writing it, or finding it written by the thread before: a group commit).
    assert mirror.check(target.project)
    assert mirror.sync(target.project).appended == 0
    rows = MemoryEntry.objects.for_project(target.project).chain_rows()
    assert mirror.mirror_path(target.id).read_bytes() == render_full(target.id, rows).encode()


def test_concurrent_appends_keep_each_threads_order_and_author(live_db, make_project):
    target = make_project("race")
    results = run_in_threads(lambda i: append_many(target.project, i, 5), 8)
    assert errors_in(results) == []
    for seqs in results:
        assert seqs == sorted(seqs)
    authors = MemoryEntry.objects.filter(project=target.project).values_list("author", flat=True)
    assert Counter(authors) == {f"worker-{i}": 5 for i in range(8)}


def test_the_inline_mirror_is_exact_after_concurrent_appends_without_a_final_sync(
    live_db, make_project
):
    # Every append syncs after its commit; whichever thread syncs last
    # brings the file to the final state, so no explicit sync is needed.
    target = make_project("race")
    results = run_in_threads(lambda i: append_many(target.project, i, 5), 8)
    assert errors_in(results) == []
    assert mirror.check(target.project)


def test_concurrent_appends_to_two_projects_stay_independent(live_db, make_project):
    first, second = make_project("first"), make_project("second")
    projects = [first.project, second.project]
    results = run_in_threads(lambda i: append_many(projects[i % 2], i, 8), 12)
    assert errors_in(results) == []
    for project in projects:
        assert stored_seqs(project) == list(range(1, 6 * 8 + 1))
        authors = set(MemoryEntry.objects.filter(project=project).values_list("author", flat=True))
        parity = 0 if project is first.project else 1
        assert authors == {f"worker-{i}" for i in range(12) if i % 2 == parity}
        assert services.memory_chain_verify(project=project).ok
        assert mirror.check(project)
