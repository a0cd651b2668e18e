"""Input validation and documented output shapes of the memory API.

Input serializers check types and reject unknown fields; value rules live
in memory.validators and are applied by the services, and by the input
serializers too, so that one answer names every bad field. Output serializers
are the one description of each response shape: the views and the commands
render rows through them, and the OpenAPI schema is generated from them.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from gedweb.api.schema import PRINTABLE_PATTERN, TEXT_PATTERN, enforced
from gedweb.api.serializers import (
    DocumentRevisionSummarySerializer,
    OutputSerializer,
    PageLimitField,
    StrictCharField,
    StrictSerializer,
    TimestampField,
)
from gedweb.lib.ids import CATEGORY, PROJECT_ID
from gedweb.validation import validate_text
from memory import checkpoints
from memory.models import MemoryCandidate, MemoryEntry, format_timestamp
from memory.recall import documents, ranking
from memory.validators import (
    MAX_CONTENT_BYTES,
    MAX_SOURCE_CHARS,
    validate_category,
    validate_content,
    validate_project_id,
    validate_project_name,
    validate_source,
    validate_supplied_token,
)


@extend_schema_field(
    {"oneOf": [{"type": "string", "format": "uuid"}, {"type": "integer", "minimum": 1}],
     "nullable": True}
)
class EntryReferenceField(serializers.Field[str | int, Any, Any, Any]):
    """An entry named by its uuid (string) or its seq (integer)."""

    default_error_messages = {"invalid": "must be an entry uuid or a positive seq number"}

    def to_internal_value(self, data: Any) -> str | int:
        if isinstance(data, bool) or not isinstance(data, (str, int)):
            self.fail("invalid")
        if isinstance(data, int) and data < 1:
            self.fail("invalid")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class BlankAsNullField(serializers.CharField):
    """Text a row keeps as "" until it is set, answered as null until then."""

    # CharField's stub fixes the representation to str; DRF does not, and this one is null.
    def to_representation(self, value: Any) -> str | None:  # type: ignore[override]
        return str(value) or None


class CorrectedByField(serializers.ListField):
    """The uuids of the entries that correct this one, in seq order.

    From the rows EntryQuerySet.with_links() prefetched, else one query.
    """

    child = serializers.UUIDField()

    def get_attribute(self, entry: MemoryEntry) -> list[Any]:
        rows = getattr(entry, "corrected_by_rows", None)
        if rows is not None:
            return [row.uuid for row in rows]
        return list(entry.corrected_by.order_by("seq").values_list("uuid", flat=True))


class ProjectCreateSerializer(StrictSerializer):
    id = StrictCharField(
        allow_blank=False,
        validators=[validate_project_id],
        help_text=f"^{PROJECT_ID}$",
    )
    name = StrictCharField(allow_blank=False, validators=[validate_project_name])
    token = StrictCharField(
        required=False,
        write_only=True,
        allow_blank=False,
        validators=[validate_supplied_token],
        help_text="at least 12 characters",
    )


class ProjectSerializer(OutputSerializer):
    id = serializers.CharField()
    name = serializers.CharField()
    created_at = TimestampField()


class ProjectCreatedSerializer(ProjectSerializer):
    token = serializers.CharField(
        required=False, help_text="only when the server generated it; shown once"
    )


class ProjectListSerializer(serializers.Serializer[Any]):
    items = ProjectSerializer(many=True)


class EntryCreateSerializer(StrictSerializer):
    category = StrictCharField(
        allow_blank=False, validators=[validate_category], help_text=f"^{CATEGORY}$"
    )
    # maxLength counts characters: 32,000 bytes are at most 32,000 of them.
    content = enforced(StrictCharField(
        allow_blank=False,
        validators=[validate_content],
        help_text=f"not blank, at most {MAX_CONTENT_BYTES:,} UTF-8 bytes, no NUL",
    ), minLength=1, maxLength=MAX_CONTENT_BYTES, pattern=TEXT_PATTERN)
    source = enforced(StrictCharField(  # type: ignore[assignment]  # a field, not Field.source
        required=False,
        default="operator",
        allow_blank=False,
        validators=[validate_source],
        help_text=f"1-{MAX_SOURCE_CHARS} printable characters",
    ), minLength=1, maxLength=MAX_SOURCE_CHARS, pattern=PRINTABLE_PATTERN, default="operator")
    corrects = EntryReferenceField(
        required=False, allow_null=True, default=None, help_text="uuid or seq, same project"
    )


class EntrySerializer(OutputSerializer):
    # An entry as the API and the commands show it: its mirror block's data
    # (MemoryEntry.chain_row), whether it was redacted, and its links. A comment, not a docstring: a
    # docstring would become the schema's description.
    id = serializers.UUIDField(source="uuid")
    seq = serializers.IntegerField()
    project_id = serializers.CharField()
    category = serializers.CharField()
    content = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]  # a field, not Field.source
    corrects = serializers.UUIDField(source="corrects_uuid_text", allow_null=True)
    author = serializers.CharField()
    created_at = TimestampField(help_text="UTC, six fractional digits, +00:00")
    content_sha256 = serializers.CharField(
        allow_null=True,
        help_text="SHA-256 of the content as written: chain format 2, which the hash commits "
        "to instead of the content; null for an entry in format 1 (docs/operations.md)",
    )
    redacts = serializers.UUIDField(
        source="redacts_uuid_text", allow_null=True,
        help_text="on a redaction record: the entry whose content it removed",
    )
    redacted = serializers.BooleanField(
        source="is_redacted",
        help_text="the content is the notice of a redaction, not what was written",
    )
    prev_hash = serializers.CharField()
    hash = serializers.CharField()
    corrected_by = CorrectedByField()


class EntryPageSerializer(serializers.Serializer[Any]):
    items = EntrySerializer(many=True)
    next_cursor = serializers.IntegerField(allow_null=True)


MAX_SEARCH_CHARS = 500


class EntryListQuerySerializer(StrictSerializer):
    limit = PageLimitField()
    after = serializers.IntegerField(required=False, min_value=0)
    before = serializers.IntegerField(required=False, min_value=1)
    order = serializers.ChoiceField(choices=["asc", "desc"], required=False, default="asc")
    category = serializers.CharField(required=False, max_length=64)
    source = serializers.CharField(  # type: ignore[assignment]  # a field, not Field.source
        required=False, max_length=128
    )
    since = serializers.DateTimeField(required=False)
    # The longest valid listing URL must fit gunicorn's request line
    # (limit_request_line = 8190 in gunicorn.conf.py). Percent-encoded, a
    # 4-byte character is 12 bytes: 500 of them are 6,000 bytes, and every
    # other parameter at its maximum (a 128-character source is 1,536 bytes)
    # with the method, path and version adds 1,876: 7,876 in all
    # (docs/api.md#limits).
    q = serializers.CharField(required=False, max_length=MAX_SEARCH_CHARS)
    view = serializers.ChoiceField(choices=["all", "current"], required=False, default="all")


class RecallQuerySerializer(StrictSerializer):
    # GET's query string and POST's JSON body (for task texts longer than a
    # request line holds): the same fields, the same rules (docs/recall.md).
    q = StrictCharField(allow_blank=False, max_length=ranking.MAX_QUERY_CHARS,
                        validators=[validate_text],
                        help_text="the question or task, in the asker's own words: 1-4,000 "
                        "characters, not blank, no NUL")
    limit = serializers.IntegerField(required=False, default=10, min_value=1,
                                     max_value=ranking.MAX_LIMIT)
    mode = serializers.ChoiceField(choices=list(ranking.MODES), required=False,
                                   default="hybrid")
    view = serializers.ChoiceField(
        choices=list(ranking.VIEWS), required=False, default="current",
        help_text="current leaves out entries a later entry corrects")
    category = StrictCharField(required=False, max_length=64)
    source = StrictCharField(  # type: ignore[assignment]  # a field, not Field.source
        required=False, max_length=128
    )
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)


class RecallRanksSerializer(serializers.Serializer[Any]):
    keyword = serializers.IntegerField(allow_null=True, min_value=1)
    semantic = serializers.IntegerField(allow_null=True, min_value=1)


class RecallItemSerializer(EntrySerializer):
    # An entry as the list shows it, with where recall ranked it.
    kind = serializers.ChoiceField(choices=["entry"])
    score = serializers.FloatField(help_text="higher is better; items come best first")
    ranks = RecallRanksSerializer(help_text="its place in each ranker's list, null if absent")

    @classmethod
    def render_hit(cls, hit: ranking.Hit) -> dict[str, Any]:
        ranks = {"keyword": hit.keyword_rank, "semantic": hit.semantic_rank}
        if hit.document is not None:
            return RecallDocumentSerializer.render_section(hit.document, hit.score, ranks)
        assert hit.entry is not None  # a hit is an entry or a document section
        return {**EntrySerializer.render(hit.entry), "kind": "entry", "score": hit.score,
                "ranks": ranks}


class RecallSectionSerializer(serializers.Serializer[Any]):
    index = serializers.IntegerField(min_value=0, help_text="0 for the first section")
    heading = serializers.CharField(help_text='its heading\'s text; "" before the first one')
    # An answer's field: max_length only says how long the server's text can be.
    text = serializers.CharField(help_text="the section", max_length=documents.SHOWN_CHARS)


class RecallDocumentSerializer(serializers.Serializer[Any]):
    # A section of a document's current revision that recall ranked.
    kind = serializers.ChoiceField(choices=["document"])
    path = serializers.CharField()
    revision = serializers.IntegerField(min_value=1)
    author = serializers.CharField()
    created_at = serializers.CharField(help_text="when this revision was written")
    section = RecallSectionSerializer()
    score = serializers.FloatField()
    ranks = RecallRanksSerializer()

    @staticmethod
    def render_section(hit: documents.SectionHit, score: float,
                       ranks: dict[str, int | None]) -> dict[str, Any]:
        revision = hit.revision
        return {"kind": "document", "path": revision.path, "revision": revision.revision,
                "author": revision.author, "created_at": format_timestamp(revision.created_at),
                "section": {"index": hit.section, "heading": hit.heading, "text": hit.text},
                "score": score, "ranks": ranks}


class RecallIndexSerializer(serializers.Serializer[Any]):
    model = serializers.CharField(help_text="the embedding model's id")
    through_seq = serializers.IntegerField(
        min_value=0, help_text="every entry up to this seq is indexed by meaning")
    head_seq = serializers.IntegerField(min_value=0, help_text="the project's newest seq")


@extend_schema_field(PolymorphicProxySerializer(
    component_name="RecallHit",
    serializers={"entry": RecallItemSerializer, "document": RecallDocumentSerializer},
    resource_type_field_name="kind", many=False))
class RecallHitField(serializers.DictField):
    pass


class RecallSerializer(serializers.Serializer[Any]):
    items = serializers.ListField(child=RecallHitField(), help_text=(
        'entries (kind "entry") and sections of documents\' current revisions '
        '(kind "document"), best first'))
    mode = serializers.ChoiceField(choices=list(ranking.MODES),
                                   help_text="the mode that answered")
    index = RecallIndexSerializer()
    degraded = serializers.CharField(
        required=False,
        help_text="present when recall by meaning was unavailable: why, and the answer is "
        "the keyword ranking")

    @staticmethod
    def render_result(result: ranking.RecallResult) -> dict[str, Any]:
        body: dict[str, Any] = {
            "items": [RecallItemSerializer.render_hit(hit) for hit in result.hits],
            "mode": result.mode,
            "index": {"model": result.model, "through_seq": result.through_seq,
                      "head_seq": result.head_seq},
        }
        if result.degraded is not None:
            body["degraded"] = result.degraded
        return body


class ChainCheckpointSerializer(OutputSerializer):
    seq = serializers.IntegerField(min_value=1)
    hash = serializers.CharField()
    created_at = serializers.CharField()
    key_id = BlankAsNullField(
        allow_null=True, help_text="the signing key's id; null for checkpoints from before key ids"
    )


class VerifyProblemSerializer(OutputSerializer):
    kind = serializers.ChoiceField(choices=list(checkpoints.PROBLEM_KINDS))
    seq = serializers.IntegerField(allow_null=True)
    message = serializers.CharField()


class VerifySerializer(OutputSerializer):
    ok = serializers.BooleanField()
    entries = serializers.IntegerField()
    head = serializers.CharField()
    first_bad_seq = serializers.IntegerField(allow_null=True)
    redacted = serializers.IntegerField(
        help_text="Entries whose content an operator redacted, each matched to its redaction "
        "record (docs/operations.md, \"Redaction\").",
    )
    checkpoint = ChainCheckpointSerializer(
        allow_null=True,
        help_text="The newest authentic checkpoint the log still matches, or null.",
    )
    problems = VerifyProblemSerializer(
        many=True,
        help_text="Every finding, one line each: a broken link, a log shorter than a "
        "checkpoint (truncation), a head hash mismatch at a checkpoint's seq (fork), a "
        "checkpoint whose HMAC fails (forged) or whose row was deleted.",
    )


class CandidateCreateSerializer(StrictSerializer):
    category = StrictCharField(
        allow_blank=False, validators=[validate_category], help_text=f"^{CATEGORY}$"
    )
    content = StrictCharField(allow_blank=False, validators=[validate_content])
    source = StrictCharField(  # type: ignore[assignment]  # a field, not Field.source
        required=False, default="operator", allow_blank=False, validators=[validate_source]
    )


class CandidateSerializer(OutputSerializer):
    id = serializers.UUIDField(source="uuid")
    project_id = serializers.CharField()
    category = serializers.CharField()
    content = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]  # a field, not Field.source
    author = serializers.CharField()
    status = serializers.ChoiceField(choices=MemoryCandidate.Status.values)
    created_at = TimestampField()
    resolved_at = TimestampField(allow_null=True)
    resolved_by = BlankAsNullField(allow_null=True)
    entry_id = serializers.UUIDField(source="entry_uuid_text", allow_null=True)


class CandidateListQuerySerializer(StrictSerializer):
    status = serializers.ChoiceField(choices=MemoryCandidate.Status.values, required=False)
    limit = PageLimitField()
    after = serializers.IntegerField(required=False, min_value=0)


class CandidatePageSerializer(serializers.Serializer[Any]):
    items = CandidateSerializer(many=True)
    next_cursor = serializers.IntegerField(allow_null=True)


# --- durable documents ----------------------------------------------------------


class DocumentRevisionListSerializer(serializers.Serializer[Any]):
    path = serializers.CharField()
    items = DocumentRevisionSummarySerializer(many=True)


class DocumentListItemSerializer(OutputSerializer):
    path = serializers.CharField()
    revision = serializers.IntegerField(help_text="the current revision")
    sha256 = serializers.CharField()
    author = serializers.CharField(help_text="author of the current revision")
    updated_at = TimestampField(
        source="created_at", help_text="when the current revision was written"
    )


class DocumentListSerializer(serializers.Serializer[Any]):
    items = DocumentListItemSerializer(many=True)


class DocumentListQuerySerializer(StrictSerializer):
    prefix = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        trim_whitespace=False,
        max_length=200,
        help_text="only paths starting with this text, e.g. adr/ (case-sensitive)",
    )


