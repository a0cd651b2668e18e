"""People and projects for the page tests: a member of alpha, an outsider, a superuser."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from governance.models import ContextDelivery
from memory import services
from memory.models import Membership
from tests.django_fixtures import *  # noqa: F403  (the Django suite's shared fixtures)
from tests.pages.seed import PASSWORD, Seeded, seed_project


@dataclass
class Site:
    alpha: Seeded
    beta: Seeded
    member: Any  # viewer of alpha only
    operator: Any  # operator of alpha only
    outsider: Any  # member of beta only
    root: Any  # superuser, member of nothing
    alpha_token: str = ""  # alpha's project token, for comparing a page with the API


@pytest.fixture
def site(make_project, django_user_model) -> Site:
    made = make_project("alpha", "Web shop")
    alpha = seed_project(made.project)
    beta = seed_project(make_project("beta", "Secret lab").project, author="agent-beta")
    for word in ("zanzibar", "quokka"):
        # Words only beta holds, to prove alpha's search and counts never see them.
        services.memory_entry_create(project=beta.project, author="agent-beta",
                                     category="secret", source="lab", content=f"{word} plans")
    users = {}
    for name in ("vera", "otto", "nina"):
        users[name] = django_user_model.objects.create_user(name, f"{name}@example.org", PASSWORD)
    root = django_user_model.objects.create_superuser("root", "root@example.org", PASSWORD)
    Membership.objects.create(user=users["vera"], project=alpha.project)
    Membership.objects.create(user=users["otto"], project=alpha.project,
                              role=Membership.Role.OPERATOR)
    Membership.objects.create(user=users["nina"], project=beta.project)
    return Site(alpha, beta, users["vera"], users["otto"], users["nina"], root, made.token)


def login(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def project_urls(seeded: Seeded) -> list[str]:
    """Every team page of one project, with real ids from its data."""
    p = seeded.project.pk
    work = seeded.work
    accepted = seeded.extra["accepted"]
    delivery = ContextDelivery.objects.filter(project=seeded.project).order_by("id")[0].pk
    return [
        f"/p/{p}/",
        f"/p/{p}/memory/",
        f"/p/{p}/memory/?q=postgresql",
        f"/p/{p}/memory/?category=decision&source=architect",
        f"/p/{p}/memory/{seeded.correction.seq}",
        f"/p/{p}/memory/{seeded.correction.uuid}",
        f"/p/{p}/memory/authors/{seeded.correction.author}/",
        f"/p/{p}/mirror/",
        f"/p/{p}/MEMORY.md",
        f"/p/{p}/documents/",
        f"/p/{p}/documents/PROJECT.md",
        f"/p/{p}/documents/adr/0001-orders-on-postgresql.md?revision=1",
        f"/p/{p}/work/",
        f"/p/{p}/work/{work.work_id}/",
        f"/p/{p}/work/{work.work_id}/revisions/1",
        f"/p/{p}/work/{work.work_id}/revisions/2",
        f"/p/{p}/standards/",
        f"/p/{p}/standards/{accepted.public_id}",
        f"/p/{p}/skills/",
        f"/p/{p}/skills/fix-flaky-test",
        f"/p/{p}/compare/adr/0001-orders-on-postgresql.md?from=1&to=2",
        f"/p/{p}/review/",
        f"/p/{p}/review/?status=resolved",
        f"/p/{p}/STANDARDS.md",
        f"/p/{p}/memory.jsonl",
        f"/p/{p}/documents.zip",
        f"/p/{p}/context/{delivery}",
        f"/p/{p}/context/{delivery}/bundle",
        f"/p/{p}/context/",
    ]
