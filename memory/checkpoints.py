"""Chain checkpoints: signed heads that tail truncation and forks cannot hide.

A hash chain shows any change to an entry it still holds, but deleting the
newest N entries, or swapping the last entry for another well-chained one,
leaves a valid chain. A checkpoint records a head the log once had: seq,
hash and time, authenticated with an HMAC keyed from the installation's
signing key, settings.SIGNING_KEY (django.utils.crypto.salted_hmac), which
is not SECRET_KEY: each rotates on its own. Each one is kept twice:

- a row of the append-only table memory_chaincheckpoint (triggers refuse
  UPDATE and DELETE), and
- a line of ``<GEDWEB_MEMORY_ROOT>/<project>/CHECKPOINTS`` next to the
  mirror, appended and fsynced under the mirror's flock and never rewritten:
  ``v2 <seq> <hash> <created_at> <key id> <mac>`` (``v1`` lines, from before
  key ids, have no key id and are still read).

Each checkpoint names the key that signed it: the key id is a public
fingerprint of the secret (key_id()). After a rotation, with the old key
in GEDWEB_SIGNING_KEY_FALLBACKS, every earlier checkpoint still verifies;
with the old key dropped, the verifier says which key id it lacks instead
of calling the checkpoint forged. The key id is not signed: changing it
only changes which key is tried, and the HMAC still has to match.

Someone with raw database access who deletes entries and checkpoint rows
still leaves the file lines; someone who edits a line, or inserts a row,
cannot produce its HMAC without the key.

When checkpoints are taken (the key is the installation's, the same in
every process: gedweb/installation.py):

- after the commit of every entry whose seq is a multiple of
  settings.CHECKPOINT_EVERY (one INSERT and one line every N appends; the
  appends in between pay nothing);
- by ``manage.py memory checkpoint --project P``;
- by ``manage.py memory verify`` and ``manage.py doctor`` when the chain
  verifies, at the head they verified.

verify() recomputes every link and checks the log against every authentic
checkpoint from both places: a log that ends before a checkpoint's seq was
truncated (the first missing seq is named), a different hash at a
checkpoint's seq is a fork or a rewrite re-chained up to it.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac

from gedweb.lib.chain import GENESIS_HASH, entry_hash, verify_chain
from memory import mirror
from memory.models import ChainCheckpoint, MemoryEntry, format_timestamp

logger = logging.getLogger("memory.checkpoints")

CHECKPOINTS_NAME = "CHECKPOINTS"
LINE_VERSION = "v2"
_LINE_PARTS = {"v1": 5, "v2": 6}
_MAC_SALT = "gedweb.memory.ChainCheckpoint.v1"
ENTRY_MAC_SALT = "gedweb.memory.MemoryEntry.v1"
_KEY_ID_SALT = "gedweb.memory.ChainCheckpoint.key-id"
_HEX = frozenset("0123456789abcdef")
_TAIL_PROBE_BYTES = 4096
# Every kind verify() reports, in the order it lists them: what locates a
# break first, then what is wrong with the evidence itself.
PROBLEM_KINDS = (
    "chain_broken", "forged_entry", "truncated", "fork", "forged_checkpoint", "deleted_checkpoint",
    "unreadable_checkpoints",
)


@dataclass(frozen=True)
class Checkpoint:
    """One recorded head, as read from the table or from a CHECKPOINTS line."""

    seq: int
    hash: str
    created_at: str
    mac: str
    key_id: str = ""  # "" on v1 lines and rows from before key ids

    def line(self) -> str:
        if not self.key_id:
            return f"v1 {self.seq} {self.hash} {self.created_at} {self.mac}\n"
        return (f"{LINE_VERSION} {self.seq} {self.hash} {self.created_at} {self.key_id} "
                f"{self.mac}\n")


@dataclass(frozen=True)
class Problem:
    """One finding of verify(): what kind, at which seq (if any), in one line."""

    # chain_broken | forged_entry | truncated | fork | forged_checkpoint | deleted_checkpoint
    # | unreadable_checkpoints
    kind: str
    seq: int | None
    message: str


@dataclass(frozen=True)
class VerifyReport:
    """The contract's {ok, entries, head, first_bad_seq} plus the checkpoint evidence."""

    ok: bool
    entries: int
    head: str
    first_bad_seq: int | None
    checkpoint: Checkpoint | None = None
    problems: list[Problem] = field(default_factory=list)
    redacted: int = 0  # entries whose content a redaction record removed, each explained


# --- authentication ---------------------------------------------------------------------


def _message(project_id: str, seq: int, head_hash: str, created_at: str) -> str:
    # The project id is signed too: a checkpoint copied to another project fails.
    return f"{project_id}\n{seq}\n{head_hash}\n{created_at}"


def checkpoint_mac(
    project_id: str, seq: int, head_hash: str, created_at: str, secret: str | None = None,
    *, salt: str = _MAC_SALT,
) -> str:
    """The HMAC of a checkpoint under ``secret``, by default the current signing key.

    ``salt`` separates what is signed: the trust ledger signs its records
    with the same keys under a salt of its own (governance/ledger.py).
    """
    return salted_hmac(
        salt, _message(project_id, seq, head_hash, created_at),
        secret=secret if secret is not None else settings.SIGNING_KEY, algorithm="sha256",
    ).hexdigest()


def key_id(secret: str | None = None) -> str:
    """A public fingerprint of a signing key (16 hex digits); reveals nothing of the key."""
    return _key_id(secret if secret is not None else settings.SIGNING_KEY)


@functools.lru_cache(maxsize=16)
def _key_id(secret: str) -> str:
    # Every append names its key: one HMAC per key per process, not per entry.
    return salted_hmac(_KEY_ID_SALT, "key id", secret=secret, algorithm="sha256").hexdigest()[:16]


def entry_mac(project_id: str, seq: int, entry_hash: str, secret: str | None = None) -> str:
    """The HMAC that shows a memory entry was written by GedWeb (MemoryEntry.mac).

    The hash commits to every chained field, created_at among them, and the
    project id binds the MAC to its chain: (project, seq, hash) is all it
    needs, and a changed field that leaves the hash alone is the chain's
    finding, not the MAC's.
    """
    return checkpoint_mac(project_id, seq, entry_hash, "", secret, salt=ENTRY_MAC_SALT)


def seal(entry: MemoryEntry) -> None:
    """Set an entry's ``mac`` and ``key_id`` from its project, seq and hash (before its INSERT)."""
    entry.mac = entry_mac(entry.project_id, entry.seq, entry.hash)
    entry.key_id = key_id()


class EntrySeals:
    """Checks entries' MACs against every known key, each key's id computed once."""

    def __init__(self) -> None:
        self._by_key_id: dict[str, list[str]] = {}
        for secret in _known_secrets():
            self._by_key_id.setdefault(key_id(secret), []).append(secret)

    def problem(self, project_id: str, seq: int, entry_hash: str, mac: str | None,
                signer: str | None) -> str | None:
        """None when the entry's MAC holds; else why not, in words."""
        if not mac:
            return "carries no MAC: it was inserted without going through GedWeb"
        secrets = self._by_key_id.get(signer or "")
        if secrets is None:
            return self.unknown_key(signer)
        for secret in secrets:
            if constant_time_compare(entry_mac(project_id, seq, entry_hash, secret), mac):
                return None
        return ("fails its MAC: it was inserted or re-chained without GedWeb's signing key "
                "(a forged entry or redaction record)")

    def knows(self, signer: str | None) -> bool:
        return (signer or "") in self._by_key_id

    @staticmethod
    def unknown_key(signer: str | None) -> str:
        return (f"is signed with key {signer}, which is neither GEDWEB_SIGNING_KEY nor one "
                "of GEDWEB_SIGNING_KEY_FALLBACKS, and no checkpoint under a known key comes "
                "after it (after a key rotation, keep the old key among the fallbacks until "
                "`memory checkpoint` has covered the head), or its key id was altered")

    def first_forged(self, project_id: str, rows: Iterable[Mapping[str, Any]]
                     ) -> tuple[int, str, int] | None:
        """(seq, why, how many) of the first entry whose MAC fails, or None."""
        first: tuple[int, str] | None = None
        count = 0
        for row in rows:
            why = self.problem(project_id, row["seq"], row["hash"], row["mac"], row["key_id"])
            if why is not None:
                count += 1
                if first is None:
                    first = (row["seq"], why)
        return None if first is None else (*first, count)


def _known_secrets() -> list[str]:
    """Every key a checkpoint may be signed with, the current signing key first.

    The secret keys come last: checkpoints taken before GedWeb had a signing
    key of its own were signed with SECRET_KEY, and verify while it (or a
    fallback) still holds that key.
    """
    return [settings.SIGNING_KEY, *settings.SIGNING_KEY_FALLBACKS,
            settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]


def authentic(project_id: str, checkpoint: Checkpoint, *, salt: str = _MAC_SALT) -> bool:
    """True when the HMAC matches under the key it names (a signing key, or a secret key).

    A checkpoint without a key id is tried under every known key.
    """
    for secret in _known_secrets():
        if checkpoint.key_id and key_id(secret) != checkpoint.key_id:
            continue
        expected = checkpoint_mac(
            project_id, checkpoint.seq, checkpoint.hash, checkpoint.created_at, secret,
            salt=salt,
        )
        if constant_time_compare(expected, checkpoint.mac):
            return True
    return False


def why_not_authentic(checkpoint: Checkpoint) -> str:
    if checkpoint.key_id and checkpoint.key_id not in {key_id(s) for s in _known_secrets()}:
        return (f"is signed with key {checkpoint.key_id}, which is neither GEDWEB_SIGNING_KEY "
                "nor one of GEDWEB_SIGNING_KEY_FALLBACKS (after a key rotation, keep the old key "
                "as a fallback), or it was forged")
    return ("fails its HMAC: forged, or written under a signing key that is neither current "
            "nor a fallback")


# --- the file -----------------------------------------------------------------------------


# Another log of signed heads (the trust ledger, governance/ledger_checkpoints.py)
# keeps a file of its own beside the mirror with these functions: its file
# name, the salt its HMACs are taken under, and where its rows come from.
# The defaults are memory's CHECKPOINTS.

RowSource = Callable[[str, int], Iterable[Checkpoint]]
"""(project id, seq) -> the checkpoints of the project after seq, oldest first."""


def file_path(project_id: str, *, name: str = CHECKPOINTS_NAME) -> Path:
    # Not mirror.project_dir(): reading evidence must not refuse a path the
    # doctor's mirror checks report on their own.
    return mirror.memory_dir(project_id) / name


def parse_line(text: str) -> Checkpoint | None:
    """A well-formed line's checkpoint (HMAC not checked), or None.

    The same for every file: a line names no file, salt or project.
    """
    parts = text.split(" ")
    if _LINE_PARTS.get(parts[0]) != len(parts):
        return None
    if parts[0] == "v1":
        _, seq, head_hash, created_at, mac = parts
        signer = ""
    else:
        _, seq, head_hash, created_at, signer, mac = parts
        if not (len(signer) == 16 and set(signer) <= _HEX):
            return None
    if not (seq.isascii() and seq.isdigit() and seq[0] != "0"):
        return None
    if not all(len(value) == 64 and set(value) <= _HEX for value in (head_hash, mac)):
        return None
    if not created_at or not created_at.isascii() or not created_at.isprintable():
        return None
    return Checkpoint(int(seq), head_hash, created_at, mac, signer)


def _complete_lines(data: bytes) -> list[str]:
    """The file's lines; a last line without its newline (a torn write) is left out."""
    lines = data.split(b"\n")
    return [line.decode("utf-8", errors="replace") for line in lines[:-1]]


def read_file(
    project_id: str, *, name: str = CHECKPOINTS_NAME
) -> tuple[list[tuple[int, str]], str | None]:
    """(line number, text) of every complete line, and why the file could not be read."""
    path = file_path(project_id, name=name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return [], None
        return [], f"cannot read {path}: {exc.strerror}"
    try:
        chunks = []
        while block := os.read(fd, 1 << 20):
            chunks.append(block)
    except OSError as exc:  # a directory in its place opens, and fails here
        return [], f"cannot read {path}: {exc.strerror}"
    finally:
        os.close(fd)
    return list(enumerate(_complete_lines(b"".join(chunks)), start=1)), None


def _last_file_seq(project_id: str, fd: int, size: int, *, salt: str = _MAC_SALT) -> int:
    """The seq of the newest authentic line; the tail is enough unless it is garbage."""
    probe = os.pread(fd, min(size, _TAIL_PROBE_BYTES), max(size - _TAIL_PROBE_BYTES, 0))
    lines = _complete_lines(probe)
    if size > _TAIL_PROBE_BYTES:
        lines = lines[1:]  # the first one may start mid-line
    for text in reversed(lines):
        parsed = parse_line(text)
        if parsed is not None and authentic(project_id, parsed, salt=salt):
            return parsed.seq
    if size <= _TAIL_PROBE_BYTES:
        return 0
    whole = os.pread(fd, size, 0)
    seqs = [
        parsed.seq
        for parsed in map(parse_line, _complete_lines(whole))
        if parsed is not None and authentic(project_id, parsed, salt=salt)
    ]
    return max(seqs, default=0)


def _memory_rows(project_id: str, after: int) -> Iterator[Checkpoint]:
    return _rows(project_id, seq__gt=after)


def sync_file(
    project_id: str, wait: float | None = None, *, name: str = CHECKPOINTS_NAME,
    salt: str = _MAC_SALT, rows: RowSource | None = None,
) -> int:
    """Append every authentic checkpoint row newer than the file's newest line.

    Runs under the mirror's flock. Lines are only ever appended, fsynced,
    and never rewritten; the one exception is the unterminated fragment a
    crash can leave after the last newline, which no reader counts and which
    is cut before the next append. No file is created while there is nothing
    to write. Returns the number of lines written. ``wait`` bounds the wait
    for the lock (BlockingIOError after it); None waits as appends do.
    ``name``, ``salt`` and ``rows`` pick the file, the HMAC salt and the
    rows it is caught up from (by default CHECKPOINTS from the table).
    """
    source = rows if rows is not None else _memory_rows
    with mirror._locked(project_id, wait) as directory:
        path = directory / name
        existed = os.path.lexists(path)
        flags = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW
        fd = os.open(path, flags) if existed else None
        try:
            last_seq = 0
            if fd is not None:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    size = os.pread(fd, size, 0).rfind(b"\n") + 1
                    os.ftruncate(fd, size)
                last_seq = _last_file_seq(project_id, fd, size, salt=salt) if size else 0
            new = [
                checkpoint
                for checkpoint in source(project_id, last_seq)
                if authentic(project_id, checkpoint, salt=salt)
            ]
            if not new:
                return 0
            if fd is None:
                fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
            mirror._write_all(fd, "".join(row.line() for row in new).encode())
            os.fsync(fd)
        finally:
            if fd is not None:
                os.close(fd)
        if not existed:
            mirror._fsync_dir(directory)
    return len(new)


# --- the table ----------------------------------------------------------------------------


def _rows(project_id: str, **filters: Any) -> Iterator[Checkpoint]:
    rows = (
        ChainCheckpoint.objects.filter(project_id=project_id, **filters)
        .order_by("seq")
        .values_list("seq", "hash", "created_at", "mac", "key_id")
    )
    for seq, head_hash, created_at, mac, signer in rows:
        yield Checkpoint(seq, head_hash, format_timestamp(created_at), mac, signer or "")


def recorded_at(project_id: str, seq: int) -> list[Checkpoint]:
    """The authentic checkpoint rows at seq (at most one: UNIQUE(project, seq))."""
    return [c for c in _rows(project_id, seq=seq) if authentic(project_id, c)]


class UnsignedEntry(Exception):
    """A checkpoint would vouch for an entry that fails its MAC: none is taken."""


def _refuse_over_forged(project_id: str, seq: int) -> None:
    """Raise UnsignedEntry unless every entry since the newest checkpoint carries its MAC.

    A checkpoint vouches for the chain up to its head; the ones before it
    vouched for what came before (and each was taken under this rule), so
    only the entries since are read: CHECKPOINT_EVERY of them on the
    automatic path.
    """
    newest = (ChainCheckpoint.objects.filter(project_id=project_id, seq__lt=seq)
              .order_by("-seq").values_list("seq", flat=True).first()) or 0
    rows = (MemoryEntry.objects.filter(project_id=project_id, seq__gt=newest, seq__lte=seq)
            .order_by("seq").values("seq", "hash", "mac", "key_id"))
    found = EntrySeals().first_forged(project_id, rows.iterator(chunk_size=2000))
    if found is not None:
        bad, why, count = found
        raise UnsignedEntry(f"no checkpoint at seq {seq}: the entry at seq {bad} {why}"
                            + (f" ({count - 1} more)" if count > 1 else ""))


def take(project_id: str, seq: int, head_hash: str) -> Checkpoint | None:
    """Record (seq, hash) as a head the log had; None if already recorded at seq.

    Raises UnsignedEntry, and records nothing, when an entry since the
    newest checkpoint fails its MAC: a checkpoint never signs over a forgery.
    """
    _refuse_over_forged(project_id, seq)
    created_at = timezone.now()
    text = format_timestamp(created_at)
    mac = checkpoint_mac(project_id, seq, head_hash, text)
    signer = key_id()
    try:
        with transaction.atomic():
            ChainCheckpoint.objects.create(
                project_id=project_id, seq=seq, hash=head_hash, created_at=created_at, mac=mac,
                key_id=signer,
            )
    except IntegrityError:
        # UNIQUE(project, seq): this seq is on record already. If its hash
        # differs, the log was rewritten and verify() says so; the first
        # record is the evidence and stays.
        return None
    return Checkpoint(seq, head_hash, text, mac, signer)


def after_commit(project_id: str, seq: int, head_hash: str) -> None:
    """Runs after entry ``seq`` commits (every CHECKPOINT_EVERY entries): never raises."""
    try:
        if take(project_id, seq, head_hash) is not None and settings.MIRROR_WRITER == "inline":
            sync_file(project_id)
    except Exception:
        # The entry is committed; the next checkpoint, verify or the
        # follower records the head and catches the file up.
        logger.exception("checkpoint of project %s at seq %s failed", project_id, seq)


@dataclass(frozen=True)
class FollowedFile:
    """Another signed file beside the mirror that `memory mirror --follow` keeps current.

    memory cannot import the apps built on it (dependencies point one way),
    so they register here from their AppConfig.ready: ``head`` gives the
    newest seq of the file's rows (the follower syncs when it moves) and
    ``sync`` catches the file up (like sync_file).
    """

    name: str
    head: Callable[[str], int]
    sync: Callable[[str], int]


_FOLLOWED: dict[str, FollowedFile] = {}


def follow_file(followed: FollowedFile) -> None:
    """Have the follower keep ``followed`` current too (idempotent, by file name)."""
    _FOLLOWED[followed.name] = followed


def followed_files() -> tuple[FollowedFile, ...]:
    return tuple(_FOLLOWED.values())


def due(first_seq: int, last_seq: int) -> bool:
    """True when an append of first_seq..last_seq reaches a multiple of CHECKPOINT_EVERY."""
    every = settings.CHECKPOINT_EVERY
    return last_seq // every > (first_seq - 1) // every


# --- verification -------------------------------------------------------------------------


def file_checkpoints(
    project_id: str, *, name: str = CHECKPOINTS_NAME, salt: str = _MAC_SALT
) -> tuple[list[tuple[int, Checkpoint]], list[Problem]]:
    """(line number, checkpoint) of every authentic line of a file, and what is wrong
    with the others: unparsable or failing its HMAC (forged_checkpoint), or the file
    unreadable (unreadable_checkpoints)."""
    lines, unreadable = read_file(project_id, name=name)
    problems: list[Problem] = []
    if unreadable is not None:
        problems.append(Problem("unreadable_checkpoints", None, unreadable))
    found: list[tuple[int, Checkpoint]] = []
    for number, text in lines:
        parsed = parse_line(text)
        if parsed is None:
            problems.append(Problem(
                "forged_checkpoint", None, f"{name} line {number} is not a checkpoint"
            ))
        elif not authentic(project_id, parsed, salt=salt):
            problems.append(Problem(
                "forged_checkpoint", parsed.seq,
                f"{name} line {number} (seq {parsed.seq}) {why_not_authentic(parsed)}",
            ))
        else:
            found.append((number, parsed))
    return found, problems


def _recorded(project_id: str) -> tuple[list[Checkpoint], list[Problem]]:
    """Authentic checkpoints from the table and the file, and what is wrong with the rest."""
    # The file first: a line is written only after its row commits, so every
    # line read here has its row visible to the query below, and a
    # checkpoint taken meanwhile is never mistaken for a deleted row.
    lines, line_problems = file_checkpoints(project_id)
    problems: list[Problem] = []
    database: list[Checkpoint] = []
    for checkpoint in _rows(project_id):
        if authentic(project_id, checkpoint):
            database.append(checkpoint)
        else:
            problems.append(Problem(
                "forged_checkpoint", checkpoint.seq,
                f"the checkpoint row at seq {checkpoint.seq} {why_not_authentic(checkpoint)}",
            ))
    in_database = set(database)
    from_file: list[Checkpoint] = []
    problems.extend(line_problems)
    for number, parsed in lines:
        if parsed not in in_database:
            from_file.append(parsed)
            problems.append(Problem(
                "deleted_checkpoint", parsed.seq,
                f"the checkpoint at seq {parsed.seq} of {parsed.created_at} is in "
                f"{CHECKPOINTS_NAME} line {number} but not in the database: checkpoint rows "
                "were deleted",
            ))
    return sorted(in_database | set(from_file), key=lambda c: (c.seq, c.created_at)), problems


def _diagnose(project_id: str, position: int) -> str:
    """Which kind of change breaks the link at ``position`` (1-based, in seq order).

    Reads the rows around it once more; only a failed verification pays for it.
    """
    rows = MemoryEntry.objects.filter(project_id=project_id).chain_rows()
    window = list(islice(rows, max(position - 2, 0), position + 1))
    offset = 1 if position >= 2 else 0
    before = window[0] if offset else None
    row = window[offset]
    after = window[offset + 1] if len(window) > offset + 1 else None
    if row["seq"] != position:
        if row["seq"] > position:
            return (f"seq {position} is missing: the entry after seq {position - 1} "
                    f"has seq {row['seq']} (deleted, renumbered or reordered)")
        return f"seq {row['seq']} appears again at position {position} (duplicated or reordered)"
    linked = before["hash"] if before else GENESIS_HASH
    if row["prev_hash"] != linked:
        return (f"the prev_hash of seq {position} is not the hash of "
                + (f"seq {position - 1}" if before else "the genesis")
                + " (prev_hash altered, or an entry inserted, duplicated or swapped)")
    # The next entry's prev_hash tells which side changed: it still names
    # either the stored hash (the fields changed) or the recomputed one.
    computed = entry_hash(row["prev_hash"], row)
    if computed == row["hash"] and row["content_sha256"] is not None:
        # The link holds, so the content is what no longer fits (chain format 2).
        if row["redacts"] is not None:
            return (f"seq {position} is the redaction record of an entry whose content is "
                    "not its notice (the content was restored or the entry swapped)")
        return (f"the content of seq {position} is neither the text its content_sha256 "
                "names nor the notice of a redaction record (content altered)")
    if row["content_sha256"] is None and row["redacts"] is not None:
        return f"seq {position} is in chain format 1 but names an entry it redacts (added since)"
    if after is not None and after["prev_hash"] == computed:
        return f"the stored hash of seq {position} was altered"
    if after is not None and after["prev_hash"] == row["hash"]:
        return (f"the chained fields of seq {position} no longer match its stored hash "
                "(author, category, content or its content_sha256, corrects, created_at, "
                "project_id, redacts, seq or source altered)")
    return f"the stored hash of seq {position} does not match its chained fields"


def verify(project_id: str, on_entry: Callable[[int], object] | None = None) -> VerifyReport:
    """Every link of the chain, then the log against every authentic checkpoint.

    on_entry(1) runs after each entry is read (a command's progress bar).
    """
    checkpoints, problems = _recorded(project_id)
    wanted = {checkpoint.seq for checkpoint in checkpoints}
    stored: dict[int, str] = {}
    last_seq = 0
    seals = EntrySeals()
    # An entry signed with a key no longer known (rotated out) still stands
    # when an authentic checkpoint the log matches comes after it: the
    # checkpoint vouches for every entry up to its head, and none is taken
    # over an entry that failed its MAC then (take()). So those wait for the
    # next matching checkpoint; any other MAC failure is final.
    signed_heads = {(c.seq, c.hash) for c in checkpoints}
    forged: list[tuple[int, str]] = []  # (seq, why) of the first entry whose MAC fails
    forged_count = 0
    unvouched: list[tuple[int, str]] = []  # the first of the unknown-key ones since
    unvouched_count = 0

    def rows() -> Iterator[Mapping[str, Any]]:
        nonlocal last_seq, forged_count, unvouched_count
        for row in MemoryEntry.objects.filter(project_id=project_id).chain_rows(sealed=True):
            last_seq = max(last_seq, row["seq"])
            if row["seq"] in wanted:
                stored.setdefault(row["seq"], row["hash"])
            why = seals.problem(project_id, row["seq"], row["hash"], row["mac"], row["key_id"])
            if why is not None and row["mac"] and not seals.knows(row["key_id"]):
                unvouched_count += 1
                if not unvouched:
                    unvouched.append((row["seq"], why))
            elif why is not None:
                forged_count += 1
                if not forged:
                    forged.append((row["seq"], why))
            if (row["seq"], row["hash"]) in signed_heads:
                unvouched.clear()
                unvouched_count = 0
            yield row
            if on_entry is not None:
                on_entry(1)

    chain = verify_chain(rows())
    if chain.first_bad_seq is not None:
        problems.insert(0, Problem(
            "chain_broken", chain.first_bad_seq,
            f"hash chain breaks at seq {chain.first_bad_seq} (of {chain.entries} entries): "
            + _diagnose(project_id, chain.first_bad_seq),
        ))
    failing = sorted(forged + unvouched)
    if failing:
        seq, why = failing[0]
        count = forged_count + unvouched_count
        more = f" ({count - 1} later entries fail too)" if count > 1 else ""
        problems.append(Problem("forged_entry", seq, f"the entry at seq {seq} {why}{more}"))
    beyond = [checkpoint for checkpoint in checkpoints if checkpoint.seq > last_seq]
    if beyond:
        newest = beyond[-1]
        problems.append(Problem(
            "truncated", last_seq + 1,
            f"log shorter than checkpoint: the checkpoint of {newest.created_at} recorded seq "
            f"{newest.seq}, the log ends at seq {last_seq}; seq {last_seq + 1} is the first "
            "missing",
        ))
    forks = [c for c in checkpoints if c.seq <= last_seq and stored.get(c.seq) != c.hash]
    if forks:
        first = forks[0]
        found = stored.get(first.seq)
        problems.append(Problem(
            "fork", first.seq,
            f"head hash mismatch at seq {first.seq}: the checkpoint of {first.created_at} "
            f"recorded {first.hash[:16]}, the log has "
            + (f"{found[:16]}" if found else "no entry with that seq")
            + " (the entry was replaced, or history up to it was rewritten)",
        ))
    # What locates a break first, then what is wrong with the evidence itself.
    problems.sort(key=lambda problem: PROBLEM_KINDS.index(problem.kind))
    located = [problem.seq for problem in problems
               if problem.kind in ("chain_broken", "forged_entry", "truncated", "fork")]
    matching = [c for c in checkpoints if stored.get(c.seq) == c.hash]
    return VerifyReport(
        ok=not problems,
        entries=chain.entries,
        head=chain.head,
        first_bad_seq=min((seq for seq in located if seq is not None), default=None),
        checkpoint=matching[-1] if matching else None,
        problems=problems,
        redacted=chain.redacted,
    )
