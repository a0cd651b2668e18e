from __future__ import annotations

from io import StringIO

from django.core.management import call_command


def test_the_schema_generates_without_a_single_warning(tmp_path):
    out = tmp_path / "schema.yaml"
    stderr = StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out), stderr=stderr)
    assert "Warning" not in stderr.getvalue()
    assert out.read_text().startswith("openapi: 3")
