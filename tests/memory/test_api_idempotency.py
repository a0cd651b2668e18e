"""Idempotency-Key on POST /v1/projects/{id}/memory: replays, reuse, scoping, races."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections, transaction

from memory import checkpoints, services
from memory.models import MemoryEntry, Project
from memory.services import idempotency_key_digest as digest
from tests.django_fixtures import postgres_only, run_in_threads

BODY = {"category": "decision", "content": "use postgres", "source": "agent"}
KEY = "req-7f3a/2026-11-30T08:00Z"


def memory_url(project_id: str) -> str:
    return f"/v1/projects/{project_id}/memory"


def post(client, project_id: str, body=BODY, key: str | None = KEY):
    extra = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    return client.post(memory_url(project_id), body, format="json", **extra)


def post_raw(client, project_id: str, raw: bytes, key: str = KEY):
    return client.generic(
        "POST", memory_url(project_id), raw, content_type="application/json",
        HTTP_IDEMPOTENCY_KEY=key,
    )


def count(project=None) -> int:
    entries = MemoryEntry.objects.all()
    return entries.filter(project=project).count() if project else entries.count()


@pytest.fixture
def client(alpha, client_for):
    return client_for(alpha.token)


def test_the_first_request_is_not_marked_as_a_replay(alpha, client):
    response = post(client, alpha.id)

    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response
    entry = MemoryEntry.objects.get()
    assert entry.idempotency_key == digest(KEY)
    assert str(entry.uuid) == response.json()["id"]


def test_it_replays_the_same_key_and_body(alpha, client):
    first = post(client, alpha.id)

    again = post(client, alpha.id)

    assert again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert count() == 1


def test_it_replays_a_body_with_other_key_order_and_spacing(alpha, client):
    first = post_raw(
        client, alpha.id, b'{"category":"decision","content":"use postgres","source":"agent"}'
    )

    again = post_raw(
        client,
        alpha.id,
        b'{\n  "source" : "agent",\n\t"content":   "use postgres",  "category": "decision"\n}\n',
    )

    assert first.status_code == 201
    assert again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert count() == 1


def test_it_replays_a_body_with_escaped_and_literal_unicode(alpha, client):
    first = post_raw(client, alpha.id, '{"category":"c","content":"café"}'.encode())

    again = post_raw(client, alpha.id, b'{"content":"caf\\u00e9","category":"c"}')

    assert again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert count() == 1


def test_it_replays_the_original_entry_after_later_appends(alpha, client):
    first = post(client, alpha.id)
    post(client, alpha.id, {"category": "note", "content": "later"}, key=None)

    again = post(client, alpha.id)

    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["seq"] == 1
    assert again.json()["id"] == first.json()["id"]
    assert count() == 2


@pytest.mark.parametrize(
    "changed",
    [
        {**BODY, "content": "use sqlite"},
        {**BODY, "source": "operator"},
        {"category": "decision", "content": "use postgres"},
        {**BODY, "corrects": 1},
    ],
    ids=["content", "source", "without-source", "with-corrects"],
)
def test_it_refuses_the_same_key_with_a_different_body(alpha, client, changed):
    first = post(client, alpha.id)

    response = post(client, alpha.id, changed)

    assert response.status_code == 422
    assert response.json()["code"] == "idempotency_key_reused"
    assert "Idempotent-Replayed" not in response
    assert count() == 1
    assert {**MemoryEntry.objects.get().chain_row(), "redacted": False,
            "corrected_by": []} == first.json()


def test_it_scopes_keys_to_the_project(alpha, beta, client, client_for):
    in_alpha = post(client, alpha.id)

    in_beta = post(client_for(beta.token), beta.id)

    assert in_beta.status_code == 201
    assert "Idempotent-Replayed" not in in_beta
    assert in_beta.json()["id"] != in_alpha.json()["id"]
    assert in_beta.json()["project_id"] == "beta"
    assert count(alpha.project) == 1
    assert count(beta.project) == 1


def test_a_key_from_another_project_never_answers_a_different_body(alpha, beta, client, client_for):
    post(client, alpha.id)

    response = post(client_for(beta.token), beta.id, {"category": "other", "content": "beta"})

    assert response.status_code == 201
    assert response.json()["content"] == "beta"
    assert count(beta.project) == 1


@pytest.mark.parametrize(
    "key",
    ["", "k" * 256, "\x01abc", "ключ", "key\n", "tab\tkey", "del\x7f"],
    ids=["empty", "256-chars", "control", "non-ascii", "newline", "tab", "delete"],
)
def test_it_refuses_a_malformed_key(alpha, client, key):
    response = post(client, alpha.id, key=key)

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_error"
    assert list(body["fields"]) == ["Idempotency-Key"]
    assert count() == 0


@pytest.mark.parametrize("key", ["k" * 255, "a b ~!@#$%^&*()_+{}|:<>?", "x"])
def test_it_accepts_any_printable_ascii_key_up_to_255(alpha, client, key):
    response = post(client, alpha.id, key=key)

    assert response.status_code == 201
    assert MemoryEntry.objects.get().idempotency_key == digest(key)


@pytest.mark.parametrize(
    "bad",
    [
        b'{"category": "Bad Category", "content": "use postgres", "source": "agent"}',
        b'{"category": "decision", "content": "use postgres", "source": "agent", "corrects": 99}',
        b'{"category": "decision", "content": "a\\ud800b", "source": "agent"}',
        b'{"category": "decision", "content": "use postgres", "source": "agent", "unknown": 1}',
    ],
    ids=["category", "missing-correction", "lone-surrogate", "unknown-field"],
)
def test_a_refused_request_does_not_use_up_its_key(alpha, client, bad):
    refused = post_raw(client, alpha.id, bad)

    accepted = post(client, alpha.id)

    assert refused.status_code == 400
    assert accepted.status_code == 201
    assert "Idempotent-Replayed" not in accepted
    assert MemoryEntry.objects.get().content == "use postgres"


def test_a_replay_still_needs_the_memory_token(alpha, client_for, memory_write_token):
    writer = client_for(alpha.token, HTTP_X_MEMORY_TOKEN=memory_write_token)
    post(writer, alpha.id)

    response = post(client_for(alpha.token), alpha.id)

    assert response.status_code == 403
    assert response.json()["code"] == "memory_write_forbidden"
    assert count() == 1


def test_a_key_on_a_service_append_in_the_tokens_scope_replays_over_the_api(alpha, client):
    token = alpha.project.tokens.get()
    services.memory_entry_create(
        project=alpha.project,
        author="default",
        idempotency_key=KEY,
        request_hash=services.request_fingerprint(BODY),
        idempotency_scope=f"token:{token.pk}",
        **BODY,
    )

    response = post(client, alpha.id)

    assert response.status_code == 201
    assert response["Idempotent-Replayed"] == "true"
    assert count() == 1


# --- keys belong to a token (issue 16 §8) ----------------------------------------------


@pytest.fixture
def second(alpha, client_for):
    """Another token of the same project, named differently."""
    _, raw = services.project_token_create(project=alpha.project, name="second-agent")
    return client_for(raw)


def test_the_same_key_and_body_from_another_token_is_a_new_entry_of_its_own(alpha, client,
                                                                              second):
    first = post(client, alpha.id)

    other = post(second, alpha.id)

    assert first.status_code == other.status_code == 201
    assert "Idempotent-Replayed" not in other
    assert other.json()["id"] != first.json()["id"]
    assert other.json()["author"] == "second-agent"
    assert sorted(MemoryEntry.objects.values_list("author", "idempotency_key")) == [
        ("default", digest(KEY)), ("second-agent", digest(KEY))]


def test_another_tokens_key_with_another_body_is_not_a_reuse(alpha, client, second):
    post(client, alpha.id)

    other = post(second, alpha.id, body={**BODY, "content": "use sqlite"})

    assert other.status_code == 201
    assert count() == 2


def test_each_token_replays_only_its_own_entry(alpha, client, second):
    mine, theirs = post(client, alpha.id), post(second, alpha.id)

    again_mine, again_theirs = post(client, alpha.id), post(second, alpha.id)

    assert again_mine["Idempotent-Replayed"] == again_theirs["Idempotent-Replayed"] == "true"
    assert again_mine.json()["id"] == mine.json()["id"]
    assert again_theirs.json()["id"] == theirs.json()["id"]
    assert count() == 2


def test_the_admin_tokens_keys_are_its_own(alpha, client, client_for):
    from tests.django_fixtures import ADMIN_TOKEN

    post(client, alpha.id)
    admin = post(client_for(ADMIN_TOKEN), alpha.id)

    assert admin.status_code == 201
    assert "Idempotent-Replayed" not in admin
    assert admin.json()["author"] == "admin"
    assert count() == 2


def test_a_token_with_a_reissued_name_does_not_inherit_the_old_tokens_keys(alpha, client,
                                                                             client_for):
    post(client, alpha.id)
    services.project_token_revoke(project=alpha.project, name="default")
    _, raw = services.project_token_create(project=alpha.project, name="default")

    response = post(client_for(raw), alpha.id)

    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response
    assert count() == 2


def legacy_keyed_entry(alpha, author: str) -> MemoryEntry:
    """An entry as memory 0011 found it: keyed per project, with no scope (its key
    digested, as memory 0021 leaves it)."""
    from django.utils import timezone

    from gedweb.lib.chain import GENESIS_HASH, entry_hash

    entry = MemoryEntry(project=alpha.project, seq=1, author=author, created_at=timezone.now(),
                        prev_hash=GENESIS_HASH, idempotency_key=digest(KEY),
                        idempotency_scope=None,
                        request_hash=services.request_fingerprint(BODY), **BODY)
    entry.hash = entry_hash(entry.prev_hash, entry.chained_fields())
    checkpoints.seal(entry)  # memory 0023 signed every entry it found
    entry.save(force_insert=True)
    return entry


def test_a_key_stored_before_scopes_still_replays_to_its_author(alpha, client):
    legacy = legacy_keyed_entry(alpha, "default")

    response = post(client, alpha.id)

    assert response["Idempotent-Replayed"] == "true"
    assert response.json()["id"] == str(legacy.uuid)
    assert count() == 1


def test_a_key_stored_before_scopes_never_replays_to_another_author(alpha, client, second):
    legacy_keyed_entry(alpha, "default")

    response = post(second, alpha.id)

    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response
    assert count() == 2


def test_concurrent_requests_with_one_key_create_one_entry(live_db, make_project, client_for):
    target = make_project("race")

    def work(index: int):
        response = post(client_for(target.token), target.id, key="one-key-for-all")
        return response.status_code, response.json()

    results = run_in_threads(work, 20)

    assert not [r for r in results if isinstance(r, BaseException)], results
    assert all(
        status == 201 or (status == 409 and body["code"] == "idempotency_in_flight")
        for status, body in results
    ), results
    created = {body["id"] for status, body in results if status == 201}
    assert len(created) == 1
    assert list(MemoryEntry.objects.values_list("uuid", flat=True)) == [
        MemoryEntry.objects.get().uuid
    ]
    assert str(MemoryEntry.objects.get().uuid) == created.pop()
    assert services.memory_chain_verify(project=target.project).ok


def test_concurrent_requests_with_different_keys_all_append(live_db, make_project, client_for):
    target = make_project("race")

    def work(index: int):
        response = post(
            client_for(target.token),
            target.id,
            {"category": "c", "content": f"n{index}"},
            key=f"key-{index}",
        )
        return response.status_code

    results = run_in_threads(work, 12)

    assert results == [201] * 12
    assert sorted(MemoryEntry.objects.values_list("seq", flat=True)) == list(range(1, 13))
    assert services.memory_chain_verify(project=target.project).ok


def advisory_locks_held() -> int:
    # This test database's only: pg_locks lists the whole server's, where
    # other suites (xdist workers, other checkouts) may hold their own.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        return cursor.fetchone()[0]


@postgres_only
def test_a_key_still_in_flight_is_refused_at_once(live_db, make_project, client_for):
    target = make_project("race")
    locked, release = threading.Event(), threading.Event()
    first: dict = {}

    def hold_the_project_row() -> None:
        # Appends lock the project row, so the first request waits here
        # while it holds its Idempotency-Key.
        try:
            with transaction.atomic():
                Project.objects.select_for_update().get(pk=target.id)
                locked.set()
                release.wait(30)
        finally:
            connections.close_all()

    def send_first() -> None:
        try:
            first["response"] = post(client_for(target.token), target.id)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_the_project_row)
    holder.start()
    assert locked.wait(10)
    sender = threading.Thread(target=send_first)
    sender.start()
    deadline = time.monotonic() + 10
    while advisory_locks_held() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)

    second = post(client_for(target.token), target.id)
    release.set()
    holder.join(30)
    sender.join(30)

    assert second.status_code == 409
    assert second.json()["code"] == "idempotency_in_flight"
    assert first["response"].status_code == 201
    assert list(MemoryEntry.objects.values_list("uuid", flat=True)) == [
        MemoryEntry.objects.get().uuid
    ]
    assert str(MemoryEntry.objects.get().uuid) == first["response"].json()["id"]
    replay = post(client_for(target.token), target.id)
    assert replay.status_code == 201
    assert replay["Idempotent-Replayed"] == "true"


# --- only the key's digest is stored (issue 34 §10) ------------------------------------------

SECRET_LIKE_KEY = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2


def test_no_row_holds_the_key_itself(alpha, client):
    appended = post(client, alpha.id, key=SECRET_LIKE_KEY)
    proposed = client.post(f"/v1/projects/{alpha.id}/memory/candidates", BODY, format="json",
                           HTTP_IDEMPOTENCY_KEY=SECRET_LIKE_KEY)
    assert appended.status_code == proposed.status_code == 201

    from memory.models import MemoryCandidate

    rows = [*MemoryEntry.objects.values(), *MemoryCandidate.objects.values()]
    assert rows and all(SECRET_LIKE_KEY not in str(row) for row in rows)
    assert [row["idempotency_key"] for row in rows] == [digest(SECRET_LIKE_KEY)] * 2
    # The digest still tells a replay: same key and body, same entry.
    again = post(client, alpha.id, key=SECRET_LIKE_KEY)
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == appended.json()["id"]


def test_migration_0021_digests_stored_keys_and_a_retry_still_replays(live_db, alpha, client):
    """Rows keyed before 0021 hold the key as sent; after it, their digest, and a retry
    that began before the upgrade is answered with the row it stored."""
    from django.db.migrations.executor import MigrationExecutor

    from memory.models import MemoryCandidate

    appended = post(client, alpha.id).json()
    proposed = client.post(f"/v1/projects/{alpha.id}/memory/candidates", BODY, format="json",
                           HTTP_IDEMPOTENCY_KEY=KEY).json()
    executor = MigrationExecutor(connection)
    executor.migrate([("memory", "0020_candidate_withdrawn")])
    # As 0020 left them: the key itself. The entry's UPDATE trigger steps aside for
    # the test's own rewrite, as it does for 0021's.
    from memory.migrations._entry_updates import entry_updates_allowed

    with connection.schema_editor() as editor, entry_updates_allowed(editor), \
            connection.cursor() as cursor:
        cursor.execute("UPDATE memory_memoryentry SET idempotency_key = %s", [KEY])
    with connection.cursor() as cursor:
        cursor.execute("UPDATE memory_memorycandidate SET idempotency_key = %s", [KEY])
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    stored = digest(KEY)
    assert list(MemoryEntry.objects.values_list("idempotency_key", flat=True)) == [stored]
    assert list(MemoryCandidate.objects.values_list("idempotency_key", flat=True)) == [stored]
    again = post(client, alpha.id)
    assert (again["Idempotent-Replayed"], again.json()["id"]) == ("true", appended["id"])
    proposed_again = client.post(f"/v1/projects/{alpha.id}/memory/candidates", BODY,
                                 format="json", HTTP_IDEMPOTENCY_KEY=KEY)
    assert proposed_again.json()["id"] == proposed["id"]
    assert services.memory_chain_verify(project=alpha.project).ok
    with pytest.raises(Exception, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE memory_memoryentry SET idempotency_key = 'x'")
