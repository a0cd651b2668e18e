"""`manage.py member add|remove|list`: who may read a project's team pages."""

from __future__ import annotations

import getpass
import sys
from typing import IO, TYPE_CHECKING, Any, cast

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError, CommandParser
from django.db import IntegrityError, transaction

from gedweb.commands import (
    GedWebCommand,
    get_project,
    one_line,
    run_service,
    to_json,
)
from memory import services
from memory.models import Membership, format_timestamp

if TYPE_CHECKING:
    # settings.AUTH_USER_MODEL: the memberships' foreign key points at it.
    from django.contrib.auth.models import User
    from django.db.models import Field

ROLES = Membership.Role.values


def _username(value: str) -> str:
    return get_user_model().normalize_username(value)


def get_user(username: str, hint: str = "") -> User:
    User = get_user_model()
    user = User._default_manager.filter(**{User.USERNAME_FIELD: _username(username)}).first()
    if user is None:
        raise CommandError(f"no user {username!r}{hint}")
    return user


def membership_dict(membership: Membership) -> dict[str, Any]:
    return {
        "user": membership.user.get_username(),
        "project_id": membership.project_id,
        "role": membership.role,
        "created_at": format_timestamp(membership.created_at),
    }


class Command(GedWebCommand):
    help = "Add, change and remove team members of projects (Membership), list them."
    # call_command(..., stdin=...) hands tests a password stream, as createsuperuser does.
    stealth_options = ("stdin",)

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.add_actions(parser, "action")
        add = actions.add_parser(
            "add", help="give a user a role in a project; an existing membership changes role"
        )
        add.add_argument("user", help="username")
        add.add_argument("project", help="project id")
        add.add_argument("--role", required=True, choices=ROLES)
        add.add_argument(
            "--create",
            action="store_true",
            help="create the user (not staff); the password is read from stdin, one line, "
            "or prompted for twice on a terminal",
        )
        remove = actions.add_parser("remove", help="end a user's membership of a project")
        remove.add_argument("user", help="username")
        remove.add_argument("project", help="project id")
        listing = actions.add_parser("list", help="print memberships, by project then user")
        listing.add_argument("--project", help="one project (default: all)")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        getattr(self, f"_{action}")(**options)

    def _add(self, *, user: str, project: str, role: str, create: bool, **options: Any) -> None:
        target = get_project(project)
        if create:
            password = self._new_user_password(user, options.get("stdin") or sys.stdin)
        else:
            member = get_user(user, " (add --create to create it)")
        with transaction.atomic():
            # The new user and the membership commit together or not at all.
            if create:
                member = self._create_user(user, password)
            # Locked, so that the role reported as previous is the one replaced.
            previous = (
                Membership.objects.select_for_update()
                .filter(user=member, project=target)
                .values_list("role", flat=True)
                .first()
            )
            membership, changed = run_service(
                lambda: services.membership_set(user=member, project=target, role=role)
            )
        if previous is None:
            result = "added"
        elif changed:
            result = "role_changed"
        else:
            result = "unchanged"
        membership.user = member
        self.stdout.write(to_json({
            **membership_dict(membership),
            "result": result,
            "previous_role": previous,
            "user_created": create,
        }))

    def _new_user_password(self, username: str, stdin: IO[str]) -> str:
        """Check the new user's name, then read and validate its password; writes nothing."""
        User = get_user_model()
        name = _username(username)
        # USERNAME_FIELD names one of the model's own fields, never a relation.
        field = cast("Field[Any, Any]", User._meta.get_field(User.USERNAME_FIELD))
        try:
            field.clean(name, None)
        except ValidationError as exc:
            raise CommandError(f"bad username {username!r}: {one_line(exc)}") from None
        if User._default_manager.filter(**{User.USERNAME_FIELD: name}).exists():
            raise CommandError(
                f"user {username!r} already exists; drop --create to add it "
                "(its password is left as it is)"
            )
        password = self._read_password(stdin)
        if not password:
            raise CommandError("the password is empty; no user created")
        try:
            validate_password(password, user=User(**{User.USERNAME_FIELD: name}))
        except ValidationError as exc:
            raise CommandError(f"password refused, no user created: {one_line(exc)}") from None
        return password

    def _read_password(self, stdin: IO[str]) -> str:
        if stdin.isatty():
            first = getpass.getpass("Password: ")
            if getpass.getpass("Password (again): ") != first:
                raise CommandError("the passwords do not match; no user created")
            return first
        line = stdin.readline()
        if not line:
            raise CommandError("--create reads the password from stdin, which is empty")
        return line.removesuffix("\n").removesuffix("\r")

    def _create_user(self, username: str, password: str) -> User:
        User = get_user_model()
        try:
            # A savepoint: a user of that name created since the check is an
            # IntegrityError here, and raising rolls the whole add back.
            with transaction.atomic():
                user = User._default_manager.create_user(
                    **{User.USERNAME_FIELD: _username(username)}, password=password
                )
        except IntegrityError:
            raise CommandError(f"user {username!r} already exists; nothing was created") from None
        return user

    def _remove(self, *, user: str, project: str, **_: Any) -> None:
        target = get_project(project)
        member = get_user(user)
        if services.membership_remove(user=member, project=target) == 0:
            raise CommandError(f"user {user!r} is not a member of project {project}")
        self.stdout.write(to_json({"user": member.get_username(), "project_id": target.pk,
                                   "removed": 1}))

    def _list(self, *, project: str | None, **_: Any) -> None:
        memberships = Membership.objects.select_related("user")
        if project:
            memberships = memberships.filter(project=get_project(project))
        User = get_user_model()
        ordered = memberships.order_by("project_id", f"user__{User.USERNAME_FIELD}", "user_id")
        self.stdout.write(to_json({"items": [membership_dict(m) for m in ordered]}))
