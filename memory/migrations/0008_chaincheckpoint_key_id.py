"""Chain checkpoints name the key that signed them, so they survive a key rotation.

A nullable column: ALTER TABLE ADD COLUMN on both engines, which leaves the
append-only triggers of 0006 in place (SQLite would otherwise rebuild the
table and drop them).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0007_fts_project_column"),
    ]

    operations = [
        migrations.AddField(
            model_name="chaincheckpoint",
            name="key_id",
            field=models.CharField(blank=True, max_length=16, null=True),
        ),
    ]
