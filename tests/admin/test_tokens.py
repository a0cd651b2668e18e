"""A new token is shown once, on the rendered page, and nowhere else; its hash never."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin

from memory.admin import TOKEN_CREATED_TEMPLATE
from memory.models import Project, ProjectToken
from tests.admin.conftest import OPERATOR, messages_of, populate
from tests.django_fixtures import bearer_client

TOKEN_INLINE = {"tokens-TOTAL_FORMS": "0", "tokens-INITIAL_FORMS": "0"}
TOKEN = re.compile(r"gwp_[A-Za-z0-9_-]{43}")


def assert_shown_once(client, response) -> str:
    """The raw token: once in the body, and in no header, cookie, message or session."""
    assert response.status_code == 200
    assert [t.name for t in response.templates][0] == TOKEN_CREATED_TEMPLATE
    assert "no-store" in response["Cache-Control"].split(", ")
    body = response.content.decode()
    tokens = TOKEN.findall(body)
    assert len(tokens) == 1, body
    token = tokens[0]
    # Case-blind: the admin's message list capitalises what it shows.
    assert body.lower().count(token.lower()) == 1
    assert "Copy it now" in body
    headers = "\n".join(f"{name}: {value}" for name, value in response.headers.items())
    assert token not in headers
    assert token not in response.cookies.output()
    assert not any(token.lower() in text.lower() for text in messages_of(response))
    assert all(token not in str(value) for value in client.session.values())
    assert "Location" not in response
    # The next page the operator opens shows it no more.
    assert token not in client.get("/admin/").content.decode()
    return token


def test_a_new_project_shows_its_token_once(root):
    response = root.post("/admin/memory/project/add/",
                         {"id": "shop", "name": "Web shop", **TOKEN_INLINE})
    token = assert_shown_once(root, response)
    assert bearer_client(token).get("/v1/projects/shop").status_code == 200
    body = response.content.decode()
    assert 'href="/admin/memory/project/shop/change/"' in body
    assert 'href="/admin/memory/projecttoken/add/?project=shop"' in body


def test_a_new_token_is_shown_once(root, alpha):
    response = root.post("/admin/memory/projecttoken/add/",
                         {"project": "alpha", "name": "ci-agent"})
    token = assert_shown_once(root, response)
    record = ProjectToken.objects.get(project=alpha.project, name="ci-agent")
    assert token.startswith(record.prefix)
    assert bearer_client(token).get("/v1/projects/alpha").status_code == 200


def test_a_new_token_is_shown_once_to_a_scoped_operator(staff, alpha):
    client = staff("ana", OPERATOR, operator_of=(alpha,))
    response = client.post("/admin/memory/projecttoken/add/",
                           {"project": "alpha", "name": "ci-agent", "_continue": "1"})
    assert_shown_once(client, response)


def test_a_duplicate_token_name_is_the_form_again_and_shows_no_token(root, alpha):
    response = root.post("/admin/memory/projecttoken/add/",
                         {"project": "alpha", "name": "default"})
    assert response.status_code == 200
    assert not TOKEN.search(response.content.decode())
    assert ProjectToken.objects.filter(project=alpha.project).count() == 1


def test_the_admin_refuses_a_reserved_name_on_the_form(root, alpha):
    response = root.post("/admin/memory/projecttoken/add/", {"project": "alpha", "name": "admin"})
    assert response.status_code == 200
    assert "an author GedWeb writes as itself" in response.content.decode()
    assert ProjectToken.objects.filter(project=alpha.project).count() == 1


def admin_pages(objects: dict) -> list[str]:
    """Every admin list, add form and object page (with its history) there is data for."""
    pages = ["/admin/", "/admin/memory/", "/admin/governance/"]
    for model, model_admin in admin.site._registry.items():
        opts = model._meta
        if opts.app_label not in ("memory", "governance"):
            continue
        base = f"/admin/{opts.app_label}/{opts.model_name}/"
        pages += [base, f"{base}?q=a", f"{base}add/"]
        for obj in model._default_manager.all():
            pages += [f"{base}{obj.pk}/change/", f"{base}{obj.pk}/history/"]
    return pages


@pytest.mark.parametrize("who", ["superuser", "operator"])
def test_no_admin_page_shows_a_token_hash(who, root, staff, alpha, beta, django_user_model):
    member = django_user_model.objects.create_user("mia", "mia@example.org", "pw-mia-12345")
    objects = populate(alpha, member)
    populate(beta, member)
    root.post("/admin/memory/projecttoken/add/", {"project": "alpha", "name": "second"})
    client = root if who == "superuser" else staff("ana", OPERATOR, operator_of=(alpha,))
    hashes = list(ProjectToken.objects.values_list("token_hash", flat=True))
    assert len(hashes) == 3 and Project.objects.count() == 2
    seen = 0
    for url in admin_pages(objects):
        response = client.get(url)
        if response.status_code != 200:
            assert response.status_code in (302, 403), url
            continue
        html = response.content.decode()
        seen += 1
        assert "token_hash" not in html, url
        for value in hashes:
            assert value not in html, url
    token = ProjectToken.objects.get(project=alpha.project, name="second")
    page = client.get(f"/admin/memory/projecttoken/{token.pk}/change/").content.decode()
    assert token.prefix in page  # the page itself was rendered
    assert seen > 40
