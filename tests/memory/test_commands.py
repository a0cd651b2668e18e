"""Management commands `project` and `memory` (contract §7).

Bad input is a one-line CommandError (a one-line stderr message and a
non-zero exit from manage.py) and writes nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction

from gedweb import append_only
from memory import checkpoints, services
from memory.models import MemoryEntry, Project, ProjectToken
from tests.django_fixtures import bearer_client, is_postgres
from tests.subprocesses import manage


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def run_json(*args: str) -> dict:
    return json.loads(run(*args))


def refused(*args: str) -> CommandError:
    with pytest.raises(CommandError) as raised:
        run(*args)
    message = str(raised.value)
    assert message and "\n" not in message.strip()
    assert "Traceback" not in message
    return raised.value


def status_with(token: str, project_id: str) -> int:
    return bearer_client(token).get(f"/v1/projects/{project_id}").status_code


def add(project_id: str, content: str, *extra: str) -> dict:
    return run_json(
        "memory", "add", "--project", project_id, "--category", "decision", "--content", content,
        *extra,
    )


# --- project ------------------------------------------------------------------------


def test_project_create_prints_the_project_and_a_working_token(db):
    created = run_json("project", "create", "gamma", "--name", "Gamma project")
    assert created["id"] == "gamma" and created["name"] == "Gamma project"
    assert created["token"].startswith("gwp_")
    assert Project.objects.filter(pk="gamma", name="Gamma project").exists()
    assert status_with(created["token"], "gamma") == 200


def test_project_create_stores_only_the_token_hash(db):
    created = run_json("project", "create", "gamma", "--name", "Gamma")
    stored = ProjectToken.objects.get(project_id="gamma")
    assert created["token"] not in (stored.token_hash, stored.prefix)
    assert len(stored.token_hash) == 64


def test_project_create_of_an_existing_id_is_refused(alpha):
    assert str(refused("project", "create", "alpha", "--name", "Again")) == (
        "project alpha already exists")
    assert Project.objects.get(pk="alpha").name == "Alpha"
    assert ProjectToken.objects.filter(project_id="alpha").count() == 1


def test_project_create_with_a_bad_id_is_refused_and_writes_nothing(db):
    error = refused("project", "create", "Bad_ID", "--name", "x")
    assert "id" in str(error)
    assert not Project.objects.exists() and not ProjectToken.objects.exists()


def test_project_token_prints_a_new_working_token(alpha):
    issued = run_json("project", "token", "alpha", "--name", "ci-bot")
    assert issued["project_id"] == "alpha" and issued["name"] == "ci-bot"
    assert issued["token"].startswith("gwp_") and issued["token"] != alpha.token
    assert status_with(issued["token"], "alpha") == 200
    assert status_with(alpha.token, "alpha") == 200


def test_a_token_is_scoped_to_its_project(alpha, beta):
    issued = run_json("project", "token", "alpha", "--name", "ci-bot")
    assert status_with(issued["token"], "beta") == 404


def test_a_second_active_token_with_the_same_name_is_refused(alpha):
    run("project", "token", "alpha", "--name", "ci-bot")
    assert str(refused("project", "token", "alpha", "--name", "ci-bot")) == (
        "project alpha already has an active token named 'ci-bot'")
    assert ProjectToken.objects.active().filter(project=alpha.project, name="ci-bot").count() == 1


def test_project_token_for_an_unknown_project_is_refused(db):
    assert "nope" in str(refused("project", "token", "nope", "--name", "x"))
    assert not ProjectToken.objects.exists()


def test_project_revoke_makes_the_token_fail_at_once(alpha):
    issued = run_json("project", "token", "alpha", "--name", "ci-bot")
    assert status_with(issued["token"], "alpha") == 200
    revoked = run_json("project", "revoke", "alpha", "--name", "ci-bot")
    assert revoked == {"project_id": "alpha", "name": "ci-bot", "revoked": 1}
    response = bearer_client(issued["token"]).get("/v1/projects/alpha")
    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"
    assert status_with(alpha.token, "alpha") == 200


def test_revoking_an_unknown_token_name_is_refused(alpha):
    assert "ghost" in str(refused("project", "revoke", "alpha", "--name", "ghost"))
    assert status_with(alpha.token, "alpha") == 200


def test_revoking_twice_is_refused_the_second_time(alpha):
    run("project", "revoke", "alpha", "--name", "default")
    assert str(refused("project", "revoke", "alpha", "--name", "default")) == (
        "project alpha has no active token named 'default'")


def test_a_name_can_be_reissued_after_revocation(alpha):
    run("project", "revoke", "alpha", "--name", "default")
    issued = run_json("project", "token", "alpha", "--name", "default")
    assert status_with(issued["token"], "alpha") == 200
    assert status_with(alpha.token, "alpha") == 401


def test_project_list_shows_projects_with_their_active_token_names(alpha, beta):
    run("project", "token", "alpha", "--name", "ci-bot")
    run("project", "revoke", "alpha", "--name", "default")
    listed = run_json("project", "list")
    assert [(item["id"], item["tokens"]) for item in listed["items"]] == [
        ("alpha", ["ci-bot"]),
        ("beta", ["default"]),
    ]
    assert all("token" not in item for item in listed["items"])


# --- memory add -------------------------------------------------------------------


def test_memory_add_prints_the_entry_with_author_cli(alpha):
    entry = add("alpha", "chosen by the operator ü", "--source", "runbook")
    stored = MemoryEntry.objects.get(project=alpha.project)
    assert entry == {**stored.chain_row(), "redacted": False, "corrected_by": []}
    assert (entry["author"], entry["seq"], entry["source"]) == ("cli", 1, "runbook")
    assert entry["content"] == "chosen by the operator ü"


def test_memory_add_can_correct_by_seq_and_by_uuid(alpha):
    first = add("alpha", "first")
    by_seq = add("alpha", "fix by seq", "--corrects", "1")
    by_uuid = add("alpha", "fix by uuid", "--corrects", first["id"])
    assert by_seq["corrects"] == by_uuid["corrects"] == first["id"]
    assert MemoryEntry.objects.filter(corrects__uuid=first["id"]).count() == 2


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--category", "Bad Category", "--content", "x"], "category"),
        (["--category", "decision", "--content", "   \n"], "content"),
        (["--category", "decision", "--content", "x", "--source", "two\nlines"], "source"),
        (["--category", "decision", "--content", "x", "--corrects", "99"], "corrects"),
        (["--category", "decision", "--content", "x", "--corrects", "not-a-ref"], "corrects"),
    ],
)
def test_memory_add_refuses_bad_input_in_one_line_and_writes_nothing(alpha, args, field):
    error = refused("memory", "add", "--project", "alpha", *args)
    assert field in str(error)
    assert MemoryEntry.objects.count() == 0


def test_memory_add_refuses_a_correction_of_another_projects_entry(alpha, beta):
    other = add("beta", "beta's entry")
    error = refused("memory", "add", "--project", "alpha", "--category", "c", "--content", "x",
                    "--corrects", other["id"])
    assert str(error) == "corrects: no entry with this id or seq in this project"
    assert MemoryEntry.objects.filter(project=alpha.project).count() == 0


def test_memory_add_to_an_unknown_project_is_refused(db):
    error = refused("memory", "add", "--project", "nope", "--category", "c", "--content", "x")
    assert "nope" in str(error)
    assert MemoryEntry.objects.count() == 0


def test_memory_add_refuses_content_over_32000_bytes(alpha):
    error = refused("memory", "add", "--project", "alpha", "--category", "c",
                    "--content", "é" * 16001)
    assert str(error) == "content: must be at most 32000 UTF-8 bytes, got 32002"
    assert MemoryEntry.objects.count() == 0


# --- memory list -------------------------------------------------------------------


@pytest.fixture
def listed_project(alpha):
    for index in range(1, 8):
        category = "decision" if index % 2 else "note"
        services.memory_entry_create(
            project=alpha.project, author="ana", category=category, content=f"entry {index}"
        )
    return alpha


def listed_seqs(*args: str) -> list[int]:
    listed = run_json("memory", "list", "--project", "alpha", *args)
    return [item["seq"] for item in listed["items"]]


def test_memory_list_prints_every_entry_oldest_first(listed_project):
    items = run_json("memory", "list", "--project", "alpha")["items"]
    assert [item["seq"] for item in items] == [1, 2, 3, 4, 5, 6, 7]
    first = MemoryEntry.objects.get(project=listed_project.project, seq=1)
    assert items[0] == {**first.chain_row(), "redacted": False, "corrected_by": []}


def test_memory_list_honours_limit(listed_project):
    assert listed_seqs("--limit", "3") == [1, 2, 3]


def test_memory_list_honours_after(listed_project):
    assert listed_seqs("--after", "5") == [6, 7]


def test_memory_list_honours_category(listed_project):
    assert listed_seqs("--category", "note") == [2, 4, 6]


def test_memory_list_combines_its_filters(listed_project):
    assert listed_seqs("--category", "decision", "--after", "1", "--limit", "2") == [3, 5]


def test_memory_list_of_an_empty_project_prints_no_items(alpha):
    assert run_json("memory", "list", "--project", "alpha") == {"items": []}


@pytest.mark.parametrize("limit", ["0", "501", "-1"])
def test_memory_list_refuses_a_limit_outside_1_to_500(listed_project, limit):
    error = refused("memory", "list", "--project", "alpha", "--limit", limit)
    assert str(error) == "--limit must be between 1 and 500"


def test_memory_list_of_an_unknown_project_is_refused(db):
    assert str(refused("memory", "list", "--project", "nope")) == "no project 'nope'"


# --- memory verify --------------------------------------------------------------------


def tamper(project_id: str, seq: int, content: str) -> None:
    """Rewrite one entry behind the triggers' back, as a superuser could."""
    with connection.cursor() as cursor:
        if is_postgres():
            # ALTER TABLE refuses to run while deferred FK checks are queued.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(
                "ALTER TABLE memory_memoryentry DISABLE TRIGGER memory_entry_append_only"
            )
            cursor.execute(
                "UPDATE memory_memoryentry SET content = %s WHERE project_id = %s AND seq = %s",
                [content, project_id, seq],
            )
            cursor.execute("ALTER TABLE memory_memoryentry ENABLE TRIGGER memory_entry_append_only")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        else:
            recreate = append_only.expected_triggers("sqlite", append_only.ENTRIES)[
                "memory_entry_refuse_update"]
            cursor.execute("DROP TRIGGER memory_entry_refuse_update")
            cursor.execute(
                "UPDATE memory_memoryentry SET content = %s WHERE project_id = %s AND seq = %s",
                [content, project_id, seq],
            )
            cursor.execute(recreate)


def test_memory_verify_of_an_intact_chain_prints_the_report(listed_project):
    report = run_json("memory", "verify", "--project", "alpha")
    head = MemoryEntry.objects.get(project=listed_project.project, seq=7).hash
    checkpoint = report.pop("checkpoint")
    assert report == {"ok": True, "entries": 7, "head": head, "first_bad_seq": None,
                      "redacted": 0, "problems": []}
    # The intact head it verified is recorded, signed by the installation's key.
    assert (checkpoint["seq"], checkpoint["hash"]) == (7, head)
    assert checkpoint["key_id"] == checkpoints.key_id()


def test_memory_verify_of_an_empty_project_is_ok(alpha):
    assert run_json("memory", "verify", "--project", "alpha")["ok"] is True


def test_memory_verify_of_a_tampered_chain_exits_1_naming_the_first_bad_seq(listed_project):
    tamper("alpha", 4, "rewritten behind the triggers")
    out = StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("memory", "verify", "--project", "alpha", stdout=out)
    assert raised.value.returncode == 1
    assert "seq 4" in str(raised.value)
    assert json.loads(out.getvalue()) | {"head": None} == {
        "ok": False, "entries": 7, "head": None, "first_bad_seq": 4, "checkpoint": None,
        "redacted": 0,
        "problems": [{"kind": "chain_broken", "seq": 4,
                      "message": "hash chain breaks at seq 4 (of 7 entries): the content of "
                      "seq 4 is neither the text its content_sha256 names nor the notice of "
                      "a redaction record (content altered)"}],
    }


def test_the_append_only_trigger_is_back_after_tampering(listed_project):
    tamper("alpha", 2, "rewritten")
    with pytest.raises(IntegrityError), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE memory_memoryentry SET content = 'again' WHERE seq = 3")


def test_memory_verify_of_an_unknown_project_is_refused(db):
    assert str(refused("memory", "verify", "--project", "nope")) == "no project 'nope'"


# --- as a real process ------------------------------------------------------------------


def test_bad_input_to_a_real_command_is_one_line_on_stderr_without_a_traceback(
    live_db, make_project, memory_root
):
    make_project("proc")
    completed = manage(
        memory_root, "memory", "add", "--project", "proc", "--category", "Not Valid",
        "--content", "x",
    )
    assert completed.returncode == 1
    assert completed.stderr == (
        "CommandError: category: must start with a lowercase letter and use only a-z, 0-9, "
        "'_', '.', '-' (at most 64 characters)\n")
    assert "category" in completed.stderr
    assert completed.stdout == ""
    assert MemoryEntry.objects.count() == 0


@pytest.mark.slow
def test_a_real_verify_of_a_tampered_chain_exits_1(live_db, make_project, memory_root):
    target = make_project("proc")
    for index in range(3):
        services.memory_entry_create(
            project=target.project, author="ana", category="note", content=f"n{index}"
        )
    tamper("proc", 2, "changed")
    completed = manage(memory_root, "memory", "verify", "--project", "proc")
    assert completed.returncode == 1
    assert "seq 2" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_a_missing_option_is_one_line_on_stderr(tmp_path):

    result = subprocess.run(
        [sys.executable, "manage.py", "memory", "add", "--project", "demo"],
        capture_output=True, text=True, timeout=60,
        env={**__import__("os").environ, "GEDWEB_DEMO_PROJECT": "false",
             "DATABASE_URL": f"sqlite:///{tmp_path}/x.sqlite3"},
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "--category" in result.stderr
    assert "usage:" not in result.stderr
