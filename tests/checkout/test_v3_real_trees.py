"""Issue 19's pointer finding: GedPi's prefix rule for hand-written pointers, on real shapes.

GedPi (``hasActionableLegacyMemory``, ``migrateDurableMemory``) takes any
``.ged/GLOSSARY.md`` starting with ``# Glossary moved`` (``DECISIONS.md``: ``# Decisions
moved``) as a pointer: not actionable, never moved. GedWeb follows it, and keeps its
stricter check only where the rule would lose bytes: a pointer whose destination holds
nothing (docs/migration.md, deviation 2).
"""

from __future__ import annotations

import pytest

from gedweb.checkout import v3
from gedweb.checkout.safefs import UnsafePath
from gedweb.lib import gedpi_placeholders as ph
from tests.checkout.real_trees import (
    GEDPI_ADR,
    GEDPI_DECISIONS,
    GEDPI_GLOSSARY,
    ISSUE_CONTEXT,
    ISSUE_GLOSSARY,
    gedpi_clone,
    issue_reproduction,
)
from tests.checkout.test_v3 import BACKUPS, completion, expected_adr, expected_context, sha
from tests.checkout.trees import REAL_GLOSSARY, directories, snapshot, write_tree


def unchanged_by_everything(root) -> None:
    """Status, dry run and run all say not-needed, and not one byte or directory changes."""
    before, before_dirs = snapshot(root), directories(root)
    assert v3.migration_status(root) == "not-needed"
    assert v3.plan_v3(root) == [
        "durable-memory-v3: not needed (VERSION 3, no actionable legacy memory); nothing to do"]
    result = v3.migrate_v3(root)
    assert (result.status, result.entries, result.hint) == ("not-needed", [], None)
    assert snapshot(root) == before
    assert directories(root) == before_dirs


def test_the_issue_reproduction_is_not_needed_and_nothing_is_written(tmp_path):
    root = issue_reproduction(tmp_path / "repo")
    unchanged_by_everything(root)
    assert (root / "CONTEXT.md").read_text() == ISSUE_CONTEXT
    assert (root / ".ged/GLOSSARY.md").read_text() == ISSUE_GLOSSARY


def test_a_clone_of_gedpi_own_repository_is_not_needed(tmp_path):
    root = gedpi_clone(tmp_path / "repo")
    unchanged_by_everything(root)
    assert not (root / "docs/adr").joinpath(
        f"0000-migrated-ged-decisions-{sha(GEDPI_DECISIONS)[:12]}.md").exists()


def test_a_decisions_pointer_to_a_real_adr_alone_writes_no_junk_adr(tmp_path):
    root = write_tree(tmp_path / "repo", {".ged/VERSION": "3\n",
                                          ".ged/DECISIONS.md": GEDPI_DECISIONS,
                                          GEDPI_ADR: "# ADR 0000\n\nThe real decisions.\n"})
    unchanged_by_everything(root)
    assert sorted(p.name for p in (root / "docs/adr").iterdir()) == [GEDPI_ADR.split("/")[-1]]


def test_a_run_for_other_leftovers_keeps_both_hand_written_pointers(tmp_path):
    """A placeholder makes the run happen; the pointers are GedPi's to keep, byte for byte."""
    root = gedpi_clone(tmp_path / "repo")
    write_tree(root, {".ged/IDEAS.md": ph.IDEAS})
    before = snapshot(root)

    plan = v3.plan_v3(root)
    result = v3.migrate_v3(root)

    assert "  keep .ged/GLOSSARY.md: a pointer (starts with `# Glossary moved`; CONTEXT.md "\
        "holds the content)" in plan
    assert "  keep .ged/DECISIONS.md: a pointer (starts with `# Decisions moved`; docs/adr/ "\
        "holds the content)" in plan
    assert result.status == "completed"
    after = snapshot(root)
    for rel in (".ged/GLOSSARY.md", ".ged/DECISIONS.md", "CONTEXT.md", GEDPI_ADR):
        assert after[rel] == before[rel], rel
    assert not any(rel.startswith("docs/adr/0000-migrated") for rel in after)
    assert f"{BACKUPS}/.ged/GLOSSARY.md" not in after
    sources = [entry["sourcePath"] for entry in completion(root)["entries"]]
    assert ".ged/GLOSSARY.md" not in sources and ".ged/DECISIONS.md" not in sources
    assert {"sourcePath": ".ged/IDEAS.md", "action": "removed-placeholder"} in \
        completion(root)["entries"]


# --- the stricter check: only where the prefix rule would lose bytes -----------------------


@pytest.mark.parametrize("context", [None, "", " \n\t\n"], ids=["absent", "empty", "blank"])
def test_a_glossary_pointer_to_an_empty_context_is_migrated_as_content(tmp_path, context):
    """With no CONTEXT.md to hold them, the file's bytes would be read by nobody: migrated."""
    files = {".ged/VERSION": "3\n", ".ged/GLOSSARY.md": GEDPI_GLOSSARY}
    if context is not None:
        files["CONTEXT.md"] = context
    root = write_tree(tmp_path / "repo", files)
    assert v3.migration_status(root) == "needed"
    assert v3.migrate_v3(root).status == "completed"
    assert (root / "CONTEXT.md").read_text() == expected_context(GEDPI_GLOSSARY)
    assert (root / BACKUPS / ".ged/GLOSSARY.md").read_text() == GEDPI_GLOSSARY
    assert (root / ".ged/GLOSSARY.md").read_text() == v3.glossary_pointer(sha(GEDPI_GLOSSARY))


@pytest.mark.parametrize("adr_dir", [{}, {"docs/adr/README.txt": "notes\n"},
                                     {"docs/adr/0001-empty.md": ""}],
                         ids=["no-adr", "no-markdown", "empty-markdown"])
def test_a_decisions_pointer_without_any_adr_is_migrated_as_content(tmp_path, adr_dir):
    root = write_tree(tmp_path / "repo", {".ged/VERSION": "3\n",
                                          ".ged/DECISIONS.md": GEDPI_DECISIONS, **adr_dir})
    assert v3.migration_status(root) == "needed"
    v3.migrate_v3(root)
    adr = root / f"docs/adr/0000-migrated-ged-decisions-{sha(GEDPI_DECISIONS)[:12]}.md"
    assert adr.read_text() == expected_adr(GEDPI_DECISIONS)
    assert (root / BACKUPS / ".ged/DECISIONS.md").read_text() == GEDPI_DECISIONS


def test_a_verified_pointer_stays_trusted_after_its_destination_is_gone(tmp_path):
    """A pointer a migration wrote, with its backup: copying the pointer would gain nothing."""
    digest = sha(REAL_GLOSSARY)
    root = write_tree(tmp_path / "repo", {
        ".ged/VERSION": "3\n", ".ged/GLOSSARY.md": v3.glossary_pointer(digest),
        f"{BACKUPS}/.ged/GLOSSARY.md": REAL_GLOSSARY})
    assert v3.migration_status(root) == "not-needed"
    assert not (root / "CONTEXT.md").exists()


# --- what is not a pointer -----------------------------------------------------------------


@pytest.mark.parametrize("glossary", [
    "# Glossary\n\n- Term: meaning.\n",          # no "moved"
    "# glossary moved\n\nSee CONTEXT.md.\n",     # GedPi's startsWith is case-sensitive
    " # Glossary moved\n\nSee CONTEXT.md.\n",    # nor does it trim
    "# Decisions moved\n\nSee CONTEXT.md.\n",    # the other file's heading
], ids=["plain", "lower-case", "indented", "other-heading"])
def test_a_glossary_without_its_exact_heading_is_migrated(tmp_path, glossary):
    root = write_tree(tmp_path / "repo", {".ged/VERSION": "3\n", ".ged/GLOSSARY.md": glossary,
                                          "CONTEXT.md": ISSUE_CONTEXT})
    assert v3.migration_status(root) == "needed"
    v3.migrate_v3(root)
    assert (root / "CONTEXT.md").read_text() == expected_context(glossary, ISSUE_CONTEXT + "\n")


def test_the_prefix_rule_reads_no_destination_through_a_symlink(tmp_path):
    outside = write_tree(tmp_path / "outside", {"0001-real.md": "# Real\n"})
    root = write_tree(tmp_path / "repo", {".ged/VERSION": "3\n",
                                          ".ged/DECISIONS.md": GEDPI_DECISIONS})
    (root / "docs").mkdir()
    (root / "docs/adr").symlink_to(outside)
    with pytest.raises(UnsafePath, match="symbolic link: docs/adr"):
        v3.migration_status(root)
