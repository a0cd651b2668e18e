"""Management command `member add|remove|list` (issue 14, section 5).

Bad input is a one-line CommandError (exit 1) or a usage error (exit 2) and
writes nothing; with --create, the new user and the membership commit
together, and the password never reaches stdout, stderr or the database in
clear.
"""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client

from memory import services
from memory.models import Membership, format_timestamp
from tests.subprocesses import manage

PASSWORD = "tidal-quokka-lantern-4821"


@pytest.fixture
def ana(db: None) -> User:
    return User.objects.create_user("ana", "ana@example.org", password=None)


@pytest.fixture
def bo(db: None) -> User:
    return User.objects.create_user("bo", "bo@example.org", password=None)


class Tty(StringIO):
    def isatty(self) -> bool:
        return True


def run(*args: str, stdin: Any = None) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    options = {"stdin": stdin} if stdin is not None else {}
    call_command(*args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def run_json(*args: str, stdin: Any = None) -> dict:
    out, err = run(*args, stdin=stdin)
    assert err == ""
    return json.loads(out)


def refused(*args: str, stdin: Any = None) -> CommandError:
    with pytest.raises(CommandError) as raised:
        run(*args, stdin=stdin)
    message = str(raised.value)
    assert message and "\n" not in message.strip()
    assert "Traceback" not in message
    return raised.value


def create(*args: str, password: str = PASSWORD) -> dict:
    return run_json("member", "add", *args, "--create", stdin=StringIO(password + "\n"))


def memberships() -> list[tuple[str, str, str]]:
    return list(
        Membership.objects.order_by("project_id", "user__username")
        .values_list("project_id", "user__username", "role")
    )


# --- member add, existing users -----------------------------------------------------


def test_add_gives_an_existing_user_a_role_in_a_project(alpha, ana):
    added = run_json("member", "add", "ana", "alpha", "--role", "viewer")
    membership = Membership.objects.get()
    assert (membership.user, membership.project_id, membership.role) == (ana, "alpha", "viewer")
    assert added == {
        "user": "ana", "project_id": "alpha", "role": "viewer",
        "created_at": format_timestamp(membership.created_at),
        "result": "added", "previous_role": None, "user_created": False,
    }


def test_a_member_added_by_the_command_can_read_the_project_and_no_other(alpha, beta, ana):
    run("member", "add", "ana", "alpha", "--role", "viewer")
    client = Client()
    client.force_login(ana)
    assert client.get("/p/alpha/").status_code == 200
    assert client.get("/p/beta/").status_code == 404


def test_add_of_an_existing_membership_with_another_role_changes_the_role(alpha, ana):
    run("member", "add", "ana", "alpha", "--role", "viewer")
    before = Membership.objects.get()
    changed = run_json("member", "add", "ana", "alpha", "--role", "operator")
    after = Membership.objects.get()
    assert (after.pk, after.role, after.created_at) == (before.pk, "operator", before.created_at)
    assert (changed["result"], changed["previous_role"], changed["role"]) == (
        "role_changed", "viewer", "operator")


def test_add_of_an_existing_membership_with_the_same_role_says_it_changed_nothing(alpha, ana):
    run("member", "add", "ana", "alpha", "--role", "operator")
    before = Membership.objects.get()
    again = run_json("member", "add", "ana", "alpha", "--role", "operator")
    assert (again["result"], again["previous_role"], again["role"]) == (
        "unchanged", "operator", "operator")
    after = Membership.objects.get()
    assert (after.pk, after.role, after.created_at) == (before.pk, before.role, before.created_at)


def test_a_user_can_be_a_member_of_two_projects_in_different_roles(alpha, beta, ana):
    run("member", "add", "ana", "alpha", "--role", "viewer")
    run("member", "add", "ana", "beta", "--role", "operator")
    assert memberships() == [("alpha", "ana", "viewer"), ("beta", "ana", "operator")]


def test_add_of_an_unknown_user_without_create_is_refused_naming_the_user(alpha):
    error = refused("member", "add", "ghost", "alpha", "--role", "viewer")
    assert error.returncode == 1
    assert "'ghost'" in str(error) and "--create" in str(error)
    assert not Membership.objects.exists() and not User.objects.exists()


def test_add_to_an_unknown_project_is_refused_naming_the_project(ana):
    error = refused("member", "add", "ana", "nope", "--role", "viewer")
    assert error.returncode == 1
    assert "'nope'" in str(error)
    assert not Membership.objects.exists()


@pytest.mark.parametrize("role", ["owner", "Viewer", "admin", ""])
def test_add_with_a_bad_role_is_a_usage_error(alpha, ana, role):
    error = refused("member", "add", "ana", "alpha", "--role", role)
    assert "--role" in str(error) and "invalid choice" in str(error)
    assert not Membership.objects.exists()


def test_add_without_a_role_is_a_usage_error_and_keeps_the_existing_role(alpha, ana):
    run("member", "add", "ana", "alpha", "--role", "operator")
    assert "--role" in str(refused("member", "add", "ana", "alpha"))
    assert memberships() == [("alpha", "ana", "operator")]


# --- member add --create ------------------------------------------------------------


def test_create_makes_a_normal_user_with_the_password_from_stdin_and_the_membership(alpha):
    out, err = run("member", "add", "cleo", "alpha", "--role", "operator", "--create",
                   stdin=StringIO(PASSWORD + "\n"))
    user = User.objects.get(username="cleo")
    assert user.check_password(PASSWORD)
    assert user.is_active and not user.is_staff and not user.is_superuser
    assert memberships() == [("alpha", "cleo", "operator")]
    created = json.loads(out)
    assert (created["result"], created["user_created"]) == ("added", True)
    assert PASSWORD not in out + err
    assert PASSWORD not in user.password


def test_a_created_user_signs_in_with_that_password_and_reads_the_project(alpha, beta):
    create("cleo", "alpha", "--role", "viewer")
    client = Client()
    assert client.login(username="cleo", password=PASSWORD)
    assert client.get("/p/alpha/").status_code == 200
    assert client.get("/p/beta/").status_code == 404


@pytest.mark.parametrize("rest", ["\n", "\r\n", "\nsecond line\n", ""])
def test_create_reads_one_line_and_strips_only_its_newline(alpha, rest):
    password = f"  {PASSWORD} "
    run("member", "add", "cleo", "alpha", "--role", "viewer", "--create",
        stdin=StringIO(password + rest))
    user = User.objects.get(username="cleo")
    assert user.check_password(password)
    assert not user.check_password(password.strip())


@pytest.mark.parametrize(
    ("password", "says"),
    [
        ("x7#kq", "too short"),
        ("password123", "too common"),
        ("8302917465", "entirely numeric"),
        ("cleopatra-cleopatra", "too similar to the username"),
    ],
)
def test_create_with_a_weak_password_is_refused_with_the_validators_message(
    alpha, password, says
):
    error = refused("member", "add", "cleopatra-cleopatra", "alpha", "--role", "viewer",
                    "--create", stdin=StringIO(password + "\n"))
    assert error.returncode == 1
    assert says in str(error) and "no user created" in str(error)
    assert password not in str(error).replace("cleopatra-cleopatra", "")
    assert not User.objects.exists() and not Membership.objects.exists()


def test_create_with_an_empty_password_is_refused(alpha):
    error = refused("member", "add", "cleo", "alpha", "--role", "viewer", "--create",
                    stdin=StringIO("\n"))
    assert "empty" in str(error)
    assert not User.objects.exists() and not Membership.objects.exists()


def test_create_with_nothing_on_stdin_is_refused(alpha):
    error = refused("member", "add", "cleo", "alpha", "--role", "viewer", "--create",
                    stdin=StringIO(""))
    assert "stdin" in str(error)
    assert not User.objects.exists() and not Membership.objects.exists()


def test_create_of_an_existing_user_is_refused_and_leaves_its_password(alpha, db):
    User.objects.create_user("ana", password="ana-old-password-993")
    error = refused("member", "add", "ana", "alpha", "--role", "viewer", "--create",
                    stdin=StringIO(PASSWORD + "\n"))
    assert "'ana'" in str(error) and "already exists" in str(error)
    user = User.objects.get()
    assert user.check_password("ana-old-password-993") and not user.check_password(PASSWORD)
    assert not Membership.objects.exists()


def test_create_for_an_unknown_project_creates_no_user_and_reads_no_password(db):
    stdin = StringIO(PASSWORD + "\n")
    error = refused("member", "add", "cleo", "nope", "--role", "viewer", "--create", stdin=stdin)
    assert "'nope'" in str(error)
    assert stdin.tell() == 0
    assert not User.objects.exists() and not Membership.objects.exists()


def test_create_with_a_bad_username_is_refused(alpha):
    error = refused("member", "add", "no spaces!", "alpha", "--role", "viewer", "--create",
                    stdin=StringIO(PASSWORD + "\n"))
    assert "username" in str(error)
    assert not User.objects.exists() and not Membership.objects.exists()


def test_create_on_a_terminal_prompts_twice_without_echo(alpha, monkeypatch):
    prompts: list[str] = []

    def getpass(prompt: str = "Password: ") -> str:
        prompts.append(prompt)
        return PASSWORD

    monkeypatch.setattr("getpass.getpass", getpass)
    out, err = run("member", "add", "cleo", "alpha", "--role", "viewer", "--create",
                   stdin=Tty(""))
    assert len(prompts) == 2
    assert User.objects.get(username="cleo").check_password(PASSWORD)
    assert PASSWORD not in out + err


def test_create_on_a_terminal_refuses_passwords_that_do_not_match(alpha, monkeypatch):
    answers = iter([PASSWORD, PASSWORD + "x"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    error = refused("member", "add", "cleo", "alpha", "--role", "viewer", "--create",
                    stdin=Tty(""))
    assert "do not match" in str(error)
    assert PASSWORD not in str(error)
    assert not User.objects.exists() and not Membership.objects.exists()


# --- member remove ------------------------------------------------------------------


def test_remove_ends_the_membership_and_keeps_the_user_and_other_memberships(alpha, beta, ana):
    run("member", "add", "ana", "alpha", "--role", "viewer")
    run("member", "add", "ana", "beta", "--role", "viewer")
    removed = run_json("member", "remove", "ana", "alpha")
    assert removed == {"user": "ana", "project_id": "alpha", "removed": 1}
    assert memberships() == [("beta", "ana", "viewer")]
    assert User.objects.filter(username="ana").exists()
    client = Client()
    client.force_login(ana)
    assert client.get("/p/alpha/").status_code == 404


def test_remove_of_a_membership_that_does_not_exist_is_refused(alpha, beta, ana):
    run("member", "add", "ana", "beta", "--role", "viewer")
    error = refused("member", "remove", "ana", "alpha")
    assert error.returncode == 1
    assert "'ana'" in str(error) and "alpha" in str(error)
    assert memberships() == [("beta", "ana", "viewer")]


def test_remove_of_an_unknown_user_is_refused(alpha):
    assert "'ghost'" in str(refused("member", "remove", "ghost", "alpha"))


def test_remove_from_an_unknown_project_is_refused(ana):
    assert "'nope'" in str(refused("member", "remove", "ana", "nope"))


# --- member list --------------------------------------------------------------------


def test_list_prints_every_membership_by_project_then_user(make_project, ana, bo):
    make_project("zeta")
    make_project("alpha")
    for user, project, role in [("bo", "zeta", "viewer"), ("bo", "alpha", "operator"),
                                ("ana", "zeta", "operator"), ("ana", "alpha", "viewer")]:
        run("member", "add", user, project, "--role", role)
    items = run_json("member", "list")["items"]
    assert [(i["project_id"], i["user"], i["role"]) for i in items] == [
        ("alpha", "ana", "viewer"), ("alpha", "bo", "operator"),
        ("zeta", "ana", "operator"), ("zeta", "bo", "viewer"),
    ]
    first = Membership.objects.get(user=ana, project_id="alpha")
    assert items[0] == {"user": "ana", "project_id": "alpha", "role": "viewer",
                        "created_at": format_timestamp(first.created_at)}


def test_list_of_one_project_prints_only_its_memberships(alpha, beta, ana, bo):
    run("member", "add", "bo", "alpha", "--role", "viewer")
    run("member", "add", "ana", "beta", "--role", "viewer")
    items = run_json("member", "list", "--project", "alpha")["items"]
    assert [(i["project_id"], i["user"]) for i in items] == [("alpha", "bo")]


def test_list_with_no_memberships_prints_no_items(alpha):
    assert run_json("member", "list") == {"items": []}
    assert run_json("member", "list", "--project", "alpha") == {"items": []}


def test_list_of_an_unknown_project_is_refused(db):
    assert "'nope'" in str(refused("member", "list", "--project", "nope"))


# --- the services -------------------------------------------------------------------


def test_membership_set_refuses_a_role_outside_the_choices(alpha, ana):
    with pytest.raises(ValidationError) as raised:
        services.membership_set(user=ana, project=alpha.project, role="owner")
    assert raised.value.message_dict == {"role": ["must be one of viewer, operator"]}
    assert not Membership.objects.exists()


def test_membership_set_reports_whether_it_wrote(alpha, ana):
    project = alpha.project
    assert services.membership_set(user=ana, project=project, role="viewer")[1] is True
    assert services.membership_set(user=ana, project=project, role="viewer")[1] is False
    membership, changed = services.membership_set(user=ana, project=project, role="operator")
    assert changed is True and membership.role == "operator"
    assert memberships() == [("alpha", "ana", "operator")]


def test_membership_remove_returns_how_many_it_deleted(alpha, ana):
    services.membership_set(user=ana, project=alpha.project, role="viewer")
    assert services.membership_remove(user=ana, project=alpha.project) == 1
    assert services.membership_remove(user=ana, project=alpha.project) == 0
    assert not Membership.objects.exists()


# --- as a real process --------------------------------------------------------------


@pytest.mark.slow
def test_a_real_add_create_reads_the_password_from_stdin(live_db, make_project, memory_root):
    make_project("proc")
    completed = manage(memory_root, "member", "add", "cleo", "proc", "--role", "viewer",
                       "--create", stdin=PASSWORD + "\n")
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    assert json.loads(completed.stdout)["user_created"] is True
    assert PASSWORD not in completed.stdout + completed.stderr
    user = User.objects.get(username="cleo")
    assert user.check_password(PASSWORD) and not user.is_staff
    assert memberships() == [("proc", "cleo", "viewer")]


def test_a_real_add_create_with_a_weak_password_exits_1_in_one_line(
    live_db, make_project, memory_root
):
    make_project("proc")
    weak = "password123"
    completed = manage(memory_root, "member", "add", "cleo", "proc", "--role", "viewer",
                       "--create", stdin=weak + "\n")
    assert completed.returncode == 1
    assert len(completed.stderr.strip().splitlines()) == 1
    assert "Traceback" not in completed.stderr and "too common" in completed.stderr
    assert weak not in completed.stdout + completed.stderr
    assert not User.objects.exists() and not Membership.objects.exists()


def test_a_real_add_with_a_bad_role_exits_2_in_one_line(live_db, make_project, memory_root):
    make_project("proc")
    User.objects.create_user("ana")
    completed = manage(memory_root, "member", "add", "ana", "proc", "--role", "owner")
    assert completed.returncode == 2
    assert len(completed.stderr.strip().splitlines()) == 1
    assert "--role" in completed.stderr and "usage:" not in completed.stderr
    assert not Membership.objects.exists()


def test_membership_remove_leaves_other_members_of_the_project(alpha, ana):
    bob = User.objects.create_user("bob")
    services.membership_set(user=ana, project=alpha.project, role="viewer")
    services.membership_set(user=bob, project=alpha.project, role="operator")
    assert services.membership_remove(user=ana, project=alpha.project) == 1
    assert memberships() == [("alpha", "bob", "operator")]
