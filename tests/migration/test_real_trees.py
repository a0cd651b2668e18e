"""`manage.py ged_migrate_v3` on the trees of issue 19 (tests/checkout/real_trees.py)."""

from __future__ import annotations

import pytest

from gedweb.checkout import v3
from tests.checkout.real_trees import GEDPI_GLOSSARY, gedpi_clone, issue_reproduction
from tests.checkout.test_v3 import expected_context
from tests.checkout.trees import REAL_GLOSSARY, directories, snapshot, write_tree
from tests.migration.test_command import manage, run


def test_the_issue_reproduction_is_not_needed_where_it_used_to_complete(tmp_path):
    root = issue_reproduction(tmp_path / "repo")
    before, before_dirs = snapshot(root), directories(root)
    result = manage(str(root))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["legacy-checkpoints-v1: not-needed",
                                          "durable-memory-v3: not-needed"]
    assert snapshot(root) == before
    assert directories(root) == before_dirs


def test_a_gedpi_clone_dry_run_and_run_write_nothing(tmp_path):
    root = gedpi_clone(tmp_path / "repo")
    before, before_dirs = snapshot(root), directories(root)
    assert run(str(root), "--dry-run").splitlines()[-2:] == [
        "durable-memory-v3: not needed (VERSION 3, no actionable legacy memory); nothing to do",
        "dry run: nothing was changed"]
    assert run(str(root)).splitlines()[1] == "durable-memory-v3: not-needed"
    assert snapshot(root) == before
    assert directories(root) == before_dirs


# --- a tree without .ged/VERSION is told what to do -----------------------------------------


def test_a_ged_folder_without_version_is_told_to_start_gedpi_or_write_version(tmp_path):
    root = write_tree(tmp_path / "repo", {".ged/GLOSSARY.md": REAL_GLOSSARY})
    before = snapshot(root)
    result = manage(str(root))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1:] == [
        "durable-memory-v3: not-needed",
        f"  no .ged/VERSION: {v3.missing_version_hint(root, str(root))}"]
    assert "write `3` to .ged/VERSION" in lines[2]
    assert f"manage.py ged_migrate_v3 {root}` again" in lines[2]
    dry = run(str(root), "--dry-run").splitlines()
    assert dry[-3:] == ["durable-memory-v3: not needed (no .ged/VERSION); nothing to do",
                        f"  {v3.missing_version_hint(root, str(root))}",
                        "dry run: nothing was changed"]
    assert snapshot(root) == before


def test_following_the_hint_migrates_the_tree(tmp_path):
    root = write_tree(tmp_path / "repo", {".ged/GLOSSARY.md": REAL_GLOSSARY})
    run(str(root))
    (root / ".ged/VERSION").write_text("3\n")  # what the hint says to do
    assert run(str(root)).splitlines()[1] == "durable-memory-v3: completed"
    assert (root / "CONTEXT.md").read_text() == expected_context(REAL_GLOSSARY)


def test_a_directory_without_ged_is_told_it_is_not_a_checkout(tmp_path):
    root = write_tree(tmp_path / "src", {"README.md": "# Not GedPi\n"})
    lines = run(str(root)).splitlines()
    assert lines[2] == (f"  no .ged/VERSION: {root} has no .ged/ folder, so it is not a GedPi "
                        "checkout: give the repository root where GedPi keeps .ged/")
    assert snapshot(root) == {"README.md": b"# Not GedPi\n"}


@pytest.mark.parametrize("version", ["3\n", "2\n"])
def test_a_tree_with_version_gets_no_hint(tmp_path, version):
    root = write_tree(tmp_path / "repo", {".ged/VERSION": version,
                                          ".ged/GLOSSARY.md": GEDPI_GLOSSARY,
                                          "CONTEXT.md": "# Context\n\nWords.\n"})
    lines = run(str(root)).splitlines()
    assert not any("no .ged/VERSION" in line for line in lines)
