"""The API's shared serializers: strict input, the error shape, health.

Every GedWeb API (memory's, governance's) builds on these.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

SERVER_FIELDS = frozenset(
    {"id", "seq", "hash", "prev_hash", "author", "created_at", "project_id", "corrected_by",
     "status", "resolved_at", "resolved_by", "entry_id", "revision", "sha256"}
)


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not declare, naming server-owned ones as such."""

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


class StrictCharField(serializers.CharField):
    """A string, never a number or bool coerced into one; kept exactly as sent."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("allow_blank", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return data


class EmptyBodySerializer(StrictSerializer):
    """Approve and reject take no fields."""


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()), required=False
    )


class HealthSerializer(serializers.Serializer):
    status = serializers.CharField()
    api_version = serializers.CharField()
