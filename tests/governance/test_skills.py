"""Project skills and their provenance (contract §6; gedpi-behaviour §4, scenarios 51-56, G-7).

Content and provenance are one append-only row written in one transaction;
a skill is verified only while its recorded hash equals the hash of its
content and its provenance is reusable-explicit, and only verified skills
match.
"""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from governance import skills
from governance.models import Skill
from tests.django_fixtures import bearer_client, run_in_threads

SKILL = (
    "---\n"
    "name: release-notes\n"
    'description: Write release notes from merged work. Triggers include "Release Notes", '
    '"changelog".\n'
    "---\n"
    "\n"
    "# Release notes\n"
    "\n"
    "Group changes by area.\n"
)
SKILL_SHA = hashlib.sha256(SKILL.encode("utf-8")).hexdigest()


def url(project_id: str, *parts: str) -> str:
    return "/".join([f"/v1/projects/{project_id}/skills", *parts])


def put(client, project_id: str, name: str, content: str = SKILL, **extra):
    body = {"content": content, "reason": "  Used for every release.  ", **extra}
    return client.put(url(project_id, name), body, format="json")


def skill_text(name: str, description: str = "Does a thing. Triggers include \"deploy\".",
               body: str = "Body.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


def rows() -> list[tuple[str, int, str]]:
    return list(Skill.objects.order_by("name", "version")
                .values_list("name", "version", "provenance"))


# --- creating -------------------------------------------------------------------------------


def test_a_created_skill_keeps_the_exact_bytes_and_its_provenance(alpha, api):
    response = put(api, alpha.id, "release-notes", source="docs/skills/release.md")
    assert response.status_code == 201
    body = response.json()
    assert (body["result"], body["status"], body["content_hash"], body["recorded_hash"]) == (
        "created", "verified", SKILL_SHA, SKILL_SHA)
    assert body["triggers"] == ["Release Notes", "changelog"]
    row = Skill.objects.get()
    assert row.content == SKILL
    assert (row.provenance, row.recorded_hash, row.reason, row.source, row.author) == (
        "reusable-explicit", SKILL_SHA, "Used for every release.", "docs/skills/release.md",
        "default")


def test_a_skill_reads_back_with_content_and_provenance(alpha, api):
    put(api, alpha.id, "release-notes")
    body = api.get(url(alpha.id, "release-notes")).json()
    assert (body["content"], body["provenance"], body["status"], body["version"]) == (
        SKILL, "reusable-explicit", "verified", 1)
    assert body["installed_at"] == body["created_at"]


def test_identical_content_is_confirmed_and_keeps_installed_at(alpha, api):
    first = put(api, alpha.id, "release-notes").json()
    again = put(api, alpha.id, "release-notes")
    assert again.status_code == 200
    assert (again.json()["result"], again.json()["installed_at"]) == (
        "confirmed", first["installed_at"])
    assert rows() == [("release-notes", 1, "reusable-explicit")]


def test_different_content_under_an_existing_name_is_refused(alpha, api):
    put(api, alpha.id, "release-notes")
    response = put(api, alpha.id, "release-notes", SKILL + "Also skip tests.\n")
    assert response.status_code == 409
    assert response.json() == {"code": "conflict", "message": (
        f"skill release-notes exists with different content (sha256 {SKILL_SHA}); "
        "a skill's bytes never change under its name: use a new name")}
    assert Skill.objects.get().content == SKILL


@pytest.mark.parametrize("path", ["skill_import", "skill_record_legacy"])
def test_every_write_path_refuses_other_bytes_under_an_existing_name(alpha, api, path):
    """One rule (governance.skills.refuse_other_bytes) for PUT, ged_import and legacy records:
    a new record may come with a new version, other content never does."""
    from datetime import UTC, datetime

    from gedweb.errors import Conflict

    put(api, alpha.id, "release-notes")
    other = SKILL + "Also skip tests.\n"
    record = {"name": "release-notes", "provenance": "reusable-explicit",
              "contentHash": hashlib.sha256(other.encode()).hexdigest()}
    write = {
        "skill_import": lambda content: skills.skill_import(
            project=alpha.project, name="release-notes", content=content, record=record,
            installed_at=datetime(2026, 1, 1, tzinfo=UTC), author="ged_import:x"),
        "skill_record_legacy": lambda content: skills.skill_record_legacy(
            project=alpha.project, name="release-notes", content=content,
            recorded_hash=record["contentHash"], author="ged_import:x"),
    }[path]
    with pytest.raises(Conflict, match="a skill's bytes never change under its name"):
        write(other)
    assert list(Skill.objects.values_list("version", "content")) == [(1, SKILL)]


def test_crlf_front_matter_is_refused(alpha, api):
    response = put(api, alpha.id, "release-notes", SKILL.replace("\n", "\r\n"))
    assert response.status_code == 400
    assert "content" in response.json()["fields"]
    assert not Skill.objects.exists()


@pytest.mark.parametrize("name", ["Release", "release--notes", "a" * 65, "-release",
                                  "release-", "rel_ease", "release.notes"])
def test_names_outside_gedpis_pattern_are_refused(alpha, api, name):
    response = put(api, alpha.id, name, skill_text(name))
    assert response.status_code == 400
    assert "name" in response.json()["fields"]
    assert not Skill.objects.exists()


def test_a_64_character_name_is_accepted(alpha, api):
    name = "a" * 64
    assert put(api, alpha.id, name, skill_text(name)).status_code == 201
    assert rows() == [(name, 1, "reusable-explicit")]


@pytest.mark.parametrize("content", [
    skill_text("other-name"),
    "---\nname: deploy\n---\nNo description.\n",
    "---\nname: deploy\ndescription: x\n---\n",
    "---\nname: deploy\ndescription:    \n---\n",
    "name: deploy\ndescription: No front matter.\n",
    "---\nname: deploy\ndescription: Never closed.\n",
], ids=["name-differs", "no-description", "short-description", "blank-description",
        "no-front-matter", "unclosed"])
def test_front_matter_must_name_and_describe_the_skill(alpha, api, content):
    response = put(api, alpha.id, "deploy", content)
    assert response.status_code == 400
    assert "content" in response.json()["fields"]
    assert not Skill.objects.exists()


def test_quoted_name_and_front_matter_at_the_end_of_the_text_are_accepted(alpha, api):
    content = "---\nname: \"deploy\"\ndescription: 'Ships it.'\n---"
    response = put(api, alpha.id, "deploy", content)
    assert response.status_code == 201
    assert response.json()["description"] == "Ships it."


@pytest.mark.parametrize(("field", "value"), [
    ("reason", "   "), ("reason", "r" * 501), ("source", ""), ("source", "s" * 1001),
    ("content", ""), ("content", skill_text("deploy", body="x" * 100_000)),
])
def test_reason_source_and_content_limits(alpha, api, field, value):
    body = {"content": skill_text("deploy"), "reason": "why", field: value}
    response = api.put(url(alpha.id, "deploy"), body, format="json")
    assert response.status_code == 400
    assert field in response.json()["fields"]
    assert not Skill.objects.exists()


def test_unknown_keys_are_refused(alpha, api):
    response = put(api, alpha.id, "deploy", skill_text("deploy"), provenance="reusable-explicit")
    assert response.status_code == 400
    assert "provenance" in response.json()["fields"]
    assert not Skill.objects.exists()


# --- listing and status ----------------------------------------------------------------------


def legacy(project, name: str = "deploy", content: str | None = None, **kwargs) -> Skill:
    content = content or skill_text(name)
    kwargs.setdefault("recorded_hash", hashlib.sha256(content.encode()).hexdigest())
    return skills.skill_record_legacy(project=project, name=name, content=content,
                                      author="import", **kwargs)


def test_the_list_shows_both_hashes_and_the_status(alpha, api):
    put(api, alpha.id, "release-notes")
    legacy(alpha.project, "deploy", provenance="reusable-explicit", recorded_hash="0" * 64)
    items = {i["name"]: i for i in api.get(url(alpha.id)).json()["items"]}
    assert (items["release-notes"]["status"], items["release-notes"]["recorded_hash"]) == (
        "verified", SKILL_SHA)
    drifted = items["deploy"]
    assert drifted["status"] == "unverified"
    assert drifted["recorded_hash"] == "0" * 64
    assert drifted["content_hash"] == hashlib.sha256(skill_text("deploy").encode()).hexdigest()
    assert drifted["triggers"] == ["deploy"]


def test_a_legacy_record_without_provenance_is_unverified(alpha, api):
    legacy(alpha.project, "deploy")
    item = api.get(url(alpha.id)).json()["items"][0]
    assert (item["provenance"], item["status"]) == ("legacy-unverified", "unverified")


def test_reputting_identical_content_reverifies_a_legacy_skill(alpha, api):
    old = legacy(alpha.project, "deploy")
    response = put(api, alpha.id, "deploy", skill_text("deploy"))
    assert response.status_code == 200
    body = response.json()
    assert (body["result"], body["status"], body["version"]) == ("confirmed", "verified", 2)
    assert rows() == [("deploy", 1, "legacy-unverified"), ("deploy", 2, "reusable-explicit")]
    assert Skill.objects.get(version=2).installed_at == old.installed_at


# --- matching ----------------------------------------------------------------------------------


def test_a_verified_skill_matches_its_trigger_words_case_insensitively(alpha, api):
    put(api, alpha.id, "release-notes")
    response = api.get(url(alpha.id, "match"), {"text": "Please update the CHANGELOG today"})
    assert response.status_code == 200
    assert [i["name"] for i in response.json()["items"]] == ["release-notes"]
    assert [s.name for s in skills.skills_matching(alpha.project, "draft release notes")] == [
        "release-notes"]


def test_text_without_a_trigger_word_matches_nothing(alpha, api):
    put(api, alpha.id, "release-notes")
    items = api.get(url(alpha.id, "match"), {"text": "release the kraken"}).json()["items"]
    assert items == []


def test_drifted_and_legacy_skills_never_match(alpha, api):
    legacy(alpha.project, "drifted", provenance="reusable-explicit", recorded_hash="0" * 64)
    legacy(alpha.project, "old")
    assert api.get(url(alpha.id, "match"), {"text": "deploy now"}).json()["items"] == []
    assert skills.skills_matching(alpha.project, "deploy now") == []


def test_matching_a_missing_skill_creates_nothing(alpha, api):
    response = api.get(url(alpha.id, "match"), {"text": "use the release-notes skill"})
    assert response.json()["items"] == []
    assert not Skill.objects.exists()


def test_match_needs_text(alpha, api):
    assert api.get(url(alpha.id, "match")).status_code == 400


def test_match_text_is_bounded_below_the_request_line(alpha, api):
    put(api, alpha.id, "release-notes")
    longest = "𝄞" * 490 + " changelog"  # 500 characters, 4-byte ones where possible
    response = api.get(url(alpha.id, "match"), {"text": longest})
    assert [i["name"] for i in response.json()["items"]] == ["release-notes"]
    refused = api.get(url(alpha.id, "match"), {"text": longest + "x"})
    assert refused.status_code == 400
    assert refused.json()["code"] == "validation_error" and "text" in refused.json()["fields"]


# --- scoping ------------------------------------------------------------------------------------


def test_another_projects_token_sees_nothing(alpha, beta, api, client_for):
    put(api, alpha.id, "release-notes")
    other = client_for(beta.token)
    assert other.get(url(alpha.id, "release-notes")).status_code == 404
    assert put(other, alpha.id, "deploy", skill_text("deploy")).status_code == 404
    assert other.get(url(beta.id)).json()["items"] == []
    assert rows() == [("release-notes", 1, "reusable-explicit")]


def test_an_unknown_skill_is_not_found(alpha, api):
    assert api.get(url(alpha.id, "nothing-here")).status_code == 404


def test_skills_are_read_only_in_the_admin(client, django_user_model, alpha, api):
    put(api, alpha.id, "release-notes")
    user = django_user_model.objects.create_superuser("olga", "olga@example.org", "pw-olga-123")
    client.force_login(user)
    listing = client.get("/admin/governance/skill/")
    assert listing.status_code == 200 and b"verified" in listing.content
    row = Skill.objects.get()
    assert client.get(f"/admin/governance/skill/{row.pk}/change/").status_code == 200
    assert client.get("/admin/governance/skill/add/").status_code == 403
    assert client.post(f"/admin/governance/skill/{row.pk}/delete/").status_code == 403
    assert client.get("/admin/governance/contextdelivery/").status_code == 200


# --- races ----------------------------------------------------------------------------------------


def test_racing_creations_of_one_skill_store_one_version(live_db, make_project):
    target = make_project("race")

    def attempt(index: int):
        return put(bearer_client(target.token), target.id, "release-notes")

    responses = run_in_threads(attempt, 4)
    assert not [r for r in responses if isinstance(r, BaseException)], responses
    assert Counter(r.status_code for r in responses) == {201: 1, 200: 3}
    assert Skill.objects.filter(project=target.project).count() == 1


def test_racing_different_contents_leave_exactly_one(live_db, make_project):
    target = make_project("race")

    def attempt(index: int):
        return put(bearer_client(target.token), target.id, "deploy",
                   skill_text("deploy", body=f"Variant {index}.\n"))

    responses = run_in_threads(attempt, 4)
    assert not [r for r in responses if isinstance(r, BaseException)], responses
    assert Counter(r.status_code for r in responses) == {201: 1, 409: 3}
    assert Skill.objects.filter(project=target.project).count() == 1


def test_match_is_a_route_not_a_skill_name(alpha, api):
    response = put(api, alpha.id, "match", skill_text("match"))
    assert response.status_code == 405
    assert not Skill.objects.exists()
