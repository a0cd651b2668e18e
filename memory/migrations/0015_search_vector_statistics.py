"""PostgreSQL: sample content_tsv ten times more, so a rare word's matches are counted right.

A search page is ``ORDER BY seq LIMIT n`` over one project. The planner
either walks the (project, seq) index and filters each row by the word,
cheap for a common word, or takes the word's matches from the GIN index and
sorts them, cheap for a rare one; it picks by how many rows it expects to
match. With the default statistics target (100) ANALYZE samples 30,000 rows,
and at a million entries it put a word in one entry in 1,000 at 5,003
matches where there are 1,020: the walk won, and read 20,280 rows (15 ms)
for an agent's page of 20, 99 ms for the API's default page of 100. At
1,000 (300,000 rows sampled, up to 10,000 words tracked) it expects 1,020
and takes the index: 2.4 ms; a common word still walks, in 0.3 ms
(docs/performance.md, "A million entries"). ANALYZE of a million entries
takes about 7 s instead of 1; autovacuum runs it in the background.

The ANALYZE here applies the new target at once rather than at
autovacuum's next visit. SQLite's FTS5 table returns a project's matches in
order and needs neither.
"""

from django.db import migrations

STATISTICS_TARGET = 1000


def _set_target(target):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(
                "ALTER TABLE memory_memoryentry ALTER COLUMN content_tsv"
                f" SET STATISTICS {int(target)}", params=None)
            schema_editor.execute("ANALYZE memory_memoryentry", params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("memory", "0014_redaction")]

    operations = [migrations.RunPython(_set_target(STATISTICS_TARGET), _set_target(-1))]
