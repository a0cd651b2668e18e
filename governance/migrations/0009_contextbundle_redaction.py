"""A redaction scrubs the stored context bundles that hold the removed content.

A stored bundle (0008) keeps the exact text delivered to an agent. When an
operator redacts a memory entry (memory.redaction) whose content such a text
holds, governance.context.bundle_scrub replaces it with the redaction's
notice and names the redaction record in ``redaction``. The append-only
triggers of the table learn exactly that one UPDATE: text and sections of a
bundle, setting ``redaction`` to a redaction record of the same project,
every other column unchanged. DELETE and every other UPDATE stay refused.
"""

import django.db.models.deletion
from django.db import migrations, models

TABLE = "governance_contextbundle"

# Every column but text, sections and redaction_id, as this migration leaves
# the table (checked against the table by tests/memory/test_redaction.py).
UNCHANGED_COLUMNS = ("id", "sha256", "created_at", "project_id")

_SQLITE_UNCHANGED = " AND ".join(f"NEW.{c} IS OLD.{c}" for c in UNCHANGED_COLUMNS)

SQLITE_FORWARD = [
    f"DROP TRIGGER IF EXISTS {TABLE}_refuse_update",
    f"""CREATE TRIGGER {TABLE}_refuse_update BEFORE UPDATE ON {TABLE}
       WHEN NOT (NEW.redaction_id IS NOT NULL AND {_SQLITE_UNCHANGED}
                 AND EXISTS (SELECT 1 FROM memory_memoryentry AS record
                             WHERE record.id = NEW.redaction_id
                               AND record.redacts_id IS NOT NULL
                               AND record.project_id = OLD.project_id))
       BEGIN SELECT RAISE(ABORT, '{TABLE} rows are append-only: UPDATE refused'); END""",  # nosec B608: built from this module's constants
]

SQLITE_BACKWARD = [
    f"DROP TRIGGER IF EXISTS {TABLE}_refuse_update",
    f"""CREATE TRIGGER {TABLE}_refuse_update BEFORE UPDATE ON {TABLE}
            BEGIN SELECT RAISE(ABORT, '{TABLE} rows are append-only: UPDATE refused'); END""",
]

POSTGRES_FORWARD = [
    f"""CREATE OR REPLACE FUNCTION gedweb_bundle_change() RETURNS trigger
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
         RAISE EXCEPTION '% rows are append-only: % refused', TG_TABLE_NAME, TG_OP
           USING ERRCODE = 'restrict_violation';
       END $$""",  # nosec B608: built from this module's constants
    f"DROP TRIGGER IF EXISTS {TABLE}_append_only ON {TABLE}",
    f"""CREATE TRIGGER {TABLE}_append_only BEFORE UPDATE OR DELETE ON {TABLE}
            FOR EACH ROW EXECUTE FUNCTION gedweb_bundle_change()""",
]

POSTGRES_BACKWARD = [
    f"DROP TRIGGER IF EXISTS {TABLE}_append_only ON {TABLE}",
    f"""CREATE TRIGGER {TABLE}_append_only BEFORE UPDATE OR DELETE ON {TABLE}
            FOR EACH ROW EXECUTE FUNCTION gedweb_refuse_change()""",
    "DROP FUNCTION IF EXISTS gedweb_bundle_change()",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):

    dependencies = [
        ("governance", "0008_contextbundle"),
        ("memory", "0014_redaction"),
    ]

    operations = [
        migrations.AddField(
            model_name="contextbundle",
            name="redaction",
            field=models.ForeignKey(
                blank=True, null=True, on_delete=django.db.models.deletion.PROTECT,
                related_name="scrubbed_bundles", to="memory.memoryentry",
            ),
        ),
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        ),
    ]
