"""Idempotency-Keys on memory candidate proposals, scoped as entries' are (memory 0011).

A retried proposal whose answer was lost used to store a second candidate.
Candidates now keep the key, the request hash and the key's scope (the token
that sent it), unique per (project, scope, key) where a key is set. Every
step is an ALTER TABLE ADD COLUMN of a nullable column or a CREATE UNIQUE
INDEX, never a table rebuild: candidates carry no append-only triggers (their
status changes on approval and rejection), but a rebuild would still copy
every row for nothing. Existing candidates stay unkeyed (NULL).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0011_memoryentry_idempotency_scope"),
    ]

    operations = [
        migrations.AddField(
            model_name="memorycandidate",
            name="idempotency_key",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.AddField(
            model_name="memorycandidate",
            name="idempotency_scope",
            field=models.CharField(blank=True, max_length=80, null=True),
        ),
        migrations.AddField(
            model_name="memorycandidate",
            name="request_hash",
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AddConstraint(
            model_name="memorycandidate",
            constraint=models.UniqueConstraint(
                condition=models.Q(("idempotency_key__isnull", False)),
                fields=("project", "idempotency_scope", "idempotency_key"),
                name="memory_memorycandidate_unique_scoped_idempotency_key",
            ),
        ),
    ]
