"""Helpers for tests that run manage.py or gunicorn in a child process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection


def subprocess_database_url() -> str:
    """A DATABASE_URL naming the database this test runs against."""
    database = connection.settings_dict
    if connection.vendor == "sqlite":
        return "sqlite:///" + str(Path(database["NAME"]).resolve())
    credentials = quote(database["USER"] or "", safe="")
    if database.get("PASSWORD"):
        credentials += ":" + quote(database["PASSWORD"], safe="")
    host = database["HOST"] or "127.0.0.1"
    port = database["PORT"] or "5432"
    return f"postgres://{credentials}@{host}:{port}/{quote(database['NAME'], safe='')}"


def manage(memory_root: Path, *args: str, stdin: str | None = None,
           **extra_env: str) -> subprocess.CompletedProcess[str]:
    """`python manage.py ARGS` in a child process, on this test's database and mirror root.

    The suite's own GEDWEB_/DJANGO_ settings are left out, so the child starts
    as an operator's shell would, plus ``extra_env`` (e.g. GEDWEB_FAILPOINT).
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GEDWEB_", "DJANGO_", "DATABASE_URL"))
    }
    env.update(
        DATABASE_URL=subprocess_database_url(),
        GEDWEB_MEMORY_ROOT=str(memory_root),
        GEDWEB_DEMO_PROJECT="false",
        **extra_env,
    )
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
