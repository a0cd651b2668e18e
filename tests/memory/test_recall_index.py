"""Recall's index (memory.recall.indexer, vectors): derived data that follows the record.

The follower indexes what was appended after its cursor and nothing twice;
the backfill resumes after a kill; a rebuild starts again; a redaction
deletes the vector in its own transaction, the cached matrices forget it,
an indexer that read the entry before the redaction stores nothing, and the
purge takes the vector's bytes out of the SQLite file and its WAL. One
follower holds the lease at a time.
"""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections

from gedweb.lib.digest import sha256_text
from memory import services
from memory.models import EntryVector, MemoryEntry, RecallCursor, RecallProgress
from memory.recall import indexer, ranking, vectors
from memory.redaction import memory_entry_redact
from tests.django_fixtures import run_in_threads


def _append(project: Any, content: str, **extra: Any) -> MemoryEntry:
    return services.memory_entry_create(project=project, author="agent", category="note",
                                        content=content, **extra).entry


def _progress(project: Any) -> RecallProgress:
    return RecallProgress.objects.get(project=project, model=vectors.embedder().model_id)


def test_the_follower_indexes_each_append_once_in_id_order(alpha, beta):
    for index in range(3):
        _append(alpha.project, f"alpha note {index}")
        _append(beta.project, f"beta note {index}")
    first = indexer.follow_once(vectors.embedder(), batch=4)
    assert (first.seen, first.indexed) == (4, 4)
    assert _progress(alpha.project).through_seq == 2
    assert _progress(beta.project).through_seq == 2
    second = indexer.follow_once(vectors.embedder(), batch=4)
    assert (second.seen, second.indexed) == (2, 2)
    assert indexer.follow_once(vectors.embedder()).seen == 0
    cursor = RecallCursor.objects.get(model=vectors.embedder().model_id)
    assert cursor.through_id == MemoryEntry.objects.order_by("-id").values_list(
        "id", flat=True).first()
    rows = EntryVector.objects.order_by("entry_id")
    assert rows.count() == 6
    for row in rows:
        entry = MemoryEntry.objects.get(pk=row.entry_id)
        assert (row.project_id, row.seq) == (entry.project_id, entry.seq)
        assert row.content_sha256 == sha256_text(entry.content)
        assert row.model == "hashing-1024-v1"
        assert len(bytes(row.vector)) == 1024
        # The stored int8 vector restores the model's own, up to rounding.
        exact = vectors.embedder().embed([entry.content])[0]
        restored = vectors.dequantise(bytes(row.vector), row.scale)
        assert float(exact @ restored) > 0.999
    assert indexer.pending(vectors.embedder().model_id) == 0


def test_the_append_path_makes_no_vector(alpha):
    _append(alpha.project, "made by the indexer, never by the append")
    assert not EntryVector.objects.exists()
    assert indexer.pending(vectors.embedder().model_id) == 1


def test_a_backfill_resumes_where_a_killed_run_stopped(alpha):
    for index in range(7):
        _append(alpha.project, f"note number {index}")

    class Killed(Exception):
        pass

    def kill_after_first(result: indexer.BatchResult, through_seq: int) -> None:
        raise Killed

    with pytest.raises(Killed):
        indexer.backfill(alpha.project, vectors.embedder(), on_batch=kill_after_first, batch=3)
    assert _progress(alpha.project).through_seq == 3
    assert EntryVector.objects.count() == 3
    made = dict(EntryVector.objects.values_list("entry_id", "content_sha256"))
    assert indexer.backfill(alpha.project, vectors.embedder(), batch=3) == 4
    assert _progress(alpha.project).through_seq == 7
    assert EntryVector.objects.count() == 7
    # The first three were not made again.
    assert indexer.backfill(alpha.project, vectors.embedder(), batch=3) == 0
    for entry_id, digest in made.items():
        assert EntryVector.objects.get(entry_id=entry_id).content_sha256 == digest


def test_the_command_backfills_rebuilds_and_reports(alpha, beta):
    for index in range(4):
        _append(alpha.project, f"alpha entry {index}")
    _append(beta.project, "beta entry")
    out, err = io.StringIO(), io.StringIO()
    call_command("memory", "index", stdout=out, stderr=err)
    report = json.loads(out.getvalue())
    assert report == {"model": "hashing-1024-v1", "projects": ["alpha", "beta"], "entries": 5,
                      "indexed": 5, "documents": 0, "rebuilt": False}
    assert err.getvalue() == ""  # the progress bar is for a terminal, never a pipe
    out = io.StringIO()
    call_command("memory", "index", stdout=out, stderr=io.StringIO())
    assert json.loads(out.getvalue())["entries"] == 0
    generation = _progress(alpha.project).generation
    out = io.StringIO()
    call_command("memory", "index", "--project", "alpha", "--rebuild", stdout=out,
                 stderr=io.StringIO())
    report = json.loads(out.getvalue())
    assert (report["projects"], report["indexed"], report["rebuilt"]) == (["alpha"], 4, True)
    assert _progress(alpha.project).generation == generation + 1
    assert _progress(beta.project).through_seq == 1


def test_the_command_refuses_when_the_model_is_off(alpha, settings):
    settings.RECALL_MODEL = "off"
    with pytest.raises(CommandError, match="cannot index: .*GEDWEB_RECALL_MODEL=off"):
        call_command("memory", "index", stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(CommandError, match="--follow follows every project"):
        settings.RECALL_MODEL = "hashing"
        call_command("memory", "index", "--follow", "--project", "alpha",
                     stdout=io.StringIO(), stderr=io.StringIO())


def test_a_model_change_is_a_new_index_beside_the_old(alpha, settings):
    _append(alpha.project, "orders stay on postgresql")
    indexer.follow_once(vectors.embedder())
    old = EntryVector.objects.get()
    # Another model id: its own cursor and progress, and each vector replaced.
    other = vectors.get_embedder.__globals__["HashingEmbedder"](dimension=64)
    assert other.model_id == "hashing-64-v1"
    assert indexer.follow_once(other).indexed == 1
    row = EntryVector.objects.get()
    assert row.entry_id == old.entry_id and row.model == "hashing-64-v1"
    assert len(bytes(row.vector)) == 64
    assert RecallProgress.objects.filter(project=alpha.project).count() == 2


def test_a_large_projects_matrix_keeps_signs_and_ranks_as_the_exact_one(alpha, settings):
    words = ["orders", "postgresql", "replica", "celery", "windows", "upload", "nginx",
             "deploy", "migrations", "staging", "vpn", "redis", "cache", "queue", "worker"]
    for index in range(60):
        picked = [words[(index * 7 + k * 3) % len(words)] for k in range(4)]
        _append(alpha.project, f"note {index}: " + " ".join(picked))
    while indexer.follow_once(vectors.embedder()).seen:
        pass
    questions = ["orders replica postgresql", "celery worker windows", "nginx upload deploy"]
    exact = {q: [(h.entry.seq, h.score) for h in ranking.recall(
        project=alpha.project, text=q, mode="semantic", limit=10).hits] for q in questions}
    settings.RECALL_EXACT_ROWS = 50
    vectors.forget_cached()
    matrix = vectors.project_matrix(alpha.project, vectors.embedder().model_id,
                                    vectors.embedder().dimension, _progress(alpha.project))
    assert matrix.compact and matrix.vectors.dtype == np.uint8
    assert matrix.vectors.shape[1] == vectors.embedder().dimension // 8
    for question in questions:
        compact = [(h.entry.seq, h.score) for h in ranking.recall(
            project=alpha.project, text=question, mode="semantic", limit=10).hits]
        # The shortlist covers the project: the exact scores and order come back.
        assert compact == exact[question]
    # A new entry extends the compact matrix.
    _append(alpha.project, "zebra crossing zebra")
    indexer.follow_once(vectors.embedder())
    hits = ranking.recall(project=alpha.project, text="zebra crossing", mode="semantic").hits
    assert hits[0].entry.seq == 61


def test_a_matrix_read_in_chunks_holds_every_vector_once_in_seq_order(alpha, monkeypatch):
    for index in range(23):
        _append(alpha.project, f"chunked note {index} about queue {index % 5}")
    while indexer.follow_once(vectors.embedder()).seen:
        pass
    model = vectors.embedder().model_id
    whole = vectors.project_matrix(alpha.project, model, vectors.embedder().dimension,
                                   _progress(alpha.project))
    vectors.forget_cached()
    monkeypatch.setattr(vectors, "_LOAD_ROWS", 7)
    chunked = vectors.project_matrix(alpha.project, model, vectors.embedder().dimension,
                                     _progress(alpha.project))
    assert chunked.size == whole.size == 23
    assert list(chunked.seqs[:23]) == list(range(1, 24))
    assert np.array_equal(chunked.ids[:23], whole.ids[:23])
    assert np.array_equal(chunked.vectors[:23], whole.vectors[:23])
    assert np.array_equal(chunked.scales[:23], whole.scales[:23])
    stored = EntryVector.objects.get(project=alpha.project, seq=9)
    assert chunked.vectors[8].tobytes() == bytes(stored.vector)


# --- redaction reaches the index -----------------------------------------------------------


def _semantic_seqs(project: Any, text: str) -> list[int]:
    return [hit.entry.seq for hit in ranking.recall(project=project, text=text,
                                                     mode="semantic").hits]


def test_a_redaction_deletes_the_vector_and_the_cached_matrix_forgets_it(alpha):
    _append(alpha.project, "orders stay on postgresql")
    leaked = _append(alpha.project, "the staging box opens to quokka lantern seven")
    indexer.follow_once(vectors.embedder())
    assert _semantic_seqs(alpha.project, "quokka lantern")[0] == leaked.seq  # now cached
    generation = _progress(alpha.project).generation
    result = memory_entry_redact(project=alpha.project, seq=leaked.seq, reason="a passphrase",
                                 by="user:olga")
    assert result.copies_scrubbed["recall_vectors"] == 1
    assert not EntryVector.objects.filter(entry=leaked).exists()
    assert _progress(alpha.project).generation == generation + 1
    # The matrix this process cached held the vector: the next recall drops it.
    assert leaked.seq not in _semantic_seqs(alpha.project, "quokka lantern")
    matrix = vectors.project_matrix(alpha.project, vectors.embedder().model_id,
                                    vectors.embedder().dimension, _progress(alpha.project))
    assert leaked.pk not in matrix.ids[: matrix.size]
    # The follower never makes a vector of the notice, nor does a backfill.
    indexer.follow_once(vectors.embedder())
    indexer.backfill(alpha.project, vectors.embedder())
    assert not EntryVector.objects.filter(entry=leaked).exists()


def test_an_indexer_that_read_the_entry_before_the_redaction_stores_nothing(alpha):
    leaked = _append(alpha.project, "the staging box opens to quokka lantern seven")
    rows = indexer._rows(MemoryEntry.objects.filter(pk=leaked.pk)
                         .values_list(*indexer._ROW_FIELDS))
    memory_entry_redact(project=alpha.project, seq=leaked.seq, reason="a passphrase",
                        by="user:olga")
    result = indexer.index_rows(rows, vectors.embedder())
    assert (result.indexed, result.skipped) == (0, 1)
    assert not EntryVector.objects.filter(entry=leaked).exists()


@pytest.mark.postgres_only
def test_an_indexer_write_and_a_redaction_racing_leave_no_vector_of_the_content(live_db,
                                                                              make_project):
    """Real threads on PostgreSQL: whichever commits first, no vector of the old text stays."""
    project = make_project("racing").project
    leaked = [_append(project, f"the box opens to quokka lantern {index}") for index in range(6)]
    rows = indexer._rows(MemoryEntry.objects.filter(project=project).order_by("seq")
                         .values_list(*indexer._ROW_FIELDS))

    def work(index: int) -> Any:
        if index == 0:
            return indexer.index_rows(rows, vectors.embedder())
        for entry in leaked[::2]:
            memory_entry_redact(project=project, seq=entry.seq, reason="leak", by="user:olga")
        return None

    results = run_in_threads(work, 2)
    assert not any(isinstance(result, BaseException) for result in results), results
    redacted = {entry.pk for entry in leaked[::2]}
    assert not EntryVector.objects.filter(entry_id__in=redacted).exists()
    for row in EntryVector.objects.filter(project=project):
        assert row.content_sha256 == sha256_text(MemoryEntry.objects.get(pk=row.entry_id).content)


def test_the_purge_takes_the_vectors_bytes_out_of_the_sqlite_file_and_wal(live_db,
                                                                         make_project):
    project = make_project("purged").project
    _append(project, "one")
    leaked = _append(project, "the staging box opens to the phrase quokka lantern seven")
    indexer.follow_once(vectors.embedder())
    stored = bytes(EntryVector.objects.get(entry=leaked).vector)
    assert len(stored) == 1024 and np.count_nonzero(np.frombuffer(stored, np.int8)) >= 4
    result = memory_entry_redact(project=project, seq=leaked.seq, reason="a passphrase",
                                 by="user:olga")
    assert result.copies_scrubbed["recall_vectors"] == 1
    if connection.vendor == "sqlite":
        assert result.purge["wal_checkpoint"]["truncated"]
        database = Path(connection.settings_dict["NAME"])
        assert stored not in database.read_bytes()
        wal = database.with_name(database.name + "-wal")
        assert not wal.exists() or stored not in wal.read_bytes()
    else:
        assert result.purge["vacuum"] == "VACUUM memory_memoryentry"


def _doctor_recall(project: Any) -> Any:
    from governance.doctor import check_recall_index

    return check_recall_index(project)


def test_doctor_finds_a_vector_of_a_redacted_entry_and_a_stale_one(alpha):
    _append(alpha.project, "orders stay on postgresql")
    leaked = _append(alpha.project, "the staging box opens to quokka lantern seven")
    _append(alpha.project, "not indexed yet")
    indexer.follow_once(vectors.embedder(), batch=2)
    outcome = _doctor_recall(alpha.project)
    assert outcome.ok
    assert outcome.summary.startswith("2 entries indexed by hashing-1024-v1; 1 entry without")
    stored = EntryVector.objects.get(entry=leaked)
    memory_entry_redact(project=alpha.project, seq=leaked.seq, reason="a passphrase",
                        by="user:olga")
    # Put back behind GedWeb's back: a copy of the content's meaning that outlived it.
    stored.save(force_insert=True)
    first = EntryVector.objects.get(entry__seq=1, project=alpha.project)
    EntryVector.objects.filter(pk=first.pk).update(content_sha256="0" * 64)
    problems = _doctor_recall(alpha.project).problems
    assert problems == [
        "entry #1's recall vector was made from another text than the entry holds: run "
        "manage.py memory index --project alpha --rebuild",
        f"entry #{leaked.seq} is redacted but keeps a recall vector: run manage.py memory "
        "index --project alpha --rebuild",
    ]
    call_command("memory", "index", "--project", "alpha", "--rebuild", stdout=io.StringIO(),
                 stderr=io.StringIO())
    after = _doctor_recall(alpha.project)
    assert after.ok and after.summary.startswith("3 entries indexed")


def test_doctor_says_when_recall_by_meaning_is_off(alpha, settings):
    settings.RECALL_MODEL = "off"
    assert _doctor_recall(alpha.project).summary == (
        "recall by meaning is off (GEDWEB_RECALL_MODEL)")


# --- the lease ---------------------------------------------------------------------------


def test_one_indexer_holds_the_lease_at_a_time(live_db):
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        try:
            with indexer.lease():
                held.set()
                release.wait(timeout=30)
        finally:
            connections.close_all()

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(timeout=30)
        with pytest.raises(indexer.LeaseTaken):
            with indexer.lease():
                pass
    finally:
        release.set()
        thread.join(timeout=30)
    with indexer.lease():
        assert indexer.lease_held()
