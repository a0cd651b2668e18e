"""The one text rule at every writer of text (gedweb.lib.text), called at the service.

The API's DRF fields refuse NUL and lone surrogates before a service runs;
commands, ged_import and the admin call the services directly, so each
service must refuse them itself, in the same words, and store nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from gedweb.lib.text import BLANK_MESSAGE, NUL_MESSAGE, SURROGATE_MESSAGE
from governance import services, skills, standards
from governance.models import Skill, StandardsImport, TaskArtifact, WorkFile
from memory.documents import document_put
from memory.models import DocumentRevision, MemoryEntry
from memory.services import memory_entry_create

SKILL = "---\nname: review\ndescription: Review code\n---\n\n# Review\n\nCheck.\n"
DOCUMENT = "# Context\n\nThe billing service owns invoices.\n"
NUL, SURROGATE = "a\x00b", "a\ud800b"


def entry(alpha: Any, work: Any, **fields: Any) -> None:
    memory_entry_create(project=alpha.project, author="seed", category="note",
                        **{"content": "x", **fields})


def document(alpha: Any, work: Any, **fields: Any) -> None:
    document_put(project=alpha.project, path="CONTEXT.md", author="seed",
                 **{"content": DOCUMENT, **fields})


def standards_import(alpha: Any, work: Any, **fields: Any) -> None:
    standards.standards_import_submit(project=alpha.project, path="AGENTS.md", author="seed",
                                      **{"content": "# Rules\n", **fields})


def skill(alpha: Any, work: Any, **fields: Any) -> None:
    skills.skill_put(project=alpha.project, name="review", author="seed",
                     **{"content": SKILL, "reason": "first", "source": None, **fields})


def work_file(alpha: Any, work: Any, **fields: Any) -> None:
    services.work_file_write(work=work, name="DIRECT.md", author="seed", **fields)


def task_artifact(alpha: Any, work: Any, **fields: Any) -> None:
    services.task_artifact_write(work=work, task_id="T01", name="BRIEF.md", author="seed",
                                 **fields)


STORED = {entry: MemoryEntry, document: DocumentRevision, standards_import: StandardsImport,
          skill: Skill, work_file: WorkFile, task_artifact: TaskArtifact}
REASON_RULE = "must be 1-500 characters, not blank"

# (writer, field, value, the field's messages)
REFUSALS: list[tuple[Callable[..., None], str, str, list[str]]] = [
    (entry, "content", NUL, [NUL_MESSAGE]),
    (entry, "content", " \n\t", [BLANK_MESSAGE]),
    (entry, "content", SURROGATE, [SURROGATE_MESSAGE]),
    (entry, "content", "é" * 16_001, ["must be at most 32000 UTF-8 bytes, got 32002"]),
    (document, "content", NUL, [NUL_MESSAGE]),
    (document, "content", SURROGATE, [SURROGATE_MESSAGE]),
    (document, "content", "x" * 200_001, ["must be at most 200,000 characters, got 200,001"]),
    (document, "reason", " ", ["must not be blank; omit it instead"]),
    (document, "reason", NUL, [NUL_MESSAGE]),
    (document, "reason", SURROGATE, [SURROGATE_MESSAGE]),
    (document, "reason", "r" * 1_001, ["must be at most 1000 characters"]),
    (standards_import, "content", NUL, [NUL_MESSAGE]),
    (standards_import, "content", "\n \n", ["must not be empty or whitespace-only"]),
    (standards_import, "content", SURROGATE, [SURROGATE_MESSAGE]),
    (standards_import, "content", "r" * 200_001, ["must be at most 200,000 characters"]),
    (skill, "content", SKILL + NUL, [NUL_MESSAGE]),
    (skill, "content", SKILL + SURROGATE, [SURROGATE_MESSAGE]),
    (skill, "content", "x" * 100_001, ["must be 1-100,000 characters"]),
    (skill, "reason", "  ", [REASON_RULE]),
    (skill, "reason", NUL, [NUL_MESSAGE]),
    (skill, "reason", SURROGATE, [SURROGATE_MESSAGE]),
    (skill, "reason", "r" * 501, [REASON_RULE]),
    (skill, "source", NUL, [NUL_MESSAGE]),
    (skill, "source", SURROGATE, [SURROGATE_MESSAGE]),
    (skill, "source", "s" * 1_001, ["must be 1-1,000 characters"]),
    (work_file, "content", NUL, [NUL_MESSAGE]),
    (work_file, "content", SURROGATE, [SURROGATE_MESSAGE]),
    (work_file, "content", "x" * 1_000_001, ["must be at most 1,000,000 characters"]),
    (task_artifact, "content", NUL, [NUL_MESSAGE]),
    (task_artifact, "content", SURROGATE, [SURROGATE_MESSAGE]),
]


@pytest.mark.parametrize(("writer", "field", "value", "messages"), REFUSALS,
                         ids=[f"{w.__name__}-{f}-{v[:6]!r}" for w, f, v, _ in REFUSALS])
def test_every_writer_refuses_bad_text_naming_the_field_and_stores_nothing(
        alpha, direct_work, writer, field, value, messages):
    before = STORED[writer].objects.count()  # opening work writes its DIRECT.md
    with pytest.raises(ValidationError) as refused:
        writer(alpha, direct_work, **{field: value})
    assert refused.value.message_dict == {field: messages}
    assert STORED[writer].objects.count() == before


@pytest.mark.parametrize("writer", [work_file, task_artifact], ids=lambda w: w.__name__)
def test_a_work_file_may_be_empty(alpha, direct_work, writer):
    writer(alpha, direct_work, content="")
    assert STORED[writer].objects.latest("created_at").content == ""


def test_a_skill_source_may_be_blank_but_is_still_text(alpha, direct_work):
    skill(alpha, direct_work, source=" ")
    assert Skill.objects.get().source == " "


def test_blank_skill_content_is_named_by_its_front_matter_rule(alpha, direct_work):
    with pytest.raises(ValidationError) as refused:
        skill(alpha, direct_work, content="   ")
    assert refused.value.message_dict["content"][0].startswith("must start with YAML front matter")


def test_blank_document_content_is_named_by_the_substantive_rule(alpha, direct_work):
    with pytest.raises(ValidationError) as refused:
        document(alpha, direct_work, content="  \n")
    assert refused.value.message_dict["content"][0].startswith("requires substantive content")


def test_one_write_names_every_bad_field_at_once(alpha, direct_work):
    with pytest.raises(ValidationError) as refused:
        skill(alpha, direct_work, content="x", reason=NUL, source=SURROGATE)
    assert set(refused.value.message_dict) == {"content", "reason", "source"}
    with pytest.raises(ValidationError) as refused:
        document(alpha, direct_work, content=NUL, reason=" ", expected_revision=-1)
    assert refused.value.message_dict == {
        "content": [NUL_MESSAGE],
        "reason": ["must not be blank; omit it instead"],
        "expected_revision": ["must be 0 (a new document) or a revision number"],
    }
    assert not Skill.objects.exists() and not DocumentRevision.objects.exists()


def test_a_task_id_with_a_kelvin_sign_is_refused_by_the_service(alpha, direct_work):
    with pytest.raises(ValidationError) as refused:
        services.task_artifact_write(work=direct_work, task_id="\u212a01", name="BRIEF.md",
                                     content="# x\n", author="seed")
    assert list(refused.value.message_dict) == ["task_id"]
    assert not TaskArtifact.objects.exists()


def test_a_task_id_with_a_kelvin_sign_names_no_artifact(api, direct_work):
    url = (f"/v1/projects/alpha/work/{direct_work.work_id}/tasks/%E2%84%AA01/BRIEF.md")
    response = api.put(url, {"content": "# x\n"}, format="json")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert not TaskArtifact.objects.exists()
