"""`manage.py doctor [--project P] [--checkout PATH]`: one line per check, exit 1 on any FAIL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from gedweb.commands import GedWebCommand
from governance import doctor
from memory.models import Project


class Command(GedWebCommand):
    help = (
        "Check memory chains, mirrors, governance, standards, skills and migrations "
        "(and a GedPi checkout with --checkout); exit 1 when anything fails."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", help="one project (default: every project)")
        parser.add_argument(
            "--checkout", type=Path, help="also check a GedPi checkout's migration leftovers"
        )

    def handle(self, *args: Any, project: str | None, checkout: Path | None,
               **options: Any) -> None:
        # Bad arguments exit 2, so exit 1 always means "a check failed".
        if checkout is not None and not checkout.is_dir():
            raise CommandError(f"--checkout {checkout} is not a directory", returncode=2)
        schema = doctor.check_schema()
        if not schema.ok:
            # Not migrated yet: the project lookup itself would fail, so only the
            # checkout (files, no database) is checked besides this one line.
            self._report(doctor.diagnose_unmigrated(schema, checkout))
            return
        if project is not None:
            projects = list(Project.objects.filter(pk=project))
            if not projects:
                raise CommandError(f"no project {project!r}", returncode=2)
        else:
            projects = list(Project.objects.order_by("id"))
        self._report(doctor.diagnose(projects, checkout))

    def _report(self, reports: list[doctor.Report]) -> None:
        for report in reports:
            for line in report.lines():
                self.stdout.write(line)
        failed = sum(len(report.outcome.problems) for report in reports)
        if failed:
            raise CommandError(f"doctor found {failed} problem(s)", returncode=1)
