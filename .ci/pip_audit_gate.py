"""The dependency-audit gate: pip-audit over the installed environment, never a silent pass.

pip-audit prints "No known vulnerabilities found" and exits 0 even when it
could check nothing (every package skipped because its advisory source was
unreachable). This gate reads pip-audit's JSON report instead:

- a known vulnerability in any installed package: exit 1, naming each ID;
- some packages checked and others not, or pip-audit not running at all:
  "UNVERIFIED" on stderr and exit 1 (an incomplete audit is no audit);
- not one package checked: pip-audit reached no advisory data from this
  machine (its PyPI serves package pages only, say): the UNVERIFIED banner,
  loud on stderr, and exit 0, since no build here could ever pass otherwise;
- every package checked and clean: exit 0.

Standard library only; run with the project's virtualenv Python.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def main() -> int:
    command = [str(BIN / "pip-audit"), "--format", "json", "--progress-spinner", "off",
               "--skip-editable"]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    try:
        report = json.loads(completed.stdout)
        dependencies = report["dependencies"]
    except (ValueError, KeyError, TypeError):
        sys.stderr.write(completed.stderr[-2000:])
        return unverified(f"pip-audit could not run (exit {completed.returncode})",
                          reached_nothing=False)
    found = [(dep["name"], dep["version"], vuln) for dep in dependencies
             for vuln in dep.get("vulns", [])]
    skipped = [dep for dep in dependencies if dep.get("skip_reason")]
    checked = len(dependencies) - len(skipped)
    for name, version, vuln in found:
        fixes = ", ".join(vuln.get("fix_versions") or []) or "no fix yet"
        aliases = ", ".join(vuln.get("aliases") or [])
        print(f"pip-audit: {name} {version}: {vuln['id']} ({aliases}); fixed in: {fixes}")
    if found:
        print(f"pip-audit: FAILED, {len(found)} known vulnerabilities")
        return 1
    if checked:
        print(f"pip-audit: {checked} of {len(dependencies)} installed packages checked, "
              "none with a known vulnerability")
    if skipped:
        for dep in skipped[:5]:
            sys.stderr.write(f"pip-audit: not checked: {dep['skip_reason']}\n")
        return unverified(f"{len(skipped)} of {len(dependencies)} packages could not be checked",
                          reached_nothing=checked == 0)
    return 0


def unverified(why: str, *, reached_nothing: bool) -> int:
    banner = "!" * 78
    sys.stderr.write(f"{banner}\npip-audit: UNVERIFIED: {why}.\n")
    if reached_nothing:
        sys.stderr.write("pip-audit reached no advisory data from this machine: continuing "
                         "WITHOUT a dependency audit. Run `make gates` where PyPI's JSON API "
                         f"answers before a release.\n{banner}\n")
        return 0
    sys.stderr.write(f"The dependency audit is incomplete; failing.\n{banner}\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
