"""Migration entries, the journal of an interrupted run and the completion record (§6.3-6.4)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gedweb.checkout.v3.errors import MigrationError
from gedweb.checkout.v3.files import read
from gedweb.checkout.v3.layout import JOURNAL_PATH, MIGRATION_ID, STATE_PATH
from gedweb.checkout.v3.texts import is_date, is_number, js_trim, parse_json

ACTIONS = (
    "removed-placeholder",
    "migrated-context",
    "migrated-decisions",
    "migrated-task-artifact",
    "retained-substantive",
)
ENTRY_FIELDS = ("sourcePath", "action", "sha256", "backupPath", "destinationPath", "reason")


HEX64_RE = re.compile(r"[a-f0-9]{64}")


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
    raw = read(root, STATE_PATH)
    if raw is None:
        return None
    try:
        value = parse_json(raw)
    except ValueError:
        raise MigrationError("Ged durable-memory migration state is malformed.") from None
    if (
        not isinstance(value, dict)
        or not (is_number(value.get("schemaVersion")) and value["schemaVersion"] == 1)
        or value.get("migrationId") != MIGRATION_ID
        or value.get("status") != "complete"
        or not is_date(value.get("completedAt"))
        or not isinstance(value.get("entries"), list)
    ):
        raise MigrationError("Ged durable-memory migration state is unsupported.")
    value["entries"] = [parse_entry(entry) for entry in value["entries"]]
    return value


def read_journal(root: Path) -> list[dict[str, Any]]:
    raw = read(root, JOURNAL_PATH)
    if raw is None:
        return []
    try:
        journal = parse_json(raw)
    except ValueError:
        raise MigrationError("Ged durable-memory migration journal is malformed.") from None
    if (
        not isinstance(journal, dict)
        or not (is_number(journal.get("schemaVersion")) and journal["schemaVersion"] == 1)
        or journal.get("migrationId") != MIGRATION_ID
        or not isinstance(journal.get("entries"), list)
    ):
        raise MigrationError("Ged durable-memory migration journal is unsupported.")
    return [parse_entry(entry) for entry in journal["entries"]]


def journal_evidence(root: Path) -> list[dict[str, Any]]:
    """Journal entries for pointer evidence; an invalid journal gives none (the run reports it)."""
    try:
        return read_journal(root)
    except MigrationError:
        return []
