from __future__ import annotations

import re
from io import StringIO

from django.core.management import call_command


def test_the_schema_generates_without_a_single_warning(tmp_path):
    out = tmp_path / "schema.yaml"
    stderr = StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out), stderr=stderr)
    assert "Warning" not in stderr.getvalue()
    assert out.read_text().startswith("openapi: 3")


def _schema() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def _operations(schema: dict) -> list[tuple[str, str, dict]]:
    return [(path, method, operation) for path, item in schema["paths"].items()
            for method, operation in item.items()
            if method in ("get", "post", "put", "patch", "delete")]


def test_the_schema_says_what_the_server_enforces():
    """Issue 36 §4: rules as schema, not prose; every refusal where it can happen."""
    schema = _schema()
    components = schema["components"]["schemas"]
    requests = [name for name in components if name.endswith("Request")]
    assert requests and all(components[name]["additionalProperties"] is False
                            for name in requests if components[name]["type"] == "object")
    for name in ("EntryCreateRequest", "CandidateCreateRequest"):
        assert components[name]["properties"]["category"]["pattern"] == (
            "^[a-z][a-z0-9_.-]{0,63}$")
    assert components["ProjectCreateRequest"]["properties"]["id"]["pattern"].startswith("^")
    operations = _operations(schema)
    for path, method, operation in operations:
        responses = operation["responses"]
        if operation.get("security"):
            assert "Retry-After" in responses["429"]["headers"], (path, method)
        else:
            assert path in ("/healthz", "/v1/contract") and "429" not in responses
        if "requestBody" in operation:
            assert {"413", "415"} <= set(responses), (path, method)
        for status, response in responses.items():
            if status[0] in "45" and "content" in response:
                assert list(response["content"]) == ["application/json"], (path, method, status)
    checkout = schema["paths"]["/v1/projects/{project_id}/checkout"]["get"]["responses"]
    assert list(checkout["401"]["content"]) == ["application/json"]
    assert "recall" in schema["info"]["description"] and "MCP" in schema["info"]["description"]


# A length or range said in words: "1-128", "at most 2,000", "at least 12".
_PROSE_RULE = re.compile(r"\b\d[\d,]*\s*-\s*\d|\bat (?:most|least) \d")


def _described_fields(schema: dict) -> list[tuple[str, dict, str]]:
    """(where, schema, description) of every parameter and component property."""
    fields = []
    for path, method, operation in _operations(schema):
        for parameter in operation.get("parameters", []):
            fields.append((f"{method} {path} {parameter['name']}", parameter["schema"],
                           parameter.get("description", "")))
    for name, component in schema["components"]["schemas"].items():
        for key, field in component.get("properties", {}).items():
            fields.append((f"{name}.{key}", field, field.get("description", "")))
    return fields


def test_no_length_or_range_is_left_to_prose():
    """Issue 36 §4: a limit the server enforces is a keyword a client's code can check."""
    keywords = {"maxLength", "minLength", "pattern", "maximum", "minimum", "enum"}
    unsaid = []
    for where, field, description in _described_fields(_schema()):
        options = field.get("oneOf") or [field]
        said = any(keywords & set(option) for option in options if isinstance(option, dict))
        if _PROSE_RULE.search(description) and not said:
            unsaid.append(where)
    assert unsaid == []
    components = _schema()["components"]["schemas"]
    content = components["EntryCreateRequest"]["properties"]["content"]
    assert (content["minLength"], content["maxLength"]) == (1, 32000)
    text = re.compile(content["pattern"])
    assert text.search("a fact") and not text.search("  \n") and not text.search("a\x00b")
    source = components["EntryCreateRequest"]["properties"]["source"]
    assert source["maxLength"] == 128 and not re.search(source["pattern"], "a\nb")
    reason = components["SkillPutRequest"]["properties"]["reason"]
    assert "oneOf" not in reason and reason["minLength"] == 1
