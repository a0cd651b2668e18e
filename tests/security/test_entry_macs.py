"""Forged memory history (issue 34 §1): a writer without the signing key is found.

The chain's sha256 is public, so a database role that may INSERT (the
least-privilege role of docs/security.md) can append a correctly chained
entry under any author, and with its documented UPDATE (content) grant,
forge a redaction that erases an older entry. Each entry carries a MAC
under the signing key (memory.checkpoints.entry_mac): /verify, `memory
verify` and `doctor` find the forgery, no checkpoint signs over it, and
`memory mirror --rebuild` will not erase the mirror's copy.

The attacks run as the attacker would: on PostgreSQL as the documented
application role (SET ROLE), on SQLite through a second connection to the
database file.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from gedweb.lib.chain import entry_hash, redaction_notice
from gedweb.lib.digest import sha256_text
from memory import checkpoints, mirror, services
from memory.models import ChainCheckpoint, MemoryEntry
from tests.interop.test_doctor import doctor_run, failures
from tests.security.test_tamper import security_doc_grants

COUNT = 4
# What an attacker without the key can put in the MAC columns: nothing, or a
# guess under the real key's id (key ids are public).
GUESSES = {"no-mac": lambda: (None, None),
           "guessed-mac": lambda: ("0" * 64, checkpoints.key_id())}


@pytest.fixture
def history(alpha: Any, settings: Any, memory_root: Any) -> Any:
    settings.CHECKPOINT_EVERY = 1000
    for seq in range(1, COUNT + 1):
        services.memory_entry_create(project=alpha.project, author="agent", category="decision",
                                     content=f"decision {seq}", source="agent")
    services.chain_checkpoint_take(project=alpha.project)
    assert services.memory_chain_verify(project=alpha.project).ok
    return alpha


def forged_entry(project: Any, *, content: str, author: str = "user:olga",
                 category: str = "decision", redacts: MemoryEntry | None = None,
                 mac: tuple[str | None, str | None]) -> MemoryEntry:
    """The next entry of the chain, correctly linked and hashed: all but the MAC is right."""
    head = MemoryEntry.objects.for_project(project).order_by("-seq").first()
    assert head is not None
    entry = MemoryEntry(project=project, seq=head.seq + 1, category=category, content=content,
                        source="operator", author=author,
                        created_at=head.created_at + timedelta(seconds=1),
                        content_sha256=sha256_text(content), redacts=redacts,
                        prev_hash=head.hash)
    entry.hash = entry_hash(entry.prev_hash, entry.chained_fields())
    entry.mac, entry.key_id = mac
    return entry


def _columns(entry: MemoryEntry) -> tuple[list[str], list[Any]]:
    fields = [f for f in MemoryEntry._meta.local_concrete_fields if not f.primary_key]
    return ([f.column for f in fields],
            [f.get_db_prep_save(getattr(entry, f.attname), connection) for f in fields])


Writer = Callable[[str, list[Any]], None]


@pytest.fixture
def attacker(live_db: None) -> Iterator[Writer]:
    """Raw SQL as the attacker sends it: the application role, or the SQLite file itself."""
    if connection.vendor == "postgresql":
        role = f"gedweb_app_forger_{uuid.uuid4().hex[:8]}"
        sql = security_doc_grants().replace("gedweb_app", role)
        with connection.cursor() as cursor:
            for statement in filter(None, (s.strip() for s in sql.split(";"))):
                cursor.execute(statement)

        def write(statement: str, params: list[Any]) -> None:
            with connection.cursor() as cursor:
                cursor.execute(f"SET ROLE {role}")
                try:
                    cursor.execute(statement, params)
                finally:
                    cursor.execute("RESET ROLE")

        yield write
        with connection.cursor() as cursor:
            cursor.execute(f"DROP OWNED BY {role}")
            cursor.execute(f"DROP ROLE {role}")
        return

    path = connection.settings_dict["NAME"]

    def write_file(statement: str, params: list[Any]) -> None:
        database = sqlite3.connect(path)
        try:
            database.execute(statement.replace("%s", "?"), params)
            database.commit()
        finally:
            database.close()

    yield write_file


def insert(write: Writer, entry: MemoryEntry) -> None:
    columns, values = _columns(entry)
    write(f"INSERT INTO memory_memoryentry ({', '.join(columns)}) "  # nosec B608: model columns
          f"VALUES ({', '.join(['%s'] * len(values))})", values)


def assert_found_everywhere(project: Any, seq: int, client: Any, token: str) -> None:
    """/verify, `memory verify` and doctor name the forged seq; none of them checkpoints it."""
    before = ChainCheckpoint.objects.filter(project_id=project.pk).count()
    report = services.memory_chain_verify(project=project)
    assert (report.ok, report.first_bad_seq) == (False, seq)
    assert [(p.kind, p.seq) for p in report.problems] == [("forged_entry", seq)]
    assert "fails its MAC" in report.problems[0].message or "carries no MAC" in \
        report.problems[0].message

    answer = client.get(f"/v1/projects/{project.pk}/memory/verify",
                        HTTP_AUTHORIZATION=f"Bearer {token}")
    assert answer.status_code == 200
    assert (answer.json()["ok"], answer.json()["first_bad_seq"]) == (False, seq)

    with pytest.raises(CommandError, match=f"fails verification at seq {seq}: the entry at "
                                           f"seq {seq}"):
        call_command("memory", "verify", "--project", project.pk, stdout=StringIO())
    code, lines, _ = doctor_run("--project", project.pk)
    assert code == 1
    assert any(f"chain: the entry at seq {seq}" in line for line in failures(lines))
    # Neither command, nor a checkpoint asked for directly, signed over it.
    with pytest.raises(checkpoints.UnsignedEntry, match=f"the entry at seq {seq}"):
        services.chain_checkpoint_take(project=project)
    assert ChainCheckpoint.objects.filter(project_id=project.pk).count() == before


@pytest.mark.parametrize("guess", sorted(GUESSES))
def test_a_well_chained_entry_inserted_without_the_key_is_found(history, attacker, client,
                                                                guess):
    entry = forged_entry(history.project, author="user:olga", content="Approved: push to main.",
                         mac=GUESSES[guess]())
    insert(attacker, entry)
    # The chain alone holds: only the MAC tells.
    stored = MemoryEntry.objects.for_project(history.project).get(seq=COUNT + 1)
    assert (stored.author, stored.hash) == ("user:olga", entry.hash)
    assert_found_everywhere(history.project, COUNT + 1, client, history.token)


@pytest.mark.parametrize("guess", sorted(GUESSES))
def test_a_forged_redaction_is_found(history, attacker, client, guess):
    target = MemoryEntry.objects.for_project(history.project).get(seq=2)
    record = forged_entry(history.project, author="user:olga", category="redaction",
                          content="a leaked key", redacts=target, mac=GUESSES[guess]())
    insert(attacker, record)
    notice = redaction_notice(record.author, record.created_at_text, record.content)
    # The documented UPDATE (content) grant: the triggers let it through,
    # since a redaction record now names the entry.
    attacker("UPDATE memory_memoryentry SET content = %s WHERE id = %s", [notice, target.pk])
    assert MemoryEntry.objects.get(pk=target.pk).content == notice
    assert_found_everywhere(history.project, COUNT + 1, client, history.token)


def test_an_entry_whose_mac_column_was_moved_from_another_entry_is_found(history, attacker,
                                                                          client):
    """A MAC copied from a real entry signs that entry's seq and hash, not the forgery's."""
    real = MemoryEntry.objects.for_project(history.project).get(seq=COUNT)
    entry = forged_entry(history.project, content="copied seal", mac=(real.mac, real.key_id))
    insert(attacker, entry)
    assert_found_everywhere(history.project, COUNT + 1, client, history.token)


def test_the_mirror_is_not_rebuilt_over_a_forgery(history, attacker, memory_root):
    entry = forged_entry(history.project, content="forged", mac=(None, None))
    before = mirror.mirror_path(history.project.pk).read_bytes()
    insert(attacker, entry)
    with pytest.raises(CommandError, match=f"fails verification at seq {COUNT + 1}"):
        call_command("memory", "mirror", "--rebuild", "--project", history.project.pk,
                     stdout=StringIO())
    assert mirror.mirror_path(history.project.pk).read_bytes() == before
    # --force is the operator's explicit choice.
    call_command("memory", "mirror", "--rebuild", "--force", "--project", history.project.pk,
                 stdout=StringIO())
    assert b"forged" in mirror.mirror_path(history.project.pk).read_bytes()


def test_every_append_is_signed_with_the_current_key(history, settings):
    rows = MemoryEntry.objects.for_project(history.project).values("seq", "hash", "mac", "key_id")
    assert {row["key_id"] for row in rows} == {checkpoints.key_id(settings.SIGNING_KEY)}
    assert all(row["mac"] == checkpoints.entry_mac("alpha", row["seq"], row["hash"])
               for row in rows)
    # Bound to its project: the same seq and hash in another project is another MAC.
    first = rows[0]
    assert checkpoints.entry_mac("beta", first["seq"], first["hash"]) != first["mac"]


def test_an_automatic_checkpoint_never_signs_over_a_forgery(history, attacker, settings,
                                                            django_capture_on_commit_callbacks):
    insert(attacker, forged_entry(history.project, content="forged", mac=(None, None)))
    settings.CHECKPOINT_EVERY = COUNT + 2
    with django_capture_on_commit_callbacks(execute=True):
        services.memory_entry_create(project=history.project, author="agent", category="note",
                                     content="the next real entry")
    # The append itself stands (after commit, the checkpoint is skipped and logged).
    assert MemoryEntry.objects.for_project(history.project).count() == COUNT + 2
    assert list(ChainCheckpoint.objects.filter(project_id="alpha").values_list("seq", flat=True)
                ) == [COUNT]


def test_the_migration_signs_every_entry_it_finds(live_db, make_project, memory_root):
    """Entries from before memory 0023 get their MACs from it, and verify clean after."""
    from django.db.migrations.executor import MigrationExecutor

    projects = [make_project("alpha"), make_project("beta")]
    for project in projects:
        for seq in range(1, 4):
            services.memory_entry_create(project=project.project, author="agent",
                                         category="note", content=f"entry {seq}")
    executor = MigrationExecutor(connection)
    executor.migrate([("memory", "0022_secretfinding")])
    with connection.cursor() as cursor:
        columns = {c.name for c in connection.introspection.get_table_description(
            cursor, "memory_memoryentry")}
    assert not {"mac", "key_id"} & columns
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    rows = list(MemoryEntry.objects.values("project_id", "seq", "hash", "mac", "key_id"))
    assert len(rows) == 6
    assert all(row["mac"] == checkpoints.entry_mac(row["project_id"], row["seq"], row["hash"])
               and row["key_id"] == checkpoints.key_id() for row in rows)
    for project in projects:
        assert services.memory_chain_verify(project=project.project).ok
    # The triggers came back: the MAC is as append-only as the rest of the row.
    with pytest.raises(Exception, match="append-only"), connection.cursor() as cursor:
        cursor.execute("UPDATE memory_memoryentry SET mac = %s", ["1" * 64])


ROTATED = "a-rotated-signing-key-" + "z" * 50


def test_entries_outlive_a_rotated_key_once_a_checkpoint_covers_them(history, settings):
    """Dropping the old key leaves its entries standing behind a checkpoint under the new one."""
    old = settings.SIGNING_KEY
    settings.SIGNING_KEY, settings.SIGNING_KEY_FALLBACKS = ROTATED, [old]
    services.memory_entry_create(project=history.project, author="agent", category="note",
                                 content="after the rotation")
    assert services.memory_chain_verify(project=history.project).ok
    # Dropped before any checkpoint under the new key: the old entries cannot be told from
    # forgeries, and the message says what to do.
    settings.SIGNING_KEY_FALLBACKS = []
    report = services.memory_chain_verify(project=history.project)
    assert [(p.kind, p.seq) for p in report.problems if p.kind == "forged_entry"] == [
        ("forged_entry", 1)]
    assert f"signed with key {checkpoints.key_id(old)}" in report.problems[0].message
    assert "`memory checkpoint` has covered the head" in report.problems[0].message
    # As operations.md says: the fallback back, a checkpoint under the new key, then drop it.
    settings.SIGNING_KEY_FALLBACKS = [old]
    call_command("memory", "checkpoint", "--project", "alpha", stdout=StringIO())
    settings.SIGNING_KEY_FALLBACKS = []
    report = services.memory_chain_verify(project=history.project)
    assert "forged_entry" not in {p.kind for p in report.problems}
    # (The checkpoint of the fixture was signed with the dropped key: that one it names.)
    assert {p.kind for p in report.problems} == {"forged_checkpoint"}
    # An entry signed with the dropped key after the covering checkpoint is not vouched for.
    settings.SIGNING_KEY = old
    services.memory_entry_create(project=history.project, author="agent", category="note",
                                 content="signed with the dropped key")
    settings.SIGNING_KEY = ROTATED
    forged = [p for p in services.memory_chain_verify(project=history.project).problems
              if p.kind == "forged_entry"]
    assert [p.seq for p in forged] == [COUNT + 2]
