"""Moving a GedPi layout over HTTP: what `gedweb push` sends, what `gedweb pull` writes.

No Django: the `gedweb` CLI runs this on the user's machine, and the server
checks uploads and downloads with the same rules (docs/interop.md, "Over HTTP").

- **The layout** (``in_layout``): the files GedWeb's checkout commands look at
  (``gedweb.checkout.v3.LAYOUT_FILES`` and everything under ``LAYOUT_DIRS``:
  ``.ged``, ``.agents/skills``, ``docs/adr``). ``collect_layout`` reads them
  from a checkout for a push, through safefs (never following a link) and
  without writing anything; the server takes no other file from an upload.
- **The export list** (``is_export_path``): the shapes of the files
  ``ged_export`` writes (docs/interop.md, "Supported files"); a pull writes no
  other path, whatever the server sent.
- **Writing** (``plan_writes``): which files a target already holds with the
  right bytes, which are create-only and kept (``.ged/.gitignore``), which to
  write; ``ged_export`` and a pull share it. A pull adds one rule: a local file
  whose bytes differ from both the server's and what the last pull wrote
  (``PULL_STATE``, sha256 per path) is a local change, and the pull refuses
  it, before writing anything, unless forced.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from gedweb.checkout import safefs
from gedweb.checkout.archive import Limits
from gedweb.checkout.v3.hard_links import LAYOUT_DIRS, LAYOUT_FILES
from gedweb.checkout.v3.layout import LEGACY_DIRS
from gedweb.lib.ids import is_document_id, is_skill_name, is_task_id, is_work_id
from gedweb.progress import Advance, Progress, no_progress, unshown

# What one push may hold. The per-file and total bounds are ged_import's own
# (governance.gedpi_import MAX_FILE_BYTES, MAX_TOTAL_BYTES, MAX_ENTRIES): a tree
# the command reads can be pushed. The compressed archive is held in memory
# by the server while it is unpacked, so it has a bound of its own.
LIMITS = Limits(archive_bytes=32 * 1024 * 1024, members=50_000,
                member_bytes=8 * 1024 * 1024, total_bytes=256 * 1024 * 1024)

# The pull's own record of what it wrote, in .ged/runtime/, which GedPi's
# .ged/.gitignore keeps out of Git: it describes this checkout, not the project.
PULL_STATE_DIR = ".ged/runtime/gedweb"
PULL_STATE = f"{PULL_STATE_DIR}/pull.json"
PULL_STATE_SCHEMA = 1

# Written only where missing (ged_export's rule, after GedPi's): a checkout's
# own ignore rules are its own.
GITIGNORE_PATH = ".ged/.gitignore"
CREATE_ONLY = frozenset({GITIGNORE_PATH})

_LEGACY_FOLDERS = tuple(f".ged/{name}/" for name in LEGACY_DIRS)
_ANCESTORS = frozenset(
    str(parent) for rel in (*LAYOUT_FILES, *LAYOUT_DIRS)
    for parent in PurePosixPath(rel).parents if str(parent) != "."
)


class SyncRefused(Exception):
    """A push or pull will not go on: one line naming the file."""


# --- the layout ------------------------------------------------------------------------------


def in_layout(rel: str, is_dir: bool = False) -> bool:
    """Whether an upload may hold ``rel``: a layout file, or a directory on the way to one."""
    if rel in LAYOUT_FILES or any(rel.startswith(f"{d}/") for d in LAYOUT_DIRS):
        return True
    return is_dir and (rel in LAYOUT_DIRS or rel in _ANCESTORS)


def _sent(rel: str) -> bool:
    """GedWeb's own pull record stays out of a push: no command reads it."""
    return not rel.startswith(f"{PULL_STATE_DIR}/")


def checked_root(root: Path, *, create: bool) -> Path:
    """PATH itself: a real directory reached without a symlink on the way (UnsafePath if not)."""
    absolute = Path(os.path.abspath(root))
    if os.path.realpath(absolute) != str(absolute):
        raise safefs.UnsafePath(f"{root} is or lies inside a symbolic link")
    try:
        info = os.lstat(absolute)
    except FileNotFoundError:
        if not create:
            raise safefs.UnsafePath(f"{root} does not exist") from None
        absolute.mkdir(parents=True)
        info = os.lstat(absolute)
    if not stat.S_ISDIR(info.st_mode):
        raise safefs.UnsafePath(f"{root} is not a directory")
    return absolute


def collect_layout(root: Path, limits: Limits = LIMITS) -> dict[str, bytes]:
    """The layout files of the checkout at ``root``, read only, for a push.

    Read as ged_import reads: through safefs, so a symbolic link, a FIFO or
    device, or a file with a second hard link refuses the push naming it,
    except in GedPi's legacy folders (``.ged/tasks``, ...), whose links
    ged_import and GedPi's own walk skip: they are left out. Over a limit of
    ``limits`` the push is refused before anything is sent.
    """
    base = checked_root(root, create=False)
    files: dict[str, bytes] = {}
    total = 0

    def take(rel: str) -> None:
        nonlocal total
        if len(files) >= limits.members:
            raise SyncRefused(f"the checkout has more than {limits.members:,} layout files, "
                              "the most one push sends")
        data = safefs.read_bytes(base, rel, max_bytes=limits.member_bytes)
        if data is None:
            return  # removed since it was listed
        total += len(data)
        if total > limits.total_bytes:
            raise SyncRefused(f"{rel}: the layout files hold more than "
                              f"{limits.total_bytes:,} bytes, the most one push sends")
        files[rel] = data

    try:
        for rel in LAYOUT_FILES:
            if safefs.is_file(base, rel):
                take(rel)
            elif safefs.exists(base, rel) and not safefs.is_dir(base, rel):
                raise safefs.UnsafePath(f"{safefs.READ} is not a regular file: {rel}")
        for rel_dir in LAYOUT_DIRS:
            for rel in _walk(base, rel_dir):
                if _sent(rel):
                    take(rel)
    except safefs.UnsafePath as exc:
        raise SyncRefused(str(exc)) from None
    except OSError as exc:
        raise SyncRefused(f"{exc.filename or root}: {exc.strerror or exc}") from None
    return dict(sorted(files.items()))


def _walk(base: Path, rel_dir: str) -> list[str]:
    """The regular files under rel_dir; links and special files refused, skipped in legacy
    folders."""
    if rel_dir == ".ged":
        found: list[str] = []
        for legacy in _LEGACY_FOLDERS:
            found += safefs.walk_files(base, legacy.rstrip("/"), skip_symlinks=True)
        # Everything else under .ged, with the legacy folders' own walk above.
        found += _walk_except(base, ".ged", _LEGACY_FOLDERS)
        return sorted(found)
    return list(safefs.walk_files(base, rel_dir))


def _walk_except(base: Path, rel_dir: str, skipped: tuple[str, ...]) -> list[str]:
    if not safefs.is_dir(base, rel_dir):
        if safefs.exists(base, rel_dir):
            raise safefs.UnsafePath(f"{safefs.READ} is not a directory: {rel_dir}")
        return []
    found = []
    for entry in sorted(os.scandir(safefs.check(base, rel_dir)), key=lambda e: e.name):
        rel = f"{rel_dir}/{entry.name}"
        if f"{rel}/" in skipped:
            continue
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode):
            found += _walk_except(base, rel, skipped)
        elif stat.S_ISREG(mode):
            found.append(rel)
        elif stat.S_ISLNK(mode):
            raise safefs.UnsafePath(f"{safefs.READ} traverses a symbolic link: {rel}")
        else:
            raise safefs.UnsafePath(f"{safefs.READ} is not a regular file or directory: {rel}")
    return found


# --- the export list -------------------------------------------------------------------------

_EXPORT_FILES = frozenset({
    ".ged/VERSION", GITIGNORE_PATH, ".ged/PROJECT.md", "CONTEXT.md", ".ged/IMPORT-STATE.json",
    ".ged/STANDARDS.md", ".ged/SKILLS-STATE.json",
})
_WORK_FILES = frozenset({"META.json", "DIRECT.md", "SPEC.md", "TASKS.md", "TESTS.md"})
_TASK_FILES = frozenset({"BRIEF.md", "HISTORY.json", "RECOVERY.md"})
_RUNTIME_FILES = frozenset({"governance.json", "STATE.md", "SESSION-SUMMARY.md"})


def is_export_path(rel: str) -> bool:
    """Whether ``rel`` has the shape of a file ``ged_export`` writes (docs/interop.md)."""
    if rel in _EXPORT_FILES:
        return True
    parts = rel.split("/")
    name = parts[-1]
    ident = name[:-len(".md")] if name.endswith(".md") else ""
    if len(parts) == 3 and parts[:2] in (["docs", "adr"], [".ged", "reports"]):
        return is_document_id(ident)
    if len(parts) == 4 and parts[:2] == [".agents", "skills"]:
        return is_skill_name(parts[2]) and name == "SKILL.md"
    if len(parts) >= 4 and parts[0] == ".ged" and is_work_id(parts[2]):
        if parts[1] == "work":
            return (len(parts) == 4 and name in _WORK_FILES) or (
                len(parts) == 6 and parts[3] == "tasks" and is_task_id(parts[4])
                and name in _TASK_FILES)
        return parts[1] == "runtime" and len(parts) == 4 and name in _RUNTIME_FILES
    return False


# --- writing a layout ------------------------------------------------------------------------


@dataclass
class WritePlan:
    root: Path
    write: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    # CREATE_ONLY files the target already has with other bytes: left as they are.
    kept: list[str] = field(default_factory=list)
    # Files whose bytes on disk differ from what is about to replace them.
    current: dict[str, bytes] = field(default_factory=dict)


def plan_writes(base: Path, files: Mapping[str, bytes]) -> WritePlan:
    """What writing ``files`` under ``base`` does; every target checked, nothing written.

    A symbolic link on the way to a target, or a directory where a file goes,
    is UnsafePath before anything is written.
    """
    plan = WritePlan(base)
    for rel, data in files.items():
        current = safefs.read_bytes(base, rel)
        if current == data:
            plan.unchanged.append(rel)
        elif rel in CREATE_ONLY and current is not None:
            plan.kept.append(rel)
        else:
            plan.write.append(rel)
            if current is not None:
                plan.current[rel] = current
    return plan


def write_planned(plan: WritePlan, files: Mapping[str, bytes],
                  advance: Advance = unshown) -> None:
    """Replace each planned file atomically (temporary file, fsync, rename, fsync of its dir),
    advancing ``advance`` once per file."""
    for rel in plan.write:
        safefs.atomic_write(plan.root, rel, files[rel])
        advance(1)


# --- the pull -------------------------------------------------------------------------------


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_pull_state(base: Path) -> dict[str, str]:
    """path -> sha256 of what the last pull wrote there (empty before the first pull)."""
    data = safefs.read_bytes(base, PULL_STATE, max_bytes=LIMITS.member_bytes)
    if data is None:
        return {}
    try:
        state = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        state = None
    files = state.get("files") if isinstance(state, dict) else None
    if (not isinstance(state, dict) or state.get("schemaVersion") != PULL_STATE_SCHEMA
            or not isinstance(files, dict)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())):
        raise SyncRefused(f"{PULL_STATE} is not a pull record GedWeb wrote; give --force to "
                          "overwrite the local files whatever they hold")
    return dict(files)


@dataclass
class PullResult:
    root: str
    written: list[str]
    unchanged: list[str]
    kept: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"root": self.root, "written": self.written, "unchanged": self.unchanged,
                "kept": self.kept}


def pull_layout(root: Path, files: Mapping[str, bytes], *, project: str,
                force: bool = False, progress: Progress = no_progress) -> PullResult:
    """Write the pulled ``files`` under ``root`` (created if missing), or nothing at all.

    Every path must be one ged_export writes. A file to be replaced whose
    bytes are not what the last pull wrote there (``PULL_STATE``) was changed
    here, or never pulled: without ``force`` the pull is refused before any
    file is written. The record is written last, so a pull cut short is
    completed by the next one.
    """
    foreign = sorted(rel for rel in files if not is_export_path(rel))
    if foreign:
        raise SyncRefused(f"the server sent {foreign[0]}, which is not a file ged_export "
                          "writes; nothing was written")
    try:
        base = checked_root(root, create=True)
        previous = {} if force else read_pull_state(base)
        plan = plan_writes(base, files)
        changed = sorted(rel for rel, data in plan.current.items()
                         if previous.get(rel) != sha256_hex(data))
        if changed and not force:
            more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
            raise SyncRefused(f"{changed[0]}{more} changed here since the last pull; nothing "
                              "was written; give --force to overwrite local changes")
        write_planned(plan, files, progress(len(plan.write), "pull", "files"))
        record = {rel: sha256_hex(data) for rel, data in files.items() if rel not in plan.kept}
        state = {"schemaVersion": PULL_STATE_SCHEMA, "project": project, "files": record}
        safefs.atomic_write(base, PULL_STATE,
                            (json.dumps(state, indent=2, sort_keys=True) + "\n").encode())
    except safefs.UnsafePath as exc:
        raise SyncRefused(str(exc)) from None
    except OSError as exc:
        raise SyncRefused(f"cannot write {exc.filename or root}: {exc.strerror or exc}") from None
    return PullResult(str(base), plan.write, plan.unchanged, plan.kept)
