"""The OpenAPI schema says what the server enforces (drf-spectacular's postprocessing).

Rules that hold for every operation, written once here rather than on each
view, so a client author's generated code refuses what the server refuses:

- a string field whose rule is a regular expression (an id, a category)
  carries it as ``pattern``;
- every request body is a JSON object without unknown fields
  (``additionalProperties: false``; the API answers 400 naming them);
- every operation that takes a token may answer 429 with ``Retry-After``
  (the per-token rate limits, gedweb/throttling.py), and every operation
  with a body 413 (over 1 MiB) and 415 (not application/json);
- errors are ``application/json`` whatever the success's content type (a
  401 on ``GET .../checkout``, whose success is a gzip archive).
"""

from __future__ import annotations

from typing import Any, TypeVar

from drf_spectacular.drainage import set_override

# JSON Schema patterns (ECMA-262, and Python's re where schemathesis reads them)
# of the text rules the validators enforce (gedweb.lib.text, memory.validators):
# not blank and no NUL; no control character (the server's isprintable() also
# refuses other invisible characters, which a pattern cannot list portably).
TEXT_PATTERN = r"^(?!\s*$)[^\u0000]*$"
PRINTABLE_PATTERN = r"^[^\u0000-\u001f\u007f-\u009f]*$"

F = TypeVar("F")


def enforced(field: F, **keywords: Any) -> F:
    """``field`` (a serializer field), its schema carrying the JSON Schema
    ``keywords`` (``maxLength``, ``pattern``, ...) that its validators enforce,
    where DRF's own arguments cannot say them without changing the validation
    (a byte limit, a rule function). The field's help_text stays its description."""
    set_override(field, "field", {"type": "string", **keywords})
    return field


_ERROR = {"$ref": "#/components/schemas/Error"}
_JSON_ERROR = {"application/json": {"schema": _ERROR}}
_WITH_BODY = {
    "413": "body over 1 MiB (`payload_too_large`)",
    "415": "body is not application/json (`unsupported_media_type`)",
}
_OPERATIONS = ("get", "post", "put", "patch", "delete")


def house_rules(result: dict[str, Any], generator: Any, request: Any, public: bool
                ) -> dict[str, Any]:
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request") and component.get("type") == "object":
            component["additionalProperties"] = False
        for field in component.get("properties", {}).values():
            _refuse_blank_where_refused(field)
            # A field whose rule is a regular expression (its help_text, from
            # gedweb.lib.ids) says it as a pattern a client can check.
            rule = field.get("description", "")
            if field.get("type") == "string" and rule.startswith("^") and rule.endswith("$"):
                field["pattern"] = rule
                del field["description"]
    for item in result.get("paths", {}).values():
        for method in _OPERATIONS:
            operation = item.get(method)
            if operation is None:
                continue
            responses = operation.setdefault("responses", {})
            if operation.get("security"):  # the views with auth=[] (health, contract) have none
                responses.setdefault("429", {
                    "description": "this token's rate limit is spent (`rate_limited`)",
                    "headers": {"Retry-After": {
                        "description": "seconds until the limit's window ends",
                        "schema": {"type": "integer", "minimum": 1}}},
                    "content": _JSON_ERROR,
                })
            if "requestBody" in operation:
                for status, description in _WITH_BODY.items():
                    responses.setdefault(status, {"description": description,
                                                  "content": _JSON_ERROR})
            for status, response in responses.items():
                if status[:1] in "45" and "content" in response:
                    response["content"] = _JSON_ERROR
    return result


def _refuse_blank_where_refused(field: dict[str, Any]) -> None:
    # drf-spectacular offers "" beside a text rule of a field DRF lets be
    # blank (its service refuses blanks with a message of its own); a rule
    # that says minLength 1 (``enforced``) refuses it, so the offer goes.
    options = field.get("oneOf")
    if (isinstance(options, list) and len(options) == 2
            and options[1] == {"type": "string", "maxLength": 0}
            and options[0].get("minLength", 0) >= 1):
        field.update(field.pop("oneOf")[0])
