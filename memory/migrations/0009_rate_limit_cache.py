"""The table behind the API's rate-limit counters when REDIS_URL is unset.

Django's database cache keeps them (gedweb/throttling.py), so every worker
and app server on one database counts together. `make run` only migrates
and never runs `createcachetable`, so the table comes with the schema,
created by Django's own createcachetable code (its exact layout).
"""

from django.core.management.commands.createcachetable import Command as CreateCacheTable
from django.db import migrations

TABLE = "gedweb_rate_limits"


def create_table(apps, schema_editor):
    CreateCacheTable().create_table(schema_editor.connection.alias, TABLE, dry_run=False)


def drop_table(apps, schema_editor):
    schema_editor.execute(f"DROP TABLE {schema_editor.quote_name(TABLE)}")


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0008_chaincheckpoint_key_id"),
    ]

    operations = [migrations.RunPython(create_table, drop_table)]
