"""The API's shared serializers: strict input, the error shape, health.

Every GedWeb API (memory's, governance's) builds on these.

A field named like an attribute of DRF's Field or Serializer (``source``,
``fields``) carries ``type: ignore[assignment]``: the stubs read it as a
class attribute overriding theirs, but SerializerMetaclass takes every
declared field off the class.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, ClassVar, cast

from rest_framework import serializers
from rest_framework.fields import Field
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from gedweb.api.schema import enforced
from memory.documents import MAX_DOCUMENT_CHARS, MAX_REASON_CHARS
from memory.models import format_timestamp

SERVER_FIELDS = frozenset(
    {"id", "seq", "hash", "prev_hash", "author", "created_at", "project_id", "corrected_by",
     "status", "resolved_at", "resolved_by", "entry_id", "revision", "sha256"}
)


# The most items one page of a listing holds (docs/api.md, the contract's table).
MAX_PAGE_LIMIT = 500
DEFAULT_PAGE_LIMIT = 100


class PageLimitField(serializers.IntegerField):
    """A listing's ``limit``: a whole number; above the maximum it is the maximum.

    Ferryman's habits, which its clients rely on (contract section 9): a
    ``limit`` over the maximum gets a full page rather than a 400, and
    ``limit=0`` an empty one. What is not a whole number (``x``, ``1.5``,
    ``-1``) is still refused.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, default=DEFAULT_PAGE_LIMIT, min_value=0,
                         help_text=f"0-{MAX_PAGE_LIMIT}; a larger value is taken as "
                                   f"{MAX_PAGE_LIMIT}, 0 answers an empty page", **kwargs)

    def to_internal_value(self, data: Any) -> int:
        return min(int(super().to_internal_value(data)), MAX_PAGE_LIMIT)


class StrictSerializer(serializers.Serializer[Any]):
    """Refuses fields it does not declare, naming server-owned ones as such."""

    def get_fields(self) -> dict[str, Field[Any, Any, Any, Any]]:
        # DRF deep-copies the declared fields for every serializer it builds,
        # which runs each field's __init__ again: half of what validating an
        # append's body cost. A plain field is its __dict__ of settings, and
        # binding and validating it set attributes without changing any
        # container it shares, so a copy of that dict is a fresh field. A
        # field holding others (a serializer, a list or dict field's child)
        # still gets DRF's deep copy, since its children are bound to it.
        fields: dict[str, Field[Any, Any, Any, Any]] = {}
        for name, declared in self._declared_fields.items():
            if isinstance(declared, serializers.BaseSerializer) or hasattr(declared, "child"):
                fields[name] = copy.deepcopy(declared)
            else:
                field = object.__new__(type(declared))
                field.__dict__.update(declared.__dict__)
                fields[name] = field
        return fields

    def to_internal_value(self, data: Any) -> Any:
        errors: dict[str, Any] = {}
        if isinstance(data, dict):
            for name in data:
                if name not in self.fields:
                    errors[name] = [
                        "this field is set by the server and cannot be supplied"
                        if name in SERVER_FIELDS
                        else "unknown field"
                    ]
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if errors and isinstance(exc.detail, dict):
                raise serializers.ValidationError({**exc.detail, **errors}) from None
            raise
        if errors:
            raise serializers.ValidationError(errors)
        return value


class _SurrogateValidator(ProhibitSurrogateCharactersValidator):
    """DRF's check, its message and code, with the clean case in C.

    DRF's own walks the text in Python, one ord() per character: 4 % of an
    append's CPU for a 300-character entry. UTF-8 cannot encode exactly the
    code points DRF refuses (U+D800 to U+DFFF), so only a text that fails to
    encode is walked, to name its first surrogate as DRF does.
    """

    def __call__(self, value: Any) -> None:
        try:
            str(value).encode("utf-8")
        except UnicodeEncodeError:
            super().__call__(value)


class StrictCharField(serializers.CharField):
    """A string, never a number or bool coerced into one; kept exactly as sent."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("allow_blank", True)
        super().__init__(**kwargs)
        self.validators = [
            _SurrogateValidator() if type(v) is ProhibitSurrogateCharactersValidator else v
            for v in self.validators
        ]

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return data


class EmptyBodySerializer(StrictSerializer):
    """Approve and reject take no fields."""


class OutputSerializer(serializers.Serializer[Any]):
    # A response shape: the one description of what a row answers as, and of
    # its schema. (Comments, not a docstring: drf-spectacular would make a
    # docstring every subclass's schema description.)
    #
    # ``render`` and ``render_many`` are how views and commands use it. They
    # share one instance per class, because building a serializer deep-copies
    # its fields (0.8 ms, a fifth of an append); and a field that keeps DRF's
    # get_attribute reads its attribute here with one getattr, calling it if
    # it is a method, because DRF's generic walk (a Mapping check and
    # inspect.signature of every callable) cost seven times the rows' own work
    # on a page of 500. A row is a model instance or a ``values()`` dict.
    # Only one-level sources are allowed; a field needing more overrides
    # ``get_attribute``.

    _shared_instance: ClassVar[OutputSerializer]

    @classmethod
    def render(cls, row: Any) -> dict[str, Any]:
        return cls._shared().to_representation(row)

    @classmethod
    def render_many(cls, rows: Iterable[Any]) -> list[dict[str, Any]]:
        shared = cls._shared()
        return [shared.to_representation(row) for row in rows]

    @classmethod
    def _shared(cls) -> OutputSerializer:
        # From the class's own __dict__: a subclass must not answer with its
        # parent's fields.
        shared = cls.__dict__.get("_shared_instance")
        if shared is None:
            shared = cls()
            cls._shared_instance = shared
        return shared

    def to_representation(self, instance: Any) -> dict[str, Any]:
        answer: dict[str, Any] = {}
        is_dict = isinstance(instance, dict)
        for field in self._readable_fields:
            if type(field).get_attribute is Field.get_attribute:
                (name,) = field.source_attrs
                value = instance[name] if is_dict else getattr(instance, name)
                if callable(value):
                    value = value()
            else:
                value = field.get_attribute(instance)
            # A readable field is bound, so it has its name.
            field_name = cast(str, field.field_name)
            answer[field_name] = None if value is None else field.to_representation(value)
        return answer


class TimestampField(serializers.CharField):
    """A moment in the one wire form: UTC, six fractional digits, +00:00."""

    def to_representation(self, value: Any) -> str:
        return format_timestamp(value)


# A durable document's body, query and revision, as memory's document routes
# and governance's handoff routes both read and answer them.


class DocumentRevisionSummarySerializer(OutputSerializer):
    path = serializers.CharField()
    revision = serializers.IntegerField()
    sha256 = serializers.CharField(help_text="SHA-256 of the content's UTF-8 bytes")
    author = serializers.CharField()
    created_at = TimestampField(help_text="UTC, six fractional digits, +00:00")
    reason = serializers.CharField(allow_null=True)


class DocumentSerializer(DocumentRevisionSummarySerializer):
    content = serializers.CharField()


class DocumentPutSerializer(StrictSerializer):
    content = enforced(StrictCharField(
        help_text="substantive Markdown (GedPi §1.1); stored byte-for-byte"
    ), maxLength=MAX_DOCUMENT_CHARS)
    expected_revision = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=0,
        help_text="the current revision when updating; omit or 0 to create",
    )
    reason = enforced(StrictCharField(
        required=False, allow_null=True, default=None, help_text="why"
    ), maxLength=MAX_REASON_CHARS, nullable=True)


class DocumentGetQuerySerializer(StrictSerializer):
    revision = serializers.IntegerField(required=False, min_value=1)


class ErrorSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    message = serializers.CharField()
    fields = serializers.DictField(  # type: ignore[assignment]  # a field, not Serializer.fields
        child=serializers.ListField(child=serializers.CharField()), required=False
    )


class HealthSerializer(serializers.Serializer[Any]):
    status = serializers.CharField()
    api_version = serializers.CharField()
