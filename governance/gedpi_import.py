"""ged_import: ingest a migrated GedPi checkout into a project (docs/interop.md).

Two phases. ``read_checkout`` reads and validates every file first, through
gedweb.checkout.safefs (no symlink anywhere, strict UTF-8, GedPi's own
validators), without touching the database. ``import_checkout`` then writes
everything in one transaction through GedWeb's services, so a refusal
anywhere leaves the database as it was.

Import only adds: a file whose content GedWeb already holds writes nothing,
a changed file becomes a new version or revision, and nothing is rewritten.
Records come in with ``author`` naming ged_import and the checkout.

The checkout's own standards decisions are never trusted by default: whoever
can write the checkout could approve its own AGENTS.md. Each standards file
IMPORT-STATE.json decides arrives as a pending StandardsImport with its
bytes, for an operator to decide. ``trust`` names the paths whose checkout
decision an operator vouches for; each is refused unless the file in the
checkout hashes to a sha256 IMPORT-STATE.json accepted or rejected, and the
decision records ``ged_import:trusted-by:<name>`` (``trusted_by_label``).

A checkout may be hostile (docs/interop.md, "Hostile files"): every file is
read up to MAX_FILE_BYTES, all of them together up to MAX_TOTAL_BYTES, and
at most MAX_ENTRIES directory entries are walked, the migration gate's
included; past a limit the import stops naming the file or directory.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar, cast

from django.core.exceptions import ValidationError
from django.db import transaction

from gedweb.checkout import safefs
from gedweb.errors import CheckoutRefused, DomainError
from gedweb.lib import governance as gov
from gedweb.lib import skills as skill_rules
from gedweb.lib.digest import sha256_text
from gedweb.lib.ids import TRUSTED_BY_NAME_RE, is_document_id, is_hex64, is_task_id, is_work_id
from gedweb.progress import Advance, Progress, no_progress, unshown
from gedweb.validation import validation_error_line
from governance import services
from governance.gedpi_export import render_tree
from governance.handoffs import handoff_path, handoff_put
from governance.models import STANDARDS_PATHS, StandardsImport, TaskArtifact, WorkItem
from governance.skills import skill_import
from governance.standards import standards_decision_import, standards_import_submit
from memory import quotas, secret_scan
from memory.documents import (
    PutResult,
    document_current,
    document_put,
    validate_document_content,
)
from memory.locks import lock_project
from memory.models import Project

T = TypeVar("T")

TASK_FILE_NAMES = tuple(TaskArtifact.Name.values)
_SKILL_RECORD_KEYS = {"name", "source", "sourcePath", "taskRefs", "installedAt", "reason",
                      "provenance", "contentHash"}
_META_KEYS = {"schemaVersion", "workId", "summary", "createdAt", "branch", "baseHead", "origin"}

# Reading bounds (docs/interop.md, "Hostile files"). The largest text GedWeb keeps is a
# 200,000-character document (up to 800,000 UTF-8 bytes); a STANDARDS.md frames several.
MAX_FILE_BYTES = 8 * 1024 * 1024  # any one file read
MAX_TOTAL_BYTES = 256 * 1024 * 1024  # all files read by one import
MAX_ENTRIES = 50_000  # directory entries walked by one import, the migration gate's too


# --- the migration gate ------------------------------------------------------------------


def migration_status(root: Path) -> str:
    """gedweb.checkout.v3's verdict: "not-needed", "needed" or "complete"."""
    from gedweb.checkout.v3 import migration_status as status

    return str(status(root))


def _check_migrated(root: Path, shown: str | None = None) -> None:
    """Refuse a tree the import cannot read; ``shown`` names it in the refusal (default: root)."""
    from gedweb.checkout.v3 import MigrationError

    name = str(root) if shown is None else shown

    try:
        status = migration_status(root)
        version = safefs.read_bytes(root, ".ged/VERSION", max_bytes=MAX_FILE_BYTES)
    except RecursionError:
        raise CheckoutRefused(f"{name}: a migration record is JSON nested too deeply") from None
    except (MigrationError, safefs.UnsafePath, OSError, ValueError) as exc:
        raise CheckoutRefused(f"{name}: {exc}") from None
    if status == "needed":
        raise CheckoutRefused(
            f"{name} is not migrated to GedPi durable-memory v3; run "
            f"`manage.py ged_migrate_v3 {name}` first"
        )
    if version is None and status != "complete":
        from gedweb.checkout.v3 import missing_version_hint

        raise CheckoutRefused(f"{name} is not a GedPi checkout: .ged/VERSION is missing; "
                              f"{missing_version_hint(root, name)}")
    number = re.match(r"\s*([+-]?[0-9]+)", version.decode("utf-8", "replace")) if version else None
    if number is not None and int(number.group(1)) > 3:
        # A number was read, so VERSION exists.
        shown_version = cast(bytes, version)[:20]
        raise CheckoutRefused(
            f"{name}: .ged/VERSION is {shown_version!r}; ged_import reads version 3 only"
        )
    # A VERSION below 3 with a complete migration is fine: ged_migrate_v3 leaves
    # raising VERSION to GedPi's next start (docs/migration.md).


# --- what a checkout holds ---------------------------------------------------------------


@dataclass
class StandardsEntry:
    status: str
    path: str
    sha256: str
    content: str


@dataclass
class SkillEntry:
    name: str
    content: str
    record: dict[str, Any]
    installed_at: datetime


@dataclass
class WorkEntry:
    meta: dict[str, Any]
    document: dict[str, Any]
    files: dict[str, str]
    tasks: dict[tuple[str, str], str]


@dataclass
class Checkout:
    root: Path
    documents: dict[str, tuple[str, str]] = field(default_factory=dict)  # doc -> (file, text)
    standards: list[StandardsEntry] = field(default_factory=list)
    skills: list[SkillEntry] = field(default_factory=list)
    work: list[WorkEntry] = field(default_factory=list)
    handoffs: dict[str, tuple[str, str]] = field(default_factory=dict)  # work id -> (file, text)
    # Per standards path: the (status, sha256) of every hash-bound accepted or
    # rejected IMPORT-STATE.json entry, those whose bytes are gone included,
    # and the sha256 of the file's raw bytes in the checkout (None: absent).
    decisions: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    source_hashes: dict[str, str | None] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    # Every supported file read, for the byte round-trip report.
    supported: dict[str, bytes] = field(default_factory=dict)

    def skip(self, rel: str, reason: str) -> None:
        self.skipped.append(f"{rel}: {reason}")


class _Reader:
    """Reads through safefs, once per file, turning every refusal into CheckoutRefused."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._read: dict[str, bytes | None] = {}
        self._bytes = 0
        self._entries = 0
        self._counted: set[tuple[str, bool]] = set()

    def data(self, rel: str) -> bytes | None:
        if rel not in self._read:
            try:
                data = safefs.read_bytes(self.root, rel, max_bytes=MAX_FILE_BYTES)
            except safefs.UnsafePath as exc:
                raise CheckoutRefused(str(exc)) from None
            except OSError as exc:
                raise CheckoutRefused(f"{rel}: {exc.strerror or exc}") from None
            self._bytes += len(data or b"")
            if self._bytes > MAX_TOTAL_BYTES:
                raise _refuse(rel, f"the checkout files read so far hold more than "
                                   f"{MAX_TOTAL_BYTES:,} bytes, the most ged_import reads")
            self._read[rel] = data
        return self._read[rel]

    def count_entries(self, rel_dir: str, *, recursive: bool) -> None:
        """Count rel_dir's entries (all levels if recursive) against MAX_ENTRIES.

        Run before a walk, which would otherwise list a huge directory whole. Links
        are not followed; the walk that follows refuses them. A directory counted
        once (the migration gate's, then the listing of what is left) counts once.
        """
        if (rel_dir, recursive) in self._counted:
            return
        self._counted.add((rel_dir, recursive))
        try:
            stack = [safefs.check(self.root, rel_dir)]
        except safefs.UnsafePath as exc:
            raise CheckoutRefused(str(exc)) from None
        while stack:
            try:
                listing = os.scandir(stack.pop())
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                raise CheckoutRefused(f"{rel_dir}: {exc.strerror or exc}") from None
            with listing:
                for entry in listing:
                    self._entries += 1
                    if self._entries > MAX_ENTRIES:
                        raise _refuse(rel_dir, f"the checkout has more than {MAX_ENTRIES:,} "
                                               "files and directories where ged_import "
                                               "looks, the most it walks")
                    if recursive and entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))

    def check_size(self, rel: str) -> None:
        """Refuse a file over MAX_FILE_BYTES that another module reads unbounded."""
        try:
            path = safefs.check(self.root, rel)
            info = os.lstat(path)
        except FileNotFoundError:
            return
        except safefs.UnsafePath as exc:
            raise CheckoutRefused(str(exc)) from None
        except OSError as exc:
            raise CheckoutRefused(f"{rel}: {exc.strerror or exc}") from None
        if stat.S_ISREG(info.st_mode) and info.st_size > MAX_FILE_BYTES:
            raise CheckoutRefused(
                f"{safefs.READ} is larger than {MAX_FILE_BYTES:,} bytes: {rel}"
            )

    def bound_migration_gate(self) -> None:
        """Bound what gedweb.checkout.v3.migration_status reads before it runs."""
        from gedweb.checkout import v3
        from gedweb.lib.gedpi_placeholders import PLACEHOLDERS

        for rel in (v3.STATE_PATH, ".ged/VERSION", v3.JOURNAL_PATH,
                    v3.GLOSSARY_PATH, v3.DECISIONS_PATH, v3.CONTEXT_PATH,
                    *(source for source, _ in PLACEHOLDERS)):
            self.check_size(rel)
        for directory in v3.LEGACY_DIRS:
            self.count_entries(f".ged/{directory}", recursive=True)
        # A pointer's destination: is there an ADR for a `# Decisions moved` pointer?
        self.count_entries("docs/adr", recursive=False)

    def text(self, rel: str) -> str | None:
        data = self.data(rel)
        if data is None:
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CheckoutRefused(
                f"{rel} is not valid UTF-8 (byte {exc.start}); ged_import reads UTF-8 text only"
            ) from None
        if "\x00" in text:
            raise CheckoutRefused(f"{rel} contains NUL characters; ged_import reads text only")
        return text

    def json(self, rel: str) -> Any:
        text = self.text(rel)
        if text is None:
            return None

        def refuse_constant(name: str) -> Any:
            raise ValueError(f"{name} is not JSON")

        try:
            return json.loads(text, parse_constant=refuse_constant)
        except ValueError as exc:
            raise CheckoutRefused(f"{rel} is not valid JSON: {exc}") from None
        except RecursionError:
            raise CheckoutRefused(f"{rel} is not valid JSON: nested too deeply") from None

    def files(self, rel_dir: str, *, recursive: bool = True) -> list[str]:
        self.count_entries(rel_dir, recursive=recursive)
        try:
            return list(safefs.walk_files(self.root, rel_dir, recursive=recursive))
        except safefs.UnsafePath as exc:
            raise CheckoutRefused(str(exc)) from None
        except OSError as exc:
            raise CheckoutRefused(f"{rel_dir}: {exc.strerror or exc}") from None

    def listing(self, rel_dir: str, *, recursive: bool = True) -> list[str]:
        """The regular files under rel_dir, named only (never read); links are skipped.

        For the legacy folders ged_import leaves: GedPi's walk skips links there
        too, and nothing is read through them.
        """
        self.count_entries(rel_dir, recursive=recursive)
        try:
            return list(safefs.walk_files(self.root, rel_dir, recursive=recursive,
                                          skip_symlinks=True))
        except safefs.UnsafePath as exc:
            raise CheckoutRefused(str(exc)) from None
        except OSError as exc:
            raise CheckoutRefused(f"{rel_dir}: {exc.strerror or exc}") from None

    def subdirs(self, rel_dir: str) -> list[str]:
        """Names of the directories directly under rel_dir (symlinks refused)."""
        self.count_entries(rel_dir, recursive=False)
        try:
            base = safefs.check(self.root, rel_dir)
            if not safefs.is_dir(self.root, rel_dir):
                return []
            names = []
            for entry in os.scandir(base):
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISLNK(mode):
                    raise safefs.UnsafePath(
                        f"Read source traverses a symbolic link: {rel_dir}/{entry.name}"
                    )
                if stat.S_ISDIR(mode):
                    names.append(entry.name)
            return sorted(names)
        except safefs.UnsafePath as exc:
            raise CheckoutRefused(str(exc)) from None
        except OSError as exc:
            raise CheckoutRefused(f"{rel_dir}: {exc.strerror or exc}") from None


def _refuse(rel: str, message: str) -> CheckoutRefused:
    return CheckoutRefused(f"{rel}: {message}")


# --- durable documents ---------------------------------------------------------------------


def _read_document(reader: _Reader, checkout: Checkout, rel: str, path: str) -> None:
    text = reader.text(rel)
    if text is None:
        return
    checkout.supported[rel] = text.encode("utf-8")
    try:
        validate_document_content(text)
    except ValidationError as exc:
        message = validation_error_line(exc)
        if message.startswith("requires substantive content"):
            # GedPi's rule: a non-substantive text is not a durable artifact.
            checkout.skip(rel, "not substantive, so not a durable document")
            return
        raise _refuse(rel, message) from None
    checkout.documents[path] = (rel, text)


def _read_documents(reader: _Reader, checkout: Checkout) -> None:
    _read_document(reader, checkout, ".ged/PROJECT.md", "PROJECT.md")
    _read_document(reader, checkout, "CONTEXT.md", "CONTEXT.md")
    for folder, prefix in (("docs/adr", "adr/"), (".ged/reports", "reports/")):
        for rel in reader.files(folder, recursive=False):
            name = PurePosixPath(rel).name
            ident = name[: -len(".md")] if name.endswith(".md") else ""
            if not is_document_id(ident):
                checkout.skip(rel, "not <id>.md with a GedPi document id")
                continue
            _read_document(reader, checkout, rel, f"{prefix}{name}")


# --- standards -------------------------------------------------------------------------------

_SECTION = re.compile(
    r"^## (?P<path>[^\n]+)\n\nApproved content hash: (?P<hash>[0-9a-f]{64})\n\n"
    r"<<<(?P<marker>GED_APPROVED_[0-9A-F]{64}(?:_X)*):BEGIN>>>\n",
    re.MULTILINE,
)


_SECTION_END = re.compile(r"<<<(?P<marker>GED_APPROVED_[0-9A-F]{64}(?:_X)*):END>>>")


def _approved_sections(text: str) -> dict[tuple[str, str], str]:
    """(path, sha256) -> content, from the frames of a GedPi STANDARDS.md."""
    # Every END marker is found in one pass: a search from each section would be
    # quadratic on a hostile file of many sections without an end.
    end_markers: dict[str, list[int]] = {}
    for match in _SECTION_END.finditer(text):
        end_markers.setdefault(match["marker"], []).append(match.start())
    found: dict[tuple[str, str], str] = {}
    for match in _SECTION.finditer(text):
        positions = end_markers.get(match["marker"], [])
        index = bisect.bisect_left(positions, match.end())
        if index == len(positions):
            continue
        end = positions[index]
        body = text[match.end():end]
        # GedPi adds a newline to content without one; the hash tells which it was.
        for content in (body, body[:-1] if body.endswith("\n") else None):
            if content is not None and sha256_text(content) == match["hash"]:
                found[(match["path"], match["hash"])] = content
    return found


def _read_standards(reader: _Reader, checkout: Checkout) -> None:
    rel = ".ged/IMPORT-STATE.json"
    state = reader.json(rel)
    standards_text = reader.text(".ged/STANDARDS.md")
    if standards_text is not None:
        checkout.supported[".ged/STANDARDS.md"] = standards_text.encode("utf-8")
    if state is None:
        return
    checkout.supported[rel] = reader.data(rel) or b""
    if not isinstance(state, dict) or set(state) - {"accepted", "rejected", "pending",
                                                    "standardsHash"}:
        raise _refuse(rel, "must be an object with accepted, rejected, pending, standardsHash")
    standards_hash = state.get("standardsHash")
    if standards_hash is not None and not (
        is_hex64(standards_hash)
    ):
        raise _refuse(rel, "standardsHash must be null or 64 lowercase hex")
    sections = _approved_sections(standards_text or "")
    sources: dict[str, str | None] = {}
    for status in ("accepted", "rejected", "pending"):
        entries = state.get(status, [])
        if not isinstance(entries, list):
            raise _refuse(rel, f"{status} must be a list")
        for index, item in enumerate(entries):
            where = f"{status}[{index}]"
            if isinstance(item, str):
                checkout.skip(rel, f"{where} {item}: legacy entry without a hash (never trusted)")
                continue
            if not isinstance(item, dict) or set(item) != {"path", "hash"}:
                raise _refuse(rel, f"{where} must be {{path, hash}}")
            path, sha256 = item["path"], item["hash"]
            if path not in STANDARDS_PATHS:
                raise _refuse(rel, f"{where} names {path!r}, not a repository-wide standards file")
            if sha256 == "legacy-unbound":
                checkout.skip(rel, f"{where} {path}: legacy-unbound hash (never trusted)")
                continue
            if not is_hex64(sha256):
                raise _refuse(rel, f"{where} hash must be 64 lowercase hex")
            if status != StandardsImport.PENDING:
                checkout.decisions.setdefault(path, []).append((status, sha256))
            if path not in sources:
                sources[path] = reader.text(path)
                raw = reader.data(path)
                checkout.source_hashes[path] = (
                    None if raw is None else hashlib.sha256(raw).hexdigest()
                )
            current = sources[path]
            if current is not None and sha256_text(current) == sha256:
                content: str | None = current
            else:
                content = sections.get((path, sha256))
            if content is None:
                # GedWeb binds every decision to bytes; these are gone from the checkout.
                checkout.skip(rel, f"{where} {path} {sha256[:12]}: its bytes are neither in "
                                   f"{path} nor in .ged/STANDARDS.md")
                continue
            checkout.standards.append(StandardsEntry(status, path, sha256, content))


# --- skills --------------------------------------------------------------------------------


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _skill_record_problem(record: Any) -> str | None:
    if not isinstance(record, dict):
        return "is not an object"
    unknown = set(record) - _SKILL_RECORD_KEYS
    if unknown:
        return f"has unknown keys {', '.join(sorted(unknown))}"
    name = record.get("name")
    if not isinstance(name, str) or skill_rules.name_problem(name):
        return "name is not a valid skill name"
    source = record.get("source")
    if "provenance" not in record:
        # A pre-v3 record: never trusted whatever it says, so any source text is kept.
        if not isinstance(source, str) or not source.strip():
            return "source must not be blank"
    elif source not in ("bundled", "user", "created"):
        return "source must be bundled, user or created"
    if "sourcePath" in record and (
        not isinstance(record["sourcePath"], str)
        or len(record["sourcePath"]) > skill_rules.MAX_SOURCE_CHARS
    ):
        return f"sourcePath must be a string of at most {skill_rules.MAX_SOURCE_CHARS} characters"
    refs = record.get("taskRefs")
    if not isinstance(refs, list) or not all(isinstance(ref, str) for ref in refs):
        return "taskRefs must be a list of strings"
    if _parse_time(record.get("installedAt")) is None:
        return "installedAt must be a date"
    if "reason" in record and (
        not isinstance(record["reason"], str) or not record["reason"].strip()
    ):
        return "reason must not be blank"
    if record.get("provenance", "legacy-unverified") not in (
        "installed-copy", "reusable-explicit", "legacy-unverified"
    ):
        return "provenance is not known"
    if "contentHash" in record and not is_hex64(record["contentHash"]):
        return "contentHash must be 64 lowercase hex"
    return None


def _read_skills(reader: _Reader, checkout: Checkout) -> None:
    rel = ".ged/SKILLS-STATE.json"
    state = reader.json(rel)
    recorded: set[str] = set()
    if state is not None:
        checkout.supported[rel] = reader.data(rel) or b""
        if not isinstance(state, dict) or state.get("schemaVersion", 2) != 2 or not isinstance(
            state.get("managed"), list
        ) or set(state) - {"schemaVersion", "managed"}:
            raise _refuse(rel, "Ged project skill provenance state is unsupported")
        for index, record in enumerate(state["managed"]):
            problem = _skill_record_problem(record)
            if problem:
                raise _refuse(rel, f"managed[{index}] {problem}")
            name = record["name"]
            if name in recorded:
                raise _refuse(rel, f"managed[{index}] repeats the skill {name}")
            recorded.add(name)
            skill_rel = f".agents/skills/{name}/SKILL.md"
            content = reader.text(skill_rel)
            if content is None:
                checkout.skip(rel, f"managed[{index}] {name}: {skill_rel} is missing")
                continue
            if "\x00" in content or len(content) > skill_rules.MAX_CONTENT_CHARS:
                raise _refuse(skill_rel, "must be at most 100,000 characters without NUL")
            checkout.supported[skill_rel] = content.encode("utf-8")
            installed_at = _parse_time(record["installedAt"])
            assert installed_at is not None
            checkout.skills.append(SkillEntry(name, content, record, installed_at))
    for skill_rel in reader.files(".agents/skills"):
        parts = PurePosixPath(skill_rel).parts
        if len(parts) == 4 and parts[3] == "SKILL.md" and parts[2] in recorded:
            continue
        checkout.skip(skill_rel, "no provenance record in .ged/SKILLS-STATE.json"
                      if parts[-1] == "SKILL.md" else "not a SKILL.md")


# --- work items ------------------------------------------------------------------------------


def _meta_problem(meta: Any, work_id: str) -> str | None:
    if not isinstance(meta, dict):
        return "is not an object"
    if meta.get("schemaVersion") != 1 or meta.get("workId") != work_id:
        return "needs schemaVersion 1 and the directory's workId"
    summary = meta.get("summary")
    if not isinstance(summary, str) or not summary.strip() or len(summary) > 240:
        return "summary must be 1-240 characters"
    if not gov.is_canonical_time(meta.get("createdAt")):
        return "createdAt must be a canonical UTC time"
    for key, limit in (("branch", 255), ("baseHead", 64)):
        value = meta.get(key)
        if value is not None and (not isinstance(value, str) or len(value) > limit):
            return f"{key} must be null or a string of at most {limit} characters"
    if "origin" in meta:
        origin = meta["origin"]
        if not isinstance(origin, dict) or set(origin) != set(services.ORIGIN_KEYS):
            return "origin must have exactly kind, migrationId, candidateId, selectable"
    unknown = set(meta) - _META_KEYS
    if unknown:
        return f"has keys GedWeb does not keep: {', '.join(sorted(unknown))}"
    return None


def _read_work_item(reader: _Reader, checkout: Checkout, work_id: str) -> None:
    work_dir, runtime = f".ged/work/{work_id}", f".ged/runtime/{work_id}"
    meta_rel, gov_rel = f"{work_dir}/META.json", f"{runtime}/governance.json"
    meta = reader.json(meta_rel)
    document = reader.json(gov_rel)
    if meta is None:
        if document is not None:
            raise _refuse(gov_rel, "has no .ged/work META.json (GedPi checks META first)")
        checkout.skip(work_dir, "no META.json")
        return
    if document is None:
        checkout.skip(work_dir, _no_governance_reason(reader, work_id))
        return
    checkout.supported[meta_rel] = reader.data(meta_rel) or b""
    checkout.supported[gov_rel] = reader.data(gov_rel) or b""
    problem = _meta_problem(meta, work_id)
    if problem:
        raise _refuse(meta_rel, problem)
    try:
        gov.validate_state(document, work_id)
    except gov.GovernanceError as exc:
        raise _refuse(gov_rel, exc.message) from None
    if any(len(record["id"]) > 255 for record in document["evidence"]):
        raise _refuse(gov_rel, "evidence ids longer than 255 characters are not kept")
    repository = document["repository"]
    if (document["summary"], repository["branch"], repository["baseHead"]) != (
        meta["summary"], meta["branch"], meta["baseHead"]
    ):
        raise _refuse(gov_rel, "summary, branch or baseHead differs from META.json")
    mode = document["decision"]["mode"]
    allowed = {"direct-change": ("DIRECT.md",), "planned-change": ("SPEC.md", "TASKS.md",
                                                                    "TESTS.md")}.get(mode, ())
    entry = WorkEntry(meta, document, {}, {})
    for rel in reader.files(work_dir):
        parts = PurePosixPath(rel).parts[3:]
        if parts == ("META.json",):
            continue
        if len(parts) == 1 and parts[0] in allowed:
            text = reader.text(rel)
            assert text is not None
            checkout.supported[rel] = text.encode("utf-8")
            entry.files[parts[0]] = text
        elif len(parts) == 3 and parts[0] == "tasks" and parts[2] in TASK_FILE_NAMES:
            task_id, name = parts[1], parts[2]
            if not is_task_id(task_id):
                checkout.skip(rel, "task id is not a GedPi task id")
                continue
            text = reader.text(rel)
            assert text is not None
            if name == "HISTORY.json":
                try:
                    history = json.loads(text)
                except (ValueError, RecursionError):
                    history = None
                if not isinstance(history, list):
                    raise _refuse(rel, "must be a JSON array of attempts")
            checkout.supported[rel] = text.encode("utf-8")
            entry.tasks[(task_id, name)] = text
        else:
            checkout.skip(rel, f"not a work file GedWeb keeps for {mode} work")
    state_rel = f"{runtime}/STATE.md"
    state_md = reader.data(state_rel)
    if state_md is not None:
        checkout.supported[state_rel] = state_md  # derived: compared, never imported
    handoff_rel = f"{runtime}/SESSION-SUMMARY.md"
    handoff = reader.text(handoff_rel)
    if handoff is not None:
        checkout.supported[handoff_rel] = handoff.encode("utf-8")
        try:
            validate_document_content(handoff)
            checkout.handoffs[work_id] = (handoff_rel, handoff)
        except ValidationError as exc:
            checkout.skip(handoff_rel, validation_error_line(exc))
    checkout.work.append(entry)


def _no_governance_reason(reader: _Reader, work_id: str) -> str:
    """Why a work item with META.json but no governance.json is not imported, truthfully."""
    gov_rel = f".ged/runtime/{work_id}/governance.json"
    try:
        runtime_present = safefs.is_dir(reader.root, ".ged/runtime")
    except safefs.UnsafePath as exc:
        raise CheckoutRefused(str(exc)) from None
    if not runtime_present:
        # GedPi's .ged/.gitignore ignores runtime/: every clone of a repository
        # has META.json and the work files, never the governance state.
        return (f"no {gov_rel}: there is no .ged/runtime/ folder, which GedPi's "
                ".ged/.gitignore keeps out of Git, so a clone never has it; import the "
                "working checkout where GedPi ran (or copy its .ged/runtime/ here) to bring "
                "this work item and its governance")
    return (f"no {gov_rel}: GedPi writes it when work is opened on the item (its bootstrap "
            "work item has none), so there is no governance state to import")


def _read_work(reader: _Reader, checkout: Checkout) -> None:
    work_ids = reader.subdirs(".ged/work")
    for name in work_ids:
        if not is_work_id(name):
            checkout.skip(f".ged/work/{name}", "not a generated work id (legacy layout)")
            continue
        _read_work_item(reader, checkout, name)
    for name in reader.subdirs(".ged/runtime"):
        if is_work_id(name) and name not in work_ids and reader.data(
            f".ged/runtime/{name}/governance.json"
        ) is not None:
            raise _refuse(f".ged/runtime/{name}/governance.json",
                          "has no .ged/work META.json (GedPi checks META first)")


# --- legacy files ged_import leaves ----------------------------------------------------------

# GedWeb's own files under .ged/runtime/ (the writer lease, gedweb pull's record), and
# the v3 layout's: not legacy.
_RUNTIME_CURRENT = {"active-work", "migrations", "checkout-writer-lease", "checkout-writer-guard",
                    "gedweb"}
_LEGACY_BRAIN = ".pi/agents/ged-brain.md"


def _retained_reasons(root: Path) -> dict[str, str]:
    """sourcePath -> the reason the completion record gives for keeping it in place."""
    from gedweb.checkout.v3 import MigrationError, read_completion

    try:
        record = read_completion(root)
    except (MigrationError, safefs.UnsafePath, OSError, ValueError):
        return {}  # unreachable after the migration gate, which refuses such a record
    entries = record["entries"] if record is not None else []
    return {entry["sourcePath"]: entry["reason"] for entry in entries
            if entry.get("action") == "retained-substantive"}


def _list_pointers(reader: _Reader, checkout: Checkout) -> None:
    from gedweb.checkout import v3
    from gedweb.checkout.v3.journal import journal_evidence

    journal = journal_evidence(reader.root)
    for rel, home in ((v3.GLOSSARY_PATH, "CONTEXT.md"), (v3.DECISIONS_PATH, "docs/adr/")):
        data = reader.data(rel)
        if data is None:
            continue
        try:
            kind = v3.pointer_kind(reader.root, rel, data, journal)
        except safefs.UnsafePath as exc:
            raise CheckoutRefused(str(exc)) from None
        if kind is not None:
            checkout.skip(rel, f"a compatibility pointer, not imported: GedPi never reads it as "
                               f"memory, and {home} holds the content")
        else:
            # Only a complete migration lets a non-pointer through the gate.
            checkout.skip(rel, f"not a pointer, and not imported: the v3 migration is already "
                               f"complete, so GedPi never moves this file; move what it holds "
                               f"into {home} by hand to keep it")


def _legacy_reason(rel: str, default: str, retained: dict[str, str],
                   placeholders: dict[str, str], data: bytes | None) -> str:
    if data is not None and placeholders.get(rel) == data.decode("utf-8", "replace"):
        return "an unchanged GedPi template, not imported: it holds nothing"
    why = retained.get(rel, default)
    return (f"legacy GedPi memory, not imported: the v3 migration keeps it in place ({why}) "
            "and GedPi v3 never reads it; move what is still true into PROJECT.md, "
            "CONTEXT.md, an ADR or a skill")


def _list_legacy(reader: _Reader, checkout: Checkout) -> None:
    """Name every legacy GedPi file the import leaves in the checkout, with why.

    None of them is read as memory by GedPi v3 or imported by GedWeb; listing
    them tells the operator what still needs a human (docs/interop.md).
    Files are named, not read, except those GedPi's placeholder check reads.
    """
    from gedweb.checkout import v3
    from gedweb.lib.gedpi_placeholders import PLACEHOLDERS

    placeholders = dict(PLACEHOLDERS)
    retained = _retained_reasons(reader.root)
    _list_pointers(reader, checkout)
    for rel in (*v3.AMBIGUOUS_LEGACY_PATHS, _LEGACY_BRAIN):
        default = (v3.REASONS_KEPT_CANONICAL[rel] if rel == _LEGACY_BRAIN
                   else v3.REASON_AMBIGUOUS)
        try:
            present = safefs.is_file(reader.root, rel)
        except safefs.UnsafePath as exc:
            raise CheckoutRefused(str(exc)) from None
        if present:
            checkout.skip(rel, _legacy_reason(rel, default, retained, placeholders,
                                              reader.data(rel) if rel in placeholders else None))
    for directory in v3.LEGACY_DIRS:
        folder = f".ged/{directory}"
        for rel in reader.listing(folder):
            if directory == "tasks":
                nested = rel.count("/") > 2
                default = v3.REASON_TASK_SUBDIR if nested else v3.REASON_NO_OWNER
            else:
                default = v3.REASON_SKILLS if directory == "project-skills" else v3.REASON_GLOBAL
            data = reader.data(rel) if rel in placeholders else None
            checkout.skip(rel, _legacy_reason(rel, default, retained, placeholders, data))
    legacy_runtime = reader.listing(".ged/runtime", recursive=False)
    for name in reader.subdirs(".ged/runtime"):
        if name not in _RUNTIME_CURRENT and not is_work_id(name):
            legacy_runtime.extend(reader.listing(f".ged/runtime/{name}"))
    for rel in legacy_runtime:
        checkout.skip(rel, "legacy branch-scoped runtime state, not imported: GedPi v3 never "
                           "reads it; ged_migrate_v3's legacy checkpoint step is what brings a "
                           "checkpoints.json in, as paused work that needs a human decision")


def read_checkout(root: Path, shown: str | None = None) -> Checkout:
    """Read and validate everything ged_import would write; no database access.

    ``shown`` is how the migration gate's refusals name the checkout (default:
    ``root``); an upload unpacked in a temporary directory is named as its sender
    named it.
    """
    absolute = Path(os.path.abspath(root))
    if os.path.realpath(absolute) != str(absolute):
        raise CheckoutRefused(f"{root} is or lies inside a symbolic link")
    if not absolute.is_dir():
        raise CheckoutRefused(f"{root} is not a directory")
    reader = _Reader(absolute)
    reader.bound_migration_gate()
    _check_migrated(absolute, shown)
    checkout = Checkout(absolute)
    checkout.supported[".ged/VERSION"] = reader.data(".ged/VERSION") or b""
    _read_documents(reader, checkout)
    _read_standards(reader, checkout)
    _read_skills(reader, checkout)
    _read_work(reader, checkout)
    _list_legacy(reader, checkout)
    return checkout


# --- writing -----------------------------------------------------------------------------------


@dataclass
class ImportResult:
    root: str
    created: dict[str, int] = field(default_factory=dict)
    unchanged: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    # One line per IMPORT-STATE.json entry imported: where its bytes stand now.
    standards: list[str] = field(default_factory=list)
    # The checkout decisions accepted on an operator's word (--trust-decisions).
    trusted: list[dict[str, str]] = field(default_factory=list)
    trusted_by: str | None = None
    # The work items whose imported governance an operator trusts (--trust-governance).
    trusted_governance: list[dict[str, Any]] = field(default_factory=list)
    # Supported files whose bytes ged_export would not give back (see docs/interop.md).
    not_reproducible: list[str] = field(default_factory=list)
    # Called once per item counted: the import's progress (gedweb.progress).
    advance: Advance = field(default=unshown, repr=False, compare=False)

    def count(self, kind: str, changed: bool) -> None:
        target = self.created if changed else self.unchanged
        target[kind] = target.get(kind, 0) + 1
        self.advance(1)

    def as_dict(self) -> dict[str, Any]:
        return {"root": self.root, "created": self.created, "unchanged": self.unchanged,
                "skipped": self.skipped, "standards": self.standards,
                "trusted": self.trusted, "trusted_by": self.trusted_by,
                "trusted_governance": self.trusted_governance,
                "not_reproducible": self.not_reproducible}


def _named(rel: str, call: Callable[[], T]) -> T:
    """Run one write; a refusal names the checkout file it came from."""
    try:
        return call()
    except ValidationError as exc:
        raise CheckoutRefused(f"{rel}: {validation_error_line(exc)}") from None
    except DomainError as exc:
        raise type(exc)(f"{rel}: {exc.message}", **exc.extra) from None


def import_label(root: Path) -> str:
    """author of everything ged_import writes: ged_import and the checkout."""
    return f"ged_import:{root.name or root}"[:64]


# --- trusting the checkout's standards decisions ---------------------------------------------

TRUSTED_BY_PREFIX = "ged_import:trusted-by:"
_IMPORT_STATE = ".ged/IMPORT-STATE.json"


def trusted_by_label(name: str) -> str:
    """decided_by of a checkout decision an operator trusted: ``ged_import:trusted-by:<name>``.

    Token names cannot contain ':' and the admin's decisions read ``admin`` or
    ``user:<username>``, so this label cannot pass for another author.
    """
    if TRUSTED_BY_NAME_RE.fullmatch(name) is None:
        raise ValidationError(
            f"{name!r} cannot name who trusts the checkout: use 1-42 letters, digits or "
            ". _ @ + - (no ':' or spaces), starting with a letter or digit"
        )
    return TRUSTED_BY_PREFIX + name


def _trust_refused(path: str, message: str) -> CheckoutRefused:
    return CheckoutRefused(f"--trust-decisions {path}: {message}; nothing was imported")


def _trusted_entry(checkout: Checkout, path: str) -> StandardsEntry:
    """The checkout decision on path's current bytes, or a refusal saying why there is none."""
    if path not in STANDARDS_PATHS:
        raise _trust_refused(path, "not a repository-wide standards file ("
                             + ", ".join(STANDARDS_PATHS) + ")")
    decided = checkout.decisions.get(path, [])
    if not decided:
        raise _trust_refused(path, f"{_IMPORT_STATE} has no accepted or rejected entry "
                                   f"bound to a hash for {path}")
    recorded = ", ".join(f"{status} {sha256}" for status, sha256 in decided)
    current = checkout.source_hashes.get(path)
    if current is None:
        raise _trust_refused(path, f"{path} is not in the checkout, so its bytes match no "
                                   f"sha256 {_IMPORT_STATE} recorded ({recorded})")
    statuses = {status for status, sha256 in decided if sha256 == current}
    if not statuses:
        raise _trust_refused(path, f"{path} in the checkout has sha256 {current}, not the "
                                   f"sha256 {_IMPORT_STATE} recorded ({recorded})")
    if len(statuses) > 1:
        raise _trust_refused(path, f"{_IMPORT_STATE} both accepts and rejects sha256 {current}")
    (status,) = statuses
    for entry in checkout.standards:
        if (entry.path, entry.sha256, entry.status) == (path, current, status):
            return entry
    raise AssertionError(f"{path}: the checkout's bytes were read but not kept")


def trusted_entries(checkout: Checkout, paths: Iterable[str]) -> list[StandardsEntry]:
    """The entries --trust-decisions accepts, in IMPORT-STATE.json order; no database access."""
    chosen = {id(entry) for entry in (_trusted_entry(checkout, path) for path in paths)}
    return [entry for entry in checkout.standards if id(entry) in chosen]


def _refuse_contradictions(project: Project, entries: list[StandardsEntry]) -> None:
    """Refuse, before anything is listed or written, a trusted decision GedWeb contradicts."""
    for entry in entries:
        row = (StandardsImport.objects.for_project(project).select_related("decision")
               .filter(path=entry.path, sha256=entry.sha256).first())
        decision = row.current_decision if row is not None else None
        if decision is not None and decision.status != entry.status:
            raise CheckoutRefused(
                f"{_IMPORT_STATE}: {entry.path} {entry.sha256} is {entry.status} in the "
                f"checkout but was already {decision.status} by {decision.decided_by}"
            )


_UNTRUSTED = {"accepted": "acceptance", "rejected": "rejection"}


def _import_standard(project: Project, entry: StandardsEntry, author: str,
                     trusted_by: str | None) -> tuple[bool, str]:
    """Write one IMPORT-STATE.json entry; returns (changed, its summary line)."""
    where = f"{entry.path} {entry.sha256[:12]}"
    if trusted_by is not None:
        outcome = _named(_IMPORT_STATE, lambda: standards_decision_import(
            project=project, path=entry.path, content=entry.content, status=entry.status,
            author=author, decided_by=trusted_by,
        ))
        if outcome != "unchanged":
            return True, f"{where}: {entry.status}, trusted by {trusted_by}"
    row, created = _named(_IMPORT_STATE, lambda: standards_import_submit(
        project=project, path=entry.path, content=entry.content, author=author,
    ))
    decision = row.current_decision
    if decision is not None:
        return created, f"{where}: {decision.status} by {decision.decided_by}"
    if entry.status == StandardsImport.PENDING:
        return created, f"{where}: pending review (pending in the checkout too)"
    return created, (
        f"{where}: pending review (the checkout's own {_UNTRUSTED[entry.status]} is not "
        "trusted; decide in the admin or with --trust-decisions)"
    )


def _put_document(project: Project, path: str, rel: str, text: str,
                  write: Callable[..., PutResult]) -> bool:
    """Store ``text`` as the next revision of ``path`` unless it already is the current one.

    ``write(expected_revision=...)`` stores it: document_put for memory's
    documents, handoff_put (governance's rule) for a handoff.
    """
    current = document_current(project, path)
    if current is not None and current.content == text:
        return False  # also for reports, which document_put refuses to touch again
    result = _named(rel, lambda: write(expected_revision=current.revision if current else None))
    return result.changed


def checkout_texts(checkout: Checkout) -> Iterator[tuple[str, dict[str, str | None]]]:
    """(checkout file, its texts by field) of everything import_checkout writes."""
    for rel, text in checkout.documents.values():
        yield rel, {"content": text}
    for entry in checkout.standards:
        yield f"{entry.path} ({_IMPORT_STATE} {entry.sha256[:12]})", {"content": entry.content}
    for skill in checkout.skills:
        yield f".agents/skills/{skill.name}/SKILL.md", {
            "content": skill.content, "reason": skill.record.get("reason"),
            "source": skill.record.get("sourcePath")}
    for work in checkout.work:
        work_id = work.meta["workId"]
        yield f".ged/work/{work_id}/META.json", secret_scan.json_fields(None, work.meta, "meta")
        yield (f".ged/runtime/{work_id}/governance.json",
               secret_scan.json_fields(None, work.document, "governance"))
        for name, text in work.files.items():
            yield f".ged/work/{work_id}/{name}", {"content": text}
        for (task_id, name), text in work.tasks.items():
            yield f".ged/work/{work_id}/tasks/{task_id}/{name}", {"content": text}
    for rel, text in checkout.handoffs.values():
        yield rel, {"content": text}


def import_checkout(
    *,
    project: Project,
    root: Path,
    trust: Iterable[str] = (),
    trusted_by: str | None = None,
    trust_governance: Iterable[str] = (),
    announce: Callable[[list[dict[str, str]], str], None] | None = None,
    shown: str | None = None,
    author: str | None = None,
    progress: Progress = no_progress,
) -> ImportResult:
    """Validate the whole checkout, then write it in one transaction (or nothing).

    ``trust``: the standards paths whose checkout decision is accepted as
    ``trusted_by`` (a ``trusted_by_label``); every other decision arrives
    pending. ``announce(trusted, trusted_by)`` is called with what will be
    trusted once every check has passed and before anything is written.
    ``trust_governance``: the work ids of the checkout whose imported
    governance (evidence, approvals, lifecycle) the same ``trusted_by``
    trusts (services.governance_trust); every other import counts for
    nothing until an operator trusts it.

    ``shown`` names the checkout in refusals, in ``root`` and in the documents'
    reason, and ``author`` writes every row, instead of root and
    ``import_label(root)`` (an upload: governance.gedpi_sync). ``progress``
    is told the number of items to write once the checkout has passed its
    checks, and advanced once per item written or found unchanged.
    """
    paths = list(dict.fromkeys(trust))
    work_ids = list(dict.fromkeys(trust_governance))
    if (paths or work_ids) and (trusted_by is None
                                or not trusted_by.startswith(TRUSTED_BY_PREFIX)):
        raise ValueError("trusting checkout decisions needs a trusted_by_label()")
    checkout = read_checkout(root, shown)
    in_checkout = {entry.meta["workId"] for entry in checkout.work}
    for work_id in work_ids:
        if work_id not in in_checkout:
            raise CheckoutRefused(
                f"--trust-governance {work_id}: the checkout has no governance.json of that "
                "work item to trust; nothing was imported")
    author = import_label(checkout.root) if author is None else author
    named = str(checkout.root) if shown is None else shown
    reason = f"ged_import of {named}"[:1000]
    result = ImportResult(named, skipped=list(checkout.skipped))
    trusted = trusted_entries(checkout, paths)
    _refuse_contradictions(project, trusted)
    if trusted:
        result.trusted_by = trusted_by
        result.trusted = [{"path": e.path, "decision": e.status, "sha256": e.sha256}
                          for e in trusted]
        if announce is not None:
            announce(result.trusted, str(trusted_by))
    trusted_ids = {id(entry) for entry in trusted}
    # Every text of the checkout is scanned before anything is written, so the
    # refusal names every file holding a secret, not only the first one written.
    secret_scan.refuse_items(project, checkout_texts(checkout), "checkout files")
    result.advance = progress(_items(checkout, work_ids), "import")
    # The quota charges of the whole checkout are taken at the end, once per
    # kind (memory.quotas.deferred): after every work item lock, as single
    # writes take them, and over quota the whole import is refused.
    with transaction.atomic(), quotas.deferred():
        lock_project(project)
        for path, (rel, text) in checkout.documents.items():
            write = partial(document_put, project=project, path=path, content=text,
                            author=author, reason=reason)
            result.count("documents", _put_document(project, path, rel, text, write))
        for entry in checkout.standards:
            changed, line = _import_standard(
                project, entry, author, trusted_by if id(entry) in trusted_ids else None
            )
            result.count("standards", changed)
            result.standards.append(line)
        for skill in checkout.skills:
            outcome = _named(f".agents/skills/{skill.name}/SKILL.md", partial(
                skill_import, project=project, name=skill.name, content=skill.content,
                record=skill.record, installed_at=skill.installed_at, author=author,
            ))
            result.count("skills", outcome != "unchanged")
        for work_entry in checkout.work:
            _import_work(project, work_entry, author, result)
        for work_id in work_ids:
            work = WorkItem.objects.get(project=project, work_id=work_id)
            trust_row = services.governance_trust(work=work, trusted_by=str(trusted_by))
            result.count("governance_trusts", trust_row is not None)
            if trust_row is not None:
                result.trusted_governance.append({
                    "work_id": work_id, "revision": trust_row.revision,
                    "document_sha256": trust_row.document_sha256,
                    "trusted_by": trust_row.trusted_by})
        for work_id, (rel, text) in checkout.handoffs.items():
            write = partial(handoff_put, project=project, work_id=work_id, content=text,
                            author=author, reason=reason)
            result.count("documents", _put_document(project, handoff_path(work_id), rel, text,
                                                    write))
        rendered = render_tree(project)
        result.not_reproducible = sorted(
            rel for rel, data in checkout.supported.items() if rendered.get(rel) != data
        )
    return result


def _items(checkout: Checkout, trusted_work: list[str]) -> int:
    """How many items an import counts (one ``ImportResult.count`` each)."""
    # A work item counts its META, its governance revision, its files and tasks.
    work = sum(2 + len(entry.files) + len(entry.tasks) for entry in checkout.work)
    return (len(checkout.documents) + len(checkout.standards) + len(checkout.skills) + work
            + len(trusted_work) + len(checkout.handoffs))


def _import_work(project: Project, entry: WorkEntry, author: str, result: ImportResult) -> None:
    work_id = entry.meta["workId"]
    work_dir = f".ged/work/{work_id}"
    work, created = _named(f"{work_dir}/META.json", lambda: services.work_import(
        project=project, meta=entry.meta, document=entry.document, author=author,
    ))
    result.count("work_items", created)
    added = _named(f".ged/runtime/{work_id}/governance.json", lambda: services.governance_import(
        work=work, document=entry.document, author=author,
    ))
    result.count("governance_revisions", added)
    for name, text in entry.files.items():
        result.count("work_files", _named(f"{work_dir}/{name}", partial(
            services.work_file_import, work=work, name=name, content=text, author=author,
        )))
    for (task_id, name), text in entry.tasks.items():
        result.count("task_artifacts", _named(
            f"{work_dir}/tasks/{task_id}/{name}",
            partial(services.task_artifact_import, work=work, task_id=task_id, name=name,
                    content=text, author=author),
        ))

