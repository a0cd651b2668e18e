"""Idempotency-Keys belong to the token that sent them (issue 16 §8).

Before, a key was unique per project: a second token sending the first
one's key and body was answered 201 "Idempotent-Replayed" with the first
token's entry. The key is now unique per (project, scope, key), the scope
naming the token. Every step keeps SQLite's append-only triggers: a partial
unique index is dropped and created (DROP INDEX / CREATE UNIQUE INDEX), and
the nullable column is an ALTER TABLE ADD COLUMN, never a table rebuild.
Rows keyed before have no scope (NULL) and are never rewritten (they are
append-only); memory.services._keyed_entry still replays them to their own
author.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0010_project_quota"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="memoryentry",
            name="memory_memoryentry_unique_idempotency_key",
        ),
        migrations.AddField(
            model_name="memoryentry",
            name="idempotency_scope",
            field=models.CharField(blank=True, max_length=80, null=True),
        ),
        migrations.AddConstraint(
            model_name="memoryentry",
            constraint=models.UniqueConstraint(
                condition=models.Q(("idempotency_key__isnull", False)),
                fields=("project", "idempotency_scope", "idempotency_key"),
                name="memory_memoryentry_unique_scoped_idempotency_key",
            ),
        ),
    ]
