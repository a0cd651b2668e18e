"""`manage.py doctor` (contract §7; GedPi gap G-12).

A healthy project passes; then each thing is broken for real, behind the
append-only triggers where it must be, and the doctor names exactly it.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from gedweb import append_only
from gedweb.lib.digest import sha256_text
from governance import doctor, skills, standards
from governance.models import (
    EvidenceRecord,
    GovernanceRevision,
    LedgerRecord,
    Skill,
    StandardsImport,
)
from memory import mirror, services
from memory.models import MemoryEntry
from tests.django_fixtures import is_postgres
from tests.governance.support import add_evidence, open_work
from tests.memory.test_commands import tamper
from tests.subprocesses import manage

SKILL = "---\nname: deploy\ndescription: Ships the release.\n---\nRun the deploy script.\n"


def doctor_run(*args: str) -> tuple[int, list[str], str]:
    """(exit code, stdout lines, stderr) of `manage.py doctor`."""
    out, err = StringIO(), StringIO()
    code = 0
    try:
        call_command("doctor", *args, stdout=out, stderr=err)
    except CommandError as exc:
        code = exc.returncode
        err.write(str(exc))
        assert "\n" not in str(exc)
    return code, out.getvalue().splitlines(), err.getvalue()


def failures(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("FAIL")]


@contextmanager
def triggers_off(table: str) -> Iterator[Any]:
    """Let raw SQL change an append-only table, as a superuser could; triggers come back."""
    with connection.cursor() as cursor:
        if is_postgres():
            # ALTER TABLE refuses to run while deferred FK checks are queued.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER {table}_append_only")
        else:
            for statement in append_only.sqlite_backward(table):
                cursor.execute(statement)
        try:
            yield cursor
        finally:
            if is_postgres():
                cursor.execute(f"ALTER TABLE {table} ENABLE TRIGGER {table}_append_only")
                cursor.execute("SET CONSTRAINTS ALL DEFERRED")
            else:
                # As the migrations left them (a redactable table's UPDATE rule is its own).
                for statement in append_only.expected_triggers("sqlite", table).values():
                    cursor.execute(statement)


@pytest.fixture
def healthy(alpha: Any) -> Any:
    """alpha with memory and its mirror, a work item with evidence, accepted standards, a skill."""
    for index in range(3):
        services.memory_entry_create(project=alpha.project, author="ana", category="decision",
                                     content=f"decision {index}")
    mirror.sync(alpha.project)
    work = open_work(alpha.project)
    add_evidence(work, "inspection", "observed")
    row, _ = standards.standards_import_submit(project=alpha.project, path="AGENTS.md",
                                               content="Use exact checks.\n", author="seed")
    row.accept(by="admin", sha256=row.sha256)
    skills.skill_put(project=alpha.project, name="deploy", content=SKILL, reason="ships",
                     source=None, author="seed")
    alpha.work = work
    return alpha


def mirror_file(memory_root: Path) -> Path:
    return memory_root / "alpha" / "MEMORY.md"


# --- healthy ------------------------------------------------------------------------


def test_a_healthy_project_passes_every_check(healthy):
    code, lines, _ = doctor_run("--project", "alpha")
    assert code == 0
    database = [
        "ok   database: migrations (all applied)",
        "ok   database: append-only triggers (17 tables refuse UPDATE and DELETE)",
    ]
    if is_postgres():
        # The suite connects as a superuser, which doctor reports without failing.
        [privileges] = [line for line in lines if "database privileges" in line]
        assert privileges.startswith("ok   database: database privileges (connected as ")
        assert "a superuser: it may UPDATE, DELETE and TRUNCATE" in privileges
        database.append(privileges)
    assert lines == [
        *database,
        "ok   alpha: chain (3 entries, matches the checkpoint at seq 3)",
        "ok   alpha: mirror (MEMORY.md matches the record)",
        "ok   alpha: mirror-files (no leftovers, lock free)",
        "ok   alpha: governance (1 work item valid)",
        "ok   alpha: standards (1 import, 1 accepted)",
        "ok   alpha: ledger (8 records, every trust-bearing row on it)",
        "ok   alpha: skills (1 skill, 1 verified)",
        "ok   alpha: text-redactions (0 text redactions, each signed)",
        "ok   alpha: token-names (no token writes as GedWeb's own authors)",
        "ok   alpha: recall-index (0 entries indexed by hashing-1024-v1; 3 entries without "
        "a vector yet (the indexer follows the record; manage.py memory index --project "
        "alpha))",
    ]


def test_a_new_project_without_entries_passes(alpha):
    code, lines, _ = doctor_run("--project", "alpha")
    assert code == 0
    assert "ok   alpha: mirror (no entries, no file yet)" in lines


def test_without_project_every_project_is_checked(healthy, beta):
    code, lines, _ = doctor_run()
    assert code == 0
    assert {line.split(":")[0] for line in lines} == {
        "ok   database", "ok   alpha", "ok   beta",
    }


# --- memory -------------------------------------------------------------------------


def test_a_tampered_entry_fails_the_chain_at_its_seq(healthy):
    tamper("alpha", 2, "rewritten behind the triggers")
    # Rebuilt from the tampered record, the mirror agrees: only the chain can tell.
    mirror.rebuild(healthy.project)
    code, lines, _ = doctor_run("--project", "alpha")
    assert code == 1
    assert failures(lines) == [
        "FAIL alpha: chain: hash chain breaks at seq 2 (of 3 entries): the content of seq 2 "
        "is neither the text its content_sha256 names nor the notice of a redaction record "
        "(content altered)"
    ]


def test_a_tampered_entry_also_shows_in_a_mirror_written_before(healthy, memory_root):
    tamper("alpha", 3, "rewritten")
    code, lines, _ = doctor_run("--project", "alpha")
    assert code == 1
    assert failures(lines) == [
        "FAIL alpha: chain: hash chain breaks at seq 3 (of 3 entries): the content of seq 3 "
        "is neither the text its content_sha256 names nor the notice of a redaction record "
        "(content altered)",
        f"FAIL alpha: mirror: {mirror_file(memory_root)} differs from a rebuild of the record "
        "(memory mirror --rebuild)",
    ]


def test_a_deleted_mirror_fails(healthy, memory_root):
    mirror_file(memory_root).unlink()
    code, lines, _ = doctor_run("--project", "alpha")
    assert code == 1
    assert failures(lines) == [
        f"FAIL alpha: mirror: {mirror_file(memory_root)} is missing "
        "(memory mirror --rebuild writes it)"
    ]


def test_an_edited_mirror_fails(healthy, memory_root):
    path = mirror_file(memory_root)
    path.write_text(path.read_text().replace("decision 1", "decision one"))
    code, lines, _ = doctor_run("--project", "alpha")
    assert code == 1
    assert failures(lines) == [
        f"FAIL alpha: mirror: {path} differs from a rebuild of the record "
        "(memory mirror --rebuild)"
    ]


def test_a_leftover_temp_file_fails(healthy, memory_root):
    leftover = memory_root / "alpha" / f"{mirror.TMP_PREFIX}4242"
    leftover.write_text("half a rebuild")
    code, lines, _ = doctor_run("--project", "alpha")
    assert code == 1
    assert failures(lines) == [
        f"FAIL alpha: mirror-files: leftover temp file {leftover} from a rebuild that did not "
        "finish (memory mirror --rebuild removes it)"
    ]
    assert leftover.exists()  # the doctor reports; it does not repair


def test_a_lock_nobody_releases_fails(healthy, memory_root, monkeypatch):
    monkeypatch.setattr(doctor, "LOCK_WAIT_SECONDS", 0.2)
    # The chain check's checkpoint waits for the lock a bounded time, then
    # leaves the CHECKPOINTS line to the next checkpoint (the row is taken).
    monkeypatch.setattr(services, "CHECKPOINT_FILE_WAIT_SECONDS", 0.2)
    lock = memory_root / "alpha" / mirror.LOCK_NAME
    # flock conflicts between open files even within one process.
    fd = os.open(lock, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        code, lines, _ = doctor_run("--project", "alpha")
    finally:
        os.close(fd)
    assert code == 1
    assert failures(lines) == [
        f"FAIL alpha: mirror: not compared: {lock} is held",
        f"FAIL alpha: mirror-files: {lock} is held by another process for more than 0.2s",
    ]


# --- governance ------------------------------------------------------------------------


def insert_revision(work: Any, revision: int, document: dict, evidence_count: int) -> None:
    # Inserting is what the append-only triggers allow; no trigger is touched.
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO governance_governancerevision"
            " (work_id, revision, document_json, evidence_count, operation, author, created_at)"
            " VALUES (%s, %s, %s, %s, 'raw', 'intruder', %s)",
            [work.pk, revision, json.dumps(document), evidence_count,
             GovernanceRevision.objects.filter(work=work).first().created_at],
        )


def record_seq(kind: str, row_id: int) -> int:
    """The ledger seq of a covered row's record."""
    return LedgerRecord.objects.get(kind=kind, row_id=row_id).seq


def latest(work: Any) -> GovernanceRevision:
    return GovernanceRevision.objects.filter(work=work).order_by("-revision").first()


def test_an_invalid_governance_document_fails_naming_the_work(healthy):
    work = healthy.work
    newest = latest(work)
    document = {**newest.document_without_evidence, "revision": newest.revision + 1,
                "lifecycle": "exploded"}
    insert_revision(work, newest.revision + 1, document, newest.evidence_count)
    code, lines, _ = doctor_run("--project", "alpha")
    assert code == 1
    assert failures(lines) == [
        f"FAIL alpha: governance: work {work.work_id}: r2 is invalid: lifecycle is not known",
        f"FAIL alpha: ledger: governance_governancerevision row {latest(work).pk} has no ledger "
        "record: it was inserted without going through GedWeb",
    ]


def test_a_missing_revision_fails(healthy):
    work = healthy.work
    newest = latest(work)
    document = {**newest.document_without_evidence, "revision": newest.revision + 2}
    insert_revision(work, newest.revision + 2, document, newest.evidence_count)
    code, lines, _ = doctor_run("--project", "alpha")
    assert failures(lines) == [
        f"FAIL alpha: governance: work {work.work_id}: revisions are not contiguous: "
        "r2 is missing",
        f"FAIL alpha: ledger: governance_governancerevision row {latest(work).pk} has no ledger "
        "record: it was inserted without going through GedWeb",
    ]


def test_evidence_the_latest_revision_does_not_count_fails(healthy):
    work = healthy.work
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO governance_evidencerecord"
            " (work_id, position, evidence_id, record_json, revision, author, created_at)"
            " VALUES (%s, 1, 'evidence-smuggled', '{}', 1, 'intruder', %s)",
            [work.pk, latest(work).created_at],
        )
    code, lines, _ = doctor_run("--project", "alpha")
    assert code == 1
    smuggled = EvidenceRecord.objects.get(work=work, evidence_id="evidence-smuggled")
    assert failures(lines) == [
        f"FAIL alpha: governance: work {work.work_id}: r1 counts 1 evidence records, "
        "2 are stored",
        f"FAIL alpha: ledger: governance_evidencerecord row {smuggled.pk} has no ledger "
        "record: it was inserted without going through GedWeb",
    ]


# --- standards and skills -------------------------------------------------------------------


def test_tampered_standards_bytes_fail(healthy):
    row = StandardsImport.objects.get(project=healthy.project)
    with triggers_off("governance_standardsimport") as cursor:
        cursor.execute("UPDATE governance_standardsimport SET content = %s WHERE id = %s",
                       ["Skip all checks.\n", row.pk])
    code, lines, _ = doctor_run("--project", "alpha")
    assert code == 1
    assert failures(lines) == [
        f"FAIL alpha: standards: import {row.pk} of AGENTS.md (accepted): content hashes to "
        f"{sha256_text('Skip all checks.' + chr(10))}, not its recorded {row.sha256}",
        f"FAIL alpha: ledger: governance_standardsimport row {row.pk} no longer matches its "
        f"ledger record (seq {record_seq('standards_import', row.pk)}): changed without going "
        "through GedWeb",
    ]


def test_tampered_skill_content_fails(healthy):
    skill = Skill.objects.get(project=healthy.project)
    changed = SKILL.replace("deploy script", "wipe script")
    with triggers_off("governance_skill") as cursor:
        cursor.execute("UPDATE governance_skill SET content = %s WHERE id = %s",
                       [changed, skill.pk])
    code, lines, _ = doctor_run("--project", "alpha")
    assert code == 1
    assert failures(lines) == [
        f"FAIL alpha: ledger: governance_skill row {skill.pk} no longer matches its ledger "
        f"record (seq {record_seq('skill', skill.pk)}): changed without going through GedWeb",
        f"FAIL alpha: skills: skill deploy v1: content hashes to {sha256_text(changed)}, "
        f"not its recorded {skill.recorded_hash}",
    ]


def test_the_triggers_are_back_after_tampering(healthy):
    test_tampered_skill_content_fails(healthy)
    with pytest.raises(Exception), connection.cursor() as cursor:  # noqa: B017 - either backend
        cursor.execute("UPDATE governance_skill SET content = 'again'")


# --- the database and arguments ----------------------------------------------------------


def test_an_unapplied_migration_fails(healthy):
    MigrationRecorder(connection).record_unapplied("memory", "0004_stored_search_vector")
    code, lines, _ = doctor_run("--project", "alpha")
    assert code == 1
    assert failures(lines) == [
        "FAIL database: migrations: 1 migration not applied, first "
        "memory.0004_stored_search_vector (manage.py migrate)"
    ]


def test_an_unknown_project_is_a_one_line_error_with_exit_2(db):
    code, lines, err = doctor_run("--project", "nope")
    assert (code, lines) == (2, [])
    assert "nope" in err


def test_a_checkout_that_is_not_a_directory_is_exit_2(alpha, tmp_path):
    code, lines, err = doctor_run("--project", "alpha", "--checkout", str(tmp_path / "none"))
    assert (code, lines) == (2, [])
    assert "not a directory" in err


def test_only_the_broken_project_fails(healthy, beta, memory_root):
    mirror_file(memory_root).unlink()
    code, lines, _ = doctor_run()
    assert code == 1
    assert [line.split(":")[0] for line in failures(lines)] == ["FAIL alpha"]
    assert all(line.startswith("ok   ") for line in lines if "beta" in line)


# --- a GedPi checkout (gedweb.checkout.v3.checkout_problems) ------------------------------


def leftover_checkout(root: Path) -> Path:
    """A v3 migration that died: a journal without a completion record, a dead process's lock."""
    state = root / ".ged" / "runtime" / "migrations" / "durable-memory-v3"
    (state / "LOCKS").mkdir(parents=True)
    (state / "JOURNAL.json").write_text(json.dumps(
        {"schemaVersion": 1, "migrationId": "durable-memory-v3", "entries": []}, indent=2) + "\n")
    token = "00000000-0000-4000-8000-000000000000"
    (state / "LOCKS" / f"{token}.json").write_text(json.dumps(
        {"schemaVersion": 1, "pid": 2147483647, "token": token,
         "startedAt": "2026-11-30T08:00:00.000Z"}, indent=2) + "\n")
    (root / ".ged" / "VERSION").write_text("3\n")
    return root


def test_checkout_leftovers_fail_one_line_each(alpha, tmp_path):
    v3 = pytest.importorskip("gedweb.checkout.v3")
    root = leftover_checkout(tmp_path / "checkout")
    problems = v3.checkout_problems(root)
    assert problems, "a journal without a completion record is a leftover"
    code, lines, _ = doctor_run("--project", "alpha", "--checkout", str(root))
    assert code == 1
    assert failures(lines) == [f"FAIL {root}: checkout: {problem}" for problem in problems]


def test_a_clean_checkout_passes(alpha, tmp_path):
    v3 = pytest.importorskip("gedweb.checkout.v3")
    root = tmp_path / "checkout"
    root.mkdir()
    assert v3.checkout_problems(root) == []
    code, lines, _ = doctor_run("--project", "alpha", "--checkout", str(root))
    assert code == 0
    assert lines[-1] == f"ok   {root}: checkout (no migration leftovers or locks)"


# --- as a real process ---------------------------------------------------------------------


@pytest.mark.slow
def test_a_real_doctor_exits_0_then_1_without_a_traceback(live_db, make_project, memory_root):
    target = make_project("proc")
    services.memory_entry_create(project=target.project, author="ana", category="note",
                                 content="n")
    mirror.sync(target.project)
    completed = manage(memory_root, "doctor", "--project", "proc")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    lines = completed.stdout.splitlines()
    assert "ok   proc: chain (1 entry, matches the checkpoint at seq 1)" in lines

    (memory_root / "proc" / "MEMORY.md").unlink()
    completed = manage(memory_root, "doctor", "--project", "proc")
    assert completed.returncode == 1
    assert "Traceback" not in completed.stderr
    assert completed.stderr.strip().splitlines() == ["CommandError: doctor found 1 problem(s)"]
    assert failures(completed.stdout.splitlines()) == [
        f"FAIL proc: mirror: {memory_root / 'proc' / 'MEMORY.md'} is missing "
        "(memory mirror --rebuild writes it)"
    ]
    assert MemoryEntry.objects.filter(project=target.project).count() == 1


def test_a_real_doctor_with_an_unknown_project_exits_2(live_db, memory_root):
    completed = manage(memory_root, "doctor", "--project", "nope")
    assert completed.returncode == 2
    assert completed.stderr == "CommandError: no project 'nope'\n"
    assert "Traceback" not in completed.stderr
