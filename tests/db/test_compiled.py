"""CompiledRead, CompiledUpdate and CompiledInsert (gedweb/db/compiled.py): SQL compiled once."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import IntegrityError, connection, connections, transaction
from django.db.models import BigIntegerField, F, Value
from django.db.models.signals import pre_save
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from gedweb.append_only import AppendOnlyError
from gedweb.db.compiled import CompiledInsert, CompiledRead, CompiledUpdate
from gedweb.lib.chain import GENESIS_HASH
from memory import services
from memory.models import MemoryEntry, Project, ProjectQuota, ProjectToken, hash_token
from memory.querysets import newest_chain_row


def _newest(project_id):
    return (
        MemoryEntry.objects.filter(project_id=project_id)
        .order_by("-seq")
        .values("uuid", "seq", "created_at", "corrects__uuid")[:1]
    )


NEWEST = CompiledRead(_newest, "project_id")


def test_it_returns_what_the_orm_returns_with_converted_types(make_project):
    alpha = make_project("alpha")
    first = services.memory_entry_create(project=alpha.project, author="t", category="note",
                                         content="one").entry
    services.memory_entry_create(project=alpha.project, author="t", category="note",
                                 content="two", corrects=first.seq)
    expected = _newest("alpha").get()
    got = NEWEST.first(project_id="alpha")
    assert got == expected
    assert isinstance(got["uuid"], uuid.UUID) and got["corrects__uuid"] == first.uuid
    assert got["created_at"].tzinfo is not None


def test_each_call_uses_its_own_values_and_none_when_nothing_matches(make_project):
    for name in ("alpha", "beta"):
        target = make_project(name)
        for n in range(3 if name == "alpha" else 5):
            services.memory_entry_create(project=target.project, author="t", category="note",
                                         content=f"{name} {n}")
    assert NEWEST.first(project_id="alpha")["seq"] == 3
    assert NEWEST.first(project_id="beta")["seq"] == 5
    assert NEWEST.first(project_id="gamma") is None
    # A value that looks like SQL is only ever a parameter.
    assert NEWEST.first(project_id="alpha' OR '1'='1") is None


def test_it_refuses_missing_or_unknown_parameters(db):
    with pytest.raises(TypeError):
        NEWEST.first()
    with pytest.raises(TypeError):
        NEWEST.first(project_id="alpha", seq="1")


def test_a_builder_that_ignores_a_parameter_is_refused(db):
    unused = CompiledRead(lambda project_id: MemoryEntry.objects.values("seq")[:1], "project_id")
    with pytest.raises(ValueError, match="project_id"):
        unused.first(project_id="alpha")


def test_every_thread_runs_it_on_its_own_connection(live_db, make_project):
    alpha = make_project("alpha")
    services.memory_entry_create(project=alpha.project, author="t", category="note", content="x")
    seen: list[tuple[int, object]] = []

    def read() -> None:
        try:
            row = NEWEST.first(project_id="alpha")
            seen.append((row["seq"], id(connections["default"])))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [seq for seq, _ in seen] == [1, 1, 1, 1]
    assert len({conn for _, conn in seen}) == 4


def test_the_token_lookup_and_the_chain_head_match_the_orm(make_project):
    alpha = make_project("alpha")
    assert newest_chain_row("alpha") is None
    entry = services.memory_entry_create(project=alpha.project, author="t", category="note",
                                         content="head").entry
    row, created_at = newest_chain_row("alpha")
    assert row == next(MemoryEntry.objects.filter(pk=entry.pk).chain_rows()) == entry.chain_row()
    assert created_at == MemoryEntry.objects.get(pk=entry.pk).created_at
    from memory.api.authentication import principal_for_token

    principal = principal_for_token(alpha.token)
    token = ProjectToken.objects.get(token_hash=hash_token(alpha.token))
    assert (principal.project_id, principal.token_id, principal.name) == (
        "alpha", token.pk, token.name)
    assert (principal.project.pk, principal.project.name, principal.project.created_at) == (
        alpha.project.pk, alpha.project.name, alpha.project.created_at)
    services.project_token_revoke(project=alpha.project, name=token.name)
    assert principal_for_token(alpha.token) is None


def test_a_head_that_corrects_or_redacts_reads_its_links_uuids_too(make_project):
    from memory.redaction import memory_entry_redact

    alpha = make_project("alpha")
    first = services.memory_entry_create(project=alpha.project, author="t", category="note",
                                         content="first").entry
    with CaptureQueriesContext(connection) as plain:
        newest_chain_row("alpha")
    correction = services.memory_entry_create(project=alpha.project, author="t",
                                              category="note", content="fix", corrects=1).entry
    with CaptureQueriesContext(connection) as linked:
        row, _ = newest_chain_row("alpha")
    assert row == next(MemoryEntry.objects.filter(pk=correction.pk).chain_rows())
    assert row["corrects"] == str(first.uuid) and row["redacts"] is None
    # The links' uuids cost a read only when the head has a link.
    assert (len(plain), len(linked)) == (1, 2)

    record = memory_entry_redact(project=alpha.project, seq=1, reason="a mistake", by="t").record
    row, _ = newest_chain_row("alpha")
    assert row == next(MemoryEntry.objects.filter(pk=record.pk).chain_rows())
    assert row["redacts"] == str(first.uuid)


# --- CompiledUpdate ------------------------------------------------------------------------


def _charge_counter(project_id, cost):
    rows = ProjectQuota.objects.filter(project_id=project_id, kind="entries",
                                       used_bytes__lte=Value(1000, output_field=BigIntegerField())
                                       - Value(cost, output_field=BigIntegerField()))
    return rows, {"used_bytes": F("used_bytes") + Value(cost, output_field=BigIntegerField())}


CHARGE = CompiledUpdate(_charge_counter, strings=("project_id",), integers=("cost",))


def _used(project_id):
    return ProjectQuota.objects.get(project_id=project_id, kind="entries").used_bytes


def test_an_update_runs_with_each_calls_values_and_counts_its_rows(make_project):
    for name in ("alpha", "beta"):
        make_project(name)
    before = {name: _used(name) for name in ("alpha", "beta")}
    assert CHARGE.run(project_id="alpha", cost=7) == 1
    assert CHARGE.run(project_id="alpha", cost=5) == 1
    assert CHARGE.run(project_id="beta", cost=11) == 1
    assert _used("alpha") == before["alpha"] + 12
    assert _used("beta") == before["beta"] + 11
    # The condition is the compiled one, with this call's cost in both places.
    room = 1000 - _used("alpha")
    assert CHARGE.run(project_id="alpha", cost=room + 1) == 0
    assert _used("alpha") == before["alpha"] + 12
    assert CHARGE.run(project_id="alpha", cost=room) == 1
    assert _used("alpha") == 1000
    assert CHARGE.run(project_id="gamma", cost=1) == 0
    assert CHARGE.run(project_id="alpha' OR '1'='1", cost=0) == 0


def test_an_update_refuses_wrong_parameters_and_types(db):
    with pytest.raises(TypeError):
        CHARGE.run(project_id="alpha")
    with pytest.raises(TypeError, match="cost"):
        CHARGE.run(project_id="alpha", cost="7")
    with pytest.raises(TypeError, match="cost"):
        CHARGE.run(project_id="alpha", cost=True)
    with pytest.raises(TypeError, match="project_id"):
        CHARGE.run(project_id=7, cost=7)
    unused = CompiledUpdate(lambda project_id, cost: (ProjectQuota.objects.all(),
                                                      {"used_bytes": 0}),
                            strings=("project_id",), integers=("cost",))
    with pytest.raises(ValueError, match="cost"):
        unused.run(project_id="alpha", cost=1)


# --- inserts ------------------------------------------------------------------------------------

INSERT = CompiledInsert(MemoryEntry)


def _entry(project, seq, **fields):
    values = {"category": "note", "content": f"entry {seq}", "source": "test", "author": "t",
              "created_at": timezone.now(), "content_sha256": "a" * 64,
              "prev_hash": GENESIS_HASH, "hash": f"{seq:064x}", **fields}
    return MemoryEntry(project=project, seq=seq, **values)


def _stored(entry):
    return MemoryEntry.objects.filter(pk=entry.pk).values().get()


def test_an_insert_stores_what_save_stores_and_gives_the_row_its_key(make_project):
    project = make_project("alpha").project
    saved = _entry(project, 1)
    saved.save(force_insert=True)
    compiled = _entry(project, 2, corrects=saved, content="second", idempotency_key="k",
                      idempotency_scope="t", request_hash="b" * 64)

    INSERT.insert(compiled)

    assert compiled.pk is not None and compiled.pk != saved.pk
    assert not compiled._state.adding and compiled._state.db == "default"
    row, reference = _stored(compiled), _stored(saved)
    assert set(row) == set(reference)
    assert row["corrects_id"] == saved.pk and row["content"] == "second"
    assert row["created_at"] == compiled.created_at and row["uuid"] == compiled.uuid
    assert (row["idempotency_key"], row["idempotency_scope"]) == ("k", "t")
    # The stored row reads back as the instance has it.
    assert MemoryEntry.objects.get(pk=compiled.pk).chain_row() == compiled.chain_row()


def test_each_insert_is_one_statement_with_its_own_values(make_project):
    project = make_project("alpha").project
    INSERT.insert(_entry(project, 1))
    with CaptureQueriesContext(connection) as queries:
        INSERT.insert(_entry(project, 2, content="it's; DROP TABLE x --"))
    [statement] = [q["sql"] for q in queries]
    assert statement.startswith('INSERT INTO "memory_memoryentry"')
    assert list(MemoryEntry.objects.filter(project=project).order_by("seq")
                .values_list("seq", "content")) == [(1, "entry 1"), (2, "it's; DROP TABLE x --")]


def test_a_failed_insert_marks_the_transaction_for_rollback_and_stores_nothing(make_project):
    project = make_project("alpha").project
    INSERT.insert(_entry(project, 1))
    with pytest.raises(IntegrityError), transaction.atomic():
        duplicate = _entry(project, 1)
        with pytest.raises(IntegrityError):
            INSERT.insert(duplicate)
        assert transaction.get_rollback()
        assert duplicate._state.adding and duplicate.pk is None
        raise IntegrityError("the block rolls back")
    assert MemoryEntry.objects.filter(project=project).count() == 1


def test_a_stored_row_is_never_inserted_or_changed_again(make_project):
    project = make_project("alpha").project
    entry = _entry(project, 1)
    INSERT.insert(entry)
    entry.content = "changed"
    with pytest.raises(AppendOnlyError):
        INSERT.insert(entry)
    assert _stored(entry)["content"] == "entry 1"
    with pytest.raises(TypeError):
        INSERT.insert(project)


def test_with_a_save_receiver_it_saves_through_the_orm(make_project):
    project = make_project("alpha").project
    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance.seq)

    pre_save.connect(receiver, sender=MemoryEntry, dispatch_uid="test-compiled-insert")
    try:
        INSERT.insert(_entry(project, 1))
    finally:
        pre_save.disconnect(dispatch_uid="test-compiled-insert", sender=MemoryEntry)
    assert seen == [1]
    assert MemoryEntry.objects.filter(project=project, seq=1).exists()


def test_a_model_whose_key_the_database_does_not_assign_is_refused():
    with pytest.raises(ValueError, match="Project's inserts cannot be compiled"):
        CompiledInsert(Project)
