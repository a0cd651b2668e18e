"""`manage.py doctor` checks the database's own defences (issue 16 §3) and token names (§7).

Every append-only table's triggers must exist, be the statements the
migrations created, and fire; on PostgreSQL the trigger function must be
intact, the session must not be in replica mode, and the role the server
connects as must lack UPDATE, DELETE and TRUNCATE on those tables, which is
reported, not failed, for a superuser or the tables' owner. Each test breaks
one defence for real, in the test's transaction, and reads doctor's lines.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from gedweb import append_only
from governance import doctor
from memory.models import ProjectToken, hash_token
from tests.django_fixtures import is_postgres
from tests.interop.test_doctor import doctor_run, failures
from tests.security.test_tamper import APPEND_ONLY_TABLES, security_doc_grants

sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's triggers")
postgres_only = pytest.mark.skipif(connection.vendor != "postgresql",
                                   reason="PostgreSQL's triggers, functions and roles")


def execute(*statements: str) -> None:
    with connection.cursor() as cursor:
        if is_postgres():
            # ALTER TABLE refuses to run while deferred FK checks are queued.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        for statement in statements:
            cursor.execute(statement)


def test_the_checked_tables_are_the_ones_the_migrations_made_append_only():
    assert sorted(append_only.TABLES) == sorted(APPEND_ONLY_TABLES)


def test_the_registry_lists_each_table_after_the_tables_it_references():
    """tests/django_fixtures.py empties the tables in reverse registry order, children first."""
    from django.apps import apps

    models = {model._meta.db_table: model for model in apps.get_models()}
    order = list(append_only.TABLES)
    checked = 0
    for table in order:
        for field in models[table]._meta.get_fields():
            target = getattr(field, "related_model", None)
            if field.many_to_one and target._meta.db_table in order and target is not models[table]:
                assert order.index(target._meta.db_table) < order.index(table), (table, field)
                checked += 1
    assert checked >= 5  # the work item's four children, the decision


def test_an_intact_database_passes(alpha):
    code, lines, _ = doctor_run("--project", "alpha")
    assert code == 0
    assert "ok   database: append-only triggers (17 tables refuse UPDATE and DELETE)" in lines


# --- SQLite -----------------------------------------------------------------------------------


@sqlite_only
def test_a_dropped_entry_trigger_is_named(alpha):
    execute("DROP TRIGGER memory_entry_refuse_update")

    code, lines, _ = doctor_run("--project", "alpha")

    assert code == 1
    assert failures(lines) == [
        "FAIL database: append-only triggers: memory_memoryentry: trigger "
        "memory_entry_refuse_update is missing, so the database no longer refuses UPDATE there",
    ]


@sqlite_only
def test_every_dropped_trigger_is_named(alpha):
    execute(*(statement for table in ("memory_documentrevision", "governance_standardsdecision")
              for statement in append_only.sqlite_backward(table)))

    _, lines, _ = doctor_run("--project", "alpha")

    assert [line.split(": ", 2)[2] for line in failures(lines)] == [
        f"{table}: trigger {table}_refuse_{op} is missing, so the database no longer refuses "
        f"{op.upper()} there"
        for table in ("memory_documentrevision", "governance_standardsdecision")
        for op in ("update", "delete")
    ]


@sqlite_only
def test_a_trigger_recreated_to_do_nothing_is_found(alpha):
    execute("DROP TRIGGER governance_skill_refuse_delete",
            "CREATE TRIGGER governance_skill_refuse_delete BEFORE DELETE ON governance_skill "
            "BEGIN SELECT 1; END")

    _, lines, _ = doctor_run("--project", "alpha")

    assert failures(lines) == [
        "FAIL database: append-only triggers: governance_skill: trigger "
        "governance_skill_refuse_delete is not the one GedWeb's migrations created "
        "(its statement differs)",
    ]


@sqlite_only
def test_a_trigger_moved_to_another_table_is_found(alpha):
    execute("DROP TRIGGER governance_workfile_refuse_update",
            "CREATE TRIGGER governance_workfile_refuse_update BEFORE UPDATE ON governance_skill "
            "BEGIN SELECT RAISE(ABORT, 'governance_workfile rows are append-only: UPDATE "
            "refused'); END")

    _, lines, _ = doctor_run("--project", "alpha")

    assert [line for line in failures(lines) if "governance_workfile_refuse_update" in line]


# --- PostgreSQL -------------------------------------------------------------------------------


@postgres_only
def test_a_disabled_trigger_is_named(alpha):
    table = "governance_standardsdecision"
    execute(f"ALTER TABLE {table} DISABLE TRIGGER {table}_append_only")

    code, lines, _ = doctor_run("--project", "alpha")

    assert code == 1
    assert failures(lines) == [
        f"FAIL database: append-only triggers: {table}: trigger {table}_append_only is disabled "
        f"(tgenabled 'D': ALTER TABLE ... ENABLE TRIGGER {table}_append_only)",
    ]


@postgres_only
def test_a_trigger_that_fires_only_on_replicas_is_named(alpha):
    execute("ALTER TABLE memory_memoryentry ENABLE REPLICA TRIGGER memory_entry_append_only")

    _, lines, _ = doctor_run("--project", "alpha")

    assert [line for line in failures(lines) if "memory_entry_append_only is disabled "
            "(tgenabled 'R'" in line]


@postgres_only
def test_a_dropped_trigger_is_named(alpha):
    execute("DROP TRIGGER memory_chaincheckpoint_append_only ON memory_chaincheckpoint")

    _, lines, _ = doctor_run("--project", "alpha")

    assert failures(lines) == [
        "FAIL database: append-only triggers: memory_chaincheckpoint: trigger "
        "memory_chaincheckpoint_append_only is missing, so the database no longer refuses "
        "UPDATE and DELETE there",
    ]


@postgres_only
def test_a_trigger_recreated_for_inserts_only_is_found(alpha):
    table = "governance_skill"
    execute(f"DROP TRIGGER {table}_append_only ON {table}",
            f"CREATE TRIGGER {table}_append_only BEFORE INSERT ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION gedweb_refuse_change()")

    _, lines, _ = doctor_run("--project", "alpha")

    assert [line for line in failures(lines)
            if f"{table}_append_only is not the one GedWeb's migrations created" in line]


@postgres_only
def test_a_trigger_function_that_lets_changes_through_is_found(alpha):
    execute("CREATE OR REPLACE FUNCTION gedweb_refuse_change() RETURNS trigger "
            "LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$")

    _, lines, _ = doctor_run("--project", "alpha")

    assert failures(lines) == [
        "FAIL database: append-only triggers: function gedweb_refuse_change() is not the one "
        "GedWeb's migrations created: its body differs",
    ]


@postgres_only
def test_replica_mode_is_found(alpha):
    execute("SET LOCAL session_replication_role = replica")

    _, lines, _ = doctor_run("--project", "alpha")

    assert failures(lines) == [
        "FAIL database: append-only triggers: session_replication_role is 'replica' for this "
        "connection (a role or database setting): row triggers do not fire",
    ]


@pytest.fixture
def app_role(alpha: Any) -> Any:
    """docs/security.md's application role, created in the test's transaction, as SET ROLE."""
    role = "gedweb_app_doctor"
    sql = security_doc_grants().replace("gedweb_app", role)
    with connection.cursor() as cursor:
        for statement in filter(None, (s.strip() for s in sql.split(";"))):
            cursor.execute(statement)
        yield role, cursor
        cursor.execute("RESET ROLE")


@postgres_only
def test_the_documented_application_role_passes(app_role):
    role, cursor = app_role
    cursor.execute(f"SET ROLE {role}")

    outcome = doctor.check_database_privileges()

    assert outcome.ok
    assert outcome.summary == (
        f"role {role!r} cannot UPDATE, DELETE or TRUNCATE an append-only table")


@postgres_only
def test_a_role_that_may_rewrite_a_table_is_named(app_role):
    role, cursor = app_role
    cursor.execute(f"GRANT UPDATE, TRUNCATE ON governance_standardsdecision TO {role}")
    cursor.execute(f"SET ROLE {role}")

    outcome = doctor.check_database_privileges()

    assert outcome.problems == [
        f"governance_standardsdecision: role {role!r} has UPDATE, TRUNCATE "
        f"(REVOKE UPDATE, TRUNCATE ON governance_standardsdecision FROM {role})",
    ]


@postgres_only
def test_the_owner_or_a_superuser_is_reported_not_failed(alpha):
    outcome = doctor.check_database_privileges()
    assert outcome.ok
    assert "a superuser: it may UPDATE, DELETE and TRUNCATE the append-only tables" in (
        outcome.summary)


# --- token names (§7) -------------------------------------------------------------------------


def old_token(alpha: Any, name: str, revoked: bool = False) -> ProjectToken:
    """A token named before the rule, stored as it was (the validator is not run)."""
    from django.utils import timezone

    return ProjectToken.objects.create(
        project=alpha.project, name=name, token_hash=hash_token(f"old-{name}-token-0123456789"),
        prefix="old", revoked_at=timezone.now() if revoked else None)


def test_an_active_token_named_like_gedwebs_own_author_is_named(alpha):
    old_token(alpha, "admin")
    old_token(alpha, "user:root")

    code, lines, _ = doctor_run("--project", "alpha")

    assert code == 1
    assert failures(lines) == [
        f"FAIL alpha: token-names: active token {name!r} writes as an author GedWeb keeps for "
        "itself (admin, cli, system or a name with ':'): revoke it (manage.py project revoke "
        f"alpha --name {name}) and issue another"
        for name in ("admin", "user:root")
    ]


def test_a_revoked_one_is_only_noted(alpha):
    old_token(alpha, "cli", revoked=True)

    code, lines, _ = doctor_run("--project", "alpha")

    assert code == 0
    assert ("ok   alpha: token-names (revoked tokens named like GedWeb's own authors: 'cli'; "
            "entries with those authors may be theirs)") in lines
