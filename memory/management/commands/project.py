"""`manage.py project create|token|revoke|list`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from gedweb.commands import GedWebCommand, get_project, run_service, to_json
from memory import services
from memory.api.serializers import ProjectSerializer
from memory.models import Project, ProjectToken


class Command(GedWebCommand):
    help = "Create projects, issue and revoke their tokens, list projects."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.add_actions(parser, "action")
        create = actions.add_parser("create", help="create a project and print its token once")
        create.add_argument("id")
        create.add_argument("--name", required=True)
        create.add_argument("--token-name", default=services.DEFAULT_TOKEN_NAME)
        token = actions.add_parser("token", help="issue a named token and print it once")
        token.add_argument("id")
        token.add_argument("--name", required=True)
        revoke = actions.add_parser("revoke", help="revoke a project's token by name")
        revoke.add_argument("id")
        revoke.add_argument("--name", required=True)
        actions.add_parser("list", help="list projects with their active token names")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        getattr(self, f"_{action}")(**options)

    def _create(self, *, id: str, name: str, token_name: str, **_: Any) -> None:
        project, raw = run_service(
            lambda: services.project_create(project_id=id, name=name, token_name=token_name)
        )
        created = ProjectSerializer.render(project)
        self.stdout.write(to_json({**created, "token_name": token_name, "token": raw}))

    def _token(self, *, id: str, name: str, **_: Any) -> None:
        project = get_project(id)
        record, raw = run_service(lambda: services.project_token_create(project=project, name=name))
        self.stdout.write(to_json({"project_id": project.pk, "name": record.name, "token": raw}))

    def _revoke(self, *, id: str, name: str, **_: Any) -> None:
        project = get_project(id)
        count = services.project_token_revoke(project=project, name=name)
        if count == 0:
            raise CommandError(f"project {id} has no active token named {name!r}")
        self.stdout.write(to_json({"project_id": project.pk, "name": name, "revoked": count}))

    def _list(self, **_: Any) -> None:
        names: dict[str, list[str]] = {}
        for project_id, name in ProjectToken.objects.active().values_list("project_id", "name"):
            names.setdefault(project_id, []).append(name)
        items = [
            {**ProjectSerializer.render(project), "tokens": sorted(names.get(project.pk, []))}
            for project in Project.objects.order_by("id")
        ]
        self.stdout.write(to_json({"items": items}))
