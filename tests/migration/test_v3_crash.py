"""Kill the migration at every step; a rerun must end exactly where an uninterrupted run ends.

Each test runs ``manage.py ged_migrate_v3`` in a child process with
GEDWEB_FAILPOINT naming one step, so the child SIGKILLs itself there (no
finally block, no lock release), then reruns the command in this process and
compares every file and directory under the checkout, ``.ged/runtime``
included, with an uninterrupted run on a fresh copy of the same tree.

Normalised, and only these, because they must differ between two runs:
- ``completedAt`` in ``.ged/MEMORY-MIGRATION.json``: the wall-clock time of completion;
- ``.ged/runtime/migrations/durable-memory-v3/STALE-<token>.json``: the killed child's lock,
  quarantined by the rerun. Its token is random; the test checks that exactly one exists
  and that it names the killed child's pid (the pre-crash evidence is kept), then drops it;
- for a kill *after* the completion record (``migrate_v3.completed``): the child's own
  ``LOCKS/<token>.json`` and ``<token>.flock``, which stay because every later run returns
  before locking (GedPi behaves the same); the test checks they name the killed child.
The legacy-checkpoint directory is not normalised: this tree has no checkpoints.json, so
that step writes nothing in either run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from gedweb.checkout import v3
from gedweb.checkout.v3 import run as v3_run
from gedweb.checkout.v3 import steps as v3_steps
from gedweb.lib import gedpi_placeholders as ph
from tests.checkout.trees import directories, scenario_tree, snapshot, write_tree

STATE = ".ged/MEMORY-MIGRATION.json"


def crash_tree(root: Path) -> Path:
    """Small, but reaching every failpoint: a placeholder, glossary, decisions, a movable and
    a retained task, an ambiguous file, a skill, a global plan and a GedWeb-reported file."""
    scenario_tree(root)
    return write_tree(root, {
        ".ged/PROJECT.md": ph.PROJECT,
        ".ged/IDEAS.md": ph.IDEAS,
        ".ged/plans/login.md": "# Login plan\n",
        ".ged/work/root/SPEC.md": "# Spec\n\nBranch-scoped.\n",
    })


def normalise(snap: dict[str, bytes]) -> dict[str, bytes]:
    out = dict(snap)
    if STATE in out:
        state = json.loads(out[STATE])
        state["completedAt"] = "<completedAt>"
        out[STATE] = v3.dump_json(state)
    return out


def migrate_here(root: Path) -> str:
    out = StringIO()
    call_command("ged_migrate_v3", str(root), stdout=out)
    return out.getvalue()


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    root = tmp_path_factory.mktemp("uninterrupted") / "repo"
    crash_tree(root)
    assert "durable-memory-v3: completed" in migrate_here(root)
    return normalise(snapshot(root)), directories(root)


def kill_at(root: Path, name: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GEDWEB_FAILPOINT"}
    env["GEDWEB_FAILPOINT"] = name
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "ged_migrate_v3", str(root)],
        cwd=settings.BASE_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), proc.pid


@pytest.mark.parametrize("name", v3.FAILPOINTS)
def test_a_kill_at_any_step_resumes_to_the_uninterrupted_result(tmp_path, uninterrupted, name):
    root = crash_tree(tmp_path / "repo")
    killed, pid = kill_at(root, name)

    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (root / STATE).exists() is (name == "migrate_v3.completed")

    output = migrate_here(root)

    expected_status = "already-complete" if name == "migrate_v3.completed" else "completed"
    assert f"durable-memory-v3: {expected_status}" in output
    snap = snapshot(root)
    runtime = v3.RUNTIME
    stale = [rel for rel in snap if rel.startswith(f"{runtime}/STALE-")]
    leftover = [rel for rel in snap if rel.startswith(f"{v3.LOCKS_DIR}/")]
    if name == "migrate_v3.completed":
        assert stale == []
        (lock,) = [rel for rel in leftover if rel.endswith(".json")]
        assert json.loads(snap[lock])["pid"] == pid
        assert sorted(leftover) == sorted([lock, lock[: -len(".json")] + ".flock"])
        dropped = leftover
    else:
        assert leftover == []
        (evidence,) = stale
        assert json.loads(snap[evidence])["pid"] == pid
        dropped = stale
    for rel in dropped:
        del snap[rel]

    expected_files, expected_dirs = uninterrupted
    assert normalise(snap) == expected_files
    assert directories(root) == expected_dirs


def test_every_failpoint_is_reached_by_the_crash_tree(tmp_path, monkeypatch):
    reached: list[str] = []
    for module in (v3_run, v3_steps):  # the modules with crash points
        monkeypatch.setattr(module, "failpoint", reached.append)
    v3.migrate_v3(crash_tree(tmp_path / "repo"))
    assert set(reached) == set(v3.FAILPOINTS)
