"""Storage quotas in the admin: operators see usage and raise or lower a project's limit.

Only ``limit_mib`` is editable, with ``memory.change_projectquota``; a
view-only operator sees the same page read-only and a POST changes nothing.
"""

from __future__ import annotations

import pytest

from memory import quotas, services
from memory.models import MemoryCandidate, MemoryEntry, ProjectQuota
from tests.admin.conftest import CHANGE_QUOTAS, VIEW_ONLY, candidate, messages_of

MIB = quotas.MIB
QUOTAS = "/admin/memory/projectquota/"


def entries_quota(project) -> ProjectQuota:
    return ProjectQuota.objects.get(project=project.project, kind="entries")


def change_url(row: ProjectQuota) -> str:
    return f"{QUOTAS}{row.pk}/change/"


def fill(project, limit_mib: int = 1) -> ProjectQuota:
    ProjectQuota.objects.filter(project=project.project, kind="entries").update(
        used_bytes=limit_mib * MIB, limit_mib=limit_mib
    )
    return entries_quota(project)


def append(project, client_for):
    return client_for(project.token).post(f"/v1/projects/{project.id}/memory",
                                          {"category": "note", "content": "after"},
                                          format="json")


@pytest.fixture
def olga(staff, alpha):
    """An operator of alpha who may change quotas."""
    return staff("olga", VIEW_ONLY + CHANGE_QUOTAS, operator_of=(alpha,))


@pytest.fixture
def vera(staff, alpha):
    """An operator of alpha who may only view."""
    return staff("vera", VIEW_ONLY, operator_of=(alpha,))


def test_raising_the_quota_in_the_admin_lets_the_next_write_pass(alpha, olga, client_for):
    row = fill(alpha)
    assert append(alpha, client_for).status_code == 409

    response = olga.post(change_url(row), {"limit_mib": "2"})

    assert response.status_code == 302, response.content.decode()[:2000]
    row.refresh_from_db()
    assert (row.limit_mib, row.used_bytes) == (2, MIB)
    assert append(alpha, client_for).status_code == 201
    assert MemoryEntry.objects.filter(project=alpha.project).count() == 1


def test_lowering_the_quota_below_the_usage_refuses_the_next_write(alpha, olga, client_for):
    assert append(alpha, client_for).status_code == 201
    row = entries_quota(alpha)
    ProjectQuota.objects.filter(pk=row.pk).update(used_bytes=3 * MIB)
    assert olga.post(change_url(row), {"limit_mib": "2"}).status_code == 302
    response = append(alpha, client_for)
    assert response.status_code == 409 and response.json()["limit_bytes"] == 2 * MIB


def test_emptying_the_limit_returns_to_the_installations_default(alpha, olga, client_for):
    row = fill(alpha)
    assert olga.post(change_url(row), {"limit_mib": ""}).status_code == 302
    row.refresh_from_db()
    assert row.limit_mib is None
    assert append(alpha, client_for).status_code == 201  # 1 MiB used of 256


def test_a_limit_below_one_mib_is_refused_on_the_form(alpha, olga):
    row = fill(alpha)
    response = olga.post(change_url(row), {"limit_mib": "0"})
    assert response.status_code == 200
    assert "greater than or equal to 1" in response.content.decode()
    row.refresh_from_db()
    assert row.limit_mib == 1


def test_saving_writes_only_the_limit_never_a_stale_usage(alpha, olga, client_for):
    row = entries_quota(alpha)
    page = olga.get(change_url(row))
    assert page.status_code == 200
    # A write lands between loading the page and saving it.
    assert append(alpha, client_for).status_code == 201
    charged = entries_quota(alpha).used_bytes
    assert charged > 0
    olga.post(change_url(row), {"limit_mib": "5", "used_bytes": "0", "kind": "skills"})
    row.refresh_from_db()
    assert (row.kind, row.used_bytes, row.limit_mib) == ("entries", charged, 5)


def test_a_view_only_operator_sees_usage_but_a_post_changes_nothing(alpha, vera, client_for):
    row = fill(alpha)
    page = vera.get(change_url(row))
    assert page.status_code == 200
    html = page.content.decode()
    assert "1.0 MiB (1,048,576 bytes)" in html
    assert 'name="limit_mib"' not in html  # read-only for her

    response = vera.post(change_url(row), {"limit_mib": "100"})

    assert response.status_code == 403
    row.refresh_from_db()
    assert row.limit_mib == 1
    assert append(alpha, client_for).status_code == 409


def test_the_list_shows_each_quotas_usage_limit_and_share(alpha, vera):
    services.memory_entry_create(project=alpha.project, author="t", category="note",
                                 content="x" * 744)
    html = vera.get(QUOTAS).content.decode()
    assert "1,000 bytes" in html  # 744 bytes of text and one row's 256
    assert "256.0 MiB (default)" in html and "1.00 GiB (default)" in html
    assert "64.0 MiB (default)" in html


def test_quotas_can_be_neither_added_nor_deleted(alpha, root):
    row = entries_quota(alpha)
    assert root.get(f"{QUOTAS}add/").status_code == 403
    assert root.post(f"{QUOTAS}{row.pk}/delete/", {"post": "yes"}).status_code == 403
    assert ProjectQuota.objects.filter(pk=row.pk).exists()


def test_another_projects_quota_is_missing_for_an_operator(alpha, beta, olga):
    theirs = entries_quota(beta)
    response = olga.post(change_url(theirs), {"limit_mib": "999"})
    assert response.status_code == 302 and response["Location"] == "/admin/"
    theirs.refresh_from_db()
    assert theirs.limit_mib is None
    assert change_url(theirs) not in olga.get(QUOTAS).content.decode()


def test_approving_a_candidate_over_the_quota_in_the_admin_says_so(alpha, root):
    proposal = candidate(alpha)
    fill(alpha)
    response = root.post(f"/admin/memory/memorycandidate/{proposal.pk}/approve/")
    assert response.status_code == 302
    assert any("entries quota" in text for text in messages_of(response))
    proposal.refresh_from_db()
    assert proposal.status == MemoryCandidate.Status.PENDING
    assert MemoryEntry.objects.filter(project=alpha.project).count() == 0
