"""gedweb.checkout.sync and archive: what a push sends, what a pull writes (no Django)."""

from __future__ import annotations

import os

import pytest

from gedweb.checkout import archive, sync
from tests.checkout.real_trees import working_checkout
from tests.checkout.trees import WORK_A, snapshot, write_tree

ANY = archive.Limits(archive_bytes=1 << 20, members=100, member_bytes=1 << 16,
                     total_bytes=1 << 18)


def test_pack_is_deterministic_and_reads_back():
    files = {".ged/VERSION": b"3\n", "CONTEXT.md": "# Café\n\nTerm.\n".encode(),
             f".ged/work/{WORK_A}/tasks/" + "T" * 120 + "/BRIEF.md": b"# Brief\n"}
    packed = archive.pack(files)
    assert archive.pack(dict(reversed(files.items()))) == packed
    assert archive.read_all(packed, ANY, lambda name, is_dir: True) == files


@pytest.mark.parametrize("rel", [
    ".ged/VERSION", ".ged/.gitignore", ".ged/PROJECT.md", "CONTEXT.md",
    "docs/adr/0001-postgres.md", ".ged/reports/billing-audit.md", ".ged/IMPORT-STATE.json",
    ".ged/STANDARDS.md", ".ged/SKILLS-STATE.json", ".agents/skills/release-notes/SKILL.md",
    f".ged/work/{WORK_A}/META.json", f".ged/work/{WORK_A}/SPEC.md",
    f".ged/work/{WORK_A}/tasks/T01/HISTORY.json", f".ged/runtime/{WORK_A}/governance.json",
    f".ged/runtime/{WORK_A}/STATE.md", f".ged/runtime/{WORK_A}/SESSION-SUMMARY.md",
])
def test_every_kind_of_file_ged_export_writes_is_an_export_path(rel):
    assert sync.is_export_path(rel)


@pytest.mark.parametrize("rel", [
    "AGENTS.md", ".ged/hooks/post.sh", "docs/adr/README.md", "docs/adr/sub/0001-x.md",
    ".ged/work/root/META.json", f".ged/work/{WORK_A}/NOTES.md",
    f".ged/work/{WORK_A}/tasks/T01/NOTES.md", ".ged/runtime/active-work/x.json",
    ".ged/MEMORY-MIGRATION.json", sync.PULL_STATE, ".agents/skills/Bad--Name/SKILL.md",
    f".ged/runtime/{WORK_A}/checkpoints.json", "src/app.py",
])
def test_nothing_else_is(rel):
    assert not sync.is_export_path(rel)


def test_the_layout_is_what_the_checkout_commands_look_at():
    assert sync.in_layout("CONTEXT.md") and sync.in_layout(".ged/tasks/old.md")
    assert sync.in_layout("docs/adr/0001-x.md") and sync.in_layout(".pi/agents/ged-brain.md")
    assert sync.in_layout("docs", is_dir=True) and sync.in_layout(".github", is_dir=True)
    assert not sync.in_layout("docs") and not sync.in_layout("docs/guide.md")
    assert not sync.in_layout("src", is_dir=True) and not sync.in_layout("README.md")


def test_a_push_reads_the_layout_only_and_leaves_the_pull_record_out(tmp_path):
    root = working_checkout(tmp_path / "repo")
    write_tree(root, {"src/app.py": "print()\n", sync.PULL_STATE: "{}\n",
                      ".ged/tasks/x.md": "# Task\n\nOld.\n"})
    (root / ".ged/tasks/link.md").symlink_to(root / "src/app.py")  # skipped, as GedPi does
    before = snapshot(root)
    files = sync.collect_layout(root)
    assert snapshot(root) == before
    assert "src/app.py" not in files and sync.PULL_STATE not in files
    assert ".ged/tasks/link.md" not in files and files[".ged/tasks/x.md"]
    assert files == {rel: data for rel, data in before.items()
                     if sync.in_layout(rel) and not rel.startswith(sync.PULL_STATE_DIR)
                     and rel != ".ged/tasks/link.md"}


@pytest.mark.parametrize("make", ["symlink", "fifo", "hardlink"])
def test_a_push_refuses_what_ged_import_refuses(tmp_path, make):
    root = working_checkout(tmp_path / "repo")
    target = root / ".ged/reports/x.md"
    target.parent.mkdir()
    if make == "symlink":
        target.symlink_to(root / "CONTEXT.md")
    elif make == "fifo":
        os.mkfifo(target)
    else:
        os.link(root / "CONTEXT.md", target)
    with pytest.raises(sync.SyncRefused) as refused:
        sync.collect_layout(root)
    assert ".ged/reports/x.md" in str(refused.value) or "CONTEXT.md" in str(refused.value)


def test_a_push_over_its_limits_is_refused(tmp_path):
    root = write_tree(tmp_path / "repo", {".ged/VERSION": "3\n",
                                          **{f".ged/reports/r{i}.md": "x" * 100
                                             for i in range(5)}})
    small = archive.Limits(archive_bytes=1 << 20, members=3, member_bytes=1 << 10,
                           total_bytes=1 << 20)
    with pytest.raises(sync.SyncRefused, match="more than 3 layout files"):
        sync.collect_layout(root, small)
    tight = archive.Limits(archive_bytes=1 << 20, members=10, member_bytes=50,
                           total_bytes=1 << 20)
    with pytest.raises(sync.SyncRefused, match="larger than 50 bytes"):
        sync.collect_layout(root, tight)


def test_a_refused_pull_writes_nothing_and_a_cut_pull_completes(tmp_path):
    root = tmp_path / "co"
    first = {".ged/VERSION": b"3\n", "CONTEXT.md": b"# C\n\nOne.\n", ".ged/PROJECT.md": b"# P\n"}
    sync.pull_layout(root, first, project="p")
    (root / "CONTEXT.md").write_bytes(b"# C\n\nMine.\n")
    second = {**first, "CONTEXT.md": b"# C\n\nTwo.\n", ".ged/PROJECT.md": b"# P\n\nTwo.\n"}
    before = snapshot(root)
    with pytest.raises(sync.SyncRefused, match="CONTEXT.md changed here since the last pull"):
        sync.pull_layout(root, second, project="p")
    assert snapshot(root) == before
    # A pull cut after writing PROJECT.md (its record not yet written): the next one
    # finds PROJECT.md already right and goes on.
    (root / "CONTEXT.md").write_bytes(b"# C\n\nOne.\n")
    (root / ".ged/PROJECT.md").write_bytes(second[".ged/PROJECT.md"])
    done = sync.pull_layout(root, second, project="p")
    assert done.written == ["CONTEXT.md"] and ".ged/PROJECT.md" in done.unchanged


def test_a_pull_record_gedweb_did_not_write_is_refused(tmp_path):
    root = write_tree(tmp_path / "co", {sync.PULL_STATE: '{"files": []}'})
    with pytest.raises(sync.SyncRefused, match="not a pull record GedWeb wrote"):
        sync.pull_layout(root, {".ged/VERSION": b"3\n"}, project="p")
    assert sync.pull_layout(root, {".ged/VERSION": b"3\n"}, project="p", force=True).written
