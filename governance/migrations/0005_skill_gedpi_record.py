"""Skill.gedpi_record: the provenance record as ged_import found it.

A nullable column without a default is an ALTER TABLE ADD COLUMN on SQLite
too (no table rebuild), so the append-only triggers of 0004 stay in place.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0004_append_only"),
    ]

    operations = [
        migrations.AddField(
            model_name="skill",
            name="gedpi_record",
            field=models.TextField(blank=True, null=True),
        ),
    ]
