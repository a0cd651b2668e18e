"""Issue 19's real-tree findings for ged_import, ged_export and doctor.

Each test builds a tree shaped like a real one (tests/checkout/real_trees.py: the
issue's reproduction, a clone of GedPi's own repository, that repository where GedPi
ran; tests/interop/gedpi_trees.py: a realistic migrated checkout) and runs the
command, then reads the database, the tree or the child process's output.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from gedweb.checkout import v3
from governance.gedpi_import import read_checkout
from governance.models import WorkItem
from memory.models import DocumentRevision
from tests.checkout.real_trees import (
    CLONE_WORK,
    GEDPI_ADR,
    GEDPI_ADR_TEXT,
    GEDPI_CONTEXT,
    GEDPI_LEGACY,
    ISSUE_CONTEXT,
    gedpi_clone,
    issue_reproduction,
    working_checkout,
)
from tests.checkout.trees import REAL_GLOSSARY, snapshot, standalone_v2_tree, write_tree
from tests.interop.gedpi_trees import (
    BOOTSTRAP_ID,
    DIRECT_ID,
    LEGACY_ID,
    PLANNED_ID,
    migrated_checkout,
)
from tests.interop.test_doctor import doctor_run, failures
from tests.interop.test_ged_export import export
from tests.interop.test_ged_import import database, refused, run

POINTER_GLOSSARY = (".ged/GLOSSARY.md: a compatibility pointer, not imported: GedPi never "
                    "reads it as memory, and CONTEXT.md holds the content")
POINTER_DECISIONS = (".ged/DECISIONS.md: a compatibility pointer, not imported: GedPi never "
                     "reads it as memory, and docs/adr/ holds the content")


def legacy_line(rel: str, why: str) -> str:
    return (f"{rel}: legacy GedPi memory, not imported: the v3 migration keeps it in place "
            f"({why}) and GedPi v3 never reads it; move what is still true into PROJECT.md, "
            "CONTEXT.md, an ADR or a skill")


def clone_line(work_id: str) -> str:
    return (f".ged/work/{work_id}: no .ged/runtime/{work_id}/governance.json: there is no "
            ".ged/runtime/ folder, which GedPi's .ged/.gitignore keeps out of Git, so a clone "
            "never has it; import the working checkout where GedPi ran (or copy its "
            ".ged/runtime/ here) to bring this work item and its governance")


# --- the pointer prefix rule: import accepts, doctor passes ---------------------------------


def test_the_issue_reproduction_imports_and_its_pointer_is_listed(alpha, tmp_path):
    root = issue_reproduction(tmp_path / "repo")
    before = snapshot(root)
    result = run(str(root), "--project", "alpha")
    assert result["created"] == {"documents": 1}
    assert result["skipped"] == [POINTER_GLOSSARY]
    context = DocumentRevision.objects.get(project=alpha.project, path="CONTEXT.md")
    assert context.content == ISSUE_CONTEXT  # no "Migrated Ged glossary" section
    assert snapshot(root) == before


@pytest.mark.parametrize("build", [issue_reproduction, gedpi_clone])
def test_doctor_passes_a_checkout_with_hand_written_pointers(alpha, tmp_path, build):
    root = build(tmp_path / "repo")
    code, lines, _ = doctor_run("--project", "alpha", "--checkout", str(root))
    assert (code, failures(lines)) == (0, [])
    assert lines[-1] == f"ok   {root}: checkout (no migration leftovers or locks)"


def test_doctor_still_fails_a_pointer_whose_destination_is_empty(alpha, tmp_path):
    """The stricter check: with CONTEXT.md gone, the pointer's bytes need migrating."""
    root = issue_reproduction(tmp_path / "repo")
    (root / "CONTEXT.md").unlink()
    code, lines, _ = doctor_run("--project", "alpha", "--checkout", str(root))
    assert code == 1
    assert failures(lines) == [f"FAIL {root}: checkout: durable-memory v3 migration is needed: "
                               "run `manage.py ged_migrate_v3 PATH`"]
    assert "ged_migrate_v3" in refused(str(root), "--project", "alpha")


# --- every legacy file the import leaves is listed, with why --------------------------------


def test_a_gedpi_clone_lists_every_legacy_file_and_work_item_it_leaves(alpha, tmp_path):
    root = gedpi_clone(tmp_path / "repo")
    result = run(str(root), "--project", "alpha")
    assert result["skipped"] == [
        *(clone_line(work_id) for work_id in sorted(CLONE_WORK)),
        POINTER_GLOSSARY,
        POINTER_DECISIONS,
        *(legacy_line(rel, v3.REASON_AMBIGUOUS) for rel in (
            ".ged/CONTEXT-MAP.md", ".ged/ARCHITECTURE.md", ".ged/PATTERNS.md",
            ".ged/PROGRESS.md", ".ged/SKILLS.md")),
    ]
    assert set(GEDPI_LEGACY) <= {line.split(": ", 1)[0] for line in result["skipped"]}
    documents = dict(DocumentRevision.objects.filter(project=alpha.project)
                     .values_list("path", "content"))
    assert documents == {"PROJECT.md": (root / ".ged/PROJECT.md").read_text(),
                         "CONTEXT.md": GEDPI_CONTEXT,
                         f"adr/{GEDPI_ADR.split('/')[-1]}": GEDPI_ADR_TEXT}
    assert not WorkItem.objects.exists()


def test_a_completed_migration_leaves_only_listed_legacy_files(alpha, tmp_path):
    """Every file under .ged/ and .pi/ is imported, named in skipped, or GedPi's machinery."""
    root = standalone_v2_tree(tmp_path / "legacy", checkpoints=True)
    call_command("ged_migrate_v3", str(root), stdout=StringIO())
    record = {entry["sourcePath"]: entry.get("reason")
              for entry in v3.read_completion(root)["entries"]}
    checkout = read_checkout(root)
    named = [line.split(": ", 1)[0] for line in checkout.skipped]
    machinery = (".ged/VERSION", ".ged/.gitignore", ".ged/MEMORY-MIGRATION.json",
                 ".ged/runtime/migrations/", ".ged/runtime/active-work/")
    left = [rel for rel in snapshot(root) if rel.startswith((".ged/", ".pi/"))
            and rel not in checkout.supported and not rel.startswith(machinery)
            and not any(rel == name or rel.startswith(name + "/") for name in named)]
    assert left == []
    lines = dict(line.split(": ", 1) for line in checkout.skipped)
    for rel in (".ged/CONTEXT-MAP.md", ".ged/tasks/T01-BRIEF.md",
                ".ged/project-skills/login-cache/SKILL.md"):
        assert f"{rel}: {lines[rel]}" == legacy_line(rel, record[rel]), rel
    assert lines[".ged/runtime/root/checkpoints.json"].startswith(
        "legacy branch-scoped runtime state, not imported")
    # Listing never blocks the import of what the migration produced.
    result = run(str(root), "--project", "alpha")
    assert WorkItem.objects.get(project=alpha.project).origin["kind"] == "legacy-import"
    assert result["skipped"] == checkout.skipped


def test_a_glossary_written_after_a_completed_migration_is_named_as_content(alpha, tmp_path):
    root = standalone_v2_tree(tmp_path / "legacy")
    call_command("ged_migrate_v3", str(root), stdout=StringIO())
    write_tree(root, {".ged/GLOSSARY.md": REAL_GLOSSARY})
    result = run(str(root), "--project", "alpha")
    assert (".ged/GLOSSARY.md: not a pointer, and not imported: the v3 migration is already "
            "complete, so GedPi never moves this file; move what it holds into CONTEXT.md by "
            "hand to keep it") in result["skipped"]


def test_a_symlink_in_a_legacy_folder_is_skipped_and_never_followed(alpha, tmp_path):
    root = gedpi_clone(tmp_path / "repo")
    outside = write_tree(tmp_path / "outside", {"secret.md": "secret\n"})
    (root / ".ged/plans").mkdir()
    (root / ".ged/plans/P01.md").symlink_to(outside / "secret.md")
    result = run(str(root), "--project", "alpha")
    assert not any(line.startswith(".ged/plans") for line in result["skipped"])
    assert "secret" not in str(result)


# --- work items without governance.json get the true reason ---------------------------------


def test_a_clone_of_a_working_checkout_names_the_missing_runtime_folder(alpha, tmp_path):
    root = write_tree(tmp_path / "clone", migrated_checkout())
    shutil.rmtree(root / ".ged/runtime")  # what `git clone` gives: .ged/.gitignore has runtime/
    result = run(str(root), "--project", "alpha")
    work_lines = [line for line in result["skipped"] if line.startswith(".ged/work/")
                  and "governance.json" in line]
    expected_ids = sorted([PLANNED_ID, DIRECT_ID, LEGACY_ID, BOOTSTRAP_ID])
    assert work_lines == [clone_line(work_id) for work_id in expected_ids]
    assert "bootstrap work is not imported" not in str(result)
    assert not WorkItem.objects.exists()

    # Doing what the reason says brings the work in.
    write_tree(root, {rel: data for rel, data in migrated_checkout().items()
                      if rel.startswith(".ged/runtime/")})
    again = run(str(root), "--project", "alpha")
    assert again["created"]["work_items"] == 3


def test_work_without_governance_where_gedpi_ran_is_told_it_has_none(alpha, tmp_path):
    root = working_checkout(tmp_path / "repo")
    result = run(str(root), "--project", "alpha")
    work_id = sorted(CLONE_WORK)[0]
    assert (f".ged/work/{work_id}: no .ged/runtime/{work_id}/governance.json: GedPi writes it "
            "when work is opened on the item (its bootstrap work item has none), so there is "
            "no governance state to import") in result["skipped"]
    assert not any("clone" in line for line in result["skipped"])


# --- a tree without VERSION is told what to do ----------------------------------------------


def test_a_ged_folder_without_version_is_refused_with_what_to_do(alpha, tmp_path):
    root = gedpi_clone(tmp_path / "repo")
    (root / ".ged/VERSION").unlink()
    before = database()
    message = refused(str(root), "--project", "alpha")
    assert message == (f"{root} is not a GedPi checkout: .ged/VERSION is missing; GedPi writes "
                       ".ged/VERSION (`3`) the first time it starts in a checkout and migrates "
                       "legacy memory on the start after that: start GedPi in it once, or "
                       "write `3` to .ged/VERSION yourself, then run `manage.py ged_migrate_v3 "
                       f"{root}` again")
    assert database() == before
    (root / ".ged/VERSION").write_text("3\n")  # as the message says; the migration says why
    call_command("ged_migrate_v3", str(root), stdout=StringIO())
    assert run(str(root), "--project", "alpha")["created"]["documents"] == 3


def test_a_directory_without_ged_is_refused_as_not_a_checkout(alpha, tmp_path):
    root = write_tree(tmp_path / "src", {"CONTEXT.md": "# Context\n\nWords.\n"})
    assert refused(str(root), "--project", "alpha") == (
        f"{root} is not a GedPi checkout: .ged/VERSION is missing; {root} has no .ged/ folder, "
        "so it is not a GedPi checkout: give the repository root where GedPi keeps .ged/")
    assert not DocumentRevision.objects.exists()


# --- ged_export writes .ged/.gitignore ---------------------------------------------------------

# gedpi-behaviour.md Appendix A: GITIGNORE, 95 bytes.
GITIGNORE_SHA256 = "ade3a245d1af887682d978098c1f8d0437a67d71b77e7e4dd359771d70a30fcd"


def test_export_writes_gedpi_gitignore_byte_for_byte(alpha, tmp_path):
    result = export(tmp_path / "out")
    data = (tmp_path / "out/.ged/.gitignore").read_bytes()
    assert (len(data), hashlib.sha256(data).hexdigest()) == (95, GITIGNORE_SHA256)
    assert ".ged/.gitignore" in result["written"] and result["kept"] == []


def test_exported_runtime_files_are_ignored_by_git(alpha, tmp_path):
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    root = issue_reproduction(tmp_path / "repo")
    run(str(root), "--project", "alpha")
    subprocess.run([git, "init", "-q", str(root)], check=True)
    export(root)
    ignored = subprocess.run([git, "-C", str(root), "check-ignore", "-q",
                              ".ged/runtime/x/governance.json"], check=False)
    assert ignored.returncode == 0


def test_export_keeps_a_checkout_own_gitignore(alpha, tmp_path):
    own = b"runtime/\nmy-notes/\n"
    target = write_tree(tmp_path / "out", {".ged/.gitignore": own})
    first = export(target)
    assert (target / ".ged/.gitignore").read_bytes() == own
    assert first["kept"] == [".ged/.gitignore"]
    assert ".ged/.gitignore" not in first["written"] + first["unchanged"]
    again = export(tmp_path / "fresh")
    second = export(tmp_path / "fresh")
    assert again["written"].count(".ged/.gitignore") == 1
    assert ".ged/.gitignore" in second["unchanged"] and second["written"] == []


# --- doctor on a database that is not migrated ---------------------------------------------


def doctor_process(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`manage.py doctor ARGS` on an empty SQLite file, as an operator's first run would be."""
    database_file = tmp_path / "empty.sqlite3"
    database_file.touch()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GEDWEB_", "DJANGO_", "DATABASE_URL"))}
    env.update(DATABASE_URL=f"sqlite:///{database_file}",
               GEDWEB_MEMORY_ROOT=str(tmp_path / "memory"), GEDWEB_DEMO_PROJECT="false")
    return subprocess.run([sys.executable, "manage.py", "doctor", *args], cwd=settings.BASE_DIR,
                          env=env, capture_output=True, text=True, timeout=60, check=False)


def unmigrated_line(completed: subprocess.CompletedProcess[str]) -> str:
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "Traceback" not in completed.stderr and "no such table" not in completed.stderr
    assert completed.stderr.strip().splitlines() == ["CommandError: doctor found 1 problem(s)"]
    (line,) = failures(completed.stdout.splitlines())
    return line


def test_doctor_on_an_unmigrated_database_is_one_failed_check(tmp_path):
    line = unmigrated_line(doctor_process(tmp_path))
    assert line.startswith("FAIL database: migrations: the database is not migrated (")
    assert "memory_project first" in line
    assert line.endswith("run `manage.py migrate`, then doctor again; no other check could run")


def test_doctor_checkout_alone_on_an_unmigrated_database_still_checks_the_checkout(tmp_path):
    root = issue_reproduction(tmp_path / "repo")
    completed = doctor_process(tmp_path, "--checkout", str(root))
    assert "manage.py migrate" in unmigrated_line(completed)
    assert completed.stdout.splitlines()[-1] == (
        f"ok   {root}: checkout (no migration leftovers or locks)")


def test_doctor_with_a_project_on_an_unmigrated_database_does_not_look_it_up(tmp_path):
    line = unmigrated_line(doctor_process(tmp_path, "--project", "alpha"))
    assert "manage.py migrate" in line


def test_doctor_on_a_migrated_database_reports_the_tables_present(db):
    code, lines, _ = doctor_run()
    assert code == 0
    assert lines[0] == "ok   database: migrations (all applied)"
