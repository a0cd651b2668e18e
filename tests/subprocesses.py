"""Helpers for tests that run manage.py or gunicorn in a child process."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

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
