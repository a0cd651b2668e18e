"""The development demo project (services.demo_project_ensure): its name and well-known token."""

from __future__ import annotations

from memory import services
from memory.models import Project, ProjectToken, hash_token


def active_tokens() -> list[tuple[str, str]]:
    return sorted(ProjectToken.objects.active().values_list("project_id", "name"))


def test_the_demo_project_is_created_with_its_name_and_token(db):
    project = services.demo_project_ensure()
    assert Project.objects.get(pk="demo").name == "Demo project"
    assert project.pk == "demo"
    demo = ProjectToken.objects.get(token_hash=hash_token(services.DEMO_TOKEN))
    assert (demo.project_id, demo.name, demo.revoked_at) == ("demo", "demo", None)


def test_an_older_demo_token_is_revoked_for_the_well_known_one_and_nothing_else(db):
    services.project_create(project_id="demo", name="Demo project", token_name="demo")
    services.project_token_create(project=Project.objects.get(pk="demo"), name="ci")
    services.project_create(project_id="other", name="Other", token_name="demo")
    older = ProjectToken.objects.get(project_id="demo", name="demo")

    services.demo_project_ensure()

    older.refresh_from_db()
    assert older.revoked_at is not None
    assert ProjectToken.objects.get(token_hash=hash_token(services.DEMO_TOKEN)).revoked_at is None
    assert active_tokens() == [("demo", "ci"), ("demo", "demo"), ("other", "demo")]
