"""Bad input to every write endpoint (T32, T23, T19, T21, T33).

The write endpoints are read from the OpenAPI schema, so a new endpoint is
covered as soon as it is documented. Every refusal is checked for its status,
the `{code, message, fields}` shape, and that no row of any memory or
governance table changed.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator

from memory import services
from memory.models import MemoryEntry
from tests.django_fixtures import ADMIN_TOKEN, bearer_client, stored_models
from tests.security.targets import project_with_everything

MIB = 1024 * 1024
ADMIN_OPERATIONS = frozenset(
    {"projects_create", "standards_imports_accept", "standards_imports_reject"}
)


def _write_operations() -> list[tuple[str, str, dict[str, Any]]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    found = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in {"post", "put", "patch", "delete"}:
                found.append((method, path, operation))
    return sorted(found, key=lambda row: row[2]["operationId"])


def takes_json(operation: dict[str, Any]) -> bool:
    return "application/json" in operation.get("requestBody", {}).get("content", {})


def takes_archive(operation: dict[str, Any]) -> bool:
    return "application/gzip" in operation.get("requestBody", {}).get("content", {})


def _properties(operation: dict[str, Any]) -> dict[str, Any]:
    if not takes_json(operation):
        return {}  # no body, or not JSON (POST .../checkout takes a tar.gz)
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        schema = SCHEMA["components"]["schemas"][name]
    return schema.get("properties", {})


SCHEMA = SchemaGenerator().get_schema(request=None, public=True)
WRITES = _write_operations()
WRITE_IDS = [operation["operationId"] for _, _, operation in WRITES]
STRING_FIELDS = [
    (method, path, operation, name)
    for method, path, operation in WRITES
    for name, prop in _properties(operation).items()
    if prop.get("type") == "string" and not prop.get("readOnly")
]
ALL_FIELDS = [
    (method, path, operation, name)
    for method, path, operation in WRITES
    for name, prop in _properties(operation).items()
    if not prop.get("readOnly")
]


ALL_FIELD_IDS = [f"{row[2]['operationId']}.{row[3]}" for row in ALL_FIELDS]
STRING_FIELD_IDS = [f"{row[2]['operationId']}.{row[3]}" for row in STRING_FIELDS]


def row_counts() -> dict[str, list[str]]:
    """Every row of every memory and governance table, so updates show too."""
    return {
        model._meta.label: sorted(repr(row) for row in model.objects.values())
        for model in stored_models()
    }


@pytest.fixture
def target(db: None) -> dict[str, Any]:
    """A project with a work item, entry, candidate and standards import to aim at."""
    token, params = project_with_everything("target", "Target")
    return {
        "token": token,
        "params": {**params, "import_id": str(params["import_id"]), "name": "SPEC.md"},
    }


def send(target: dict[str, Any], method: str, path: str, operation: dict[str, Any],
         body: bytes, content_type: str = "application/json", **headers: str) -> Any:
    url = path
    params = dict(target["params"])
    if operation["operationId"].startswith("task_artifact"):
        params["name"] = "BRIEF.md"
    elif operation["operationId"].startswith("skills"):
        params["name"] = "review"
    for name, value in params.items():
        url = url.replace("{" + name + "}", value)
    token = ADMIN_TOKEN if operation["operationId"] in ADMIN_OPERATIONS else target["token"]
    client = bearer_client(token)
    return getattr(client, method)(url, data=body, content_type=content_type, **headers)


def assert_refused(response: Any, status: int, code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.content[:500]
    body = response.json()
    assert set(body) <= {"code", "message", "fields"}
    assert isinstance(body["code"], str) and isinstance(body["message"], str)
    if code is not None:
        assert body["code"] == code
    for name, messages in body.get("fields", {}).items():
        assert isinstance(name, str)
        assert messages and all(isinstance(m, str) for m in messages)
    assert "Traceback" not in body["message"]
    return body


# --- whole-body abuse, every write endpoint ---------------------------------------------


BODIES = {
    "over-1-mib": (b'{"content": "' + b"a" * MIB + b'"}', 413, "payload_too_large"),
    "nested-10000": (b'{"content": ' + b"[" * 10_000 + b"]" * 10_000 + b"}", 400, "bad_request"),
    "nested-objects-10000": (b'{"a":' * 10_000 + b"1" + b"}" * 10_000, 400, "bad_request"),
    "invalid-utf8": (b'{"content": "\xff\xfe\xc3("}', 400, "bad_request"),
    "overlong-utf8": (b'{"content": "\xc0\xaf"}', 400, "bad_request"),
    "empty": (b"", 400, None),
    "whitespace": (b"  \n", 400, "bad_request"),
    "array": (b"[]", 400, None),
    "number": (b"1", 400, None),
    "null": (b"null", 400, None),
    "string": (b'"text"', 400, None),
    "nan": (b'{"content": NaN}', 400, "bad_request"),
    "truncated": (b'{"content": "x"', 400, "bad_request"),
    "trailing-garbage": (b'{"content": "x"} {}', 400, "bad_request"),
    "duplicate-keys": (b'{"content": "a", "content": "b"}', 400, "bad_request"),
    "nul-in-key": (b'{"con\\u0000tent": "x"}', 400, "validation_error"),
    "lone-surrogate-key": (b'{"\\ud800": "x"}', 400, "bad_request"),
    "unknown-field": (b'{"no_such_field": "x"}', 400, "validation_error"),
    "server-field": (b'{"seq": 7, "hash": "00"}', 400, "validation_error"),
}


@pytest.mark.parametrize("name", list(BODIES))
@pytest.mark.parametrize(("method", "path", "operation"), WRITES, ids=WRITE_IDS)
def test_every_write_refuses_a_bad_body(target, method, path, operation, name):
    body, status, code = BODIES[name]
    if name == "empty" and "requestBody" not in operation:
        pytest.skip("takes no body: an empty one is the valid request")
    if takes_archive(operation):
        # A JSON body is refused by its media type before it is read; an empty one
        # has none to refuse, and the archive reader refuses it.
        status, code = ((400, "invalid_archive") if name == "empty"
                        else (415, "unsupported_media_type"))
    before = row_counts()

    response = send(target, method, path, operation, body)

    assert_refused(response, status, code)
    assert row_counts() == before


ARCHIVE_WRITES = [row for row in WRITES if takes_archive(row[2])]


@pytest.mark.parametrize("name", list(BODIES))
@pytest.mark.parametrize(("method", "path", "operation"), ARCHIVE_WRITES,
                         ids=[row[2]["operationId"] for row in ARCHIVE_WRITES])
def test_every_archive_write_refuses_a_bad_body_as_an_archive(target, method, path,
                                                              operation, name):
    body, _, _ = BODIES[name]
    before = row_counts()

    response = send(target, method, path, operation, body, "application/gzip")

    assert_refused(response, 400, "invalid_archive")
    assert row_counts() == before


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
     "application/xml", "application/json-patch+json"],
)
@pytest.mark.parametrize(("method", "path", "operation"), WRITES, ids=WRITE_IDS)
def test_every_write_refuses_a_non_json_body(target, method, path, operation, content_type):
    before = row_counts()

    response = send(target, method, path, operation, b'{"content": "x"}', content_type)

    assert_refused(response, 415, "unsupported_media_type")
    assert row_counts() == before


# --- field-level abuse, every field of every write endpoint ------------------------------


WRONG_TYPES = {"number": 7, "float": 1.5, "list": ["x"], "object": {"x": 1}, "bool": True}


@pytest.mark.parametrize("kind", list(WRONG_TYPES))
@pytest.mark.parametrize(("method", "path", "operation", "field"), ALL_FIELDS, ids=ALL_FIELD_IDS)
def test_every_field_refuses_a_wrong_type(target, method, path, operation, field, kind):
    declared = _properties(operation)[field]
    value = WRONG_TYPES[kind]
    if _type_fits(declared, value):
        pytest.skip(f"{kind} is a valid {field}")
    before = row_counts()

    response = send(target, method, path, operation, json.dumps({field: value}).encode())

    body = assert_refused(response, 400, "validation_error")
    assert field in body["fields"]
    assert row_counts() == before


def _type_fits(declared: dict[str, Any], value: Any) -> bool:
    options = declared.get("oneOf") or declared.get("allOf") or [declared]
    for option in options:
        if "$ref" in option:
            option = SCHEMA["components"]["schemas"][option["$ref"].rsplit("/", 1)[1]]
        kind = option.get("type")
        if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if kind == "boolean" and isinstance(value, bool):
            return True
        if kind == "array" and isinstance(value, list):
            return True
        if kind == "object" and isinstance(value, dict):
            return True
        if kind is None and "enum" not in option:
            return True  # no declared type: anything may be valid
    return False


STRING_ABUSE = {
    "one-megabyte-line": "a" * 1_000_000,
    "nul": "a\x00b",
    "lone-surrogate": "\ud800",
}
# Otherwise valid bodies, so that the abused field is the only thing wrong.
VALID = {
    "documents_put": {"content": "# Context\n\nThe billing service owns invoices.\n"},
    "skills_put": {
        "content": "---\nname: review\ndescription: Review code\n---\n\n# Review\n\nCheck.\n",
        "reason": "first version",
    },
    "standards_imports_create": {"path": "AGENTS.md", "content": "# Rules\n\nTest first.\n"},
}
# Work files, task artifacts and standards sources are whole files whose only
# size bound is the 1 MiB body (FileWriteSerializer allows 1,000,000
# characters on purpose): a 1 MB line is data there, not abuse.
LARGE_BY_DESIGN = {
    ("work_file_put", "content"),
    ("task_artifact_put", "content"),
    ("standards_imports_create", "content"),
}


@pytest.mark.parametrize("kind", list(STRING_ABUSE))
@pytest.mark.parametrize(
    ("method", "path", "operation", "field"), STRING_FIELDS, ids=STRING_FIELD_IDS
)
def test_every_string_field_refuses_abuse(target, method, path, operation, field, kind):
    op = operation["operationId"]
    if kind == "one-megabyte-line" and (op, field) in LARGE_BY_DESIGN:
        pytest.skip("a whole file, bounded only by the 1 MiB body")
    # json.dumps escapes NUL and the lone surrogate as \u0000 and \ud800.
    body = json.dumps({**VALID.get(op, {}), field: STRING_ABUSE[kind]}).encode()
    before = row_counts()

    response = send(target, method, path, operation, body)

    refused = assert_refused(response, 400, "validation_error")
    assert field in refused["fields"]
    assert row_counts() == before


def test_a_memory_entry_of_exactly_32000_bytes_is_accepted_and_one_more_is_not(target):
    method, path, operation = next(w for w in WRITES if w[2]["operationId"] == "memory_append")
    content = "é" * 15_999 + "ab"  # 31,998 + 2 bytes
    ok = send(target, method, path, operation,
              json.dumps({"category": "note", "content": content}).encode())
    before = row_counts()
    refused = send(target, method, path, operation,
                   json.dumps({"category": "note", "content": content + "c"}).encode())

    assert ok.status_code == 201
    assert assert_refused(refused, 400, "validation_error")["fields"].keys() == {"content"}
    assert row_counts() == before


# --- Idempotency-Key abuse (T21, T23) -------------------------------------------------------


def _append(target: dict[str, Any], body: dict[str, Any], token: str | None = None,
            **headers: str) -> Any:
    client = bearer_client(token or target["token"])
    return client.post("/v1/projects/target/memory", data=json.dumps(body),
                       content_type="application/json", **headers)


ENTRY = {"category": "decision", "content": "use postgres"}


def test_an_unauthenticated_attempt_does_not_use_up_its_key(target):
    refused = _append(target, {**ENTRY, "content": "forged"}, token="gwp_wrong-token-0000",
                      HTTP_IDEMPOTENCY_KEY="k-401")
    accepted = _append(target, ENTRY, HTTP_IDEMPOTENCY_KEY="k-401")
    replayed = _append(target, ENTRY, HTTP_IDEMPOTENCY_KEY="k-401")

    assert_refused(refused, 401, "unauthenticated")
    assert accepted.status_code == 201 and "Idempotent-Replayed" not in accepted
    assert replayed.status_code == 201 and replayed["Idempotent-Replayed"] == "true"
    assert MemoryEntry.objects.filter(
        idempotency_key=services.idempotency_key_digest("k-401")).count() == 1


@pytest.mark.parametrize("key", ["'; DROP TABLE memory_memoryentry; --", "%", "_", "\\", '"'])
def test_a_key_with_sql_metacharacters_is_only_a_key(target, key):
    first = _append(target, ENTRY, HTTP_IDEMPOTENCY_KEY=key)
    other = _append(target, ENTRY, HTTP_IDEMPOTENCY_KEY=key + "x")

    assert first.status_code == other.status_code == 201
    assert first.json()["id"] != other.json()["id"]
    assert MemoryEntry.objects.get(
        idempotency_key=services.idempotency_key_digest(key)).content == "use postgres"


def test_a_malformed_key_on_a_malformed_body_writes_nothing(target):
    before = row_counts()

    response = _append(target, {"content": 7}, HTTP_IDEMPOTENCY_KEY="\x07")

    assert_refused(response, 400, "validation_error")
    assert row_counts() == before


# --- Unicode tricks are stored exactly as sent (T33) ----------------------------------------

TRICKS = {
    "bidi-override": "pay \u202eevil\u202c now",
    "zero-width": "a\u200bb\u200cc\u200dd\ufeffe\u2060f",
    "crlf": "line one\r\nline two\r\n",
    "lone-cr": "line one\rline two",
    "nfc": unicodedata.normalize("NFC", "caf\u00e9 \u00c5ngstr\u00f6m"),
    "nfd": unicodedata.normalize("NFD", "caf\u00e9 \u00c5ngstr\u00f6m"),
    "astral": "\U0001f600 \U0001d54f",
    "tag-chars": "hi\U000e0041\U000e0042",
}


@pytest.mark.parametrize("name", list(TRICKS))
def test_unicode_content_round_trips_byte_for_byte(target, name):
    content = TRICKS[name]
    # ensure_ascii=False: the raw UTF-8 bytes go over the wire, not escapes.
    raw = json.dumps({"category": "note", "content": content}, ensure_ascii=False).encode()
    client = bearer_client(target["token"])

    created = client.post("/v1/projects/target/memory", data=raw,
                          content_type="application/json")
    fetched = client.get(f"/v1/projects/target/memory/{created.json()['id']}")

    assert created.status_code == 201
    assert fetched.json()["content"].encode() == content.encode()
    assert MemoryEntry.objects.get(uuid=created.json()["id"]).content.encode() == content.encode()
    verify = client.get("/v1/projects/target/memory/verify").json()
    assert verify["ok"] is True


def test_nfc_and_nfd_spellings_are_different_entries_with_different_hashes(target):
    nfc = _append(target, {"category": "note", "content": TRICKS["nfc"]},
                  HTTP_IDEMPOTENCY_KEY="same")
    nfd = _append(target, {"category": "note", "content": TRICKS["nfd"]},
                  HTTP_IDEMPOTENCY_KEY="same")

    # The key fingerprint compares raw text too: NFD is another body.
    assert nfc.status_code == 201
    assert_refused(nfd, 422, "idempotency_key_reused")
    plain = _append(target, {"category": "note", "content": TRICKS["nfd"]})
    assert plain.json()["hash"] != nfc.json()["hash"]
    assert plain.json()["content"] != nfc.json()["content"]


# --- pathological Markdown on the team pages (T38) -------------------------------------------

def _fill(unit: str, size: int = 32_000) -> str:
    return (unit * (size // len(unit) + 1))[:size]


PATHOLOGICAL = {
    # Each was measured before the guard: RecursionError or many seconds.
    "nested-lists": "".join("  " * i + "- x\n" for i in range(200)) + "- " * 10_000 + "x",
    "nested-quotes": ">" * 10_000 + " x <script>alert(1)</script>",
    "backticks": "`" * 100_000,
    "brackets": "[" * 8_000 + "<b>x</b>" + "]" * 8_000,
    "links": "[a](" * 8_000,
    "tags": "<a " * 8_000,
    "huge-table": "|" + "a|" * 200 + "\n|" + "-|" * 200 + "\n"
    + ("|" + "<i>x</i>|" * 200 + "\n") * 60,
    # 32,000 characters each, an entry's limit; Python-Markdown took 1.5-7.5 s
    # on each (issue 34), cmark-gfm a few milliseconds.
    "code-spans": _fill("``a`"),
    "rules": _fill("***\n"),
    "setext": _fill("a\n=\n"),
    "headings": _fill("# a\n"),
    "emphasis": _fill("*_"),
    "images": _fill("!["),
    # Raw HTML nested deeper than the sanitiser's parser handles in linear time.
    "raw-quotes": _fill("<blockquote>"),
    "raw-lists": _fill("<ul><li>"),
}
# The fixed markup the renderer puts around nh3's output or around escaped text.
FIXED_TAGS = {"div", "pre"}


@pytest.mark.parametrize("name", list(PATHOLOGICAL))
def test_pathological_markdown_renders_bounded_and_sanitised(name):
    import re
    import signal

    from memory.templatetags.gedweb_markdown import ALLOWED_TAGS, render_markdown

    def hang(*_: Any) -> None:
        raise TimeoutError("render did not finish in 10 s")

    # A hard stop for a hang, not a latency target (that is bench/markdown_pages.py's).
    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(10)
    try:
        html = str(render_markdown(PATHOLOGICAL[name]))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)

    assert "<script" not in html
    assert set(re.findall(r"<([A-Za-z][A-Za-z0-9]*)", html)) <= ALLOWED_TAGS | FIXED_TAGS


@pytest.mark.parametrize("name", ["nested-lists", "nested-quotes", "raw-quotes", "raw-lists"])
def test_text_nested_too_deep_is_shown_escaped_as_written(name):
    from django.utils.html import escape

    from memory.templatetags.gedweb_markdown import render_markdown

    html = str(render_markdown(PATHOLOGICAL[name]))

    assert html == f'<pre class="raw-text">{escape(PATHOLOGICAL[name])}</pre>'


def test_an_entry_page_with_pathological_markdown_answers_with_the_text_escaped(
    target, django_user_model
):
    from django.test import Client

    content = ">" * 10_000 + " <script>alert(1)</script>"
    entry = services.memory_entry_create(
        project=MemoryEntry.objects.first().project, author="cli", category="note",
        content=content,
    ).entry
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("root", "r@example.org", "pw"))

    response = client.get(f"/p/target/memory/{entry.uuid}")

    assert response.status_code == 200
    page = response.content.decode()
    assert "&gt;" * 100 in page
    assert "<script>alert(1)</script>" not in page


# --- query strings ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    ["after=", "limit=", "order=", "category=", "limit=1&limit=2", "view=current&view=all"],
)
def test_an_empty_or_repeated_query_parameter_is_refused(target, query):
    client = bearer_client(target["token"])

    response = client.get(f"/v1/projects/target/memory?{query}")

    body = assert_refused(response, 400, "validation_error")
    assert query.split("=")[0] in body["fields"]


# --- through a real gunicorn: what only a real server can send ---------------------------------

def _raw_post(server: Any, path: str, body: bytes, headers: list[tuple[str, str]],
              chunked: bool = False) -> tuple[int, Any]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.putrequest("POST", path)
        conn.putheader("Authorization", f"Bearer {server.project_token}")
        conn.putheader("X-Memory-Token", server.memory_token)
        conn.putheader("Content-Type", "application/json")
        for name, value in headers:
            conn.putheader(name, value)
        if chunked:
            conn.putheader("Transfer-Encoding", "chunked")
            conn.endheaders()
            try:
                for start in range(0, len(body), 65536):
                    piece = body[start:start + 65536]
                    conn.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                conn.send(b"0\r\n\r\n")
            except BrokenPipeError:
                # The server answered before the body ended and stopped reading
                # (a refusal needs no more of it): its answer is still to be read.
                pass
        else:
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
        response = conn.getresponse()
        payload = response.read()
        return response.status, json.loads(payload) if payload else None
    finally:
        conn.close()


@pytest.mark.live_server
def test_duplicate_idempotency_key_headers_act_as_one_key_and_never_double(gedweb_server):
    # WSGI servers fold repeated headers into one comma-joined value, which
    # cannot be told apart from a key that holds a comma (a valid printable
    # key): the pair is one key, replayed consistently, never two entries.
    path = f"/v1/projects/{gedweb_server.project}/memory"
    body = json.dumps({"category": "note", "content": "duplicate header probe"}).encode()
    pair = [("Idempotency-Key", "dup-key"), ("Idempotency-Key", "dup-key")]
    before = len(gedweb_server.entries())

    first = _raw_post(gedweb_server, path, body, pair)
    again = _raw_post(gedweb_server, path, body, pair)

    assert first[0] == again[0] == 201
    assert first[1]["id"] == again[1]["id"]
    assert len(gedweb_server.entries()) == before + 1


def test_a_chunked_body_over_one_mebibyte_is_refused_and_writes_nothing(gedweb_server):
    path = f"/v1/projects/{gedweb_server.project}/memory"
    body = b'{"category": "note", "content": "' + b"a" * (2 * MIB) + b'"}'
    before = len(gedweb_server.entries())

    status, refused = _raw_post(gedweb_server, path, body, [], chunked=True)

    # Django reads a body without Content-Length as empty, so a chunked
    # upload never reaches the parser at all: refused as an empty body.
    assert status == 400 and refused["code"] in {"bad_request", "validation_error"}
    assert set(refused) <= {"code", "message", "fields"}
    assert len(gedweb_server.entries()) == before
