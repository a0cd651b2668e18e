"""Django admin: operators create projects and tokens, revoke tokens, resolve
candidates; append-only data is read-only. Least privilege (permissions,
project scoping, the token page) is tested in tests/admin/."""

from __future__ import annotations

import re

import pytest

from governance import services as governance_services
from memory import services
from memory.models import MemoryEntry, Project, ProjectToken
from tests.django_fixtures import bearer_client

# The management form of the (read-only) token inline on the project page.
TOKEN_INLINE = {"tokens-TOTAL_FORMS": "0", "tokens-INITIAL_FORMS": "0"}


@pytest.fixture
def operator(client, django_user_model):
    user = django_user_model.objects.create_superuser("olga", "olga@example.org", "pw-olga-123")
    client.force_login(user)
    return client


def _shown_token(response) -> str:
    """The token from the page the admin renders once after creating it."""
    tokens = re.findall(r'<code id="new-token">(gwp_[^<]+)</code>', response.content.decode())
    assert len(tokens) == 1, response.content.decode()[-2000:]
    return tokens[0]


def test_an_operator_creates_a_project_and_sees_its_token_once(operator):
    response = operator.post(
        "/admin/memory/project/add/", {"id": "shop", "name": "Web shop", **TOKEN_INLINE},
        follow=True,
    )
    assert response.status_code == 200
    token = _shown_token(response)
    assert Project.objects.filter(pk="shop", name="Web shop").exists()
    assert bearer_client(token).get("/v1/projects/shop").status_code == 200


def test_the_admin_refuses_an_invalid_project_id(operator):
    response = operator.post(
        "/admin/memory/project/add/", {"id": "Bad_Id", "name": "x", **TOKEN_INLINE}
    )
    assert response.status_code == 200  # the form again, with its error
    assert not Project.objects.exists()


def test_an_operator_issues_a_named_token(operator, alpha):
    response = operator.post(
        "/admin/memory/projecttoken/add/", {"project": "alpha", "name": "ci-agent"}, follow=True
    )
    token = _shown_token(response)
    assert ProjectToken.objects.filter(project=alpha.project, name="ci-agent").count() == 1
    created = bearer_client(token).post(
        "/v1/projects/alpha/memory", {"category": "note", "content": "hi"}, format="json"
    )
    assert created.status_code == 201
    assert created.json()["author"] == "ci-agent"


def test_revoking_in_the_admin_makes_the_token_fail_at_once(operator, alpha):
    record = ProjectToken.objects.get(project=alpha.project)
    response = operator.post(
        "/admin/memory/projecttoken/",
        {"action": "revoke_tokens", "_selected_action": [record.pk]},
        follow=True,
    )
    assert response.status_code == 200
    record.refresh_from_db()
    assert record.revoked_at is not None
    assert bearer_client(alpha.token).get("/v1/projects/alpha").status_code == 401


def test_memory_entries_are_read_only_in_the_admin(operator, alpha):
    entry = services.memory_entry_create(
        project=alpha.project, author="t", category="note", content="original"
    ).entry
    page = operator.get(f"/admin/memory/memoryentry/{entry.pk}/change/")
    assert page.status_code == 200
    assert b'name="content"' not in page.content  # shown, not editable
    posted = operator.post(
        f"/admin/memory/memoryentry/{entry.pk}/change/",
        {"category": "changed", "content": "changed"},
    )
    assert posted.status_code == 403
    assert operator.get("/admin/memory/memoryentry/add/").status_code == 403
    assert operator.post(f"/admin/memory/memoryentry/{entry.pk}/delete/").status_code == 403
    assert MemoryEntry.objects.get(pk=entry.pk).content == "original"


def test_approving_a_candidate_in_the_admin_creates_one_entry(operator, alpha):
    candidate = services.candidate_create(
        project=alpha.project, author="worker", category="fact", content="from review"
    )
    for _ in range(2):
        operator.post(
            "/admin/memory/memorycandidate/",
            {"action": "approve_candidates", "_selected_action": [candidate.pk]},
            follow=True,
        )
    candidate.refresh_from_db()
    assert candidate.status == "approved"
    entries = MemoryEntry.objects.filter(project=alpha.project)
    assert entries.count() == 1
    assert entries.get().author == "user:olga"


def test_governance_pages_render_read_only(operator, alpha):
    opened = governance_services.work_open(
        project=alpha.project, author="t", summary="Admin page check",
        minimum_mode="direct-change", ambiguity="sufficient", risk="low", clear_scope=True,
        bounded=True, reversible=True, deterministic_check=True,
    )
    work = opened.work
    page = operator.get(f"/admin/governance/workitem/{work.pk}/change/")
    assert page.status_code == 200
    assert b"metadata-mutation: allowed" in page.content
    assert b"&quot;revision&quot;: 0" in page.content
    assert operator.get("/admin/governance/governancerevision/").status_code == 200
    assert operator.get("/admin/governance/workitem/add/").status_code == 403
    assert operator.post(f"/admin/governance/workitem/{work.pk}/delete/").status_code == 403
