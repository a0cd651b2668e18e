"""`manage.py ged_import PATH --project P`: ingest a migrated GedPi checkout (docs/interop.md).

The checkout's own standards decisions arrive pending; `--trust-decisions
PATH[,PATH...]` (repeatable) accepts the checkout's decision for exactly
those files, recorded as `ged_import:trusted-by:<--by NAME or the OS user>`.
The checkout's governance (evidence, approvals, lifecycle) is kept as found
but counts for nothing until an operator trusts it: `--trust-governance
WORK_ID[,WORK_ID...]` does, under the same name.
"""

from __future__ import annotations

import getpass
import os
from typing import Any

from django.core.management.base import CommandError, CommandParser

from gedweb.commands import (
    GedWebCommand,
    get_project,
    path_argument,
    run_service,
    to_json,
)
from gedweb.progress import Bars
from governance.gedpi_import import import_checkout, trusted_by_label


def _os_user() -> str | None:
    """The account running the command: the effective uid's name, not $USER."""
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError, OSError):
        pass
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def trusted_paths(values: list[str] | None, option: str = "--trust-decisions",
                  what: str = "PATH") -> list[str]:
    paths = [part.strip() for value in values or [] for part in value.split(",")]
    if any(not path for path in paths):
        raise CommandError(f"{option}: a {what.lower()} is empty; give {what}[,{what}...]")
    return paths


def trusted_by_name(by: str | None, option: str) -> str:
    """ged_import:trusted-by:<--by NAME, or the OS user running the command>."""
    name = by if by is not None else _os_user()
    if name is None:
        raise CommandError(f"{option}: the OS user is unknown; give --by NAME")
    return run_service(lambda: trusted_by_label(name))


class Command(GedWebCommand):
    help = (
        "Import a migrated GedPi checkout (.ged/, CONTEXT.md, docs/adr/, standards, skills, "
        "work items) into a project, in one transaction; a second run of the same tree "
        "changes nothing. The checkout's standards decisions arrive pending unless "
        "--trust-decisions names the file."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the checkout's root directory")
        parser.add_argument("--project", required=True)
        parser.add_argument(
            "--trust-decisions", action="append", metavar="PATH[,PATH...]",
            help="accept the checkout's own IMPORT-STATE.json decision for these standards "
                 "files (e.g. AGENTS.md,CLAUDE.md; repeatable); refused unless each file's "
                 "bytes hash to the sha256 the checkout decided on",
        )
        parser.add_argument(
            "--trust-governance", action="append", metavar="WORK_ID[,WORK_ID...]",
            help="count the checkout's governance of these work items (evidence, approvals, "
                 "lifecycle) as GedWeb's own for the guard and lifecycle steps (repeatable); "
                 "without it, imported governance is shown as imported and counts for nothing",
        )
        parser.add_argument(
            "--by", metavar="NAME",
            help="who trusts the decisions or the governance (default: the OS user running "
                 "the command); recorded as ged_import:trusted-by:NAME",
        )

    def handle(self, *args: Any, path: str, project: str, trust_decisions: list[str] | None,
               trust_governance: list[str] | None, by: str | None, **options: Any) -> None:
        paths = trusted_paths(trust_decisions)
        work_ids = trusted_paths(trust_governance, "--trust-governance", "WORK_ID")
        trusted_by = None
        if by is not None and not paths and not work_ids:
            raise CommandError("--by names who trusts the checkout's decisions or governance; "
                               "it needs --trust-decisions or --trust-governance")
        if paths or work_ids:
            trusted_by = trusted_by_name(
                by, "--trust-decisions" if paths else "--trust-governance")
        target = get_project(project)
        root = path_argument(path)
        if work_ids:
            # On stderr, so stdout stays one JSON object; written before the transaction.
            self.stderr.write(f"ged_import: trusting the checkout's governance as {trusted_by}: "
                              + ", ".join(work_ids))
        with Bars(self.stderr._out) as bars:
            result = run_service(lambda: import_checkout(
                project=target, root=root, trust=paths, trusted_by=trusted_by,
                trust_governance=work_ids, announce=self._announce, progress=bars,
            ))
        self.stdout.write(to_json(result.as_dict()))

    def _announce(self, trusted: list[dict[str, str]], trusted_by: str) -> None:
        # On stderr, so stdout stays one JSON object; written before the transaction.
        self.stderr.write(f"ged_import: trusting the checkout's decisions as {trusted_by}:")
        for item in trusted:
            self.stderr.write(f"ged_import:   {item['path']}: {item['decision']}, "
                              f"sha256 {item['sha256']}")
