"""The API's only body parser: strict JSON with a hard size limit."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from gedweb.checkout import sync
from gedweb.exceptions import PayloadTooLarge
from gedweb.lib.text import is_valid_unicode


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        if not is_valid_unicode(key):
            # A lone surrogate cannot be encoded, so an error naming the key
            # could not be rendered either.
            raise ValueError("object key is not valid Unicode")
        result[key] = value
    return result


class StrictJSONParser(BaseParser):
    """application/json, UTF-8 only, at most API_MAX_BODY_BYTES.

    DRF streams the body straight from the WSGI input, past Django's
    DATA_UPLOAD_MAX_MEMORY_SIZE check, so the limit is enforced here while
    reading: an oversized body is never held in memory. Duplicate keys,
    NaN/Infinity and nesting deeper than Python's recursion limit are
    refused rather than guessed at.
    """

    media_type = "application/json"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.API_MAX_BODY_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ParseError("request body is not valid UTF-8") from None
        try:
            return json.loads(
                text, object_pairs_hook=_unique_keys, parse_constant=_reject_constant
            )
        except RecursionError:
            raise ParseError("JSON is nested too deeply") from None
        except ValueError as exc:
            raise ParseError(f"malformed JSON: {exc}") from None


class ArchiveParser(BaseParser):
    """application/gzip: a GedPi layout's tar.gz (gedweb push), at most ``max_bytes``.

    Read whole, bounded like the JSON parser (one byte past the limit is
    enough to refuse); gedweb.checkout.archive then reads it as hostile
    input. The body is returned as bytes.
    """

    media_type = "application/gzip"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = sync.LIMITS.archive_bytes
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(f"request body is larger than {limit:,} bytes, the most "
                                  "an archive may hold")
        return raw
