"""Hostile input files are bounded (issue 15 §4, docs/interop.md "Hostile files").

Each hostile bridge.db, MEMORY.md or checkout must end in a one-line
CommandError naming the problem, quickly and in bounded memory, with nothing
written to GedWeb's tables. Budgets are lowered through the module constants
where a full-size file would make the suite slow.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from gedweb.checkout import safefs
from governance import gedpi_import
from memory import ferryman
from memory.models import MemoryEntry
from tests.interop.gedpi_trees import migrated_checkout, write_tree
from tests.interop.test_ferryman_import import (
    ROWS,
    ferryman_block,
    make_bridge_db,
    refused,
    run,
)
from tests.interop.test_ged_import import counts
from tests.interop.test_ged_import import refused as ged_refused
from tests.subprocesses import manage

RECURSIVE = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r) SELECT n FROM r"


def execute(db: Path, *statements: str) -> Path:
    connection = sqlite3.connect(db)
    for statement in statements:
        connection.execute(statement)
    connection.commit()
    connection.close()
    return db


def refused_quickly(*args: str) -> str:
    """The refusal: "quickly" is the SQLite step limit's; a hang fails on the suite's timeout."""
    return refused(*args)


@pytest.fixture
def bridge_db(tmp_path: Path) -> Path:
    return make_bridge_db(tmp_path / "bridge.db")


# --- bridge.db: views, triggers, computed columns ---------------------------------------


def test_a_recursive_view_in_place_of_the_memory_table_is_refused_by_name(alpha, tmp_path):
    db = tmp_path / "bridge.db"
    execute(
        db,
        "CREATE TABLE projects (id TEXT PRIMARY KEY, name TEXT NOT NULL)",
        "INSERT INTO projects VALUES ('home-studio', 'Home')",
        "CREATE VIEW project_memory (id, project_id, category, content, source, created_at)"
        f" AS SELECT n, 'home-studio', 'note', 'x', 'op', '2026-01-01T00:00:00Z'"
        f" FROM ({RECURSIVE})",
    )
    message = refused_quickly("--project", "alpha", "--database", str(db))
    assert "view project_memory" in message and "no views or triggers" in message
    assert MemoryEntry.objects.count() == 0


def test_a_recursive_view_beside_the_expected_tables_is_refused(alpha, bridge_db):
    execute(bridge_db, f"CREATE VIEW forever AS {RECURSIVE}")
    message = refused_quickly("--project", "alpha", "--database", str(bridge_db))
    assert "view forever" in message
    assert MemoryEntry.objects.count() == 0


def test_a_trigger_is_refused_by_name(alpha, bridge_db):
    execute(bridge_db, "CREATE TRIGGER rewrite AFTER INSERT ON project_memory BEGIN"
                       " UPDATE project_memory SET content = 'x'; END")
    message = refused("--project", "alpha", "--database", str(bridge_db))
    assert "trigger rewrite" in message
    assert MemoryEntry.objects.count() == 0


def test_every_view_and_trigger_is_named_up_to_ten(alpha, bridge_db):
    execute(bridge_db, *[f"CREATE VIEW v{index:02} AS SELECT 1" for index in range(12)])
    message = refused("--project", "alpha", "--database", str(bridge_db))
    assert "view v00, view v01" in message and "view v09, and 2 more" in message
    assert "v10" not in message


def test_a_generated_content_column_is_refused(alpha, tmp_path):
    db = execute(
        tmp_path / "bridge.db",
        "CREATE TABLE projects (id TEXT PRIMARY KEY, name TEXT NOT NULL)",
        "CREATE TABLE project_memory (id TEXT PRIMARY KEY, project_id TEXT, category TEXT,"
        " source TEXT, created_at TEXT,"
        " content TEXT GENERATED ALWAYS AS (printf('%.*c', 100000000, 'x')) VIRTUAL)",
    )
    message = refused("--project", "alpha", "--database", str(db))
    assert "project_memory.content is generated" in message
    assert MemoryEntry.objects.count() == 0


def test_a_virtual_memory_table_is_refused(alpha, tmp_path):
    db = execute(
        tmp_path / "bridge.db",
        "CREATE TABLE projects (id TEXT PRIMARY KEY, name TEXT NOT NULL)",
        "CREATE VIRTUAL TABLE project_memory USING fts5(id, project_id, category, content,"
        " source, created_at)",
    )
    assert "project_memory is a virtual table" in refused("--project", "alpha", "--database",
                                                         str(db))


def test_a_huge_schema_is_refused(alpha, bridge_db, monkeypatch):
    monkeypatch.setattr(ferryman, "MAX_SCHEMA_OBJECTS", 8)
    execute(bridge_db, *[f"CREATE TABLE extra{index} (a)" for index in range(8)])
    assert "more than 8 objects" in refused("--project", "alpha", "--database", str(bridge_db))


def test_a_name_with_a_line_break_stays_on_one_line(alpha, bridge_db):
    execute(bridge_db, 'CREATE VIEW "two\nlines" AS SELECT 1')
    message = refused("--project", "alpha", "--database", str(bridge_db))
    assert "view 'two\\nlines'" in message


def test_unknown_extra_tables_are_not_read_and_do_not_stop_the_import(alpha, bridge_db):
    # Ferryman's own other tables (jobs, events, ...) are never selected from.
    execute(bridge_db, "CREATE TABLE jobs (id TEXT, payload BLOB)",
            f"INSERT INTO jobs VALUES ('j', zeroblob({ferryman.MAX_VALUE_BYTES * 4}))")
    assert run("--project", "alpha", "--database", str(bridge_db))["imported"] == 3


# --- bridge.db: budgets ----------------------------------------------------------------------


def add_generated_rows(db: Path, count: int, content: str = "'row ' || n") -> None:
    execute(
        db,
        f"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n < {count})"
        " INSERT INTO project_memory (id, project_id, category, content, source, created_at)"
        f" SELECT printf('gen-%08d', n), 'home-studio', 'note', {content}, 'operator',"
        " '2026-04-01T00:00:00+00:00' FROM r",
    )


def test_more_rows_than_the_row_budget_are_refused_before_they_are_read(
    alpha, bridge_db, monkeypatch
):
    add_generated_rows(bridge_db, 200_000)
    monkeypatch.setattr(ferryman, "MAX_ROWS", 100_000)
    message = refused_quickly("--project", "alpha", "--database", str(bridge_db))
    assert "more than 100,000 memory rows" in message and "home-studio" in message
    assert MemoryEntry.objects.count() == 0


def test_rows_up_to_the_row_budget_are_read(alpha, bridge_db, monkeypatch):
    monkeypatch.setattr(ferryman, "MAX_ROWS", 3)
    assert len(ferryman.read_database(bridge_db, None)[1]) == 3


def test_more_text_than_the_byte_budget_is_refused(alpha, bridge_db, monkeypatch):
    add_generated_rows(bridge_db, 100, content="printf('%.*c', 10000, 'x')")
    monkeypatch.setattr(ferryman, "MAX_TOTAL_BYTES", 500_000)
    message = refused("--project", "alpha", "--database", str(bridge_db))
    assert "more than 500,000 bytes of text" in message
    assert MemoryEntry.objects.count() == 0


def test_an_oversized_content_value_is_refused_unread(alpha, bridge_db):
    size = ferryman.MAX_VALUE_BYTES + 1
    execute(bridge_db, "INSERT INTO project_memory VALUES ('huge', 'home-studio', 'note',"
                       f" printf('%.*c', {size}, 'x'), 'operator', '2026-05-01T00:00:00Z')")
    message = refused("--project", "alpha", "--database", str(bridge_db))
    assert f"project_memory holds a value larger than {ferryman.MAX_VALUE_BYTES:,} bytes" in (
        message
    )
    assert MemoryEntry.objects.count() == 0


def test_content_just_over_gedwebs_limit_still_names_its_row(alpha, bridge_db):
    execute(bridge_db, "INSERT INTO project_memory VALUES ('long', 'home-studio', 'note',"
                       " printf('%.*c', 32001, 'x'), 'operator', '2026-05-01T00:00:00Z')")
    message = refused("--project", "alpha", "--database", str(bridge_db))
    assert "long" in message and "content" in message and "32000" in message
    assert MemoryEntry.objects.count() == 0


def test_a_scan_past_the_step_budget_is_refused(alpha, bridge_db, monkeypatch):
    add_generated_rows(bridge_db, 50_000)
    monkeypatch.setattr(ferryman, "MAX_SQLITE_STEPS", 100_000)
    message = refused_quickly("--project", "alpha", "--database", str(bridge_db))
    assert "more than 100,000 SQLite steps" in message
    assert MemoryEntry.objects.count() == 0


def test_more_projects_than_the_budget_are_refused(alpha, bridge_db, monkeypatch):
    monkeypatch.setattr(ferryman, "MAX_PROJECTS", 1)
    execute(bridge_db, "INSERT INTO projects VALUES ('shop', 'Shop', '', 'h2', 'x')")
    assert "more than 1 Ferryman projects" in refused("--project", "alpha", "--database",
                                                     str(bridge_db))


def test_a_project_id_that_is_not_text_is_refused(alpha, bridge_db):
    # A blob keeps its type in a TEXT column (an integer would become text).
    execute(bridge_db, "INSERT INTO projects VALUES (X'37', 'Seven', '', 'h7', 'x')")
    assert "Ferryman project b'7': id is not text" in refused("--project", "alpha", "--database",
                                                          str(bridge_db))


def test_a_running_bridge_is_read_with_its_write_ahead_log(alpha, tmp_path):
    # Ferryman running: rows committed to the -wal, not yet checkpointed.
    path = make_bridge_db(tmp_path / "bridge.db", rows=[])
    writer = sqlite3.connect(path)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.executemany(
            "INSERT INTO project_memory (id, project_id, category, content, source, created_at)"
            " VALUES (?, 'home-studio', ?, ?, ?, ?)", ROWS)
        writer.commit()
        assert (tmp_path / "bridge.db-wal").stat().st_size > 0
        run("--project", "alpha", "--database", str(path))
    finally:
        writer.close()
    assert sorted(MemoryEntry.objects.values_list("content", flat=True)) == sorted(
        row[2] for row in ROWS)


def test_a_write_ahead_log_that_is_not_a_file_is_refused(alpha, bridge_db):
    (bridge_db.parent / "bridge.db-wal").mkdir()
    assert "bridge.db-wal is not a regular file" in refused("--project", "alpha", "--database",
                                                            str(bridge_db))
    assert MemoryEntry.objects.count() == 0


def test_the_connection_is_immutable_and_creates_no_side_files(alpha, bridge_db):
    before = sorted(path.name for path in bridge_db.parent.iterdir())
    run("--project", "alpha", "--database", str(bridge_db))
    assert sorted(path.name for path in bridge_db.parent.iterdir()) == before


def test_a_real_process_refuses_a_recursive_view_in_one_line(
    live_db, make_project, memory_root, tmp_path
):
    target = make_project("proc")
    db = make_bridge_db(tmp_path / "bridge.db")
    execute(db, "DROP TABLE project_memory",
            "CREATE VIEW project_memory (id, project_id, category, content, source, created_at)"
            f" AS SELECT n, 'home-studio', 'note', 'x', 'op', 'x' FROM ({RECURSIVE})")
    completed = manage(memory_root, "ferryman_import", "--project", "proc", "--database", str(db))
    assert completed.returncode == 1
    assert "Traceback" not in completed.stderr and completed.stdout == ""
    assert len(completed.stderr.strip().splitlines()) == 1
    assert "view project_memory" in completed.stderr
    assert MemoryEntry.objects.filter(project=target.project).count() == 0


# --- MEMORY.md ---------------------------------------------------------------------------------


def test_a_mirror_larger_than_the_limit_is_refused_unread(alpha, tmp_path, monkeypatch):
    monkeypatch.setattr(ferryman, "MAX_TOTAL_BYTES", 1_000)
    md = tmp_path / "MEMORY.md"
    md.write_text(ferryman_block(ROWS[1]) * 20, encoding="utf-8")
    message = refused("--project", "alpha", "--mirror", str(md))
    assert "larger than 1,000 bytes" in message
    assert MemoryEntry.objects.count() == 0


def test_a_mirror_with_more_entries_than_the_row_budget_is_refused(alpha, tmp_path, monkeypatch):
    monkeypatch.setattr(ferryman, "MAX_ROWS", 2)
    md = tmp_path / "MEMORY.md"
    md.write_text("".join(ferryman_block(row) for row in ROWS), encoding="utf-8")
    assert "more than 2 entries" in refused("--project", "alpha", "--mirror", str(md))
    assert MemoryEntry.objects.count() == 0


BLOCK = ferryman_block(("e", "note", "c", "s", "2026-01-01T00:00:00Z"))
TRAILER = "\n\n_Source: s | Entry: e_\n"
# Each about 1,000,000 characters, each the worst case of one part of the parser.
WORST_MIRRORS = {
    # Many good entries, then one bad block: the old parser backtracked through
    # every earlier choice (quadratic).
    "entries then garbage": BLOCK * (1_000_000 // len(BLOCK)) + "\n## bad",
    # One heading, then only trailers: every one is a candidate end.
    "one heading, many trailers": "\n## 2026-01-01T00:00:00Z · note\n\n"
    + TRAILER * (1_000_000 // len(TRAILER)),
    # Trailers each followed by a heading, none completing an entry.
    "headings and trailers": ("\n## 2026-01-01T00:00:00Z · note\n\nc" + TRAILER)
    * (1_000_000 // 60) + "tail",
    # One provenance line with a million separators for the regex to try.
    "one long trailer line": "\n## t · c\n\n\n\n_Source: " + " | Entry: x" * 90_000,
    "one long heading line": "\n## " + "x · " * 250_000,
}


def parse_in_child(text: str) -> str:
    """parse_mirror in a child process: a hang fails on the suite's timeout, which ends it."""
    code = (
        "import sys, django; django.setup()\n"
        "from memory import ferryman\n"
        "text = sys.stdin.read()\n"
        "try:\n"
        "    print(len(ferryman.parse_mirror(text)))\n"
        "except ferryman.FerrymanSourceError as exc:\n"
        "    print('refused', exc)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "gedweb.settings"}
    completed = subprocess.run(
        [sys.executable, "-c", code], input=text, capture_output=True, text=True,
        cwd=settings.BASE_DIR, env=env, check=False, encoding="utf-8",
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.strip()


@pytest.mark.parametrize("case", sorted(WORST_MIRRORS))
def test_a_worst_case_mirror_of_a_million_characters_parses_in_linear_time(case):
    text = WORST_MIRRORS[case]
    assert 900_000 <= len(text) <= 1_100_000
    # The quadratic parser this replaced took 14 s on the first case; the
    # time is bench/bounded_inputs.py's.
    outcome = parse_in_child(text)
    if case == "one heading, many trailers":
        assert outcome == "1"  # the last trailer ends the only entry
    else:
        assert outcome.startswith("refused MEMORY.md line ")


def test_the_linear_parser_keeps_the_first_trailer_after_which_the_rest_parses():
    spoof = "a\n\n_Source: spoof | Entry: fake_\n\n## not a heading\nb"
    text = ferryman_block(("x", "note", spoof, "s", "2026-01-01T00:00:00Z")) + BLOCK
    entries = ferryman.parse_mirror(text)
    assert [(entry.id, entry.content) for entry in entries] == [("x", spoof), ("e", "c")]
    assert [entry.where for entry in entries] == ["MEMORY.md line 2", "MEMORY.md line 13"]


# --- ged_import --------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "src", migrated_checkout())


def test_safefs_read_bytes_is_unbounded_by_default_and_refuses_past_max_bytes(tmp_path):
    (tmp_path / "f").write_bytes(b"x" * 100)
    assert safefs.read_bytes(tmp_path, "f") == b"x" * 100
    assert safefs.read_bytes(tmp_path, "f", max_bytes=100) == b"x" * 100
    assert safefs.read_bytes(tmp_path, "absent", max_bytes=1) is None
    with pytest.raises(safefs.UnsafePath, match="larger than 99 bytes: f"):
        safefs.read_bytes(tmp_path, "f", max_bytes=99)


def test_an_oversized_ged_file_is_refused_by_name(alpha, tree, monkeypatch):
    monkeypatch.setattr(gedpi_import, "MAX_FILE_BYTES", 10_000)
    (tree / ".ged" / "PROJECT.md").write_text("# Project\n\n" + "word " * 5_000)
    before = counts()
    message = ged_refused(str(tree), "--project", "alpha")
    assert ".ged/PROJECT.md" in message and "larger than 10,000 bytes" in message
    assert counts() == before


def test_a_checkout_over_the_total_byte_budget_is_refused(alpha, tree, monkeypatch):
    monkeypatch.setattr(gedpi_import, "MAX_TOTAL_BYTES", 2_000)
    before = counts()
    message = ged_refused(str(tree), "--project", "alpha")
    assert "more than 2,000 bytes" in message
    assert counts() == before


def test_a_ged_tree_with_too_many_files_is_refused_naming_the_directory(
    alpha, tree, monkeypatch
):
    monkeypatch.setattr(gedpi_import, "MAX_ENTRIES", 500)
    reports = tree / ".ged" / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    for index in range(600):
        (reports / f"r{index}.txt").write_text("x")
    before = counts()
    message = ged_refused(str(tree), "--project", "alpha")
    assert ".ged/reports" in message and "more than 500 files and directories" in message
    assert counts() == before


def test_too_many_legacy_files_for_the_migration_gate_are_refused(alpha, tree, monkeypatch):
    monkeypatch.setattr(gedpi_import, "MAX_ENTRIES", 50)
    tasks = tree / ".ged" / "tasks"
    tasks.mkdir(parents=True, exist_ok=True)
    for index in range(60):
        (tasks / f"t{index}").mkdir()
    before = counts()
    message = ged_refused(str(tree), "--project", "alpha")
    assert ".ged/tasks" in message and "more than 50" in message
    assert counts() == before


def test_an_oversized_migration_record_is_refused_before_the_gate_reads_it(
    alpha, tree, monkeypatch
):
    monkeypatch.setattr(gedpi_import, "MAX_FILE_BYTES", 1_000)
    (tree / ".ged" / "MEMORY-MIGRATION.json").write_text("[" + " " * 2_000 + "]")
    before = counts()
    message = ged_refused(str(tree), "--project", "alpha")
    assert ".ged/MEMORY-MIGRATION.json" in message and "larger than 1,000 bytes" in message
    assert counts() == before


def test_deeply_nested_json_is_refused_without_a_traceback(alpha, tree):
    work = next(path for path in (tree / ".ged" / "runtime").iterdir()
                if (path / "governance.json").exists())
    (work / "governance.json").write_text("[" * 100_000 + "]" * 100_000)
    before = counts()
    message = ged_refused(str(tree), "--project", "alpha")
    assert "governance.json" in message and "nested too deeply" in message
    assert counts() == before


def test_many_standards_sections_without_an_end_yield_none(tmp_path):
    # Linear time is bench/bounded_inputs.py's to measure; a hang fails on the
    # suite's timeout.
    header = "## AGENTS.md\n\nApproved content hash: " + "0" * 64 + "\n\n"
    text = "".join(header + f"<<<GED_APPROVED_{index:064X}:BEGIN>>>\nx\n"
                   for index in range(20_000))
    assert gedpi_import._approved_sections(text) == {}


def test_standards_sections_are_still_found_by_their_own_end_marker():
    content = "Use UTC.\n"
    sha = gedpi_import.sha256_text(content)
    marker = "GED_APPROVED_" + "A" * 64
    text = (f"## AGENTS.md\n\nApproved content hash: {sha}\n\n<<<{marker}_X:BEGIN>>>\n"
            f"{content}<<<{marker}:END>>>\n<<<{marker}_X:END>>>\n")
    # The _X marker's own END closes it, not the shorter marker's END inside it.
    assert gedpi_import._approved_sections(text) == {}
    text = (f"## AGENTS.md\n\nApproved content hash: {sha}\n\n<<<{marker}:BEGIN>>>\n"
            f"{content}<<<{marker}:END>>>\n")
    assert gedpi_import._approved_sections(text) == {("AGENTS.md", sha): content}

