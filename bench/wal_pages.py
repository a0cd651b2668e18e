"""SQLite pages written per append, by table or index, in process.

    python bench/wal_pages.py [--appends 200]

Every page a SQLite transaction changes is written to the WAL once more,
and read again by the next worker whose cache another worker's commit
invalidated, so the pages an append touches are a direct measure of its
database work. On a fresh database in a temporary directory (never the
developer's), this creates a project, sends 50 appends through Django's WSGI
handler to warm up, switches automatic checkpoints off, sends --appends more
and reads the WAL: each frame names its page, and SQLite's dbstat table
names the B-tree that owns the page. Rate limits stay on, as in bench/run.py.
Prints pages per append, in all and per B-tree (docs/performance.md); not
part of `make bench`.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import shutil
import sqlite3
import struct
import sys
import tempfile
from pathlib import Path

WAL_HEADER = 32
FRAME_HEADER = 24


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench/wal_pages.py",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=200)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gedweb-wal-pages-"))
    try:
        os.environ.update({
            "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3",
            "GEDWEB_DATA_DIR": str(tmp / "data"),
            "GEDWEB_MEMORY_ROOT": str(tmp / "memory"),
            "GEDWEB_DEMO_PROJECT": "false",
            "GEDWEB_RATE_LIMIT": "1000000000/minute",
            "GEDWEB_WRITE_RATE_LIMIT": "1000000000/minute",
        })
        os.environ.pop("GEDWEB_MEMORY_WRITE_TOKEN", None)
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import layers  # noqa: PLC0415  (sets Django up, after the environment above)
        import workload  # noqa: PLC0415
        from django.core.handlers.wsgi import WSGIHandler  # noqa: PLC0415
        from django.core.management import call_command  # noqa: PLC0415
        from django.db import connection  # noqa: PLC0415

        from memory import services  # noqa: PLC0415

        call_command("migrate", "--noinput", verbosity=0)
        _, token = services.project_create(project_id="wal-pages", name="WAL pages")
        app, rng = WSGIHandler(), random.Random(7)

        def append(count: int) -> None:
            for _ in range(count):
                body = workload.request_body(rng)
                if layers._call(app, "/v1/projects/wal-pages/memory", body, token) != 201:
                    raise SystemExit("wal_pages: an append was refused")

        append(50)
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            cursor.execute("PRAGMA wal_autocheckpoint=0")
        append(args.appends)
        database = str(connection.settings_dict["NAME"])
        reader = sqlite3.connect(database)
        page_size = reader.execute("PRAGMA page_size").fetchone()[0]
        owner = dict(reader.execute("SELECT pageno, name FROM dbstat").fetchall())
        reader.close()
        wal = Path(database + "-wal").read_bytes()
        frames = (len(wal) - WAL_HEADER) // (page_size + FRAME_HEADER)
        pages: collections.Counter[str] = collections.Counter()
        for index in range(frames):
            start = WAL_HEADER + index * (page_size + FRAME_HEADER)
            (page,) = struct.unpack(">I", wal[start:start + 4])
            pages[owner.get(page, f"page {page} (freed)")] += 1
        print(f"{frames / args.appends:.1f} pages written per append "
              f"({frames} for {args.appends} appends)")
        for name, count in pages.most_common():
            print(f"  {count / args.appends:5.2f}  {name}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
