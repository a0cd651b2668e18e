"""Who may call what: bearer tokens, project scoping, admin endpoints, the memory boundary."""

from __future__ import annotations

import base64

import pytest

from memory import services
from memory.models import MemoryCandidate, MemoryEntry, Project
from tests.django_fixtures import ADMIN_TOKEN, MEMORY_WRITE_TOKEN

ENTRY = {"category": "decision", "content": "use postgres"}
CANDIDATE = {"category": "idea", "content": "cache the context bundle"}


def memory_url(project_id: str) -> str:
    return f"/v1/projects/{project_id}/memory"


def entry_count() -> int:
    return MemoryEntry.objects.count()


def assert_unauthenticated(response) -> None:
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    body = response.json()
    assert body["code"] == "unauthenticated"
    assert isinstance(body["message"], str) and body["message"]
    assert set(body) <= {"code", "message", "fields"}


def raw_client(client_for, authorization: str):
    return client_for(None, HTTP_AUTHORIZATION=authorization)


# --- bearer tokens -----------------------------------------------------------


def test_it_refuses_a_read_without_a_token(alpha, client_for):
    services.memory_entry_create(project=alpha.project, author="t", category="c", content="x")

    response = client_for().get(memory_url(alpha.id))

    assert_unauthenticated(response)
    assert b'"x"' not in response.content
    assert entry_count() == 1


def test_it_refuses_a_write_without_a_token(alpha, client_for):
    response = client_for().post(memory_url(alpha.id), ENTRY, format="json")

    assert_unauthenticated(response)
    assert entry_count() == 0


@pytest.mark.parametrize(
    "header",
    [
        "Bearer",
        "Bearer ",
        "Bearer {token} extra",
        "{token}",
        "Token {token}",
        "Bearer\t{token}",
        "Bearer {token}\x01",
    ],
    ids=["no-token", "blank-token", "two-words", "no-scheme", "token-scheme", "tab", "control"],
)
def test_it_refuses_a_malformed_authorization_header(alpha, client_for, header):
    client = raw_client(client_for, header.format(token=alpha.token))

    response = client.post(memory_url(alpha.id), ENTRY, format="json")

    assert_unauthenticated(response)
    assert entry_count() == 0


def test_it_refuses_the_basic_scheme(alpha, client_for):
    credentials = base64.b64encode(f"alpha:{alpha.token}".encode()).decode()
    client = raw_client(client_for, f"Basic {credentials}")

    response = client.post(memory_url(alpha.id), ENTRY, format="json")

    assert_unauthenticated(response)
    assert entry_count() == 0


def test_it_refuses_an_unknown_token(alpha, client_for):
    response = client_for("gwp_not-a-real-token-at-all").post(
        memory_url(alpha.id), ENTRY, format="json"
    )

    assert_unauthenticated(response)
    assert entry_count() == 0


def test_it_refuses_a_revoked_token_at_once(alpha, client_for):
    client = client_for(alpha.token)
    assert client.get(memory_url(alpha.id)).status_code == 200

    assert services.project_token_revoke(project=alpha.project, name="default") == 1

    assert_unauthenticated(client.get(memory_url(alpha.id)))
    assert_unauthenticated(client.post(memory_url(alpha.id), ENTRY, format="json"))
    assert entry_count() == 0


def test_it_keeps_other_tokens_of_the_project_working_after_a_revoke(alpha, client_for):
    _, second = services.project_token_create(project=alpha.project, name="ci")
    services.project_token_revoke(project=alpha.project, name="default")

    response = client_for(second).post(memory_url(alpha.id), ENTRY, format="json")

    assert response.status_code == 201
    assert response.json()["author"] == "ci"
    assert entry_count() == 1


def test_it_answers_another_projects_token_like_a_missing_project(alpha, beta, client_for):
    client = client_for(beta.token)

    foreign = client.get(memory_url(alpha.id))
    missing = client.get(memory_url("no-such-project"))

    assert foreign.status_code == 404
    assert missing.status_code == 404
    assert foreign.json() == missing.json()
    assert foreign.json()["code"] == "not_found"
    assert not Project.objects.filter(pk="no-such-project").exists()
    assert entry_count() == 0


def test_it_answers_another_projects_project_detail_like_a_missing_one(alpha, beta, client_for):
    client = client_for(beta.token)

    foreign = client.get(f"/v1/projects/{alpha.id}")
    missing = client.get("/v1/projects/no-such-project")

    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json()
    assert sorted(Project.objects.values_list("id", flat=True)) == ["alpha", "beta"]


def test_it_refuses_a_write_with_another_projects_token(alpha, beta, client_for):
    response = client_for(beta.token).post(memory_url(alpha.id), ENTRY, format="json")

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert entry_count() == 0


def test_the_admin_token_reads_any_project(alpha, beta, admin_client):
    services.memory_entry_create(project=beta.project, author="t", category="c", content="x")

    assert admin_client.get(f"/v1/projects/{alpha.id}").status_code == 200
    assert admin_client.get(memory_url(alpha.id)).json()["items"] == []
    items = admin_client.get(memory_url(beta.id)).json()["items"]

    assert [item["content"] for item in items] == ["x"]
    assert MemoryEntry.objects.count() == 1


# --- admin endpoints ---------------------------------------------------------


def test_it_refuses_project_listing_with_a_project_token(alpha, client_for):
    response = client_for(alpha.token).get("/v1/projects")

    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"
    assert Project.objects.count() == 1


def test_it_refuses_project_creation_with_a_project_token(alpha, client_for):
    response = client_for(alpha.token).post(
        "/v1/projects", {"id": "gamma", "name": "Gamma"}, format="json"
    )

    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"
    assert list(Project.objects.values_list("id", flat=True)) == ["alpha"]


@pytest.mark.parametrize("who", ["former-admin", "project", "unknown"])
def test_it_refuses_admin_endpoints_for_any_bearer_without_an_admin_token(
    alpha, client_for, settings, who
):
    settings.ADMIN_TOKEN = None
    token = {"former-admin": ADMIN_TOKEN, "project": alpha.token, "unknown": "x" * 40}[who]
    client = client_for(token)

    listing = client.get("/v1/projects")
    creation = client.post("/v1/projects", {"id": "gamma", "name": "Gamma"}, format="json")

    assert_unauthenticated(listing)
    assert_unauthenticated(creation)
    # The server has none: the answer says so instead of blaming the caller's token.
    for response in (listing, creation):
        assert response.json()["message"] == (
            "this server has no admin token: GEDWEB_ADMIN_TOKEN is not set, so its admin "
            "endpoints (creating and listing projects) are off")
    assert list(Project.objects.values_list("id", flat=True)) == ["alpha"]


def test_it_refuses_admin_endpoints_without_any_token(alpha, client_for):
    response = client_for().post("/v1/projects", {"id": "gamma", "name": "G"}, format="json")

    assert_unauthenticated(response)
    assert Project.objects.count() == 1


# --- the memory write boundary ---------------------------------------------------


def test_it_refuses_a_memory_write_with_only_a_project_token(alpha, client_for, memory_write_token):
    response = client_for(alpha.token).post(memory_url(alpha.id), ENTRY, format="json")

    assert response.status_code == 403
    assert response.json()["code"] == "memory_write_forbidden"
    assert entry_count() == 0


def test_it_accepts_a_memory_write_with_x_memory_token(alpha, client_for, memory_write_token):
    client = client_for(alpha.token, HTTP_X_MEMORY_TOKEN=memory_write_token)

    response = client.post(memory_url(alpha.id), ENTRY, format="json")

    assert response.status_code == 201
    assert MemoryEntry.objects.get().uuid.hex == response.json()["id"].replace("-", "")


def test_it_accepts_a_memory_write_with_the_ferryman_header(alpha, client_for, memory_write_token):
    client = client_for(alpha.token, HTTP_X_FERRYMAN_MEMORY_TOKEN=memory_write_token)

    response = client.post(memory_url(alpha.id), ENTRY, format="json")

    assert response.status_code == 201
    assert entry_count() == 1


@pytest.mark.parametrize("presented", ["wrong-memory-token", "", MEMORY_WRITE_TOKEN + "x"])
def test_it_refuses_a_memory_write_with_a_wrong_memory_token(
    alpha, client_for, memory_write_token, presented
):
    client = client_for(alpha.token, HTTP_X_MEMORY_TOKEN=presented)

    response = client.post(memory_url(alpha.id), ENTRY, format="json")

    assert response.status_code == 403
    assert response.json()["code"] == "memory_write_forbidden"
    assert entry_count() == 0


def test_it_refuses_the_memory_token_without_a_project_token(alpha, client_for, memory_write_token):
    client = client_for(None, HTTP_X_MEMORY_TOKEN=memory_write_token)

    response = client.post(memory_url(alpha.id), ENTRY, format="json")

    assert_unauthenticated(response)
    assert entry_count() == 0


def test_it_refuses_the_memory_token_as_a_bearer(alpha, client_for, memory_write_token):
    response = client_for(memory_write_token).post(memory_url(alpha.id), ENTRY, format="json")

    assert_unauthenticated(response)
    assert entry_count() == 0


def test_it_lets_a_project_token_write_when_no_memory_token_is_configured(alpha, client_for):
    response = client_for(alpha.token).post(memory_url(alpha.id), ENTRY, format="json")

    assert response.status_code == 201
    assert entry_count() == 1


def test_reads_need_no_memory_token(alpha, client_for, memory_write_token):
    entry = services.memory_entry_create(
        project=alpha.project, author="t", category="c", content="x"
    ).entry
    services.candidate_create(project=alpha.project, author="t", category="c", content="y")
    client = client_for(alpha.token)

    for path in [
        memory_url(alpha.id),
        f"{memory_url(alpha.id)}/1",
        f"{memory_url(alpha.id)}/{entry.uuid}",
        f"{memory_url(alpha.id)}/verify",
        f"/v1/projects/{alpha.id}/memory.md",
        f"{memory_url(alpha.id)}/candidates",
        f"/v1/projects/{alpha.id}",
    ]:
        assert client.get(path).status_code == 200, path
    assert entry_count() == 1


def test_a_candidate_proposal_needs_no_memory_token(alpha, client_for, memory_write_token):
    response = client_for(alpha.token).post(
        f"{memory_url(alpha.id)}/candidates", CANDIDATE, format="json"
    )

    assert response.status_code == 201
    assert MemoryCandidate.objects.get().status == "pending"
    assert entry_count() == 0


@pytest.mark.parametrize("action", ["approve", "reject"])
def test_it_refuses_a_candidate_decision_without_the_memory_token(
    alpha, client_for, memory_write_token, action
):
    candidate = services.candidate_create(project=alpha.project, author="t", **CANDIDATE)

    response = client_for(alpha.token).post(
        f"{memory_url(alpha.id)}/candidates/{candidate.uuid}/{action}"
    )

    assert response.status_code == 403
    assert response.json()["code"] == "memory_write_forbidden"
    assert MemoryCandidate.objects.get().status == "pending"
    assert entry_count() == 0


@pytest.mark.parametrize(("action", "status"), [("approve", "approved"), ("reject", "rejected")])
def test_it_accepts_a_candidate_decision_with_the_memory_token(
    alpha, client_for, memory_write_token, action, status
):
    candidate = services.candidate_create(project=alpha.project, author="t", **CANDIDATE)
    client = client_for(alpha.token, HTTP_X_MEMORY_TOKEN=memory_write_token)

    response = client.post(f"{memory_url(alpha.id)}/candidates/{candidate.uuid}/{action}")

    assert response.status_code == 200
    assert MemoryCandidate.objects.get().status == status
    assert entry_count() == (1 if action == "approve" else 0)


# --- authentication comes before the body -------------------------------------

ADMIN_PATH = "/v1/projects"
WRITE_PATHS = ["/v1/projects", "/v1/projects/alpha/memory", "/v1/projects/alpha/memory/candidates"]
BAD_BODIES = {
    "malformed-json": (b'{"category": ', "application/json"),
    "not-json": (b"category=decision", "text/plain"),
    "two-mib": (b'{"content": "' + b"x" * (2 * 1024 * 1024) + b'"}', "application/json"),
}


@pytest.mark.parametrize("path", WRITE_PATHS)
@pytest.mark.parametrize("body", list(BAD_BODIES), ids=list(BAD_BODIES))
def test_it_checks_authentication_before_the_body(alpha, client_for, path, body):
    data, content_type = BAD_BODIES[body]

    response = client_for().generic("POST", path, data, content_type=content_type)

    assert_unauthenticated(response)
    assert Project.objects.count() == 1
    assert entry_count() == 0
    assert MemoryCandidate.objects.count() == 0


@pytest.mark.parametrize("body", list(BAD_BODIES), ids=list(BAD_BODIES))
def test_it_checks_an_unknown_token_before_the_body(alpha, client_for, body):
    data, content_type = BAD_BODIES[body]

    response = client_for("gwp_unknown-token-value").generic(
        "POST", memory_url(alpha.id), data, content_type=content_type
    )

    assert_unauthenticated(response)
    assert entry_count() == 0


@pytest.mark.parametrize("body", list(BAD_BODIES), ids=list(BAD_BODIES))
def test_it_checks_the_project_scope_before_the_body(alpha, beta, client_for, body):
    data, content_type = BAD_BODIES[body]

    response = client_for(beta.token).generic(
        "POST", memory_url(alpha.id), data, content_type=content_type
    )

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert entry_count() == 0


@pytest.mark.parametrize("body", list(BAD_BODIES), ids=list(BAD_BODIES))
def test_it_checks_the_memory_boundary_before_the_body(alpha, client_for, memory_write_token, body):
    data, content_type = BAD_BODIES[body]

    response = client_for(alpha.token).generic(
        "POST", memory_url(alpha.id), data, content_type=content_type
    )

    assert response.status_code == 403
    assert response.json()["code"] == "memory_write_forbidden"
    assert entry_count() == 0
