"""`manage.py ged_export --project P PATH` (docs/interop.md): GedPi's layout, byte for byte.

The round trip: ged_import of a realistic migrated checkout, then ged_export
into an empty directory, gives back every supported file with identical
bytes; importing the exported tree changes nothing.
"""

from __future__ import annotations

import json
import os
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from governance import services, skills, standards
from memory.documents import document_put
from tests.governance.support import DIRECT, PLANNED, add_evidence, open_work, transition
from tests.interop.gedpi_trees import (
    DIRECT_ID,
    EXPORT_ONLY,
    PLANNED_ID,
    SUPPORTED,
    migrated_checkout,
    snapshot,
    write_tree,
)
from tests.interop.test_ged_import import database, take_the_checkouts_decisions
from tests.subprocesses import manage


def command(name: str, *args: str) -> dict[str, Any]:
    out = StringIO()
    call_command(name, *args, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def export(target: Path, project: str = "alpha") -> dict[str, Any]:
    return command("ged_export", "--project", project, str(target))


def refused(*args: str) -> str:
    with pytest.raises(CommandError) as raised:
        command("ged_export", *args)
    message = str(raised.value)
    assert message and "\n" not in message.strip() and "Traceback" not in message
    return message


@pytest.fixture
def source(tmp_path: Path, alpha: Any) -> Path:
    root = write_tree(tmp_path / "src", migrated_checkout())
    command("ged_import", str(root), "--project", "alpha")
    # ged_import leaves the checkout's decisions pending; an operator takes them.
    take_the_checkouts_decisions(alpha.project, root)
    return root


def test_the_round_trip_gives_back_every_supported_file_byte_for_byte(source, tmp_path):
    target = tmp_path / "out"
    result = export(target)
    exported, original = snapshot(target), snapshot(source)
    assert sorted(exported) == sorted(SUPPORTED + EXPORT_ONLY)
    assert result["written"] == sorted(exported)
    for rel in SUPPORTED:
        assert exported[rel] == original[rel], rel


def test_importing_the_exported_tree_changes_nothing(source, tmp_path):
    target = tmp_path / "out"
    export(target)
    before = database()
    again = command("ged_import", str(target), "--project", "alpha")
    assert database() == before
    assert again["created"] == {} and again["not_reproducible"] == []


def test_another_project_gets_the_exported_tree_but_no_decision_on_absent_bytes(
    source, tmp_path, beta
):
    first, second = tmp_path / "one", tmp_path / "two"
    export(first)
    # Work ids are global, so only a checkout without work items moves between projects.
    for rel in list(snapshot(first)):
        if rel.startswith((".ged/work/", ".ged/runtime/")):
            (first / rel).unlink()
    result = command("ged_import", str(first), "--project", "beta")
    # ged_export never writes AGENTS.md or CLAUDE.md (repository files), so the rejected
    # and pending versions' bytes are not in the exported tree: reported, not invented.
    assert [line.split(" ", 2)[1] for line in result["skipped"]
            if line.startswith(".ged/IMPORT-STATE.json")] == ["rejected[0]", "pending[0]"]
    # The accepted bytes (from STANDARDS.md) arrive pending, for beta's operator to decide.
    assert list(beta.project.standards_imports.values_list("path", "decision__status")) == [
        ("AGENTS.md", None)
    ]
    take_the_checkouts_decisions(beta.project, first)
    export(second, "beta")
    assert sorted(snapshot(second)) == sorted(snapshot(first))
    differing = [rel for rel, data in snapshot(second).items() if snapshot(first)[rel] != data]
    assert differing == [".ged/IMPORT-STATE.json"]


def test_json_files_are_written_in_gedpi_format(source, tmp_path):
    target = tmp_path / "out"
    export(target)
    text = (target / f".ged/runtime/{DIRECT_ID}/governance.json").read_text(encoding="utf-8")
    assert text.startswith('{\n  "schemaVersion": 1,\n  "revision": ')
    assert text.endswith("\n}\n") and "café" in text and "\\u00e9" not in text
    meta = (target / f".ged/work/{PLANNED_ID}/META.json").read_text()
    assert list(json.loads(meta)) == ["schemaVersion", "workId", "summary", "createdAt",
                                      "branch", "baseHead"]


def test_gedweb_own_state_exports_and_reimports_without_change(alpha, tmp_path):
    planned = open_work(alpha.project, PLANNED)
    direct = open_work(alpha.project, DIRECT)
    services.work_file_write(work=planned, name="SPEC.md", content="# Spec\n\nStream it.\n",
                             author="ana", expected_version=1)
    add_evidence(direct, "inspection", "observed")
    transition(direct, "pause")
    services.task_artifact_write(work=planned, task_id="T01", name="HISTORY.json",
                                 content="[]", author="ana")
    document_put(project=alpha.project, path="PROJECT.md", author="ana",
                 content="# Project\n\nA billing service.\n")
    document_put(project=alpha.project, path="reports/r1.md", author="ana",
                 content="# Report\n\nAll good.\n")
    skills.skill_put(project=alpha.project, name="deploy", author="ana", reason="Reused.",
                     source=None, content="---\nname: deploy\ndescription: Deploy it.\n---\n")
    row, _ = standards.standards_import_submit(project=alpha.project, path="AGENTS.md",
                                               content="Be careful.\n", author="ana")
    row.accept(by="admin", sha256=row.sha256)
    standards.standards_import_submit(project=alpha.project, path="AGENTS.md",
                                      content="Be quick.\n", author="ana")

    first = tmp_path / "first"
    export(first)
    before = database()
    result = command("ged_import", str(first), "--project", "alpha")
    assert database() == before
    assert result["created"] == {} and result["not_reproducible"] == []
    state = json.loads((first / ".ged/IMPORT-STATE.json").read_text())
    assert [entry["path"] for entry in state["accepted"] + state["pending"]] == ["AGENTS.md"] * 2
    record = json.loads((first / ".ged/SKILLS-STATE.json").read_text())["managed"][0]
    assert list(record) == ["name", "source", "taskRefs", "installedAt", "reason", "provenance",
                            "contentHash"]
    second = tmp_path / "second"
    export(second)
    assert snapshot(second) == snapshot(first)


def test_exporting_into_a_non_empty_directory_replaces_only_supported_files(source, tmp_path):
    target = write_tree(tmp_path / "out", {
        "README.md": "mine\n",
        ".ged/PROJECT.md": "# Stale\n\nOld text.\n",
        ".ged/runtime/notes.txt": "keep me\n",
    })
    export(target)
    exported = snapshot(target)
    assert exported["README.md"] == b"mine\n"
    assert exported[".ged/runtime/notes.txt"] == b"keep me\n"
    assert exported[".ged/PROJECT.md"] == (source / ".ged/PROJECT.md").read_bytes()


def test_a_second_export_writes_nothing(source, tmp_path):
    target = tmp_path / "out"
    export(target)
    again = export(target)
    assert again["written"] == [] and len(again["unchanged"]) == len(SUPPORTED + EXPORT_ONLY)


def test_a_symlink_under_the_target_is_refused_with_nothing_written(source, tmp_path):
    target, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    target.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere, target / ".ged")
    message = refused("--project", "alpha", str(target))
    assert "symbolic link" in message and ".ged" in message
    assert snapshot(elsewhere) == {}
    assert sorted(snapshot(target)) == [".ged"]


def test_a_target_inside_a_symlink_is_refused(source, tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    message = refused("--project", "alpha", str(tmp_path / "link" / "out"))
    assert "symbolic link" in message
    assert not (tmp_path / "real" / "out").exists()


def test_an_unknown_project_is_refused(db, tmp_path):
    assert refused("--project", "nope", str(tmp_path)) == "no project 'nope'"


def test_a_real_process_refuses_a_file_as_target_with_one_line(live_db, make_project,
                                                                memory_root, tmp_path):
    make_project("proc")
    target = write_tree(tmp_path, {"file.txt": "x\n"}) / "file.txt"
    completed = manage(memory_root, "ged_export", "--project", "proc", str(target))
    assert completed.returncode == 1
    assert completed.stderr.strip() == f"CommandError: {target} is not a directory"
    assert completed.stdout == ""
