"""The append-only rule, in one place: the ORM's refusals and the database's.

Three layers refuse to change a stored row. The ORM: a model built on
AppendOnlyModel refuses save() of a stored row and delete(), and its
queryset (AppendOnlyQuerySet, or a subclass with the model's reads) refuses
update(), delete(), bulk_update() and update_or_create(); both raise
AppendOnlyError. The database: the migrations give each table triggers
(make_append_only) that refuse every UPDATE and DELETE, whoever sends it.
SQLite gets BEFORE UPDATE/DELETE triggers that RAISE(ABORT); PostgreSQL a
row trigger calling gedweb_refuse_change() (created by memory/0002). And
TABLES lists every table so made, for `manage.py doctor` and the suite.

The models are defined when the apps load: import this module from models
and migrations, not before django.setup().
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar, NoReturn

from django.db import migrations, models


class AppendOnlyError(Exception):
    """Raised when code tries to change or delete append-only data."""


# QuerySet[Any]: the apps' querysets subclass this one for their own models
# (a row type here would become theirs).
class AppendOnlyQuerySet(models.QuerySet[Any]):
    """Reads of an append-only model; bulk writes other than inserts are refused."""

    def update(self, **kwargs: Any) -> NoReturn:
        self._refuse()

    def delete(self) -> NoReturn:
        self._refuse(deleting=True)

    def bulk_update(self, objs: Any, fields: Any, batch_size: Any = None) -> NoReturn:
        self._refuse()

    def update_or_create(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse()

    def _refuse(self, *, deleting: bool = False) -> NoReturn:
        # Only AppendOnlyModel's manager reads through this queryset.
        model: type[AppendOnlyModel] = self.model
        model.append_only_refuse(deleting=deleting)


class AppendOnlyModel(models.Model):
    """Rows are inserted once and never changed (an abstract base: no table, no migration).

    A model lists its table in TABLES and gets the triggers in the migration
    that creates it; tests/security/test_doctor_defences.py checks that the
    models on this base and TABLES are the same set.
    """

    # What the refusals call the rows ("memory entries"); "<Model> rows" if empty.
    append_only_rows: ClassVar[str] = ""
    # What to do instead of a change ("append a correction instead"), if anything.
    append_only_instead: ClassVar[str] = ""

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    @classmethod
    def append_only_refuse(cls, *, deleting: bool = False) -> NoReturn:
        rows = cls.append_only_rows or f"{cls.__name__} rows"
        if deleting:
            raise AppendOnlyError(f"{rows} are append-only and cannot be deleted")
        instead = f"; {cls.append_only_instead}" if cls.append_only_instead else ""
        raise AppendOnlyError(f"{rows} are append-only{instead}")

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            self.append_only_refuse()
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        self.append_only_refuse(deleting=True)


ENTRIES = "memory_memoryentry"

# Every append-only table, each after the tables it references (the suite
# empties them in reverse). A model built on AppendOnlyModel adds its table
# here, gets make_append_only() in its migration and joins docs/security.md's
# REVOKE list; tests compare this list with the models on the base and with
# the migrations. `manage.py doctor` checks each one's triggers, and
# tests/django_fixtures.py purges them between transactional tests.
TABLES = (
    ENTRIES,
    "memory_documentrevision",
    "memory_chaincheckpoint",
    "memory_allowedsecret",
    "memory_textredaction",
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
    "governance_contextbundle",
    "governance_governancetrust",
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


# --- redactable tables (memory.TextRedaction) --------------------------------------------
# A redaction of a secret in a stored text (memory.redaction) changes one
# column of one row: the span a memory.TextRedaction record names becomes the
# record's notice. The redactable tables' UPDATE triggers let exactly that
# through, once per record (the notice must not be in the text yet, and the
# text must have the length the record saw), every other column unchanged.

REDACTIONS = "memory_textredaction"


def _splice(old: str, new: str, *, postgres: bool = False) -> str:
    # Characters on both engines (SQLite's substr and length count them in
    # text, as Python does); PostgreSQL's substr wants int, not bigint.
    find, cast = ("strpos", "::int") if postgres else ("instr", "")
    return (f"length({old}) = r.before_length AND {find}({old}, r.notice) = 0"
            f" AND {new} = substr({old}, 1, (r.cut_start){cast}) || r.notice"
            f" || substr({old}, (r.cut_start + r.cut_length + 1){cast})")


def sqlite_redactable_update(table: str, columns: tuple[str, ...],
                             redactable: tuple[str, ...]) -> str:
    """SQLite's UPDATE trigger of ``table`` (all its ``columns``), letting a redaction through."""
    cases = " OR ".join(
        f"(r.column_name = '{column}' AND "
        + " AND ".join(f"NEW.{c} IS OLD.{c}" for c in columns if c != column)
        + f" AND {_splice(f'OLD.{column}', f'NEW.{column}')})"
        for column in redactable)
    return (f"""CREATE TRIGGER {table}_refuse_update BEFORE UPDATE ON {table}
       WHEN NOT EXISTS (SELECT 1 FROM {REDACTIONS} AS r
                        WHERE r.table_name = '{table}' AND r.row_id = OLD.id AND ({cases}))
       BEGIN SELECT RAISE(ABORT, '{table} rows are append-only: UPDATE refused'); END""")  # nosec B608: built from migration constants


# Columns PostgreSQL computes (a BEFORE trigger sees them unset in NEW).
_GENERATED = " - 'content_tsv'"

POSTGRES_REDACTION_FUNCTION = f"""CREATE OR REPLACE FUNCTION gedweb_redactable_change()
       RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'UPDATE' AND EXISTS (
              SELECT 1 FROM {REDACTIONS} AS r
              WHERE r.table_name = TG_TABLE_NAME AND r.row_id = OLD.id
                AND (to_jsonb(NEW) - r.column_name{_GENERATED})
                    = (to_jsonb(OLD) - r.column_name{_GENERATED})
                AND {_splice("to_jsonb(OLD) ->> r.column_name", "to_jsonb(NEW) ->> r.column_name",
                          postgres=True)})
         THEN
           RETURN NEW;
         END IF;
         RAISE EXCEPTION '% rows are append-only: % refused', TG_TABLE_NAME, TG_OP
           USING ERRCODE = 'restrict_violation';
       END $$"""  # nosec B608: built from this module's constants, no outside text


def postgres_redactable_update(table: str) -> str:
    return f"""CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table}
            FOR EACH ROW EXECUTE FUNCTION gedweb_redactable_change()"""


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
    # migration's statements stay the one source of what they are, but for
    # UPDATE, which memory 0014 replaced to let a redaction through.
    return importlib.import_module("memory.migrations.0002_append_only_and_search")


def _redaction_migration() -> Any:
    return importlib.import_module("memory.migrations.0014_redaction")


def _signed_entries_migration() -> Any:
    # Memory 0023 gave SQLite's UPDATE rule of 0014 the entries' MAC columns.
    return importlib.import_module("memory.migrations.0023_memoryentry_mac")


def _bundle_redaction_migration() -> Any:
    return importlib.import_module("governance.migrations.0009_contextbundle_redaction")


def _text_redaction_migrations() -> list[Any]:
    # Memory 0025 and governance 0015 made the redactable tables' UPDATE
    # triggers; governance 0015 also the bundles' second UPDATE.
    return [importlib.import_module("memory.migrations.0025_textredaction"),
            importlib.import_module("governance.migrations.0015_text_redaction")]


def redactable_tables() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Table -> (its columns, the ones a text redaction may change), as the migrations left them."""
    tables: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for migration in _text_redaction_migrations():
        tables.update(migration.REDACTABLE)
    return tables


BUNDLES = "governance_contextbundle"


def expected_triggers(vendor: str, table: str) -> dict[str, str]:
    """Trigger name -> the statement that created it, as the migrations ran it.

    Memory entries and stored context bundles each have an UPDATE trigger of
    their own since a redaction may change them (memory 0014, governance 0009;
    on SQLite the entries' one lists its columns, as memory 0023 left them).
    """
    if vendor == "sqlite":
        if table == ENTRIES:
            statements = [_signed_entries_migration().SQLITE_FORWARD[1],
                          _entries_migration().SQLITE_FORWARD[1]]
        elif table == BUNDLES:
            statements = [_text_redaction_migrations()[1].SQLITE_FORWARD[1],
                          sqlite_forward(table)[1]]
        elif table in redactable_tables():
            columns, redactable = redactable_tables()[table]
            statements = [sqlite_redactable_update(table, columns, redactable),
                          sqlite_forward(table)[1]]
        else:
            statements = sqlite_forward(table)
    elif vendor == "postgresql":
        if table == ENTRIES:
            statements = _redaction_migration().POSTGRES_FORWARD[2:3]
        elif table == BUNDLES:
            statements = _bundle_redaction_migration().POSTGRES_FORWARD[2:3]
        elif table in redactable_tables():
            statements = [postgres_redactable_update(table)]
        else:
            statements = postgres_forward(table)
    else:
        return {}
    return {statement.split()[2]: statement for statement in statements}


def trigger_function(table: str) -> str:
    """The PostgreSQL function a table's append-only trigger runs."""
    if table in redactable_tables():
        return "gedweb_redactable_change"
    return {ENTRIES: "gedweb_entry_change", BUNDLES: "gedweb_bundle_change"}.get(
        table, "gedweb_refuse_change")


def trigger_functions() -> dict[str, str]:
    """Each PostgreSQL trigger function -> its body (between its $$), as the migrations made it."""
    return {
        "gedweb_refuse_change": _entries_migration().POSTGRES_FORWARD[0].split("$$")[1],
        "gedweb_entry_change": _redaction_migration().POSTGRES_FORWARD[0].split("$$")[1],
        "gedweb_bundle_change":
            _text_redaction_migrations()[1].POSTGRES_FORWARD[0].split("$$")[1],
        "gedweb_redactable_change": POSTGRES_REDACTION_FUNCTION.split("$$")[1],
    }
