"""Database triggers that make a table append-only, for use in migrations.

SQLite gets BEFORE UPDATE/DELETE triggers that RAISE(ABORT); PostgreSQL a
row trigger calling gedweb_refuse_change() (created by memory/0002). Both
refuse every UPDATE and DELETE, whoever sends it.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.db import migrations

ENTRIES = "memory_memoryentry"

# Every append-only table, each after the tables it references (the suite
# empties them in reverse). A migration that makes another table append-only
# adds it here and to docs/security.md's REVOKE list (a test compares the
# list with the migrations); `manage.py doctor` checks each one's triggers,
# and tests/django_fixtures.py purges them between transactional tests.
TABLES = (
    ENTRIES,
    "memory_documentrevision",
    "memory_chaincheckpoint",
    "governance_workitem",
    "governance_governancerevision",
    "governance_evidencerecord",
    "governance_workfile",
    "governance_taskartifact",
    "governance_standardsimport",
    "governance_standardsdecision",
    "governance_skill",
    "governance_contextdelivery",
    "governance_ledgerrecord",
)


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


def _entries_migration() -> Any:
    # Memory entries got their triggers first, by name, in memory 0002; that
    # migration's statements stay the one source of what they are.
    return importlib.import_module("memory.migrations.0002_append_only_and_search")


def expected_triggers(vendor: str, table: str) -> dict[str, str]:
    """Trigger name -> the statement that created it, as the migrations ran it."""
    if vendor == "sqlite":
        if table == ENTRIES:
            statements = _entries_migration().SQLITE_FORWARD[:2]
        else:
            statements = sqlite_forward(table)
    elif vendor == "postgresql":
        statements = (
            _entries_migration().POSTGRES_FORWARD[1:2] if table == ENTRIES
            else postgres_forward(table)
        )
    else:
        return {}
    return {statement.split()[2]: statement for statement in statements}


def refuse_change_function() -> str:
    """The PostgreSQL trigger function's body (between its $$), as memory 0002 created it."""
    return _entries_migration().POSTGRES_FORWARD[0].split("$$")[1]

