"""Durable documents: one append-only row per revision, with triggers that
refuse UPDATE and DELETE from any client."""

import django.db.models.deletion
from django.db import migrations, models

from gedweb.append_only import make_append_only

TABLES = ("memory_documentrevision",)


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0002_append_only_and_search"),
    ]

    operations = [
        migrations.CreateModel(
            name="DocumentRevision",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("path", models.CharField(max_length=160)),
                ("revision", models.PositiveIntegerField()),
                ("content", models.TextField()),
                ("sha256", models.CharField(max_length=64)),
                ("author", models.CharField(max_length=64)),
                ("created_at", models.DateTimeField()),
                ("reason", models.TextField(blank=True, null=True)),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="documents",
                        to="memory.project",
                    ),
                ),
            ],
            options={
                "ordering": ["project_id", "path", "revision"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project", "path", "revision"),
                        name="memory_documentrevision_unique_revision",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("revision__gte", 1)),
                        name="memory_documentrevision_revision_positive",
                    ),
                ],
            },
        ),
        make_append_only(*TABLES),
    ]
