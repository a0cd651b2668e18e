"""Three indexes fewer written per append: the entry's foreign keys' own.

Django gives every ForeignKey an index. On memory entries they duplicate
others: (project, seq) (memory_memoryentry_unique_seq) answers every lookup
by project, the partial unique memory_memoryentry_one_redaction every lookup
by redacts, and corrects, NULL on most entries, needs an index of the
corrections only. On PostgreSQL the project's varchar key had a second one,
for LIKE. Each was one more B-tree insert and WAL page per append
(docs/performance.md).

The indexes are dropped by name rather than by AlterField: on SQLite an
AlterField rebuilds the table, which would drop its append-only triggers.
"""

import django.db.models.deletion
from django.db import migrations, models

DROPPED = [
    "memory_memoryentry_project_id_5ac51224",
    "memory_memoryentry_project_id_5ac51224_like",  # PostgreSQL only
    "memory_memoryentry_corrects_id_9f8a2acc",
    "memory_memoryentry_redacts_id_91ac8537",
]
RESTORED = {
    "memory_memoryentry_project_id_5ac51224": "(project_id)",
    "memory_memoryentry_corrects_id_9f8a2acc": "(corrects_id)",
    "memory_memoryentry_redacts_id_91ac8537": "(redacts_id)",
}


def _drop(apps, schema_editor):
    for name in DROPPED:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}", params=None)


def _restore(apps, schema_editor):
    for name, columns in RESTORED.items():
        schema_editor.execute(f"CREATE INDEX {name} ON memory_memoryentry {columns}",
                              params=None)
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "CREATE INDEX memory_memoryentry_project_id_5ac51224_like"
            " ON memory_memoryentry (project_id varchar_pattern_ops)", params=None)


class Migration(migrations.Migration):
    dependencies = [("memory", "0015_search_vector_statistics")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="memoryentry", name="project",
                    field=models.ForeignKey(db_index=False,
                                            on_delete=django.db.models.deletion.PROTECT,
                                            related_name="entries", to="memory.project"),
                ),
                migrations.AlterField(
                    model_name="memoryentry", name="corrects",
                    field=models.ForeignKey(blank=True, db_index=False, null=True,
                                            on_delete=django.db.models.deletion.PROTECT,
                                            related_name="corrected_by",
                                            to="memory.memoryentry"),
                ),
                migrations.AlterField(
                    model_name="memoryentry", name="redacts",
                    field=models.ForeignKey(blank=True, db_index=False, null=True,
                                            on_delete=django.db.models.deletion.PROTECT,
                                            related_name="redactions",
                                            to="memory.memoryentry"),
                ),
            ],
            database_operations=[migrations.RunPython(_drop, _restore)],
        ),
        migrations.AddIndex(
            model_name="memoryentry",
            index=models.Index(condition=models.Q(corrects__isnull=False), fields=["corrects"],
                               name="memory_entry_corrects_idx"),
        ),
    ]
