"""Cross-project access (BOLA), mass assignment and token storage (catalogue T27-T30).

Two real projects, A (alpha) and B (beta), built once per module through the
services (tests/security/authz_matrix.py ``build_world``); every test runs in
a savepoint and is rolled back. Requests go to A's routes with A's tokens
(and the admin token); B's ids, words, filters and cursors must never reach
B's data, and must answer exactly as ids that do not exist.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from gedweb.checkout.archive import read_all
from gedweb.checkout.sync import LIMITS
from memory import services
from memory.models import MemoryEntry, ProjectToken
from tests.django_fixtures import ADMIN_TOKEN, MEMORY_WRITE_TOKEN
from tests.security import authz_matrix as m

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def world(django_db_setup: None, django_db_blocker: Any,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[m.World]:
    yield from m.world_in_rollback(django_db_blocker, tmp_path_factory.mktemp("bola"))


@pytest.fixture
def api(world: m.World, db: None, memory_write_token: str) -> Any:
    """request(principal, method, url, body=None): a matrix principal or "admin+memory"."""

    def request(principal: str, method: str, url: str, body: Any = None) -> Any:
        data = json.dumps(body) if body is not None else ""
        if principal == "admin+memory":
            headers = {**m.credentials(world, "admin"), **m.memory_header()}
        else:
            headers = m.credentials(world, principal)
        return APIClient().generic(method, url, data, content_type="application/json",
                                   **headers)

    return request


def missing_work_id(work_id: str) -> str:
    """A well-formed work id that names nothing: same shape, other hash."""
    return work_id[:-32] + "0" * 32


def normalised(response: Any, *ids: str) -> tuple[int, str]:
    text = response.content.decode()
    # Longest first: a short id (a seq such as "4") must not cut into a
    # longer one (a work id with a timestamp) before that one is replaced.
    for value in sorted(ids, key=len, reverse=True):
        text = text.replace(value, "<id>")
    return response.status_code, text


# --- T27: another project's ids answer like ids that do not exist -------------------------------


def foreign_and_missing(world: m.World) -> list[tuple[str, str, str, str, Any]]:
    """(name, method, url with B's id, url with a missing id, body) for every detail route."""
    a, b = world.ids, world.b_ids
    bw, mw = b["work"], missing_work_id(b["work"])
    bm, mm = b["mutating"], missing_work_id(b["mutating"])
    bc, mc = b["committing"], missing_work_id(b["committing"])
    p = "/v1/projects/alpha"
    missing_uuid = str(uuid.uuid4())
    rev = {"expected_revision": 0}
    evidence = {**rev, "evidence": m._evidence("inspection", "observed")}
    rows: list[tuple[str, str, str, str, Any]] = [
        ("entry by seq", "GET", f"{p}/memory/{b['last_seq']}", f"{p}/memory/999999", None),
        ("entry by uuid", "GET", f"{p}/memory/{b['uuid']}", f"{p}/memory/{missing_uuid}", None),
        ("candidate approve", "POST", f"{p}/memory/candidates/{b['candidate']}/approve",
         f"{p}/memory/candidates/{missing_uuid}/approve", None),
        ("candidate reject", "POST", f"{p}/memory/candidates/{b['candidate']}/reject",
         f"{p}/memory/candidates/{missing_uuid}/reject", None),
        ("document", "GET", f"{p}/documents/{b['document']}", f"{p}/documents/adr/0002-none.md",
         None),
        ("document revisions", "GET", f"{p}/documents/{b['document']}/revisions",
         f"{p}/documents/adr/0002-none.md/revisions", None),
        ("skill", "GET", f"{p}/skills/{b['skill']}", f"{p}/skills/no-such-skill", None),
        ("standards import", "GET", f"{p}/standards/imports/{b['pending_import']}",
         f"{p}/standards/imports/si_{'A' * 22}", None),
        ("active work get", "GET", f"{p}/sessions/{b['session']}/active-work",
         f"{p}/sessions/sess-none/active-work", None),
        ("active work delete", "DELETE", f"{p}/sessions/{b['session']}/active-work",
         f"{p}/sessions/sess-none/active-work", None),
        ("work", "GET", f"{p}/work/{bw}", f"{p}/work/{mw}", None),
        ("governance", "GET", f"{p}/work/{bw}/governance", f"{p}/work/{mw}/governance", None),
        ("state.md", "GET", f"{p}/work/{bw}/governance/state.md",
         f"{p}/work/{mw}/governance/state.md", None),
        ("revisions", "GET", f"{p}/work/{bw}/governance/revisions",
         f"{p}/work/{mw}/governance/revisions", None),
        ("revision 0", "GET", f"{p}/work/{bw}/governance/revisions/0",
         f"{p}/work/{mw}/governance/revisions/0", None),
        ("work file", "GET", f"{p}/work/{bw}/files/DIRECT.md", f"{p}/work/{mw}/files/DIRECT.md",
         None),
        ("work file put", "PUT", f"{p}/work/{bw}/files/DIRECT.md",
         f"{p}/work/{mw}/files/DIRECT.md", {"content": "x"}),
        ("task artifact", "GET", f"{p}/work/{bw}/tasks/tb1/BRIEF.md",
         f"{p}/work/{mw}/tasks/tb1/BRIEF.md", None),
        ("task artifact put", "PUT", f"{p}/work/{bw}/tasks/tb1/BRIEF.md",
         f"{p}/work/{mw}/tasks/tb1/BRIEF.md", {"content": "x"}),
        ("evidence", "POST", f"{p}/work/{bw}/governance/evidence",
         f"{p}/work/{mw}/governance/evidence", evidence),
        ("guard", "POST", f"{p}/work/{bw}/governance/guard", f"{p}/work/{mw}/governance/guard",
         {"action": "commit"}),
        ("lifecycle", "POST", f"{p}/work/{bw}/governance/lifecycle",
         f"{p}/work/{mw}/governance/lifecycle",
         {**rev, "action": "pause", "reason": "x", "expected_lifecycle": "active"}),
        ("B's mutation under B's work", "POST",
         f"{p}/work/{bm}/governance/mutations/mut-b/clear",
         f"{p}/work/{mm}/governance/mutations/mut-b/clear", {"expected_revision": 1}),
        ("B's commit under B's work", "POST", f"{p}/work/{bc}/governance/commits/commit-b/clear",
         f"{p}/work/{mc}/governance/commits/commit-b/clear", {"expected_revision": 2}),
        # B's pending ids under A's own work items: like a pending id A never had.
        ("B's mutation id under A's work", "POST",
         f"{p}/work/{a['mutating']}/governance/mutations/mut-b/clear",
         f"{p}/work/{a['mutating']}/governance/mutations/mut-none/clear",
         {"expected_revision": a["rev_mutating"]}),
        ("B's commit id under A's work", "POST",
         f"{p}/work/{a['committing']}/governance/commits/commit-b/clear",
         f"{p}/work/{a['committing']}/governance/commits/commit-none/clear",
         {"expected_revision": a["rev_committing"]}),
        # B's ids inside A's request bodies and queries.
        ("correction of B's entry (uuid)", "POST", f"{p}/memory", f"{p}/memory",
         {"category": "decision", "content": "x", "corrects": str(b["uuid"])}),
        ("correction of B's entry (seq)", "POST", f"{p}/memory", f"{p}/memory",
         {"category": "decision", "content": "x", "corrects": b["last_seq"]}),
        ("active work on B's work", "PUT", f"{p}/sessions/sess-x/active-work",
         f"{p}/sessions/sess-x/active-work",
         {"work_id": bw, "operation": "open", "request_id": "r"}),
        ("handoff for B's work", "PUT", f"{p}/documents/handoff/{bw}.md",
         f"{p}/documents/handoff/{mw}.md", {"content": "# Handoff\n\nNext: finish the work.\n"}),
        ("context for B's work", "GET", f"{p}/context?work_id={bw}", f"{p}/context?work_id={mw}",
         None),
    ]
    # The second body of the two correction rows names a missing entry instead.
    return rows


def _missing_body(name: str, body: Any) -> Any:
    if name == "correction of B's entry (uuid)":
        return {**body, "corrects": str(uuid.uuid4())}
    if name == "correction of B's entry (seq)":
        return {**body, "corrects": 999999}
    if name == "active work on B's work":
        return {**body, "work_id": missing_work_id(body["work_id"])}
    return body


FOREIGN_NAMES = [
    "entry by seq", "entry by uuid", "candidate approve", "candidate reject", "document",
    "document revisions", "skill", "standards import", "active work get", "active work delete",
    "work", "governance", "state.md", "revisions", "revision 0", "work file", "work file put",
    "task artifact", "task artifact put", "evidence", "guard", "lifecycle",
    "B's mutation under B's work", "B's commit under B's work",
    "B's mutation id under A's work", "B's commit id under A's work",
    "correction of B's entry (uuid)", "correction of B's entry (seq)",
    "active work on B's work", "handoff for B's work", "context for B's work",
]


@pytest.mark.parametrize("principal", ["memory", "admin+memory"])
@pytest.mark.parametrize("name", FOREIGN_NAMES)
def test_bs_ids_under_as_routes_answer_exactly_like_missing_ids(world, api, name, principal):
    rows = {row[0]: row for row in foreign_and_missing(world)}
    _, method, foreign_url, missing_url, body = rows[name]
    before = m.snapshot()

    foreign = api(principal, method, foreign_url, body)
    missing = api(principal, method, missing_url, _missing_body(name, body))

    assert foreign.status_code in (400, 404, 422), foreign.content
    ids = [str(v) for v in (*world.b_ids["works"], world.b_ids["uuid"], world.b_ids["last_seq"],
                            missing_work_id(world.b_ids["work"]), "mut-b", "mut-none",
                            "commit-b", "commit-none")]
    bodies = [body, _missing_body(name, body)]
    for value in bodies:
        if isinstance(value, dict) and "corrects" in value:
            ids.append(str(value["corrects"]))
    assert normalised(foreign, *ids) == normalised(missing, *ids)
    assert m.changed(before, m.snapshot()) == set()


def test_the_list_of_foreign_cases_is_complete(world):
    assert [row[0] for row in foreign_and_missing(world)] == FOREIGN_NAMES


def test_the_admin_decides_only_imports_of_the_project_in_the_path(world, api):
    b = world.b_ids
    before = m.snapshot()
    for action in ("accept", "reject"):
        foreign = api("admin", "POST",
                      f"/v1/projects/alpha/standards/imports/{b['pending_import']}/{action}",
                      {"sha256": b["pending_sha256"]})
        absent = "si_" + "A" * 22
        missing = api("admin", "POST", f"/v1/projects/alpha/standards/imports/{absent}/{action}",
                      {"sha256": b["pending_sha256"]})
        assert foreign.status_code == missing.status_code == 404
        assert foreign.json() == missing.json()
    assert m.changed(before, m.snapshot()) == set()


# --- T28: lists, searches, filters, exports and cursors of A never show B ------------------------


def b_fingerprints(world: m.World) -> list[str]:
    b = world.b_ids
    return [*m.B_MARKERS, *b["entry_uuids"], *b["works"], str(b["candidate"]), b["skill"],
            b["document"], b["session"], "mut-b", "commit-b", "agent-beta"]


def a_read_urls(world: m.World) -> list[str]:
    p = "/v1/projects/alpha"
    searches = [
        f"{p}/memory?q=zanzibar", f"{p}/memory?q=plans", f"{p}/memory?category=zanzibar",
        f"{p}/memory?source=zanzibar-lab", f"{p}/memory?order=desc&limit=500",
        f"{p}/memory?view=current", f"{p}/memory/candidates?status=pending",
        f"{p}/documents?prefix=adr/", f"{p}/skills/match?text=narwhal",
        f"{p}/skills/match?text=flaky+narwhal", f"{p}/standards/imports?path=GEMINI.md",
        f"{p}/context?format=json", f"{p}/work?limit=500",
    ]
    rows = [row.url.format(**world.ids) for row in m.API
            if row.method == "GET" and row.expect == m.READ]
    return rows + searches


@pytest.mark.parametrize("principal", ["project", "admin"])
def test_no_read_of_a_ever_contains_bs_data(world, api, principal):
    fingerprints = b_fingerprints(world)
    for url in a_read_urls(world):
        response = api(principal, "GET", url)
        assert response.status_code in (200, 404), (url, response.content[:300])
        body = m.response_bytes(response)  # a documents zip: its members' bytes
        if response.status_code == 200 and response["Content-Type"] == "application/gzip":
            # The checkout download: every file of the archive is read, A's files only.
            files = read_all(body, LIMITS, lambda name, is_dir: True)
            body = b"\n".join(files.values())
        text = body.decode()
        leaked = [value for value in fingerprints if value in text]
        assert leaked == [], (url, leaked)


@pytest.mark.parametrize(("url", "key"), [
    ("/v1/projects/alpha/memory?q=zanzibar", "items"),
    ("/v1/projects/alpha/memory?category=zanzibar", "items"),
    ("/v1/projects/alpha/memory?source=zanzibar-lab", "items"),
    ("/v1/projects/alpha/documents?prefix=adr/0002", "items"),
    ("/v1/projects/alpha/skills/match?text=narwhal", "items"),
    ("/v1/projects/alpha/standards/imports?path=GEMINI.md", "items"),
])
def test_searches_and_filters_for_b_only_words_find_nothing_in_a(world, api, url, key):
    response = api("memory", "GET", url)
    assert response.status_code == 200
    assert response.json()[key] == []


def test_naming_b_in_a_query_parameter_is_refused_and_shows_nothing(world, api):
    for url in ("/v1/projects/alpha/memory?project=beta",
                "/v1/projects/alpha/memory?project_id=beta",
                "/v1/projects/alpha/work?project=beta"):
        response = api("admin", "GET", url)
        assert response.status_code == 400, url
        assert response.json()["fields"].keys() <= {"project", "project_id"}
        assert "zanzibar" not in response.content.decode()


def test_verify_and_the_mirror_of_a_count_only_as_entries(world, api):
    count = MemoryEntry.objects.filter(project_id="alpha").count()
    assert api("project", "GET", "/v1/projects/alpha/memory/verify").json()["entries"] == count
    mirror = b"".join(api("project", "GET", "/v1/projects/alpha/memory.md").streaming_content)
    assert mirror.decode().count("\n## ") == count


@pytest.mark.parametrize(("listing", "param"), [
    ("memory?limit=2", "after"),
    ("memory?limit=2&order=desc", "before"),
    ("memory/candidates?limit=1", "after"),
    ("work?limit=1", "after"),
])
def test_a_cursor_taken_from_bs_listing_is_only_a_position_in_a(world, api, listing, param):
    b_page = APIClient().get(f"/v1/projects/beta/{listing}",
                             **m.bearer(world.tokens["b"]))
    cursor = b_page.json()["next_cursor"]
    assert cursor is not None
    response = api("project", "GET", f"/v1/projects/alpha/{listing}&{param}={cursor}")
    assert response.status_code == 200
    text = response.content.decode()
    assert [value for value in b_fingerprints(world) if value in text] == []
    if listing.startswith("memory?"):
        seqs = [item["seq"] for item in response.json()["items"]]
        assert all(item["project_id"] == "alpha" for item in response.json()["items"])
        assert all((s > cursor) if param == "after" else (s < cursor) for s in seqs)


@pytest.mark.parametrize("content", ["zanzibar keyed", "a different body"])
def test_an_idempotency_key_b_used_is_a_fresh_key_for_a(world, api, content):
    """Keys are per token: B's key neither replays B's entry nor reveals that B used it."""
    before = MemoryEntry.objects.filter(project_id="beta").count()
    response = APIClient().post(
        "/v1/projects/alpha/memory", {"category": "zanzibar", "content": content},
        format="json", HTTP_IDEMPOTENCY_KEY="shared-key",
        **m.credentials(world, "memory"),
    )
    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response
    assert response.json()["project_id"] == "alpha"
    assert response.json()["id"] not in world.b_ids["entry_uuids"]
    assert MemoryEntry.objects.filter(project_id="beta").count() == before


@pytest.mark.parametrize("principal", ["viewer", "superuser"])
def test_bs_objects_under_as_pages_answer_like_missing_ones(world, db, principal):
    b, p = world.b_ids, "/p/alpha"
    pairs = [
        (f"{p}/memory/{b['last_seq']}", f"{p}/memory/999999"),
        (f"{p}/memory/{b['uuid']}", f"{p}/memory/{uuid.uuid4()}"),
        (f"{p}/documents/{b['document']}", f"{p}/documents/adr/0002-none.md"),
        (f"{p}/work/{b['work']}/", f"{p}/work/{missing_work_id(b['work'])}/"),
        (f"{p}/work/{b['work']}/revisions/0", f"{p}/work/{missing_work_id(b['work'])}/revisions/0"),
        (f"{p}/standards/{b['pending_import']}", f"{p}/standards/si_{'A' * 22}"),
        (f"{p}/skills/{b['skill']}", f"{p}/skills/no-such-skill"),
    ]
    client = Client()
    client.force_login(world.users[principal])
    for foreign_url, missing_url in pairs:
        foreign, missing = client.get(foreign_url), client.get(missing_url)
        assert foreign.status_code == missing.status_code == 404, foreign_url
        assert strip_csrf(foreign.content) == strip_csrf(missing.content), foreign_url


def strip_csrf(body: bytes) -> str:
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", body.decode())


# --- T29: mass assignment ------------------------------------------------------------------------

SERVER_FIELDS = {
    "project_id": "beta", "id": str(uuid.uuid4()), "seq": 1, "prev_hash": "0" * 64,
    "hash": "f" * 64, "created_at": "2020-01-01T00:00:00.000000+00:00", "author": "admin",
    "approved": True, "corrected_by": [], "status": "approved",
}


@pytest.mark.parametrize("field", list(SERVER_FIELDS))
@pytest.mark.parametrize(("route", "body"), [
    ("memory", {"category": "decision", "content": "mass assignment"}),
    ("memory/candidates", {"category": "idea", "content": "mass assignment"}),
])
def test_server_fields_in_a_memory_write_are_refused(world, api, route, body, field):
    before = m.snapshot()
    response = api("memory", "POST", f"/v1/projects/alpha/{route}",
                   {**body, field: SERVER_FIELDS[field]})
    assert response.status_code == 400
    assert response.json()["code"] == "validation_error"
    assert field in response.json()["fields"]
    assert m.changed(before, m.snapshot()) == set()


@pytest.mark.parametrize(("method", "url", "body", "extra"), [
    ("POST", "/v1/projects", {"id": "gamma", "name": "Gamma"},
     {"created_at": "2020-01-01T00:00:00+00:00"}),
    ("POST", "/v1/projects", {"id": "gamma", "name": "Gamma"}, {"token_hash": "0" * 64}),
    ("POST", "/v1/projects/alpha/work", None, {"work_id": "x-20200101000000000-" + "0" * 32}),
    ("POST", "/v1/projects/alpha/work", None, {"author": "admin"}),
    ("POST", "/v1/projects/alpha/standards/imports",
     {"path": "GEMINI.md", "content": "Use tabs.\n"}, {"status": "accepted"}),
    ("POST", "/v1/projects/alpha/standards/imports",
     {"path": "GEMINI.md", "content": "Use tabs.\n"}, {"sha256": "0" * 64}),
    ("PUT", "/v1/projects/alpha/skills/matrix-skill", None, {"recorded_hash": "0" * 64}),
    ("PUT", "/v1/projects/alpha/skills/matrix-skill", None, {"status": "verified"}),
    ("PUT", "/v1/projects/alpha/documents/adr/0002-matrix.md", None, {"author": "admin"}),
    ("PUT", "/v1/projects/alpha/documents/adr/0002-matrix.md", None, {"revision": 7}),
    ("PUT", "/v1/projects/alpha/work/{work}/files/DIRECT.md", None, {"version": 9}),
    ("POST", "/v1/projects/alpha/work/{work}/governance/evidence", None, {"revision": 99}),
])
def test_server_fields_in_other_writes_are_refused(world, api, method, url, body, extra):
    defaults = {
        "/v1/projects/alpha/work": "work", "/v1/projects/alpha/skills/matrix-skill": "skill",
        "/v1/projects/alpha/documents/adr/0002-matrix.md": "document",
        "/v1/projects/alpha/work/{work}/files/DIRECT.md": "file",
        "/v1/projects/alpha/work/{work}/governance/evidence": "evidence",
    }
    body = body if body is not None else world.bodies[defaults[url]]
    before = m.snapshot()
    response = api("admin", method, url.format(**world.ids), {**body, **extra})
    assert response.status_code == 400, response.content
    assert set(response.json()["fields"]) == set(extra)
    assert m.changed(before, m.snapshot()) == set()


@pytest.mark.parametrize("change", [
    {"revision": 99}, {"workId": "other"}, {"evidence": []}, {"lifecycle": "completed"},
    {"pendingMutations": []}, {"createdAt": "2020-01-01T00:00:00.000Z"},
])
def test_governance_update_cannot_set_server_controlled_fields(world, api, change):
    before = m.snapshot()
    response = api("memory", "POST",
                   f"/v1/projects/alpha/work/{world.ids['work']}/governance/update",
                   {"expected_revision": world.ids["rev_work"], "changes": change})
    assert response.status_code in (400, 422), response.content
    assert m.changed(before, m.snapshot()) == set()


def test_an_accepted_write_carries_only_server_computed_values(world, api):
    response = api("memory", "POST", "/v1/projects/alpha/memory",
                   {"category": "decision", "content": "server values"})
    assert response.status_code == 201
    body = response.json()
    last = MemoryEntry.objects.filter(project_id="alpha").order_by("-seq")[1]
    assert body["project_id"] == "alpha" and body["author"] == "default"
    assert body["seq"] == last.seq + 1 and body["prev_hash"] == last.hash


# --- T30: token storage ------------------------------------------------------------------------


def raw_secrets(world: m.World) -> list[str]:
    return [world.tokens["a"], world.tokens["b"], world.tokens["revoked"], ADMIN_TOKEN,
            MEMORY_WRITE_TOKEN]


def test_project_tokens_are_stored_only_as_sha256_and_a_prefix(world, db):
    fields = {f.name for f in ProjectToken._meta.concrete_fields}
    assert fields == {"id", "project", "name", "token_hash", "prefix", "created_at",
                      "revoked_at"}
    for name, raw in (("a", world.tokens["a"]), ("b", world.tokens["b"]),
                      ("revoked", world.tokens["revoked"])):
        row = ProjectToken.objects.get(token_hash=hashlib.sha256(raw.encode()).hexdigest())
        assert raw.startswith("gwp_") and len(raw) >= 40, name
        assert row.prefix == raw[:8]


def test_no_raw_secret_is_stored_in_any_table(world, api):
    # Authenticated writes of every kind first, so whatever they store is checked too.
    assert api("memory", "POST", "/v1/projects/alpha/memory", world.bodies["entry"]).status_code \
        == 201
    assert api("memory", "GET", "/v1/projects/alpha/context").status_code == 200
    assert api("admin", "POST", "/v1/projects", world.bodies["project"]).status_code == 201
    secrets = raw_secrets(world)
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            for row in cursor.fetchall():
                text = repr(row)
                assert [s for s in secrets if s in text] == [], table


def test_tokens_are_looked_up_by_hash_never_by_the_raw_value(world, api):
    raw = world.tokens["a"]
    with CaptureQueriesContext(connection) as queries:
        assert api("memory", "POST", "/v1/projects/alpha/memory",
                   world.bodies["entry"]).status_code == 201
        assert api("bad", "GET", "/v1/projects/alpha").status_code == 401
    sql = "\n".join(query["sql"] for query in queries.captured_queries)
    for secret in raw_secrets(world):
        assert secret not in sql
    assert hashlib.sha256(raw.encode()).hexdigest() in sql
    assert hashlib.sha256(b"garbage").hexdigest() in sql


SECRET_NAMES = {"raw", "presented", "configured", "token", "expected", "header"}


@pytest.mark.parametrize("module", ["memory/api/authentication.py", "memory/api/permissions.py"])
def test_secrets_are_compared_only_with_compare_digest(module):
    """No == or != on a secret (an early-exit compare); digests go through hmac."""
    tree = ast.parse((ROOT / module).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
            isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops
        ):
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            assert not names & SECRET_NAMES, f"{module}:{node.lineno}"
    calls = {
        ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)
    }
    assert "hmac.compare_digest" in calls


def test_the_stored_prefix_never_reveals_most_of_a_supplied_token(world, db):
    _, raw = services.project_create(project_id="gamma", name="Gamma", token="abcdefghijkl")
    row = ProjectToken.objects.get(project_id="gamma")
    assert len(row.prefix) <= len(raw) // 4
