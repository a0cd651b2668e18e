"""Tamper evidence (issue 8; reliability catalogue C1: T01-T03, T06-T10).

The record is attacked the way someone with raw database access would:
append-only triggers off, then raw SQL. Every attack must be detected by
memory_chain_verify (the one service behind GET /verify, `memory verify`
and `doctor`) and located at the exact first bad seq; untouched data must
never be reported. Tail truncation and same-length forks are only visible
against a checkpoint (memory.checkpoints), kept in an append-only table and
in an HMAC-signed file outside the database.
"""

from __future__ import annotations

import importlib
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from gedweb import append_only
from gedweb.append_only import AppendOnlyError
from gedweb.cli.main import local_verify
from gedweb.lib.chain import GENESIS_HASH, entry_hash
from gedweb.lib.digest import sha256_text
from memory import checkpoints, services
from memory.models import ChainCheckpoint, MemoryEntry, format_timestamp
from tests.django_fixtures import is_postgres
from tests.interop.test_doctor import doctor_run, failures

COUNT = 7
SAMPLE = (1, 4, 7)  # first, middle, last; each one also carries a checkpoint
ENTRIES = "memory_memoryentry"
CHECKPOINTS = "memory_chaincheckpoint"
CHAINED_COLUMNS = (
    "author", "category", "content", "corrects", "created_at", "project_id", "seq", "source",
    "prev_hash", "hash",
)

APPEND_ONLY_TABLES = (
    importlib.import_module("memory.migrations.0003_documents").TABLES
    + importlib.import_module("memory.migrations.0006_chain_checkpoint").TABLES
    + importlib.import_module("memory.migrations.0013_allowedsecret").TABLES
    + importlib.import_module("memory.migrations.0025_textredaction").TABLES
    + importlib.import_module("governance.migrations.0002_append_only").TABLES
    + importlib.import_module("governance.migrations.0004_append_only").TABLES
    + importlib.import_module("governance.migrations.0006_ledgerrecord").TABLES
    + importlib.import_module("governance.migrations.0008_contextbundle").TABLES
    + importlib.import_module("governance.migrations.0014_governancetrust").TABLES
    + (ENTRIES,)
)


# --- tampering as a superuser would ----------------------------------------------------------


def _sqlite_entry_triggers() -> tuple[list[str], list[str]]:
    # As the migrations left them (memory 0002, and 0014 for UPDATE).
    triggers = append_only.expected_triggers("sqlite", ENTRIES)
    return list(triggers.values()), [f"DROP TRIGGER {name}" for name in triggers]


@contextmanager
def triggers_off() -> Iterator[Any]:
    """Raw SQL may rewrite entries and checkpoints for the duration; the triggers come back.

    PostgreSQL: session_replication_role = replica, which a superuser (the
    test role) may set and which silences every ordinary trigger, the
    append-only ones and the foreign-key checks alike. SQLite: the triggers
    are dropped and created again.
    """
    with connection.cursor() as cursor:
        if is_postgres():
            cursor.execute("SET session_replication_role = replica")
        else:
            create, drop = _sqlite_entry_triggers()
            for statement in drop + append_only.sqlite_backward(CHECKPOINTS):
                cursor.execute(statement)
        try:
            yield cursor
        finally:
            if is_postgres():
                cursor.execute("RESET session_replication_role")
            else:
                for statement in create + append_only.sqlite_forward(CHECKPOINTS):
                    cursor.execute(statement)


def row(project_id: str, seq: int) -> dict[str, Any]:
    return MemoryEntry.objects.filter(project_id=project_id, seq=seq).values().get()


def _flip_text(value: str) -> str:
    return ("y" if value[0] == "x" else "x") + value[1:]


def _flip_hex(value: str) -> str:
    return value[:-1] + ("1" if value[-1] == "0" else "0")


def flip_field(project_id: str, seq: int, field: str) -> None:
    """Change one chained column of one entry, by one character, digit or microsecond."""
    target = row(project_id, seq)
    if field in ("author", "category", "content", "source"):
        column, value = field, _flip_text(target[field])
    elif field in ("prev_hash", "hash"):
        column, value = field, _flip_hex(target[field])
    elif field == "created_at":
        column = field
        value = connection.ops.adapt_datetimefield_value(
            target["created_at"] + timedelta(microseconds=1))
    elif field == "corrects":
        other = MemoryEntry.objects.get(project_id=project_id, seq=2).pk
        column, value = "corrects_id", None if target["corrects_id"] else other
    elif field == "seq":
        column, value = "seq", seq + 1000
    elif field == "project_id":
        column, value = "project_id", "beta"
    else:  # pragma: no cover - the parametrisation names only the fields above
        raise AssertionError(field)
    with triggers_off() as cursor:
        cursor.execute(f"UPDATE {ENTRIES} SET {column} = %s WHERE id = %s", [value, target["id"]])


def _set_seq(cursor: Any, project_id: str, old: int, new: int) -> None:
    cursor.execute(f"UPDATE {ENTRIES} SET seq = %s WHERE project_id = %s AND seq = %s",
                   [new, project_id, old])


def swap_seqs(project_id: str, seq: int) -> int:
    """Swap the seqs of seq and its neighbour; returns the smaller of the two."""
    other = seq + 1 if seq < COUNT else seq - 1
    with triggers_off() as cursor:
        _set_seq(cursor, project_id, seq, 1_000_000)
        _set_seq(cursor, project_id, other, seq)
        _set_seq(cursor, project_id, 1_000_000, other)
    return min(seq, other)


def duplicate(project_id: str, seq: int) -> int:
    """Copy entry seq, hashes and all, into seq + 1; later entries move up one."""
    source = row(project_id, seq)
    copy_uuid = MemoryEntry._meta.get_field("uuid").get_db_prep_value(uuid.uuid4(), connection)
    with triggers_off() as cursor:
        for later in range(COUNT, seq, -1):
            _set_seq(cursor, project_id, later, later + 1)
        cursor.execute(
            f"INSERT INTO {ENTRIES} (uuid, project_id, seq, category, content, source,"
            " corrects_id, author, created_at, prev_hash, hash)"
            " SELECT %s, project_id, %s, category, content, source, corrects_id, author,"
            f" created_at, prev_hash, hash FROM {ENTRIES} WHERE id = %s",
            [copy_uuid, seq + 1, source["id"]],
        )
    return seq + 1


def delete_one(project_id: str, seq: int) -> int:
    with triggers_off() as cursor:
        cursor.execute(f"DELETE FROM {ENTRIES} WHERE project_id = %s AND seq = %s",
                       [project_id, seq])
    return seq


def delete_tail(project_id: str, seq: int) -> int:
    """Delete seq and everything newer: the chain that remains is valid."""
    with triggers_off() as cursor:
        cursor.execute(f"DELETE FROM {ENTRIES} WHERE project_id = %s AND seq >= %s",
                       [project_id, seq])
    return seq


def fork(project_id: str, seq: int) -> int:
    """Replace entry seq with a different entry and re-chain every later one: no link breaks."""
    rows = list(MemoryEntry.objects.filter(project_id=project_id).chain_rows())
    prev = rows[seq - 1]["prev_hash"]
    with triggers_off() as cursor:
        for fields in rows[seq - 1:]:
            if fields["seq"] == seq:
                content = fields["content"] + " (a different decision)"
                # In chain format 2 the hash commits to the content's digest: rewrite both.
                fields = {**fields, "content": content, "content_sha256": sha256_text(content)}
            new_hash = entry_hash(prev, fields)
            cursor.execute(
                f"UPDATE {ENTRIES} SET content = %s, content_sha256 = %s, prev_hash = %s, "
                "hash = %s WHERE uuid = %s",
                [fields["content"], fields["content_sha256"], prev, new_hash,
                 MemoryEntry._meta.get_field("uuid").get_db_prep_value(
                     uuid.UUID(fields["id"]), connection)],
            )
            prev = new_hash
    return seq


STRUCTURAL: dict[str, Callable[[str, int], int]] = {
    "swap-seqs": swap_seqs,
    "duplicate-row": duplicate,
    "delete-row": delete_one,
    "delete-tail": delete_tail,
    "fork-rechained": fork,
}


# --- fixtures -------------------------------------------------------------------------------


@pytest.fixture
def signed(settings: Any) -> None:
    """Automatic checkpoints out of the way: each test takes the ones it means."""
    settings.CHECKPOINT_EVERY = 1000


def _append(project: Any, seq: int) -> None:
    services.memory_entry_create(
        project=project,
        author=("ana", "bot")[seq % 2],
        category=("decision", "note", "risk")[seq % 3],
        content=f"entry {seq} · naïve café ```",
        source=("operator", "agent")[seq % 2],
        corrects=seq - 1 if seq == COUNT else None,
    )


@pytest.fixture
def chained(signed: None, alpha: Any, beta: Any) -> Any:
    """alpha: 7 varied entries, checkpoints at seq 1, 4 and 7; verified clean first."""
    for seq in range(1, COUNT + 1):
        _append(alpha.project, seq)
        if seq in SAMPLE:
            services.chain_checkpoint_take(project=alpha.project)
    clean = services.memory_chain_verify(project=alpha.project)
    assert (clean.ok, clean.entries, clean.first_bad_seq, clean.problems) == (True, COUNT, None, [])
    assert clean.checkpoint is not None and clean.checkpoint.seq == COUNT
    return alpha


def verify(project: Any) -> checkpoints.VerifyReport:
    return services.memory_chain_verify(project=project)


def kinds(report: checkpoints.VerifyReport) -> set[str]:
    return {problem.kind for problem in report.problems}


# --- T06: every chained column of first, middle and last row --------------------------------


@pytest.mark.parametrize("seq", SAMPLE)
@pytest.mark.parametrize("field", CHAINED_COLUMNS)
def test_a_changed_column_is_located_at_its_seq(chained, beta, field, seq):
    flip_field("alpha", seq, field)
    report = verify(chained.project)
    assert report.ok is False
    assert report.first_bad_seq == seq
    assert report.problems and all(p.seq is None or p.seq >= seq for p in report.problems)
    # The other project is untouched unless the row was moved into it.
    other = verify(beta.project)
    if field == "project_id":
        assert (other.ok, other.first_bad_seq) == (False, 1)
    else:
        assert (other.ok, other.problems) == (True, [])


@pytest.mark.parametrize("field", ["content", "author", "created_at", "corrects", "source"])
def test_a_changed_field_is_named_as_a_field_change(chained, field):
    flip_field("alpha", 4, field)
    (problem,) = verify(chained.project).problems
    assert problem.kind == "chain_broken"
    if field == "content":
        # Chain format 2: the link holds (it commits to the digest), the content does not.
        assert ("the content of seq 4 is neither the text its content_sha256 names nor the "
                "notice of a redaction record (content altered)") in problem.message
    else:
        assert "the chained fields of seq 4 no longer match its stored hash" in problem.message


def test_a_changed_stored_hash_is_named_as_such(chained):
    flip_field("alpha", 4, "hash")
    report = verify(chained.project)
    assert report.problems[0].message.endswith("the stored hash of seq 4 was altered")
    # The checkpoint at seq 4 recorded the true hash, so it disagrees as well,
    # and the entry's MAC signs the true hash.
    assert kinds(report) == {"chain_broken", "fork", "forged_entry"}


def test_a_changed_prev_hash_is_named_as_a_broken_link(chained):
    flip_field("alpha", 4, "prev_hash")
    assert "the prev_hash of seq 4 is not the hash of seq 3" in verify(chained.project).problems[
        0].message


# --- T07 and more: reorder, duplicate, gap, truncation, fork --------------------------------


@pytest.mark.parametrize("seq", SAMPLE)
@pytest.mark.parametrize("attack", sorted(STRUCTURAL))
def test_a_structural_attack_is_located(chained, attack, seq):
    expected = STRUCTURAL[attack]("alpha", seq)
    report = verify(chained.project)
    assert report.ok is False
    assert report.first_bad_seq == expected


def test_a_deleted_middle_row_is_named_as_a_missing_seq(chained):
    delete_one("alpha", 4)
    problem = verify(chained.project).problems[0]
    assert (problem.kind, problem.seq) == ("chain_broken", 4)
    assert "seq 4 is missing: the entry after seq 3 has seq 5" in problem.message


def test_a_duplicated_row_is_named_as_a_broken_link(chained):
    duplicate("alpha", 4)
    problem = verify(chained.project).problems[0]
    assert (problem.kind, problem.seq) == ("chain_broken", 5)
    assert "the prev_hash of seq 5 is not the hash of seq 4" in problem.message


# --- T08: tail truncation -----------------------------------------------------------------


def test_tail_truncation_is_located_at_the_first_missing_seq(chained):
    delete_tail("alpha", 5)
    report = verify(chained.project)
    assert (report.ok, report.entries, report.first_bad_seq) == (False, 4, 5)
    (problem,) = report.problems
    assert (problem.kind, problem.seq) == ("truncated", 5)
    assert problem.message.startswith("log shorter than checkpoint:")
    assert "recorded seq 7, the log ends at seq 4; seq 5 is the first missing" in problem.message
    # The newest checkpoint the shortened log still matches.
    assert report.checkpoint is not None and report.checkpoint.seq == 4


def test_truncation_to_nothing_is_located_at_seq_1(chained):
    delete_tail("alpha", 1)
    report = verify(chained.project)
    assert (report.ok, report.entries, report.first_bad_seq, report.head) == (
        False, 0, 1, GENESIS_HASH)


def test_truncation_is_detected_after_the_checkpoint_rows_are_deleted_too(chained):
    delete_tail("alpha", 5)
    with triggers_off() as cursor:
        cursor.execute(f"DELETE FROM {CHECKPOINTS} WHERE project_id = %s", ["alpha"])
    assert not ChainCheckpoint.objects.filter(project_id="alpha").exists()
    report = verify(chained.project)
    assert (report.ok, report.first_bad_seq) == (False, 5)
    assert kinds(report) == {"truncated", "deleted_checkpoint"}
    deleted = [p for p in report.problems if p.kind == "deleted_checkpoint"]
    assert [p.seq for p in deleted] == [1, 4, 7]
    assert "checkpoint rows were deleted" in deleted[0].message


def test_truncation_is_detected_from_the_table_when_the_file_is_gone(chained, memory_root):
    (memory_root / "alpha" / "CHECKPOINTS").unlink()
    delete_tail("alpha", 6)
    report = verify(chained.project)
    assert (report.ok, report.first_bad_seq, kinds(report)) == (False, 6, {"truncated"})


def test_plain_truncation_is_undetectable_without_a_checkpoint(signed, alpha):
    """The design assumption: a hash chain alone cannot see its tail deleted."""
    for seq in range(1, COUNT + 1):
        _append(alpha.project, seq)
    delete_tail("alpha", 5)
    report = verify(alpha.project)
    assert (report.ok, report.entries, report.first_bad_seq, report.problems) == (True, 4, None, [])
    assert report.head == row("alpha", 4)["hash"]


# --- T09: a fork at the same length ---------------------------------------------------------


def test_a_replaced_last_entry_is_a_head_hash_mismatch(chained):
    fork("alpha", COUNT)
    report = verify(chained.project)
    assert (report.ok, report.entries, report.first_bad_seq) == (False, COUNT, COUNT)
    forged, problem = report.problems
    assert (forged.kind, forged.seq) == ("forged_entry", COUNT)
    assert problem.kind == "fork"
    assert problem.message.startswith(f"head hash mismatch at seq {COUNT}:")


def test_a_fork_without_a_checkpoint_fails_the_entries_mac(signed, alpha):
    """Re-chained without the signing key: no checkpoint is needed to see it (issue 34 §1)."""
    for seq in range(1, COUNT + 1):
        _append(alpha.project, seq)
    fork("alpha", COUNT - 2)
    report = verify(alpha.project)
    assert (report.ok, report.first_bad_seq) == (False, COUNT - 2)
    (problem,) = report.problems
    assert problem.kind == "forged_entry"
    assert problem.message == (
        f"the entry at seq {COUNT - 2} fails its MAC: it was inserted or re-chained without "
        "GedWeb's signing key (a forged entry or redaction record) (2 later entries fail too)")


# --- the checkpoints themselves -----------------------------------------------------------------


def checkpoint_file(memory_root: Path) -> Path:
    return memory_root / "alpha" / "CHECKPOINTS"


def test_each_checkpoint_is_a_signed_line_of_the_file_and_a_row(chained, memory_root, settings):
    lines = checkpoint_file(memory_root).read_text().splitlines()
    rows = list(ChainCheckpoint.objects.filter(project_id="alpha").order_by("seq"))
    assert [r.seq for r in rows] == list(SAMPLE)
    assert lines == [
        f"v2 {r.seq} {r.hash} {format_timestamp(r.created_at)} {r.key_id} {r.mac}" for r in rows
    ]
    assert all(r.hash == row("alpha", r.seq)["hash"] for r in rows)
    assert {r.key_id for r in rows} == {checkpoints.key_id()}
    assert len(checkpoints.key_id()) == 16 and checkpoints.key_id() not in settings.SECRET_KEY


def test_a_forged_file_line_is_reported(chained, memory_root):
    # Someone truncates to seq 4 and rewrites the last line to match: the HMAC gives it away.
    path = checkpoint_file(memory_root)
    lines = path.read_text().splitlines(keepends=True)
    head4 = row("alpha", 4)["hash"]
    parts = lines[-1].split(" ")
    lines[-1] = " ".join([parts[0], "4", head4, *parts[3:]])
    path.write_text("".join(lines))
    report = verify(chained.project)
    assert report.ok is False
    forged = [p for p in report.problems if p.kind == "forged_checkpoint"]
    assert [p.seq for p in forged] == [4]
    assert "CHECKPOINTS line 3 (seq 4) fails its HMAC" in forged[0].message


def test_a_garbled_file_line_is_reported(chained, memory_root):
    with checkpoint_file(memory_root).open("a") as handle:
        handle.write("v1 not a checkpoint\n")
    report = verify(chained.project)
    assert (report.ok, kinds(report)) == (False, {"forged_checkpoint"})
    assert report.problems[0].message == "CHECKPOINTS line 4 is not a checkpoint"


def test_a_checkpoint_file_replaced_by_a_symlink_is_reported(chained, memory_root, tmp_path):
    decoy = tmp_path / "decoy"
    decoy.write_text("")
    checkpoint_file(memory_root).unlink()
    checkpoint_file(memory_root).symlink_to(decoy)
    report = verify(chained.project)
    assert (report.ok, kinds(report)) == (False, {"unreadable_checkpoints"})
    assert "cannot read" in report.problems[0].message


def test_a_forged_checkpoint_row_is_reported(chained):
    # INSERT is allowed to the app role: a row with a made-up HMAC must not count.
    ChainCheckpoint.objects.create(project=chained.project, seq=2, hash=row("alpha", 2)["hash"],
                                   created_at=row("alpha", 2)["created_at"], mac="0" * 64)
    report = verify(chained.project)
    assert (report.ok, report.first_bad_seq) == (False, None)
    assert [(p.kind, p.seq) for p in report.problems] == [("forged_checkpoint", 2)]


def test_a_checkpoint_copied_from_another_project_fails_its_hmac(chained, beta):
    for seq in (1, 2):
        _append(beta.project, seq)
    theirs = services.chain_checkpoint_take(project=beta.project)
    assert theirs is not None and theirs.seq == 2
    with triggers_off() as cursor:
        cursor.execute(f"UPDATE {CHECKPOINTS} SET project_id = %s WHERE project_id = %s",
                       ["alpha", "beta"])
    assert [(p.kind, p.seq) for p in verify(chained.project).problems] == [
        ("forged_checkpoint", 2)]


NEW_KEY = "a-new-signing-key-" + "x" * 50


def test_checkpoints_survive_a_key_rotation_through_the_fallbacks(chained, settings):
    old = settings.SIGNING_KEY
    old_id = checkpoints.key_id(old)
    settings.SIGNING_KEY = NEW_KEY
    report = verify(chained.project)
    assert kinds(report) == {"forged_checkpoint", "forged_entry"}
    # Each one names the key it lacks: the entries, the table and the file.
    assert all(f"signed with key {old_id}" in p.message and "GEDWEB_SIGNING_KEY_FALLBACKS"
               in p.message for p in report.problems)
    settings.SIGNING_KEY_FALLBACKS = [old]
    assert verify(chained.project).ok is True
    # New checkpoints are signed with the new key and name it; the old ones still verify.
    _append(chained.project, 6)
    taken = services.chain_checkpoint_take(project=chained.project)
    assert taken is not None and taken.key_id == checkpoints.key_id(NEW_KEY) != old_id
    assert verify(chained.project).ok is True
    settings.SIGNING_KEY_FALLBACKS = []
    assert {p.seq for p in verify(chained.project).problems} == set(SAMPLE)


def test_checkpoints_are_signed_with_the_signing_key_not_the_secret_key(chained, settings):
    rows = ChainCheckpoint.objects.filter(project_id="alpha")
    assert {r.key_id for r in rows} == {checkpoints.key_id(settings.SIGNING_KEY)}
    assert checkpoints.key_id(settings.SIGNING_KEY) != checkpoints.key_id(settings.SECRET_KEY)


def test_rotating_the_secret_key_leaves_every_checkpoint_verifiable(chained, settings):
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "a-new-secret-key-" + "y" * 50, []
    assert verify(chained.project).ok is True


def test_checkpoints_signed_with_the_secret_key_before_still_verify(chained, settings,
                                                                    memory_root):
    """Taken before GedWeb had a signing key of its own: keyed from SECRET_KEY."""
    original = settings.SIGNING_KEY
    settings.SIGNING_KEY = settings.SECRET_KEY
    _append(chained.project, 6)
    legacy = services.chain_checkpoint_take(project=chained.project)
    assert legacy is not None and legacy.key_id == checkpoints.key_id(settings.SECRET_KEY)
    settings.SIGNING_KEY = NEW_KEY
    assert verify(chained.project).ok is False  # the first ones were signed with the old key
    settings.SIGNING_KEY_FALLBACKS = [original]
    assert verify(chained.project).ok is True
    # With SECRET_KEY rotated away too, the legacy one names the key it lacks.
    settings.SECRET_KEY = "a-new-secret-key-" + "y" * 50
    problems = verify(chained.project).problems
    assert {p.seq for p in problems} == {legacy.seq}
    assert all(f"signed with key {legacy.key_id}" in p.message for p in problems)


def test_a_key_id_swapped_for_the_current_key_still_fails_the_hmac(chained, settings,
                                                                   memory_root):
    # The key id only picks the key: naming the current key for an old line
    # does not make a line forged under it count.
    settings.SIGNING_KEY, old = NEW_KEY, settings.SIGNING_KEY
    path = checkpoint_file(memory_root)
    text = path.read_text().replace(checkpoints.key_id(old), checkpoints.key_id())
    path.write_text(text)
    report = verify(chained.project)
    file_problems = [p for p in report.problems if "CHECKPOINTS line" in p.message]
    assert len(file_problems) == len(SAMPLE)
    assert all("fails its HMAC" in p.message for p in file_problems)


def test_v1_lines_and_rows_without_a_key_id_still_verify(chained, memory_root, settings):
    """Checkpoints from before key ids: every known key is tried."""
    with triggers_off() as cursor:
        cursor.execute(f"UPDATE {CHECKPOINTS} SET key_id = NULL")
    path = checkpoint_file(memory_root)
    v1 = [f"v1 {r.seq} {r.hash} {format_timestamp(r.created_at)} {r.mac}\n"
          for r in ChainCheckpoint.objects.filter(project_id="alpha").order_by("seq")]
    path.write_text("".join(v1))
    assert verify(chained.project).ok is True
    settings.SIGNING_KEY, settings.SIGNING_KEY_FALLBACKS = NEW_KEY, [settings.SIGNING_KEY]
    assert verify(chained.project).ok is True
    settings.SIGNING_KEY_FALLBACKS = []
    report = verify(chained.project)
    assert kinds(report) == {"forged_checkpoint", "forged_entry"}
    assert all("fails its HMAC" in p.message for p in report.problems
               if p.kind == "forged_checkpoint")


def test_a_torn_last_line_is_ignored_and_cut_before_the_next_append(chained, memory_root):
    path = checkpoint_file(memory_root)
    with path.open("a") as handle:
        handle.write("v1 8 abc")  # a crash in the middle of a write
    assert verify(chained.project).ok is True
    _append(chained.project, COUNT + 1)
    services.chain_checkpoint_take(project=chained.project)
    lines = path.read_text().splitlines()
    assert len(lines) == 4 and lines[-1].startswith(f"v2 {COUNT + 1} ")
    assert verify(chained.project).ok is True


def test_a_forged_line_with_a_higher_seq_does_not_stop_the_catch_up(chained, memory_root):
    # A line claiming seq 99 without a valid HMAC: the catch-up must not take
    # it for the newest checkpoint, or the real one at seq 8 would never be written.
    path = checkpoint_file(memory_root)
    parts = path.read_text().splitlines()[-1].split(" ")
    forged = " ".join([parts[0], "99", *parts[2:]]) + "\n"
    with path.open("a") as handle:
        handle.write(forged)
    _append(chained.project, COUNT + 1)
    taken = services.chain_checkpoint_take(project=chained.project)
    assert taken is not None
    lines = path.read_text().splitlines(keepends=True)
    assert lines[-2] == forged  # appended after it, nothing rewritten
    real = ChainCheckpoint.objects.get(project_id="alpha", seq=COUNT + 1)
    assert lines[-1] == (f"v2 {real.seq} {real.hash} {format_timestamp(real.created_at)} "
                         f"{real.key_id} {real.mac}\n")
    assert len(lines) == len(SAMPLE) + 2


def test_the_file_is_only_appended_to(chained, memory_root):
    before = checkpoint_file(memory_root).read_bytes()
    services.chain_checkpoint_take(project=chained.project)  # head already on record
    assert checkpoint_file(memory_root).read_bytes() == before
    _append(chained.project, COUNT + 1)
    services.chain_checkpoint_take(project=chained.project)
    after = checkpoint_file(memory_root).read_bytes()
    assert after.startswith(before) and after.count(b"\n") == 4


def test_the_file_catches_up_with_rows_it_missed(chained, memory_root):
    checkpoint_file(memory_root).unlink()
    services.chain_checkpoint_take(project=chained.project)
    assert [line.split(" ")[1] for line in
            checkpoint_file(memory_root).read_text().splitlines()] == ["1", "4", "7"]


def test_a_rewritten_history_cannot_take_over_a_recorded_seq(chained):
    fork("alpha", COUNT)
    # The rewritten entry fails its MAC: no checkpoint signs over it.
    with pytest.raises(checkpoints.UnsignedEntry, match=f"the entry at seq {COUNT} fails"):
        checkpoints.take("alpha", COUNT, row("alpha", COUNT)["hash"])
    # Signed by someone holding the key, the same seq is on record already:
    # the first record stays the evidence.
    with triggers_off() as cursor:
        cursor.execute(f"UPDATE {ENTRIES} SET mac = %s WHERE project_id = %s AND seq = %s",
                       [checkpoints.entry_mac("alpha", COUNT, row("alpha", COUNT)["hash"]),
                        "alpha", COUNT])
    assert checkpoints.take("alpha", COUNT, row("alpha", COUNT)["hash"]) is None
    assert kinds(verify(chained.project)) == {"fork"}
    assert ChainCheckpoint.objects.filter(project_id="alpha").count() == len(SAMPLE)


# --- when checkpoints are taken -----------------------------------------------------------------


def test_every_nth_append_takes_a_checkpoint_after_commit(
    signed, settings, alpha, memory_root, django_capture_on_commit_callbacks
):
    settings.CHECKPOINT_EVERY = 3
    for seq in range(1, COUNT + 1):
        with django_capture_on_commit_callbacks(execute=True):
            _append(alpha.project, seq)
    assert list(ChainCheckpoint.objects.filter(project_id="alpha").values_list("seq", flat=True)
                ) == [3, 6]
    assert [line.split(" ")[1] for line in
            checkpoint_file(memory_root).read_text().splitlines()] == ["3", "6"]


def test_appends_between_checkpoints_never_touch_the_checkpoint_table(
    signed, settings, alpha, django_capture_on_commit_callbacks
):
    settings.CHECKPOINT_EVERY = 3
    with CaptureQueriesContext(connection) as queries:
        for seq in (1, 2):
            with django_capture_on_commit_callbacks(execute=True):
                _append(alpha.project, seq)
    assert not [q for q in queries.captured_queries if CHECKPOINTS in q["sql"]]
    with CaptureQueriesContext(connection) as queries, \
            django_capture_on_commit_callbacks(execute=True):
        _append(alpha.project, 3)
    touching = [q["sql"] for q in queries.captured_queries if CHECKPOINTS in q["sql"]]
    # One read of the newest checkpoint (the entries since must carry their
    # MACs), one INSERT, and one read of the rows the file has not seen yet.
    assert len(touching) == 3 and touching[1].startswith("INSERT")


def test_with_a_follower_the_append_writes_the_row_and_the_follower_the_line(
    signed, settings, alpha, memory_root, django_capture_on_commit_callbacks
):
    settings.CHECKPOINT_EVERY = 2
    settings.MIRROR_WRITER = "follower"
    for seq in (1, 2):
        with django_capture_on_commit_callbacks(execute=True):
            _append(alpha.project, seq)
    assert list(ChainCheckpoint.objects.values_list("seq", flat=True)) == [2]
    assert not checkpoint_file(memory_root).exists()  # the write path never touches the disk
    call_command("memory", "mirror", "--follow", "--once", stdout=StringIO())
    assert [line.split(" ")[1] for line in
            checkpoint_file(memory_root).read_text().splitlines()] == ["2"]


def test_an_import_that_crosses_a_multiple_checkpoints_its_last_entry(
    signed, settings, alpha, django_capture_on_commit_callbacks
):
    from datetime import UTC, datetime

    settings.CHECKPOINT_EVERY = 3
    rows = [services.ImportRow(key=f"k{n}", category="note", content=f"c{n}", source="import",
                               created_at=datetime(2026, 1, 1, 0, 0, n, tzinfo=UTC),
                               label=f"row {n}") for n in range(5)]
    with django_capture_on_commit_callbacks(execute=True):
        services.memory_entries_import(project=alpha.project, rows=rows)
    assert list(ChainCheckpoint.objects.values_list("seq", flat=True)) == [5]


def test_the_checkpoint_command_records_the_head_once(signed, alpha):
    for seq in (1, 2):
        _append(alpha.project, seq)
    out = StringIO()
    call_command("memory", "checkpoint", "--project", "alpha", stdout=out)
    assert '"seq": 2' in out.getvalue()
    call_command("memory", "checkpoint", "--project", "alpha", stdout=StringIO())
    assert ChainCheckpoint.objects.filter(project_id="alpha").count() == 1


def test_the_checkpoint_command_refuses_a_broken_chain(chained):
    delete_one("alpha", 3)
    with pytest.raises(CommandError) as refused:
        call_command("memory", "checkpoint", "--project", "alpha", stdout=StringIO())
    assert refused.value.returncode == 1
    assert ChainCheckpoint.objects.filter(project_id="alpha").count() == len(SAMPLE)


def test_memory_verify_checkpoints_an_intact_head_and_the_api_does_not(signed, alpha, client_for):
    for seq in (1, 2):
        _append(alpha.project, seq)
    response = client_for(alpha.token).get("/v1/projects/alpha/memory/verify")
    assert response.json()["ok"] is True
    assert not ChainCheckpoint.objects.exists()
    call_command("memory", "verify", "--project", "alpha", stdout=StringIO())
    assert list(ChainCheckpoint.objects.values_list("seq", flat=True)) == [2]


# --- how each surface reports it ---------------------------------------------------------------


def test_the_api_reports_truncation_with_its_checkpoint(chained, client_for):
    delete_tail("alpha", 6)
    response = client_for(chained.token).get("/v1/projects/alpha/memory/verify")
    assert response.status_code == 200
    body = response.json()
    assert {k: body[k] for k in ("ok", "entries", "first_bad_seq")} == {
        "ok": False, "entries": 5, "first_bad_seq": 6}
    assert body["checkpoint"]["seq"] == 4
    assert [(p["kind"], p["seq"]) for p in body["problems"]] == [("truncated", 6)]
    assert ChainCheckpoint.objects.filter(project_id="alpha").count() == len(SAMPLE)


def test_memory_verify_exits_1_naming_the_truncation(chained):
    delete_tail("alpha", 5)
    out = StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("memory", "verify", "--project", "alpha", stdout=out)
    assert failed.value.returncode == 1
    message = str(failed.value)
    assert "\n" not in message
    assert message.startswith("memory of alpha fails verification at seq 5: log shorter than "
                              "checkpoint")
    # A broken record is never checkpointed.
    assert ChainCheckpoint.objects.filter(project_id="alpha").count() == len(SAMPLE)


def test_doctor_fails_naming_the_fork(chained):
    fork("alpha", COUNT)
    code, lines, _ = doctor_run("--project", "alpha")
    assert code == 1
    chain = [line for line in failures(lines) if ": chain:" in line]
    assert len(chain) == 2
    assert chain[0].startswith(f"FAIL alpha: chain: the entry at seq {COUNT} fails its MAC")
    assert chain[1].startswith(f"FAIL alpha: chain: head hash mismatch at seq {COUNT}:")


def test_doctor_checkpoints_a_healthy_chain(signed, alpha):
    _append(alpha.project, 1)
    _, lines, _ = doctor_run("--project", "alpha")
    assert "ok   alpha: chain (1 entry, matches the checkpoint at seq 1)" in lines


# --- T10: the CLI's own verifier checks every link ------------------------------------------


def _downloaded(count: int) -> list[dict[str, Any]]:
    entries, prev = [], GENESIS_HASH
    for seq in range(1, count + 1):
        fields = {"author": "agent", "category": "note", "content": f"entry {seq}",
                  "corrects": None, "created_at": f"2026-11-30T08:00:0{seq}.000000+00:00",
                  "project_id": "p", "seq": seq, "source": "operator"}
        entries.append({**fields, "prev_hash": prev, "hash": entry_hash(prev, fields)})
        prev = entries[-1]["hash"]
    return entries


def test_the_cli_rejects_a_forged_middle_link_whose_neighbours_agree():
    """A malicious server keeps both ends and relinks around a forged middle entry."""
    entries = _downloaded(5)
    forged = "f" * 64
    entries[2] = {**entries[2], "content": "forged", "hash": forged}
    entries[3] = {**entries[3], "prev_hash": forged}  # seq 4 links to the forgery
    report = local_verify(entries)
    assert (report["ok"], report["first_bad_seq"], report["head"]) == (
        False, 3, entries[-1]["hash"])


@pytest.mark.parametrize("garbage", [
    pytest.param({"seq": 6, "content": "no hash, no link"}, id="entry-missing-fields"),
    pytest.param("not an entry", id="a-string"),
    pytest.param(None, id="null"),
])
def test_the_cli_fails_verification_on_a_malformed_last_entry(garbage):
    """A malformed entry is a broken link, never dropped: the five good ones do not vouch for it."""
    entries = _downloaded(5)
    assert local_verify(entries)["ok"] is True
    report = local_verify([*entries, garbage])
    assert report["ok"] is False
    assert report["first_bad_seq"] == 6
    assert report["entries"] == 6


# --- T01, T02: the checkpoint table is append-only as well ------------------------------------


def test_the_orm_refuses_to_change_or_delete_a_checkpoint(chained):
    checkpoint = ChainCheckpoint.objects.filter(project_id="alpha").first()
    checkpoint.seq = 2
    with pytest.raises(AppendOnlyError):
        checkpoint.save()
    with pytest.raises(AppendOnlyError):
        checkpoint.delete()
    for attempt in (
        lambda: ChainCheckpoint.objects.filter(project_id="alpha").update(seq=99),
        lambda: ChainCheckpoint.objects.all().delete(),
        lambda: ChainCheckpoint.objects.bulk_update([checkpoint], ["seq"]),
        lambda: ChainCheckpoint.objects.update_or_create(project=chained.project, seq=1),
    ):
        with pytest.raises(AppendOnlyError):
            attempt()
    assert verify(chained.project).ok is True


@pytest.mark.parametrize("statement", [
    f"UPDATE {CHECKPOINTS} SET hash = %s",
    f"DELETE FROM {CHECKPOINTS} WHERE project_id = %s",
    f"DELETE FROM {CHECKPOINTS}",
])
def test_the_database_refuses_raw_changes_to_checkpoints(chained, statement):
    params = ["alpha"] if "%s" in statement else []
    if statement.startswith("UPDATE"):
        params = ["0" * 64]
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(statement, params)
    assert ChainCheckpoint.objects.filter(project_id="alpha").count() == len(SAMPLE)
    assert verify(chained.project).ok is True


def test_the_triggers_are_back_after_tampering(chained):
    delete_tail("alpha", 7)
    for table in (ENTRIES, CHECKPOINTS):
        with pytest.raises(IntegrityError), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(f"DELETE FROM {table}")


# --- T02, T03: the production role (PostgreSQL) -------------------------------------------------


def security_doc_grants() -> str:
    """The SQL block of docs/security.md that sets up the application role."""
    text = (Path(django_settings.BASE_DIR) / "docs" / "security.md").read_text()
    match = re.search(r"```sql\n(-- gedweb application role.*?)```", text, re.S)
    assert match, "docs/security.md lost its application-role SQL block"
    return match.group(1)


def test_the_documented_revoke_names_every_append_only_table():
    sql = security_doc_grants()
    revoked = set(re.findall(r"^\s+(\w+)[,;]?$", sql.split("REVOKE", 1)[1], re.M))
    assert revoked == set(APPEND_ONLY_TABLES)


@pytest.fixture
def app_role(chained: Any) -> Iterator[str]:
    """The documented application role, created in the test transaction and rolled back."""
    role = f"gedweb_app_{uuid.uuid4().hex[:8]}"
    sql = security_doc_grants().replace("gedweb_app", role)
    with connection.cursor() as cursor:
        for statement in filter(None, (s.strip() for s in sql.split(";"))):
            cursor.execute(statement)
        cursor.execute(f"SET ROLE {role}")
        try:
            yield role
        finally:
            cursor.execute("RESET ROLE")


postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL: SQLite has no roles or privileges",
)

ROLE_REFUSALS = [
    *(f"UPDATE {table} SET id = id" for table in APPEND_ONLY_TABLES),
    *(f"DELETE FROM {table}" for table in APPEND_ONLY_TABLES),
    *(f"TRUNCATE {table}" for table in APPEND_ONLY_TABLES),
    f"ALTER TABLE {ENTRIES} DISABLE TRIGGER memory_entry_append_only",
    f"ALTER TABLE {ENTRIES} DISABLE TRIGGER ALL",
    f"ALTER TABLE {CHECKPOINTS} DISABLE TRIGGER {CHECKPOINTS}_append_only",
    f"DROP TRIGGER memory_entry_append_only ON {ENTRIES}",
    "SET session_replication_role = replica",
    "SET LOCAL session_replication_role = replica",
]


@postgres_only
def test_the_application_role_is_refused_every_bypass(app_role):
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        assert cursor.fetchone() == (False,)
    refused = []
    for statement in ROLE_REFUSALS:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(statement)
        except DatabaseError as exc:
            assert re.search(r"permission denied|must be owner", str(exc)), (statement, exc)
            refused.append(statement)
    assert refused == ROLE_REFUSALS
    with connection.cursor() as cursor:
        cursor.execute("SHOW session_replication_role")
        assert cursor.fetchone() == ("origin",)


@postgres_only
def test_the_application_role_can_still_append_and_checkpoint(app_role, chained):
    _append(chained.project, COUNT + 1)
    taken = services.chain_checkpoint_take(project=chained.project)
    assert taken is not None and taken.seq == COUNT + 1
    report = verify(chained.project)
    assert (report.ok, report.entries) == (True, COUNT + 1)


@postgres_only
def test_the_application_role_can_redact_but_not_vacuum(app_role, chained):
    from memory.redaction import memory_entry_redact

    result = memory_entry_redact(project=chained.project, seq=2, reason="a passphrase",
                                 by="user:olga")
    assert result.entry.is_redacted and verify(chained.project).ok
    # Inside the test's transaction the purge says so before it asks about ownership.
    assert "inside a transaction" in result.purge["skipped"]
    # The column grants reach no other column of the entry.
    with pytest.raises(DatabaseError, match="permission denied"), transaction.atomic(), \
            connection.cursor() as cursor:
        cursor.execute(f"UPDATE {ENTRIES} SET author = 'mallory' WHERE seq = 2")


@postgres_only
def test_the_application_role_can_redact_a_secret_in_any_text_and_nothing_else(
        app_role, chained, settings):
    from governance.skills import skill_put
    from memory.documents import document_put
    from memory.models import DocumentRevision, SecretFinding
    from memory.redaction import finding_redact

    token = "rotated-admin-token-0123456789abcdef"
    document_put(project=chained.project, path="CONTEXT.md", content=f"# C\n\n{token}\n",
                 author="cli")
    skill_put(project=chained.project, name="deploy",
              content=f"---\nname: deploy\ndescription: Deploy it.\n---\n\nRun {token}\n",
              reason="needed", source=None, author="cli")
    settings.ADMIN_TOKEN = token
    from memory import secret_scan

    secret_scan.record_findings(chained.project)
    for finding in SecretFinding.objects.filter(project=chained.project):
        result = finding_redact(finding_id=finding.pk, reason="rotated", by="user:olga")
        assert "inside a transaction" in result.purge["skipped"]
    assert token not in DocumentRevision.objects.get(project=chained.project).content
    # The column grants reach no other column.
    with pytest.raises(DatabaseError, match="permission denied"), transaction.atomic(), \
            connection.cursor() as cursor:
        cursor.execute("UPDATE memory_documentrevision SET author = 'mallory'")


# --- T03: nothing in the code turns the triggers off ------------------------------------------

BYPASS = re.compile(
    r"DISABLE\s+TRIGGER|session_replication_role|DROP\s+TRIGGER|pgtrigger|_backward\(",
    re.IGNORECASE,
)


def test_no_code_outside_migrations_and_tests_disables_triggers():
    root = Path(django_settings.BASE_DIR)
    # .venv-django6.0 too: every virtualenv of `make test DJANGO=...`; and
    # mutants/, the git-ignored mutated copy of the tree `make mutants` leaves.
    skipped = {".git", ".data", "tests", "docs", "static", "node_modules", "mutants"}
    paths = [path for top in sorted(root.iterdir())
             if top.name not in skipped and not top.name.startswith(".venv")
             for path in ([top] if top.is_file() else sorted(top.rglob("*")))]
    found = []
    for path in paths:
        relative = path.relative_to(root)
        if not path.is_file() or "migrations" in relative.parts:
            continue
        if path.suffix not in (".py", ".sql", ".sh", ".toml", ".cfg", ".ini") and \
                path.name not in ("Makefile", "run"):
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if BYPASS.search(line):
                found.append(f"{relative}:{number}: {line.strip()}")
    # The only hits: the migration helpers that undo make_append_only on
    # reversal, and doctor reading (never setting) the replication role.
    allowed = re.compile(r"^gedweb/append_only\.py:\d+: (def \w+_backward\(|f\"DROP TRIGGER "
                         r"IF EXISTS \{table\}|return \[f\"DROP TRIGGER IF EXISTS|"
                         r"_run\(\{\"sqlite\": sqlite_backward)|"
                         r"^governance/doctor\.py:\d+: (cursor\.execute\(\"SHOW "
                         r"session_replication_role\"\)|problems\.append\(f\"session_replication"
                         r"_role is )")
    assert [hit for hit in found if not allowed.match(hit)] == []
