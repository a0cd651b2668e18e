"""Login throttling (issue 14 §3): django-axes on both login pages.

A username or a client address is locked after 5 failures within 15
minutes; the lockout page is 429 and the same for every username; the
client address is REMOTE_ADDR unless that is a trusted proxy; failures are
logged without the password; with REDIS_URL the counters live in Redis and
are shared between processes. docs/security.md#logins.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import os
import re
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from axes.handlers.proxy import AxesProxyHandler
from axes.models import AccessAttempt
from django.conf import settings as django_settings
from django.test import Client, RequestFactory
from django.utils import timezone

from gedweb import logins
from tests.redis_support import REDIS_TEST_URL, require_redis
from tests.subprocesses import subprocess_database_url

PASSWORD = "pw-correct-horse-battery"
WRONG = "pw-wrong-guess-0123"
LIMIT = 5
TEAM = "/accounts/login/"
ADMIN = "/admin/login/"


@pytest.fixture
def vera(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("vera", "vera@example.org", PASSWORD)


@pytest.fixture
def root(django_user_model: Any) -> Any:
    return django_user_model.objects.create_superuser("root", "root@example.org", PASSWORD)


def post(client: Client, username: str, password: str, path: str = TEAM, **extra: Any) -> Any:
    return client.post(path, {"username": username, "password": password}, **extra)


def fail(client: Client, username: str, times: int, path: str = TEAM) -> list[int]:
    return [post(client, username, WRONG, path).status_code for _ in range(times)]


def page(response: Any) -> str:
    """The lockout page with its clock time blanked, for comparing two of them."""
    text = response.content.decode()
    text = re.sub(r'datetime="[^"]+"', 'datetime=""', text)
    return re.sub(r"\b\d\d:\d\d\b", "HH:MM", text)


def assert_locked_out(response: Any) -> None:
    assert response.status_code == 429
    assert "registration/lockout.html" in [template.name for template in response.templates]
    text = response.content.decode()
    assert "Too many login attempts" in text
    assert "Try again in 15 minutes, from" in text
    assert re.search(r"\d\d:\d\d UTC</time>", text)
    assert response["Retry-After"] == "900"
    assert "sessionid" not in response.cookies


def assert_logged_in(client: Client, response: Any, user: Any, to: str) -> None:
    assert response.status_code == 302 and response["Location"] == to
    assert client.session["_auth_user_id"] == str(user.pk)


# --- the lock ------------------------------------------------------------------------


def test_the_correct_password_after_five_failures_is_refused(db, vera):
    client = Client()
    assert fail(client, "vera", LIMIT - 1) == [200] * (LIMIT - 1)
    assert post(client, "vera", WRONG).status_code == 429  # the fifth failure locks

    response = post(client, "vera", PASSWORD)

    assert_locked_out(response)
    assert "_auth_user_id" not in client.session
    assert AccessAttempt.objects.get(username="vera").failures_since_start == LIMIT + 1


def test_four_failures_leave_the_correct_password_working_and_are_then_forgotten(db, vera):
    client = Client()
    assert fail(client, "vera", LIMIT - 1) == [200] * (LIMIT - 1)

    assert_logged_in(client, post(client, "vera", PASSWORD), vera, "/")

    assert not AccessAttempt.objects.filter(username="vera").exists()


def test_logging_into_ones_own_account_does_not_forget_guesses_at_another(db, vera, root):
    guesser = Client(REMOTE_ADDR="203.0.113.30")
    assert fail(guesser, "vera", LIMIT - 1) == [200] * (LIMIT - 1)
    assert post(guesser, "root", PASSWORD).status_code == 302
    guesser.logout()

    assert post(guesser, "vera", WRONG).status_code == 429
    assert_locked_out(post(Client(REMOTE_ADDR="198.51.100.30"), "vera", PASSWORD))


def test_one_address_is_locked_across_usernames(db, vera):
    guesser = Client(REMOTE_ADDR="203.0.113.5")
    for name in ("ann", "bob", "cy", "dee", "eve"):
        post(guesser, name, WRONG)

    assert_locked_out(post(guesser, "vera", PASSWORD))

    elsewhere = Client(REMOTE_ADDR="198.51.100.7")
    assert_logged_in(elsewhere, post(elsewhere, "vera", PASSWORD), vera, "/")


def test_one_username_is_locked_across_addresses(db, vera):
    for index in range(LIMIT):
        post(Client(REMOTE_ADDR=f"203.0.113.{10 + index}"), "vera", WRONG)

    fresh = Client(REMOTE_ADDR="198.51.100.20")
    assert_locked_out(post(fresh, "vera", PASSWORD))
    assert "_auth_user_id" not in fresh.session


def test_the_lock_ends_after_the_cool_off(db, vera, monkeypatch):
    client = Client()
    fail(client, "vera", LIMIT)
    started = timezone.now()

    monkeypatch.setattr("axes.handlers.proxy.now", lambda: started + timedelta(minutes=14))
    assert_locked_out(post(client, "vera", PASSWORD))  # and the wait starts again

    later = started + timedelta(minutes=14 + 15, seconds=1)
    monkeypatch.setattr("axes.handlers.proxy.now", lambda: later)
    assert_logged_in(client, post(client, "vera", PASSWORD), vera, "/")


def test_an_operator_reset_ends_the_lock(db, vera):
    client = Client()
    fail(client, "vera", LIMIT)

    AxesProxyHandler.reset_attempts(username="vera")
    AxesProxyHandler.reset_attempts(ip_address="127.0.0.1")

    assert_logged_in(client, post(client, "vera", PASSWORD), vera, "/")


def test_the_page_is_the_same_for_an_account_and_for_no_account(db, vera):
    existing, missing = Client(REMOTE_ADDR="203.0.113.1"), Client(REMOTE_ADDR="203.0.113.2")
    fail(existing, "vera", LIMIT)
    fail(missing, "nobody-here", LIMIT)

    for_existing = post(existing, "vera", PASSWORD)
    for_missing = post(missing, "nobody-here", PASSWORD)

    assert_locked_out(for_existing)
    assert_locked_out(for_missing)
    assert page(for_existing) == page(for_missing)
    assert "vera" not in for_existing.content.decode()
    assert dict(for_existing.headers) == dict(for_missing.headers)


def test_the_lockout_page_runs_no_inline_script_or_style(db, vera):
    client = Client()
    fail(client, "vera", LIMIT)
    response = post(client, "vera", PASSWORD)

    text = response.content.decode()
    assert "<script" not in text and "<style" not in text and " style=" not in text
    assert "script-src 'self'" in response["Content-Security-Policy"]


def test_the_admin_login_is_locked_with_the_same_page(db, root):
    client = Client()
    assert fail(client, "root", LIMIT - 1, ADMIN) == [200] * (LIMIT - 1)
    fail(client, "root", 1, ADMIN)

    response = post(client, "root", PASSWORD, ADMIN)

    assert_locked_out(response)
    assert "_auth_user_id" not in client.session


def test_failures_on_the_team_login_lock_the_admin_login(db, root):
    client = Client()
    fail(client, "root", LIMIT, TEAM)

    assert_locked_out(post(client, "root", PASSWORD, ADMIN))


def test_the_admin_login_still_works(db, root):
    client = Client()
    response = post(client, "root", PASSWORD, ADMIN + "?next=/admin/")
    assert_logged_in(client, response, root, "/admin/")


def test_a_username_that_reads_as_an_address_is_counted_apart_from_that_address():
    request = RequestFactory().post(TEAM, {"username": "203.0.113.9", "password": WRONG})
    assert logins.username(request, None) == "203.0.113.9 (username)"
    assert logins.username(request, {"username": "vera"}) == "vera"


# --- the client address --------------------------------------------------------------


def address(remote: str, forwarded: str | None = None) -> str | None:
    extra = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    return logins.client_ip_address(RequestFactory().post(TEAM, **extra))


@pytest.mark.parametrize(
    ("remote", "forwarded", "expected"),
    [
        ("203.0.113.9", None, "203.0.113.9"),
        ("203.0.113.9", "198.51.100.1", "203.0.113.9"),  # not a proxy: header ignored
        ("10.0.0.1", None, "10.0.0.1"),
        ("10.0.0.1", "198.51.100.1", "198.51.100.1"),
        ("10.0.0.1", "6.6.6.6, 198.51.100.1", "198.51.100.1"),  # the client wrote 6.6.6.6
        ("10.0.0.1", "198.51.100.1, 10.0.0.2", "198.51.100.1"),  # two trusted proxies
        ("10.0.0.1", "10.0.0.3, 10.0.0.2", "10.0.0.3"),  # only proxies: the farthest
        ("10.0.0.1", "garbage, 198.51.100.1", "198.51.100.1"),
        ("10.0.0.1", "198.51.100.1, garbage", "10.0.0.1"),
        ("::ffff:203.0.113.9", None, "203.0.113.9"),
    ],
)
def test_the_client_address(settings, remote, forwarded, expected):
    settings.TRUSTED_PROXIES = ["10.0.0.0/24"]
    assert address(remote, forwarded) == expected


def test_without_trusted_proxies_x_forwarded_for_is_ignored(settings):
    settings.TRUSTED_PROXIES = []
    assert address("127.0.0.1", "198.51.100.1") == "127.0.0.1"


def test_x_forwarded_for_does_not_dodge_the_address_limit(db, vera, settings):
    settings.TRUSTED_PROXIES = ["10.0.0.1"]
    guesser = Client(REMOTE_ADDR="203.0.113.5")
    for index, name in enumerate(("ann", "bob", "cy", "dee", "eve")):
        post(guesser, name, WRONG, HTTP_X_FORWARDED_FOR=f"198.51.100.{index}")

    response = post(guesser, "vera", PASSWORD, HTTP_X_FORWARDED_FOR="198.51.100.99")

    assert_locked_out(response)
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.5"}


def test_x_forwarded_for_from_a_trusted_proxy_is_the_client(db, vera, settings):
    settings.TRUSTED_PROXIES = ["10.0.0.1"]
    proxy = Client(REMOTE_ADDR="10.0.0.1")
    for index, name in enumerate(("ann", "bob", "cy", "dee", "eve")):
        # What the client put in front of the proxy's entry does not count.
        post(proxy, name, WRONG, HTTP_X_FORWARDED_FOR=f"6.6.6.{index}, 198.51.100.1")

    assert_locked_out(post(proxy, "vera", PASSWORD, HTTP_X_FORWARDED_FOR="198.51.100.1"))
    other = post(proxy, "vera", PASSWORD, HTTP_X_FORWARDED_FOR="198.51.100.2")
    assert other.status_code == 302
    assert "10.0.0.1" not in set(AccessAttempt.objects.values_list("ip_address", flat=True))


# --- the log -------------------------------------------------------------------------


def test_a_failed_login_is_logged_with_username_and_address_but_not_the_password(
    db, vera, caplog
):
    caplog.set_level(logging.DEBUG)
    client = Client(REMOTE_ADDR="203.0.113.77")
    fail(client, "vera", LIMIT)
    post(client, "vera", PASSWORD)

    failures = [
        r for r in caplog.records if r.name.startswith("axes") and "login failure" in r.getMessage()
    ]
    assert failures and all(r.levelno == logging.WARNING for r in failures)
    assert '"vera"' in failures[0].getMessage()
    assert '"203.0.113.77"' in failures[0].getMessage()
    assert any("Locking out" in r.getMessage() for r in caplog.records)
    for record in caplog.records:
        assert WRONG not in record.getMessage() and PASSWORD not in record.getMessage()
    stored = AccessAttempt.objects.get(username="vera")
    assert WRONG not in stored.post_data and PASSWORD not in stored.post_data


def test_a_newline_in_the_username_cannot_forge_a_log_line(db, caplog):
    post(Client(), "mallory\n2026-01-01 WARNING axes forged", WRONG)
    failures = [r.getMessage() for r in caplog.records if "login failure" in r.getMessage()]
    assert failures and "\n" not in failures[0]


def test_the_logging_config_lets_axes_lines_through():
    axes_logger = logging.getLogger("axes.handlers.database")
    assert axes_logger.isEnabledFor(logging.INFO)
    assert django_settings.LOGGING["loggers"]["axes"]["level"] == "INFO"
    assert "console" in django_settings.LOGGING["root"]["handlers"]


# --- processes: the console log, and Redis shared between processes -------------------


def manage_shell(code: str, **env: str) -> subprocess.CompletedProcess:
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GEDWEB_", "DJANGO_", "DATABASE_URL", "REDIS_URL"))
    }
    environment.update(
        DATABASE_URL=subprocess_database_url(),
        GEDWEB_DEMO_PROJECT="false",
        DJANGO_ALLOWED_HOSTS="testserver",
        **env,
    )
    return subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", textwrap.dedent(code)],
        cwd=django_settings.BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


LOGIN_SCRIPT = """
    from django.test import Client
    from django.conf import settings
    username, password, times, remote = ({args})
    client = Client(REMOTE_ADDR=remote)
    codes = [
        client.post("/accounts/login/", {{"username": username, "password": password}}).status_code
        for _ in range(int(times))
    ]
    print(settings.AXES_HANDLER, *codes)
"""


def login_in_a_process(username: str, password: str, times: int, remote: str, **env: str) -> str:
    args = ", ".join(repr(value) for value in (username, password, str(times), remote))
    completed = manage_shell(LOGIN_SCRIPT.format(args=args), **env)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.strip() + "\n" + completed.stderr


def test_a_failed_login_reaches_the_console_of_a_real_process(transactional_db):
    output = login_in_a_process("console-user", WRONG, 1, "203.0.113.41")

    assert "gedweb.logins.DatabaseHandler 200" in output
    assert re.search(r"WARNING axes\.handlers\.database AXES: New login failure by "
                     r'\{username: "console-user", ip_address: "203\.0\.113\.41"', output)
    assert WRONG not in output


@pytest.fixture
def redis_logins(settings) -> Iterator[str]:
    """The cache handler on Redis db 15 under a prefix of this test's own, removed after."""
    client = require_redis()
    prefix = f"gedweb-test-{uuid.uuid4().hex}"
    settings.CACHES = {
        **settings.CACHES,
        "logins": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_TEST_URL,
            "KEY_PREFIX": prefix,
        },
    }
    settings.AXES_CACHE = "logins"
    settings.AXES_HANDLER = "gedweb.logins.CacheHandler"
    yield prefix
    keys = list(client.scan_iter(f"{prefix}:*"))
    if keys:
        client.delete(*keys)
    client.close()
    settings.AXES_HANDLER = "gedweb.logins.DatabaseHandler"


def test_with_redis_the_counters_live_in_redis(db, vera, redis_logins):
    client = Client(REMOTE_ADDR="203.0.113.60")
    assert fail(client, "vera", LIMIT) == [200] * (LIMIT - 1) + [429]

    assert_locked_out(post(client, "vera", PASSWORD))
    assert not AccessAttempt.objects.exists()

    AxesProxyHandler.reset_attempts(username="vera")
    AxesProxyHandler.reset_attempts(ip_address="203.0.113.60")
    assert_logged_in(client, post(client, "vera", PASSWORD), vera, "/")


def test_with_redis_one_process_locks_the_login_for_another(transactional_db, django_user_model):
    connection = require_redis()
    # Names of this run only, so parallel runs on one Redis never meet.
    run = uuid.uuid4().hex[:12]
    name = f"redis-{run}"
    django_user_model.objects.create_user(name, f"{name}@example.org", PASSWORD)
    first, second = (
        str(ipaddress.ip_address(f"2001:db8:{run[:4]}:{run[4:8]}::{host}")) for host in (1, 2)
    )
    keys = [
        "gedweb:1:axes-" + hashlib.sha256(value.encode()).hexdigest()
        for value in (name, first, second)
    ]
    try:
        locker = login_in_a_process(name, WRONG, LIMIT, first, REDIS_URL=REDIS_TEST_URL)
        assert locker.startswith("gedweb.logins.CacheHandler 200 200 200 200 429")
        assert connection.get(keys[0]) == b"5"

        other = login_in_a_process(name, PASSWORD, 1, second, REDIS_URL=REDIS_TEST_URL)
        assert other.startswith("gedweb.logins.CacheHandler 429")
        assert not AccessAttempt.objects.exists()

        connection.delete(*keys)
        after_reset = login_in_a_process(name, PASSWORD, 1, second, REDIS_URL=REDIS_TEST_URL)
        assert after_reset.startswith("gedweb.logins.CacheHandler 302")
    finally:
        connection.delete(*keys)
        connection.close()


# --- REDIS_URL at start --------------------------------------------------------------


SHOW_HANDLER = (
    "import os; os.environ['DJANGO_SETTINGS_MODULE']='gedweb.settings';"
    " from django.conf import settings as s;"
    " print(s.AXES_HANDLER, s.CACHES.get('logins', {}).get('LOCATION'))"
)


def start(**env: str) -> subprocess.CompletedProcess:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith("REDIS_URL")
    }
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-c", SHOW_HANDLER], cwd=django_settings.BASE_DIR, env=environment,
        capture_output=True, text=True, timeout=60,
    )


def test_without_redis_url_the_database_keeps_the_counters():
    completed = start()
    assert completed.stdout.split() == ["gedweb.logins.DatabaseHandler", "None"]


def test_with_redis_url_the_redis_cache_keeps_the_counters():
    completed = start(REDIS_URL="redis://127.0.0.1:6379/3")
    assert completed.stdout.split() == [
        "gedweb.logins.CacheHandler", "redis://127.0.0.1:6379/3"
    ]


@pytest.mark.parametrize(
    "value",
    ["http://127.0.0.1:6379", "redis://", "redis://host:port/0", "redis://h/zero",
     "redis://h/0/1", "127.0.0.1:6379", "unix://"],
)
def test_a_malformed_redis_url_stops_the_start(value):
    completed = start(REDIS_URL=value)
    assert completed.returncode != 0
    assert "ImproperlyConfigured: REDIS_URL must be a URL" in completed.stderr
