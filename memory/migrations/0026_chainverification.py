"""The last chain verification of each project (memory.models.ChainVerification).

`memory verify` and `doctor` record when they checked the chain and what they
found; the overview's chain badge shows it.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("memory", "0023_memoryentry_mac"),
    ]

    operations = [
        migrations.CreateModel(
            name="ChainVerification",
            fields=[
                ("project", models.OneToOneField(
                    on_delete=django.db.models.deletion.CASCADE, primary_key=True,
                    related_name="last_verification", serialize=False, to="memory.project")),
                ("checked_at", models.DateTimeField()),
                ("ok", models.BooleanField()),
                ("entries", models.PositiveBigIntegerField()),
                ("first_bad_seq", models.PositiveBigIntegerField(blank=True, null=True)),
                ("problem", models.TextField(blank=True, default="")),
            ],
        ),
    ]
