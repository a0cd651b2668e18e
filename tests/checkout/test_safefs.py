"""gedweb.checkout.safefs: containment, symlink refusal, durable atomic and create-only writes."""

from __future__ import annotations

import os

import pytest

from gedweb.checkout import safefs
from gedweb.checkout.safefs import UnsafePath


@pytest.mark.parametrize("rel", ["../x", "/etc/passwd", "a/../../x", "", "a\x00b"])
def test_it_refuses_paths_that_leave_the_root(tmp_path, rel):
    with pytest.raises(UnsafePath):
        safefs.check(tmp_path, rel)


def test_it_refuses_a_symlinked_directory_on_the_way(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "docs").symlink_to(outside)
    with pytest.raises(UnsafePath, match="traverses a symbolic link: docs"):
        safefs.atomic_write(root, "docs/adr/x.md", b"x")
    assert list(outside.iterdir()) == []


def test_it_refuses_to_read_a_symlinked_file(tmp_path):
    (tmp_path / "real").write_bytes(b"secret")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(UnsafePath, match="symbolic link: link"):
        safefs.read_bytes(tmp_path, "link")


def test_it_refuses_a_fifo_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(UnsafePath, match="not a regular file"):
        safefs.read_bytes(tmp_path, "pipe")
    with pytest.raises(UnsafePath):
        list(safefs.walk_files(tmp_path, "."))


def test_missing_files_read_as_none(tmp_path):
    assert safefs.read_bytes(tmp_path, "a/b/c.md") is None


def test_atomic_write_creates_parents_and_replaces(tmp_path):
    safefs.atomic_write(tmp_path, "a/b/c.md", b"one")
    safefs.atomic_write(tmp_path, "a/b/c.md", b"two")
    assert (tmp_path / "a/b/c.md").read_bytes() == b"two"
    assert sorted(p.name for p in (tmp_path / "a/b").iterdir()) == ["c.md"]


def test_publish_exclusive_never_overwrites(tmp_path):
    assert safefs.publish_exclusive(tmp_path, "x/lock.json", b"first") is True
    assert safefs.publish_exclusive(tmp_path, "x/lock.json", b"second") is False
    assert (tmp_path / "x/lock.json").read_bytes() == b"first"
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == ["lock.json"]


def test_walk_files_is_sorted_and_recursive(tmp_path):
    for rel in ("b/2.md", "a/1.md", "a/sub/3.md", "top.md"):
        safefs.atomic_write(tmp_path, rel, b"x")
    assert list(safefs.walk_files(tmp_path, ".")) == ["a/1.md", "a/sub/3.md", "b/2.md", "top.md"]
    assert list(safefs.walk_files(tmp_path, "a", recursive=False)) == ["a/1.md"]


def test_walk_files_skips_symlinks_only_when_asked(tmp_path):
    safefs.atomic_write(tmp_path, "t/real.md", b"x")
    (tmp_path / "t/alias.md").symlink_to(tmp_path / "t/real.md")
    assert list(safefs.walk_files(tmp_path, "t", skip_symlinks=True)) == ["t/real.md"]
    with pytest.raises(UnsafePath):
        list(safefs.walk_files(tmp_path, "t"))


def test_remove_deletes_only_regular_files(tmp_path):
    safefs.atomic_write(tmp_path, "f.md", b"x")
    assert safefs.remove(tmp_path, "f.md") is True
    assert safefs.remove(tmp_path, "f.md") is False
    (tmp_path / "d").mkdir()
    with pytest.raises(UnsafePath):
        safefs.remove(tmp_path, "d")


def test_atomic_write_keeps_the_permission_bits_only_when_asked(tmp_path):
    safefs.atomic_write(tmp_path, "CONTEXT.md", b"one")
    os.chmod(tmp_path / "CONTEXT.md", 0o600)
    safefs.atomic_write(tmp_path, "CONTEXT.md", b"two", keep_mode=True)
    assert (tmp_path / "CONTEXT.md").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "CONTEXT.md").read_bytes() == b"two"
    safefs.atomic_write(tmp_path, "CONTEXT.md", b"three")
    assert (tmp_path / "CONTEXT.md").stat().st_mode & 0o777 == 0o644


def test_walk_files_skips_an_entry_removed_between_listing_and_stat(tmp_path, monkeypatch):
    """A concurrent writer's temporary file can vanish while a walk lists it."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "kept.md").write_text("kept")
    (tmp_path / "d" / ".gedweb-tmp-gone").write_text("gone")
    real_scandir = os.scandir

    class Vanishing:
        def __init__(self, path):
            self.listing = real_scandir(path)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.listing.close()

        def __iter__(self):
            for entry in self.listing:
                if entry.name.startswith(".gedweb-tmp-"):
                    os.unlink(entry.path)  # the writer renames it away now
                yield entry

    monkeypatch.setattr(safefs.os, "scandir", Vanishing)
    assert list(safefs.walk_files(tmp_path, "d")) == ["d/kept.md"]
