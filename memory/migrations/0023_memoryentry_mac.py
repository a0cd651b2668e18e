"""Every memory entry carries a MAC under the signing key (docs/security.md, "Actors").

The chain's sha256 is public, so a database role that may INSERT could append
a well-chained entry, or a redaction record, under any author. Since this
migration each entry also carries ``mac``, the HMAC of (project, seq, hash)
under the installation's signing key (memory.checkpoints.entry_mac), and the
``key_id`` of that key; verify, `memory verify` and `doctor` check it.

The entries written before get theirs here, signed with the current key:
the migration vouches for the chain as it finds it, so run `memory verify`
before upgrading (the checkpoints show a rewrite made before it).

Signing them is an UPDATE of rows the triggers keep append-only: the
UPDATE trigger steps aside for it (memory.migrations._entry_updates,
as memory 0021 does), inside the migration's transaction, as the tables'
owner. Then the SQLite rule that lets a redaction through (memory
0014) learns the two new columns: a redaction may change an entry's content
and nothing else, its MAC included. PostgreSQL's rule compares every column
but the content already.
"""

import importlib
from typing import Any

from django.conf import settings
from django.db import migrations, models

from memory.migrations._entry_updates import entry_updates_allowed

_REDACTION = importlib.import_module("memory.migrations.0014_redaction")

# Every column of memory_memoryentry but content, as this migration leaves
# the table (tests/memory/test_redaction.py checks the list against it).
UNCHANGED_COLUMNS = (*_REDACTION.UNCHANGED_COLUMNS, "mac", "key_id")

_SQLITE_UNCHANGED = " AND ".join(f"NEW.{c} IS OLD.{c}" for c in UNCHANGED_COLUMNS)

SQLITE_FORWARD = [
    "DROP TRIGGER IF EXISTS memory_entry_refuse_update",
    f"""CREATE TRIGGER memory_entry_refuse_update BEFORE UPDATE ON memory_memoryentry
       WHEN NOT (OLD.content_sha256 IS NOT NULL AND {_SQLITE_UNCHANGED}
                 AND EXISTS (SELECT 1 FROM memory_memoryentry AS record
                             WHERE record.redacts_id = OLD.id))
       BEGIN SELECT RAISE(ABORT, 'memory entries are append-only: UPDATE refused'); END""",  # nosec B608: constants only
]

SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS memory_entry_refuse_update",
    _REDACTION.SQLITE_FORWARD[1],
]

_BATCH = 5_000


def sign_existing_entries(apps: Any, schema_editor: Any) -> None:
    from memory.checkpoints import entry_mac, key_id

    signer = key_id(settings.SIGNING_KEY)
    with entry_updates_allowed(schema_editor), schema_editor.connection.cursor() as cursor:
        last = 0
        while True:
            cursor.execute(
                "SELECT id, project_id, seq, hash FROM memory_memoryentry "
                "WHERE id > %s AND mac IS NULL ORDER BY id LIMIT %s", [last, _BATCH])
            rows = cursor.fetchall()
            if not rows:
                break
            cursor.executemany(
                "UPDATE memory_memoryentry SET mac = %s, key_id = %s WHERE id = %s",
                [(entry_mac(project_id, seq, entry_hash, settings.SIGNING_KEY), signer, pk)
                 for pk, project_id, seq, entry_hash in rows])
            last = rows[-1][0]
    # SQLite's UPDATE rule is then made again with the new columns, below.


def _sqlite(statements: list[str]) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):

    dependencies = [
        ("memory", "0022_secretfinding"),
    ]

    operations = [
        migrations.AddField(
            model_name="memoryentry",
            name="mac",
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AddField(
            model_name="memoryentry",
            name="key_id",
            field=models.CharField(blank=True, max_length=16, null=True),
        ),
        migrations.RunPython(sign_existing_entries, migrations.RunPython.noop),
        migrations.RunPython(_sqlite(SQLITE_FORWARD), _sqlite(SQLITE_BACKWARD)),
    ]
