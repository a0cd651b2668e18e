"""Append-only memory entries (contract §4; catalogue C1 T01, T02): ORM and database refusals."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import ProtectedError

from gedweb.append_only import AppendOnlyError
from memory import services
from memory.models import MemoryEntry, Project


def raw_rows(project_id: str) -> list[tuple]:
    """Every column of the project's entries, exactly as stored."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT * FROM memory_memoryentry WHERE project_id = %s ORDER BY seq", [project_id]
        )
        return cursor.fetchall()


@pytest.fixture
def entries(alpha):
    for index in range(3):
        services.memory_entry_create(
            project=alpha.project, author="ana", category="decision", content=f"entry {index} ü"
        )
    return alpha


def assert_unchanged(project, before: list[tuple]) -> None:
    assert raw_rows(project.pk) == before
    assert services.memory_chain_verify(project=project).ok


# --- the ORM -----------------------------------------------------------------------


def test_it_refuses_to_save_a_changed_entry(entries):
    before = raw_rows(entries.id)
    entry = MemoryEntry.objects.get(project=entries.project, seq=2)
    entry.content = "rewritten history"
    with pytest.raises(AppendOnlyError):
        entry.save()
    assert_unchanged(entries.project, before)


def test_it_refuses_to_save_a_changed_entry_with_update_fields(entries):
    before = raw_rows(entries.id)
    entry = MemoryEntry.objects.get(project=entries.project, seq=2)
    entry.author = "mallory"
    with pytest.raises(AppendOnlyError):
        entry.save(update_fields=["author"])
    assert_unchanged(entries.project, before)


def test_it_refuses_to_delete_an_entry(entries):
    before = raw_rows(entries.id)
    with pytest.raises(AppendOnlyError):
        MemoryEntry.objects.get(project=entries.project, seq=3).delete()
    assert_unchanged(entries.project, before)


def test_it_refuses_a_queryset_update(entries):
    before = raw_rows(entries.id)
    with pytest.raises(AppendOnlyError):
        MemoryEntry.objects.filter(project=entries.project).update(content="gone")
    assert_unchanged(entries.project, before)


def test_it_refuses_a_manager_update(entries):
    before = raw_rows(entries.id)
    with pytest.raises(AppendOnlyError):
        MemoryEntry.objects.update(source="forged")
    assert_unchanged(entries.project, before)


def test_it_refuses_a_queryset_delete(entries):
    before = raw_rows(entries.id)
    with pytest.raises(AppendOnlyError):
        MemoryEntry.objects.filter(project=entries.project, seq__gte=2).delete()
    assert_unchanged(entries.project, before)


def test_it_refuses_bulk_update(entries):
    before = raw_rows(entries.id)
    rows = list(MemoryEntry.objects.filter(project=entries.project))
    for row in rows:
        row.content = "bulk rewrite"
    with pytest.raises(AppendOnlyError):
        MemoryEntry.objects.bulk_update(rows, ["content"])
    assert_unchanged(entries.project, before)


def test_it_refuses_update_or_create(entries):
    before = raw_rows(entries.id)
    with pytest.raises(AppendOnlyError):
        MemoryEntry.objects.update_or_create(
            project=entries.project, seq=1, defaults={"content": "replaced"}
        )
    assert_unchanged(entries.project, before)


def test_saving_a_new_instance_over_an_existing_row_is_refused(entries):
    # A fresh instance is "adding", so the model guard lets it through; the
    # UPDATE that Django tries first for a set primary key hits the trigger.
    before = raw_rows(entries.id)
    original = MemoryEntry.objects.get(project=entries.project, seq=1)
    impostor = MemoryEntry(
        pk=original.pk,
        uuid=original.uuid,
        project=entries.project,
        seq=1,
        category="decision",
        content="impostor",
        author="mallory",
        created_at=original.created_at,
        prev_hash=original.prev_hash,
        hash=original.hash,
    )
    with pytest.raises((AppendOnlyError, IntegrityError)), transaction.atomic():
        impostor.save()
    assert_unchanged(entries.project, before)


# --- raw SQL through the app's connection: the triggers ----------------------------


def test_the_database_refuses_a_raw_update(entries):
    before = raw_rows(entries.id)
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memory_memoryentry SET content = %s WHERE project_id = %s",
                ["rewritten", entries.id],
            )
    assert_unchanged(entries.project, before)


def test_the_database_refuses_a_raw_update_of_the_hash_columns(entries):
    before = raw_rows(entries.id)
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memory_memoryentry SET hash = prev_hash WHERE project_id = %s AND seq = 2",
                [entries.id],
            )
    assert_unchanged(entries.project, before)


def test_the_database_refuses_a_raw_delete_of_one_row(entries):
    before = raw_rows(entries.id)
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM memory_memoryentry WHERE project_id = %s AND seq = 2", [entries.id]
            )
    assert_unchanged(entries.project, before)


def test_the_database_refuses_a_raw_delete_of_every_row(entries):
    before = raw_rows(entries.id)
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM memory_memoryentry")
    assert_unchanged(entries.project, before)
    assert MemoryEntry.objects.count() == 3


def test_the_connection_stays_usable_after_a_refused_statement(entries):
    with pytest.raises(DatabaseError), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM memory_memoryentry")
    result = services.memory_entry_create(
        project=entries.project, author="ana", category="note", content="still appending"
    )
    assert result.entry.seq == 4
    assert services.memory_chain_verify(project=entries.project).entries == 4


def test_inserting_a_new_row_is_still_allowed_by_the_triggers(entries):
    # The triggers refuse UPDATE and DELETE only; appending goes through.
    result = services.memory_entry_create(
        project=entries.project, author="ana", category="note", content="four"
    )
    assert (result.entry.seq, MemoryEntry.objects.filter(project=entries.project).count()) == (4, 4)


# --- projects -----------------------------------------------------------------------


def test_a_project_with_entries_cannot_be_deleted(db):
    project = Project.objects.create(id="gamma", name="Gamma")
    services.memory_entry_create(project=project, author="ana", category="note", content="kept")
    before = raw_rows("gamma")
    with pytest.raises(ProtectedError) as refused, transaction.atomic():
        project.delete()
    assert any(isinstance(obj, MemoryEntry) for obj in refused.value.protected_objects)
    assert Project.objects.filter(pk="gamma").exists()
    assert raw_rows("gamma") == before


def test_a_project_with_entries_cannot_be_deleted_through_a_queryset(db):
    project = Project.objects.create(id="delta", name="Delta")
    services.memory_entry_create(project=project, author="ana", category="note", content="kept")
    with pytest.raises(ProtectedError), transaction.atomic():
        Project.objects.filter(pk="delta").delete()
    assert MemoryEntry.objects.filter(project_id="delta").count() == 1
