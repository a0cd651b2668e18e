"""Checkout reads refuse hard links (issue 16 §5, docs/interop.md "Hostile files").

A hard link can put a file from anywhere on the filesystem inside a checkout
(``ln /outside/secret.txt co/CONTEXT.md``) where no path check sees it. Every
checkout read refuses a regular file with more than one link
(``safefs.hard_link_problem``, on the opened descriptor), and the commands that
read checkouts (``ged_import``, ``ged_migrate_v3``, ``doctor --checkout``) stop
with one line naming the file before anything is written.
"""

from __future__ import annotations

import os
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from gedweb.checkout import safefs, v3
from tests.checkout.trees import directories, scenario_tree, snapshot
from tests.interop.gedpi_trees import migrated_checkout, write_tree
from tests.interop.test_doctor import doctor_run, failures
from tests.interop.test_ged_import import counts, database
from tests.interop.test_ged_import import refused as import_refused
from tests.interop.test_ged_import import run as import_run

SECRET = "outside-secret-7f3a: the operator's private notes\n"
SKILL = ".agents/skills/release-notes/SKILL.md"
ADR = "docs/adr/0001-postgres.md"


def message_for(rel: str, links: int = 2) -> str:
    return f"{rel}: a hard link ({links} links); GedWeb reads only files with a single link"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


def hard_link(root: Path, rel: str, target: Path) -> None:
    """Replace root/rel by a hard link to target (the attack of issue 16)."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.link(target, path)


def secret_in_database() -> bool:
    return any("outside-secret-7f3a" in repr(rows) for rows in database().values())


def migrate(*args: str) -> str:
    out = StringIO()
    call_command("ged_migrate_v3", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def migrate_refused(*args: str) -> str:
    with pytest.raises(CommandError) as raised:
        migrate(*args)
    message = str(raised.value)
    assert "\n" not in message and "Traceback" not in message
    return message


# --- the rule ---------------------------------------------------------------------------


def test_read_bytes_refuses_a_file_with_a_second_link_anywhere(tmp_path, outside):
    root = tmp_path / "co"
    root.mkdir()
    hard_link(root, "CONTEXT.md", outside)
    with pytest.raises(safefs.UnsafePath) as raised:
        safefs.read_bytes(root, "CONTEXT.md")
    assert str(raised.value) == message_for("CONTEXT.md")


def test_read_bytes_names_the_path_relative_to_the_checkout_and_counts_every_link(
    tmp_path, outside
):
    root = tmp_path / "co"
    root.mkdir()
    hard_link(root, ADR, outside)
    os.link(outside, tmp_path / "outside" / "third.txt")
    with pytest.raises(safefs.UnsafePath) as raised:
        safefs.read_bytes(root, ADR)
    assert str(raised.value) == message_for(ADR, 3)


def test_a_file_with_one_link_is_read(tmp_path):
    root = write_tree(tmp_path / "co", {"CONTEXT.md": "# Context\n"})
    assert safefs.read_bytes(root, "CONTEXT.md") == b"# Context\n"


def test_the_writers_own_temporary_link_does_not_trip_a_reader(tmp_path):
    # What a reader sees in the middle of publish_exclusive (temp file linked
    # to the target, not yet unlinked), or after a crash between the two.
    root = write_tree(tmp_path / "co", {".ged/MEMORY-MIGRATION.json": "{}\n"})
    os.link(root / ".ged/MEMORY-MIGRATION.json", root / ".ged/.gedweb-tmp-0123abcd")
    assert safefs.read_bytes(root, ".ged/MEMORY-MIGRATION.json") == b"{}\n"
    assert v3.hard_link_problems(root) == []


def test_a_temporary_name_does_not_excuse_a_link_from_outside(tmp_path, outside):
    root = tmp_path / "co"
    root.mkdir()
    hard_link(root, "CONTEXT.md", outside)
    os.link(outside, root / ".gedweb-tmp-0123abcd")
    with pytest.raises(safefs.UnsafePath) as raised:
        safefs.read_bytes(root, "CONTEXT.md")
    assert str(raised.value) == message_for("CONTEXT.md", 3)


def test_a_temporary_name_in_another_directory_does_not_count(tmp_path):
    root = write_tree(tmp_path / "co", {"CONTEXT.md": "x\n"})
    (root / ".ged").mkdir()
    os.link(root / "CONTEXT.md", root / ".ged" / ".gedweb-tmp-0123abcd")
    with pytest.raises(safefs.UnsafePath, match="CONTEXT.md: a hard link"):
        safefs.read_bytes(root, "CONTEXT.md")


def test_publish_exclusive_leaves_a_file_with_one_link(tmp_path):
    root = tmp_path / "co"
    root.mkdir()
    assert safefs.publish_exclusive(root, "a/b.json", b"{}\n")
    assert os.lstat(root / "a/b.json").st_nlink == 1
    assert safefs.read_bytes(root, "a/b.json") == b"{}\n"


# --- ged_import -------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "src", migrated_checkout())


@pytest.mark.parametrize("rel", ["CONTEXT.md", SKILL, ADR])
def test_ged_import_refuses_a_hard_linked_file_naming_it(alpha, tree, outside, rel):
    hard_link(tree, rel, outside)
    before, rows = snapshot(tree), counts()
    message = import_refused(str(tree), "--project", "alpha")
    assert message_for(rel) in message
    assert counts() == rows
    assert not secret_in_database()
    assert snapshot(tree) == before
    assert outside.read_text() == SECRET


def test_ged_import_of_the_same_tree_with_single_links_imports(alpha, tree):
    result: dict[str, Any] = import_run(str(tree), "--project", "alpha")
    assert result["created"]["documents"] > 0


# --- ged_migrate_v3 ---------------------------------------------------------------------


@pytest.mark.parametrize("rel", ["CONTEXT.md", ADR, SKILL])
def test_ged_migrate_v3_refuses_a_hard_linked_file_before_its_first_step(
    tmp_path, outside, rel
):
    root = scenario_tree(tmp_path / "co")
    hard_link(root, rel, outside)
    before, dirs = snapshot(root), directories(root)
    assert migrate_refused(str(root)) == message_for(rel)
    assert snapshot(root) == before and directories(root) == dirs  # not even a lock
    assert outside.read_text() == SECRET


def test_ged_migrate_v3_dry_run_refuses_a_hard_link_too(tmp_path, outside):
    root = scenario_tree(tmp_path / "co")
    hard_link(root, "CONTEXT.md", outside)
    before = snapshot(root)
    assert migrate_refused(str(root), "--dry-run") == message_for("CONTEXT.md")
    assert snapshot(root) == before


def test_ged_migrate_v3_names_the_first_hard_link_and_counts_the_rest(tmp_path, outside):
    root = scenario_tree(tmp_path / "co")
    hard_link(root, "CONTEXT.md", outside)
    hard_link(root, ".ged/ARCHITECTURE.md", outside)
    assert migrate_refused(str(root)) == message_for(".ged/ARCHITECTURE.md", 3) + " (and 1 more)"


def test_ged_migrate_v3_on_a_normal_tree_completes_and_is_idempotent(tmp_path):
    # Its writes link temporary files into place (publish_exclusive); they must
    # never trip its own reads, and a second run is a byte-for-byte no-op.
    root = scenario_tree(tmp_path / "co")
    first = migrate(str(root))
    assert "durable-memory-v3: completed" in first
    after = snapshot(root)
    assert v3.hard_link_problems(root) == []
    assert all(os.lstat(root / rel).st_nlink == 1 for rel in after
               if (root / rel).is_file() and not (root / rel).is_symlink())
    second = migrate(str(root))
    assert "durable-memory-v3: already-complete" in second
    assert snapshot(root) == after


# --- doctor --checkout --------------------------------------------------------------------


@pytest.mark.parametrize("rel", ["CONTEXT.md", SKILL])
def test_doctor_checkout_reports_a_hard_link_as_a_failed_check(alpha, tree, outside, rel):
    hard_link(tree, rel, outside)
    before = snapshot(tree)
    code, lines, _ = doctor_run("--project", "alpha", "--checkout", str(tree))
    assert code == 1
    assert f"FAIL {tree}: checkout: {message_for(rel)}" in failures(lines)
    assert snapshot(tree) == before
    assert not secret_in_database()


def test_doctor_checkout_passes_a_tree_with_single_links(alpha, tree):
    assert v3.hard_link_problems(tree) == []
    _, lines, _ = doctor_run("--project", "alpha", "--checkout", str(tree))
    assert not [line for line in failures(lines) if "hard link" in line]
