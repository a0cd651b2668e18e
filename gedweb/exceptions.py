"""The one place that turns any error into the API error shape, and the API's own errors.

Every error under /v1 is ``{"code", "message", "fields"?}``. Services raise
Django ValidationError or a domain error (gedweb.errors, plain Python);
STATUSES gives each its HTTP status; views never build error bodies.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf
from rest_framework.response import Response

from gedweb.errors import (
    ArchiveRefused,
    CheckoutRefused,
    Conflict,
    DecisionRequired,
    DomainError,
    DuplicateEvidence,
    ExportRefused,
    GovernanceBlocked,
    HashMismatch,
    IdempotencyInFlight,
    IdempotencyKeyReused,
    InvalidState,
    QuotaExceeded,
    ReviewRefused,
    SecretDetected,
    StaleRevision,
)

logger = logging.getLogger("gedweb.api")

# The HTTP status of each domain error; a subclass not listed takes its
# nearest listed base's, DomainError's own is 409.
STATUSES: dict[type[DomainError], int] = {
    DomainError: 409,
    ArchiveRefused: 400,
    Conflict: 409,
    DuplicateEvidence: 409,
    ExportRefused: 409,
    GovernanceBlocked: 409,
    HashMismatch: 409,
    IdempotencyInFlight: 409,
    QuotaExceeded: 409,
    ReviewRefused: 403,
    StaleRevision: 409,
    CheckoutRefused: 422,
    DecisionRequired: 422,
    IdempotencyKeyReused: 422,
    InvalidState: 422,
    SecretDetected: 422,
}


def domain_status(exc: DomainError) -> int:
    return next(STATUSES[cls] for cls in type(exc).__mro__ if cls in STATUSES)


class MemoryWriteForbidden(drf.PermissionDenied):
    default_detail = "memory writes need the memory write token (X-Memory-Token)"
    default_code = "memory_write_forbidden"


class InsufficientScope(drf.PermissionDenied):
    """An OAuth token's grant allows less than this call needs (gedweb/oauth/scopes.py)."""

    def __init__(self, granted: str, needed: str) -> None:
        super().__init__(f"this OAuth grant allows {granted}; this call needs {needed}")
        self.needed = needed


class RateLimited(drf.Throttled):
    """A token went past one of its request rates (gedweb/throttling.py)."""

    def __init__(self, wait: int, limit: str) -> None:
        super().__init__(wait=wait)
        # Not DRF's "Expected available in N seconds." suffix: Retry-After says it.
        self.detail = drf.ErrorDetail(
            f"more than {limit} for this token; retry after {wait} s", code="rate_limited"
        )


class PayloadTooLarge(drf.APIException):
    status_code = 413
    default_detail = "request body is larger than 1 MiB"
    default_code = "payload_too_large"


class NoAdminToken(drf.NotAuthenticated):
    """An admin endpoint on a server without GEDWEB_ADMIN_TOKEN: 401 to every caller.

    Its message says the server has none instead of blaming the caller's
    token; it is the same whatever was sent, so it reveals nothing about it.
    """

    default_detail = ("this server has no admin token: GEDWEB_ADMIN_TOKEN is not set, so its "
                      "admin endpoints (creating and listing projects) are off")


_STATUS_CODES: list[tuple[type[Exception], int, str]] = [
    (MemoryWriteForbidden, 403, "memory_write_forbidden"),
    (PayloadTooLarge, 413, "payload_too_large"),
    (drf.NotAuthenticated, 401, "unauthenticated"),
    (drf.AuthenticationFailed, 401, "unauthenticated"),
    (drf.PermissionDenied, 403, "forbidden"),
    (drf.NotFound, 404, "not_found"),
    (drf.MethodNotAllowed, 405, "method_not_allowed"),
    (drf.UnsupportedMediaType, 415, "unsupported_media_type"),
    (drf.NotAcceptable, 406, "not_acceptable"),
    (drf.ParseError, 400, "bad_request"),
    (drf.Throttled, 429, "rate_limited"),
]

_FIXED_MESSAGES = {
    401: "missing, malformed, unknown or revoked bearer token",
    404: "not found",
}


def error_body(
    code: str, message: str, fields: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if fields:
        body["fields"] = fields
    return body


def _flatten(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error detail as {dotted.field: [messages]}."""
    if isinstance(detail, dict):
        out: dict[str, list[str]] = {}
        for key, value in detail.items():
            # A nested object's own errors (wrong type, e.g. a number where
            # {"evidence": {...}} belongs) name the field itself, not
            # "evidence.non_field_errors"; the whole body's are "body".
            if key == "non_field_errors":
                name = prefix or "body"
            else:
                name = f"{prefix}.{key}" if prefix else str(key)
            out.update(_flatten(value, name))
        return out
    if isinstance(detail, list) and detail and all(isinstance(i, (dict, list)) for i in detail):
        out = {}
        for index, value in enumerate(detail):
            out.update(_flatten(value, f"{prefix}.{index}" if prefix else str(index)))
        return out
    messages = detail if isinstance(detail, list) else [detail]
    # Errors of the whole body are the body's (DRF would say "non_field_errors").
    return {prefix or "body": [_house_style(m) for m in messages]}


_NOT_AN_OBJECT = "Invalid data. Expected a dictionary, but got "
_JSON_KINDS = {"list": "an array", "str": "a string", "int": "a number", "float": "a number",
               "bool": "true or false", "NoneType": "null"}


def _house_style(message: Any) -> str:
    """DRF's own words where they show through, in GedWeb's: what the value must be."""
    text = str(message)
    if text.startswith(_NOT_AN_OBJECT) and text.endswith("."):
        kind = text[len(_NOT_AN_OBJECT):-1]
        return f"must be a JSON object, not {_JSON_KINDS.get(kind, kind)}"
    if text == "No data provided":
        return "must be a JSON object, not null"
    return text


def _validation_response(fields: dict[str, list[str]]) -> Response:
    names = ", ".join(sorted(fields))
    return Response(
        error_body("validation_error", f"invalid input: {names}", fields), status=400
    )


def _suspicious_response(exc: SuspiciousOperation) -> Response:
    """A request Django refused to read (too many fields, too big, a bad Host, ...).

    The client's doing, so one log line and never a traceback.
    """
    logger.warning("refused request: %s: %s", type(exc).__name__, exc)
    if isinstance(exc, RequestDataTooBig):
        return Response(error_body("payload_too_large", PayloadTooLarge.default_detail), status=413)
    if isinstance(exc, TooManyFieldsSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        message = f"more than {limit:,} query parameters or form fields"
    else:
        message = "the request cannot be read"
    return Response(error_body("bad_request", message), status=400)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    if isinstance(exc, SuspiciousOperation):
        return _suspicious_response(exc)
    if isinstance(exc, DomainError):
        body = error_body(exc.code, exc.message)
        body.update(exc.extra)
        return Response(body, status=domain_status(exc))
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            return _validation_response({k: list(v) for k, v in exc.message_dict.items()})
        return _validation_response({"body": list(exc.messages)})
    if isinstance(exc, drf.ValidationError):
        return _validation_response(_flatten(exc.detail))
    if isinstance(exc, Http404):
        exc = drf.NotFound()
    if isinstance(exc, DjangoPermissionDenied):
        exc = drf.PermissionDenied()
    for exc_type, status, code in _STATUS_CODES:
        if isinstance(exc, exc_type):
            # 401 and 404 bodies never vary, so they reveal nothing about
            # which token or which project was tried.
            message = (str(exc.detail) if isinstance(exc, NoAdminToken)
                       else _FIXED_MESSAGES.get(status) or str(getattr(exc, "detail", "")) or code)
            retry_after = None
            if isinstance(exc, drf.Throttled):
                # DRF sets wait in Throttled.__init__; drf-stubs do not declare it.
                retry_after = max(1, math.ceil(exc.wait or 1))  # type: ignore[attr-defined]
            response = Response(error_body(code, message), status=status)
            if status == 401:
                response["WWW-Authenticate"] = "Bearer"
            if isinstance(exc, InsufficientScope):
                # RFC 6750 3.1: the scope that would do, for an OAuth client's step-up.
                response["WWW-Authenticate"] = (
                    f'Bearer error="insufficient_scope", scope="{exc.needed}"'
                )
            if retry_after is not None:
                response["Retry-After"] = str(retry_after)
            return response
    if isinstance(exc, drf.APIException):
        return Response(error_body("bad_request", str(exc.detail)), status=exc.status_code)
    logger.exception("unhandled error in %s", context.get("view").__class__.__name__)
    return Response(error_body("internal_error", "internal server error"), status=500)


def json_error(request: Any, code: str, message: str, status: int) -> JsonResponse:
    return JsonResponse(error_body(code, message), status=status)
