"""For a migration's own UPDATE of stored memory entries (a backfill), and nothing else.

Kept among the migrations (Django's loader skips a module whose name starts
with "_"): only a migration, as the tables' owner, may lift a trigger.
Memory 0021 and 0023 use it, and a test that rebuilds their starting state.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_REDACTION = importlib.import_module("memory.migrations.0014_redaction")


@contextmanager
def entry_updates_allowed(schema_editor: Any) -> Iterator[None]:
    """The entries' UPDATE trigger dropped for the block, then made again as memory 0014 made it.

    Inside the migration's transaction, so a failure leaves the trigger in
    place; made again with 0014's very statement, so doctor's check matches.
    """
    drop, create = {
        "sqlite": ("DROP TRIGGER IF EXISTS memory_entry_refuse_update",
                   _REDACTION.SQLITE_FORWARD[1]),
        "postgresql": ("DROP TRIGGER IF EXISTS memory_entry_append_only ON memory_memoryentry",
                       _REDACTION.POSTGRES_FORWARD[2]),
    }[schema_editor.connection.vendor]
    schema_editor.execute(drop, params=None)
    yield
    schema_editor.execute(create, params=None)
