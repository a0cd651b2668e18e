"""The trust ledger's copy beside the mirror: ``<GEDWEB_MEMORY_ROOT>/<project>/LEDGER-CHECKPOINTS``.

The ledger (governance/ledger.py) lives in the database. Someone with raw
database access who deletes the newest records together with the rows
they cover (on SQLite after dropping the append-only triggers) leaves a
shorter chain that still verifies. Memory entries defend against that with
the CHECKPOINTS file (memory/checkpoints.py); the ledger does the same with
a file of its own, in the same line format and written by the same
functions (memory.checkpoints.sync_file with this file's name, salt and
rows). Every record is already a signed checkpoint: its mac is
checkpoint_mac(project, seq, hash, created_at) under ledger.MAC_SALT, so
each record becomes one line ``v2 <seq> <hash> <created_at> <key id> <mac>``,
appended and fsynced under the mirror's flock and never rewritten.

When lines are written:

- after the commit of every ledger append (after_commit, registered by
  ledger.ledger_append) when GEDWEB_MIRROR_WRITER is inline;
- by the follower, ``manage.py memory mirror --follow``: memory cannot
  import governance, so GovernanceConfig.ready registers this file with
  memory.checkpoints.follow_file, and the follower catches it up whenever
  the ledger's head moves, as it does for CHECKPOINTS;
- by ``manage.py doctor`` and ``GET /v1/projects/{project}/ledger/verify``,
  before they verify (ledger_report).

Verification (ledger_report): every authentic line's seq must be in the
ledger with the same hash. A line beyond the ledger's end means the ledger
was truncated; a different hash, or no record at a seq inside the ledger,
means a record was replaced or the ledger rewritten up to it. Unparsable or
non-authentic lines (a line copied from another project fails: the project
is signed) are reported as forged, an unreadable file as unreadable.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from django.conf import settings

from governance import ledger
from governance.models import LedgerRecord
from memory import checkpoints, mirror
from memory.models import Project, format_timestamp

logger = logging.getLogger("governance.ledger_checkpoints")

NAME = "LEDGER-CHECKPOINTS"
# doctor and the verify route must not hang on a mirror lock some process
# never releases (doctor's mirror-files check reports such a lock).
SYNC_WAIT_SECONDS = 5.0


def _rows(project_id: str, after: int) -> Iterator[checkpoints.Checkpoint]:
    """The project's ledger records after seq ``after`` as the checkpoints they are."""
    rows = (
        LedgerRecord.objects.filter(project_id=project_id, seq__gt=after)
        .order_by("seq")
        .values_list("seq", "hash", "created_at", "mac", "key_id")
    )
    for seq, head_hash, created_at, mac, signer in rows.iterator():
        yield checkpoints.Checkpoint(seq, head_hash, format_timestamp(created_at), mac,
                                     signer or "")


def head_seq(project_id: str) -> int:
    """The seq of the newest record (0 for an empty ledger): the follower syncs when it moves."""
    seq = (LedgerRecord.objects.filter(project_id=project_id).order_by("-seq")
           .values_list("seq", flat=True).first())
    return seq or 0


def sync_file(project_id: str, wait: float | None = None) -> int:
    """Append a line for every authentic record newer than the file's newest line."""
    return checkpoints.sync_file(project_id, wait, name=NAME, salt=ledger.MAC_SALT, rows=_rows)


def after_commit(project_id: str) -> None:
    """Runs after a ledger append commits: never raises.

    The record is committed whatever happens here; the next append, the
    follower, doctor or the verify route catches the file up.
    """
    try:
        if settings.MIRROR_WRITER == "inline":
            sync_file(project_id)
    except Exception:
        logger.exception("%s of project %s could not be caught up", NAME, project_id)


def catch_up(project_id: str) -> None:
    """sync_file with a bounded wait, for doctor and the verify route; logs, never raises."""
    try:
        sync_file(project_id, wait=SYNC_WAIT_SECONDS)
    except (mirror.MirrorPathError, OSError):
        # The records are in the database; doctor reports the directory or the lock.
        logger.warning("cannot write the %s file of %s", NAME, project_id, exc_info=True)


# --- verification ------------------------------------------------------------------------


def _compare(lines: list[tuple[int, checkpoints.Checkpoint]],
             problems: list[checkpoints.Problem],
             stored: dict[int, tuple[int, str]]) -> list[ledger.Finding]:
    """The file's authentic lines against the ledger's records, ``stored``: seq -> (pk, hash)."""
    table = LedgerRecord._meta.db_table
    findings = [ledger.Finding(NAME, None, problem.message) for problem in problems]
    last_seq = max(stored, default=0)
    beyond = [(number, line) for number, line in lines if line.seq > last_seq]
    if beyond:
        number, newest = max(beyond, key=lambda item: item[1].seq)
        findings.append(ledger.Finding(
            table, None,
            f"truncated: ledger shorter than its checkpoint file, seq {last_seq + 1} is the "
            f"first missing ({NAME} line {number} of {newest.created_at} recorded seq "
            f"{newest.seq}, the ledger ends at seq {last_seq}): records were deleted without "
            "going through GedWeb",
        ))
    forks = [(number, line) for number, line in lines
             if line.seq <= last_seq and stored.get(line.seq, (None, None))[1] != line.hash]
    if forks:
        number, first = min(forks, key=lambda item: item[1].seq)
        pk, found = stored.get(first.seq, (None, None))
        findings.append(ledger.Finding(
            table, pk,
            f"fork: record hash mismatch at seq {first.seq}: {NAME} line {number} of "
            f"{first.created_at} recorded {first.hash[:16]}, the ledger has "
            + (f"{found[:16]}" if found else "no record with that seq")
            + " (the record was replaced, or the ledger up to it was rewritten)",
        ))
    return findings


def ledger_report(project: Project, *, catch_up_file: bool = True) -> dict[str, Any]:
    """The ledger's links and covered rows (ledger.ledger_verify) and the file against it.

    {"ok", "records", "head": {"seq", "hash"} or None, "problems": [{"table",
    "row_id", "message"}]}; file problems name the file as their table. With
    catch_up_file (doctor, the verify route) the file is caught up first: it
    only ever gains lines for authentic records beyond its newest one, so a
    truncated ledger stays visible.
    """
    if catch_up_file:
        catch_up(project.pk)
    # The file before the records: a line is written only after its record
    # commits, so every line read has its record visible below, and an
    # append in between is never mistaken for a deletion.
    lines, problems = checkpoints.file_checkpoints(project.pk, name=NAME, salt=ledger.MAC_SALT)
    stored = {seq: (pk, head_hash) for pk, seq, head_hash in
              LedgerRecord.objects.filter(project=project).values_list("pk", "seq", "hash")}
    records, findings = ledger.ledger_verify(project)
    findings = [*findings, *_compare(lines, problems, stored)]
    head = max(stored, default=None)
    return {
        "ok": not findings,
        "records": records,
        "head": {"seq": head, "hash": stored[head][1]} if head is not None else None,
        "problems": [{"table": f.table, "row_id": f.row_id, "message": f.message}
                     for f in findings],
    }


def register_follower() -> None:
    """Have `memory mirror --follow` keep this file current (GovernanceConfig.ready).

    Why a registration and not an import in the follower: memory must not
    import governance; this way memory's follower stays the one process an
    operator runs in follower mode, and governance says which file is its own.
    """
    checkpoints.follow_file(checkpoints.FollowedFile(NAME, head_seq, sync_file))
