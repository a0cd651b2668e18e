"""The team pages' toolkit, shared by both apps: the project of a page, its frame, cursors.

Every project page gets its project through project_or_404 (members only:
anyone else gets the 404 a missing project gets) and pages through
keyset_page, the team pages' face of the one keyset paginator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404

from gedweb.pagination import key_of, keyset_slice
from memory.models import Membership, Project

if TYPE_CHECKING:
    from django.contrib.auth.models import User

PAGE_SIZE = 50


def project_or_404(request: HttpRequest, project_id: str) -> Project:
    """The one way a page gets its project: visible to this user, or 404."""
    project: Project = get_object_or_404(Project.objects.visible_to(request.user), pk=project_id)
    return project


def member_role(request: HttpRequest, project: Project) -> str:
    """The signed-in user's role in a project project_or_404 gave: a role, or "superuser"."""
    if request.user.is_superuser:
        return "superuser"
    # project_or_404 let only a member through, so the user has signed in.
    member = cast("User", request.user)
    role = (
        Membership.objects.filter(user=member, project=project)
        .values_list("role", flat=True)
        .first()
    )
    return role or "superuser"


def may_review(role: str) -> bool:
    """Whether a role decides candidates on the pages: operators and superusers; viewers read."""
    return role in (Membership.Role.OPERATOR, "superuser")


def project_context(request: HttpRequest, project: Project, section: str) -> dict[str, Any]:
    """What base.html needs on every project page: switcher, role, active tab."""
    role = member_role(request, project)
    switcher = list(Project.objects.visible_to(request.user).order_by("id").values("id", "name"))
    return {"project": project, "role": role, "section": section,
            "switcher": switcher}


# --- cursors ------------------------------------------------------------------------------


def cursor_value(value: str | None) -> int | None:
    """A page cursor from the query string: a positive integer, absent, or 404."""
    if value is None or value == "":
        return None
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise Http404  # a malformed cursor names no page
    return int(value)


@dataclass(frozen=True)
class Page:
    """One keyset page, newest first: items plus the cursors either way (None: no page)."""

    items: list[Any]
    newer: int | None
    older: int | None


def keyset_page(rows: Any, key: str, before: int | None, after: int | None,
                size: int, order: str | None = None) -> Page:
    """Newest-first keyset pagination on an indexed integer column (gedweb.pagination).

    ``before=k`` shows the next ``size`` rows with key < k (older), ``after=k``
    the ``size`` rows with key > k nearest to it (newer). The opposite link
    exists whenever a cursor brought the reader here. ``order`` names another
    column that sorts the rows exactly as ``key`` does (see seq_order_key).
    """
    if after is not None:
        nearer = keyset_slice(rows, key=key, limit=size, after=after, order=order)
        items = list(reversed(nearer.items))
        newer = key_of(items[0], key) if nearer.more and items else None
        older = key_of(items[-1], key) if items else after + 1
        return Page(items, newer, older)
    older_rows = keyset_slice(rows, key=key, limit=size, before=before, descending=True,
                              order=order)
    items = older_rows.items
    older = older_rows.next_cursor
    newer = (key_of(items[0], key) if items else before - 1) if before is not None else None
    return Page(items, newer, older)
