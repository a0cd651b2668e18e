"""Chain format 2 and redaction (docs/operations.md, "Chain formats" and "Redaction").

New entries commit to their content's SHA-256 (``content_sha256``), so an
operator can redact one (memory.redaction): its content becomes the notice
of its redaction record, a later entry whose ``redacts`` names it. Entries
from before keep ``content_sha256`` NULL (format 1) and can never be redacted.

The append-only triggers of memory entries learn exactly one UPDATE: the
content of a format-2 entry that a redaction record names, every other
column unchanged. DELETE stays refused, and so does every other UPDATE.
On SQLite the FTS5 index follows the content (delete the old row's tokens,
index the notice); PostgreSQL's stored ``content_tsv`` follows by itself.
"""

import django.db.models.deletion
from django.db import migrations, models

# Every column of memory_memoryentry but content, as this migration leaves
# the table. tests/memory/test_redaction.py checks that the list
# and the table agree, so a later column cannot slip past the rule.
UNCHANGED_COLUMNS = (
    "id", "uuid", "seq", "category", "source", "author", "created_at", "prev_hash", "hash",
    "idempotency_key", "request_hash", "project_id", "corrects_id", "idempotency_scope",
    "content_sha256", "redacts_id",
)

_SQLITE_UNCHANGED = " AND ".join(f"NEW.{c} IS OLD.{c}" for c in UNCHANGED_COLUMNS)

SQLITE_FORWARD = [
    "DROP TRIGGER IF EXISTS memory_entry_refuse_update",
    f"""CREATE TRIGGER memory_entry_refuse_update BEFORE UPDATE ON memory_memoryentry
       WHEN NOT (OLD.content_sha256 IS NOT NULL AND {_SQLITE_UNCHANGED}
                 AND EXISTS (SELECT 1 FROM memory_memoryentry AS record
                             WHERE record.redacts_id = OLD.id))
       BEGIN SELECT RAISE(ABORT, 'memory entries are append-only: UPDATE refused'); END""",  # nosec B608: constants only
    """CREATE TRIGGER memory_entry_fts_redact AFTER UPDATE OF content ON memory_memoryentry
       BEGIN
         INSERT INTO memory_entry_fts(memory_entry_fts, rowid, content, project)
         VALUES ('delete', old.id, old.content, 'p' || lower(hex(old.project_id)));
         INSERT INTO memory_entry_fts(rowid, content, project)
         VALUES (new.id, new.content, 'p' || lower(hex(new.project_id)));
       END""",
]

SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS memory_entry_fts_redact",
    "DROP TRIGGER IF EXISTS memory_entry_refuse_update",
    """CREATE TRIGGER memory_entry_refuse_update BEFORE UPDATE ON memory_memoryentry
       BEGIN SELECT RAISE(ABORT, 'memory entries are append-only: UPDATE refused'); END""",
]

POSTGRES_FORWARD = [
    # Compared as JSON without content (and the generated content_tsv, which a
    # BEFORE trigger does not see yet): every other column, present or future.
    """CREATE OR REPLACE FUNCTION gedweb_entry_change() RETURNS trigger
       LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'UPDATE' AND OLD.content_sha256 IS NOT NULL
            AND (to_jsonb(NEW) - 'content' - 'content_tsv')
                = (to_jsonb(OLD) - 'content' - 'content_tsv')
            AND EXISTS (SELECT 1 FROM memory_memoryentry AS record
                        WHERE record.redacts_id = OLD.id) THEN
           RETURN NEW;
         END IF;
         RAISE EXCEPTION '% rows are append-only: % refused', TG_TABLE_NAME, TG_OP
           USING ERRCODE = 'restrict_violation';
       END $$""",
    "DROP TRIGGER IF EXISTS memory_entry_append_only ON memory_memoryentry",
    """CREATE TRIGGER memory_entry_append_only
       BEFORE UPDATE OR DELETE ON memory_memoryentry
       FOR EACH ROW EXECUTE FUNCTION gedweb_entry_change()""",
]

POSTGRES_BACKWARD = [
    "DROP TRIGGER IF EXISTS memory_entry_append_only ON memory_memoryentry",
    """CREATE TRIGGER memory_entry_append_only
       BEFORE UPDATE OR DELETE ON memory_memoryentry
       FOR EACH ROW EXECUTE FUNCTION gedweb_refuse_change()""",
    "DROP FUNCTION IF EXISTS gedweb_entry_change()",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):

    dependencies = [
        ("memory", "0013_allowedsecret"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="memoryentry",
            options={
                "ordering": ["project_id", "seq"],
                "permissions": [
                    ("redact_memoryentry", "Can redact the content of memory entries")
                ],
                "verbose_name_plural": "memory entries",
            },
        ),
        migrations.AddField(
            model_name="memoryentry",
            name="content_sha256",
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AddField(
            model_name="memoryentry",
            name="redacts",
            field=models.ForeignKey(
                blank=True, null=True, on_delete=django.db.models.deletion.PROTECT,
                related_name="redactions", to="memory.memoryentry",
            ),
        ),
        migrations.AddConstraint(
            model_name="memoryentry",
            constraint=models.UniqueConstraint(
                condition=models.Q(("redacts__isnull", False)), fields=("redacts",),
                name="memory_memoryentry_one_redaction",
            ),
        ),
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        ),
    ]
