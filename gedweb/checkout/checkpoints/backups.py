"""The byte-exact backups of every legacy file, and their verification."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from gedweb.checkout import safefs
from gedweb.checkout.checkpoints.classify import classify, logical_work_id
from gedweb.checkout.checkpoints.discovery import build_manifest, discover, walk_files
from gedweb.checkout.checkpoints.errors import (
    ARTIFACT_CONFLICT,
    INTEGRITY_FAILURE,
    SOURCE_DRIFT,
    CheckpointError,
)
from gedweb.checkout.checkpoints.layout import BACKUPS_DIR, MIGRATION_DIR, WORK
from gedweb.failpoints import failpoint


def _plan_view(candidates: list[dict[str, Any]], manifest: list[dict[str, Any]]) -> Any:
    return candidates, [{k: v for k, v in m.items() if k != "backupPath"} for m in manifest]


def check_inventory(root: Path, plan: Mapping[str, Any]) -> None:
    inventory = discover(root)
    current = _plan_view(inventory.candidates, build_manifest(inventory, plan["backupId"]))
    if current != _plan_view(plan["candidates"], plan["manifest"]):
        raise CheckpointError(
            SOURCE_DRIFT,
            "Legacy checkpoint sources changed after PLAN.json was written; restore them or "
            f"remove the unfinished {MIGRATION_DIR} (nothing was imported yet).",
        )


def back_up_sources(root: Path, plan: Mapping[str, Any]) -> None:
    for entry in plan["manifest"]:
        data = safefs.read_bytes(root, entry["sourcePath"])
        if data is None or len(data) != entry["size"] or safefs.sha256_hex(data) != entry["sha256"]:
            raise CheckpointError(
                SOURCE_DRIFT, f"Legacy file changed after planning: {entry['sourcePath']}"
            )
        if not safefs.publish_exclusive(root, entry["backupPath"], data):
            if safefs.read_bytes(root, entry["backupPath"]) != data:
                raise CheckpointError(
                    ARTIFACT_CONFLICT,
                    f"A different file already exists at backup path {entry['backupPath']}",
                )
        failpoint("checkpoints.backup-file")


def backup_problems(root: Path, plan: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    contents: dict[str, bytes] = {}
    for entry in plan["manifest"]:
        data = safefs.read_bytes(root, entry["backupPath"])
        if data is None:
            problems.append(f"Backup {entry['backupPath']} is missing.")
        elif len(data) != entry["size"] or safefs.sha256_hex(data) != entry["sha256"]:
            problems.append(f"Backup {entry['backupPath']} does not match its recorded hash.")
        else:
            contents[entry["sourcePath"]] = data
    source_dir = f"{BACKUPS_DIR}/{plan['backupId']}/source"
    planned = {entry["backupPath"] for entry in plan["manifest"]}
    for path in walk_files(root, source_dir):
        if path not in planned and not PurePosixPath(path).name.startswith(".gedweb-tmp-"):
            problems.append(f"Backup directory holds an unplanned file: {path}")
    for candidate in plan["candidates"]:
        data = contents.get(candidate["checkpointPath"])
        if data is None:
            continue
        if classify(data) != candidate["classification"]:
            problems.append(
                f"Backup of {candidate['checkpointPath']} no longer classifies as "
                f"{candidate['classification']}."
            )
        meta = f"{WORK}/{candidate['slug']}/META.json"
        meta_planned = any(m["sourcePath"] == meta for m in plan["manifest"])
        if meta_planned and meta not in contents:
            continue  # already reported as a missing or altered backup
        if logical_work_id(contents.get(meta), candidate["slug"]) != candidate["logicalWorkId"]:
            problems.append(
                f"Backup of {candidate['checkpointPath']} no longer has logical work ID "
                f"{candidate['logicalWorkId']}."
            )
    return problems


def verify_backups(root: Path, plan: Mapping[str, Any]) -> None:
    problems = backup_problems(root, plan)
    if problems:
        raise CheckpointError(INTEGRITY_FAILURE, " ".join(problems))
