from __future__ import annotations

from io import StringIO

from django.core.management import call_command


def test_every_model_change_has_a_migration(db):
    out = StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()
