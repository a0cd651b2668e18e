"""Database triggers that make a table append-only, for use in migrations.

SQLite gets BEFORE UPDATE/DELETE triggers that RAISE(ABORT); PostgreSQL a
row trigger calling gedweb_refuse_change() (created by memory/0002). Both
refuse every UPDATE and DELETE, whoever sends it.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations


def sqlite_forward(table: str) -> list[str]:
    return [
        f"""CREATE TRIGGER {table}_refuse_update BEFORE UPDATE ON {table}
            BEGIN SELECT RAISE(ABORT, '{table} rows are append-only: UPDATE refused'); END""",
        f"""CREATE TRIGGER {table}_refuse_delete BEFORE DELETE ON {table}
            BEGIN SELECT RAISE(ABORT, '{table} rows are append-only: DELETE refused'); END""",
    ]


def sqlite_backward(table: str) -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS {table}_refuse_update",
        f"DROP TRIGGER IF EXISTS {table}_refuse_delete",
    ]


def postgres_forward(table: str) -> list[str]:
    return [
        f"""CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table}
            FOR EACH ROW EXECUTE FUNCTION gedweb_refuse_change()"""
    ]


def postgres_backward(table: str) -> list[str]:
    return [f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}"]


def _run(builders: dict[str, Any], tables: tuple[str, ...]) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        builder = builders.get(schema_editor.connection.vendor)
        if builder is None:
            return
        for table in tables:
            for statement in builder(table):
                schema_editor.execute(statement, params=None)

    return run


def make_append_only(*tables: str) -> migrations.RunPython:
    return migrations.RunPython(
        _run({"sqlite": sqlite_forward, "postgresql": postgres_forward}, tables),
        _run({"sqlite": sqlite_backward, "postgresql": postgres_backward}, tables),
    )
