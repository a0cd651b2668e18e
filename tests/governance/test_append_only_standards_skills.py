"""Standards imports and decisions, skill versions and context deliveries are append-only.

The ORM refuses with AppendOnlyError; the triggers from governance/0004
refuse raw SQL on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from gedweb.append_only import AppendOnlyError
from governance import skills, standards
from governance.models import ContextDelivery, Skill, StandardsDecision, StandardsImport

# model, its table, a text column to tamper with
TABLES = [
    (StandardsImport, "governance_standardsimport", "content"),
    (StandardsDecision, "governance_standardsdecision", "decided_by"),
    (Skill, "governance_skill", "content"),
    (ContextDelivery, "governance_contextdelivery", "sha256"),
]
MODEL_IDS = [model.__name__ for model, _, _ in TABLES]


@pytest.fixture
def history(alpha):
    """One row in every table."""
    row, _ = standards.standards_import_submit(project=alpha.project, path="AGENTS.md",
                                               content="Use exact checks.", author="seed")
    row.accept(by="admin", sha256=row.sha256)
    skills.skill_put(project=alpha.project, name="deploy", author="seed", reason="why",
                     source=None, content="---\nname: deploy\ndescription: Ships it.\n---\n")
    ContextDelivery.objects.create(project=alpha.project, author="seed", format="text",
                                   sha256="a" * 64, size=10, created_at=timezone.now())


def raw_rows(table: str) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table} ORDER BY id")
        return cursor.fetchall()


def all_rows() -> dict[str, list[tuple]]:
    return {table: raw_rows(table) for _, table, _ in TABLES}


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_it_refuses_to_save_a_changed_row(history, model, table, column):
    before = all_rows()
    row = model.objects.order_by("id").first()
    setattr(row, column, "rewritten history")
    with pytest.raises(AppendOnlyError):
        row.save(update_fields=[column])
    assert all_rows() == before


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_it_refuses_orm_updates_and_deletes(history, model, table, column):
    before = all_rows()
    with pytest.raises(AppendOnlyError):
        model.objects.update(**{column: "rewritten"})
    with pytest.raises(AppendOnlyError):
        model.objects.all().delete()
    with pytest.raises(AppendOnlyError):
        model.objects.order_by("id").first().delete()
    assert all_rows() == before


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_the_database_refuses_a_raw_update(history, model, table, column):
    before = all_rows()
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {column} = %s", ["rewritten"])
    assert all_rows() == before


@pytest.mark.parametrize(("model", "table", "column"), TABLES, ids=MODEL_IDS)
def test_the_database_refuses_a_raw_delete(history, model, table, column):
    before = all_rows()
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table}")
    assert all_rows() == before
