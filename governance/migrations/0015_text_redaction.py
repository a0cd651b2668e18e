"""Redaction of secrets in governance's stored texts (memory.redaction.finding_redact).

Work items' summaries, work files, task artifacts, evidence, governance
revisions, standards imports and skills are append-only; their UPDATE
triggers learn exactly the UPDATE a memory.TextRedaction record describes
(memory/migrations/_redactable.py), as memory 0025 taught document
revisions'. Stored context bundles learn a second UPDATE beside governance
0009's: text and sections, setting ``text_redaction`` to a text redaction
of the same project, every other column unchanged.
"""

import django.db.models.deletion
from django.db import migrations, models

from memory.migrations._redactable import make_redactable

# Every column of each table as this migration leaves it, and the ones a
# redaction may change (checked against the tables by
# tests/memory/test_text_redaction.py).
REDACTABLE = {
    "governance_workitem": (
        ("id", "project_id", "work_id", "summary", "mode", "created_at", "branch", "base_head",
         "origin", "author"),
        ("summary",),
    ),
    "governance_workfile": (
        ("id", "work_id", "name", "version", "content", "author", "created_at"),
        ("content",),
    ),
    "governance_taskartifact": (
        ("id", "work_id", "task_id", "name", "version", "content", "author", "created_at"),
        ("content",),
    ),
    "governance_evidencerecord": (
        ("id", "work_id", "position", "evidence_id", "record_json", "revision", "author",
         "created_at"),
        ("record_json",),
    ),
    "governance_governancerevision": (
        ("id", "work_id", "revision", "document_json", "evidence_count", "operation", "author",
         "created_at"),
        ("document_json",),
    ),
    "governance_standardsimport": (
        ("id", "project_id", "public_id", "path", "sha256", "content", "author", "created_at"),
        ("content",),
    ),
    "governance_skill": (
        ("id", "project_id", "name", "version", "content", "recorded_hash", "provenance",
         "reason", "source", "installed_at", "gedpi_record", "author", "created_at"),
        ("content", "reason", "source"),
    ),
}

BUNDLES = "governance_contextbundle"
# Every column of the bundles but text and sections (checked like the above).
BUNDLE_COLUMNS = ("id", "sha256", "created_at", "project_id", "redaction_id",
                  "text_redaction_id")


def _unchanged(*changing: str) -> str:
    return " AND ".join(f"NEW.{c} IS OLD.{c}" for c in BUNDLE_COLUMNS if c not in changing)


SQLITE_FORWARD = [
    f"DROP TRIGGER IF EXISTS {BUNDLES}_refuse_update",
    f"""CREATE TRIGGER {BUNDLES}_refuse_update BEFORE UPDATE ON {BUNDLES}
       WHEN NOT ((NEW.redaction_id IS NOT NULL AND {_unchanged("redaction_id")}
                  AND EXISTS (SELECT 1 FROM memory_memoryentry AS record
                              WHERE record.id = NEW.redaction_id
                                AND record.redacts_id IS NOT NULL
                                AND record.project_id = OLD.project_id))
              OR (NEW.text_redaction_id IS NOT NULL AND {_unchanged("text_redaction_id")}
                  AND EXISTS (SELECT 1 FROM memory_textredaction AS record
                              WHERE record.id = NEW.text_redaction_id
                                AND record.project_id = OLD.project_id)))
       BEGIN SELECT RAISE(ABORT, '{BUNDLES} rows are append-only: UPDATE refused'); END""",  # nosec B608: built from this module's constants
]

POSTGRES_FORWARD = [
    """CREATE OR REPLACE FUNCTION gedweb_bundle_change() RETURNS trigger
       LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'UPDATE' AND NEW.redaction_id IS NOT NULL
            AND (to_jsonb(NEW) - 'text' - 'sections' - 'redaction_id')
                = (to_jsonb(OLD) - 'text' - 'sections' - 'redaction_id')
            AND EXISTS (SELECT 1 FROM memory_memoryentry AS record
                        WHERE record.id = NEW.redaction_id
                          AND record.redacts_id IS NOT NULL
                          AND record.project_id = OLD.project_id) THEN
           RETURN NEW;
         END IF;
         IF TG_OP = 'UPDATE' AND NEW.text_redaction_id IS NOT NULL
            AND (to_jsonb(NEW) - 'text' - 'sections' - 'text_redaction_id')
                = (to_jsonb(OLD) - 'text' - 'sections' - 'text_redaction_id')
            AND EXISTS (SELECT 1 FROM memory_textredaction AS record
                        WHERE record.id = NEW.text_redaction_id
                          AND record.project_id = OLD.project_id) THEN
           RETURN NEW;
         END IF;
         RAISE EXCEPTION '% rows are append-only: % refused', TG_TABLE_NAME, TG_OP
           USING ERRCODE = 'restrict_violation';
       END $$""",
]

POSTGRES_BACKWARD: list[str] = []  # 0009's function, made again by running it backward


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement, params=None)

    return run


def _restore_0009_triggers(apps, schema_editor):
    """Backward, once the column is gone: SQLite dropped the table's triggers with it.

    SQLite removes a column by remaking the table, and the old table's
    triggers go with it; they come back as governance 0009 and
    gedweb.append_only made them.
    """
    if schema_editor.connection.vendor != "sqlite":
        return
    import importlib

    from gedweb.append_only import sqlite_forward

    earlier = importlib.import_module("governance.migrations.0009_contextbundle_redaction")
    for statement in [f"DROP TRIGGER IF EXISTS {BUNDLES}_refuse_update",
                      earlier.SQLITE_FORWARD[1],
                      f"DROP TRIGGER IF EXISTS {BUNDLES}_refuse_delete",
                      sqlite_forward(BUNDLES)[1]]:
        schema_editor.execute(statement, params=None)


def _restore_0009_function(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        import importlib

        earlier = importlib.import_module("governance.migrations.0009_contextbundle_redaction")
        schema_editor.execute(earlier.POSTGRES_FORWARD[0], params=None)


class Migration(migrations.Migration):

    dependencies = [
        ("governance", "0014_governancetrust"),
        ("memory", "0025_textredaction"),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, _restore_0009_triggers),
        migrations.AddField(
            model_name="contextbundle",
            name="text_redaction",
            field=models.ForeignKey(
                blank=True, null=True, on_delete=django.db.models.deletion.PROTECT,
                related_name="scrubbed_bundles", to="memory.textredaction",
            ),
        ),
        migrations.RunPython(_run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
                             migrations.RunPython.noop),
        migrations.RunPython(migrations.RunPython.noop, _restore_0009_function),
        make_redactable(REDACTABLE),
    ]
