"""`manage.py ged_import PATH --project P`: ingest a migrated GedPi checkout (docs/interop.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from governance.gedpi_import import import_checkout
from memory.management.commands._common import (
    GedWebCommand,
    get_project,
    path_argument,
    run_service,
    to_json,
)


class Command(GedWebCommand):
    help = (
        "Import a migrated GedPi checkout (.ged/, CONTEXT.md, docs/adr/, standards, skills, "
        "work items) into a project, in one transaction; a second run of the same tree "
        "changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the checkout's root directory")
        parser.add_argument("--project", required=True)

    def handle(self, *args: Any, path: str, project: str, **options: Any) -> None:
        target = get_project(project)
        result = run_service(lambda: import_checkout(project=target, root=path_argument(path)))
        self.stdout.write(to_json(result.as_dict()))
