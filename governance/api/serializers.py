"""Input shapes and documented outputs of the governance API.

Request fields are snake_case like the rest of the API; the governance
document itself is returned in GedPi's camelCase ``governance.json`` shape.
Evidence records and bindings are passed through in GedPi's shape and
validated strictly by gedweb.lib.governance.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from gedweb.api.serializers import (
    OutputSerializer,
    PageLimitField,
    StrictCharField,
    StrictSerializer,
)
from gedweb.lib import governance as gov


class StrictBooleanField(serializers.BooleanField):
    """true or false only; DRF would also take "yes", 1 and friends."""

    def to_internal_value(self, data: object) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data: object) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class WorkOpenSerializer(StrictSerializer):
    summary = StrictCharField(max_length=10_000, help_text="normalised and cut to 240 characters")
    minimum_mode = serializers.ChoiceField(choices=gov.MINIMUM_MODES)
    ambiguity = serializers.ChoiceField(choices=gov.AMBIGUITIES)
    risk = serializers.ChoiceField(choices=gov.RISKS)
    clear_scope = StrictBooleanField()
    bounded = StrictBooleanField()
    reversible = StrictBooleanField()
    deterministic_check = StrictBooleanField()
    escalation_reason = StrictCharField(required=False, allow_null=True, max_length=240)
    execution_profile = serializers.ChoiceField(
        choices=gov.EXECUTION_PROFILES, required=False, default="solo"
    )
    branch = StrictCharField(required=False, allow_null=True, max_length=255)
    base_head = StrictCharField(required=False, allow_null=True, max_length=64)


class MetaSerializer(serializers.Serializer[Any]):
    schemaVersion = serializers.IntegerField()
    workId = serializers.CharField()
    summary = serializers.CharField()
    createdAt = serializers.CharField()
    branch = serializers.CharField(allow_null=True)
    baseHead = serializers.CharField(allow_null=True)


class GovernanceDocumentSerializer(serializers.Serializer[Any]):
    """GedPi's governance.json (schemaVersion 1); see docs/governance.md."""

    schemaVersion = serializers.IntegerField()
    revision = serializers.IntegerField()
    workId = serializers.CharField()
    summary = serializers.CharField()
    repository = serializers.DictField()
    createdAt = serializers.CharField()
    updatedAt = serializers.CharField()
    currentSlice = serializers.CharField(allow_null=True)
    decision = serializers.DictField()
    executionProfile = serializers.CharField()
    approvals = serializers.ListField(child=serializers.DictField())
    evidence = serializers.ListField(child=serializers.DictField())
    pendingMutations = serializers.ListField(child=serializers.DictField())
    pendingCommits = serializers.ListField(child=serializers.DictField())
    lifecycleTransitions = serializers.ListField(child=serializers.DictField())
    lifecycle = serializers.CharField()


class WorkSerializer(serializers.Serializer[Any]):
    work_id = serializers.CharField()
    meta = MetaSerializer()
    governance = GovernanceDocumentSerializer()


class ImportSerializer(serializers.Serializer[Any]):
    """The import that brought a record (governance.provenance)."""

    revision = serializers.IntegerField(help_text="the governance revision the import wrote")
    author = serializers.CharField(help_text="who ran ged_import or uploaded the checkout")
    imported_at = serializers.CharField(help_text="the server's time of the import")
    trusted_by = serializers.CharField(
        allow_null=True, help_text="the operator who trusted it; null: it counts for nothing")


class ImportedRecordSerializer(serializers.Serializer[Any]):
    id = serializers.CharField()
    kind = serializers.CharField(required=False, help_text="evidence and approvals")
    # DRF's metaclass takes declared fields off the class; mypy sees Field.source.
    source = serializers.CharField(  # type: ignore[assignment]
        required=False, help_text="evidence: as found, 'human' too")
    status = serializers.CharField(required=False, help_text="approvals")
    to = serializers.CharField(required=False, help_text="lifecycle transitions")
    claimed_at = serializers.CharField(help_text="the record's own recordedAt, as found")
    time_flag = serializers.CharField(
        allow_null=True, help_text="why the claimed time cannot be right, or null")
    imported = ImportSerializer()


class ImportedLifecycleSerializer(serializers.Serializer[Any]):
    lifecycle = serializers.CharField()
    route = serializers.BooleanField(
        help_text="false: no lifecycle transition leads to it (GedWeb's route was not taken)")
    imported = ImportSerializer()


class ProvenanceSerializer(serializers.Serializer[Any]):
    """What of the governance a checkout brought; everything else GedWeb's services wrote."""

    evidence = ImportedRecordSerializer(many=True)
    approvals = ImportedRecordSerializer(many=True)
    lifecycle_transitions = ImportedRecordSerializer(many=True)
    lifecycle = ImportedLifecycleSerializer(allow_null=True)


class WorkDetailSerializer(WorkSerializer):
    provenance = ProvenanceSerializer()


class GedPiTimeField(serializers.CharField):
    """A moment in GedPi's form (gedweb.lib.governance.format_time)."""

    def to_representation(self, value: Any) -> str:
        return gov.format_time(value)


class WorkSummarySerializer(OutputSerializer):
    work_id = serializers.CharField()
    summary = serializers.CharField()
    mode = serializers.CharField()
    created_at = GedPiTimeField()
    author = serializers.CharField()


class WorkPageSerializer(serializers.Serializer[Any]):
    items = WorkSummarySerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class WorkListQuerySerializer(StrictSerializer):
    limit = PageLimitField()
    after = serializers.CharField(required=False, max_length=128, help_text="a work_id cursor")


class FileWriteSerializer(StrictSerializer):
    content = StrictCharField(max_length=1_000_000)
    expected_version = StrictIntegerField(required=False, min_value=0)


class FileSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    version = serializers.IntegerField()
    content = serializers.CharField()
    author = serializers.CharField()
    created_at = serializers.CharField()


class FileQuerySerializer(StrictSerializer):
    version = serializers.IntegerField(required=False, min_value=1)


class RevisionSummarySerializer(OutputSerializer):
    revision = serializers.IntegerField()
    operation = serializers.CharField()
    author = serializers.CharField()
    created_at = GedPiTimeField()
    evidence_count = serializers.IntegerField()


class RevisionPageSerializer(serializers.Serializer[Any]):
    items = RevisionSummarySerializer(many=True)
    next_cursor = serializers.IntegerField(allow_null=True)


class RevisionListQuerySerializer(StrictSerializer):
    limit = PageLimitField()
    after = serializers.IntegerField(required=False, min_value=-1)


class EvidenceFieldsSerializer(StrictSerializer):
    """An evidence record in GedPi's keys; ``id`` is generated when absent and
    ``recordedAt`` is always the server's time."""

    id = StrictCharField(required=False, max_length=255)
    kind = serializers.ChoiceField(choices=gov.EVIDENCE_KINDS)
    source = serializers.ChoiceField(  # type: ignore[assignment]  # a field, not Field.source
        choices=gov.EVIDENCE_SOURCES
    )
    producerId = StrictCharField(required=False, max_length=255)
    summary = StrictCharField(max_length=10_000)
    outcome = serializers.ChoiceField(choices=gov.EVIDENCE_OUTCOMES)
    binding = serializers.DictField(required=False)


class ExpectedRevisionSerializer(StrictSerializer):
    expected_revision = StrictIntegerField(min_value=0)


class EvidenceAppendSerializer(ExpectedRevisionSerializer):
    evidence = EvidenceFieldsSerializer()
    policy = serializers.ChoiceField(
        choices=list(("none", "record-implementation", "record-satisfied")),
        required=False,
        default="none",
        help_text="record-implementation: the source-mutation guard; record-satisfied: the "
        "metadata-mutation guard plus GedPi's plan rules",
    )


class UpdateSerializer(ExpectedRevisionSerializer):
    changes = serializers.DictField(
        help_text="camelCase fields to set: currentSlice, decision, executionProfile, approvals"
    )


class MutationBeginSerializer(ExpectedRevisionSerializer):
    id = StrictCharField(required=False, max_length=255)
    request_id = StrictCharField(max_length=256)
    tool_call_id = StrictCharField(max_length=256)
    target = StrictCharField(max_length=4096)
    action = serializers.ChoiceField(
        choices=["source-mutation", "metadata-mutation"], required=False, default="source-mutation"
    )


class CompleteSerializer(ExpectedRevisionSerializer):
    evidence = EvidenceFieldsSerializer()


class CommitBeginSerializer(ExpectedRevisionSerializer):
    id = StrictCharField(required=False, max_length=255)
    request_id = StrictCharField(max_length=256)
    tool_call_id = StrictCharField(max_length=256)
    before_head = StrictCharField(allow_null=True, max_length=64)
    expected_tree = StrictCharField(max_length=64)
    unstaged_digest = StrictCharField(max_length=64)
    untracked_digest = StrictCharField(max_length=64)
    verified_snapshot_digest = StrictCharField(max_length=64)


class LifecycleSerializer(ExpectedRevisionSerializer):
    action = serializers.ChoiceField(choices=list(gov.LIFECYCLE_ACTIONS))
    reason = StrictCharField(max_length=10_000)
    expected_lifecycle = serializers.ChoiceField(choices=gov.LIFECYCLES)


class GuardSerializer(StrictSerializer):
    action = serializers.ChoiceField(choices=gov.GUARD_ACTIONS)


class GuardResultSerializer(serializers.Serializer[Any]):
    allowed = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True)


class ActiveWorkWriteSerializer(StrictSerializer):
    work_id = StrictCharField(max_length=128)
    operation = serializers.ChoiceField(choices=["open", "continue"])
    request_id = StrictCharField(max_length=256)


class ActiveWorkSchemaVersionField(serializers.IntegerField):
    """GedPi's active-work pointer format, version 1: the only one written."""

    def get_attribute(self, pointer: Any) -> int:
        return 1


class ActiveWorkIdField(serializers.CharField):
    def get_attribute(self, pointer: Any) -> str:
        work_id: str = pointer.work.work_id
        return work_id


class ActiveWorkSerializer(OutputSerializer):
    # GedPi's camelCase pointer file, as GedPi writes it.
    schemaVersion = ActiveWorkSchemaVersionField()
    sessionId = serializers.CharField(source="session_id")
    workId = ActiveWorkIdField()
    operation = serializers.CharField()
    selectedAt = GedPiTimeField(source="selected_at")
    requestId = serializers.CharField(source="request_id")
