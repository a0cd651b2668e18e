"""What keeping delivered context bundles costs: bytes per delivery, measured.

On a fresh SQLite database (or DATABASE_URL) with the page tests' seeded
project: the stored text and outline of one bundle, the database growth of
N deliveries of the same bytes (stored once) and of N deliveries that each
differ (a new memory entry before each, as in a working project). Prints
one JSON line:

    python bench/context_bundles.py --count 200
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="gedweb-bundles-"))
    db_file = scratch / "bench.sqlite3"
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{db_file}")
    os.environ.setdefault("GEDWEB_DATA_DIR", str(scratch / "data"))
    os.environ.setdefault("GEDWEB_MEMORY_ROOT", str(scratch / "mirror"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gedweb.settings")
    sys.path.insert(0, str(HERE.parent))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from governance.context import context_deliver
    from governance.models import ContextBundle
    from memory import services
    from tests.pages.seed import seed_project

    call_command("migrate", verbosity=0)
    project, _ = services.project_create(project_id="bundles", name="Bundles")
    seeded = seed_project(project)

    def used() -> int:
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                cursor.execute("SELECT page_count * page_size FROM pragma_page_count(), "
                               "pragma_page_size()")
            else:
                cursor.execute("SELECT pg_total_relation_size('governance_contextbundle') + "
                               "pg_total_relation_size('governance_contextdelivery')")
            return int(cursor.fetchone()[0])

    row = ContextBundle.objects.filter(project=project).order_by("-id").first()
    assert row is not None
    start = used()
    for _ in range(args.count):
        context_deliver(project=project, work=seeded.work, author="agent", output_format="text")
    same = used() - start
    start = used()
    for number in range(args.count):
        services.memory_entry_create(project=project, author="agent", category="note",
                                     content=f"Delivery {number} follows this entry.")
        context_deliver(project=project, work=seeded.work, author="agent", output_format="text")
    distinct = used() - start
    start = used()
    for number in range(args.count):  # the entries alone, to take them out again
        services.memory_entry_create(project=project, author="agent", category="note",
                                     content=f"Delivery {number} follows this entry.")
    entries_only = used() - start
    print(json.dumps({
        "vendor": connection.vendor,
        "bundle_text_bytes": len(row.text.encode()),
        "bundle_outline_bytes": len(row.sections.encode()),
        "deliveries": args.count,
        "identical_deliveries_bytes_each": round(same / args.count),
        "distinct_deliveries_bytes_each_incl_one_entry": round(distinct / args.count),
        "one_entry_bytes": round(entries_only / args.count),
        "distinct_deliveries_bytes_each": round((distinct - entries_only) / args.count),
        "bundles_stored": ContextBundle.objects.filter(project=project).count(),
    }))


if __name__ == "__main__":
    main()
