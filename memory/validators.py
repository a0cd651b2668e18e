"""Value rules for memory fields, shared by the services, the API and admin."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from gedweb.lib.ids import (
    CATEGORY_RE,
    IDEMPOTENCY_KEY_RE,
    PROJECT_ID,
    PROJECT_ID_RE,
    TOKEN_NAME_RE,
)
from gedweb.validation import validate_text

# The authors GedWeb itself writes as: the admin token, the commands, the
# system. A token of that name would make its entries indistinguishable.
RESERVED_TOKEN_NAMES = frozenset({"admin", "cli", "system"})

MAX_CONTENT_BYTES = 32_000
MAX_SOURCE_CHARS = 128
MIN_SUPPLIED_TOKEN_CHARS = 12


def validate_project_id(value: str) -> None:
    if not isinstance(value, str) or not PROJECT_ID_RE.fullmatch(value):
        raise ValidationError(
            "must be 1-64 lowercase letters, digits or inner hyphens "
            f"(^{PROJECT_ID}$)"
        )


def validate_project_name(value: str) -> None:
    if not value.strip():
        raise ValidationError("must not be blank")
    if len(value) > 200:
        raise ValidationError("must be at most 200 characters")
    if not value.isprintable():
        raise ValidationError("must not contain control characters")


def validate_category(value: str) -> None:
    if not CATEGORY_RE.fullmatch(value):
        raise ValidationError(
            "must start with a lowercase letter and use only a-z, 0-9, '_', '.', '-' "
            "(at most 64 characters)"
        )


def validate_content(value: str) -> None:
    validate_text(value)
    size = len(value.encode("utf-8"))
    if size > MAX_CONTENT_BYTES:
        raise ValidationError(f"must be at most {MAX_CONTENT_BYTES} UTF-8 bytes, got {size}")


def validate_source(value: str) -> None:
    if not 1 <= len(value) <= MAX_SOURCE_CHARS:
        raise ValidationError(f"must be 1-{MAX_SOURCE_CHARS} characters")
    if not value.isprintable():
        raise ValidationError("must be printable characters without newlines")


def validate_token_name(value: str) -> None:
    if ":" in value:
        raise ValidationError(
            "must not contain ':', which GedWeb keeps for its own authors (user:..., imports)"
        )
    if not TOKEN_NAME_RE.fullmatch(value):
        raise ValidationError(
            "must be 1-64 letters, digits or '_.@-', starting with a letter or digit"
        )
    if value.lower() in RESERVED_TOKEN_NAMES:
        raise ValidationError(
            f"{value!r} is an author GedWeb writes as itself (admin, cli, system): "
            "choose another name"
        )


def validate_supplied_token(value: str) -> None:
    if len(value) < MIN_SUPPLIED_TOKEN_CHARS:
        raise ValidationError(f"must be at least {MIN_SUPPLIED_TOKEN_CHARS} characters")
    if len(value) > 512 or not all("\x21" <= ch <= "\x7e" for ch in value):
        raise ValidationError("must be at most 512 printable ASCII characters without spaces")


def validate_idempotency_key(value: str) -> None:
    if not IDEMPOTENCY_KEY_RE.fullmatch(value):
        raise ValidationError("must be 1-255 printable ASCII characters")
