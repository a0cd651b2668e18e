"""Settings from the environment (contract §1): refusals at start, defaults, the demo project.

Each start runs in a fresh interpreter with a controlled environment,
because settings are read once per process.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from memory import services
from memory.models import Project, ProjectToken, hash_token
from tests.django_fixtures import bearer_client

SETUP = (
    "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='gedweb.settings'; django.setup()"
)
# Reading settings needs no app loading; that keeps these starts cheap.
SHOW = (
    "import hashlib, json, os; os.environ['DJANGO_SETTINGS_MODULE']='gedweb.settings';"
    " from django.conf import settings as s; print(json.dumps({"
    "'DEBUG': s.DEBUG, 'DEMO_PROJECT': s.DEMO_PROJECT, 'MIRROR_WRITER': s.MIRROR_WRITER,"
    " 'PRODUCTION': s.PRODUCTION, 'ADMIN_TOKEN': s.ADMIN_TOKEN,"
    " 'SECRET_KEY': hashlib.sha256(s.SECRET_KEY.encode()).hexdigest(),"
    " 'SECRET_KEY_LENGTH': len(s.SECRET_KEY),"
    " 'SIGNING_KEY': hashlib.sha256(s.SIGNING_KEY.encode()).hexdigest(),"
    " 'MARKDOWN_CACHE': s.CACHES['markdown']['BACKEND']}))"
)


def start(
    tmp_path: Path, code: str = SETUP, args: list[str] | None = None, **variables: str | None
) -> subprocess.CompletedProcess:
    """Run Python with only the given GedWeb/Django variables set (None leaves one out)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PYTHONDONTWRITEBYTECODE": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path}/db/gedweb.sqlite3",
        "GEDWEB_MEMORY_ROOT": str(tmp_path / "bridge-memory"),
        "GEDWEB_DATA_DIR": str(tmp_path / "data"),
    }
    env.update({name: value for name, value in variables.items() if value is not None})
    for name in [name for name, value in variables.items() if value is None]:
        env.pop(name, None)
    command = [sys.executable, *(args if args is not None else ["-c", code])]
    return subprocess.run(
        command,
        cwd=django_settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def production(**overrides: str | None) -> dict[str, str | None]:
    values: dict[str, str | None] = {
        "GEDWEB_PRODUCTION": "true",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
        "GEDWEB_SIGNING_KEY": secrets.token_urlsafe(64),
        "GEDWEB_ADMIN_TOKEN": secrets.token_urlsafe(32),
        "GEDWEB_MEMORY_WRITE_TOKEN": secrets.token_urlsafe(32),
        "DJANGO_ALLOWED_HOSTS": "gedweb.example.org",
    }
    values.update(overrides)
    return values


def assert_refused(completed: subprocess.CompletedProcess, *words: str) -> None:
    assert completed.returncode != 0
    assert "ImproperlyConfigured" in completed.stderr
    last_line = completed.stderr.strip().splitlines()[-1]
    for word in words:
        assert word in last_line


# --- production refusals ------------------------------------------------------------


def test_a_valid_production_environment_starts(tmp_path):
    completed = start(tmp_path, SHOW, **production())
    assert completed.returncode == 0, completed.stderr
    shown = json.loads(completed.stdout)
    assert (shown["PRODUCTION"], shown["DEBUG"], shown["DEMO_PROJECT"]) == (True, False, False)


@pytest.mark.parametrize(
    "missing",
    ["DJANGO_SECRET_KEY", "GEDWEB_SIGNING_KEY", "GEDWEB_ADMIN_TOKEN", "GEDWEB_MEMORY_WRITE_TOKEN"],
)
def test_production_refuses_to_start_without_a_required_secret(tmp_path, missing):
    assert_refused(start(tmp_path, **production(**{missing: None})), missing)


def test_production_treats_an_empty_secret_as_missing(tmp_path):
    assert_refused(start(tmp_path, **production(GEDWEB_ADMIN_TOKEN="")), "GEDWEB_ADMIN_TOKEN")


@pytest.mark.parametrize("name", ["GEDWEB_ADMIN_TOKEN", "GEDWEB_MEMORY_WRITE_TOKEN"])
def test_production_refuses_a_token_shorter_than_32_characters(tmp_path, name):
    short = secrets.token_hex(16)[:31]
    completed = start(tmp_path, **production(**{name: short}))
    assert_refused(completed, name, "32")
    assert short not in completed.stderr  # the secret itself is never echoed


@pytest.mark.parametrize("name", ["GEDWEB_ADMIN_TOKEN", "GEDWEB_MEMORY_WRITE_TOKEN"])
def test_production_accepts_a_token_of_exactly_32_characters(tmp_path, name):
    completed = start(tmp_path, SHOW, **production(**{name: secrets.token_hex(16)}))
    assert completed.returncode == 0, completed.stderr


def test_production_refuses_equal_tokens(tmp_path):
    shared = secrets.token_urlsafe(40)
    completed = start(
        tmp_path, **production(GEDWEB_ADMIN_TOKEN=shared, GEDWEB_MEMORY_WRITE_TOKEN=shared)
    )
    assert_refused(completed, "GEDWEB_ADMIN_TOKEN", "GEDWEB_MEMORY_WRITE_TOKEN", "differ")
    assert shared not in completed.stderr


@pytest.mark.parametrize("weak", ["hunter2-pass", "x" * 64, "django-insecure-" + "a1b2c3d4" * 6])
def test_production_refuses_a_secret_key_that_django_calls_weak(tmp_path, weak):
    completed = start(tmp_path, **production(DJANGO_SECRET_KEY=weak))
    assert_refused(completed, "DJANGO_SECRET_KEY", "W009")
    assert weak not in completed.stderr


@pytest.mark.parametrize("weak", ["hunter2-pass", "x" * 64])
def test_production_refuses_a_weak_signing_key(tmp_path, weak):
    completed = start(tmp_path, **production(GEDWEB_SIGNING_KEY=weak))
    assert_refused(completed, "GEDWEB_SIGNING_KEY")
    assert weak not in completed.stderr


def test_production_refuses_a_signing_key_equal_to_the_secret_key(tmp_path):
    shared = secrets.token_urlsafe(64)
    completed = start(tmp_path, **production(DJANGO_SECRET_KEY=shared, GEDWEB_SIGNING_KEY=shared))
    assert_refused(completed, "GEDWEB_SIGNING_KEY", "DJANGO_SECRET_KEY", "differ")
    assert shared not in completed.stderr


def test_production_refuses_a_weak_signing_fallback_naming_its_position(tmp_path):
    fallbacks = f"{secrets.token_urlsafe(64)},secret"
    completed = start(tmp_path, **production(GEDWEB_SIGNING_KEY_FALLBACKS=fallbacks))
    assert_refused(completed, "GEDWEB_SIGNING_KEY_FALLBACKS[1]")


def test_production_refuses_a_weak_fallback_key_naming_its_position(tmp_path):
    fallbacks = f"{secrets.token_urlsafe(64)},secret"
    completed = start(tmp_path, **production(DJANGO_SECRET_KEY_FALLBACKS=fallbacks))
    assert_refused(completed, "DJANGO_SECRET_KEY_FALLBACKS[1]")


@pytest.mark.parametrize("name", ["GEDWEB_ADMIN_TOKEN", "GEDWEB_MEMORY_WRITE_TOKEN"])
@pytest.mark.parametrize("weak", ["a" * 36, "ab" * 20, "0123456" * 6,
                                  "change-me-admin-token-0123456789",
                                  # issue 34 §7: long, varied enough for a length rule
                                  "passwordpasswordpasswordpassword123",
                                  "qwertyuiopasdfghjklzxcvbnm123456",
                                  "Tr0ub4dor&3Tr0ub4dor&3Tr0ub4dor&3xx"])
def test_production_refuses_a_guessable_token(tmp_path, name, weak):
    completed = start(tmp_path, **production(**{name: weak}))
    assert_refused(completed, name)
    if weak != "change-me-admin-token-0123456789":  # refused as the README's example
        assert f"{name} is guessable: about 10^" in completed.stderr
    assert weak not in completed.stderr


@pytest.mark.parametrize("make", [lambda: secrets.token_hex(16), lambda: secrets.token_urlsafe(24)])
def test_random_tokens_pass_the_strength_estimate(make):
    from gedweb.installation import token_problem

    for _ in range(50):
        assert token_problem("GEDWEB_ADMIN_TOKEN", make()) is None


def test_production_names_every_weak_secret_at_once(tmp_path):
    completed = start(tmp_path, **production(DJANGO_SECRET_KEY="secret",
                                             GEDWEB_ADMIN_TOKEN="a" * 40))
    assert_refused(completed, "DJANGO_SECRET_KEY", "GEDWEB_ADMIN_TOKEN")


def test_renderings_are_kept_only_where_a_redaction_reaches_every_copy(tmp_path):
    """Without Redis no worker keeps a rendering a redaction elsewhere could not drop."""
    alone = json.loads(start(tmp_path, SHOW, REDIS_URL=None).stdout)
    assert alone["MARKDOWN_CACHE"] == "django.core.cache.backends.dummy.DummyCache"
    shared = json.loads(start(tmp_path, SHOW, REDIS_URL="redis://127.0.0.1:6379/15").stdout)
    assert shared["MARKDOWN_CACHE"] == "django.core.cache.backends.redis.RedisCache"


def test_production_refuses_debug(tmp_path):
    assert_refused(start(tmp_path, **production(DJANGO_DEBUG="true")), "DJANGO_DEBUG")


def test_debug_is_on_only_when_asked_for(tmp_path):
    assert json.loads(start(tmp_path, SHOW, DJANGO_DEBUG="true").stdout)["DEBUG"] is True


def test_production_refuses_the_demo_project(tmp_path):
    assert_refused(
        start(tmp_path, **production(GEDWEB_DEMO_PROJECT="true")), "GEDWEB_DEMO_PROJECT"
    )


def test_a_valid_production_environment_passes_check_deploy_without_warnings(tmp_path):
    completed = start(
        tmp_path, args=["manage.py", "check", "--deploy", "--fail-level", "WARNING"], **production()
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "no issues" in completed.stdout
    assert "WARNING" not in completed.stdout + completed.stderr


# --- malformed values fail loudly -------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("GEDWEB_PRODUCTION", "maybe"),
        ("GEDWEB_DEMO_PROJECT", "perhaps"),
        ("GEDWEB_MIRROR_WRITER", "sideways"),
        ("GEDWEB_CHECKPOINT_EVERY", "0"),
        ("GEDWEB_CHECKPOINT_EVERY", "ten"),
        ("GEDWEB_RATE_LIMIT", "fast"),
        ("GEDWEB_RATE_LIMIT", "0/minute"),
        ("GEDWEB_WRITE_RATE_LIMIT", "10/fortnight"),
        ("GEDWEB_WRITE_RATE_LIMIT", "-5/second"),
    ],
)
def test_a_malformed_value_stops_the_start_naming_the_variable(tmp_path, name, value):
    assert_refused(start(tmp_path, **{name: value}), name, value)


@pytest.mark.parametrize("url", ["not a url", "nonsense://somewhere/db"])
def test_a_malformed_database_url_stops_the_start(tmp_path, url):
    completed = start(tmp_path, DATABASE_URL=url)
    assert completed.returncode != 0
    assert "ImproperlyConfigured" in completed.stderr


def test_a_database_url_without_a_scheme_is_named_in_the_error(tmp_path):
    assert_refused(start(tmp_path, DATABASE_URL="not a url"), "DATABASE_URL")


@pytest.mark.parametrize(("value", "expected"), [("yes", True), ("OFF", False)])
def test_boolean_variables_accept_the_usual_spellings(tmp_path, value, expected):
    completed = start(tmp_path, SHOW, GEDWEB_DEMO_PROJECT=value)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["DEMO_PROJECT"] is expected


# --- development defaults ---------------------------------------------------------------


def test_development_defaults_have_the_demo_project_and_debug_off(tmp_path):
    completed = start(tmp_path, SHOW)
    assert completed.returncode == 0, completed.stderr
    shown = json.loads(completed.stdout)
    assert shown["PRODUCTION"] is False
    assert shown["DEBUG"] is False  # issue 36 §2: Django's own default
    assert shown["DEMO_PROJECT"] is True
    assert shown["MIRROR_WRITER"] == "inline"
    assert shown["ADMIN_TOKEN"] is None


def test_development_keeps_one_secret_key_per_installation(tmp_path):
    first = start(tmp_path, SHOW, DJANGO_SECRET_KEY=None)
    second = start(tmp_path, SHOW, DJANGO_SECRET_KEY=None)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["SECRET_KEY"] == json.loads(second.stdout)["SECRET_KEY"]
    assert json.loads(first.stdout)["SECRET_KEY_LENGTH"] >= 50
    key_file = tmp_path / "data" / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700
    assert hashlib.sha256(key_file.read_text().strip().encode()).hexdigest() == json.loads(
        first.stdout
    )["SECRET_KEY"]


def test_another_data_directory_is_another_installation_with_its_own_key(tmp_path):
    ours = json.loads(start(tmp_path, SHOW).stdout)["SECRET_KEY"]
    theirs = json.loads(start(tmp_path, SHOW, GEDWEB_DATA_DIR=str(tmp_path / "other")).stdout)
    assert theirs["SECRET_KEY"] != ours


def test_concurrent_first_starts_agree_on_one_key(tmp_path):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONDONTWRITEBYTECODE": "1",
           "DATABASE_URL": f"sqlite:///{tmp_path}/db/gedweb.sqlite3",
           "GEDWEB_DATA_DIR": str(tmp_path / "data")}
    starts = [
        subprocess.Popen([sys.executable, "-c", SHOW], cwd=django_settings.BASE_DIR, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    keys = {json.loads(process.communicate(timeout=60)[0])["SECRET_KEY"] for process in starts}
    assert len(keys) == 1
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["secret_key", "signing_key"]
    signing_keys = {json.loads(start(tmp_path, SHOW).stdout)["SIGNING_KEY"] for _ in range(2)}
    assert len(signing_keys) == 1


def test_development_keeps_a_signing_key_of_its_own_per_installation(tmp_path):
    first = json.loads(start(tmp_path, SHOW, DJANGO_SECRET_KEY=None).stdout)
    second = json.loads(start(tmp_path, SHOW, DJANGO_SECRET_KEY=secrets.token_urlsafe(64)).stdout)
    key_file = tmp_path / "data" / "signing_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    # Its own key: not the secret key, and not changed by another DJANGO_SECRET_KEY.
    assert first["SIGNING_KEY"] == second["SIGNING_KEY"] != first["SECRET_KEY"]
    assert hashlib.sha256(key_file.read_text().strip().encode()).hexdigest() == first[
        "SIGNING_KEY"]
    given = secrets.token_urlsafe(64)
    shown = json.loads(start(tmp_path, SHOW, GEDWEB_SIGNING_KEY=given).stdout)
    assert shown["SIGNING_KEY"] == hashlib.sha256(given.encode()).hexdigest()


def test_django_secret_key_wins_over_the_installation_key(tmp_path):
    installation = json.loads(start(tmp_path, SHOW).stdout)["SECRET_KEY"]
    given = secrets.token_urlsafe(64)
    shown = json.loads(start(tmp_path, SHOW, DJANGO_SECRET_KEY=given).stdout)
    assert shown["SECRET_KEY"] == hashlib.sha256(given.encode()).hexdigest() != installation


def test_a_readable_data_directory_and_key_are_made_private(tmp_path):
    start(tmp_path, SHOW)
    os.chmod(tmp_path / "data", 0o755)
    os.chmod(tmp_path / "data" / "secret_key", 0o644)
    assert start(tmp_path, SHOW).returncode == 0
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "data" / "secret_key").stat().st_mode) == 0o600


def test_an_unusable_key_file_stops_the_start_naming_it(tmp_path):
    (tmp_path / "data").mkdir(mode=0o700)
    (tmp_path / "data" / "secret_key").write_text("short\n")
    completed = start(tmp_path, SHOW)
    assert_refused(completed, "secret_key", "usable key", "DJANGO_SECRET_KEY_FALLBACKS")


def test_a_world_writable_data_directory_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    assert_refused(start(tmp_path, SHOW, GEDWEB_DATA_DIR=str(shared)), "shared directory")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777  # never narrowed


def test_the_default_sqlite_database_is_private_with_its_wal_and_shm(tmp_path):
    code = (SETUP + "; from django.db import connection;"
            " connection.cursor().execute('CREATE TABLE t (x)');"
            " connection.cursor().execute('INSERT INTO t VALUES (1)');"
            " print(connection.settings_dict['NAME'])")
    completed = start(tmp_path, code, DATABASE_URL=None)
    assert completed.returncode == 0, completed.stderr
    database = Path(completed.stdout.strip())
    assert database.parent == tmp_path / "data"
    assert database.exists()
    for suffix in ("", "-wal", "-shm"):
        path = Path(f"{database}{suffix}")
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_an_existing_readable_database_is_made_private(tmp_path):
    (tmp_path / "db").mkdir()
    database = tmp_path / "db" / "gedweb.sqlite3"
    sqlite3.connect(database).close()
    os.chmod(database, 0o644)
    completed = start(tmp_path, SETUP + "; from django.db import connection; connection.cursor()")
    assert completed.returncode == 0, completed.stderr
    assert stat.S_IMODE(database.stat().st_mode) == 0o600


def test_ferryman_memory_write_token_is_an_alias(tmp_path):
    code = ("import os; os.environ['DJANGO_SETTINGS_MODULE']='gedweb.settings';"
            " from django.conf import settings as s; print(s.MEMORY_WRITE_TOKEN)")
    completed = start(tmp_path, code, FERRYMAN_MEMORY_WRITE_TOKEN="from-ferryman")
    assert completed.stdout.strip() == "from-ferryman"
    same = start(tmp_path, code, FERRYMAN_MEMORY_WRITE_TOKEN="one-value",
                 GEDWEB_MEMORY_WRITE_TOKEN="one-value")
    assert same.returncode == 0, same.stderr
    assert same.stdout.strip() == "one-value"


def test_the_memory_write_token_and_its_ferryman_alias_set_apart_stop_the_start(tmp_path):
    code = ("import os; os.environ['DJANGO_SETTINGS_MODULE']='gedweb.settings';"
            " from django.conf import settings as s; print(s.MEMORY_WRITE_TOKEN)")
    both = start(tmp_path, code, FERRYMAN_MEMORY_WRITE_TOKEN="ferryman-secret-value",
                 GEDWEB_MEMORY_WRITE_TOKEN="gedweb-secret-value")
    assert both.returncode != 0
    assert both.stdout == ""
    last_line = both.stderr.strip().splitlines()[-1]
    assert last_line.startswith("django.core.exceptions.ImproperlyConfigured: ")
    assert "GEDWEB_MEMORY_WRITE_TOKEN and FERRYMAN_MEMORY_WRITE_TOKEN" in last_line
    # The values are secrets: the refusal names the variables, never what they hold.
    assert "secret-value" not in both.stderr


def test_follower_is_an_accepted_mirror_writer(tmp_path):
    completed = start(tmp_path, SHOW, GEDWEB_MIRROR_WRITER="follower")
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["MIRROR_WRITER"] == "follower"


# --- the demo project ---------------------------------------------------------------------


def test_demo_project_ensure_creates_the_demo_project_with_its_token(db):
    services.demo_project_ensure()
    assert Project.objects.filter(pk="demo").count() == 1
    response = bearer_client("demo-local-token").get("/v1/projects/demo")
    assert response.status_code == 200
    assert response.json()["id"] == "demo"


def test_demo_project_ensure_is_idempotent(db):
    services.demo_project_ensure()
    services.demo_project_ensure()
    assert list(Project.objects.values_list("id", flat=True)) == ["demo"]
    tokens = ProjectToken.objects.filter(token_hash=hash_token("demo-local-token"))
    assert [(t.project_id, t.name, t.is_active) for t in tokens] == [("demo", "demo", True)]
    assert ProjectToken.objects.count() == 1
    assert bearer_client("demo-local-token").get("/v1/projects/demo").status_code == 200


def test_the_demo_token_writes_as_author_demo(db):
    services.demo_project_ensure()
    response = bearer_client("demo-local-token").post(
        "/v1/projects/demo/memory", {"category": "note", "content": "hello"}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["author"] == "demo"


def test_demo_project_ensure_keeps_a_revoked_demo_token_revoked(db):
    services.demo_project_ensure()
    services.project_token_revoke(project=Project.objects.get(pk="demo"), name="demo")
    services.demo_project_ensure()
    assert Project.objects.filter(pk="demo").count() == 1
    assert bearer_client("demo-local-token").get("/v1/projects/demo").status_code == 401


def test_demo_project_ensure_does_not_fail_when_another_project_holds_the_demo_token(db):
    services.project_create(project_id="other", name="Other", token="demo-local-token")
    services.demo_project_ensure()
    assert Project.objects.filter(pk="demo").exists()
    response = bearer_client("demo-local-token").get("/v1/projects/other")
    assert response.status_code == 200
