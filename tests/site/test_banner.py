"""`make run`'s start banner (issue 36 §1): where things are, what is on, and no secret."""

from __future__ import annotations

import pytest

from gedweb.banner import _database, base_url, startup_banner

ADMIN = "banner-admin-token-" + "q" * 30


@pytest.mark.parametrize(("bind", "expected"), [
    ("127.0.0.1:8787", "http://127.0.0.1:8787"),
    ("0.0.0.0:9000", "http://127.0.0.1:9000"),
    ("[::]:9000", "http://127.0.0.1:9000"),
    ("gedweb.internal:80", "http://gedweb.internal:80"),
    ("8787", "http://127.0.0.1:8787"),
    ("unix:/run/gedweb.sock", "unix:/run/gedweb.sock"),
])
def test_the_base_url_is_one_a_browser_can_open(bind, expected):
    assert base_url(bind) == expected


def test_it_names_every_url_the_demo_token_and_the_state(settings):
    settings.DEMO_PROJECT, settings.ADMIN_TOKEN, settings.DEBUG = True, ADMIN, False
    text = startup_banner("127.0.0.1:8811")
    for url in ("http://127.0.0.1:8811/", "http://127.0.0.1:8811/admin/",
                "http://127.0.0.1:8811/v1/docs", "http://127.0.0.1:8811/mcp",
                "http://127.0.0.1:8811/healthz"):
        assert url in text
    assert "project 'demo', token 'demo-local-token'" in text
    assert "admin token set (GEDWEB_ADMIN_TOKEN)" in text
    assert f"data        {settings.DATA_DIR}" in text
    assert "debug       off (DJANGO_DEBUG=true turns it on)" in text
    assert ADMIN not in text


def test_without_an_admin_token_it_says_creation_is_off_and_how_to_set_one(settings):
    settings.DEMO_PROJECT, settings.ADMIN_TOKEN, settings.DEBUG = False, None, True
    text = startup_banner("127.0.0.1:8811")
    assert "admin token NOT SET: creating projects over the API is off" in text
    assert "export GEDWEB_ADMIN_TOKEN=" in text
    assert "demo        off (GEDWEB_DEMO_PROJECT)" in text
    assert "demo-local-token" not in text
    assert "debug       ON (DJANGO_DEBUG=true)" in text


def test_the_database_is_named_without_its_password():
    text = _database({"ENGINE": "django.db.backends.postgresql", "NAME": "gw",
                      "HOST": "db.internal", "PORT": "5433", "USER": "gedweb_app",
                      "PASSWORD": "s3cret-pass"})
    assert text == "PostgreSQL gw at db.internal:5433 as gedweb_app"
    assert _database({"ENGINE": "gedweb.db.sqlite3", "NAME": "/srv/g.sqlite3"}) == (
        "SQLite /srv/g.sqlite3")
