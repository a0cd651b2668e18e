"""ged_migrate_v3 on a large legacy checkout, and its second run.

Builds a standalone GedPi v2 checkout (gedpi-behaviour.md Appendix C) with
exactly --files files, times `manage.py ged_migrate_v3 PATH` in a subprocess
(Django start-up included, as an operator would run it), checks the outcome,
then times the second run, which must be a byte-for-byte no-op. Prints one
JSON line. Used by bench/run.py; runnable alone:

    python bench/migration.py --files 5000

The tree: VERSION 2, the 17 byte-exact placeholders, a real glossary and real
decisions, 50 generated work items (META, SPEC, TASKS, TESTS) that each own
ten tasks, three global files per task (BRIEF, history, RECOVERY) for those
500 tasks, 20 legacy project skills, and plans/research/specs notes of about
1 KB filling the rest. So the run exercises every step: placeholder removal,
the glossary and decisions moves, 1,500 task moves, and thousands of
retained-and-reported files, each backed up and journaled.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from gedweb.lib import gedpi_placeholders  # noqa: E402
from gedweb.lib.governance import SPEC_TEMPLATE, TASKS_TEMPLATE, TESTS_TEMPLATE  # noqa: E402

WORK_ITEMS = 50
TASKS_PER_WORK = 10
SKILLS = 20
NOTE = "Legacy planning note.\n\n" + "A line of prose about the design of the system. " * 20 + "\n"


def build_tree(root: Path, files: int) -> dict[str, int]:
    def write(rel: str, text: str) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    write(".ged/VERSION", "2\n")
    for rel, text in gedpi_placeholders.PLACEHOLDERS:
        if rel not in (".ged/GLOSSARY.md", ".ged/DECISIONS.md"):
            write(rel, text)
    write(".ged/GLOSSARY.md", "# Glossary\n\n- Kestrel: the ingest service.\n")
    write(".ged/DECISIONS.md", "# Decisions\n\n- Use PostgreSQL for shared deployments.\n")
    count = 1 + len(gedpi_placeholders.PLACEHOLDERS)
    tasks = 0
    for index in range(WORK_ITEMS):
        entropy = hashlib.sha256(str(index).encode()).hexdigest()[:32]
        work_id = f"work-{index:03d}-20260102030405006-{entropy}"
        task_ids = [f"T{index:03d}{n:02d}" for n in range(TASKS_PER_WORK)]
        meta = {"schemaVersion": 1, "workId": work_id, "summary": f"Work {index}",
                "createdAt": "2026-01-02T03:04:05.006Z", "branch": "main", "baseHead": None}
        write(f".ged/work/{work_id}/META.json", json.dumps(meta, indent=2) + "\n")
        write(f".ged/work/{work_id}/SPEC.md", SPEC_TEMPLATE)
        write(f".ged/work/{work_id}/TASKS.md", TASKS_TEMPLATE + "".join(
            f"| {task} | Task {task} | - | todo | done |\n" for task in task_ids))
        write(f".ged/work/{work_id}/TESTS.md", TESTS_TEMPLATE)
        count += 4
        for task in task_ids:
            write(f".ged/tasks/{task}-BRIEF.md", f"# {task} brief\n\nDo the thing.\n")
            write(f".ged/tasks/{task}.history.json", json.dumps({"attempts": []}) + "\n")
            write(f".ged/tasks/{task}-RECOVERY.md", f"# {task} recovery\n\nRetry.\n")
            count += 3
            tasks += 3
    for index in range(SKILLS):
        name = f"legacy-skill-{index}"
        write(f".ged/project-skills/{name}/SKILL.md",
              f"---\nname: {name}\ndescription: Legacy skill {index}.\n---\n\nDo it.\n")
        count += 1
    notes = 0
    folders = ("plans", "research", "specs")
    while count < files:
        folder = folders[notes % 3]
        write(f".ged/{folder}/topic-{notes // 100:03d}/note-{notes:05d}.md", NOTE)
        count += 1
        notes += 1
    if count != files:
        raise SystemExit(f"--files must be at least {count}")
    return {"files": count, "task_files": tasks, "notes": notes, "skills": SKILLS}


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes()
            for path in sorted(root.rglob("*")) if path.is_file()}


def migrate(root: Path, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "manage.py", "ged_migrate_v3", str(root)], cwd=REPO, env=env,
        capture_output=True, text=True, timeout=3600, check=False,
    )
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"ged_migrate_v3 failed ({result.returncode}): {result.stderr[-2000:]}")
    return seconds, result.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    args = parser.parse_args()
    env = dict(os.environ)
    env.pop("GEDWEB_FAILPOINT", None)
    with tempfile.TemporaryDirectory(prefix="gedweb-migration-bench-") as tmp:
        root = Path(tmp) / "checkout"
        tree = build_tree(root, args.files)
        first_seconds, out = migrate(root, env)
        record = json.loads((root / ".ged/MEMORY-MIGRATION.json").read_text())
        actions: dict[str, int] = {}
        for entry in record["entries"]:
            actions[entry["action"]] = actions.get(entry["action"], 0) + 1
        moved = actions.get("migrated-task-artifact", 0)
        if moved != tree["task_files"]:
            raise SystemExit(f"expected {tree['task_files']} task moves, record has {moved}")
        before = snapshot(root)
        second_seconds, second_out = migrate(root, env)
        if "already-complete" not in second_out:
            raise SystemExit(f"second run did not report already-complete: {second_out[-500:]}")
        if snapshot(root) != before:
            raise SystemExit("the second run changed the tree")
        started = time.perf_counter()
        subprocess.run([sys.executable, "manage.py", "check", "-v0"], cwd=REPO, env=env,
                       capture_output=True, timeout=600, check=True)
        startup = time.perf_counter() - started
        print(json.dumps({
            "tree": tree,
            "first_run_seconds": round(first_seconds, 3),
            "second_run_seconds": round(second_seconds, 3),
            "manage_py_startup_seconds": round(startup, 3),
            "journal_entries": len(record["entries"]),
            "actions": actions,
            "files_after": len(before),
            "second_run_byte_identical": True,
        }))


if __name__ == "__main__":
    main()
