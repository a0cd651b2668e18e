"""SQLite full text: the FTS5 index learns each entry's project.

The index of migration 0002 held content only, so a search listed the
matches of every project and then kept this project's. Each FTS row now also
carries a one-token project column (``p`` + the hex of the project id, so
ids like ``a-b`` stay one exact token), and a search asks for the project and
the words together (EntryQuerySet.search): the match list is this project's
alone. The table becomes contentless (``content=''``): it keeps the index,
not a second copy of the text; entries are never updated or deleted, so the
insert trigger keeps it exact. PostgreSQL is untouched (its GIN index on the
stored ``content_tsv`` serves the same queries).
"""

from django.db import migrations

SQLITE_FORWARD = [
    "DROP TRIGGER IF EXISTS memory_entry_fts_insert",
    "DROP TABLE IF EXISTS memory_entry_fts",
    """CREATE VIRTUAL TABLE memory_entry_fts USING fts5(
         content, project, content='', tokenize='unicode61')""",
    """CREATE TRIGGER memory_entry_fts_insert AFTER INSERT ON memory_memoryentry
       BEGIN
         INSERT INTO memory_entry_fts(rowid, content, project)
         VALUES (new.id, new.content, 'p' || lower(hex(new.project_id)));
       END""",
    """INSERT INTO memory_entry_fts(rowid, content, project)
       SELECT id, content, 'p' || lower(hex(project_id)) FROM memory_memoryentry""",
]
# Back to 0002's table: external content, content only.
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS memory_entry_fts_insert",
    "DROP TABLE IF EXISTS memory_entry_fts",
    """CREATE VIRTUAL TABLE memory_entry_fts USING fts5(
         content, content='memory_memoryentry', content_rowid='id', tokenize='unicode61')""",
    """CREATE TRIGGER memory_entry_fts_insert AFTER INSERT ON memory_memoryentry
       BEGIN INSERT INTO memory_entry_fts(rowid, content) VALUES (new.id, new.content); END""",
    "INSERT INTO memory_entry_fts(memory_entry_fts) VALUES ('rebuild')",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("memory", "0006_chain_checkpoint")]

    operations = [
        migrations.RunPython(_run({"sqlite": SQLITE_FORWARD}), _run({"sqlite": SQLITE_BACKWARD})),
    ]
