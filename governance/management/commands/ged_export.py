"""`manage.py ged_export --project P PATH`: write a project back as a GedPi checkout layout."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from gedweb.commands import (
    GedWebCommand,
    get_project,
    path_argument,
    run_service,
    to_json,
)
from gedweb.progress import Bars
from governance.gedpi_export import export_tree


class Command(GedWebCommand):
    help = (
        "Write the project's supported GedPi files (docs/interop.md) under PATH, creating "
        "directories as needed; other files under PATH are never touched or deleted."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("path", help="target directory (created if missing)")

    def handle(self, *args: Any, project: str, path: str, **options: Any) -> None:
        target = get_project(project)
        with Bars(self.stderr._out) as bars:
            result = run_service(lambda: export_tree(project=target, root=path_argument(path),
                                                     progress=bars))
        self.stdout.write(to_json(result.as_dict()))
