"""For the migrations that make tables redactable (memory 0025, governance 0015), and nothing else.

Kept among the migrations (Django's loader skips a module whose name starts
with "_"): only a migration, as the tables' owner, may replace a trigger.
Each table's UPDATE trigger is dropped and made again, in the migration's
transaction, as gedweb.append_only builds it, so doctor's check matches.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

from gedweb.append_only import (
    POSTGRES_REDACTION_FUNCTION,
    postgres_backward,
    postgres_forward,
    postgres_redactable_update,
    sqlite_forward,
    sqlite_redactable_update,
)


def make_redactable(tables: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
                    ) -> migrations.RunPython:
    """Replace the UPDATE triggers of ``tables`` (name -> (columns, redactable columns))."""

    def forward(apps: Any, schema_editor: Any) -> None:
        vendor = schema_editor.connection.vendor
        for table, (columns, redactable) in tables.items():
            if vendor == "sqlite":
                statements = [f"DROP TRIGGER IF EXISTS {table}_refuse_update",
                              sqlite_redactable_update(table, columns, redactable)]
            elif vendor == "postgresql":
                statements = [POSTGRES_REDACTION_FUNCTION,
                              f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}",
                              postgres_redactable_update(table)]
            else:
                statements = []
            for statement in statements:
                schema_editor.execute(statement, params=None)

    def backward(apps: Any, schema_editor: Any) -> None:
        vendor = schema_editor.connection.vendor
        for table in tables:
            if vendor == "sqlite":
                statements = [f"DROP TRIGGER IF EXISTS {table}_refuse_update",
                              sqlite_forward(table)[0]]
            elif vendor == "postgresql":
                statements = [*postgres_backward(table), *postgres_forward(table)]
            else:
                statements = []
            for statement in statements:
                schema_editor.execute(statement, params=None)

    return migrations.RunPython(forward, backward)
