"""The migration's lock (§6.2, GedWeb's G-10): LOCKS/<token>.json and its flock sidecar."""

from __future__ import annotations

import errno
import fcntl
import math
import os
import re
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gedweb.checkout import safefs
from gedweb.checkout.safefs import READ, WRITE
from gedweb.checkout.v3.errors import MigrationError
from gedweb.checkout.v3.files import is_real_dir, lstat, read
from gedweb.checkout.v3.journal import read_completion
from gedweb.checkout.v3.layout import LOCKS_DIR, RUNTIME
from gedweb.checkout.v3.texts import dump_json, is_date, is_number, parse_json
from gedweb.lib.governance import format_time

LOCK_NAME_RE = re.compile(r"[a-f0-9-]{36}\.json")
TOKEN_RE = re.compile(r"[a-f0-9-]{36}")


# GedWeb (gap G-10): a GedWeb lock carries a flock-held sidecar; its name is
# outside GedPi's lock pattern, so GedPi ignores it.
SIDECAR_SUFFIX = ".flock"
DEFAULT_WAIT_SECONDS = 30.0
POLL_SECONDS = 0.025


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
        value = parse_json(raw)
    except ValueError:
        raise MigrationError("Ged durable-memory migration lock is malformed.") from None
    pid = value.get("pid") if isinstance(value, dict) else None
    if (
        not isinstance(value, dict)
        or not (is_number(value.get("schemaVersion")) and value["schemaVersion"] == 1)
        or not is_number(pid)
        or not (math.isfinite(pid) and float(pid).is_integer())
        or not 0 < pid <= 2**53 - 1
        or not isinstance(value.get("token"), str)
        or not TOKEN_RE.fullmatch(value["token"])
        or not is_date(value.get("startedAt"))
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
    if not is_real_dir(root, LOCKS_DIR):
        return []
    names = sorted(name for name in os.listdir(base) if LOCK_NAME_RE.fullmatch(name))
    candidates = []
    for name in names:
        rel = f"{LOCKS_DIR}/{name}"
        raw = read(root, rel)
        if raw is None:
            continue
        owner = parse_lock(raw)
        if f"{owner.token}.json" != name:
            raise MigrationError("Ged durable-memory migration lock token is invalid.")
        info = lstat(root, rel)
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


def quarantine(root: Path, candidate: LockCandidate) -> None:
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


class Lock:
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
        # Locks are ordered by mtime (acquire). The file's mtime is when its
        # temporary file was written, before the link made it visible, so a
        # process that wrote first but linked last could sort first after the
        # other had already checked and gone ahead: both ran (seen once under
        # load). Stamped now, after the link and before this process's first
        # check, a lock visible too late to stop a holder always sorts after it.
        now = time.time_ns()
        os.utime(safefs.check(self.root, self.rel, WRITE), ns=(now, now),
                 follow_symlinks=False)

    def release(self) -> None:
        try:
            raw = read(self.root, self.rel)
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


def acquire(root: Path, lock: Lock, wait_seconds: float) -> dict[str, Any] | None:
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
                quarantine(root, candidate)
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
