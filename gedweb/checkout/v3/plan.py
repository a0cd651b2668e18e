"""The dry run: what ``migrate_v3`` would do now. Reads only."""

from __future__ import annotations

from pathlib import Path

from gedweb.checkout import safefs
from gedweb.checkout.safefs import READ, sha256_hex
from gedweb.checkout.v3.files import gedpi_walk, read, top_level
from gedweb.checkout.v3.journal import read_completion, read_journal
from gedweb.checkout.v3.layout import (
    AMBIGUOUS_LEGACY_PATHS,
    CONTEXT_PATH,
    DECISIONS_PATH,
    GLOBAL_DIRS,
    GLOSSARY_PATH,
    RUNTIME,
    STATE_PATH,
    adr_path,
    backup_path,
)
from gedweb.checkout.v3.lock import holder_alive, read_lock_candidates
from gedweb.checkout.v3.pointers import needs_move
from gedweb.checkout.v3.reasons import (
    REASON_AMBIGUOUS,
    REASON_DEST_DIFFERS,
    REASON_GLOBAL,
    REASON_NO_OWNER,
    REASON_SKILLS,
)
from gedweb.checkout.v3.sources import gedweb_reported, task_destination, task_owner_index
from gedweb.checkout.v3.status import has_actionable_legacy_memory, placeholder_present
from gedweb.checkout.v3.texts import as_text, marker, parse_version
from gedweb.lib.gedpi_placeholders import PLACEHOLDERS, template_variant


def plan_v3(root: Path) -> list[str]:
    """What ``migrate_v3`` would do now, as human-readable lines. Reads only."""
    root = Path(root)
    head = "durable-memory-v3:"
    completed = read_completion(root)
    if completed is not None:
        return [f"{head} already complete ({STATE_PATH}, {len(completed['entries'])} entries);"
                " nothing to do"]
    version = read(root, ".ged/VERSION")
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
        if placeholder_present(root, source_path, text):
            removed.add(source_path)
            lines.append(f"  remove byte-exact placeholder {source_path}")

    def backup_note(source_path: str, content: bytes) -> str:
        existing = read(root, backup_path(source_path))
        if existing is not None and sha256_hex(existing) != sha256_hex(content):
            return (f" -- WOULD FAIL: Durable-memory backup conflict for {source_path}.")
        return ""

    for source_path in (GLOSSARY_PATH, DECISIONS_PATH):
        safefs.check(root, source_path, READ)
        content = read(root, source_path)
        if content is None or source_path in removed:
            continue
        digest = sha256_hex(content)
        if not needs_move(root, source_path, content, journal):
            lines.append(f"  keep {source_path}: verified migration pointer")
            continue
        if source_path == GLOSSARY_PATH:
            present = read(root, CONTEXT_PATH)
            if present is not None and marker("context", digest) in as_text(present):
                what = "CONTEXT.md already holds it"
            else:
                what = "append it once to CONTEXT.md"
            lines.append(f"  glossary {source_path} (sha256 {digest}): back up, {what} "
                         f"(marker {marker('context', digest)}), replace it with a pointer"
                         + backup_note(source_path, content))
        else:
            dest = adr_path(digest)
            present = read(root, dest)
            if present is None:
                what = f"write {dest}"
            elif marker("decisions", digest) in as_text(present):
                what = f"{dest} already holds them"
            else:
                what = f"WOULD FAIL: ADR destination conflict at {dest}."
            lines.append(f"  decisions {source_path} (sha256 {digest}): back up, {what}, "
                         "replace it with a pointer" + backup_note(source_path, content))

    files, _ = top_level(root, ".ged/tasks")
    owners = task_owner_index(root)
    for name in files:
        if name == "README.md" or f".ged/tasks/{name}" in removed:
            continue
        source_path = f".ged/tasks/{name}"
        content = read(root, source_path)
        if content is None:
            continue
        destination = task_destination(root, name, owners)
        note = backup_note(source_path, content)
        if destination is None:
            lines.append(f"  retain {source_path}: {REASON_NO_OWNER}{note}")
            continue
        present = read(root, destination)
        if present is not None and sha256_hex(present) != sha256_hex(content):
            lines.append(f"  retain {source_path}: {REASON_DEST_DIFFERS}{note}")
        else:
            lines.append(f"  move {source_path} -> {destination} (backed up first){note}")

    def retained_line(source_path: str, reason: str) -> None:
        content = read(root, source_path)
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
    for source_path in gedpi_walk(root, ".ged/project-skills"):
        if source_path not in removed:
            retained_line(source_path, REASON_SKILLS)
    for directory in GLOBAL_DIRS:
        for source_path in gedpi_walk(root, f".ged/{directory}"):
            if source_path not in removed:
                retained_line(source_path, REASON_GLOBAL)
    for source_path, reason in gedweb_reported(root):
        if source_path not in removed:
            retained_line(source_path, reason)
    lines.append(f"  write {STATE_PATH} (completion record, create-only) last")
    return lines
