"""The rate counters stop paying for durability (gedweb/throttling.py).

PostgreSQL: gedweb_rate_counter becomes UNLOGGED. Every authenticated
request commits a count; a transaction that wrote only unlogged tables
commits without waiting for a WAL flush, and after a crash the table starts
empty, which only lets a client send a few requests more in one window.
Unlogged tables are not copied to streaming replicas, which a count does
not need.

SQLite: the counts move to a file of their own beside the database
(``<database>-rates``), so that counting no longer takes the database's one
writer lock; the rows left in the table are garbage and go.
"""

from django.db import migrations


def forward(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        if schema_editor.connection.vendor == "postgresql":
            cursor.execute("ALTER TABLE gedweb_rate_counter SET UNLOGGED")
        else:
            cursor.execute("DELETE FROM gedweb_rate_counter")


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("ALTER TABLE gedweb_rate_counter SET LOGGED")


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0016_entry_foreign_key_indexes"),
    ]

    operations = [migrations.RunPython(forward, backward)]
