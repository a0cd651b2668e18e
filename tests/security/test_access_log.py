"""The production server's access log never records query strings (tokens in URLs)."""

from __future__ import annotations

import runpy
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[2] / "gunicorn.conf.py"


def test_the_access_log_format_leaves_out_the_query_string_and_the_referer(
    monkeypatch, tmp_path
):
    # Reading the file sets PROMETHEUS_MULTIPROC_DIR for the workers it
    # configures; set here, it is undone after the test and never reaches
    # the servers and commands that later tests start from this process.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    fmt = runpy.run_path(str(CONFIG))["access_log_format"]
    # %(r)s is the full request line, %(q)s the query, %(f)s the Referer (which
    # may carry another page's query string); %(U)s is the path alone.
    assert "%(U)s" in fmt
    for atom in ("%(r)s", "%(q)s", "%(f)s", "%({query_string}e)s"):
        assert atom not in fmt
