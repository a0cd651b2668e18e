"""Fixture checkouts in GedPi's legacy layouts (gedpi-behaviour.md Appendix C), and helpers.

Generic helpers any migration test can use:
- ``write_tree(root, {relpath: bytes | str})`` writes files (str as UTF-8), creating parents;
- ``snapshot(root)`` maps every file under root (runtime included) to its bytes, and every
  symlink to ``b"symlink -> <target>"``;
- ``copy_tree(src, dst)`` copies a checkout keeping symlinks as symlinks.

Builders return the root they filled:
- ``standalone_v2_tree(root)``: the older standalone GedPi (VERSION 2): every eager template
  (with the *older* CONTEXT-MAP variant), branch-slug work and runtime folders for ``root``,
  global task files, a project skill with legacy provenance, IMPORT-STATE with plain lists and
  a STANDARDS.md with ```md fences;
- ``intermediate_tree(root)``: the intermediate 41f5230 layout: generated work IDs with META,
  governance.json and an active-work pointer, the eager templates with the *newer*
  CONTEXT-MAP variant, and SPEC/TASKS/TESTS/NOTES for every work item.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from gedweb.lib import gedpi_placeholders as ph
from gedweb.lib.governance import SPEC_TEMPLATE, TASKS_TEMPLATE, TESTS_TEMPLATE

NOTES_TEMPLATE = "# Notes\n\n"
GITIGNORE_TEMPLATE = (
    "# Ephemeral session state\nruntime/\n\n# Local repo-map cache artifacts\nREPO-MAP.md\n"
    "REPO-MAP.json\n"
)

# Two generated work IDs (gedpi-behaviour §7.1).
WORK_A = "add-login-20260102030405006-" + "a" * 32
WORK_B = "fix-search-20260203040506007-" + "b" * 32
CREATED_A = "2026-01-02T03:04:05.006Z"
CREATED_B = "2026-02-03T04:05:06.007Z"

REAL_GLOSSARY = "# Glossary\n\n- Ferry: a batch of memory entries moved together.\n"
REAL_DECISIONS = "# Decisions\n\n- 2026-01-01: Keep memory append-only. Why: audit.\n"
REAL_ARCHITECTURE = "# Architecture\n\nA Django service with a hash-chained entry table.\n"


def write_tree(root: Path, files: dict[str, bytes | str]) -> Path:
    root = Path(root)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        path.write_bytes(data)
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    root = Path(root)
    found: dict[str, bytes] = {}
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = Path(directory) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[rel] = b"symlink -> " + os.fsencode(os.readlink(path))
            elif name in filenames:
                found[rel] = path.read_bytes()
    return found


def directories(root: Path) -> set[str]:
    root = Path(root)
    return {
        (Path(d) / n).relative_to(root).as_posix()
        for d, dirnames, _ in os.walk(root, followlinks=False)
        for n in dirnames
        if not (Path(d) / n).is_symlink()
    }


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return Path(dst)


def pretty(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def templates(context_map: str = ph.CONTEXT_MAP) -> dict[str, str]:
    """Every eager template file of the legacy layouts, byte-exact."""
    files = dict(ph.PLACEHOLDERS)
    files[".ged/CONTEXT-MAP.md"] = context_map
    return files


def tasks_md(*task_ids: str) -> str:
    rows = "".join(f"| {task_id} | Task {task_id} | - | todo | done |\n" for task_id in task_ids)
    return TASKS_TEMPLATE + rows


def meta(work_id: str, summary: str, created_at: str) -> str:
    return pretty({"schemaVersion": 1, "workId": work_id, "summary": summary,
                   "createdAt": created_at, "branch": "main", "baseHead": None})


def legacy_checkpoint(lifecycle: str = "active") -> str:
    """A supported v2 checkpoints.json (§6.9 envelope)."""
    return pretty({
        "schemaVersion": 2,
        "classification": "non-trivial",
        "classificationReason": "Touches the login flow.",
        "planCheckpoints": {"plan-1": {"status": "accepted"}},
        "taskCheckpoints": {"T01": {"attempt-1": {"status": "failed"}}},
        "lifecycleStatus": lifecycle,
    })


def standalone_v2_tree(root: Path, *, checkpoints: bool = False) -> Path:
    files: dict[str, bytes | str] = {
        ".ged/VERSION": "2\n",
        ".ged/.gitignore": GITIGNORE_TEMPLATE,
        **templates(ph.CONTEXT_MAP_STANDALONE),
        # Branch-scoped work for the default branch slug `root`.
        ".ged/work/root/SPEC.md": "# Spec\n\n## Problem\n\nLogin is slow.\n",
        ".ged/work/root/TASKS.md": tasks_md("T01", "T02"),
        ".ged/work/root/TESTS.md": TESTS_TEMPLATE,
        ".ged/work/root/NOTES.md": NOTES_TEMPLATE,
        ".ged/work/root/META.json": '{"workId":"root","schema":1}',
        ".ged/runtime/root/STATE.md": "# State\n\nWorking on T01.\n",
        ".ged/runtime/root/SESSION-SUMMARY.md": "# Session summary\n\nStarted T01.\n",
        # Global task files.
        ".ged/tasks/T01-BRIEF.md": "# T01 brief\n\nSpeed up login.\n",
        ".ged/tasks/T01.history.json": pretty({"attempts": [{"outcome": "failed"}]}),
        ".ged/tasks/T01-RECOVERY.md": "# T01 recovery\n\nRetry with a cache.\n",
        # A project skill with legacy provenance (no hash).
        ".ged/project-skills/login-cache/SKILL.md": (
            "---\nname: login-cache\ndescription: Cache login lookups.\n---\n\nUse the cache.\n"
        ),
        ".ged/SKILLS-STATE.json": pretty({"managed": [{
            "name": "login-cache", "source": "task",
            "sourcePath": ".ged/project-skills/login-cache",
            "taskRefs": ["T01"], "installedAt": "2025-06-01T10:00:00.000Z",
        }]}),
        # Standards import without hashes.
        ".ged/IMPORT-STATE.json": pretty({"accepted": ["AGENTS.md"], "rejected": [],
                                          "pending": []}),
        ".ged/STANDARDS.md": (
            "# Imported Standards\n\nThese standards were imported from other harness-specific "
            "instruction files and approved for Ged use.\n\n## AGENTS.md\n\n```md\n"
            "Run the tests before committing.\n```\n"
        ),
        "AGENTS.md": "Run the tests before committing.\n",
    }
    if checkpoints:
        files[".ged/runtime/root/checkpoints.json"] = legacy_checkpoint()
    return write_tree(root, files)


def intermediate_tree(root: Path, *, version: str = "2\n") -> Path:
    pointer = "0123456789abcdef0123456789abcdef"
    files: dict[str, bytes | str] = {
        ".ged/VERSION": version,
        ".ged/.gitignore": GITIGNORE_TEMPLATE,
        ".ged/IMPORT-STATE.json": pretty({"schemaVersion": 1, "decisions": []}),
        **templates(),
    }
    for work_id, summary, created, tasks in (
        (WORK_A, "Add login", CREATED_A, ("T01",)),
        (WORK_B, "Fix search", CREATED_B, ("T02",)),
    ):
        files.update({
            f".ged/work/{work_id}/META.json": meta(work_id, summary, created),
            f".ged/work/{work_id}/SPEC.md": SPEC_TEMPLATE,
            f".ged/work/{work_id}/TASKS.md": tasks_md(*tasks),
            f".ged/work/{work_id}/TESTS.md": TESTS_TEMPLATE,
            f".ged/work/{work_id}/NOTES.md": NOTES_TEMPLATE,
            f".ged/runtime/{work_id}/governance.json": pretty(
                {"schemaVersion": 1, "workId": work_id, "revision": 1}
            ),
        })
    files[f".ged/runtime/active-work/{pointer}.json"] = pretty({
        "schemaVersion": 1, "sessionId": "ged-default-session", "workId": WORK_A,
        "operation": "open", "selectedAt": CREATED_A, "requestId": "req-1",
    })
    return write_tree(root, files)


def scenario_tree(root: Path, *, version: str = "2\n") -> Path:
    """Scenario 63 (gedpi-behaviour §10 G): real glossary, decisions and ARCHITECTURE,
    ``tasks/T01.history.json`` owned by exactly one generated work item, a malformed
    ``tasks/...history.json``, and a legacy project skill."""
    return write_tree(root, {
        ".ged/VERSION": version,
        ".ged/GLOSSARY.md": REAL_GLOSSARY,
        ".ged/DECISIONS.md": REAL_DECISIONS,
        ".ged/ARCHITECTURE.md": REAL_ARCHITECTURE,
        ".ged/tasks/T01.history.json": pretty({"attempts": [{"outcome": "failed"}]}),
        ".ged/tasks/...history.json": '{"attempts": [',
        ".ged/project-skills/legacy-skill/SKILL.md": (
            "---\nname: legacy-skill\ndescription: Legacy.\n---\n\nDo the legacy thing.\n"
        ),
        f".ged/work/{WORK_A}/META.json": meta(WORK_A, "Add login", CREATED_A),
        f".ged/work/{WORK_A}/TASKS.md": tasks_md("T01"),
    })
