"""Database-level guarantees that the ORM cannot give on its own.

- Triggers refuse UPDATE and DELETE on memory entries from any client, so
  history cannot be rewritten even with raw SQL.
- Full-text search: an FTS5 table kept by an insert trigger on SQLite, a
  GIN expression index on PostgreSQL (see EntryQuerySet.search).
"""

from django.db import migrations

SQLITE_FORWARD = [
    """CREATE TRIGGER memory_entry_refuse_update BEFORE UPDATE ON memory_memoryentry
       BEGIN SELECT RAISE(ABORT, 'memory entries are append-only: UPDATE refused'); END""",
    """CREATE TRIGGER memory_entry_refuse_delete BEFORE DELETE ON memory_memoryentry
       BEGIN SELECT RAISE(ABORT, 'memory entries are append-only: DELETE refused'); END""",
    """CREATE VIRTUAL TABLE memory_entry_fts USING fts5(
         content, content='memory_memoryentry', content_rowid='id', tokenize='unicode61')""",
    # Entries are never updated or deleted, so an insert trigger keeps the
    # external-content index exact.
    """CREATE TRIGGER memory_entry_fts_insert AFTER INSERT ON memory_memoryentry
       BEGIN INSERT INTO memory_entry_fts(rowid, content) VALUES (new.id, new.content); END""",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS memory_entry_fts_insert",
    "DROP TABLE IF EXISTS memory_entry_fts",
    "DROP TRIGGER IF EXISTS memory_entry_refuse_delete",
    "DROP TRIGGER IF EXISTS memory_entry_refuse_update",
]

POSTGRES_FORWARD = [
    """CREATE OR REPLACE FUNCTION gedweb_refuse_change() RETURNS trigger
       LANGUAGE plpgsql AS $$
       BEGIN
         RAISE EXCEPTION '% rows are append-only: % refused', TG_TABLE_NAME, TG_OP
           USING ERRCODE = 'restrict_violation';
       END $$""",
    """CREATE TRIGGER memory_entry_append_only
       BEFORE UPDATE OR DELETE ON memory_memoryentry
       FOR EACH ROW EXECUTE FUNCTION gedweb_refuse_change()""",
    """CREATE INDEX memory_entry_content_fts ON memory_memoryentry
       USING GIN (to_tsvector('simple'::regconfig, content))""",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS memory_entry_content_fts",
    "DROP TRIGGER IF EXISTS memory_entry_append_only ON memory_memoryentry",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        ),
    ]
