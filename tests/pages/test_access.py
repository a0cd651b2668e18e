"""Membership decides what a person sees: every page, link, count and search (contract §8)."""

from __future__ import annotations

import re

import pytest
from django.db import IntegrityError, transaction
from django.test import Client

from memory.models import Membership, Project
from tests.pages.conftest import login, project_urls

# Every page route for anonymous visitors, non-members, viewers, operators
# and superusers is one table: PAGES in tests/security/authz_matrix.py, run
# by tests/security/test_authz_matrix.py and rendered into docs/security.md.


def test_a_missing_project_answers_exactly_like_a_foreign_one(site):
    client = login(site.member)
    foreign = client.get("/p/beta/")
    missing = client.get("/p/no-such-project/")
    assert foreign.status_code == missing.status_code == 404
    def strip_token(body: bytes) -> str:
        return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", body.decode())

    assert strip_token(foreign.content) == strip_token(missing.content)


def test_a_superuser_opens_every_page_of_every_project(site):
    client = login(site.root)
    for seeded in (site.alpha, site.beta):
        for url in project_urls(seeded):
            assert client.get(url).status_code == 200, url


def test_an_inactive_user_sees_no_project(site):
    site.member.is_active = False
    site.member.save()
    assert not Project.objects.visible_to(site.member).exists()


def test_removing_a_membership_closes_the_project_at_once(site):
    client = login(site.member)
    assert client.get("/p/alpha/").status_code == 200
    Membership.objects.filter(user=site.member).delete()
    assert client.get("/p/alpha/").status_code == 404


def test_page_404s_are_html_and_api_404s_stay_json(site):
    client = login(site.member)
    page = client.get("/p/beta/memory/")
    assert page.status_code == 404
    assert page["Content-Type"].startswith("text/html")
    assert b"Not found" in page.content
    api = client.get("/v1/no-such-thing")
    assert api.status_code == 404
    assert api.json()["code"] == "not_found"


def test_the_project_list_shows_only_member_projects_and_their_counts(site):
    body = login(site.member).get("/").content.decode()
    assert "/p/alpha/" in body
    assert "/p/beta/" not in body and "Secret lab" not in body
    # alpha's entry count is its newest seq, nothing of beta's.
    assert f'<td class="num">{site.alpha.second_correction.seq}</td>' in body


def test_the_project_switcher_never_lists_a_foreign_project(site):
    body = login(site.member).get("/p/alpha/memory/").content.decode()
    assert "/p/beta/" not in body and "Secret lab" not in body


def test_a_superuser_lists_every_project(site):
    body = login(site.root).get("/").content.decode()
    assert "/p/alpha/" in body and "/p/beta/" in body


def test_search_in_a_project_never_finds_another_projects_entries(site):
    client = login(site.member)
    body = client.get("/p/alpha/memory/?q=zanzibar").content.decode()
    assert "zanzibar plans" not in body
    assert "No entries match." in body
    own = client.get("/p/alpha/memory/?q=coupons").content.decode()
    assert "validated in one transaction" in own


def test_facets_list_only_this_projects_categories_and_sources(site):
    body = login(site.member).get("/p/alpha/memory/").content.decode()
    assert "<option>secret</option>" not in body and "<option>lab</option>" not in body
    assert "<option>decision</option>" in body


def test_objects_of_another_project_are_404_under_my_project(site):
    client = login(site.member)
    beta = site.beta
    for url in (
        f"/p/alpha/memory/{beta.correction.uuid}",
        f"/p/alpha/work/{beta.work.work_id}/",
        f"/p/alpha/standards/{beta.extra['accepted'].public_id}",
    ):
        assert client.get(url).status_code == 404, url


def test_the_home_page_invites_anonymous_visitors_to_log_in(db):
    body = Client().get("/").content.decode()
    assert 'href="/accounts/login/"' in body


def test_logging_in_through_the_form_opens_the_project_list(site):
    client = Client(enforce_csrf_checks=True)
    form = client.get("/accounts/login/")
    token = form.cookies["csrftoken"].value
    response = client.post("/accounts/login/", {
        "username": "vera", "password": "pw-correct-horse-battery",
        "csrfmiddlewaretoken": token,
    })
    assert response.status_code == 302 and response["Location"] == "/"
    assert "/p/alpha/" in client.get("/").content.decode()


def test_login_without_a_csrf_token_is_refused(site):
    client = Client(enforce_csrf_checks=True)
    response = client.post("/accounts/login/", {"username": "vera",
                                                "password": "pw-correct-horse-battery"})
    assert response.status_code == 403


def test_a_wrong_password_shows_the_form_again(site):
    response = Client().post("/accounts/login/", {"username": "vera", "password": "nope"})
    assert response.status_code == 200
    assert "did not match" in response.content.decode()


def test_logging_out_ends_the_session(site):
    client = login(site.member)
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/p/alpha/").status_code == 302


def test_one_membership_per_user_and_project(site):
    with pytest.raises(IntegrityError), transaction.atomic():
        Membership.objects.create(user=site.member, project=site.alpha.project)


def test_the_database_refuses_an_unknown_role(site):
    with pytest.raises(IntegrityError), transaction.atomic():
        Membership.objects.create(user=site.outsider, project=site.alpha.project, role="owner")


def test_operators_manage_memberships_in_the_admin(site):
    client = login(site.root)
    assert client.get("/admin/memory/membership/").status_code == 200
    page = client.get("/admin/memory/project/alpha/change/")
    assert page.status_code == 200
    assert "memberships-TOTAL_FORMS" in page.content.decode()
