"""`manage.py ferryman_import` (contract §7) against real Ferryman files.

bridge.db files are built with sqlite3 in Ferryman's exact schema
(reference/ferryman-memory.md §3) and MEMORY.md files in its mirror format
(§4). Each test asserts the GedWeb record afterwards.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from memory import ferryman, mirror, services
from memory.api.serializers import EntrySerializer
from memory.models import MemoryEntry
from tests.django_fixtures import run_in_threads
from tests.subprocesses import manage

FERRYMAN_SCHEMA = """
CREATE TABLE IF NOT EXISTS projects (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    workspace_path TEXT NOT NULL DEFAULT '',
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS project_memory (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    category TEXT NOT NULL,
    content TEXT NOT NULL,
    source TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS project_memory_project_idx
    ON project_memory (project_id, created_at, id);
CREATE TABLE IF NOT EXISTS memory_candidates (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(id),
    job_id TEXT NULL,
    category TEXT NOT NULL,
    content TEXT NOT NULL,
    source TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    resolved_at TEXT NULL
);
"""

# Inserted out of time order; Ferryman lists by created_at, then id.
# Fractional digits vary (chrono AutoSi: 0, 3, 6 or 9).
ROWS = [
    ("22222222-2222-4222-8222-222222222222", "convention", "Zürich → 東京: use UTC.\n",
     "release-manager", "2026-03-01T10:15:43.500+00:00"),
    ("11111111-1111-4111-8111-111111111111", "decision",
     "Reporting database stays on Postgres 16 until Q3.", "operator",
     "2026-03-01T10:15:42+00:00"),
    ("33333333-3333-4333-8333-333333333333", "job_completion",
     "Job 7 completed successfully.", "bridge.flight_recorder",
     "2026-03-01T10:15:43.512311987+00:00"),
]
IN_TIME_ORDER = [ROWS[1], ROWS[0], ROWS[2]]
UTC_TIMES = [
    "2026-03-01T10:15:42.000000+00:00",
    "2026-03-01T10:15:43.500000+00:00",
    "2026-03-01T10:15:43.512311+00:00",  # nanoseconds dropped, not rounded
]


def make_bridge_db(path: Path, projects: tuple[str, ...] = ("home-studio",),
                   rows: list[tuple] | None = None, project: str = "home-studio") -> Path:
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA foreign_keys=ON")
    connection.executescript(FERRYMAN_SCHEMA)
    for project_id in projects:
        connection.execute(
            "INSERT INTO projects (id, name, workspace_path, token_hash, created_at)"
            " VALUES (?, ?, '', ?, '2026-02-01T00:00:00+00:00')",
            [project_id, project_id.title(), hashlib.sha256(project_id.encode()).hexdigest()],
        )
    connection.commit()
    connection.close()
    add_rows(path, ROWS if rows is None else rows, project)
    return path


def add_rows(path: Path, rows: list[tuple], project: str = "home-studio") -> None:
    connection = sqlite3.connect(path)
    connection.executemany(
        "INSERT INTO project_memory (id, project_id, category, content, source, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [(row_id, project, *rest) for row_id, *rest in rows],
    )
    connection.commit()
    connection.close()


def ferryman_block(row: tuple) -> str:
    """One entry as Ferryman's mirror appends it (ferryman-memory.md §4)."""
    row_id, category, content, source, created_at = row
    return f"\n## {created_at} · {category}\n\n{content}\n\n_Source: {source} | Entry: {row_id}_\n"


def make_mirror(path: Path, rows: list[tuple]) -> Path:
    path.write_text("".join(ferryman_block(row) for row in rows), encoding="utf-8")
    return path


def run(*args: str) -> dict[str, Any]:
    out = StringIO()
    call_command("ferryman_import", *args, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def refused(*args: str) -> str:
    with pytest.raises(CommandError) as raised:
        run(*args)
    message = str(raised.value)
    assert message and "\n" not in message
    assert raised.value.returncode != 0
    return message


def stored(project_id: str = "alpha") -> list[tuple]:
    return [
        (entry.seq, entry.created_at_text, entry.category, entry.content, entry.source,
         entry.author, entry.idempotency_key)
        for entry in MemoryEntry.objects.filter(project_id=project_id).order_by("seq")
    ]


def expected(rows: list[tuple], times: list[str], first_seq: int = 1) -> list[tuple]:
    return [
        (first_seq + index, time, category, content, source, "cli",
         services.idempotency_key_digest(f"ferryman:{row_id}"))
        for index, ((row_id, category, content, source, _), time) in enumerate(zip(rows, times))
    ]


def assert_sound(project: Any) -> None:
    report = services.memory_chain_verify(project=project)
    assert report.ok, report
    assert mirror.check(project)


@pytest.fixture
def bridge_db(tmp_path: Path) -> Path:
    return make_bridge_db(tmp_path / "bridge.db")


@pytest.fixture
def do_commit(django_capture_on_commit_callbacks: Any) -> Any:
    """Run the import's on_commit mirror update, as a real commit would."""

    def call(*args: str) -> dict[str, Any]:
        with django_capture_on_commit_callbacks(execute=True):
            return run(*args)

    return call


# --- from bridge.db ------------------------------------------------------------------


def test_it_imports_every_row_in_time_order_with_its_fields(alpha, bridge_db, do_commit):
    summary = do_commit("--project", "alpha", "--database", str(bridge_db))
    assert summary == {
        "project_id": "alpha", "source": str(bridge_db), "ferryman_project": "home-studio",
        "imported": 3, "already_present": 0, "first_seq": 1, "last_seq": 3,
    }
    assert stored() == expected(IN_TIME_ORDER, UTC_TIMES)
    assert_sound(alpha.project)


def test_each_entrys_hash_covers_its_original_time(alpha, bridge_db):
    run("--project", "alpha", "--database", str(bridge_db))
    first = MemoryEntry.objects.get(project=alpha.project, seq=1)
    assert first.chained_fields()["created_at"] == "2026-03-01T10:15:42.000000+00:00"
    assert EntrySerializer.render(first)["created_at"] == "2026-03-01T10:15:42.000000+00:00"


def test_an_offset_time_is_stored_as_the_same_instant_in_utc(alpha, tmp_path):
    db = make_bridge_db(tmp_path / "bridge.db", rows=[
        ("44444444-4444-4444-8444-444444444444", "decision", "x", "operator",
         "2026-03-01T12:00:00.25+02:00"),
    ])
    run("--project", "alpha", "--database", str(db))
    assert stored()[0][1] == "2026-03-01T10:00:00.250000+00:00"


def test_a_second_run_adds_nothing_and_says_so(alpha, bridge_db, do_commit):
    do_commit("--project", "alpha", "--database", str(bridge_db))
    before = stored()
    summary = do_commit("--project", "alpha", "--database", str(bridge_db))
    assert (summary["imported"], summary["already_present"]) == (0, 3)
    assert summary["first_seq"] is None
    assert stored() == before
    assert_sound(alpha.project)


def test_a_run_after_ferryman_gained_rows_adds_only_those_in_order(alpha, bridge_db, do_commit):
    do_commit("--project", "alpha", "--database", str(bridge_db))
    newer = [
        ("66666666-6666-4666-8666-666666666666", "note", "sixth", "operator",
         "2026-03-02T09:00:00.000002+00:00"),
        ("55555555-5555-4555-8555-555555555555", "note", "fifth", "operator",
         "2026-03-02T09:00:00.000001+00:00"),
    ]
    add_rows(bridge_db, newer)
    summary = do_commit("--project", "alpha", "--database", str(bridge_db))
    assert (summary["imported"], summary["already_present"]) == (2, 3)
    assert (summary["first_seq"], summary["last_seq"]) == (4, 5)
    assert stored()[3:] == expected(
        [newer[1], newer[0]],
        ["2026-03-02T09:00:00.000001+00:00", "2026-03-02T09:00:00.000002+00:00"],
        first_seq=4,
    )
    assert_sound(alpha.project)


def test_imported_rows_follow_entries_already_in_the_project(alpha, bridge_db, do_commit):
    # GedWeb's own entry is newer than every Ferryman row: seq follows the
    # import order and each imported time stays the original one.
    services.memory_entry_create(project=alpha.project, author="ana", category="note",
                                 content="written in GedWeb first")
    do_commit("--project", "alpha", "--database", str(bridge_db))
    assert stored()[1:] == expected(IN_TIME_ORDER, UTC_TIMES, first_seq=2)
    assert_sound(alpha.project)


def test_a_row_changed_under_the_same_id_is_a_conflict_and_nothing_is_imported(
    alpha, bridge_db
):
    run("--project", "alpha", "--database", str(bridge_db))
    before = stored()
    connection = sqlite3.connect(bridge_db)
    connection.execute("UPDATE project_memory SET content = 'rewritten' WHERE id = ?",
                       [ROWS[0][0]])
    connection.commit()
    connection.close()
    add_rows(bridge_db, [("77777777-7777-4777-8777-777777777777", "note", "new", "operator",
                          "2026-03-03T00:00:00+00:00")])
    message = refused("--project", "alpha", "--database", str(bridge_db))
    assert ROWS[0][0] in message and "seq 2" in message and "changed" in message
    assert stored() == before


def test_a_changed_time_under_the_same_id_is_a_conflict_too(alpha, bridge_db):
    run("--project", "alpha", "--database", str(bridge_db))
    connection = sqlite3.connect(bridge_db)
    connection.execute("UPDATE project_memory SET created_at = '2026-03-01T10:15:42.1+00:00'"
                       " WHERE id = ?", [ROWS[1][0]])
    connection.commit()
    connection.close()
    assert ROWS[1][0] in refused("--project", "alpha", "--database", str(bridge_db))
    assert len(stored()) == 3


def test_the_database_is_opened_read_only_and_left_unchanged(alpha, bridge_db):
    before = bridge_db.read_bytes()
    run("--project", "alpha", "--database", str(bridge_db))
    assert bridge_db.read_bytes() == before


def test_candidates_are_not_memory_and_are_not_imported(alpha, bridge_db):
    connection = sqlite3.connect(bridge_db)
    connection.execute(
        "INSERT INTO memory_candidates (id, project_id, job_id, category, content, source,"
        " status, created_at) VALUES ('c1', 'home-studio', 'j1', 'job_completion', 'pending',"
        " 'bridge.flight_recorder', 'pending', '2026-03-01T00:00:00+00:00')"
    )
    connection.commit()
    connection.close()
    assert run("--project", "alpha", "--database", str(bridge_db))["imported"] == 3


# --- choosing the Ferryman project -------------------------------------------------------


@pytest.fixture
def two_projects_db(tmp_path: Path) -> Path:
    db = make_bridge_db(tmp_path / "bridge.db", projects=("home-studio", "shop"))
    add_rows(db, [("88888888-8888-4888-8888-888888888888", "decision", "shop only", "operator",
                   "2026-01-01T00:00:00+00:00")], project="shop")
    return db


def test_several_ferryman_projects_need_ferryman_project(alpha, two_projects_db):
    message = refused("--project", "alpha", "--database", str(two_projects_db))
    assert "--ferryman-project" in message and "home-studio" in message and "shop" in message
    assert stored() == []


def test_ferryman_project_picks_only_that_projects_rows(alpha, two_projects_db):
    summary = run("--project", "alpha", "--database", str(two_projects_db),
                  "--ferryman-project", "shop")
    assert (summary["ferryman_project"], summary["imported"]) == ("shop", 1)
    assert [row[3] for row in stored()] == ["shop only"]


def test_an_unknown_ferryman_project_is_refused(alpha, bridge_db):
    message = refused("--project", "alpha", "--database", str(bridge_db),
                      "--ferryman-project", "nope")
    assert "nope" in message and "home-studio" in message
    assert stored() == []


def test_an_unknown_gedweb_project_is_refused(db, bridge_db):
    assert "nope" in refused("--project", "nope", "--database", str(bridge_db))
    assert not MemoryEntry.objects.exists()


def test_ferryman_project_with_a_mirror_is_refused(alpha, tmp_path):
    md = make_mirror(tmp_path / "MEMORY.md", ROWS)
    message = refused("--project", "alpha", "--mirror", str(md), "--ferryman-project", "x")
    assert message == "--ferryman-project applies to --database only"
    assert stored() == []


# --- refusing bad sources, writing nothing ---------------------------------------------


def test_a_missing_file_is_refused(alpha, tmp_path):
    assert "no such file" in refused("--project", "alpha", "--database",
                                     str(tmp_path / "absent.db"))
    assert "no such file" in refused("--project", "alpha", "--mirror", str(tmp_path / "x.md"))


def test_a_file_that_is_not_sqlite_is_refused(alpha, tmp_path):
    fake = tmp_path / "bridge.db"
    fake.write_text("not a database at all, just text " * 100)
    assert "not a readable SQLite database" in refused("--project", "alpha", "--database",
                                                       str(fake))


def test_a_database_without_project_memory_is_refused(alpha, tmp_path):
    db = tmp_path / "other.db"
    connection = sqlite3.connect(db)
    connection.execute("CREATE TABLE projects (id TEXT PRIMARY KEY, name TEXT)")
    connection.commit()
    connection.close()
    assert "no table project_memory" in refused("--project", "alpha", "--database", str(db))


def test_a_table_missing_columns_is_refused_naming_them(alpha, tmp_path):
    db = tmp_path / "old.db"
    connection = sqlite3.connect(db)
    connection.executescript(
        "CREATE TABLE projects (id TEXT PRIMARY KEY, name TEXT NOT NULL);"
        "CREATE TABLE project_memory (id TEXT PRIMARY KEY, project_id TEXT, category TEXT,"
        " content TEXT);"
    )
    connection.close()
    message = refused("--project", "alpha", "--database", str(db))
    assert "project_memory lacks source, created_at" in message
    assert stored() == []


@pytest.mark.parametrize(
    ("bad_row", "field"),
    [
        (("bad-1", "Decision", "capitalised category", "operator",
          "2026-03-05T00:00:00+00:00"), "category"),
        (("bad-2", "team notes", "spaced category", "operator",
          "2026-03-05T00:00:00+00:00"), "category"),
        (("bad-3", "decision", "empty source", "", "2026-03-05T00:00:00+00:00"), "source"),
        (("bad-4", "decision", "x", "two\nlines", "2026-03-05T00:00:00+00:00"), "source"),
        (("bad-5", "decision", "é" * 16001, "operator", "2026-03-05T00:00:00+00:00"),
         "content"),
        (("bad-6", "decision", "nul\x00byte", "operator", "2026-03-05T00:00:00+00:00"),
         "content"),
        (("bad-7", "decision", "x", "operator", "yesterday"), "created_at"),
        (("bad-8", "decision", "x", "operator", "2026-03-05T00:00:00"), "created_at"),
    ],
)
def test_a_row_gedweb_would_refuse_stops_the_whole_import(alpha, tmp_path, bad_row, field):
    # The valid rows come first: nothing of them may land either.
    db = make_bridge_db(tmp_path / "bridge.db", rows=[*ROWS, bad_row])
    message = refused("--project", "alpha", "--database", str(db))
    assert bad_row[0] in message and field in message
    assert stored() == []


# --- from MEMORY.md ----------------------------------------------------------------------


def test_it_imports_a_mirror_in_file_order(alpha, tmp_path, do_commit):
    md = make_mirror(tmp_path / "MEMORY.md", IN_TIME_ORDER)
    summary = do_commit("--project", "alpha", "--mirror", str(md))
    assert (summary["imported"], summary["ferryman_project"]) == (3, None)
    assert stored() == expected(IN_TIME_ORDER, UTC_TIMES)
    assert_sound(alpha.project)


def test_content_is_kept_verbatim_even_when_it_looks_like_a_trailer(alpha, tmp_path):
    content = "first line\n\n_Source: spoof | Entry: fake_\n\n## not a heading\nlast"
    row = ("99999999-9999-4999-8999-999999999999", "note", content, "a | b",
           "2026-03-01T00:00:00+00:00")
    md = make_mirror(tmp_path / "MEMORY.md", [row, ROWS[1]])
    run("--project", "alpha", "--mirror", str(md))
    assert [(r[3], r[4]) for r in stored()] == [(content, "a | b"), (ROWS[1][2], "operator")]


def test_a_mirror_re_run_adds_nothing(alpha, tmp_path):
    md = make_mirror(tmp_path / "MEMORY.md", IN_TIME_ORDER)
    run("--project", "alpha", "--mirror", str(md))
    summary = run("--project", "alpha", "--mirror", str(md))
    assert (summary["imported"], summary["already_present"]) == (0, 3)
    assert len(stored()) == 3


def test_a_partial_earlier_import_is_completed_in_order(alpha, tmp_path, do_commit):
    md = make_mirror(tmp_path / "MEMORY.md", IN_TIME_ORDER[:1])
    do_commit("--project", "alpha", "--mirror", str(md))
    make_mirror(md, IN_TIME_ORDER)
    summary = do_commit("--project", "alpha", "--mirror", str(md))
    assert (summary["imported"], summary["already_present"]) == (2, 1)
    assert stored() == expected(IN_TIME_ORDER, UTC_TIMES)
    assert_sound(alpha.project)


def test_the_database_after_its_mirror_imports_nothing_twice(alpha, tmp_path, bridge_db):
    # Both sources key an entry by its Ferryman id, so one history never doubles.
    md = make_mirror(tmp_path / "MEMORY.md", IN_TIME_ORDER[:2])
    run("--project", "alpha", "--mirror", str(md))
    summary = run("--project", "alpha", "--database", str(bridge_db))
    assert (summary["imported"], summary["already_present"]) == (1, 2)
    assert stored() == expected(IN_TIME_ORDER, UTC_TIMES)


def test_a_mirror_entry_changed_since_its_import_is_a_conflict(alpha, tmp_path):
    md = make_mirror(tmp_path / "MEMORY.md", IN_TIME_ORDER)
    run("--project", "alpha", "--mirror", str(md))
    edited = (IN_TIME_ORDER[2][0], "job_completion", "edited", *IN_TIME_ORDER[2][3:])
    make_mirror(md, [*IN_TIME_ORDER[:2], edited])
    message = refused("--project", "alpha", "--mirror", str(md))
    assert edited[0] in message and "seq 3" in message
    assert [row[3] for row in stored()][2] == "Job 7 completed successfully."


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("just some notes\n", 1),
        ("# Project memory: alpha\n\n<!-- gedweb mirror v1 -->\n", 1),
        # A valid first entry (lines 1-7) and a second one (8-13), then a block
        # without its provenance line, heading on line 15.
        (ferryman_block(ROWS[0]) + ferryman_block(ROWS[1])
         + "\n## 2026-03-01T00:00:00Z · note\n\nno trailer\n", 15),
        # A provenance line without its entry id, heading on line 9.
        (ferryman_block(ROWS[0])
         + "\n## 2026-03-01T00:00:00Z · note\n\ncontent\n\n_Source: operator_\n", 9),
    ],
)
def test_a_malformed_mirror_is_refused_naming_the_line(alpha, tmp_path, text, line):
    md = tmp_path / "MEMORY.md"
    md.write_text(text, encoding="utf-8")
    message = refused("--project", "alpha", "--mirror", str(md))
    assert f"MEMORY.md line {line}:" in message
    assert stored() == []


def test_a_mirror_that_is_not_utf8_is_refused(alpha, tmp_path):
    md = tmp_path / "MEMORY.md"
    md.write_bytes(ferryman_block(ROWS[0]).encode() + b"\xff\xfe")
    assert "UTF-8" in refused("--project", "alpha", "--mirror", str(md))
    assert stored() == []


def test_an_empty_mirror_imports_nothing(alpha, tmp_path):
    md = tmp_path / "MEMORY.md"
    md.write_text("")
    assert run("--project", "alpha", "--mirror", str(md))["imported"] == 0


# --- as a real process -------------------------------------------------------------------


@pytest.mark.slow
def test_a_real_import_prints_json_and_a_bad_one_is_one_line_without_traceback(
    live_db, make_project, memory_root, tmp_path
):
    target = make_project("proc")
    db = make_bridge_db(tmp_path / "bridge.db")
    completed = manage(memory_root, "ferryman_import", "--project", "proc", "--database", str(db))
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["imported"] == 3
    assert [e.created_at_text for e in MemoryEntry.objects.filter(project=target.project)
            .order_by("seq")] == UTC_TIMES
    # The mirror was written after commit by the real process.
    assert mirror.check(target.project)

    broken = make_bridge_db(tmp_path / "broken.db", rows=[
        ("bad", "Not Valid", "x", "operator", "2026-03-05T00:00:00+00:00")
    ])
    completed = manage(memory_root, "ferryman_import", "--project", "proc", "--database",
                       str(broken))
    assert completed.returncode == 1
    assert "Traceback" not in completed.stderr
    assert len(completed.stderr.strip().splitlines()) == 1
    assert "category" in completed.stderr and completed.stdout == ""
    assert MemoryEntry.objects.filter(project=target.project).count() == 3


def test_a_real_run_without_a_source_is_one_line(live_db, make_project, memory_root):
    make_project("proc")
    completed = manage(memory_root, "ferryman_import", "--project", "proc")
    assert completed.returncode == 2
    assert len(completed.stderr.strip().splitlines()) == 1
    assert "Traceback" not in completed.stderr



def test_concurrent_imports_of_one_history_land_it_once(live_db, make_project, tmp_path):
    # The project row lock orders the runs: the second replays what the first wrote.
    target = make_project("race")
    db = make_bridge_db(tmp_path / "bridge.db")
    rows = ferryman.import_rows(ferryman.read_database(db, None)[1])
    results = run_in_threads(
        lambda index: services.memory_entries_import(project=target.project, rows=rows), 3
    )
    assert not [result for result in results if isinstance(result, BaseException)], results
    assert sorted(len(result.imported) for result in results) == [0, 0, 3]
    assert [e.idempotency_key for e in MemoryEntry.objects.filter(project=target.project)
            .order_by("seq")] == [services.idempotency_key_digest(f"ferryman:{row[0]}")
                                  for row in IN_TIME_ORDER]
    assert services.memory_chain_verify(project=target.project).ok
