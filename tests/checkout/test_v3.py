"""GedPi's durable-memory v3 migration (gedpi-behaviour.md §6.1-6.8, scenarios 63-73).

Every test works on a real directory tree and asserts exact bytes. Lock and
crash behaviour live in test_v3_locks.py and test_v3_crash.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from gedweb.checkout import v3
from gedweb.checkout.safefs import UnsafePath
from gedweb.lib import gedpi_placeholders as ph
from tests.checkout.trees import (
    CREATED_B,
    REAL_ARCHITECTURE,
    REAL_DECISIONS,
    REAL_GLOSSARY,
    WORK_A,
    WORK_B,
    intermediate_tree,
    meta,
    pretty,
    scenario_tree,
    snapshot,
    standalone_v2_tree,
    tasks_md,
    write_tree,
)

BACKUPS = ".ged/runtime/migrations/durable-memory-v3/backups"


def sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def expected_context(glossary: str, prefix: str = "# Project Context\n\n") -> str:
    mark = f"ged-memory-v3:context:{sha(glossary)}"
    return (f"{prefix}<!-- {mark}:begin -->\n## Migrated Ged glossary\n\n{glossary}"
            f"<!-- {mark}:end -->\n")


def expected_adr(decisions: str) -> str:
    mark = f"ged-memory-v3:decisions:{sha(decisions)}"
    return (f"# ADR 0000: Migrated Ged decisions\n\nStatus: migrated\n\n<!-- {mark}:begin -->\n"
            f"{decisions}<!-- {mark}:end -->\n")


def completion(root) -> dict:
    return json.loads((root / ".ged/MEMORY-MIGRATION.json").read_text())


def journal(root) -> dict:
    return json.loads((root / ".ged/runtime/migrations/durable-memory-v3/JOURNAL.json")
                      .read_text())


# --- scenario 63 ----------------------------------------------------------------------------


def test_scenario_63_a_version_2_checkout_migrates_exactly(tmp_path):
    scenario_tree(tmp_path)
    originals = snapshot(tmp_path)
    glossary_sha, decisions_sha = sha(REAL_GLOSSARY), sha(REAL_DECISIONS)
    history = originals[".ged/tasks/T01.history.json"]
    adr = f"docs/adr/0000-migrated-ged-decisions-{decisions_sha[:12]}.md"
    destination = f".ged/work/{WORK_A}/tasks/T01/HISTORY.json"

    result = v3.migrate_v3(tmp_path)

    assert result.status == "completed"
    after = snapshot(tmp_path)
    assert after["CONTEXT.md"].decode() == expected_context(REAL_GLOSSARY)
    assert after["CONTEXT.md"].decode().count(REAL_GLOSSARY) == 1
    assert after[adr].decode() == expected_adr(REAL_DECISIONS)
    assert after[".ged/GLOSSARY.md"].decode() == v3.glossary_pointer(glossary_sha)
    assert after[".ged/DECISIONS.md"].decode() == (
        f"# Decisions moved\n\nCanonical durable decisions now live in [../{adr}](../{adr})."
        f"\n\nMigration content hash: {decisions_sha}\n"
    )
    assert after[".ged/GLOSSARY.md"].decode() == (
        "# Glossary moved\n\nCanonical project and domain vocabulary now lives in "
        f"[../CONTEXT.md](../CONTEXT.md).\n\nMigration content hash: {glossary_sha}\n"
    )
    for source in (".ged/GLOSSARY.md", ".ged/DECISIONS.md", ".ged/ARCHITECTURE.md",
                   ".ged/tasks/T01.history.json", ".ged/tasks/...history.json",
                   ".ged/project-skills/legacy-skill/SKILL.md"):
        assert after[f"{BACKUPS}/{source}"] == originals[source]
    assert after[".ged/ARCHITECTURE.md"] == originals[".ged/ARCHITECTURE.md"]
    assert after[".ged/project-skills/legacy-skill/SKILL.md"] == originals[
        ".ged/project-skills/legacy-skill/SKILL.md"]
    assert after[destination] == history
    assert ".ged/tasks/T01.history.json" not in after
    assert after[".ged/tasks/...history.json"] == originals[".ged/tasks/...history.json"]

    backup = lambda source: f"{BACKUPS}/{source}"  # noqa: E731
    assert completion(tmp_path)["entries"] == [
        {"sourcePath": ".ged/GLOSSARY.md", "action": "migrated-context",
         "sha256": glossary_sha, "backupPath": backup(".ged/GLOSSARY.md"),
         "destinationPath": "CONTEXT.md"},
        {"sourcePath": ".ged/DECISIONS.md", "action": "migrated-decisions",
         "sha256": decisions_sha, "backupPath": backup(".ged/DECISIONS.md"),
         "destinationPath": adr},
        {"sourcePath": ".ged/tasks/...history.json", "action": "retained-substantive",
         "sha256": sha(originals[".ged/tasks/...history.json"]),
         "backupPath": backup(".ged/tasks/...history.json"), "reason": v3.REASON_NO_OWNER},
        {"sourcePath": ".ged/tasks/T01.history.json", "action": "migrated-task-artifact",
         "sha256": sha(history), "backupPath": backup(".ged/tasks/T01.history.json"),
         "destinationPath": destination},
        {"sourcePath": ".ged/ARCHITECTURE.md", "action": "retained-substantive",
         "sha256": sha(REAL_ARCHITECTURE), "backupPath": backup(".ged/ARCHITECTURE.md"),
         "reason": v3.REASON_AMBIGUOUS},
        {"sourcePath": ".ged/project-skills/legacy-skill/SKILL.md",
         "action": "retained-substantive",
         "sha256": sha(originals[".ged/project-skills/legacy-skill/SKILL.md"]),
         "backupPath": backup(".ged/project-skills/legacy-skill/SKILL.md"),
         "reason": v3.REASON_SKILLS},
    ]
    assert journal(tmp_path)["entries"] == completion(tmp_path)["entries"]


def test_scenario_63_a_second_run_is_already_complete_and_changes_no_byte(tmp_path):
    scenario_tree(tmp_path)
    first = v3.migrate_v3(tmp_path)
    before = snapshot(tmp_path)
    mtimes = {p: os.stat(tmp_path / p, follow_symlinks=False).st_mtime_ns for p in before}

    second = v3.migrate_v3(tmp_path)

    assert second.status == "already-complete"
    assert second.entries == first.entries
    assert snapshot(tmp_path) == before
    assert {p: os.stat(tmp_path / p).st_mtime_ns for p in before} == mtimes
    assert v3.migration_status(tmp_path) == "complete"


def _runtime_paths(root) -> list[Path]:
    """.ged/runtime itself and every path under it, directories included."""
    runtime = root / ".ged/runtime"
    paths = [runtime]
    for directory, dirnames, filenames in os.walk(runtime, followlinks=False):
        paths += [Path(directory) / name for name in [*dirnames, *filenames]]
    return paths


def _runtime_listing(root) -> dict[str, tuple[str, int | None, int]]:
    """(type, size of a file, mtime_ns) of every path under .ged/runtime."""
    listing = {}
    for path in _runtime_paths(root):
        info = os.stat(path, follow_symlinks=False)
        kind = ("dir" if stat.S_ISDIR(info.st_mode) else
                "file" if stat.S_ISREG(info.st_mode) else "other")
        listing[path.relative_to(root).as_posix()] = (
            kind, info.st_size if kind == "file" else None, info.st_mtime_ns)
    return listing


def test_a_rerun_on_a_completed_checkout_creates_locks_or_removes_nothing_under_runtime(
    tmp_path,
):
    scenario_tree(tmp_path)
    assert v3.migrate_v3(tmp_path).status == "completed"
    # An old time everywhere, so a lock created and removed within the
    # clock's tick still shows in its directory's mtime.
    for path in _runtime_paths(tmp_path):
        os.utime(path, ns=(10**18, 10**18), follow_symlinks=False)
    before = _runtime_listing(tmp_path)
    assert any(kind == "file" for kind, _, _ in before.values())
    assert v3.LOCKS_DIR in before or v3.RUNTIME in before

    second = v3.migrate_v3(tmp_path)

    assert second.status == "already-complete"
    assert _runtime_listing(tmp_path) == before


def test_the_journal_and_record_are_gedpis_pretty_json_with_a_trailing_newline(tmp_path):
    scenario_tree(tmp_path)
    v3.migrate_v3(tmp_path)
    raw = (tmp_path / ".ged/MEMORY-MIGRATION.json").read_bytes()
    state = json.loads(raw)
    assert raw == (json.dumps(state, indent=2, ensure_ascii=False) + "\n").encode()
    assert list(state) == ["schemaVersion", "migrationId", "status", "completedAt", "entries"]
    assert (state["schemaVersion"], state["migrationId"], state["status"]) == (
        1, "durable-memory-v3", "complete")
    assert len(state["completedAt"]) == 24 and state["completedAt"].endswith("Z")
    raw_journal = (tmp_path / ".ged/runtime/migrations/durable-memory-v3/JOURNAL.json"
                   ).read_bytes()
    assert raw_journal.startswith(b'{\n  "schemaVersion": 1,\n  "migrationId": '
                                  b'"durable-memory-v3",\n  "entries": [\n    {\n')
    assert raw_journal.endswith(b"  ]\n}\n")


# --- scenarios 66-73 ------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["record", "journal"])
def test_scenario_66_an_invalid_entry_aborts(tmp_path, where):
    scenario_tree(tmp_path)
    if where == "record":
        write_tree(tmp_path, {".ged/MEMORY-MIGRATION.json": pretty({
            "schemaVersion": 1, "migrationId": "durable-memory-v3", "status": "complete",
            "completedAt": "2026-01-01T00:00:00.000Z", "entries": [None]})})
    else:
        write_tree(tmp_path, {v3.JOURNAL_PATH: pretty({
            "schemaVersion": 1, "migrationId": "durable-memory-v3", "entries": [None]})})
    before = snapshot(tmp_path)
    with pytest.raises(v3.MigrationError, match="migration entry is invalid"):
        v3.migrate_v3(tmp_path)
    after = snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before
    assert not any(k.startswith(v3.LOCKS_DIR) for k in after)  # the lock was released


@pytest.mark.parametrize("entry, message", [
    ({"sourcePath": "../x", "action": "removed-placeholder"}, "entry is invalid"),
    ({"sourcePath": "/etc/x", "action": "removed-placeholder"}, "entry is invalid"),
    ({"sourcePath": "a", "action": "moved"}, "entry is invalid"),
    ({"sourcePath": "a", "action": "retained-substantive", "sha256": "AB" * 32,
      "backupPath": "b", "reason": "r"}, "entry is invalid"),
    ({"sourcePath": "a", "action": "retained-substantive", "sha256": "a" * 64,
      "backupPath": "b", "reason": " "}, "entry is invalid"),
    ({"sourcePath": "a", "action": "removed-placeholder", "sha256": "a" * 64},
     "placeholder migration entry is invalid"),
    ({"sourcePath": "a", "action": "migrated-context", "sha256": "a" * 64},
     "lacks backup evidence"),
    ({"sourcePath": "a", "action": "migrated-context", "sha256": "a" * 64, "backupPath": "b"},
     "lacks a destination"),
    ({"sourcePath": "a", "action": "retained-substantive", "sha256": "a" * 64,
      "backupPath": "b"}, "lacks a reason"),
])
def test_entry_validation_follows_gedpi(entry, message):
    with pytest.raises(v3.MigrationError, match=message):
        v3.parse_entry(entry)


def test_scenario_67_a_glossary_edited_mid_migration_aborts_and_keeps_the_edit(tmp_path):
    scenario_tree(tmp_path)
    edit = "# Glossary\n\n- Ferry: edited by the user.\n"

    def user_edit(source_path: str) -> None:
        if source_path == ".ged/GLOSSARY.md":
            (tmp_path / source_path).write_text(edit)

    with pytest.raises(v3.MigrationError, match=(
        "Legacy source changed during durable-memory migration: .ged/GLOSSARY.md"
    )):
        v3.migrate_v3(tmp_path, hooks=v3.MigrationHooks(before_commit=user_edit))
    assert (tmp_path / ".ged/GLOSSARY.md").read_text() == edit
    assert not (tmp_path / "CONTEXT.md").exists()
    assert not (tmp_path / ".ged/MEMORY-MIGRATION.json").exists()


def test_a_placeholder_changed_mid_migration_aborts_and_is_kept(tmp_path):
    write_tree(tmp_path, {".ged/VERSION": "2\n", ".ged/PROJECT.md": ph.PROJECT})

    def user_edit(source_path: str) -> None:
        (tmp_path / source_path).write_text(ph.PROJECT + "- Real goal.\n")

    with pytest.raises(v3.MigrationError, match=(
        "Legacy placeholder changed during durable-memory migration: .ged/PROJECT.md"
    )):
        v3.migrate_v3(tmp_path, hooks=v3.MigrationHooks(before_commit=user_edit))
    assert (tmp_path / ".ged/PROJECT.md").read_text() == ph.PROJECT + "- Real goal.\n"


def test_scenario_68_an_interruption_after_the_glossary_pointer_resumes_with_its_evidence(
    tmp_path,
):
    scenario_tree(tmp_path)

    class Interrupted(Exception):
        pass

    def interrupt(source_path: str) -> None:
        if source_path == ".ged/GLOSSARY.md":
            raise Interrupted

    with pytest.raises(Interrupted):
        v3.migrate_v3(tmp_path, hooks=v3.MigrationHooks(after_commit=interrupt))
    assert not (tmp_path / ".ged/MEMORY-MIGRATION.json").exists()
    assert (tmp_path / ".ged/GLOSSARY.md").read_text() == v3.glossary_pointer(
        sha(REAL_GLOSSARY))

    result = v3.migrate_v3(tmp_path)

    assert result.status == "completed"
    context_entries = [e for e in completion(tmp_path)["entries"]
                       if e["action"] == "migrated-context"]
    assert context_entries == [{
        "sourcePath": ".ged/GLOSSARY.md", "action": "migrated-context",
        "sha256": sha(REAL_GLOSSARY), "backupPath": f"{BACKUPS}/.ged/GLOSSARY.md",
        "destinationPath": "CONTEXT.md"}]
    assert (tmp_path / "CONTEXT.md").read_text() == expected_context(REAL_GLOSSARY)


def test_scenario_69_version_3_with_a_real_glossary_is_still_migrated(tmp_path):
    write_tree(tmp_path, {".ged/VERSION": "3\n", ".ged/GLOSSARY.md": REAL_GLOSSARY})
    assert v3.migration_status(tmp_path) == "needed"
    assert v3.migrate_v3(tmp_path).status == "completed"
    assert (tmp_path / "CONTEXT.md").read_text() == expected_context(REAL_GLOSSARY)


def test_version_3_without_actionable_legacy_memory_is_not_needed_and_writes_nothing(tmp_path):
    write_tree(tmp_path, {".ged/VERSION": "3\n", ".ged/ARCHITECTURE.md": REAL_ARCHITECTURE,
                          ".ged/PROJECT.md": "# Project\n\nReal.\n",
                          ".ged/tasks/README.md": "# Tasks\n\nOur own readme.\n"})
    before = snapshot(tmp_path)
    assert v3.migration_status(tmp_path) == "not-needed"
    assert v3.migrate_v3(tmp_path).status == "not-needed"
    assert snapshot(tmp_path) == before


def test_scenario_70_a_task_listed_by_two_work_items_stays_in_place(tmp_path):
    scenario_tree(tmp_path)
    write_tree(tmp_path, {f".ged/work/{WORK_B}/TASKS.md": tasks_md("T01"),
                          f".ged/work/{WORK_B}/META.json": meta(WORK_B, "Fix", CREATED_B)})
    v3.migrate_v3(tmp_path)
    assert (tmp_path / ".ged/tasks/T01.history.json").exists()
    entry = next(e for e in completion(tmp_path)["entries"]
                 if e["sourcePath"] == ".ged/tasks/T01.history.json")
    assert entry["action"] == "retained-substantive"
    assert entry["reason"] == "Legacy task artifact has no unambiguous active work destination."
    assert not (tmp_path / f".ged/work/{WORK_A}/tasks").exists()


def _outside(tmp_path):
    outside = tmp_path / "outside"
    write_tree(outside, {"keep.md": "outside\n"})
    return outside


@pytest.mark.parametrize("layout, message", [
    ("docs", "Write target traverses a symbolic link: docs"),
    ("tasks", "Read source traverses a symbolic link: .ged/tasks"),
    ("glossary", "Read source traverses a symbolic link: .ged/GLOSSARY.md"),
])
def test_scenario_71_symlinks_abort_and_nothing_outside_is_touched(tmp_path, layout, message):
    outside = _outside(tmp_path)
    root = tmp_path / "repo"
    if layout == "glossary":
        write_tree(root, {".ged/VERSION": "3\n"})
        write_tree(outside, {"GLOSSARY.md": REAL_GLOSSARY})
        (root / ".ged/GLOSSARY.md").symlink_to(outside / "GLOSSARY.md")
    else:
        scenario_tree(root)
        if layout == "docs":
            (root / "docs").symlink_to(outside)
        else:
            write_tree(outside, {"T09.history.json": "{}\n"})
            for child in (root / ".ged/tasks").iterdir():
                child.unlink()
            (root / ".ged/tasks").rmdir()
            (root / ".ged/tasks").symlink_to(outside)
    before_outside = snapshot(outside)

    with pytest.raises(UnsafePath, match=message):
        v3.migrate_v3(root)

    assert snapshot(outside) == before_outside
    assert not (root / ".ged/MEMORY-MIGRATION.json").exists()


def test_scenario_72_without_version_nothing_is_needed_or_written(tmp_path):
    write_tree(tmp_path, {".ged/GLOSSARY.md": REAL_GLOSSARY, ".ged/PROJECT.md": ph.PROJECT})
    before = snapshot(tmp_path)
    assert v3.migration_status(tmp_path) == "not-needed"
    assert v3.migrate_v3(tmp_path).status == "not-needed"
    assert v3.plan_v3(tmp_path) == [
        "durable-memory-v3: not needed (no .ged/VERSION); nothing to do",
        f"  {v3.missing_version_hint(tmp_path, str(tmp_path))}"]
    assert snapshot(tmp_path) == before


def test_scenario_73_the_older_context_map_variant_is_retained_and_reported(tmp_path):
    write_tree(tmp_path, {".ged/VERSION": "2\n",
                          ".ged/CONTEXT-MAP.md": ph.CONTEXT_MAP_STANDALONE})
    v3.migrate_v3(tmp_path)
    assert (tmp_path / ".ged/CONTEXT-MAP.md").read_text() == ph.CONTEXT_MAP_STANDALONE
    assert (tmp_path / BACKUPS / ".ged/CONTEXT-MAP.md").read_text() == ph.CONTEXT_MAP_STANDALONE
    assert completion(tmp_path)["entries"] == [{
        "sourcePath": ".ged/CONTEXT-MAP.md", "action": "retained-substantive",
        "sha256": sha(ph.CONTEXT_MAP_STANDALONE),
        "backupPath": f"{BACKUPS}/.ged/CONTEXT-MAP.md",
        "reason": "No unambiguous canonical destination; preserved in place."}]


# --- byte rules -----------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["crlf", "extra-newline", "missing-newline"])
def test_a_placeholder_differing_by_one_byte_is_kept(tmp_path, variant):
    text = {"crlf": ph.ARCHITECTURE.replace("\n", "\r\n"),
            "extra-newline": ph.ARCHITECTURE + "\n",
            "missing-newline": ph.ARCHITECTURE[:-1]}[variant]
    write_tree(tmp_path, {".ged/VERSION": "2\n", ".ged/ARCHITECTURE.md": text})
    v3.migrate_v3(tmp_path)
    assert (tmp_path / ".ged/ARCHITECTURE.md").read_bytes() == text.encode()
    assert completion(tmp_path)["entries"][0]["action"] == "retained-substantive"


def test_every_placeholder_is_removed_and_journaled_without_hash_or_backup(tmp_path):
    intermediate_tree(tmp_path)
    v3.migrate_v3(tmp_path)
    assert completion(tmp_path)["entries"] == [
        {"sourcePath": path, "action": "removed-placeholder"} for path, _ in ph.PLACEHOLDERS]
    for path, _ in ph.PLACEHOLDERS:
        assert not (tmp_path / path).exists()
    assert not (tmp_path / BACKUPS).exists()


def test_context_md_is_trimmed_then_appended_as_gedpi_does(tmp_path):
    existing = "# Context\n\n- Term: meaning.\n\n  \n"
    write_tree(tmp_path, {".ged/VERSION": "2\n", ".ged/GLOSSARY.md": "- X: no newline",
                          "CONTEXT.md": existing})
    os.chmod(tmp_path / "CONTEXT.md", 0o600)
    v3.migrate_v3(tmp_path)
    mark = f"ged-memory-v3:context:{sha('- X: no newline')}"
    assert (tmp_path / "CONTEXT.md").read_text() == (
        "# Context\n\n- Term: meaning.\n\n"
        f"<!-- {mark}:begin -->\n## Migrated Ged glossary\n\n- X: no newline\n"
        f"<!-- {mark}:end -->\n")
    assert (tmp_path / "CONTEXT.md").stat().st_mode & 0o777 == 0o600


def test_a_context_md_already_holding_the_marker_is_not_appended_again(tmp_path):
    write_tree(tmp_path, {".ged/VERSION": "2\n", ".ged/GLOSSARY.md": REAL_GLOSSARY,
                          "CONTEXT.md": expected_context(REAL_GLOSSARY) + "\n\n"})
    v3.migrate_v3(tmp_path)
    assert (tmp_path / "CONTEXT.md").read_text() == expected_context(REAL_GLOSSARY) + "\n\n"


def test_an_adr_destination_without_the_marker_is_a_conflict_and_is_kept(tmp_path):
    adr = f"docs/adr/0000-migrated-ged-decisions-{sha(REAL_DECISIONS)[:12]}.md"
    write_tree(tmp_path, {".ged/VERSION": "2\n", ".ged/DECISIONS.md": REAL_DECISIONS,
                          adr: "# Someone else's ADR\n"})
    with pytest.raises(v3.MigrationError, match=f"ADR destination conflict at {adr}."):
        v3.migrate_v3(tmp_path)
    assert (tmp_path / adr).read_text() == "# Someone else's ADR\n"
    assert (tmp_path / ".ged/DECISIONS.md").read_text() == REAL_DECISIONS


def test_a_different_existing_backup_is_a_conflict(tmp_path):
    write_tree(tmp_path, {".ged/VERSION": "2\n", ".ged/GLOSSARY.md": REAL_GLOSSARY,
                          f"{BACKUPS}/.ged/GLOSSARY.md": "older glossary\n"})
    with pytest.raises(v3.MigrationError,
                       match="Durable-memory backup conflict for .ged/GLOSSARY.md."):
        v3.migrate_v3(tmp_path)
    assert not (tmp_path / "CONTEXT.md").exists()


def test_a_task_destination_with_different_bytes_keeps_the_source(tmp_path):
    scenario_tree(tmp_path)
    dest = f".ged/work/{WORK_A}/tasks/T01/HISTORY.json"
    write_tree(tmp_path, {dest: "{}\n"})
    v3.migrate_v3(tmp_path)
    assert (tmp_path / dest).read_text() == "{}\n"
    assert (tmp_path / ".ged/tasks/T01.history.json").exists()
    entry = next(e for e in completion(tmp_path)["entries"]
                 if e["sourcePath"] == ".ged/tasks/T01.history.json")
    assert entry["reason"] == "Work-scoped task destination contains different bytes."


def test_all_three_task_artifacts_move_to_their_names(tmp_path):
    scenario_tree(tmp_path)
    write_tree(tmp_path, {".ged/tasks/T01-BRIEF.md": "brief\n",
                          ".ged/tasks/T01-RECOVERY.md": "recovery\n"})
    v3.migrate_v3(tmp_path)
    base = tmp_path / f".ged/work/{WORK_A}/tasks/T01"
    assert sorted(p.name for p in base.iterdir()) == ["BRIEF.md", "HISTORY.json", "RECOVERY.md"]
    assert (base / "BRIEF.md").read_text() == "brief\n"
    assert sorted(p.name for p in (tmp_path / ".ged/tasks").iterdir()) == ["...history.json"]


def test_branch_slug_and_header_rows_never_own_a_task(tmp_path):
    write_tree(tmp_path, {".ged/VERSION": "2\n", ".ged/tasks/ID-BRIEF.md": "x\n",
                          ".ged/tasks/T01-BRIEF.md": "y\n",
                          ".ged/work/root/TASKS.md": tasks_md("T01"),
                          f".ged/work/{WORK_A}/TASKS.md": "no table\n"})
    v3.migrate_v3(tmp_path)
    # GedPi matches the header cell `ID` too, but no generated work has a TASKS table here.
    assert (tmp_path / ".ged/tasks/ID-BRIEF.md").exists()
    assert (tmp_path / ".ged/tasks/T01-BRIEF.md").exists()


def test_a_rerun_with_a_journal_does_not_duplicate_entries(tmp_path):
    scenario_tree(tmp_path)
    pre = {"sourcePath": ".ged/OLD.md", "action": "removed-placeholder"}
    write_tree(tmp_path, {v3.JOURNAL_PATH: pretty({
        "schemaVersion": 1, "migrationId": "durable-memory-v3", "entries": [pre]})})
    v3.migrate_v3(tmp_path)
    entries = completion(tmp_path)["entries"]
    assert entries[0] == pre
    assert len({v3.entry_key(e) for e in entries}) == len(entries)


def test_the_completion_record_is_create_only(tmp_path, monkeypatch):
    write_tree(tmp_path, {".ged/VERSION": "2\n", ".ged/ARCHITECTURE.md": REAL_ARCHITECTURE})
    record = pretty({"schemaVersion": 1, "migrationId": "durable-memory-v3",
                     "status": "complete", "completedAt": "2026-01-01T00:00:00.000Z",
                     "entries": []})
    complete = v3.Run.complete

    def someone_completes_first(run):
        write_tree(tmp_path, {".ged/MEMORY-MIGRATION.json": record})
        return complete(run)

    monkeypatch.setattr(v3.Run, "complete", someone_completes_first)
    with pytest.raises(v3.MigrationError, match="completion record appeared"):
        v3.migrate_v3(tmp_path)
    assert (tmp_path / ".ged/MEMORY-MIGRATION.json").read_text() == record


# --- pointer trust (GedPi's prefix rule; stricter where it would lose bytes) ----------------
# More on real trees in test_v3_real_trees.py.


def test_a_glossary_with_the_pointer_heading_and_no_context_md_is_migrated(tmp_path):
    """Nothing else holds these terms: the prefix rule would leave them where no one reads."""
    glossary = "# Glossary moved\n\nWe moved offices; terms:\n\n- Ferry: a batch.\n"
    write_tree(tmp_path, {".ged/VERSION": "3\n", ".ged/GLOSSARY.md": glossary})
    assert v3.migration_status(tmp_path) == "needed"  # GedPi says not-needed here
    v3.migrate_v3(tmp_path)
    assert (tmp_path / "CONTEXT.md").read_text() == expected_context(glossary)


def test_the_same_glossary_beside_a_context_md_is_a_pointer_as_in_gedpi(tmp_path):
    glossary = "# Glossary moved\n\nWe moved offices; terms:\n\n- Ferry: a batch.\n"
    write_tree(tmp_path, {".ged/VERSION": "3\n", ".ged/GLOSSARY.md": glossary,
                          "CONTEXT.md": "# Context\n\n- Ferry: a batch.\n"})
    assert v3.migration_status(tmp_path) == "not-needed"


def test_an_exact_pointer_without_evidence_or_context_md_is_not_trusted(tmp_path):
    forged = v3.glossary_pointer("f" * 64)
    write_tree(tmp_path, {".ged/VERSION": "3\n", ".ged/GLOSSARY.md": forged})
    assert v3.migration_status(tmp_path) == "needed"
    v3.migrate_v3(tmp_path)
    assert (tmp_path / "CONTEXT.md").read_text() == expected_context(forged)


def test_an_exact_pointer_backed_by_the_context_marker_is_trusted(tmp_path):
    digest = sha(REAL_GLOSSARY)
    write_tree(tmp_path, {".ged/VERSION": "3\n", ".ged/GLOSSARY.md": v3.glossary_pointer(digest),
                          ".ged/DECISIONS.md": v3.decisions_pointer(sha(REAL_DECISIONS)),
                          "CONTEXT.md": expected_context(REAL_GLOSSARY),
                          f"{BACKUPS}/.ged/DECISIONS.md": REAL_DECISIONS})
    assert v3.migration_status(tmp_path) == "not-needed"


# --- what GedPi skips silently is reported (GedWeb fix for G-9) -----------------------------


def test_files_gedpi_skips_silently_are_backed_up_and_reported(tmp_path):
    write_tree(tmp_path, {
        ".ged/VERSION": "2\n",
        ".ged/PROJECT.md": "# Project\n\nA real summary.\n",
        ".ged/STANDARDS.md": "# Imported Standards\n\n```md\nrule\n```\n",
        ".ged/SKILLS-STATE.json": '{"managed": [{"name": "x"}]}\n',
        ".pi/agents/ged-brain.md": ph.GED_BRAIN + "Edited.\n",
        ".ged/tasks/archive/T09-BRIEF.md": "old brief\n",
        ".ged/work/feature-x/SPEC.md": "# Spec\n\nBranch work.\n",
    })
    before = snapshot(tmp_path)
    v3.migrate_v3(tmp_path)
    entries = completion(tmp_path)["entries"]
    assert [(e["sourcePath"], e["reason"]) for e in entries] == [
        (".ged/tasks/archive/T09-BRIEF.md", v3.REASON_TASK_SUBDIR),
        (".ged/PROJECT.md", v3.REASONS_KEPT_CANONICAL[".ged/PROJECT.md"]),
        (".ged/STANDARDS.md", v3.REASONS_KEPT_CANONICAL[".ged/STANDARDS.md"]),
        (".ged/SKILLS-STATE.json", v3.REASONS_KEPT_CANONICAL[".ged/SKILLS-STATE.json"]),
        (".pi/agents/ged-brain.md", v3.REASONS_KEPT_CANONICAL[".pi/agents/ged-brain.md"]),
        (".ged/work/feature-x/SPEC.md", v3.REASON_BRANCH_WORK),
    ]
    after = snapshot(tmp_path)
    for entry in entries:
        assert after[entry["sourcePath"]] == before[entry["sourcePath"]]
        assert after[entry["backupPath"]] == before[entry["sourcePath"]]


# --- legacy layouts (Appendix C) ------------------------------------------------------------


def test_the_standalone_v2_layout_migrates_and_keeps_everything_substantive(tmp_path):
    standalone_v2_tree(tmp_path)
    before = snapshot(tmp_path)
    assert v3.migrate_v3(tmp_path).status == "completed"
    after = snapshot(tmp_path)
    entries = completion(tmp_path)["entries"]
    removed = [e["sourcePath"] for e in entries if e["action"] == "removed-placeholder"]
    assert removed == [p for p, _ in ph.PLACEHOLDERS if p not in (
        ".ged/CONTEXT-MAP.md", ".ged/STANDARDS.md", ".ged/SKILLS-STATE.json")]
    retained = {e["sourcePath"]: e["reason"] for e in entries
                if e["action"] == "retained-substantive"}
    assert retained[".ged/CONTEXT-MAP.md"] == v3.REASON_AMBIGUOUS
    for name in ("T01-BRIEF.md", "T01-RECOVERY.md", "T01.history.json"):
        assert retained[f".ged/tasks/{name}"] == v3.REASON_NO_OWNER  # `root` owns nothing
    assert retained[".ged/project-skills/login-cache/SKILL.md"] == v3.REASON_SKILLS
    assert retained[".ged/work/root/TASKS.md"] == v3.REASON_BRANCH_WORK
    # Untouched: everything that was not a byte-exact placeholder.
    for path, data in before.items():
        if path not in removed:
            assert after[path] == data, path
    # Runtime slug folders and the standards state are neither moved nor reported.
    assert ".ged/runtime/root/STATE.md" not in retained
    assert ".ged/IMPORT-STATE.json" not in retained


def test_the_intermediate_layout_loses_only_its_placeholders(tmp_path):
    intermediate_tree(tmp_path)
    before = snapshot(tmp_path)
    v3.migrate_v3(tmp_path)
    after = snapshot(tmp_path)
    placeholders = {p for p, _ in ph.PLACEHOLDERS}
    assert {p: d for p, d in before.items() if p not in placeholders} == {
        p: d for p, d in after.items()
        if p not in (".ged/MEMORY-MIGRATION.json", v3.JOURNAL_PATH)}
    for work_id in (WORK_A, WORK_B):
        assert after[f".ged/work/{work_id}/NOTES.md"] == b"# Notes\n\n"


def test_plan_v3_lists_the_steps_and_writes_nothing(tmp_path):
    scenario_tree(tmp_path)
    write_tree(tmp_path, {".ged/PROJECT.md": ph.PROJECT})
    before = snapshot(tmp_path)
    lines = v3.plan_v3(tmp_path)
    assert snapshot(tmp_path) == before
    assert lines[0] == "durable-memory-v3: migration needed (VERSION 2)"
    assert lines[1] == "  remove byte-exact placeholder .ged/PROJECT.md"
    assert any(line.startswith("  glossary .ged/GLOSSARY.md") for line in lines)
    assert (f"  move .ged/tasks/T01.history.json -> .ged/work/{WORK_A}/tasks/T01/HISTORY.json"
            " (backed up first)") in lines
    assert f"  retain .ged/ARCHITECTURE.md: {v3.REASON_AMBIGUOUS}" in lines
    assert lines[-1] == "  write .ged/MEMORY-MIGRATION.json (completion record, create-only) last"
    v3.migrate_v3(tmp_path)
    assert v3.plan_v3(tmp_path)[0].startswith("durable-memory-v3: already complete")


# --- doctor ---------------------------------------------------------------------------------


def test_checkout_problems_of_a_migrated_checkout_are_none(tmp_path):
    scenario_tree(tmp_path)
    v3.migrate_v3(tmp_path)
    write_tree(tmp_path, {f"{v3.RUNTIME}/STALE-00000000-0000-4000-8000-000000000000.json":
                          "{}\n"})
    assert v3.checkout_problems(tmp_path) == []


def test_checkout_problems_name_a_pending_migration_and_an_interrupted_journal(tmp_path):
    scenario_tree(tmp_path)
    write_tree(tmp_path, {v3.JOURNAL_PATH: pretty({
        "schemaVersion": 1, "migrationId": "durable-memory-v3", "entries": []})})
    problems = v3.checkout_problems(tmp_path)
    assert any("exists without .ged/MEMORY-MIGRATION.json" in p for p in problems)
    assert any("migration is needed" in p for p in problems)


def test_checkout_problems_name_an_invalid_record_and_locks(tmp_path):
    scenario_tree(tmp_path)
    token = "00000000-0000-4000-8000-000000000001"
    write_tree(tmp_path, {
        ".ged/MEMORY-MIGRATION.json": "{",
        f"{v3.LOCKS_DIR}/{token}.json": pretty({
            "schemaVersion": 1, "pid": 2147483647, "token": token,
            "startedAt": "2026-01-01T00:00:00.000Z"}),
    })
    problems = v3.checkout_problems(tmp_path)
    assert any("migration state is malformed" in p for p in problems)
    assert any("stale durable-memory migration lock" in p for p in problems)


def test_recursive_walks_follow_gedpis_localecompare_depth_first_order(tmp_path):
    write_tree(tmp_path, {
        ".ged/VERSION": "2\n",
        ".ged/project-skills/README.md": "# Our skills\n",
        ".ged/project-skills/api/SKILL.md": "a\n",
        ".ged/project-skills/a-b/SKILL.md": "b\n",
        ".ged/project-skills/Zeta.md": "z\n",
        ".ged/project-skills/_draft.md": "d\n",
    })
    v3.migrate_v3(tmp_path)
    assert [e["sourcePath"] for e in completion(tmp_path)["entries"]] == [
        ".ged/project-skills/_draft.md",
        ".ged/project-skills/a-b/SKILL.md",
        ".ged/project-skills/api/SKILL.md",
        ".ged/project-skills/README.md",
        ".ged/project-skills/Zeta.md",
    ]
