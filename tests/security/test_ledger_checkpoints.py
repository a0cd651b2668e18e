"""LEDGER-CHECKPOINTS (issue 16 §1): the trust ledger's signed heads beside the mirror.

Deleting the newest ledger records together with the rows they cover
leaves a shorter chain that verifies on its own; the file outside the
database still names them, so doctor and GET .../ledger/verify report the
truncation. The file is written the way CHECKPOINTS is (memory.checkpoints).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from gedweb.lib.digest import sha256_text
from governance import ledger, ledger_checkpoints, standards
from governance.models import LedgerRecord, StandardsDecision, StandardsImport
from memory import checkpoints
from memory.documents import document_put
from memory.models import format_timestamp
from tests.interop.test_doctor import doctor_run, failures, triggers_off

KIND = "# Rules\n\nBe kind.\n"
NAME = ledger_checkpoints.NAME
FORGED_MAC = ("fails its HMAC: forged, or written under a signing key that is neither "
              "current nor a fallback")


@pytest.fixture
def committed(django_capture_on_commit_callbacks: Any) -> Callable[[Callable[[], Any]], Any]:
    """Run a write and its on_commit hooks, as a real commit would."""
    def run(write: Callable[[], Any]) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return write()
    return run


def ledger_file(root: Path, project_id: str = "alpha") -> Path:
    return root / project_id / NAME


def records(project_id: str = "alpha") -> list[LedgerRecord]:
    return list(LedgerRecord.objects.filter(project_id=project_id).order_by("seq"))


def line_of(record: LedgerRecord) -> str:
    return (f"v2 {record.seq} {record.hash} {format_timestamp(record.created_at)} "
            f"{record.key_id} {record.mac}\n")


def submit_and_accept(project: Any, committed: Any, path: str = "AGENTS.md",
                      content: str = KIND) -> tuple[StandardsImport, StandardsDecision]:
    row, _ = committed(lambda: standards.standards_import_submit(
        project=project, path=path, content=content, author="agent"))
    decision = committed(lambda: row.accept(by="admin", sha256=sha256_text(content)))
    return row, decision


@contextmanager
def behind_gedweb(*tables: str) -> Iterator[Any]:
    """Raw SQL on append-only tables, as a superuser could (the triggers come back)."""
    with triggers_off(tables[0]) as cursor:
        if len(tables) == 1:
            yield cursor
        else:
            with behind_gedweb(*tables[1:]):
                yield cursor


def truncate_newest(decision: StandardsDecision) -> LedgerRecord:
    """The attack: the newest record and the row it covers, both gone."""
    record = LedgerRecord.objects.get(kind="standards_decision", row_id=decision.pk)
    with behind_gedweb("governance_ledgerrecord", "governance_standardsdecision") as cursor:
        cursor.execute("DELETE FROM governance_ledgerrecord WHERE id = %s", [record.pk])
        cursor.execute("DELETE FROM governance_standardsdecision WHERE id = %s", [decision.pk])
    return record


def verify(client: Any, project_id: str = "alpha") -> Any:
    return client.get(f"/v1/projects/{project_id}/ledger/verify")


# --- writing -----------------------------------------------------------------------------


def test_a_line_per_record_appears_after_the_import_and_the_decision(alpha, memory_root,
                                                                     committed):
    row, _ = committed(lambda: standards.standards_import_submit(
        project=alpha.project, path="AGENTS.md", content=KIND, author="agent"))
    first = records()
    assert ledger_file(memory_root).read_text() == "".join(map(line_of, first))
    committed(lambda: row.accept(by="admin", sha256=row.sha256))
    both = records()
    assert len(both) == len(first) + 1
    assert ledger_file(memory_root).read_text() == "".join(map(line_of, both))
    # Each line is the record's own signature, under the ledger's salt.
    for number, text in enumerate(ledger_file(memory_root).read_text().splitlines(), 1):
        parsed = checkpoints.parse_line(text)
        assert parsed is not None and parsed.seq == both[number - 1].seq
        assert checkpoints.authentic("alpha", parsed, salt=ledger.MAC_SALT)
        assert not checkpoints.authentic("alpha", parsed)  # not a memory checkpoint
    # memory's CHECKPOINTS is not touched by ledger appends.
    assert not (memory_root / "alpha" / checkpoints.CHECKPOINTS_NAME).exists()


def test_no_line_in_follower_mode_until_the_follower_runs(alpha, memory_root, committed,
                                                          settings):
    settings.MIRROR_WRITER = "follower"
    submit_and_accept(alpha.project, committed)
    assert not ledger_file(memory_root).exists()
    call_command("memory", "mirror", "--follow", "--once", stdout=StringIO(), stderr=StringIO())
    assert ledger_file(memory_root).read_text() == "".join(map(line_of, records()))


def test_the_follower_catches_up_when_only_the_ledger_moved(alpha, memory_root, committed,
                                                            settings):
    settings.MIRROR_WRITER = "follower"
    call_command("memory", "mirror", "--follow", "--once", stdout=StringIO(), stderr=StringIO())
    submit_and_accept(alpha.project, committed)
    call_command("memory", "mirror", "--follow", "--once", "--project", "alpha",
                 stdout=StringIO(), stderr=StringIO())
    assert ledger_file(memory_root).read_text() == "".join(map(line_of, records()))


def test_the_file_is_byte_stable_across_re_syncs(alpha, memory_root, committed, client_for):
    submit_and_accept(alpha.project, committed)
    before = ledger_file(memory_root).read_bytes()
    assert ledger_checkpoints.sync_file("alpha") == 0
    assert doctor_run("--project", "alpha")[0] == 0
    assert verify(client_for(alpha.token)).json()["ok"] is True
    call_command("memory", "mirror", "--follow", "--once", stdout=StringIO(), stderr=StringIO())
    assert ledger_file(memory_root).read_bytes() == before


def test_a_torn_tail_is_cut_before_the_next_line(alpha, memory_root, committed):
    row, _ = committed(lambda: standards.standards_import_submit(
        project=alpha.project, path="AGENTS.md", content=KIND, author="agent"))
    path = ledger_file(memory_root)
    with path.open("a") as handle:
        handle.write("v2 9 deadbeef")  # a crash mid-write: no newline
    report = ledger_checkpoints.ledger_report(alpha.project, catch_up_file=False)
    assert report["ok"] is True  # an unterminated fragment is no line
    committed(lambda: row.accept(by="admin", sha256=row.sha256))
    assert path.read_text() == "".join(map(line_of, records()))


def test_the_file_is_caught_up_by_doctor_and_the_route(alpha, memory_root, client_for):
    # Written outside on_commit (the db fixture never commits): no line yet.
    row, _ = standards.standards_import_submit(project=alpha.project, path="AGENTS.md",
                                               content=KIND, author="agent")
    assert not ledger_file(memory_root).exists()
    assert doctor_run("--project", "alpha")[0] == 0
    assert ledger_file(memory_root).read_text() == "".join(map(line_of, records()))
    row.accept(by="admin", sha256=row.sha256)
    body = verify(client_for(alpha.token)).json()
    newest = records()[-1]
    assert body == {"ok": True, "records": len(records()),
                    "head": {"seq": newest.seq, "hash": newest.hash}, "problems": []}
    assert ledger_file(memory_root).read_text() == "".join(map(line_of, records()))


def test_the_hook_never_raises(alpha, memory_root, committed, caplog):
    memory_root.mkdir(parents=True)
    (memory_root / "alpha").write_text("not a directory")
    row, _ = committed(lambda: standards.standards_import_submit(
        project=alpha.project, path="AGENTS.md", content=KIND, author="agent"))
    assert StandardsImport.objects.filter(pk=row.pk).exists()
    assert f"{NAME} of project alpha could not be caught up" in caplog.text


# --- the attack ----------------------------------------------------------------------------


def test_deleting_the_newest_record_and_its_row_is_reported_as_truncated(
    alpha, memory_root, committed, client_for
):
    _, decision = submit_and_accept(alpha.project, committed)
    gone = truncate_newest(decision)
    # The shorter chain verifies on its own: only the file tells.
    assert ledger.ledger_verify(alpha.project) == (gone.seq - 1, [])
    expected = (
        f"truncated: ledger shorter than its checkpoint file, seq {gone.seq} is the first "
        f"missing ({NAME} line {gone.seq} of {format_timestamp(gone.created_at)} recorded seq "
        f"{gone.seq}, the ledger ends at seq {gone.seq - 1}): records were deleted without "
        "going through GedWeb"
    )
    code, lines, _ = doctor_run("--project", "alpha")
    assert code == 1
    assert failures(lines) == [f"FAIL alpha: ledger: {expected}"]
    response = verify(client_for(alpha.token))
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is False
    assert body["records"] == gone.seq - 1
    assert body["head"]["seq"] == gone.seq - 1
    assert body["problems"] == [
        {"table": "governance_ledgerrecord", "row_id": None, "message": expected}
    ]


def test_a_record_replaced_at_a_recorded_seq_is_reported_as_a_fork(alpha, memory_root,
                                                                   committed, client_for):
    _, decision = submit_and_accept(alpha.project, committed)
    gone = truncate_newest(decision)
    # GedWeb goes on writing: the next record reuses the deleted seq.
    submit_and_accept(alpha.project, committed, path="CLAUDE.md")
    replacement = LedgerRecord.objects.get(project_id="alpha", seq=gone.seq)
    problems = verify(client_for(alpha.token)).json()["problems"]
    assert problems == [{
        "table": "governance_ledgerrecord", "row_id": replacement.pk,
        "message": f"fork: record hash mismatch at seq {gone.seq}: {NAME} line {gone.seq} of "
                   f"{format_timestamp(gone.created_at)} recorded {gone.hash[:16]}, the ledger "
                   f"has {replacement.hash[:16]} (the record was replaced, or the ledger up to "
                   "it was rewritten)",
    }]


def test_a_forged_line_is_reported(alpha, memory_root, committed, client_for):
    submit_and_accept(alpha.project, committed)
    newest = records()[-1]
    path = ledger_file(memory_root)
    lines = len(path.read_text().splitlines())
    forged = line_of(newest).replace(newest.mac, "0" * 64).replace(
        f"v2 {newest.seq} ", f"v2 {newest.seq + 1} ")
    with path.open("a") as handle:
        handle.write(forged)
        handle.write("not a checkpoint at all\n")
    body = verify(client_for(alpha.token)).json()
    assert body["ok"] is False
    assert body["problems"] == [
        {"table": NAME, "row_id": None,
         "message": f"{NAME} line {lines + 1} (seq {newest.seq + 1}) {FORGED_MAC}"},
        {"table": NAME, "row_id": None,
         "message": f"{NAME} line {lines + 2} is not a checkpoint"},
    ]
    code, out, _ = doctor_run("--project", "alpha")
    assert code == 1
    assert failures(out) == [f"FAIL alpha: ledger: {p['message']}" for p in body["problems"]]


def test_a_line_from_another_project_fails(alpha, beta, memory_root, committed):
    submit_and_accept(beta.project, committed)
    theirs = ledger_file(memory_root, "beta").read_text().splitlines()[-1]
    ledger_file(memory_root).parent.mkdir(parents=True, exist_ok=True)
    ledger_file(memory_root).write_text(theirs + "\n")
    seq = checkpoints.parse_line(theirs).seq
    report = ledger_checkpoints.ledger_report(alpha.project)
    assert report["ok"] is False
    assert report["problems"] == [
        {"table": NAME, "row_id": None, "message": f"{NAME} line 1 (seq {seq}) {FORGED_MAC}"}
    ]


def test_a_memory_checkpoint_line_is_no_ledger_line(alpha, memory_root, committed):
    """The salts differ: a memory checkpoint cannot stand in for a ledger record."""
    submit_and_accept(alpha.project, committed)
    record = records()[-1]
    text = format_timestamp(record.created_at)
    mac = checkpoints.checkpoint_mac("alpha", record.seq + 1, record.hash, text)
    with ledger_file(memory_root).open("a") as handle:
        handle.write(f"v2 {record.seq + 1} {record.hash} {text} {checkpoints.key_id()} {mac}\n")
    messages = [p["message"] for p in
                ledger_checkpoints.ledger_report(alpha.project)["problems"]]
    assert messages == [f"{NAME} line {record.seq + 1} (seq {record.seq + 1}) {FORGED_MAC}"]


def test_an_unreadable_file_is_reported(alpha, memory_root, committed):
    submit_and_accept(alpha.project, committed)
    path = ledger_file(memory_root)
    path.unlink()
    path.mkdir()  # a directory where the file should be
    report = ledger_checkpoints.ledger_report(alpha.project)
    assert report["ok"] is False
    assert report["problems"] == [
        {"table": NAME, "row_id": None, "message": f"cannot read {path}: Is a directory"}
    ]


# --- keys --------------------------------------------------------------------------------


def test_lines_signed_before_a_key_rotation_still_verify(alpha, memory_root, committed,
                                                         settings, client_for):
    submit_and_accept(alpha.project, committed)
    old_key_id = checkpoints.key_id()
    settings.SIGNING_KEY_FALLBACKS = [settings.SIGNING_KEY]
    settings.SIGNING_KEY = "a-new-signing-key-" + "x" * 40
    submit_and_accept(alpha.project, committed, path="CLAUDE.md")
    signers = [line.split(" ")[4] for line in ledger_file(memory_root).read_text().splitlines()]
    assert set(signers) == {old_key_id, checkpoints.key_id()}
    body = verify(client_for(alpha.token)).json()
    assert body["ok"] is True and body["problems"] == []
    assert doctor_run("--project", "alpha")[0] == 0
    # Without the old key, its records and lines are no longer authentic.
    settings.SIGNING_KEY_FALLBACKS = []
    messages = [p["message"] for p in verify(client_for(alpha.token)).json()["problems"]]
    assert any(f"{NAME} line 1 (seq 1) is signed with key {old_key_id}" in m for m in messages)


# --- authorization -------------------------------------------------------------------------


def test_the_route_answers_the_project_and_the_admin_only(alpha, beta, memory_root, committed,
                                                          client_for, admin_client):
    submit_and_accept(alpha.project, committed)
    mine = verify(client_for(alpha.token))
    assert mine.status_code == 200 and mine.json()["ok"] is True
    assert verify(admin_client).json()["ok"] is True
    other = verify(client_for(beta.token))
    assert other.status_code == 404
    assert other.json() == {"code": "not_found", "message": "not found"}
    assert verify(client_for(None)).status_code == 401
    assert verify(client_for(beta.token), "nope").status_code == 404


def test_a_transaction_of_many_records_catches_the_file_up_once_and_fully(
        live_db, make_project, memory_root):
    project = make_project("alpha").project
    with transaction.atomic():
        for number in range(1, 6):
            document_put(project=project, path=f"adr/000{number}-x.md", author="seed",
                         content=f"# {number}. X\n\nChosen.\n")
        assert len(connection.run_on_commit) == 1  # one catch-up queued, not five
    lines = (memory_root / "alpha" / ledger_checkpoints.NAME).read_text().splitlines()
    assert [line.split(" ")[1] for line in lines] == ["1", "2", "3", "4", "5"]
    assert ledger.ledger_verify(project) == (5, [])
