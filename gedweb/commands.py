"""The management commands' toolkit, shared by both apps: one-line errors, JSON output, paths."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from gedweb.errors import DomainError
from gedweb.validation import validation_error_line
from memory.models import Project

T = TypeVar("T")


def to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=False)


def get_project(project_id: str) -> Project:
    project: Project | None = Project.objects.filter(pk=project_id).first()
    if project is None:
        raise CommandError(f"no project {project_id!r}")
    return project


def path_argument(value: str | Path, option: str = "PATH") -> Path:
    """A path given on the command line, refused at once if the OS could never open it."""
    if "\x00" in str(value):
        raise CommandError(f"{option} contains a NUL byte")
    return Path(value)


def one_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return validation_error_line(exc)
    if isinstance(exc, DomainError):
        return exc.message
    return str(exc)


def run_service(call: Callable[[], T]) -> T:
    """Turn a service's refusal into a one-line CommandError (no traceback)."""
    try:
        return call()
    except (ValidationError, DomainError) as exc:
        raise CommandError(one_line(exc)) from None


class OneLineErrorParser(CommandParser):
    """Argument errors as one line on stderr (exit 2), without the usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        if self.called_from_command_line:
            self.exit(2, f"{self.prog}: error: {message}\n")
        super().error(message)


class GedWebCommand(BaseCommand):
    """Base for GedWeb's commands: subcommands and one-line argument errors."""

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.__class__ = OneLineErrorParser
        return parser

    def add_actions(self, parser: CommandParser, dest: str) -> Any:
        # CommandParser passes called_from_command_line on to subparsers.
        return parser.add_subparsers(dest=dest, required=True, parser_class=OneLineErrorParser)
