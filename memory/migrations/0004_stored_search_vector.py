"""PostgreSQL: search a stored tsvector instead of re-parsing content per row.

With only an expression index, a plan that walks the (project, seq) index
evaluated to_tsvector(content) for every row it passed (docs/performance.md,
observation 4). A generated stored column is computed once, at insert, and
its GIN index serves the same queries. SQLite keeps its FTS5 table.
"""

from django.db import migrations

FORWARD = [
    """ALTER TABLE memory_memoryentry ADD COLUMN content_tsv tsvector
       GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, content)) STORED""",
    "CREATE INDEX memory_entry_content_tsv ON memory_memoryentry USING GIN (content_tsv)",
    "DROP INDEX IF EXISTS memory_entry_content_fts",
]
BACKWARD = [
    """CREATE INDEX memory_entry_content_fts ON memory_memoryentry
       USING GIN (to_tsvector('simple'::regconfig, content))""",
    "DROP INDEX IF EXISTS memory_entry_content_tsv",
    "ALTER TABLE memory_memoryentry DROP COLUMN IF EXISTS content_tsv",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("memory", "0003_documents")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
