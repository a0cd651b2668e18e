"""Chain checkpoints: signed (seq, hash) heads that truncation or a fork cannot
silently rewrite; append-only, with triggers that refuse UPDATE and DELETE
from any client (see memory.checkpoints)."""

import django.db.models.deletion
from django.db import migrations, models

from gedweb.append_only import make_append_only

TABLES = ("memory_chaincheckpoint",)


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0005_membership"),
    ]

    operations = [
        migrations.CreateModel(
            name="ChainCheckpoint",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("seq", models.PositiveBigIntegerField()),
                ("hash", models.CharField(max_length=64)),
                ("created_at", models.DateTimeField()),
                ("mac", models.CharField(max_length=64)),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="checkpoints",
                        to="memory.project",
                    ),
                ),
            ],
            options={
                "ordering": ["project_id", "seq"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project", "seq"), name="memory_chaincheckpoint_unique_seq"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("seq__gte", 1)),
                        name="memory_chaincheckpoint_seq_positive",
                    ),
                ],
            },
        ),
        make_append_only(*TABLES),
    ]
