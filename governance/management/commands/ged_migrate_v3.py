"""`manage.py ged_migrate_v3 PATH [--dry-run] [--wait SECONDS]`: GedPi's v3 migration.

The legacy checkpoint import runs first, then the durable-memory v3 migration,
both on the checkout at PATH (see docs/migration.md). Needs no database.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from gedweb.checkout import v3
from gedweb.checkout.migrate import migrate_checkout, plan_checkout
from gedweb.checkout.safefs import UnsafePath
from gedweb.commands import GedWebCommand, path_argument


def _entry_line(entry: dict[str, Any]) -> str:
    line = f"  {entry['action']} {entry['sourcePath']}"
    if "destinationPath" in entry:
        line += f" -> {entry['destinationPath']}"
    if "reason" in entry:
        line += f" ({entry['reason']})"
    return line


def _checkpoint_line(result: Any) -> str:
    parts = [f"legacy-checkpoints-v1: {getattr(result, 'status', result)}"]
    for name in ("outcome", "target_work_id", "backup_id"):
        value = getattr(result, name, None)
        if value is not None:
            parts.append(f"{name.replace('_', ' ')} {value}")
    return parts[0] if len(parts) == 1 else f"{parts[0]} ({', '.join(parts[1:])})"


class Command(GedWebCommand):
    help = (
        "Migrate a GedPi checkout's .ged/ memory to durable-memory v3 (legacy checkpoint "
        "import first). --dry-run prints the plan and changes nothing."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", metavar="PATH", help="the checkout (repository root)")
        parser.add_argument("--dry-run", action="store_true",
                            help="print what would happen; write nothing")
        parser.add_argument(
            "--wait", type=float, default=v3.DEFAULT_WAIT_SECONDS, metavar="SECONDS",
            help="how long to wait for another live migration of the same checkout "
                 f"(default {v3.DEFAULT_WAIT_SECONDS:g})",
        )

    def handle(self, *args: Any, path: str, dry_run: bool, wait: float, **options: Any) -> None:
        path_argument(path)
        if not os.path.isdir(path):
            raise CommandError(f"{path} is not an existing directory")
        absolute = os.path.abspath(path)
        if os.path.realpath(absolute) != absolute:
            # As ged_import: the checkout is migrated where it really is or
            # not at all, never through a link that may point elsewhere.
            raise CommandError(f"{path} is or lies inside a symbolic link")
        if wait < 0:
            raise CommandError("--wait must not be negative")
        root = Path(path).resolve()
        from gedweb.checkout.checkpoints import CheckpointError

        try:
            if dry_run:
                for line in plan_checkout(root):
                    self.stdout.write(line)
                self.stdout.write("dry run: nothing was changed")
                return
            result = migrate_checkout(root, wait_seconds=wait)
        except (UnsafePath, v3.MigrationError, CheckpointError, OSError,
                UnicodeDecodeError) as exc:
            raise CommandError(" ".join(str(exc).split())) from None
        self.stdout.write(_checkpoint_line(result.checkpoints))
        self.stdout.write(f"durable-memory-v3: {result.v3.status}")
        if result.v3.hint is not None:
            self.stdout.write(f"  no .ged/VERSION: {result.v3.hint}")
        for entry in result.v3.entries:
            self.stdout.write(_entry_line(entry))
