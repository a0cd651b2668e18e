"""Idempotency-Key values are stored as their SHA-256 only (memory.services.idempotency_key_digest).

A key is client text no secret scan reads, and a client may send a
credential as one; a replay needs only equality, which the digest keeps.
Existing keys of entries and candidates are replaced by their digests here,
so a retry that began before the upgrade still replays. Memory entries are
append-only: their UPDATE trigger (memory 0014's, which lets only a
redaction through) is dropped for this one UPDATE and made again with the
very statement 0014 ran, so doctor's trigger check still matches. No column
of the chain's hash changes.
"""

import hashlib

from django.db import migrations

from memory.migrations._entry_updates import entry_updates_allowed

def digest(key: str) -> str:
    # This migration's own copy of the rule, as a migration keeps what it did.
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _digest_keys(model) -> None:
    rows = model._base_manager.filter(idempotency_key__isnull=False).values_list(
        "pk", "idempotency_key")
    for pk, key in list(rows.iterator(chunk_size=2000)):
        model._base_manager.filter(pk=pk).update(idempotency_key=digest(key))


def forward(apps, schema_editor):
    _digest_keys(apps.get_model("memory", "MemoryCandidate"))
    with entry_updates_allowed(schema_editor):
        _digest_keys(apps.get_model("memory", "MemoryEntry"))


class Migration(migrations.Migration):

    dependencies = [
        ("memory", "0020_candidate_withdrawn"),
    ]

    # A digest cannot be turned back into its key: going back leaves the
    # digests, which then simply never match a retried key.
    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
