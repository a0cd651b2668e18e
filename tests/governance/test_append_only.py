"""Work items, revisions, evidence, work files and task artifacts are append-only.

The ORM refuses with AppendOnlyError; the database triggers from
governance/0002 refuse raw SQL on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from gedweb.append_only import AppendOnlyError
from governance import services
from governance.models import (
    EvidenceRecord,
    GovernanceRevision,
    TaskArtifact,
    WorkFile,
    WorkItem,
)
from tests.governance.support import add_evidence

# model, its table, a text column to tamper with
TABLES = [
    (WorkItem, "governance_workitem", "summary"),
    (GovernanceRevision, "governance_governancerevision", "document_json"),
    (EvidenceRecord, "governance_evidencerecord", "record_json"),
    (WorkFile, "governance_workfile", "content"),
    (TaskArtifact, "governance_taskartifact", "content"),
]
MODEL_IDS = [model.__name__ for model, _, _ in TABLES]


@pytest.fixture
def history(direct_work):
    """One row in every append-only governance table."""
    add_evidence(direct_work, "inspection", "observed")
    services.task_artifact_write(work=direct_work, task_id="T01", name="BRIEF.md",
                                 content="# T01\n", author="seed")
    return direct_work


def raw_rows(table: str) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table} ORDER BY id")
        return cursor.fetchall()


def all_rows() -> dict[str, list[tuple]]:
    return {table: raw_rows(table) for _, table, _ in TABLES}


def first(model):
    return model.objects.order_by("id").first()


# --- the ORM ------------------------------------------------------------------------------


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_it_refuses_to_save_a_changed_row(history, model, table, column):
    before = all_rows()
    row = first(model)
    setattr(row, column, "rewritten history")
    with pytest.raises(AppendOnlyError):
        row.save()
    assert all_rows() == before


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_it_refuses_to_save_a_changed_row_with_update_fields(history, model, table, column):
    before = all_rows()
    row = first(model)
    setattr(row, column, "rewritten history")
    with pytest.raises(AppendOnlyError):
        row.save(update_fields=[column])
    assert all_rows() == before


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_it_refuses_to_delete_a_row(history, model, table, column):
    before = all_rows()
    with pytest.raises(AppendOnlyError):
        first(model).delete()
    assert all_rows() == before


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_it_refuses_a_queryset_update(history, model, table, column):
    before = all_rows()
    with pytest.raises(AppendOnlyError):
        model.objects.filter(pk=first(model).pk).update(**{column: "gone"})
    assert all_rows() == before


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_it_refuses_a_manager_update(history, model, table, column):
    before = all_rows()
    with pytest.raises(AppendOnlyError):
        model.objects.update(**{column: "gone"})
    assert all_rows() == before


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_it_refuses_a_queryset_delete(history, model, table, column):
    before = all_rows()
    with pytest.raises(AppendOnlyError):
        model.objects.all().delete()
    assert all_rows() == before


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_it_refuses_a_bulk_update(history, model, table, column):
    before = all_rows()
    row = first(model)
    setattr(row, column, "gone")
    with pytest.raises(AppendOnlyError):
        model.objects.bulk_update([row], [column])
    assert all_rows() == before


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_it_refuses_update_or_create(history, model, table, column):
    before = all_rows()
    with pytest.raises(AppendOnlyError):
        model.objects.update_or_create(pk=first(model).pk, defaults={column: "gone"})
    assert all_rows() == before


def test_a_fresh_instance_with_an_existing_pk_cannot_overwrite_the_row(history):
    before = all_rows()
    original = first(WorkFile)
    forged = WorkFile(pk=original.pk, work=original.work, name=original.name,
                      version=original.version, content="forged", author="mallory",
                      created_at=original.created_at)
    with pytest.raises((AppendOnlyError, DatabaseError)), transaction.atomic():
        forged.save()
    assert all_rows() == before


def test_an_upserting_bulk_create_cannot_overwrite_a_row(history):
    before = all_rows()
    original = first(WorkFile)
    clash = WorkFile(work=original.work, name=original.name, version=original.version,
                     content="forged", author="mallory", created_at=original.created_at)
    with pytest.raises((AppendOnlyError, DatabaseError)), transaction.atomic():
        WorkFile.objects.bulk_create([clash], update_conflicts=True,
                                     unique_fields=["work", "name", "version"],
                                     update_fields=["content"])
    assert all_rows() == before


# --- raw SQL: the database refuses whoever sends it -----------------------------------------


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_the_database_refuses_a_raw_update(history, model, table, column):
    before = all_rows()
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {column} = %s WHERE id = %s",
                       ["rewritten", first(model).pk])
    assert all_rows() == before


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_the_database_refuses_a_raw_update_that_changes_nothing(history, model, table, column):
    before = all_rows()
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {column} = {column}")
    assert all_rows() == before


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_the_database_refuses_a_raw_delete_of_one_row(history, model, table, column):
    before = all_rows()
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE id = %s", [first(model).pk])
    assert all_rows() == before


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_the_database_refuses_a_raw_delete_of_every_row(history, model, table, column):
    before = all_rows()
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table}")
    assert all_rows() == before


def test_the_database_refuses_rewriting_evidence_inside_a_revision(history):
    """Gap G-2: evidence cannot be rewritten even by a writer that bypasses the app."""
    before = all_rows()
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE governance_evidencerecord SET evidence_id = %s, record_json = %s",
                       ["forged", '{"id": "forged"}'])
    assert all_rows() == before
    assert services.governance_document(history)["evidence"][0]["kind"] == "inspection"


def test_inserting_new_rows_is_still_allowed(history):
    services.work_file_write(work=history, name="DIRECT.md", content="# v2\n", author="seed")
    add_evidence(history, "inspection", "failed")
    assert WorkFile.objects.filter(work=history).count() == 2
    assert GovernanceRevision.objects.filter(work=history).count() == 3


# --- the backstops behind the row lock (gap G-1) ---------------------------------------------


def test_a_second_row_for_the_same_revision_is_refused(history):
    before = all_rows()
    latest = GovernanceRevision.objects.filter(work=history).order_by("-revision").first()
    with pytest.raises(DatabaseError), transaction.atomic():
        GovernanceRevision.objects.create(
            work=history, revision=latest.revision, document_json=latest.document_json,
            evidence_count=latest.evidence_count, operation="forged", author="mallory",
            created_at=latest.created_at)
    assert all_rows() == before


def test_a_second_evidence_row_at_the_same_position_is_refused(history):
    before = all_rows()
    existing = EvidenceRecord.objects.get(work=history)
    with pytest.raises(DatabaseError), transaction.atomic():
        EvidenceRecord.objects.create(
            work=history, position=existing.position, evidence_id="forged",
            record_json=existing.record_json, revision=existing.revision, author="mallory",
            created_at=existing.created_at)
    assert all_rows() == before


def test_a_second_evidence_row_with_the_same_id_is_refused(history):
    before = all_rows()
    existing = EvidenceRecord.objects.get(work=history)
    with pytest.raises(DatabaseError), transaction.atomic():
        EvidenceRecord.objects.create(
            work=history, position=existing.position + 1, evidence_id=existing.evidence_id,
            record_json=existing.record_json, revision=existing.revision + 1, author="mallory",
            created_at=existing.created_at)
    assert all_rows() == before
