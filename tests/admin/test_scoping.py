"""A non-superuser sees and acts only on the projects where they are an operator member.

"ana" holds every permission an operator needs and is operator of alpha
only; beta has one row of every project-bound model (conftest.populate).
"""

from __future__ import annotations

import json

import pytest
from django.contrib import admin

from gedweb.admin import ProjectScopedAdmin
from governance.models import StandardsDecision
from memory.models import Membership, MemoryCandidate, MemoryEntry, Project, ProjectToken
from tests.admin.conftest import OPERATOR, messages_of, populate
from tests.django_fixtures import bearer_client


@pytest.fixture
def world(alpha, beta, staff, django_user_model):
    ana = staff("ana", OPERATOR, operator_of=(alpha,))
    member = django_user_model.objects.create_user("mia", "mia@example.org", "pw-mia-12345")
    return {"ana": ana, "a": populate(alpha, member), "b": populate(beta, member),
            "alpha": alpha, "beta": beta}


def scoped_admins() -> list[tuple[type, ProjectScopedAdmin]]:
    return [(model, model_admin) for model, model_admin in admin.site._registry.items()
            if isinstance(model_admin, ProjectScopedAdmin)]


def rows_of(model: type, model_admin: ProjectScopedAdmin, project: Project) -> list:
    return list(model._default_manager.filter(**{model_admin.project_path: project}))


def change_url(obj) -> str:
    return f"/admin/{obj._meta.app_label}/{obj._meta.model_name}/{obj.pk}/change/"


def test_every_project_bound_model_is_scoped_and_seeded():
    # A new project-bound admin must scope itself; populate() must seed it.
    names = {model.__name__ for model, _ in scoped_admins()}
    assert names == {
        "Project", "ProjectToken", "Membership", "MemoryEntry", "ChainCheckpoint",
        "MemoryCandidate", "DocumentRevision", "WorkItem", "GovernanceRevision",
        "EvidenceRecord", "WorkFile", "TaskArtifact", "ActiveWork", "StandardsImport",
        "StandardsDecision", "Skill", "ContextDelivery", "ProjectQuota", "AllowedSecret",
        "SecretFinding", "TextRedaction",
    }


@pytest.mark.parametrize("model_name", [
    "Project", "ProjectToken", "Membership", "MemoryEntry", "ChainCheckpoint",
    "MemoryCandidate", "DocumentRevision", "WorkItem", "GovernanceRevision", "EvidenceRecord",
    "WorkFile", "TaskArtifact", "ActiveWork", "StandardsImport", "StandardsDecision", "Skill",
    "ContextDelivery", "ProjectQuota", "AllowedSecret", "SecretFinding", "TextRedaction",
])
def test_lists_and_object_pages_show_only_operated_projects(world, model_name):
    model, model_admin = next((m, a) for m, a in scoped_admins() if m.__name__ == model_name)
    ours, theirs = (rows_of(model, model_admin, world[p].project) for p in ("alpha", "beta"))
    assert ours and theirs  # the fixture seeded both projects
    listing = world["ana"].get(f"/admin/{model._meta.app_label}/{model._meta.model_name}/")
    assert listing.status_code == 200
    html = listing.content.decode()
    for obj in ours:
        assert change_url(obj) in html
    for obj in theirs:
        assert change_url(obj) not in html
        page = world["ana"].get(change_url(obj))
        # The admin's answer for a missing object: back to the index, nothing shown.
        assert page.status_code == 302 and page["Location"] == "/admin/"
        assert world["ana"].get(change_url(obj).replace("/change/", "/history/")
                                ).status_code == 302


def test_lists_offer_no_filter_for_other_projects(world, root):
    everything = root.get("/admin/memory/memoryentry/").content.decode()
    assert "project__id__exact=beta" in everything  # the filter a superuser gets
    html = world["ana"].get("/admin/memory/memoryentry/").content.decode()
    assert "project__id__exact=beta" not in html
    assert "entry of beta" not in html and "entry of alpha" in html


def test_a_filter_naming_another_project_shows_nothing(world):
    html = world["ana"].get("/admin/memory/memorycandidate/?project__id__exact=beta"
                            ).content.decode()
    assert "candidate of beta" not in html


def test_approving_another_projects_candidate_from_the_list_changes_nothing(world):
    theirs = world["b"]["candidate"]
    world["ana"].post("/admin/memory/memorycandidate/",
                      {"action": "approve_candidates", "_selected_action": [theirs.pk]})
    theirs.refresh_from_db()
    assert theirs.status == "pending"
    assert MemoryEntry.objects.filter(project=world["beta"].project).count() == 1  # the seed


def test_the_decision_buttons_do_not_reach_another_projects_candidate(world):
    theirs = world["b"]["candidate"]
    for verb in ("approve", "reject"):
        response = world["ana"].post(f"/admin/memory/memorycandidate/{theirs.pk}/{verb}/")
        assert response.status_code == 404
    theirs.refresh_from_db()
    assert theirs.status == "pending"
    assert MemoryEntry.objects.filter(project=world["beta"].project).count() == 1


def test_revoking_another_projects_token_changes_nothing(world):
    theirs = ProjectToken.objects.get(project=world["beta"].project)
    world["ana"].post("/admin/memory/projecttoken/",
                      {"action": "revoke_tokens", "_selected_action": [theirs.pk]})
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
    assert bearer_client(world["beta"].token).get("/v1/projects/beta").status_code == 200


def test_standards_of_another_project_cannot_be_decided(world):
    theirs = world["b"]["standards"]
    world["ana"].post("/admin/governance/standardsimport/",
                      {"action": "accept_imports", "_selected_action": [theirs.pk]})
    for verb in ("accept", "reject"):
        response = world["ana"].post(f"/admin/governance/standardsimport/{theirs.pk}/{verb}/",
                                     {"sha256": theirs.sha256})
        assert response.status_code == 404
    assert not StandardsDecision.objects.filter(standards_import=theirs).exists()


def test_the_same_user_acts_on_their_own_project(world):
    ours = world["a"]["candidate"]
    response = world["ana"].post(f"/admin/memory/memorycandidate/{ours.pk}/approve/")
    assert response.status_code == 302
    ours.refresh_from_db()
    assert ours.status == "approved"


def test_the_token_form_offers_only_operated_projects(world):
    html = world["ana"].get("/admin/memory/projecttoken/add/").content.decode()
    assert '<option value="alpha">' in html
    assert 'value="beta"' not in html
    response = world["ana"].post("/admin/memory/projecttoken/add/",
                                 {"project": "beta", "name": "intruder"})
    assert response.status_code == 200  # the form again, with its error
    assert "Select a valid choice" in response.content.decode()
    assert not ProjectToken.objects.filter(name="intruder").exists()


def test_a_membership_cannot_be_added_to_another_project(world, django_user_model):
    someone = django_user_model.objects.create_user("sam", "sam@example.org", "pw-sam-12345")
    response = world["ana"].post("/admin/memory/membership/add/",
                                 {"project": "beta", "user": someone.pk, "role": "operator"})
    assert response.status_code == 200
    assert not Membership.objects.filter(user=someone).exists()
    ana = world["ana"].user
    world["ana"].post("/admin/memory/membership/add/",
                      {"project": "beta", "user": ana.pk, "role": "operator"})
    assert not Membership.objects.filter(user=ana, project=world["beta"].project).exists()


def test_a_membership_is_added_to_an_operated_project(world, django_user_model):
    someone = django_user_model.objects.create_user("sam", "sam@example.org", "pw-sam-12345")
    response = world["ana"].post("/admin/memory/membership/add/",
                                 {"project": "alpha", "user": someone.pk, "role": "viewer"})
    assert response.status_code == 302
    assert Membership.objects.get(user=someone).project_id == "alpha"


def test_the_project_autocomplete_offers_only_operated_projects(world):
    response = world["ana"].get(
        "/admin/autocomplete/",
        {"app_label": "memory", "model_name": "membership", "field_name": "project", "term": ""},
    )
    assert response.status_code == 200
    ids = [result["id"] for result in json.loads(response.content)["results"]]
    assert ids == ["alpha"]


def test_a_viewer_membership_does_not_open_the_admin_for_a_project(staff, world):
    vic = staff("vic", OPERATOR, viewer_of=(world["beta"],))
    assert vic.get("/admin/memory/project/beta/change/").status_code == 302
    assert "entry of beta" not in vic.get("/admin/memory/memoryentry/").content.decode()


def test_the_index_counts_pending_work_only_for_operated_projects(world):
    html = world["ana"].get("/admin/").content.decode()
    assert '<th scope="row">alpha</th>' in html
    assert "beta" not in html


def test_a_superuser_sees_every_project(world, root):
    html = root.get("/admin/memory/memorycandidate/").content.decode()
    assert "candidate of alpha" in html and "candidate of beta" in html
    index = root.get("/admin/").content.decode()
    assert '<th scope="row">alpha</th>' in index and '<th scope="row">beta</th>' in index


def test_a_staff_user_who_creates_a_project_becomes_its_operator(world):
    response = world["ana"].post("/admin/memory/project/add/",
                                 {"id": "gamma", "name": "Gamma", "tokens-TOTAL_FORMS": "0",
                                  "tokens-INITIAL_FORMS": "0"})
    assert response.status_code == 200
    assert Membership.objects.get(user=world["ana"].user, project_id="gamma").role == "operator"
    assert world["ana"].get("/admin/memory/project/gamma/change/").status_code == 200
    assert messages_of(response) == []
    assert MemoryCandidate.objects.filter(project_id="gamma").count() == 0
