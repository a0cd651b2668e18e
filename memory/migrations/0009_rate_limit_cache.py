"""The table behind the API's rate-limit counters when REDIS_URL is unset.

gedweb/throttling.py counts each token's requests per window here with one
atomic upsert, so every worker and app server on one database counts
together. Django's database cache was the first choice, but its incr() is a
read and then a write (concurrent workers lose counts) of about six
statements; this is one statement and exact.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0008_chaincheckpoint_key_id"),
    ]

    operations = [
        migrations.CreateModel(
            name="RateCounter",
            fields=[
                ("counter_key", models.CharField(max_length=200, primary_key=True, serialize=False)),
                ("hits", models.PositiveBigIntegerField()),
                ("expires_at", models.BigIntegerField(db_index=True)),
            ],
            options={"db_table": "gedweb_rate_counter"},
        ),
    ]
