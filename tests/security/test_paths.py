"""Filesystem commands refuse traversal, symlinks, FIFOs and wrong file types.

Each case builds a real checkout (or Ferryman source) under tmp_path next
to an `outside` directory holding a sentinel file, plants one hostile
path, and runs the command. Every case must end in a one-line CommandError
(a non-zero exit without a traceback) and leave `outside` exactly as it was:
nothing read through a link into it, nothing written or created there.
"""

from __future__ import annotations

import os
import shutil
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from memory.models import MemoryEntry
from tests.checkout.trees import snapshot, write_tree
from tests.interop.gedpi_trees import migrated_checkout
from tests.interop.test_ferryman_import import make_bridge_db

SENTINEL = "# Secret\n\nDo not read me.\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside every checkout, standing for the rest of the disk."""
    place = tmp_path / "outside"
    write_tree(place, {
        "sentinel.md": SENTINEL,
        "docs/adr/0001-outside.md": "# Outside ADR\n\nNot part of the checkout.\n",
        ".ged/VERSION": "3\n",
        "SKILL.md": "---\nname: evil\ndescription: outside\n---\n\n# Evil\n",
        "CONTEXT.md": "# Outside context\n\nNot part of the checkout.\n",
    })
    return place


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "checkout", migrated_checkout())


def refuse(command: str, *args: str) -> str:
    """Run a command that must refuse; return its one-line message."""
    with pytest.raises(CommandError) as raised:
        call_command(command, *args, stdout=StringIO(), stderr=StringIO())
    message = str(raised.value)
    assert message and "\n" not in message and "Traceback" not in message
    return message


def plant_link(checkout: Path, rel: str, target: Path) -> None:
    path = checkout / rel
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


def plant_fifo(checkout: Path, rel: str) -> None:
    path = checkout / rel
    if path.exists():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


# --- checkouts: ged_import, ged_migrate_v3, doctor --checkout -------------------------------

LINKS = {
    "docs": "",
    "docs/adr": "docs/adr",
    "docs/adr/0001-use-postgres.md": "docs/adr/0001-outside.md",
    ".ged": ".ged",
    ".agents/skills/release-notes/SKILL.md": "SKILL.md",
    ".agents/skills/release-notes": "",
    "CONTEXT.md": "CONTEXT.md",
    ".ged/PROJECT.md": "sentinel.md",
}


@pytest.mark.parametrize("rel", list(LINKS))
def test_ged_import_refuses_a_symlink_inside_the_checkout(alpha, checkout, outside, rel):
    before = snapshot(outside)
    plant_link(checkout, rel, outside / LINKS[rel])

    refuse("ged_import", str(checkout), "--project", "alpha")

    assert snapshot(outside) == before
    assert not MemoryEntry.objects.exists()


@pytest.mark.parametrize("rel", list(LINKS))
def test_ged_migrate_v3_never_writes_through_a_symlink(db, checkout, outside, rel):
    # On an already migrated checkout the second run is a no-op that does not
    # open most of these paths; where it does, it must refuse. Either way
    # nothing outside changes and any refusal is one line.
    before = snapshot(outside)
    plant_link(checkout, rel, outside / LINKS[rel])

    try:
        call_command("ged_migrate_v3", str(checkout), stdout=StringIO(), stderr=StringIO())
    except CommandError as exc:
        assert "\n" not in str(exc)

    assert snapshot(outside) == before


@pytest.mark.parametrize("rel", ["CONTEXT.md", ".ged/PROJECT.md", ".ged/VERSION"])
def test_ged_import_refuses_a_fifo_without_blocking(alpha, checkout, rel):
    plant_fifo(checkout, rel)

    refuse("ged_import", str(checkout), "--project", "alpha")


@pytest.mark.parametrize("command", ["ged_import", "ged_migrate_v3", "doctor"])
def test_a_symlinked_checkout_root_is_refused(alpha, checkout, tmp_path, outside, command):
    link = tmp_path / "link"
    link.symlink_to(checkout)
    before = snapshot(outside)

    refuse(command, *_checkout_args(command, link))

    assert snapshot(outside) == before


@pytest.mark.parametrize("command", ["ged_import", "ged_migrate_v3", "doctor"])
@pytest.mark.parametrize(
    "bad", ["with\x00nul", "missing-dir", "a-file"], ids=["nul", "missing", "file"]
)
def test_a_checkout_path_that_is_not_a_directory_is_refused(alpha, tmp_path, command, bad):
    (tmp_path / "a-file").write_text("not a checkout\n")
    path = str(tmp_path / bad) if bad != "with\x00nul" else str(tmp_path) + "/x\x00y"

    refuse(command, *_checkout_args(command, path))


def _checkout_args(command: str, path: Any) -> list[str]:
    if command == "ged_import":
        return [str(path), "--project", "alpha"]
    if command == "doctor":
        return ["--project", "alpha", "--checkout", str(path)]
    return [str(path)]


# --- ged_export --------------------------------------------------------------------------


@pytest.fixture
def exported_project(alpha: Any, checkout: Path) -> Any:
    """alpha holding a whole checkout, so an export writes every kind of file."""
    call_command("ged_import", str(checkout), "--project", "alpha", stdout=StringIO())
    return alpha


@pytest.mark.parametrize("rel", [".ged", "docs", "docs/adr", "CONTEXT.md", ".ged/PROJECT.md"])
def test_ged_export_refuses_a_symlink_in_the_target(exported_project, tmp_path, outside, rel):
    target = tmp_path / "target"
    target.mkdir()
    (target / rel).parent.mkdir(parents=True, exist_ok=True)
    (target / rel).symlink_to(outside / ("sentinel.md" if rel.endswith(".md") else ""))
    before = snapshot(outside)

    refuse("ged_export", "--project", "alpha", str(target))

    assert snapshot(outside) == before


@pytest.mark.parametrize("bad", ["nul", "fifo", "file", "symlink"])
def test_ged_export_refuses_a_target_that_is_not_a_directory(alpha, tmp_path, outside, bad):
    target = tmp_path / "target"
    if bad == "fifo":
        os.mkfifo(target)
    elif bad == "file":
        target.write_text("x\n")
    elif bad == "symlink":
        target.symlink_to(outside)
    path = str(tmp_path) + "/t\x00x" if bad == "nul" else str(target)
    before = snapshot(outside)

    refuse("ged_export", "--project", "alpha", path)

    assert snapshot(outside) == before


# --- ferryman_import ------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["--database", "--mirror"])
@pytest.mark.parametrize("bad", ["symlink", "fifo", "directory", "nul", "missing"])
def test_ferryman_import_refuses_a_source_that_is_not_a_regular_file(
    alpha, tmp_path, outside, option, bad
):
    real = make_bridge_db(outside / "bridge.db") if option == "--database" else None
    if real is None:
        (outside / "MEMORY.md").write_text("# Project memory: x\n")
    source = tmp_path / ("bridge.db" if option == "--database" else "MEMORY.md")
    if bad == "symlink":
        source.symlink_to(outside / source.name)
    elif bad == "fifo":
        os.mkfifo(source)
    elif bad == "directory":
        source.mkdir()
    path = str(tmp_path) + "/x\x00.db" if bad == "nul" else str(source)
    before = snapshot(outside)

    message = refuse("ferryman_import", "--project", "alpha", option, path)

    assert snapshot(outside) == before
    assert not MemoryEntry.objects.exists()
    if bad == "symlink":
        assert "symbolic link" in message


# --- the mirror root (GEDWEB_MEMORY_ROOT) ----------------------------------------------------


def _plant_in_mirror(memory_root: Path, outside: Path, bad: str) -> None:
    project_dir = memory_root / "alpha"
    memory_root.mkdir(parents=True, exist_ok=True)
    if bad == "project-dir-symlink":
        project_dir.symlink_to(outside)
        return
    project_dir.mkdir(parents=True, exist_ok=True)
    mirror = project_dir / "MEMORY.md"
    if bad == "memory-md-symlink":
        mirror.symlink_to(outside / "sentinel.md")
    elif bad == "memory-md-directory":
        mirror.mkdir()
    elif bad == "memory-md-fifo":
        os.mkfifo(mirror)


MIRROR_CASES = ["project-dir-symlink", "memory-md-symlink", "memory-md-directory", "memory-md-fifo"]


@pytest.mark.parametrize("bad", MIRROR_CASES)
def test_memory_mirror_check_refuses_a_hostile_mirror_path(alpha, memory_root, outside, bad):
    from memory import services

    services.memory_entry_create(project=alpha.project, author="cli", category="note",
                                 content="kept in the database")
    _plant_in_mirror(memory_root, outside, bad)
    before = snapshot(outside)

    refuse("memory", "mirror", "--project", "alpha", "--check")

    assert snapshot(outside) == before


@pytest.mark.parametrize("bad", MIRROR_CASES)
def test_memory_mirror_rebuild_never_writes_outside(alpha, memory_root, outside, bad):
    from memory import services

    services.memory_entry_create(project=alpha.project, author="cli", category="note",
                                 content="kept in the database")
    _plant_in_mirror(memory_root, outside, bad)
    before = snapshot(outside)

    # A link or FIFO in place of MEMORY.md is replaced by the rebuilt file
    # (a rename over the entry itself, never a write through it); a linked
    # project directory or a directory named MEMORY.md is refused.
    try:
        call_command("memory", "mirror", "--project", "alpha", "--rebuild",
                     stdout=StringIO(), stderr=StringIO())
    except CommandError as exc:
        assert "\n" not in str(exc)
        assert bad in {"project-dir-symlink", "memory-md-directory"}
    else:
        mirror = memory_root / "alpha" / "MEMORY.md"
        assert not mirror.is_symlink() and mirror.is_file()
        assert "kept in the database" in mirror.read_text()

    assert snapshot(outside) == before


@pytest.mark.parametrize("bad", MIRROR_CASES)
def test_an_append_never_writes_through_a_hostile_mirror_path(
    alpha, memory_root, outside, bad, django_capture_on_commit_callbacks
):
    from memory import services

    _plant_in_mirror(memory_root, outside, bad)
    before = snapshot(outside)

    with django_capture_on_commit_callbacks(execute=True):
        services.memory_entry_create(project=alpha.project, author="cli", category="note",
                                     content="kept in the database")

    # The entry is committed whatever the mirror's state (the database is
    # the source of truth); the mirror is left for `memory mirror` to report.
    assert MemoryEntry.objects.count() == 1
    assert snapshot(outside) == before


# --- ged_migrate_v3 on a checkout that still needs migrating -----------------------------

# Scenario 63's tree (tests/checkout/trees.py): the migration reads the
# glossary, decisions, architecture notes, legacy tasks and skills, and writes
# CONTEXT.md and docs/adr/. A link on any of those paths must stop it.
V3_LINKS = {
    "docs": "",
    "docs/adr": "docs/adr",
    "CONTEXT.md": "CONTEXT.md",
    ".ged/tasks": "",
    ".ged/GLOSSARY.md": "sentinel.md",
    ".ged/DECISIONS.md": "sentinel.md",
    ".ged/ARCHITECTURE.md": "sentinel.md",
}


@pytest.mark.parametrize("rel", list(V3_LINKS))
def test_ged_migrate_v3_refuses_a_symlink_in_a_checkout_to_migrate(db, tmp_path, outside, rel):
    from tests.checkout.trees import scenario_tree

    root = scenario_tree(tmp_path / "legacy")
    plant_link(root, rel, outside / V3_LINKS[rel])
    before = snapshot(outside)

    refuse("ged_migrate_v3", str(root))

    assert snapshot(outside) == before
    assert not (root / ".ged/MEMORY-MIGRATION.json").exists()


def test_ged_migrate_v3_skips_a_symlinked_legacy_skill_without_following_it(
    db, tmp_path, outside
):
    # GedPi's walkRegularFiles skips links and special files under
    # .ged/project-skills (they are retained, never opened), so the
    # migration completes; the link is left as it was.
    from tests.checkout.trees import scenario_tree

    root = scenario_tree(tmp_path / "legacy")
    plant_link(root, ".ged/project-skills/legacy-skill/SKILL.md", outside / "SKILL.md")
    before = snapshot(outside)

    call_command("ged_migrate_v3", str(root), stdout=StringIO(), stderr=StringIO())

    assert snapshot(outside) == before
    assert (root / ".ged/project-skills/legacy-skill/SKILL.md").is_symlink()
    assert b"legacy-skill/SKILL.md" not in (root / ".ged/MEMORY-MIGRATION.json").read_bytes()


@pytest.mark.parametrize("rel", [".ged/GLOSSARY.md", ".ged/DECISIONS.md", "CONTEXT.md"])
def test_ged_migrate_v3_refuses_a_fifo_without_blocking(db, tmp_path, rel):
    from tests.checkout.trees import scenario_tree

    root = scenario_tree(tmp_path / "legacy")
    plant_fifo(root, rel)

    refuse("ged_migrate_v3", str(root))
    assert not (root / ".ged/MEMORY-MIGRATION.json").exists()
