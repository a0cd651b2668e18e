"""The dependency-audit gate (.ci/pip_audit_gate.py) over pip-audit's JSON reports.

pip-audit is not GedWeb's: its answers are given here as the reports it
writes, and the gate's verdict is checked for each (issue 36 §9: CI names no
registry address; pip-audit says what it could not reach).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

GATE = Path(__file__).resolve().parents[2] / ".ci" / "pip_audit_gate.py"


def gate_on(report: Any, monkeypatch: pytest.MonkeyPatch) -> int:
    spec = importlib.util.spec_from_file_location("pip_audit_gate", GATE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    stdout = report if isinstance(report, str) else json.dumps(report)
    monkeypatch.setattr(module.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a, 0 if "dependencies" in stdout else 1, stdout=stdout, stderr="network down"))
    return int(module.main())


def dep(name: str, *, vulns: list[Any] | None = None, skipped: bool = False) -> dict[str, Any]:
    row: dict[str, Any] = {"name": name, "version": "1.0", "vulns": vulns or []}
    if skipped:
        row["skip_reason"] = "Dependency not found on PyPI and could not be audited"
    return row


VULN = {"id": "GHSA-xxxx-yyyy-zzzz", "aliases": ["CVE-2026-1"], "fix_versions": ["1.1"]}


@pytest.mark.parametrize(("deps", "code", "said"), [
    ([dep("a"), dep("b")], 0, "2 of 2 installed packages checked"),
    ([dep("a", vulns=[VULN]), dep("b")], 1, "GHSA-xxxx-yyyy-zzzz"),
    ([dep("a"), dep("b", skipped=True)], 1, "UNVERIFIED: 1 of 2 packages could not be checked"),
    ([dep("a", skipped=True), dep("b", skipped=True)], 0,
     "UNVERIFIED: 2 of 2 packages could not be checked"),
    ([dep("a", vulns=[VULN]), dep("b", skipped=True)], 1, "GHSA-xxxx-yyyy-zzzz"),
])
def test_the_gate_fails_every_finding_and_every_incomplete_audit(monkeypatch, capsys, deps, code,
                                                                 said):
    assert gate_on({"dependencies": deps}, monkeypatch) == code
    captured = capsys.readouterr()
    assert said in captured.out + captured.err


def test_a_pip_audit_that_cannot_run_fails(monkeypatch, capsys):
    assert gate_on("Traceback: something broke", monkeypatch) == 1
    assert "UNVERIFIED: pip-audit could not run" in capsys.readouterr().err
