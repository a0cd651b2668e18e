"""Admin users with exactly the permissions a test names, and projects to scope them by.

Every refusal test uses a user who is an operator member of the project, so
the missing model permission, not the scoping, is what refuses them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.contrib.messages.storage.cookie import CookieStorage
from django.test import Client
from django.utils import timezone

from governance import context, skills, standards
from governance import services as gov
from governance.models import ContextDelivery, StandardsImport, WorkItem
from memory import documents, secret_scan, services
from memory.models import (
    ChainCheckpoint,
    Membership,
    MemoryCandidate,
    SecretFinding,
    TextRedaction,
)
from tests.django_fixtures import *  # noqa: F403  (the Django suite's shared fixtures)
from tests.django_fixtures import ProjectWithToken
from tests.governance.support import PLANNED, add_evidence, open_work

# Every view permission of the two apps: what a read-only operator holds.
VIEW_ONLY = [
    f"memory.view_{model}" for model in (
        "project", "projecttoken", "membership", "memoryentry", "chaincheckpoint",
        "memorycandidate", "documentrevision", "projectquota", "allowedsecret",
        "secretfinding", "textredaction",
    )
] + [
    f"governance.view_{model}" for model in (
        "workitem", "governancerevision", "evidencerecord", "workfile", "taskartifact",
        "activework", "standardsimport", "standardsdecision", "skill", "contextdelivery",
    )
]

APPROVE = ["memory.change_memorycandidate", "memory.add_memoryentry"]
REJECT = ["memory.change_memorycandidate"]
REVOKE = ["memory.change_projecttoken"]
DECIDE_STANDARDS = ["governance.add_standardsdecision"]
ISSUE_TOKENS = ["memory.add_projecttoken"]
CREATE_PROJECTS = ["memory.add_project"]
MANAGE_MEMBERS = ["memory.add_membership", "memory.change_membership"]
CHANGE_QUOTAS = ["memory.change_projectquota"]

# Everything an operator of a project needs in the admin.
OPERATOR = (VIEW_ONLY + APPROVE + REVOKE + DECIDE_STANDARDS + ISSUE_TOKENS + CREATE_PROJECTS
            + MANAGE_MEMBERS + CHANGE_QUOTAS + ["memory.change_project"])

PASSWORD = "pw-admin-tests-123"


def grant(user: Any, perms: list[str]) -> None:
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )


@pytest.fixture
def staff(django_user_model: Any) -> Callable[..., Client]:
    """staff("vera", VIEW_ONLY, operator_of=[alpha]) -> a signed-in Client."""

    def make(username: str, perms: list[str], *, operator_of: tuple[Any, ...] = (),
             viewer_of: tuple[Any, ...] = ()) -> Client:
        user = django_user_model.objects.create_user(
            username, f"{username}@example.org", PASSWORD, is_staff=True
        )
        grant(user, perms)
        for project in operator_of:
            Membership.objects.create(user=user, project=project.project,
                                      role=Membership.Role.OPERATOR)
        for project in viewer_of:
            Membership.objects.create(user=user, project=project.project,
                                      role=Membership.Role.VIEWER)
        client = Client()
        client.force_login(user)
        client.user = user
        return client

    return make


@pytest.fixture
def root(django_user_model: Any) -> Client:
    user = django_user_model.objects.create_superuser("root", "root@example.org", PASSWORD)
    client = Client()
    client.force_login(user)
    return client


def candidate(project: ProjectWithToken, content: str = "proposed by review") -> MemoryCandidate:
    return services.candidate_create(
        project=project.project, author="worker", category="fact", content=content
    )


def standards_import(project: ProjectWithToken, content: str = "# Rules\n\nBe kind.\n",
                     path: str = "AGENTS.md") -> StandardsImport:
    row, _ = standards.standards_import_submit(
        project=project.project, path=path, content=content, author="agent"
    )
    return row


def work(project: ProjectWithToken, summary: str = "Admin page check") -> WorkItem:
    return gov.work_open(
        project=project.project, author="t", summary=summary,
        minimum_mode="direct-change", ambiguity="sufficient", risk="low", clear_scope=True,
        bounded=True, reversible=True, deterministic_check=True,
    ).work


def messages_of(response: Any) -> list[str]:
    """The texts in the messages cookie a response sets (what the browser would keep)."""
    morsel = response.cookies.get("messages")
    if morsel is None or not morsel.value:
        return []
    storage = CookieStorage(None)
    decoded = storage._decode(morsel.value)
    return [str(message) for message in decoded or []]


@dataclass
class Site:
    alpha: ProjectWithToken
    beta: ProjectWithToken


@pytest.fixture
def site(alpha: ProjectWithToken, beta: ProjectWithToken) -> Site:
    return Site(alpha, beta)


SKILL = "---\nname: deploy\ndescription: Ships the release.\n---\nRun the deploy script.\n"


def populate(project: ProjectWithToken, member: Any) -> dict[str, Any]:
    """One row of every project-bound model the admin shows, through the services.

    The checkpoint is inserted directly: the checkpoint writer needs a real
    SECRET_KEY, and only the row matters to the admin.
    """
    p = project.project
    entry = services.memory_entry_create(
        project=p, author="seed", category="note", content=f"entry of {p.pk}"
    ).entry
    planned = open_work(p, PLANNED, summary=f"work of {p.pk}")
    add_evidence(planned, "inspection", "observed")
    gov.task_artifact_write(work=planned, task_id="T01", name="BRIEF.md",
                            content="# T01\n\nWrite the export.\n", author="seed")
    spec = gov.work_file_write(work=planned, name="SPEC.md",
                               content="# Spec\n\nExport invoices nightly.\n", author="seed")
    decided = standards_import(project, f"# Decided rules of {p.pk}\n", path="CLAUDE.md")
    decided.accept(by="seed", sha256=decided.sha256)
    gov.active_work_select(project=p, session_id=f"session-{p.pk}", work=planned,
                           operation="continue", request_id="r1")
    return {
        "entry": entry,
        "candidate": candidate(project, f"candidate of {p.pk}"),
        "membership": Membership.objects.create(user=member, project=p,
                                                role=Membership.Role.VIEWER),
        "document": documents.document_put(
            project=p, path="PROJECT.md", author="seed",
            content=f"# {p.pk}\n\nThe {p.pk} project keeps its orders.\n",
        ).document,
        "checkpoint": ChainCheckpoint.objects.create(
            project=p, seq=entry.seq, hash=entry.hash, created_at=timezone.now(), mac="0" * 64
        ),
        "work": planned,
        "spec": spec,
        "standards": standards_import(project, f"# Rules of {p.pk}\n"),
        "decided": decided,
        "skill": skills.skill_put(project=p, name="deploy", content=SKILL, reason="ships",
                                  source=None, author="seed").skill,
        "delivery": delivered(p),
        "allowed_secret": secret_scan.secret_allow(
            project=p, fingerprint=hashlib.sha256(p.pk.encode()).hexdigest(),
            reason=f"a fixture of {p.pk}", by="seed"),
        # As `memory scan` leaves it: a finding in the entry (inserted directly,
        # since the services refuse to store a secret).
        "secret_finding": SecretFinding.objects.create(
            project=p, source="entry", row={"seq": entry.seq}, seq=entry.seq, field="content",
            kind="github-token", rule_origin="gedweb", rule_version="1", line=1, column=1,
            offset=0, length=40, fingerprint=hashlib.sha256(b"f" + p.pk.encode()).hexdigest(),
            allowed=False, found_at=timezone.now()),
        # As a redaction leaves it (inserted directly, like the checkpoint: only
        # the row matters to the admin; tests/memory/test_text_redaction.py
        # makes real ones).
        "text_redaction": TextRedaction.objects.create(
            project=p, source="document", row={"path": "PROJECT.md", "revision": 1},
            field="content", table_name="memory_documentrevision", row_id=0,
            column_name="content", cut_start=0, cut_length=1, notice="[redacted]",
            before_length=1, before_sha256="0" * 64, after_sha256="0" * 64,
            kind="github-token", fingerprint=hashlib.sha256(b"t" + p.pk.encode()).hexdigest(),
            reason=f"a fixture of {p.pk}", redacted_by="seed", created_at=timezone.now(),
            mac="0" * 64, key_id=""),
    }


def delivered(project: Any) -> ContextDelivery:
    context.context_deliver(project=project, work=None, author="seed", output_format="text")
    return ContextDelivery.objects.filter(project=project).latest("created_at")
