"""Output serializers: the one description of each response shape, rendered fast."""

from __future__ import annotations

import pytest
from rest_framework import serializers

from gedweb.api.serializers import (
    DocumentRevisionSummarySerializer,
    DocumentSerializer,
    OutputSerializer,
)
from memory import documents, services
from memory.api import serializers as s
from memory.checkpoints import Checkpoint, Problem, VerifyReport
from memory.models import format_timestamp


def entry_pair(project):
    services.memory_entry_create(project=project, author="t", category="note", content="wrong")
    correction = services.memory_entry_create(project=project, author="t", category="note",
                                              content="right", corrects=1).entry
    return project.entries.get(seq=1), correction


def test_render_answers_exactly_what_drf_s_own_rendering_does(alpha):
    original, correction = entry_pair(alpha.project)
    candidate = services.candidate_create(project=alpha.project, author="t", category="note",
                                          content="maybe")

    for serializer, row in ((s.EntrySerializer, original), (s.EntrySerializer, correction),
                            (s.CandidateSerializer, candidate),
                            (s.ProjectSerializer, alpha.project)):
        assert serializer.render(row) == serializer(row).data


def test_an_entry_renders_its_chain_row_and_the_entries_correcting_it(alpha):
    original, correction = entry_pair(alpha.project)

    assert s.EntrySerializer.render(original) == {
        **original.chain_row(), "redacted": False, "corrected_by": [str(correction.uuid)]}
    assert s.EntrySerializer.render(correction)["corrects"] == str(original.uuid)


def test_a_pending_candidate_answers_null_for_what_is_not_yet_set(alpha):
    candidate = services.candidate_create(project=alpha.project, author="t", category="note",
                                          content="maybe")

    body = s.CandidateSerializer.render(candidate)

    assert (body["resolved_at"], body["resolved_by"], body["entry_id"]) == (None, None, None)
    assert body["created_at"] == format_timestamp(candidate.created_at)
    assert body["id"] == str(candidate.uuid)


def test_an_approved_candidate_names_its_reviewer_and_entry(alpha):
    candidate = services.candidate_create(project=alpha.project, author="t", category="note",
                                          content="yes")
    entry = services.candidate_approve(project=alpha.project, candidate=candidate, by="rev")
    candidate.refresh_from_db()

    body = s.CandidateSerializer.render(candidate)

    assert (body["status"], body["resolved_by"], body["entry_id"]) == (
        "approved", "rev", str(entry.uuid))
    assert body["resolved_at"] == format_timestamp(candidate.resolved_at)


def test_a_subclass_renders_its_own_fields_not_its_parent_s(alpha):
    documents.document_put(project=alpha.project, path="PROJECT.md", author="t",
                           content="# Shop\n\nSells things to people who want them.\n",
                           expected_revision=None, reason=None)
    row = documents.document_current(alpha.project, "PROJECT.md")

    summary = DocumentRevisionSummarySerializer.render(row)
    document = DocumentSerializer.render(row)
    summary_again = DocumentRevisionSummarySerializer.render(row)

    assert "content" not in summary and summary_again == summary
    assert document == {**summary, "content": row.content}


def test_a_nested_source_is_refused_rather_than_read_wrongly(alpha):
    class Nested(OutputSerializer):
        name = serializers.CharField(source="project.name")

    with pytest.raises(ValueError):
        Nested.render(entry_pair(alpha.project)[0])


def test_a_checkpoint_answers_its_key_id_or_null_for_a_line_without_one():
    signed = Checkpoint(seq=3, hash="a" * 64, created_at="t", mac="m", key_id="k1")
    unsigned = Checkpoint(seq=3, hash="a" * 64, created_at="t", mac="m")

    assert s.ChainCheckpointSerializer.render(signed) == {
        "seq": 3, "hash": "a" * 64, "created_at": "t", "key_id": "k1"}
    assert s.ChainCheckpointSerializer.render(unsigned)["key_id"] is None


def test_a_verify_report_renders_its_checkpoint_and_every_problem():
    report = VerifyReport(
        ok=False, entries=4, head="b" * 64, first_bad_seq=2,
        checkpoint=Checkpoint(seq=1, hash="a" * 64, created_at="t", mac="m", key_id="k1"),
        problems=[Problem(kind="chain_broken", seq=2, message="link 2 broken"),
                  Problem(kind="unreadable_checkpoints", seq=None, message="unreadable")],
    )

    assert s.VerifySerializer.render(report) == {
        "ok": False, "entries": 4, "head": "b" * 64, "first_bad_seq": 2, "redacted": 0,
        "checkpoint": {"seq": 1, "hash": "a" * 64, "created_at": "t", "key_id": "k1"},
        "problems": [{"kind": "chain_broken", "seq": 2, "message": "link 2 broken"},
                     {"kind": "unreadable_checkpoints", "seq": None, "message": "unreadable"}],
    }
