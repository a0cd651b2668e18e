"""Django's ValidationError as GedWeb uses it, written once for every service and face.

- ``validate_text``: the one text rule (gedweb.lib.text) as a validator;
- ``FieldErrors`` and ``collect_errors``: every bad field of one write in
  one ValidationError, so a caller learns all of them at once (the API's
  ``fields``);
- ``validation_error_line``: such an error as one line, for the places
  that have no ``fields`` to fill (commands, import skips and refusals).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.core.exceptions import ValidationError

from gedweb.lib.text import BLANK_MESSAGE, text_problem

Validator = Callable[[Any], object]


def validate_text(
    value: str, *, blank_allowed: bool = False, blank_message: str = BLANK_MESSAGE
) -> None:
    problem = text_problem(value, blank_allowed=blank_allowed, blank_message=blank_message)
    if problem is not None:
        raise ValidationError(problem)


class FieldErrors:
    """The refusals of one write, by field, raised together by ``raise_if_any``."""

    def __init__(self) -> None:
        self.errors: dict[str, list[str]] = {}

    def check(self, field: str, validator: Validator, value: Any) -> None:
        """Run validator(value); its messages become field's."""
        try:
            validator(value)
        except ValidationError as exc:
            self.errors.setdefault(field, []).extend(exc.messages)

    def add(self, field: str, message: str) -> None:
        self.errors.setdefault(field, []).append(message)

    def raise_if_any(self) -> None:
        if self.errors:
            raise ValidationError(self.errors)


def collect_errors(checks: Mapping[str, tuple[Validator, Any]]) -> None:
    """Run each field's (validator, value) and raise one ValidationError naming every bad field."""
    errors = FieldErrors()
    for field, (validator, value) in checks.items():
        errors.check(field, validator, value)
    errors.raise_if_any()


def validation_error_line(exc: ValidationError) -> str:
    """``field: message; other: message`` for an error by field, the messages joined otherwise."""
    if hasattr(exc, "error_dict"):
        return "; ".join(
            f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items()
        )
    return " ".join(exc.messages)
