"""The README's walkthrough, run as written against a `make run` server (issue 36 §3).

The second terminal's block, then the agents' CLI block and the manage.py
block, each through bash exactly as README.md has them. Only what the
reader's machine decides is changed: the admin token (the server's own), the
port (PORT, as the README tells), and where the data directory is.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.acceptance.conftest import MadeRun
from tests.live_server import REPO

# Its first test boots `make run` (migrate, collectstatic, the workers).
pytestmark = [pytest.mark.live_server, pytest.mark.slow, pytest.mark.timeout(600)]

README_TOKEN = "change-me-admin-token-0123456789"


def blocks() -> list[str]:
    text = (Path(REPO) / "README.md").read_text()
    start = text.index("In a second terminal")
    return re.findall(r"```sh\n(.*?)```", text[start:text.index("## Bring existing memory")],
                      re.S)


def run(made_run: MadeRun, script: str) -> subprocess.CompletedProcess[str]:
    script = script.replace(README_TOKEN, made_run.admin_token).replace(
        ".data/", f"{made_run.data_dir}/")
    env = {**made_run.env, "PORT": str(made_run.port)}
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_the_walkthrough_runs_as_written(made_run: MadeRun) -> None:
    curl, cli, manage = blocks()
    assert "export GEDWEB_TOKEN=$(curl" in curl  # the token is captured, not pasted
    assert "/healthz" in curl and "${PORT:-8787}" in curl
    tour = run(made_run, curl + "\necho \"TOKEN=$GEDWEB_TOKEN\"\n")
    assert tour.returncode == 0, tour.stderr
    assert tour.stdout.startswith('{"status":"ok","api_version":"v1"}')
    assert "Orders stay on PostgreSQL 16." in tour.stdout  # the mirror, read at the end
    token = re.search(r"^TOKEN=(gwp_\S+)$", tour.stdout, re.M)
    assert token is not None

    # The agents' CLI from the same terminal: GEDWEB_URL and GEDWEB_TOKEN as exported above.
    exported = (f"export GEDWEB_URL=http://127.0.0.1:{made_run.port}\n"
                f"export GEDWEB_TOKEN={token.group(1)}\n")
    agents = run(made_run, exported + cli)
    assert agents.returncode == 0, agents.stderr
    verified = json.loads(agents.stdout.strip().splitlines()[-1])
    assert (verified["ok"], verified["entries"]) == (True, 2)  # no duplicate of the tour's entry
    assert "Deploys run from GitHub Actions." in agents.stdout

    local = run(made_run, manage)
    assert local.returncode == 0, local.stderr
    assert "Weekly release on Tuesdays." in local.stdout
