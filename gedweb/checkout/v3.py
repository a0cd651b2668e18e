"""GedPi's durable-memory v3 migration of a checkout (gedpi-behaviour.md §6.1-6.8).

A faithful port of GedPi's ``migrateDurableMemory`` (memory-migration.ts): the
same paths, JSON shapes, entry order, reasons and error messages, so a
checkout migrated here is indistinguishable to GedPi from one GedPi migrated,
and GedPi and GedWeb processes can share the lock directory.

Step order (each destructive step is journaled first):
  A. delete byte-exact placeholders (Appendix A);
  B. glossary -> appended once to root CONTEXT.md, source replaced by a pointer;
  C. decisions -> content-addressed ADR, source replaced by a pointer;
  D. global task files -> a work item's tasks/ folder when exactly one owns them;
  E-G. everything else under the legacy paths is backed up and reported;
  H. (GedWeb, gap G-9) files GedPi skips silently are backed up and reported;
  then the completion record, written last and create-only.

Deviations from GedPi are listed in docs/migration.md; each is marked
"GedWeb:" below. Everything touches the checkout through gedweb.checkout.safefs.
"""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import re
import stat
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gedweb.checkout import safefs
from gedweb.checkout.safefs import READ, WRITE, UnsafePath, sha256_hex
from gedweb.failpoints import failpoint
from gedweb.lib.gedpi_placeholders import PLACEHOLDERS, template_variant
from gedweb.lib.governance import WORK_ID_RE, format_time

MIGRATION_ID = "durable-memory-v3"
SCHEMA_VERSION = 1
STATE_PATH = ".ged/MEMORY-MIGRATION.json"
RUNTIME = ".ged/runtime/migrations/durable-memory-v3"
JOURNAL_PATH = f"{RUNTIME}/JOURNAL.json"
LOCKS_DIR = f"{RUNTIME}/LOCKS"
BACKUPS_DIR = f"{RUNTIME}/backups"
GLOSSARY_PATH = ".ged/GLOSSARY.md"
DECISIONS_PATH = ".ged/DECISIONS.md"
CONTEXT_PATH = "CONTEXT.md"

ACTIONS = (
    "removed-placeholder",
    "migrated-context",
    "migrated-decisions",
    "migrated-task-artifact",
    "retained-substantive",
)
ENTRY_FIELDS = ("sourcePath", "action", "sha256", "backupPath", "destinationPath", "reason")

# GedPi's reasons, verbatim (§6.6-6.7).
REASON_NO_OWNER = "Legacy task artifact has no unambiguous active work destination."
REASON_DEST_DIFFERS = "Work-scoped task destination contains different bytes."
REASON_CHANGED_AFTER_COPY = (
    "Legacy task source changed after copy; preserved for manual reconciliation."
)
REASON_AMBIGUOUS = "No unambiguous canonical destination; preserved in place."
REASON_SKILLS = (
    "Legacy task-generated or edited skills lack unchanged provenance; quarantined from "
    "native .agents/skills discovery until explicitly promoted."
)
REASON_GLOBAL = "Legacy global artifact has no unambiguous canonical work destination."

# GedWeb's own reasons for what GedPi skips silently (gap G-9).
REASON_TASK_SUBDIR = (
    "Legacy task subdirectory is not a recognised task artifact layout; preserved in place."
)
REASON_BRANCH_WORK = (
    "Legacy branch-scoped work artifact has no generated work identity; preserved in place."
)
REASONS_KEPT_CANONICAL = {
    ".ged/PROJECT.md": "Substantive project summary is already canonical; preserved in place.",
    ".ged/STANDARDS.md": (
        "Imported standards snapshot stays in place; only an explicit standards import "
        "regenerates it."
    ),
    ".ged/SKILLS-STATE.json": (
        "Skill provenance registry stays in place; records without hashes remain "
        "legacy-unverified."
    ),
    ".pi/agents/ged-brain.md": (
        "Edited legacy brain agent definition has no canonical destination; preserved in place."
    ),
}

AMBIGUOUS_LEGACY_PATHS = (
    ".ged/CONFIG.md",
    ".ged/CONTEXT-MAP.md",
    ".ged/ARCHITECTURE.md",
    ".ged/PATTERNS.md",
    ".ged/IDEAS.md",
    ".ged/PROGRESS.md",
    ".ged/SKILLS.md",
)
LEGACY_DIRS = ("tasks", "project-skills", "plans", "research", "specs")
GLOBAL_DIRS = ("plans", "research", "specs")

LOCK_NAME_RE = re.compile(r"[a-f0-9-]{36}\.json")
TOKEN_RE = re.compile(r"[a-f0-9-]{36}")
HEX64_RE = re.compile(r"[a-f0-9]{64}")
TASK_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
TASK_PATTERNS = (
    (re.compile(r"([A-Za-z0-9._-]+)-BRIEF\.md"), "BRIEF.md"),
    (re.compile(r"([A-Za-z0-9._-]+)\.history\.json"), "HISTORY.json"),
    (re.compile(r"([A-Za-z0-9._-]+)-RECOVERY\.md"), "RECOVERY.md"),
)

# GedWeb (gap G-10): a GedWeb lock carries a flock-held sidecar; its name is
# outside GedPi's lock pattern, so GedPi ignores it.
SIDECAR_SUFFIX = ".flock"
DEFAULT_WAIT_SECONDS = 30.0
POLL_SECONDS = 0.025

# ECMAScript WhiteSpace + LineTerminator: what String.prototype.trim/trimEnd remove.
JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


class MigrationError(Exception):
    """The migration refused to continue; the message is GedPi's where GedPi has one."""


@dataclass
class MigrationHooks:
    """Test seams at GedPi's hook points (``beforeSourceCommit``/``afterSourceCommit``).

    ``before_commit(source_path)`` runs after a source was read and backed up,
    right before the migration re-checks it and commits; ``after_commit`` runs
    after the source was replaced or removed.
    """

    before_commit: Callable[[str], None] | None = None
    after_commit: Callable[[str], None] | None = None


@dataclass
class V3Result:
    status: str  # "not-needed" | "completed" | "already-complete"
    entries: list[dict[str, Any]] = field(default_factory=list)
    state: dict[str, Any] | None = None


# --- small helpers ----------------------------------------------------------------------


def dump_json(value: Any) -> bytes:
    """GedPi's ``JSON.stringify(value, null, 2) + "\\n"``."""
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def _parse_json(data: bytes) -> Any:
    # Buffer.toString("utf8") replaces invalid sequences; JSON.parse has no NaN.
    return json.loads(data.decode("utf-8", errors="replace"), parse_constant=_reject_constant)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def js_trim(text: str) -> str:
    return text.strip(JS_WHITESPACE)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_date(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _collation_key(name: str) -> tuple[list[tuple[int, int]], list[int]]:
    """Approximates Node's ``localeCompare`` (ICU root collation) for file names.

    GedPi's recursive walk sorts each directory with localeCompare: punctuation
    before digits before letters, letters case-insensitively first, lower case
    before upper case on ties. Exact for ASCII names; others fall back to code
    points after the letters.
    """
    punctuation = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"
    primary: list[tuple[int, int]] = []
    tertiary: list[int] = []
    for char in name:
        if char in " \t":
            primary.append((0, ord(char)))
        elif char in punctuation:
            primary.append((1, punctuation.index(char)))
        elif char.isascii() and char.isdigit():
            primary.append((2, ord(char)))
        elif char.isascii() and char.isalpha():
            primary.append((3, ord(char.lower())))
        else:
            primary.append((4, ord(char)))
        tertiary.append(1 if char.isupper() else 0)
    return primary, tertiary


def _lstat(root: Path, rel: str) -> os.stat_result | None:
    try:
        return os.lstat(safefs.check(root, rel))
    except (FileNotFoundError, NotADirectoryError):
        return None


def _is_real_dir(root: Path, rel: str) -> bool:
    info = _lstat(root, rel)
    return info is not None and stat.S_ISDIR(info.st_mode)


def _read(root: Path, rel: str) -> bytes | None:
    try:
        return safefs.read_bytes(root, rel)
    except NotADirectoryError:
        return None


def _gedpi_walk(root: Path, rel_dir: str) -> list[str]:
    """GedPi's ``walkRegularFiles``: depth first, each level in localeCompare order.

    Symlinks and special files are skipped (a Dirent that is neither a file nor a
    directory); a missing or unreadable directory yields nothing. The directory
    itself is checked for symlinks on the way first.
    """
    safefs.check(root, rel_dir, READ)
    if not _is_real_dir(root, rel_dir):
        return []
    found: list[str] = []
    entries = sorted(os.scandir(Path(root) / rel_dir), key=lambda e: _collation_key(e.name))
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}"
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode):
            found.extend(_gedpi_walk(root, rel))
        elif stat.S_ISREG(mode):
            found.append(rel)
    return found


def _top_level(root: Path, rel_dir: str) -> tuple[list[str], list[str]]:
    """Regular files and real subdirectories directly in ``rel_dir`` (JS ``sort()``)."""
    safefs.check(root, rel_dir, READ)
    if not _is_real_dir(root, rel_dir):
        return [], []
    files: list[str] = []
    dirs: list[str] = []
    for entry in os.scandir(Path(root) / rel_dir):
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISREG(mode):
            files.append(entry.name)
        elif stat.S_ISDIR(mode):
            dirs.append(entry.name)
    return sorted(files), sorted(dirs)


def marker(kind: str, sha256: str) -> str:
    return f"ged-memory-v3:{kind}:{sha256}"


def adr_path(sha256: str) -> str:
    return f"docs/adr/0000-migrated-ged-decisions-{sha256[:12]}.md"


def glossary_pointer(sha256: str) -> str:
    return (
        "# Glossary moved\n\nCanonical project and domain vocabulary now lives in "
        f"[../CONTEXT.md](../CONTEXT.md).\n\nMigration content hash: {sha256}\n"
    )


def decisions_pointer(sha256: str) -> str:
    dest = adr_path(sha256)
    return (
        f"# Decisions moved\n\nCanonical durable decisions now live in [../{dest}](../{dest})."
        f"\n\nMigration content hash: {sha256}\n"
    )


def context_section(glossary: str, sha256: str) -> str:
    mark = marker("context", sha256)
    newline = "" if glossary.endswith("\n") else "\n"
    return (
        f"<!-- {mark}:begin -->\n## Migrated Ged glossary\n\n{glossary}{newline}"
        f"<!-- {mark}:end -->\n"
    )


def context_after_append(existing: str, glossary: str, sha256: str) -> str:
    """GedPi's CONTEXT.md bytes: trailing whitespace trimmed (kept for faithfulness)."""
    prefix = existing.rstrip(JS_WHITESPACE)
    head = f"{prefix}\n\n" if prefix else "# Project Context\n\n"
    return head + context_section(glossary, sha256)


def adr_text(decisions: str, sha256: str) -> str:
    mark = marker("decisions", sha256)
    newline = "" if decisions.endswith("\n") else "\n"
    return (
        f"# ADR 0000: Migrated Ged decisions\n\nStatus: migrated\n\n<!-- {mark}:begin -->\n"
        f"{decisions}{newline}<!-- {mark}:end -->\n"
    )


def backup_path(source_path: str) -> str:
    return f"{BACKUPS_DIR}/{source_path}"


def make_entry(source_path: str, action: str, *, sha256: str | None = None,
               backup: str | None = None, destination: str | None = None,
               reason: str | None = None) -> dict[str, Any]:
    """An entry with GedPi's key order; absent fields are left out, never null."""
    entry: dict[str, Any] = {"sourcePath": source_path, "action": action}
    for key, value in (("sha256", sha256), ("backupPath", backup),
                       ("destinationPath", destination), ("reason", reason)):
        if value is not None:
            entry[key] = value
    return entry


def entry_key(entry: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(entry.get(name) for name in ENTRY_FIELDS)


# --- validation (GedPi's parseMigrationEntry and friends) -------------------------------


def _safe_migration_path(value: Any) -> bool:
    return (
        isinstance(value, str)
        and len(value) > 0
        and not value.startswith("/")
        and ".." not in re.split(r"[\\/]", value)
    )


def parse_entry(value: Any) -> dict[str, Any]:
    invalid = MigrationError("Ged durable-memory migration entry is invalid.")
    if not isinstance(value, dict):
        raise invalid
    action = value.get("action")
    if (
        not _safe_migration_path(value.get("sourcePath"))
        or not isinstance(action, str)
        or action not in ACTIONS
        or ("sha256" in value and not (
            isinstance(value["sha256"], str) and HEX64_RE.fullmatch(value["sha256"])))
        or ("backupPath" in value and not _safe_migration_path(value["backupPath"]))
        or ("destinationPath" in value and not _safe_migration_path(value["destinationPath"]))
        or ("reason" in value and not (
            isinstance(value["reason"], str) and js_trim(value["reason"])))
    ):
        raise invalid
    if action == "removed-placeholder" and (
        "sha256" in value or "backupPath" in value or "destinationPath" in value
    ):
        raise MigrationError("Ged placeholder migration entry is invalid.")
    if action != "removed-placeholder" and ("sha256" not in value or "backupPath" not in value):
        raise MigrationError("Ged substantive migration entry lacks backup evidence.")
    if action.startswith("migrated-") and "destinationPath" not in value:
        raise MigrationError("Ged migrated entry lacks a destination.")
    if action == "retained-substantive" and not value.get("reason"):
        raise MigrationError("Ged retained migration entry lacks a reason.")
    return value


def read_completion(root: Path) -> dict[str, Any] | None:
    """The valid completion record, None when absent; MigrationError when invalid."""
    raw = _read(root, STATE_PATH)
    if raw is None:
        return None
    try:
        value = _parse_json(raw)
    except ValueError:
        raise MigrationError("Ged durable-memory migration state is malformed.") from None
    if (
        not isinstance(value, dict)
        or not (_is_number(value.get("schemaVersion")) and value["schemaVersion"] == 1)
        or value.get("migrationId") != MIGRATION_ID
        or value.get("status") != "complete"
        or not _is_date(value.get("completedAt"))
        or not isinstance(value.get("entries"), list)
    ):
        raise MigrationError("Ged durable-memory migration state is unsupported.")
    value["entries"] = [parse_entry(entry) for entry in value["entries"]]
    return value


def read_journal(root: Path) -> list[dict[str, Any]]:
    raw = _read(root, JOURNAL_PATH)
    if raw is None:
        return []
    try:
        journal = _parse_json(raw)
    except ValueError:
        raise MigrationError("Ged durable-memory migration journal is malformed.") from None
    if (
        not isinstance(journal, dict)
        or not (_is_number(journal.get("schemaVersion")) and journal["schemaVersion"] == 1)
        or journal.get("migrationId") != MIGRATION_ID
        or not isinstance(journal.get("entries"), list)
    ):
        raise MigrationError("Ged durable-memory migration journal is unsupported.")
    return [parse_entry(entry) for entry in journal["entries"]]


def _journal_evidence(root: Path) -> list[dict[str, Any]]:
    """Journal entries for pointer evidence; an invalid journal gives none (the run reports it)."""
    try:
        return read_journal(root)
    except MigrationError:
        return []


# --- pointer trust (GedWeb, gap G-9) ----------------------------------------------------

_POINTER_HASH_RE = re.compile(r"Migration content hash: ([a-f0-9]{64})\n")


def trusted_pointer(root: Path, source_path: str, data: bytes,
                    journal: list[dict[str, Any]]) -> bool:
    """Is ``data`` a pointer this migration (GedPi's or GedWeb's) really wrote?

    GedPi trusts any file starting with ``# Glossary moved`` / ``# Decisions moved``.
    GedWeb trusts it only when the bytes are exactly the pointer text for some
    hash H and H is backed by evidence: a journal entry for the source with H,
    a backup of the source whose SHA-256 is H, or the destination carrying the
    ``ged-memory-v3:<kind>:H`` marker. Anything else is migrated as content.
    """
    text = _text(data)
    match = _POINTER_HASH_RE.search(text)
    if match is None:
        return False
    digest = match.group(1)
    if source_path == GLOSSARY_PATH:
        expected, action, kind, dest = glossary_pointer(digest), "migrated-context", "context", \
            CONTEXT_PATH
    else:
        expected, action, kind, dest = decisions_pointer(digest), "migrated-decisions", \
            "decisions", adr_path(digest)
    if text != expected:
        return False
    for entry in journal:
        if (entry.get("sourcePath"), entry.get("action"), entry.get("sha256")) == (
            source_path, action, digest
        ):
            return True
    backup = _read(root, backup_path(source_path))
    if backup is not None and sha256_hex(backup) == digest:
        return True
    destination = _read(root, dest)
    return destination is not None and marker(kind, digest) in _text(destination)


def _pointer_prefix(source_path: str) -> str:
    return "# Glossary moved" if source_path == GLOSSARY_PATH else "# Decisions moved"


def _needs_move(root: Path, source_path: str, data: bytes | None,
                journal: list[dict[str, Any]]) -> bool:
    if data is None:
        return False
    if not _text(data).startswith(_pointer_prefix(source_path)):
        return True
    return not trusted_pointer(root, source_path, data, journal)


# --- status (§6.1) ----------------------------------------------------------------------


def parse_version(data: bytes) -> int | None:
    """``Number.parseInt(text.trim(), 10)``: a leading integer, or None (NaN)."""
    match = re.match(r"[+-]?[0-9]+", js_trim(_text(data)))
    return int(match.group(0)) if match else None


def _placeholder_present(root: Path, source_path: str, text: str) -> bool:
    safefs.check(root, source_path, READ)
    data = _read(root, source_path)
    return data is not None and _text(data) == text


def has_actionable_legacy_memory(root: Path) -> bool:
    for source_path, text in PLACEHOLDERS:
        if _placeholder_present(root, source_path, text):
            return True
    journal = _journal_evidence(root)
    for source_path in (GLOSSARY_PATH, DECISIONS_PATH):
        safefs.check(root, source_path, READ)
        if _needs_move(root, source_path, _read(root, source_path), journal):
            return True
    for directory in LEGACY_DIRS:
        files = _gedpi_walk(root, f".ged/{directory}")
        if any(path.rsplit("/", 1)[-1] != "README.md" for path in files):
            return True
    return False


def migration_status(root: Path) -> str:
    """"complete", "not-needed" or "needed"; reads only (§6.1)."""
    root = Path(root)
    if read_completion(root) is not None:
        return "complete"
    version = _read(root, ".ged/VERSION")
    if version is None:
        return "not-needed"
    parsed = parse_version(version)
    if parsed is not None and parsed >= 3 and not has_actionable_legacy_memory(root):
        return "not-needed"
    return "needed"


# --- the lock (§6.2, with GedWeb's G-10 improvements) -----------------------------------


@dataclass
class LockOwner:
    pid: int
    token: str
    started_at: str


@dataclass
class LockCandidate:
    rel: str
    owner: LockOwner
    mtime_ns: int
    inode: int


def parse_lock(raw: bytes) -> LockOwner:
    try:
        value = _parse_json(raw)
    except ValueError:
        raise MigrationError("Ged durable-memory migration lock is malformed.") from None
    pid = value.get("pid") if isinstance(value, dict) else None
    if (
        not isinstance(value, dict)
        or not (_is_number(value.get("schemaVersion")) and value["schemaVersion"] == 1)
        or not _is_number(pid)
        or not (math.isfinite(pid) and float(pid).is_integer())
        or not 0 < pid <= 2**53 - 1
        or not isinstance(value.get("token"), str)
        or not TOKEN_RE.fullmatch(value["token"])
        or not _is_date(value.get("startedAt"))
    ):
        raise MigrationError("Ged durable-memory migration lock is invalid.")
    return LockOwner(int(pid), value["token"], value["startedAt"])


def pid_alive(pid: int) -> bool:
    """GedPi's probe: signal 0 succeeds, or fails with EPERM (someone else's process)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def read_lock_candidates(root: Path) -> list[LockCandidate]:
    base = safefs.check(root, LOCKS_DIR, READ)
    if not _is_real_dir(root, LOCKS_DIR):
        return []
    names = sorted(name for name in os.listdir(base) if LOCK_NAME_RE.fullmatch(name))
    candidates = []
    for name in names:
        rel = f"{LOCKS_DIR}/{name}"
        raw = _read(root, rel)
        if raw is None:
            continue
        owner = parse_lock(raw)
        if f"{owner.token}.json" != name:
            raise MigrationError("Ged durable-memory migration lock token is invalid.")
        info = _lstat(root, rel)
        if info is None:
            continue
        candidates.append(LockCandidate(rel, owner, info.st_mtime_ns, info.st_ino))
    return candidates


def holder_alive(root: Path, owner: LockOwner, own_token: str | None = None) -> bool:
    """Is the process behind a lock still there?

    GedWeb's locks have a ``<token>.flock`` sidecar whose flock the holder keeps
    for its whole life; the kernel drops it when the process dies, so a free
    flock means a dead holder even when the PID has been reused. Locks without
    a sidecar (GedPi's) fall back to GedPi's PID probe.
    """
    if owner.token == own_token:
        return True
    sidecar = safefs.check(root, f"{LOCKS_DIR}/{owner.token}{SIDECAR_SUFFIX}", READ)
    try:
        fd = os.open(sidecar, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return pid_alive(owner.pid)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also drops the probe's own flock
    return False


def _quarantine(root: Path, candidate: LockCandidate) -> None:
    stale = safefs.check(root, f"{RUNTIME}/STALE-{candidate.owner.token}.json", WRITE)
    try:
        os.rename(safefs.check(root, candidate.rel, WRITE), stale)
    except OSError:
        pass  # another recovering process already moved this token's lock
    sidecar = Path(root) / LOCKS_DIR / f"{candidate.owner.token}{SIDECAR_SUFFIX}"
    try:
        os.unlink(sidecar)
    except OSError:
        pass


class _Lock:
    """This process's lock: ``LOCKS/<token>.json`` plus its flock-held sidecar."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.token = str(uuid.uuid4())
        self.rel = f"{LOCKS_DIR}/{self.token}.json"
        self.sidecar_rel = f"{LOCKS_DIR}/{self.token}{SIDECAR_SUFFIX}"
        self.fd: int | None = None

    def publish(self) -> None:
        locks = safefs.make_dirs(self.root, LOCKS_DIR)
        # The sidecar is locked before it gets its name, so no prober ever sees it
        # unlocked while this process lives.
        temp = locks / f".gedweb-lock-{uuid.uuid4().hex}"
        fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.link(temp, locks / f"{self.token}{SIDECAR_SUFFIX}", follow_symlinks=False)
        except BaseException:
            os.close(fd)
            raise
        finally:
            temp.unlink(missing_ok=True)
        self.fd = fd
        owner = {
            "schemaVersion": 1,
            "pid": os.getpid(),
            "token": self.token,
            "startedAt": format_time(datetime.now(UTC)),
        }
        if not safefs.publish_exclusive(self.root, self.rel, dump_json(owner)):
            raise MigrationError("Ged durable-memory migration lock token collided.")

    def release(self) -> None:
        try:
            raw = _read(self.root, self.rel)
            if raw is not None and parse_lock(raw).token == self.token:
                safefs.remove(self.root, self.rel)
        finally:
            try:
                os.unlink(Path(self.root) / self.sidecar_rel)
            except OSError:
                pass
            if self.fd is not None:
                os.close(self.fd)
                self.fd = None


def _acquire(root: Path, lock: _Lock, wait_seconds: float) -> dict[str, Any] | None:
    """Wait for our turn; returns a completion record if one appeared meanwhile.

    GedPi gives up after 100 x 25 ms even while a live migration is making
    progress. GedWeb (G-10) keeps polling every 25 ms while the holder is alive,
    up to ``wait_seconds``; dead holders are quarantined as in GedPi.
    """
    deadline = time.monotonic() + max(wait_seconds, 0.0)
    first: LockCandidate | None = None
    while True:
        converged = read_completion(root)
        if converged is not None:
            return converged
        for candidate in read_lock_candidates(root):
            if not holder_alive(root, candidate.owner, lock.token):
                _quarantine(root, candidate)
        live = sorted(
            (c for c in read_lock_candidates(root) if holder_alive(root, c.owner, lock.token)),
            key=lambda c: (c.mtime_ns, c.inode, c.owner.token),
        )
        if live and live[0].owner.token == lock.token:
            # The holder may have completed and released since the look above.
            return read_completion(root)
        first = live[0] if live else None
        if time.monotonic() >= deadline:
            break
        time.sleep(POLL_SECONDS)
    detail = ""
    if first is not None:
        detail = (
            f" Lock {first.owner.token} is held by pid {first.owner.pid} since "
            f"{first.owner.started_at}."
        )
    raise MigrationError(
        "Ged durable-memory migration is already running or needs manual recovery." + detail
    )


# --- the run ----------------------------------------------------------------------------

# Retained entries written to the journal per rewrite at most (see _Run.record).
JOURNAL_BATCH = 256


class _Run:
    def __init__(self, root: Path, hooks: MigrationHooks | None) -> None:
        self.root = root
        self.hooks = hooks or MigrationHooks()
        self.entries: list[dict[str, Any]] = read_journal(root)
        self.keys = {entry_key(entry) for entry in self.entries}
        self.unflushed = 0
        self.owners: dict[str, list[str]] | None = None

    # journal ---------------------------------------------------------------------------

    def record(self, entry: dict[str, Any], *, deferred: bool = False) -> None:
        """Add an entry (once) and rewrite the journal, as GedPi's recordEntry does.

        GedWeb defers the rewrite for entries that precede no destructive step
        (retained files, which stay in place), up to JOURNAL_BATCH of them: the
        journal is rewritten whole each time, so writing it per retained file
        made a large migration quadratic in I/O. A crash loses at most those
        deferred entries, and the rerun recreates them from the same files and
        backups in the same order. Every entry that precedes a destructive step
        is written (with all deferred ones) before that step, as in GedPi.
        """
        key = entry_key(entry)
        if key not in self.keys:
            self.keys.add(key)
            self.entries.append(entry)
        self.unflushed += 1
        if not deferred or self.unflushed >= JOURNAL_BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.unflushed:
            return
        journal = {"schemaVersion": 1, "migrationId": MIGRATION_ID, "entries": self.entries}
        safefs.atomic_write(self.root, JOURNAL_PATH, dump_json(journal), keep_mode=True)
        self.unflushed = 0

    def before(self, source_path: str) -> None:
        if self.hooks.before_commit is not None:
            self.hooks.before_commit(source_path)

    def after(self, source_path: str) -> None:
        if self.hooks.after_commit is not None:
            self.hooks.after_commit(source_path)

    # shared steps ----------------------------------------------------------------------

    def backup(self, source_path: str, content: bytes) -> tuple[str, str]:
        digest = sha256_hex(content)
        rel = backup_path(source_path)
        if not safefs.publish_exclusive(self.root, rel, content):
            existing = _read(self.root, rel)
            if existing is None or sha256_hex(existing) != digest:
                raise MigrationError(f"Durable-memory backup conflict for {source_path}.")
        return digest, rel

    def require_unchanged(self, source_path: str, digest: str) -> None:
        self.before(source_path)
        current = _read(self.root, source_path)
        if current is None or sha256_hex(current) != digest:
            raise MigrationError(
                f"Legacy source changed during durable-memory migration: {source_path}"
            )

    def retain(self, source_path: str, reason: str, step: str = "retained") -> None:
        safefs.check(self.root, source_path, READ)
        content = _read(self.root, source_path)
        if content is None:
            return
        digest, backup = self.backup(source_path, content)
        failpoint(f"migrate_v3.{step}.backed_up")
        self.record(make_entry(source_path, "retained-substantive", sha256=digest,
                               backup=backup, reason=reason), deferred=True)
        failpoint(f"migrate_v3.{step}.journaled")

    # A ---------------------------------------------------------------------------------

    def placeholders(self) -> None:
        for source_path, text in PLACEHOLDERS:
            if not _placeholder_present(self.root, source_path, text):
                continue
            self.before(source_path)
            current = _read(self.root, source_path)
            if current is None or _text(current) != text:
                raise MigrationError(
                    f"Legacy placeholder changed during durable-memory migration: {source_path}"
                )
            self.record(make_entry(source_path, "removed-placeholder"))
            failpoint("migrate_v3.placeholder.journaled")
            safefs.remove(self.root, source_path)
            failpoint("migrate_v3.placeholder.removed")
            self.after(source_path)

    # B ---------------------------------------------------------------------------------

    def glossary(self) -> None:
        safefs.check(self.root, GLOSSARY_PATH, READ)
        content = _read(self.root, GLOSSARY_PATH)
        if not _needs_move(self.root, GLOSSARY_PATH, content, self.entries):
            return
        assert content is not None
        digest, backup = self.backup(GLOSSARY_PATH, content)
        failpoint("migrate_v3.glossary.backed_up")
        self.require_unchanged(GLOSSARY_PATH, digest)
        safefs.check(self.root, CONTEXT_PATH, WRITE)
        existing_bytes = _read(self.root, CONTEXT_PATH)
        existing = _text(existing_bytes) if existing_bytes is not None else ""
        if marker("context", digest) not in existing:
            text = context_after_append(existing, _text(content), digest)
            safefs.atomic_write(self.root, CONTEXT_PATH, text.encode("utf-8"), keep_mode=True)
        failpoint("migrate_v3.glossary.appended")
        self.record(make_entry(GLOSSARY_PATH, "migrated-context", sha256=digest, backup=backup,
                               destination=CONTEXT_PATH))
        failpoint("migrate_v3.glossary.journaled")
        safefs.atomic_write(self.root, GLOSSARY_PATH, glossary_pointer(digest).encode("utf-8"),
                            keep_mode=True)
        failpoint("migrate_v3.glossary.pointer_written")
        self.after(GLOSSARY_PATH)

    # C ---------------------------------------------------------------------------------

    def decisions(self) -> None:
        safefs.check(self.root, DECISIONS_PATH, READ)
        content = _read(self.root, DECISIONS_PATH)
        if not _needs_move(self.root, DECISIONS_PATH, content, self.entries):
            return
        assert content is not None
        digest, backup = self.backup(DECISIONS_PATH, content)
        failpoint("migrate_v3.decisions.backed_up")
        self.require_unchanged(DECISIONS_PATH, digest)
        destination = adr_path(digest)
        safefs.check(self.root, destination, WRITE)
        existing = _read(self.root, destination)
        if existing is not None and marker("decisions", digest) not in _text(existing):
            raise MigrationError(f"ADR destination conflict at {destination}.")
        if existing is None:
            safefs.atomic_write(self.root, destination,
                                adr_text(_text(content), digest).encode("utf-8"))
        failpoint("migrate_v3.decisions.adr_written")
        self.record(make_entry(DECISIONS_PATH, "migrated-decisions", sha256=digest,
                               backup=backup, destination=destination))
        failpoint("migrate_v3.decisions.journaled")
        safefs.atomic_write(self.root, DECISIONS_PATH,
                            decisions_pointer(digest).encode("utf-8"), keep_mode=True)
        failpoint("migrate_v3.decisions.pointer_written")
        self.after(DECISIONS_PATH)

    # D ---------------------------------------------------------------------------------

    def tasks(self) -> None:
        files, _ = _top_level(self.root, ".ged/tasks")
        for name in files:
            if name == "README.md":
                continue
            source_path = f".ged/tasks/{name}"
            safefs.check(self.root, source_path, READ)
            content = _read(self.root, source_path)
            if content is None:
                continue
            digest, backup = self.backup(source_path, content)
            failpoint("migrate_v3.task.backed_up")
            if self.owners is None:
                self.owners = task_owner_index(self.root)
            destination = task_destination(self.root, name, self.owners)
            if destination is None:
                self.record(make_entry(source_path, "retained-substantive", sha256=digest,
                                       backup=backup, reason=REASON_NO_OWNER), deferred=True)
                continue
            self.require_unchanged(source_path, digest)
            safefs.check(self.root, destination, WRITE)
            created = safefs.publish_exclusive(self.root, destination, content)
            if not created:
                present = _read(self.root, destination)
                if present is None or sha256_hex(present) != digest:
                    self.record(make_entry(source_path, "retained-substantive", sha256=digest,
                                           backup=backup, reason=REASON_DEST_DIFFERS))
                    continue
            failpoint("migrate_v3.task.copied")
            latest = _read(self.root, source_path)
            if latest is None or sha256_hex(latest) != digest:
                self.record(make_entry(source_path, "retained-substantive", sha256=digest,
                                       backup=backup, destination=destination,
                                       reason=REASON_CHANGED_AFTER_COPY))
                continue
            self.record(make_entry(source_path, "migrated-task-artifact", sha256=digest,
                                   backup=backup, destination=destination))
            failpoint("migrate_v3.task.journaled")
            safefs.remove(self.root, source_path)
            failpoint("migrate_v3.task.removed")
            self.after(source_path)

    # E-G -------------------------------------------------------------------------------

    def retained(self) -> None:
        for source_path in AMBIGUOUS_LEGACY_PATHS:
            self.retain(source_path, REASON_AMBIGUOUS)
        for source_path in _gedpi_walk(self.root, ".ged/project-skills"):
            self.retain(source_path, REASON_SKILLS)
        removed = {e.get("sourcePath") for e in self.entries
                   if e.get("action") == "removed-placeholder"}
        for directory in GLOBAL_DIRS:
            for source_path in _gedpi_walk(self.root, f".ged/{directory}"):
                if source_path not in removed:
                    self.retain(source_path, REASON_GLOBAL)

    # H (GedWeb) ------------------------------------------------------------------------

    def reported(self) -> None:
        for source_path, reason in gedweb_reported(self.root):
            self.retain(source_path, reason, step="reported")

    # completion ------------------------------------------------------------------------

    def complete(self) -> dict[str, Any]:
        self.flush()
        failpoint("migrate_v3.before_completion")
        state = {
            "schemaVersion": SCHEMA_VERSION,
            "migrationId": MIGRATION_ID,
            "status": "complete",
            "completedAt": format_time(datetime.now(UTC)),
            "entries": self.entries,
        }
        # GedWeb (G-9): create-only, so a record, once written, is never replaced.
        if not safefs.publish_exclusive(self.root, STATE_PATH, dump_json(state)):
            raise MigrationError(
                "Ged durable-memory migration completion record appeared while this "
                f"migration held the lock: {STATE_PATH}"
            )
        failpoint("migrate_v3.completed")
        return state


def task_descriptor(name: str) -> tuple[str, str] | None:
    for pattern, artifact in TASK_PATTERNS:
        match = pattern.fullmatch(name)
        if match:
            task_id = match.group(1)
            return (task_id, artifact) if TASK_ID_RE.fullmatch(task_id) else None
    return None


def task_owner_index(root: Path) -> dict[str, list[str]]:
    """Task id -> the generated work IDs whose TASKS.md has it as some line's second cell.

    Read once per run (GedPi re-reads every TASKS.md for every task file,
    which is quadratic on large checkouts; the answer is the same).
    """
    _, work_dirs = _top_level(root, ".ged/work")
    index: dict[str, list[str]] = {}
    for work_id in work_dirs:
        if not WORK_ID_RE.fullmatch(work_id):
            continue
        tasks = _read(root, f".ged/work/{work_id}/TASKS.md")
        if tasks is None:
            continue
        cells = {js_trim(line.split("|")[1]) for line in _text(tasks).split("\n")
                 if line.count("|") >= 1}
        for task_id in cells:
            index.setdefault(task_id, []).append(work_id)
    return index


def task_destination(root: Path, name: str,
                     owners: dict[str, list[str]] | None = None) -> str | None:
    descriptor = task_descriptor(name)
    if descriptor is None:
        return None
    task_id, artifact = descriptor
    found = (owners if owners is not None else task_owner_index(root)).get(task_id, [])
    if len(found) != 1:
        return None
    return f".ged/work/{found[0]}/tasks/{task_id}/{artifact}"


def gedweb_reported(root: Path) -> Iterator[tuple[str, str]]:
    """Files GedPi leaves unreported (gap G-9), with GedWeb's reasons, in a fixed order."""
    _, task_dirs = _top_level(root, ".ged/tasks")
    for name in sorted(task_dirs, key=_collation_key):
        for source_path in _gedpi_walk(root, f".ged/tasks/{name}"):
            yield source_path, REASON_TASK_SUBDIR
    for source_path, reason in REASONS_KEPT_CANONICAL.items():
        safefs.check(root, source_path, READ)
        if _lstat(root, source_path) is not None:
            yield source_path, reason
    _, work_dirs = _top_level(root, ".ged/work")
    for name in sorted(work_dirs, key=_collation_key):
        if WORK_ID_RE.fullmatch(name):
            continue
        for source_path in _gedpi_walk(root, f".ged/work/{name}"):
            yield source_path, REASON_BRANCH_WORK


def migrate_v3(root: Path, *, hooks: MigrationHooks | None = None,
               wait_seconds: float = DEFAULT_WAIT_SECONDS) -> V3Result:
    """Run GedPi's durable-memory v3 migration on the checkout at ``root``."""
    root = Path(root)
    completed = read_completion(root)
    if completed is not None:
        return V3Result("already-complete", completed["entries"], completed)
    version = _read(root, ".ged/VERSION")
    if version is None:
        return V3Result("not-needed")
    parsed = parse_version(version)
    if parsed is not None and parsed >= 3 and not has_actionable_legacy_memory(root):
        return V3Result("not-needed")
    # GedWeb: a damaged journal aborts before the lock, so the refusal touches
    # nothing (not even a dead run's lock). Read again under the lock by _Run.
    read_journal(root)

    safefs.check(root, LOCKS_DIR, WRITE)
    lock = _Lock(root)
    try:
        lock.publish()
        failpoint("migrate_v3.lock.published")
        converged = _acquire(root, lock, wait_seconds)
        if converged is not None:
            return V3Result("already-complete", converged["entries"], converged)
        failpoint("migrate_v3.lock.acquired")
        run = _Run(root, hooks)
        run.placeholders()
        run.glossary()
        run.decisions()
        run.tasks()
        run.retained()
        run.reported()
        state = run.complete()
        return V3Result("completed", run.entries, state)
    finally:
        lock.release()


# --- dry run ----------------------------------------------------------------------------


def plan_v3(root: Path) -> list[str]:
    """What ``migrate_v3`` would do now, as human-readable lines. Reads only."""
    root = Path(root)
    head = "durable-memory-v3:"
    completed = read_completion(root)
    if completed is not None:
        return [f"{head} already complete ({STATE_PATH}, {len(completed['entries'])} entries);"
                " nothing to do"]
    version = _read(root, ".ged/VERSION")
    if version is None:
        return [f"{head} not needed (no .ged/VERSION); nothing to do"]
    parsed = parse_version(version)
    if parsed is not None and parsed >= 3 and not has_actionable_legacy_memory(root):
        return [f"{head} not needed (VERSION {parsed}, no actionable legacy memory);"
                " nothing to do"]
    lines = [f"{head} migration needed (VERSION {parsed if parsed is not None else '?'})"]
    journal = read_journal(root)
    if journal:
        lines.append(f"  resume: {len(journal)} journal entries from an interrupted run are kept")
    for candidate in read_lock_candidates(root):
        owner = candidate.owner
        if holder_alive(root, owner):
            lines.append(f"  wait: lock {owner.token} is held by live pid {owner.pid}")
        else:
            lines.append(f"  quarantine stale lock {owner.token} (pid {owner.pid} is gone) "
                         f"to {RUNTIME}/STALE-{owner.token}.json")

    removed: set[str] = set()
    for source_path, text in PLACEHOLDERS:
        if _placeholder_present(root, source_path, text):
            removed.add(source_path)
            lines.append(f"  remove byte-exact placeholder {source_path}")

    def backup_note(source_path: str, content: bytes) -> str:
        existing = _read(root, backup_path(source_path))
        if existing is not None and sha256_hex(existing) != sha256_hex(content):
            return (f" -- WOULD FAIL: Durable-memory backup conflict for {source_path}.")
        return ""

    for source_path in (GLOSSARY_PATH, DECISIONS_PATH):
        safefs.check(root, source_path, READ)
        content = _read(root, source_path)
        if content is None or source_path in removed:
            continue
        digest = sha256_hex(content)
        if not _needs_move(root, source_path, content, journal):
            lines.append(f"  keep {source_path}: verified migration pointer")
            continue
        if source_path == GLOSSARY_PATH:
            present = _read(root, CONTEXT_PATH)
            if present is not None and marker("context", digest) in _text(present):
                what = "CONTEXT.md already holds it"
            else:
                what = "append it once to CONTEXT.md"
            lines.append(f"  glossary {source_path} (sha256 {digest}): back up, {what} "
                         f"(marker {marker('context', digest)}), replace it with a pointer"
                         + backup_note(source_path, content))
        else:
            dest = adr_path(digest)
            present = _read(root, dest)
            if present is None:
                what = f"write {dest}"
            elif marker("decisions", digest) in _text(present):
                what = f"{dest} already holds them"
            else:
                what = f"WOULD FAIL: ADR destination conflict at {dest}."
            lines.append(f"  decisions {source_path} (sha256 {digest}): back up, {what}, "
                         "replace it with a pointer" + backup_note(source_path, content))

    files, _ = _top_level(root, ".ged/tasks")
    owners = task_owner_index(root)
    for name in files:
        if name == "README.md" or f".ged/tasks/{name}" in removed:
            continue
        source_path = f".ged/tasks/{name}"
        content = _read(root, source_path)
        if content is None:
            continue
        destination = task_destination(root, name, owners)
        note = backup_note(source_path, content)
        if destination is None:
            lines.append(f"  retain {source_path}: {REASON_NO_OWNER}{note}")
            continue
        present = _read(root, destination)
        if present is not None and sha256_hex(present) != sha256_hex(content):
            lines.append(f"  retain {source_path}: {REASON_DEST_DIFFERS}{note}")
        else:
            lines.append(f"  move {source_path} -> {destination} (backed up first){note}")

    def retained_line(source_path: str, reason: str) -> None:
        content = _read(root, source_path)
        if content is None:
            return
        variant = template_variant(source_path, content)
        extra = f" [unchanged {variant.origin} template]" if variant else ""
        lines.append(f"  retain {source_path}: {reason}{extra}"
                     + backup_note(source_path, content))

    for source_path in AMBIGUOUS_LEGACY_PATHS:
        safefs.check(root, source_path, READ)
        if source_path not in removed:
            retained_line(source_path, REASON_AMBIGUOUS)
    for source_path in _gedpi_walk(root, ".ged/project-skills"):
        if source_path not in removed:
            retained_line(source_path, REASON_SKILLS)
    for directory in GLOBAL_DIRS:
        for source_path in _gedpi_walk(root, f".ged/{directory}"):
            if source_path not in removed:
                retained_line(source_path, REASON_GLOBAL)
    for source_path, reason in gedweb_reported(root):
        if source_path not in removed:
            retained_line(source_path, reason)
    lines.append(f"  write {STATE_PATH} (completion record, create-only) last")
    return lines


# --- doctor -----------------------------------------------------------------------------


def checkout_problems(root: Path) -> list[str]:
    """Problems ``doctor --checkout`` reports for the migration state of a checkout.

    Reported: files of the layout with more than one link (hard_link_problems);
    an invalid completion record or journal; a journal without a
    completion record (an interrupted run); a pending migration; live locks
    (a migration is running or hung) and stale locks; a malformed lock; plus
    the legacy-checkpoint problems. ``STALE-*.json`` files are evidence of a
    recovered crash that GedPi keeps for ever; they are not problems.
    """
    root = Path(root)
    problems: list[str] = []
    try:
        problems.extend(hard_link_problems(root))
    except (UnsafePath, OSError) as exc:
        problems.append(f"hard links: {exc}")
    try:
        completed = read_completion(root)
    except (MigrationError, UnsafePath, OSError) as exc:
        problems.append(f"{STATE_PATH}: {exc}")
        completed = None
    try:
        journal_raw = _read(root, JOURNAL_PATH)
        if journal_raw is not None:
            read_journal(root)
            if completed is None:
                problems.append(
                    f"{JOURNAL_PATH} exists without {STATE_PATH}: an interrupted durable-memory "
                    "migration; run `manage.py ged_migrate_v3 PATH` to resume it"
                )
    except (MigrationError, UnsafePath, OSError) as exc:
        problems.append(f"{JOURNAL_PATH}: {exc}")
    try:
        for candidate in read_lock_candidates(root):
            owner = candidate.owner
            if holder_alive(root, owner):
                problems.append(
                    f"{candidate.rel}: durable-memory migration lock held by live pid "
                    f"{owner.pid} since {owner.started_at} (running, or hung)"
                )
            else:
                problems.append(
                    f"{candidate.rel}: stale durable-memory migration lock (pid {owner.pid} is "
                    "gone); the next run quarantines it"
                )
    except (MigrationError, UnsafePath, OSError) as exc:
        problems.append(f"{LOCKS_DIR}: {exc}")
    if completed is None:
        try:
            if migration_status(root) == "needed":
                problems.append(
                    "durable-memory v3 migration is needed: run `manage.py ged_migrate_v3 PATH`"
                )
        except (MigrationError, UnsafePath, OSError) as exc:
            problems.append(f"durable-memory v3 status: {exc}")
    try:
        from gedweb.checkout.checkpoints import checkpoint_problems
    except ImportError as exc:
        problems.append(f"legacy-checkpoints-v1 checks are unavailable: {exc}")
    else:
        problems.extend(checkpoint_problems(root))
    return problems


# --- hard links ---------------------------------------------------------------------------

# Where GedWeb's checkout commands look: the files a migration, an import or
# doctor reads. A hard link among them could publish a file from outside the
# checkout (safefs.hard_link_problem).
LAYOUT_FILES = (
    CONTEXT_PATH,
    "AGENTS.md",
    "AGENTS.override.md",
    "CLAUDE.md",
    "GEMINI.md",
    ".github/copilot-instructions.md",
    ".cursorrules",
    ".pi/agents/ged-brain.md",
)
LAYOUT_DIRS = (".ged", ".agents/skills", "docs/adr")


def hard_link_problems(root: Path) -> list[str]:
    """Every file of the GedPi layout under ``root`` that has more than one link."""
    return safefs.find_hard_links(Path(root), LAYOUT_FILES, LAYOUT_DIRS)


def refuse_hard_links(root: Path) -> None:
    """UnsafePath naming the first hard-linked layout file, before anything is written.

    GedWeb: the reads refuse a hard link on their own descriptor too, but a
    migration reads some files only after earlier steps have written; this
    survey makes it refuse before its first step.
    """
    problems = hard_link_problems(root)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UnsafePath(problems[0] + more)


# --- orchestration: legacy checkpoints first, then v3 (§6.0) ----------------------------


@dataclass
class CheckoutResult:
    checkpoints: Any  # gedweb.checkout.checkpoints.CheckpointResult
    v3: V3Result


def migrate_checkout(root: Path, *, hooks: MigrationHooks | None = None,
                     wait_seconds: float = DEFAULT_WAIT_SECONDS) -> CheckoutResult:
    """GedPi's order: the legacy checkpoint import, then the v3 migration.

    A CheckpointError (an integrity failure) propagates and the v3 migration
    does not start, as GedPi's startup stops (§6.0).
    """
    from gedweb.checkout.checkpoints import migrate_legacy_checkpoints

    refuse_hard_links(Path(root))
    checkpoints = migrate_legacy_checkpoints(Path(root))
    return CheckoutResult(checkpoints, migrate_v3(root, hooks=hooks, wait_seconds=wait_seconds))


def plan_checkout(root: Path) -> list[str]:
    from gedweb.checkout.checkpoints import plan_legacy_checkpoints

    refuse_hard_links(Path(root))
    return list(plan_legacy_checkpoints(Path(root))) + plan_v3(root)


FAILPOINTS = (
    "migrate_v3.lock.published",
    "migrate_v3.lock.acquired",
    "migrate_v3.placeholder.journaled",
    "migrate_v3.placeholder.removed",
    "migrate_v3.glossary.backed_up",
    "migrate_v3.glossary.appended",
    "migrate_v3.glossary.journaled",
    "migrate_v3.glossary.pointer_written",
    "migrate_v3.decisions.backed_up",
    "migrate_v3.decisions.adr_written",
    "migrate_v3.decisions.journaled",
    "migrate_v3.decisions.pointer_written",
    "migrate_v3.task.backed_up",
    "migrate_v3.task.copied",
    "migrate_v3.task.journaled",
    "migrate_v3.task.removed",
    "migrate_v3.retained.backed_up",
    "migrate_v3.retained.journaled",
    "migrate_v3.reported.backed_up",
    "migrate_v3.reported.journaled",
    "migrate_v3.before_completion",
    "migrate_v3.completed",
)
