"""`manage.py ferryman_import --project P (--database DB [--ferryman-project ID] | --mirror MD)`.

Reading is memory/ferryman.py, writing is services.memory_entries_import:
all rows are checked first and land in one transaction, or none do. A hostile
source (a view, trigger, oversized value, too many rows, a pathological
MEMORY.md) is refused by the reader before anything is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from gedweb.commands import GedWebCommand, get_project, run_service, to_json
from memory import ferryman, services


class Command(GedWebCommand):
    help = (
        "Import Ferryman's project memory (bridge.db or MEMORY.md) in order, keeping each "
        "entry's time, category and source; a re-run adds only entries not yet imported."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the GedWeb project to append to")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--database", type=Path, help="Ferryman's SQLite bridge.db")
        source.add_argument("--mirror", type=Path, help="a Ferryman MEMORY.md")
        parser.add_argument(
            "--ferryman-project",
            help="Ferryman project id in the database (needed when it holds several)",
        )

    def handle(self, *args: Any, project: str, database: Path | None, mirror: Path | None,
               ferryman_project: str | None, **options: Any) -> None:
        if mirror is not None and ferryman_project is not None:
            raise CommandError("--ferryman-project applies to --database only")
        target = get_project(project)
        try:
            if database is not None:
                ferryman_project, entries = ferryman.read_database(database, ferryman_project)
            else:
                assert mirror is not None
                entries = ferryman.read_mirror(mirror)
            rows = ferryman.import_rows(entries)
        except ferryman.FerrymanSourceError as exc:
            # One line even when a hostile path or value holds a line break.
            raise CommandError(" ".join(str(exc).splitlines())) from None
        result = run_service(lambda: services.memory_entries_import(project=target, rows=rows))
        self.stdout.write(
            to_json(
                {
                    "project_id": target.pk,
                    "source": str(database if database is not None else mirror),
                    "ferryman_project": ferryman_project,
                    "imported": len(result.imported),
                    "already_present": len(result.present),
                    "first_seq": result.imported[0].seq if result.imported else None,
                    "last_seq": result.imported[-1].seq if result.imported else None,
                }
            )
        )
