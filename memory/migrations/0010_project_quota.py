"""Per-project storage quotas (memory/quotas.py), with the usage of what is stored already.

The backfill is one INSERT ... SELECT of SQL aggregates per quota: the UTF-8
bytes of every stored text (octet_length on PostgreSQL, the length of the
text cast to a BLOB on SQLite) plus ROW_OVERHEAD_BYTES per row, summed per
project, the same sizes quota_charge counts for each new row. Only the new
table is written; the append-only tables are read, never altered.
"""

import django.core.validators
import django.db.models.deletion
from django.db import migrations, models

# memory.quotas.ROW_OVERHEAD_BYTES when this migration was written; a
# migration keeps its own copy so that changing the constant later does not
# change what an old migration did.
ROW_OVERHEAD_BYTES = 256

# kind -> (table, text column, how the table reaches its project)
SOURCES = {
    "entries": [
        ("memory_memoryentry", "content", None),
        ("memory_memorycandidate", "content", None),
    ],
    "documents": [
        ("memory_documentrevision", "content", None),
        ("governance_standardsimport", "content", None),
    ],
    "work_files": [
        ("governance_workfile", "content", "work"),
        ("governance_taskartifact", "content", "work"),
        ("governance_evidencerecord", "record_json", "work"),
    ],
    "skills": [
        ("governance_skill", "content", None),
    ],
}


def byte_length(vendor: str, column: str) -> str:
    if vendor == "postgresql":
        return f"octet_length({column})"
    if vendor == "sqlite":
        return f"length(CAST({column} AS BLOB))"
    raise NotImplementedError(f"no byte length for {vendor}")


def usage_select(vendor: str, kind: str) -> str:
    """SELECT project_id, kind, used_bytes for every project with rows of this kind.

    Built from this module's constants only (table and column names of
    SOURCES), never from data; the kind is a parameter (%s).
    """
    parts = []
    for table, column, via in SOURCES[kind]:
        size = byte_length(vendor, f"t.{column}")
        if via == "work":
            parts.append(
                f"SELECT w.project_id AS project_id, COALESCE({size}, 0) + "  # nosec B608
                f"{ROW_OVERHEAD_BYTES} AS cost FROM {table} t "
                "JOIN governance_workitem w ON w.id = t.work_id"
            )
        else:
            parts.append(
                f"SELECT t.project_id AS project_id, COALESCE({size}, 0) + "  # nosec B608
                f"{ROW_OVERHEAD_BYTES} AS cost FROM {table} t"
            )
    return (
        f"SELECT u.project_id, %s, SUM(u.cost) FROM ({' UNION ALL '.join(parts)}) u "  # nosec B608
        "GROUP BY u.project_id"
    )


def backfill(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cursor:
        for kind in SOURCES:
            cursor.execute(
                "INSERT INTO memory_projectquota (project_id, kind, used_bytes) "
                + usage_select(vendor, kind),
                [kind],
            )
            # Every project gets its four rows, so operators find each quota
            # in the admin before its first write.
            cursor.execute(
                "INSERT INTO memory_projectquota (project_id, kind, used_bytes) "
                "SELECT p.id, %s, 0 FROM memory_project p WHERE NOT EXISTS ("
                "SELECT 1 FROM memory_projectquota q "
                "WHERE q.project_id = p.id AND q.kind = %s)",
                [kind, kind],
            )


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0009_rate_limit_cache"),
        # The backfill reads governance's tables.
        ("governance", "0005_skill_gedpi_record"),
    ]

    operations = [
        migrations.CreateModel(
            name="ProjectQuota",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("kind", models.CharField(choices=[("entries", "entries"),
                                                   ("documents", "documents"),
                                                   ("work_files", "work_files"),
                                                   ("skills", "skills")], max_length=16)),
                ("used_bytes", models.PositiveBigIntegerField(default=0)),
                ("limit_mib", models.PositiveIntegerField(
                    blank=True, help_text="MiB for this project; empty for the installation's "
                    "default.", null=True,
                    validators=[django.core.validators.MinValueValidator(1)])),
                ("project", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                              related_name="quotas", to="memory.project")),
            ],
            options={
                "ordering": ["project_id", "kind"],
                "constraints": [
                    models.UniqueConstraint(fields=("project", "kind"),
                                            name="memory_projectquota_unique_kind"),
                    models.CheckConstraint(
                        condition=models.Q(kind__in=["entries", "documents", "work_files",
                                                     "skills"]),
                        name="memory_projectquota_kind_valid"),
                    models.CheckConstraint(
                        condition=models.Q(("limit_mib__isnull", True), ("limit_mib__gte", 1),
                                           _connector="OR"),
                        name="memory_projectquota_limit_positive"),
                ],
            },
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
