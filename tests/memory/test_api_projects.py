"""POST/GET /v1/projects and /v1/projects/{id}."""

from __future__ import annotations

import re

import pytest

from memory.models import MemoryEntry, Project, ProjectToken, format_timestamp, hash_token

pytestmark = pytest.mark.django_db

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$")


def create(client, **body):
    return client.post("/v1/projects", body, format="json")


def project_ids() -> list[str]:
    return list(Project.objects.order_by("id").values_list("id", flat=True))


def test_it_creates_a_project_with_a_generated_token(admin_client):
    response = create(admin_client, id="gamma", name="Gamma")

    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"id", "name", "created_at", "token"}
    assert body["id"] == "gamma"
    assert body["name"] == "Gamma"
    assert TIMESTAMP.match(body["created_at"])
    assert body["token"].startswith("gwp_")
    assert len(body["token"]) >= 32
    token = ProjectToken.objects.get(project_id="gamma")
    assert token.name == "default"
    assert token.token_hash == hash_token(body["token"])


def test_it_stores_only_the_hash_of_a_generated_token(admin_client):
    raw = create(admin_client, id="gamma", name="Gamma").json()["token"]

    stored = ProjectToken.objects.filter(project_id="gamma").values().get()

    assert raw not in [str(value) for value in stored.values()]
    assert stored["token_hash"] == hash_token(raw)


def test_the_generated_token_works_as_a_bearer(admin_client, client_for):
    raw = create(admin_client, id="gamma", name="Gamma").json()["token"]

    response = client_for(raw).get("/v1/projects/gamma")

    assert response.status_code == 200
    assert response.json()["id"] == "gamma"
    written = client_for(raw).post(
        "/v1/projects/gamma/memory", {"category": "c", "content": "x"}, format="json"
    )
    assert written.status_code == 201
    assert written.json()["author"] == "default"
    assert MemoryEntry.objects.get(project_id="gamma").author == "default"


def test_it_never_shows_the_token_again(admin_client, client_for):
    raw = create(admin_client, id="gamma", name="Gamma").json()["token"]

    detail = admin_client.get("/v1/projects/gamma")
    own = client_for(raw).get("/v1/projects/gamma")
    listing = admin_client.get("/v1/projects")

    for response in (detail, own, listing):
        assert response.status_code == 200
        assert raw not in response.content.decode()
        assert b'"token"' not in response.content
    assert set(detail.json()) == {"id", "name", "created_at"}
    assert ProjectToken.objects.filter(project_id="gamma").count() == 1


def test_it_creates_a_project_with_a_supplied_token(admin_client, client_for):
    supplied = "my-own-token-123"

    response = create(admin_client, id="gamma", name="Gamma", token=supplied)

    assert response.status_code == 201
    assert set(response.json()) == {"id", "name", "created_at"}
    assert supplied not in response.content.decode()
    assert client_for(supplied).get("/v1/projects/gamma").status_code == 200
    assert ProjectToken.objects.get(project_id="gamma").token_hash == hash_token(supplied)


def test_it_accepts_a_supplied_token_of_exactly_twelve_characters(admin_client):
    response = create(admin_client, id="gamma", name="Gamma", token="a" * 12)

    assert response.status_code == 201
    assert project_ids() == ["gamma"]


@pytest.mark.parametrize("token", ["a" * 11, "", "has spaces in it", 12])
def test_it_refuses_a_bad_supplied_token(admin_client, token):
    response = create(admin_client, id="gamma", name="Gamma", token=token)

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_error"
    assert "token" in body["fields"]
    assert project_ids() == []
    assert ProjectToken.objects.count() == 0


@pytest.mark.parametrize(
    "project_id",
    [
        "Gamma", "-gamma", "gamma-", "a" * 65, "../x", "", "a_b", "a.b", "a/b", " gamma", "ü",
        "gamma\n",
    ],
    ids=[
        "uppercase",
        "leading-hyphen",
        "trailing-hyphen",
        "65-chars",
        "dotdot",
        "empty",
        "underscore",
        "dot",
        "slash",
        "space",
        "non-ascii",
        "trailing-newline",
    ],
)
def test_it_refuses_an_invalid_project_id(admin_client, project_id):
    response = create(admin_client, id=project_id, name="Gamma")

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_error"
    assert list(body["fields"]) == ["id"]
    assert project_ids() == []


@pytest.mark.parametrize("project_id", ["a", "0", "a" * 64, "a-b-c", "9lives"])
def test_it_accepts_a_valid_project_id(admin_client, project_id):
    response = create(admin_client, id=project_id, name="Some project")

    assert response.status_code == 201
    assert project_ids() == [project_id]


@pytest.mark.parametrize("body", [{"name": "Gamma"}, {"id": "gamma"}, {"id": 7, "name": "G"}])
def test_it_refuses_a_missing_or_mistyped_field(admin_client, body):
    response = admin_client.post("/v1/projects", body, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "validation_error"
    assert project_ids() == []


def test_it_refuses_a_blank_name(admin_client):
    response = create(admin_client, id="gamma", name="   ")

    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["name"]
    assert project_ids() == []


def test_it_names_every_bad_field(admin_client):
    response = create(admin_client, id="Bad_Id", name="", token="short")

    assert response.status_code == 400
    assert set(response.json()["fields"]) == {"id", "name", "token"}
    assert project_ids() == []


def test_it_names_bad_types_and_bad_values_together(admin_client):
    response = admin_client.post(
        "/v1/projects", {"id": 7, "name": " ", "token": "short"}, format="json"
    )

    assert response.status_code == 400
    assert set(response.json()["fields"]) == {"id", "name", "token"}
    assert project_ids() == []


def test_it_refuses_a_duplicate_id(alpha, admin_client):
    response = create(admin_client, id="alpha", name="Another alpha")

    assert response.status_code == 409
    assert response.json()["code"] == "conflict"
    assert Project.objects.get().name == "Alpha"
    assert ProjectToken.objects.count() == 1


def test_it_refuses_a_token_already_used_by_another_project(alpha, admin_client, client_for):
    response = create(admin_client, id="gamma", name="Gamma", token=alpha.token)

    assert response.status_code == 409
    assert response.json()["code"] == "conflict"
    assert project_ids() == ["alpha"]
    assert ProjectToken.objects.count() == 1
    assert client_for(alpha.token).get("/v1/projects/alpha").status_code == 200


@pytest.mark.parametrize("field", ["owner", "created_at", "status"])
def test_it_refuses_unknown_fields(admin_client, field):
    response = admin_client.post(
        "/v1/projects", {"id": "gamma", "name": "Gamma", field: "x"}, format="json"
    )

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_error"
    assert list(body["fields"]) == [field]
    assert project_ids() == []


def test_it_lists_projects(make_project, admin_client):
    make_project("beta")
    make_project("alpha")

    response = admin_client.get("/v1/projects")

    assert response.status_code == 200
    items = response.json()["items"]
    assert [item["id"] for item in items] == ["alpha", "beta"]
    assert all(set(item) == {"id", "name", "created_at"} for item in items)
    assert project_ids() == ["alpha", "beta"]


def test_it_lists_no_projects(admin_client):
    response = admin_client.get("/v1/projects")

    assert response.status_code == 200
    assert response.json() == {"items": []}
    assert project_ids() == []


def test_a_project_token_reads_its_project(alpha, client_for):
    response = client_for(alpha.token).get("/v1/projects/alpha")

    assert response.status_code == 200
    assert response.json() == {"id": "alpha", "name": alpha.project.name,
                               "created_at": format_timestamp(alpha.project.created_at)}
    assert project_ids() == ["alpha"]


def test_the_admin_token_reads_a_project(alpha, admin_client):
    response = admin_client.get("/v1/projects/alpha")

    assert response.status_code == 200
    assert response.json()["name"] == "Alpha"
    assert Project.objects.get().name == "Alpha"


def test_it_answers_a_missing_project_with_404(admin_client):
    response = admin_client.get("/v1/projects/nope")

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert project_ids() == []


@pytest.mark.parametrize("method", ["DELETE", "PUT", "PATCH"])
def test_it_never_deletes_or_changes_a_project(alpha, admin_client, method):
    response = admin_client.generic(
        method, "/v1/projects/alpha", '{"name": "Renamed"}', content_type="application/json"
    )

    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"
    assert "Allow" in response
    assert Project.objects.get().name == "Alpha"


@pytest.mark.parametrize("method", ["DELETE", "PUT", "PATCH"])
def test_it_refuses_bulk_changes_to_projects(alpha, admin_client, method):
    response = admin_client.generic(method, "/v1/projects", "{}", content_type="application/json")

    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"
    assert project_ids() == ["alpha"]


def test_it_refuses_the_admin_token_as_a_project_token(admin_client):
    from tests.django_fixtures import ADMIN_TOKEN

    response = admin_client.post(
        "/v1/projects", {"id": "sneaky", "name": "Sneaky", "token": ADMIN_TOKEN}, format="json"
    )
    assert response.status_code == 400
    assert "token" in response.json()["fields"]
    assert not Project.objects.filter(pk="sneaky").exists()


def test_it_refuses_the_memory_write_token_as_a_project_token(admin_client, memory_write_token,
                                                              alpha):
    """A project token equal to the memory write token would carry both rights in one secret
    (issue 34 §11): refused on create and on a new token, with the reason, nothing stored."""
    from django.core.exceptions import ValidationError

    from memory import services

    response = admin_client.post(
        "/v1/projects", {"id": "sneaky", "name": "Sneaky", "token": memory_write_token},
        format="json")
    assert response.status_code == 400
    assert response.json()["fields"] == {
        "token": ["must differ from the server's admin and memory tokens"]}
    assert not Project.objects.filter(pk="sneaky").exists()
    with pytest.raises(ValidationError) as raised:
        services.project_token_create(project=alpha.project, name="ci", token=memory_write_token)
    assert raised.value.message_dict == {
        "token": ["must differ from the server's admin and memory tokens"]}
    assert not ProjectToken.objects.filter(token_hash=hash_token(memory_write_token)).exists()
