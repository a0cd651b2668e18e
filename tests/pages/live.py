"""A gunicorn site started as `make run` starts it, seeded for the browser tests.

The server is tests.live_server.LiveGunicorn (gunicorn.conf.py, development mode, two
workers, its own database); the data is written by a seeding module's
``main()`` run through ``manage.py shell`` against that database, which
prints one JSON line of facts the tests need (paths, ids, hashes).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.live_server import LiveGunicorn


@contextmanager
def seeded_site(tmp: Path, seeder: str,
                **env: str) -> Iterator[tuple[LiveGunicorn, dict[str, Any]]]:
    with LiveGunicorn.running(tmp, WEB_CONCURRENCY="2", **env) as server:
        done = server.manage("shell", "-c", f"from {seeder} import main; main()")
        assert done.returncode == 0, done.stdout + done.stderr
        yield server, json.loads(done.stdout.strip().splitlines()[-1])
