"""Finding every legacy checkpoint file and what belongs to it, and the plan built from them."""

from __future__ import annotations

import os
import stat
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gedweb.checkout import safefs
from gedweb.checkout.checkpoints.classify import (
    candidate_id,
    classify,
    decide,
    is_nonblank,
    loads_json,
    logical_work_id,
)
from gedweb.checkout.checkpoints.errors import SOURCE_DRIFT, UNSAFE_LAYOUT, CheckpointError
from gedweb.checkout.checkpoints.formats import backup_id_for, backup_path_for, target_ids
from gedweb.checkout.checkpoints.layout import (
    CHECKPOINT_NAME,
    ROOT_CHECKPOINT,
    ROOT_SLUG,
    RUNTIME,
    UNCLAIMED_RUNTIME_DIRS,
    WORK,
)
from gedweb.lib import governance
from gedweb.lib.ids import is_work_id


@dataclass(frozen=True)
class _Source:
    sha256: str
    size: int
    candidate_ids: tuple[str, ...]


@dataclass(frozen=True)
class Inventory:
    candidates: list[dict[str, Any]]
    files: dict[str, _Source]


def unsafe_layout(exc: safefs.UnsafePath) -> CheckpointError:
    return CheckpointError(UNSAFE_LAYOUT, str(exc))


def file_kind(root: Path, rel: str) -> str | None:
    """"dir", "file" or None; symlinks and special files raise UnsafePath (§9.2)."""
    path = safefs.check(root, rel)  # lstat walk: every component is a real dir or file
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    return "dir" if stat.S_ISDIR(mode) else "file"


def _runtime_entries(root: Path) -> tuple[list[str], list[str]]:
    """(regular files, directories) directly in .ged/runtime; anything else is unsafe."""
    files: list[str] = []
    dirs: list[str] = []
    if file_kind(root, RUNTIME) != "dir":
        return files, dirs
    with os.scandir(root / RUNTIME) as entries:
        for entry in entries:
            mode = entry.stat(follow_symlinks=False).st_mode
            rel = f"{RUNTIME}/{entry.name}"
            if stat.S_ISLNK(mode):
                raise safefs.UnsafePath(f"Read source traverses a symbolic link: {rel}")
            if stat.S_ISDIR(mode):
                dirs.append(entry.name)
            elif stat.S_ISREG(mode):
                files.append(entry.name)
            else:
                raise safefs.UnsafePath(f"Read source is not a regular file or directory: {rel}")
    return sorted(files), sorted(dirs)


def _is_current_generated_runtime(root: Path, name: str) -> bool:
    if not is_work_id(name):
        return False
    meta_path = f"{WORK}/{name}/META.json"
    if file_kind(root, meta_path) != "file":
        return False
    data = safefs.read_bytes(root, meta_path)
    try:
        meta = loads_json((data or b"").decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(meta, dict)
        and meta.get("schemaVersion") == 1
        and not isinstance(meta.get("schemaVersion"), bool)
        and meta.get("workId") == name
        and is_nonblank(meta.get("summary"))
        and governance.is_canonical_time(meta.get("createdAt"))
    )


def walk_files(root: Path, rel_dir: str) -> list[str]:
    return list(safefs.walk_files(root, rel_dir))


def discover(root: Path) -> Inventory:
    """The candidates and their source sets, exactly as §6.9 lists them."""
    direct_files, dirs = _runtime_entries(root)
    generated = {name for name in dirs if _is_current_generated_runtime(root, name)}
    branches: list[str] = []
    for name in dirs:
        if name == "migrations" or name in generated:
            continue
        kind = file_kind(root, f"{RUNTIME}/{name}/{CHECKPOINT_NAME}")
        if kind == "dir":
            raise safefs.UnsafePath(
                f"Read source is not a regular file: {RUNTIME}/{name}/{CHECKPOINT_NAME}"
            )
        if kind == "file":
            branches.append(name)

    claims: dict[str, set[str]] = {}
    slugs: dict[str, str] = {}  # checkpoint path -> slug

    def claim(paths: list[str], cid: str) -> None:
        for path in paths:
            try:
                path.encode("utf-8")
            except UnicodeEncodeError:
                # PLAN.json could not record it faithfully, so it could not be backed up.
                raise safefs.UnsafePath(
                    f"Read source has a name that is not UTF-8: {path!r}"
                ) from None
            claims.setdefault(path, set()).add(cid)

    for name in branches:
        checkpoint = f"{RUNTIME}/{name}/{CHECKPOINT_NAME}"
        slugs[checkpoint] = name
        cid = candidate_id(checkpoint)
        claim(walk_files(root, f"{RUNTIME}/{name}"), cid)
        claim(walk_files(root, f"{WORK}/{name}"), cid)
    if CHECKPOINT_NAME in direct_files:
        slugs[ROOT_CHECKPOINT] = ROOT_SLUG
        cid = candidate_id(ROOT_CHECKPOINT)
        claim([f"{RUNTIME}/{name}" for name in direct_files], cid)
        claim(walk_files(root, f"{WORK}/{ROOT_SLUG}"), cid)
        for name in dirs:
            if name in UNCLAIMED_RUNTIME_DIRS or name in generated or name in branches:
                continue
            claim(walk_files(root, f"{RUNTIME}/{name}"), cid)

    contents: dict[str, bytes] = {}
    files: dict[str, _Source] = {}
    for path in sorted(claims):
        data = safefs.read_bytes(root, path)
        if data is None:
            raise CheckpointError(SOURCE_DRIFT, f"Legacy file vanished during discovery: {path}")
        contents[path] = data
        files[path] = _Source(safefs.sha256_hex(data), len(data), tuple(sorted(claims[path])))

    candidates = [
        _candidate(checkpoint, slug, contents[checkpoint],
                   contents.get(f"{WORK}/{slug}/META.json"))
        for checkpoint, slug in sorted(slugs.items())
    ]
    return Inventory(candidates, files)


def _candidate(checkpoint: str, slug: str, data: bytes, meta: bytes | None) -> dict[str, Any]:
    return {
        "candidateId": candidate_id(checkpoint),
        "checkpointPath": checkpoint,
        "slug": slug,
        "logicalWorkId": logical_work_id(meta, slug),
        "classification": classify(data),
    }


def build_manifest(inventory: Inventory, backup_id: str) -> list[dict[str, Any]]:
    return [
        {
            "sourcePath": path,
            "backupPath": backup_path_for(backup_id, path),
            "sha256": source.sha256,
            "size": source.size,
            "candidateIds": list(source.candidate_ids),
        }
        for path, source in sorted(inventory.files.items())
    ]


def build_plan(inventory: Inventory, now: datetime) -> dict[str, Any]:
    migration_id = str(uuid.uuid4())
    created_at = governance.format_time(now)
    backup_id = backup_id_for(created_at, migration_id)
    decision = decide(inventory.candidates)
    target_work_id = evidence_id = None
    if decision["candidateId"] is not None:
        chosen = next(c for c in inventory.candidates
                      if c["candidateId"] == decision["candidateId"])
        target_work_id, evidence_id = target_ids(migration_id, created_at, chosen)
    return {
        "schemaVersion": 1,
        "migrationId": migration_id,
        "createdAt": created_at,
        "backupId": backup_id,
        "candidates": inventory.candidates,
        "manifest": build_manifest(inventory, backup_id),
        "importDecision": decision,
        "targetWorkId": target_work_id,
        "evidenceId": evidence_id,
    }
