"""Redaction (memory.redaction): the content leaves, the chain and its record stay.

Walked through the service, the command and every verifier on both engines:
the server's verify and `memory verify`, `doctor`, the CLI's local check
over the API's entries and the JSONL export. Then every bad request (an
unknown seq, a second redaction, no reason, a redaction record, an entry in
chain format 1) is one clear error that changes nothing, and every change
made behind GedWeb's back after a redaction is still found.
"""

from __future__ import annotations

import io
import json
import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction

from gedweb.cli.main import local_verify
from gedweb.errors import InvalidState, SecretDetected
from gedweb.lib.chain import CHAINED_FIELDS, GENESIS_HASH, entry_hash, redaction_notice
from memory import checkpoints, mirror, services
from memory.models import MemoryCandidate, MemoryEntry
from memory.redaction import memory_entry_redact
from tests.django_fixtures import bearer_client
from tests.security.test_tamper import triggers_off

# Text an agent should not have stored (the scanner lets it in: it is no known
# credential format), with a word the tests look for after the redaction.
SECRET_LINE = "the staging box opens to the phrase quokka lantern seven"
WORD = "quokka"


def _write(project: Any, content: str, **extra: Any) -> MemoryEntry:
    return services.memory_entry_create(project=project, author="agent", category="note",
                                        content=content, **extra).entry


@pytest.fixture
def chain(alpha: Any) -> dict[str, Any]:
    first = _write(alpha.project, "Orders stay on PostgreSQL.")
    leaked = _write(alpha.project, SECRET_LINE)
    after = _write(alpha.project, "Orders stay on PostgreSQL 16.", corrects=first.seq)
    return {"project": alpha.project, "token": alpha.token, "first": first, "leaked": leaked,
            "after": after}


def _api_entries(project_id: str, token: str) -> list[dict[str, Any]]:
    response = bearer_client(token).get(f"/v1/projects/{project_id}/memory", {"limit": 500})
    assert response.status_code == 200
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def _export_rows(project_id: str, token: str) -> list[dict[str, Any]]:
    response = bearer_client(token).get(f"/v1/projects/{project_id}/memory.jsonl")
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    return [json.loads(line) for line in body.splitlines()]


def _everything_verifies(project: Any, token: str) -> dict[str, Any]:
    """Every verifier's answer on the project, each asserted intact."""
    report = services.memory_chain_verify(project=project)
    assert report.ok, report.problems
    api = bearer_client(token).get(f"/v1/projects/{project.pk}/memory/verify").json()
    assert api["ok"] and api["first_bad_seq"] is None
    cli = local_verify(_api_entries(project.pk, token))
    assert cli["ok"], cli
    export = local_verify(_export_rows(project.pk, token))
    assert export["ok"], export
    out = io.StringIO()
    call_command("memory", "verify", "--project", project.pk, stdout=out)
    assert json.loads(out.getvalue())["ok"]
    return {"server": report.redacted, "api": api["redacted"], "cli": cli["redacted"],
            "export": export["redacted"]}


def test_a_redaction_replaces_the_content_and_every_verifier_accepts_it(chain):
    project, leaked = chain["project"], chain["leaked"]
    kept = {f: getattr(leaked, f) for f in ("seq", "hash", "prev_hash", "author", "created_at",
                                            "content_sha256", "uuid")}
    result = memory_entry_redact(project=project, seq=leaked.seq,
                                 reason="a password pasted from a deploy log", by="user:olga")

    entry = MemoryEntry.objects.get(pk=leaked.pk)
    record = result.record
    assert {f: getattr(entry, f) for f in kept} == kept
    assert entry.content == redaction_notice("user:olga", record.created_at_text,
                                             "a password pasted from a deploy log")
    assert entry.content.startswith("[redacted by user:olga at ") and entry.is_redacted
    assert (record.seq, record.category, record.content, record.redacts_id, record.author) == (
        4, "redaction", "a password pasted from a deploy log", leaked.pk, "user:olga")
    assert record.prev_hash == chain["after"].hash and not record.is_redacted
    assert result.mirror_rebuilt
    assert _everything_verifies(project, chain["token"]) == {
        "server": 1, "api": 1, "cli": 1, "export": 1}

    # Gone from the search index, the mirror, the API and the context bundle.
    assert not MemoryEntry.objects.for_project(project).search(WORD, project=project).exists()
    assert list(MemoryEntry.objects.for_project(project).search("redacted", project=project)
                .values_list("seq", flat=True)) == [leaked.seq]
    text = mirror.mirror_path(project.pk).read_text()
    assert WORD not in text and entry.content in text
    assert mirror.check(project)
    client = bearer_client(chain["token"])
    shown = client.get(f"/v1/projects/{project.pk}/memory/{leaked.seq}").json()
    assert (shown["content"], shown["redacted"], shown["redacts"]) == (entry.content, True, None)
    assert client.get(f"/v1/projects/{project.pk}/memory/4").json()["redacts"] == str(leaked.uuid)
    bundle = client.get(f"/v1/projects/{project.pk}/context").content.decode()
    assert WORD not in bundle and "[redacted by user:olga" in bundle


def test_the_candidate_the_entry_came_from_loses_the_content_too(alpha):
    project = alpha.project
    candidate = services.candidate_create(project=project, author="agent", category="note",
                                          content=SECRET_LINE)
    entry = services.candidate_approve(project=project, candidate=candidate, by="user:otto")
    memory_entry_redact(project=project, seq=entry.seq, reason="a password", by="user:olga")
    candidate.refresh_from_db()
    assert WORD not in candidate.content and candidate.content.startswith("[redacted by")
    assert candidate.status == MemoryCandidate.Status.APPROVED


def _state(project: Any) -> list[tuple[Any, ...]]:
    return list(MemoryEntry.objects.for_project(project).order_by("seq").values_list(
        "seq", "content", "hash", "redacts_id"))


@pytest.mark.parametrize(("seq", "reason", "by", "error", "message"), [
    (99, "a password", "user:olga", ValidationError, "no entry #99 in project alpha"),
    (2, "", "user:olga", ValidationError, "say why the content is redacted"),
    (2, "   \n", "user:olga", ValidationError, "say why the content is redacted"),
    (2, "a password", "", ValidationError, "name who redacts"),
    (2, "key AKIAQ3EGRTY5WXKZPLMB again", "user:olga", SecretDetected, "aws-access-key-id"),
])
def test_a_bad_request_is_one_clear_error_and_changes_nothing(chain, seq, reason, by, error,
                                                              message):
    before = _state(chain["project"])
    with pytest.raises(error) as raised:
        memory_entry_redact(project=chain["project"], seq=seq, reason=reason, by=by)
    assert message in str(raised.value)
    assert _state(chain["project"]) == before


def test_a_second_redaction_and_a_redaction_of_a_record_are_refused(chain):
    project, leaked = chain["project"], chain["leaked"]
    record = memory_entry_redact(project=project, seq=leaked.seq, reason="a password",
                                 by="user:olga").record
    before = _state(project)
    with pytest.raises(InvalidState, match=rf"entry #2 was already redacted by user:olga at "
                       rf".* \(record #{record.seq}\)"):
        memory_entry_redact(project=project, seq=leaked.seq, reason="again", by="user:vera")
    with pytest.raises(InvalidState, match="entry #4 is a redaction record"):
        memory_entry_redact(project=project, seq=record.seq, reason="hide it", by="user:vera")
    assert _state(project) == before


def _insert_format_1(project: Any, content: str) -> MemoryEntry:
    """An entry as GedWeb wrote them before chain format 2 (content_sha256 NULL)."""
    head = MemoryEntry.objects.for_project(project).order_by("-seq").first()
    seq = head.seq + 1 if head else 1
    prev = head.hash if head else GENESIS_HASH
    assert head is not None  # a format-2 entry first: the test's project is not empty
    entry = MemoryEntry(project=project, seq=seq, category="note", content=content,
                        source="operator", author="agent",
                        created_at=head.created_at + timedelta(microseconds=1), prev_hash=prev)
    fields = entry.chained_fields()
    assert set(fields) == set(CHAINED_FIELDS)
    entry.hash = entry_hash(prev, fields)
    checkpoints.seal(entry)  # memory 0023 signed every entry it found
    entry.save(force_insert=True)
    mirror.rebuild(project)
    return entry


def test_an_entry_from_before_the_format_cannot_be_redacted_and_doctor_says_so(alpha):
    project = alpha.project
    _write(project, "a first entry")
    old = _insert_format_1(project, SECRET_LINE)
    assert services.memory_chain_verify(project=project).ok  # format 1 still verifies
    before = _state(project)
    with pytest.raises(InvalidState, match=r"entry #2 predates chain format 2: .* cannot be "
                       r"redacted \(`manage.py doctor` lists the 1 such entries of alpha\)"):
        memory_entry_redact(project=project, seq=old.seq, reason="a password", by="user:olga")
    assert _state(project) == before
    out = io.StringIO()
    call_command("doctor", "--project", "alpha", stdout=out)
    assert ("ok   alpha: chain (2 entries, 1 in chain format 1 (written before format 2: "
            "cannot be redacted)") in out.getvalue()


def test_the_command_redacts_and_refuses_with_one_line(chain):
    out = io.StringIO()
    call_command("memory", "redact", "--project", "alpha", "--seq", "2", "--reason",
                 "a password", "--by", "user:olga", stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["entry"]["redacted"] and printed["record"]["redacts"] == printed["entry"]["id"]
    assert printed["mirror_rebuilt"]
    assert printed["copies_scrubbed"] == {"context_bundles": 0, "recall_vectors": 0}
    # Inside the test's transaction the purge cannot run, and says so.
    assert "inside a transaction" in printed["purge"]["skipped"]
    with pytest.raises(CommandError, match="entry #2 was already redacted"):
        call_command("memory", "redact", "--project", "alpha", "--seq", "2", "--reason", "x")


# --- what the database allows, and what the verifiers still find ----------------------


def _raw(sql: str, params: list[Any]) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def test_the_triggers_let_only_the_redaction_through(chain):
    project, leaked, first = chain["project"], chain["leaked"], chain["first"]
    content_update = "UPDATE memory_memoryentry SET content = %s WHERE id = %s"
    # No redaction record: refused, format 2 or not.
    with pytest.raises(DatabaseError, match="append-only"):
        _raw(content_update, ["[redacted by x at y: z]", leaked.pk])
    memory_entry_redact(project=project, seq=leaked.seq, reason="a password", by="user:olga")
    # Any other column of the redacted entry, or of any entry, stays refused.
    for column, value in (("author", "mallory"), ("content_sha256", "0" * 64), ("seq", 9),
                          ("redacts_id", first.pk), ("hash", "f" * 64)):
        with pytest.raises(DatabaseError, match="append-only"):
            _raw(f"UPDATE memory_memoryentry SET {column} = %s WHERE id = %s",  # nosec B608
                 [value, leaked.pk])
    with pytest.raises(DatabaseError, match="append-only"):
        _raw(content_update, ["rewritten", first.pk])
    with pytest.raises(DatabaseError, match="append-only"):
        _raw("DELETE FROM memory_memoryentry WHERE id = %s", [leaked.pk])


@pytest.mark.parametrize(("change", "bad_seq", "diagnosis"), [
    ("restore", 4, "redaction record of an entry whose content is not its notice"),
    ("rewrite", 2, "neither the text its content_sha256 names nor the notice"),
])
def test_a_change_behind_gedwebs_back_after_a_redaction_is_found(chain, change, bad_seq,
                                                                 diagnosis):
    project, leaked = chain["project"], chain["leaked"]
    memory_entry_redact(project=project, seq=leaked.seq, reason="a password", by="user:olga")
    # The one UPDATE the triggers allow, used to put back the secret or other text.
    content = SECRET_LINE if change == "restore" else "[redacted by nobody at all: trust me]"
    _raw("UPDATE memory_memoryentry SET content = %s WHERE id = %s", [content, leaked.pk])
    report = services.memory_chain_verify(project=project)
    assert not report.ok and report.first_bad_seq == bad_seq
    assert diagnosis in report.problems[0].message
    api = bearer_client(chain["token"]).get(f"/v1/projects/{project.pk}/memory/verify").json()
    assert (api["ok"], api["first_bad_seq"]) == (False, bad_seq)
    cli = local_verify(_api_entries(project.pk, chain["token"]))
    assert (cli["ok"], cli["first_bad_seq"]) == (False, bad_seq)
    out = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("memory", "verify", "--project", project.pk, stdout=out)
    assert str(raised.value).startswith(
        f"memory of {project.pk} fails verification at seq {bad_seq}: hash chain breaks at "
        f"seq {bad_seq} (of 4 entries): ")
    assert diagnosis in str(raised.value)


def test_a_format_2_content_change_without_any_record_is_found(chain):
    """What the triggers refuse, done with them off (a superuser's session): still found."""
    project, leaked = chain["project"], chain["leaked"]
    with triggers_off() as cursor:
        cursor.execute("UPDATE memory_memoryentry SET content = %s WHERE id = %s",
                       ["tidied", leaked.pk])
    report = services.memory_chain_verify(project=project)
    assert (report.ok, report.first_bad_seq) == (False, leaked.seq)
    assert "content altered" in report.problems[0].message


def test_the_purge_takes_the_bytes_out_of_the_database_files(live_db, make_project):
    project = make_project("purged").project
    word = f"lantern{secrets.randbelow(10**9):09d}"  # in no other test's rows or free pages
    _write(project, "one")
    leaked = _write(project, f"the staging box opens to the phrase {word}")
    result = memory_entry_redact(project=project, seq=leaked.seq, reason="a passphrase",
                                 by="user:olga")
    if connection.vendor == "sqlite":
        assert result.purge["secure_delete"] and result.purge["fts_optimized"]
        assert result.purge["wal_checkpoint"]["truncated"]
        database = Path(connection.settings_dict["NAME"])
        assert database.is_file()
        assert word.encode() not in database.read_bytes()
        wal = database.with_name(database.name + "-wal")
        assert not wal.exists() or wal.stat().st_size == 0
    else:
        # VACUUM cannot run in a transaction: the purge ran it after the commit.
        assert result.purge == {"engine": "postgresql", "vacuum": "VACUUM memory_memoryentry"}
    assert not MemoryEntry.objects.for_project(project).search(word, project=project).exists()
    assert services.memory_chain_verify(project=project).ok


# --- stored context bundles --------------------------------------------------------------


def test_a_bundle_that_delivered_the_entry_is_scrubbed_and_says_so(chain, client,
                                                                   django_user_model):
    from governance.context import bundle_redaction, context_deliver, delivered_bundle
    from governance.models import ContextBundle, ContextDelivery

    project, leaked = chain["project"], chain["leaked"]
    context_deliver(project=project, work=None, author="agent", output_format="text")
    delivery = ContextDelivery.objects.filter(project=project).latest("id")
    stored = ContextBundle.objects.get(project=project, sha256=delivery.sha256)
    assert WORD in stored.text

    result = memory_entry_redact(project=project, seq=leaked.seq, reason="a passphrase",
                                 by="user:olga")
    assert result.copies_scrubbed == {"context_bundles": 1, "recall_vectors": 0}
    stored.refresh_from_db()
    assert WORD not in stored.text and stored.redaction_id == result.record.pk
    assert f"- #{leaked.seq} [note] (operator) [redacted by user:olga at " in stored.text
    bundle = delivered_bundle(delivery)
    assert bundle is not None and bundle.text == stored.text
    assert bundle_redaction(delivery).pk == result.record.pk
    # The page and the raw bytes say they are no longer what was delivered.
    user = django_user_model.objects.create_superuser("root", "root@example.org", "pw-x-123")
    client.force_login(user)
    page = client.get(f"/p/{project.pk}/context/{delivery.pk}").content.decode()
    assert "Redacted after delivery" in page and WORD not in page
    raw = client.get(f"/p/{project.pk}/context/{delivery.pk}/bundle")
    assert raw["X-Context-Redacted-By"] == str(result.record.seq)
    assert WORD.encode() not in raw.content
    # Any other change to a bundle stays refused, a non-redaction entry named or not.
    with pytest.raises(DatabaseError, match="append-only"):
        _raw("UPDATE governance_contextbundle SET text = %s, redaction_id = %s WHERE id = %s",
             ["forged", chain["first"].pk, stored.pk])
    with pytest.raises(DatabaseError, match="append-only"):
        _raw("UPDATE governance_contextbundle SET sha256 = %s WHERE id = %s",
             ["0" * 64, stored.pk])


@pytest.mark.parametrize(("migration", "table", "rewritten"), [
    ("memory.migrations.0023_memoryentry_mac", "memory_memoryentry", {"content"}),
    ("governance.migrations.0009_contextbundle_redaction", "governance_contextbundle",
     {"text", "sections", "redaction_id", "text_redaction_id"}),
])
def test_the_triggers_name_every_column_a_redaction_must_leave_alone(db, migration, table,
                                                                     rewritten):
    """On SQLite the UPDATE rule lists the columns; a column added later must join the list."""
    import importlib

    with connection.cursor() as cursor:
        columns = {column.name for column in connection.introspection.get_table_description(
            cursor, table)} - {"content_tsv"}  # PostgreSQL's generated search column
    listed = set(importlib.import_module(migration).UNCHANGED_COLUMNS)
    assert listed | rewritten == columns and not listed & rewritten
