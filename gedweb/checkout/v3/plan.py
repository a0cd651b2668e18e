"""The plan of a v3 migration: the actions, in order, that the run executes and the dry run prints.

As Django's ``migrate --plan``: ``plan_actions`` decides, from the checkout
and the journal, which step applies to which file (which placeholders go,
whether the glossary and the decisions move, where each task file goes, what
is retained and why). ``migrate_v3`` computes it under the lock and executes
that list (gedweb.checkout.v3.steps); ``plan_v3`` prints it. Reads only.

Each action also says the journal entry its execution records when nothing
changes meanwhile (``expected_entry``), and its dry-run line (``line``), which
adds what the run will find (a destination already holding the bytes, a
backup conflict that will stop it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gedweb.checkout import safefs
from gedweb.checkout.safefs import READ, WRITE, sha256_hex
from gedweb.checkout.v3.files import gedpi_walk, read, top_level
from gedweb.checkout.v3.journal import read_journal
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
from gedweb.checkout.v3.pointers import pointer_kind, pointer_prefix
from gedweb.checkout.v3.reasons import (
    REASON_AMBIGUOUS,
    REASON_DEST_DIFFERS,
    REASON_GLOBAL,
    REASON_NO_OWNER,
    REASON_SKILLS,
)
from gedweb.checkout.v3.sources import gedweb_reported, task_destination, task_owner_index
from gedweb.checkout.v3.status import assess, missing_version_hint, placeholder_present
from gedweb.checkout.v3.texts import as_text, marker
from gedweb.lib.gedpi_placeholders import PLACEHOLDERS, template_variant

# (action, destinationPath, reason) of the entry an action records; sourcePath is its own.
ExpectedEntry = tuple[str, str | None, str | None]


def _conflict_note(source_path: str, backup_conflict: bool) -> str:
    if not backup_conflict:
        return ""
    return f" -- WOULD FAIL: Durable-memory backup conflict for {source_path}."


@dataclass(frozen=True)
class RemovePlaceholder:
    """A. A byte-exact placeholder is deleted, its entry journaled first."""

    source_path: str
    text: str

    def line(self) -> str:
        return f"  remove byte-exact placeholder {self.source_path}"

    def expected_entry(self) -> ExpectedEntry | None:
        return ("removed-placeholder", None, None)


@dataclass(frozen=True)
class KeepPointer:
    """B/C. The glossary or decisions file is a pointer (gedweb.checkout.v3.pointers): kept.

    ``kind`` is "verified" (the pointer text a migration wrote, with evidence)
    or "heading" (GedPi's prefix rule; its destination holds content).
    """

    source_path: str
    kind: str = "verified"

    def line(self) -> str:
        if self.kind == "verified":
            return f"  keep {self.source_path}: verified migration pointer"
        destination = "CONTEXT.md" if self.source_path == GLOSSARY_PATH else "docs/adr/"
        return (f"  keep {self.source_path}: a pointer (starts with "
                f"`{pointer_prefix(self.source_path)}`; {destination} holds the content)")

    def expected_entry(self) -> ExpectedEntry | None:
        return None


@dataclass(frozen=True)
class MoveGlossary:
    """B. The glossary (these bytes) is appended once to CONTEXT.md and replaced by a pointer."""

    sha256: str
    context_holds_it: bool
    backup_conflict: bool
    source_path: str = GLOSSARY_PATH

    def line(self) -> str:
        mark = marker("context", self.sha256)
        what = ("CONTEXT.md already holds it" if self.context_holds_it
                else "append it once to CONTEXT.md")
        return (f"  glossary {self.source_path} (sha256 {self.sha256}): back up, {what} "
                f"(marker {mark}), replace it with a pointer"
                + _conflict_note(self.source_path, self.backup_conflict))

    def expected_entry(self) -> ExpectedEntry | None:
        return ("migrated-context", CONTEXT_PATH, None)


@dataclass(frozen=True)
class MoveDecisions:
    """C. The decisions (these bytes) become a content-addressed ADR, replaced by a pointer.

    ``adr`` is what the destination holds now: "absent", "same" (an earlier
    run's ADR) or "conflict" (other bytes, which stop the run).
    """

    sha256: str
    adr: str
    backup_conflict: bool
    source_path: str = DECISIONS_PATH

    @property
    def destination(self) -> str:
        return adr_path(self.sha256)

    def line(self) -> str:
        what = {"absent": f"write {self.destination}",
                "same": f"{self.destination} already holds them",
                "conflict": f"WOULD FAIL: ADR destination conflict at {self.destination}."}
        return (f"  decisions {self.source_path} (sha256 {self.sha256}): back up, "
                f"{what[self.adr]}, replace it with a pointer"
                + _conflict_note(self.source_path, self.backup_conflict))

    def expected_entry(self) -> ExpectedEntry | None:
        return ("migrated-decisions", self.destination, None)


@dataclass(frozen=True)
class MoveTask:
    """D. A global task file goes to the one work item whose TASKS.md owns it.

    ``destination_differs``: the destination already holds other bytes, so
    the run will retain the file instead (it checks again when it copies).
    """

    source_path: str
    destination: str
    destination_differs: bool
    backup_conflict: bool

    def line(self) -> str:
        note = _conflict_note(self.source_path, self.backup_conflict)
        if self.destination_differs:
            return f"  retain {self.source_path}: {REASON_DEST_DIFFERS}{note}"
        return f"  move {self.source_path} -> {self.destination} (backed up first){note}"

    def expected_entry(self) -> ExpectedEntry | None:
        if self.destination_differs:
            return ("retained-substantive", None, REASON_DEST_DIFFERS)
        return ("migrated-task-artifact", self.destination, None)


@dataclass(frozen=True)
class RetainTask:
    """D. A global task file that no one work item owns is backed up and retained."""

    source_path: str
    backup_conflict: bool

    def line(self) -> str:
        return (f"  retain {self.source_path}: {REASON_NO_OWNER}"
                + _conflict_note(self.source_path, self.backup_conflict))

    def expected_entry(self) -> ExpectedEntry | None:
        return ("retained-substantive", None, REASON_NO_OWNER)


@dataclass(frozen=True)
class Retain:
    """E-H. A legacy file with no canonical destination is backed up and retained in place.

    ``step`` names its crash points: "retained" (E-G, GedPi's) or "reported"
    (H, the files GedPi skips silently); ``template`` is the origin of an
    unchanged historical template, shown by the dry run.
    """

    source_path: str
    reason: str
    step: str
    template: str | None
    backup_conflict: bool

    def line(self) -> str:
        extra = f" [unchanged {self.template} template]" if self.template else ""
        return (f"  retain {self.source_path}: {self.reason}{extra}"
                + _conflict_note(self.source_path, self.backup_conflict))

    def expected_entry(self) -> ExpectedEntry | None:
        return ("retained-substantive", None, self.reason)


@dataclass(frozen=True)
class WriteCompletion:
    """The completion record, written last and create-only."""

    def line(self) -> str:
        return f"  write {STATE_PATH} (completion record, create-only) last"

    def expected_entry(self) -> ExpectedEntry | None:
        return None


Action = (RemovePlaceholder | KeepPointer | MoveGlossary | MoveDecisions | MoveTask
          | RetainTask | Retain | WriteCompletion)


class _Planner:
    def __init__(self, root: Path, journal: list[dict[str, Any]]) -> None:
        self.root = root
        self.journal = journal
        self.actions: list[Action] = []
        self.removed: set[str] = set()
        self.owners: dict[str, list[str]] | None = None

    def backup_conflict(self, source_path: str, content: bytes) -> bool:
        existing = read(self.root, backup_path(source_path))
        return existing is not None and sha256_hex(existing) != sha256_hex(content)

    def placeholders(self) -> None:
        for source_path, text in PLACEHOLDERS:
            if placeholder_present(self.root, source_path, text):
                self.removed.add(source_path)
                self.actions.append(RemovePlaceholder(source_path, text))

    def glossary_and_decisions(self) -> None:
        for source_path in (GLOSSARY_PATH, DECISIONS_PATH):
            safefs.check(self.root, source_path, READ)
            content = read(self.root, source_path)
            if content is None or source_path in self.removed:
                continue
            kind = pointer_kind(self.root, source_path, content, self.journal)
            if kind is not None:
                self.actions.append(KeepPointer(source_path, kind))
                continue
            digest = sha256_hex(content)
            conflict = self.backup_conflict(source_path, content)
            # The run's own checks of where it will write, so the plan refuses as it would.
            if source_path == GLOSSARY_PATH:
                safefs.check(self.root, CONTEXT_PATH, WRITE)
                present = read(self.root, CONTEXT_PATH)
                holds = present is not None and marker("context", digest) in as_text(present)
                self.actions.append(MoveGlossary(digest, holds, conflict))
            else:
                safefs.check(self.root, adr_path(digest), WRITE)
                present = read(self.root, adr_path(digest))
                if present is None:
                    adr = "absent"
                elif marker("decisions", digest) in as_text(present):
                    adr = "same"
                else:
                    adr = "conflict"
                self.actions.append(MoveDecisions(digest, adr, conflict))

    def tasks(self) -> None:
        files, _ = top_level(self.root, ".ged/tasks")
        for name in files:
            source_path = f".ged/tasks/{name}"
            if name == "README.md" or source_path in self.removed:
                continue
            safefs.check(self.root, source_path, READ)
            content = read(self.root, source_path)
            if content is None:
                continue
            conflict = self.backup_conflict(source_path, content)
            # Read once, and only when a task file needs it (as the run always did).
            if self.owners is None:
                self.owners = task_owner_index(self.root)
            destination = task_destination(self.root, name, self.owners)
            if destination is None:
                self.actions.append(RetainTask(source_path, conflict))
                continue
            safefs.check(self.root, destination, WRITE)
            present = read(self.root, destination)
            differs = present is not None and sha256_hex(present) != sha256_hex(content)
            self.actions.append(MoveTask(source_path, destination, differs, conflict))

    def retain(self, source_path: str, reason: str, step: str = "retained") -> None:
        safefs.check(self.root, source_path, READ)
        if source_path in self.removed:
            return
        content = read(self.root, source_path)
        if content is None:
            return
        variant = template_variant(source_path, content)
        self.actions.append(Retain(source_path, reason, step,
                                   variant.origin if variant else None,
                                   self.backup_conflict(source_path, content)))

    def retained(self) -> None:
        for source_path in AMBIGUOUS_LEGACY_PATHS:
            self.retain(source_path, REASON_AMBIGUOUS)
        for source_path in gedpi_walk(self.root, ".ged/project-skills"):
            self.retain(source_path, REASON_SKILLS)
        # A placeholder an interrupted run already removed stays removed, even
        # if a file of that name is back (GedPi's rule for the global folders).
        journaled = {entry.get("sourcePath") for entry in self.journal
                     if entry.get("action") == "removed-placeholder"}
        for directory in GLOBAL_DIRS:
            for source_path in gedpi_walk(self.root, f".ged/{directory}"):
                if source_path not in journaled:
                    self.retain(source_path, REASON_GLOBAL)

    def reported(self) -> None:
        for source_path, reason in gedweb_reported(self.root):
            self.retain(source_path, reason, step="reported")


def plan_actions(root: Path, journal: list[dict[str, Any]]) -> list[Action]:
    """The actions a run takes on the checkout at ``root`` now, in GedPi's step order."""
    planner = _Planner(Path(root), journal)
    planner.placeholders()
    planner.glossary_and_decisions()
    planner.tasks()
    planner.retained()
    planner.reported()
    return [*planner.actions, WriteCompletion()]


def plan_v3(root: Path) -> list[str]:
    """What ``migrate_v3`` would do now, as human-readable lines. Reads only."""
    root = Path(root)
    head = "durable-memory-v3:"
    assessment = assess(root)
    if assessment.completion is not None:
        return [f"{head} already complete ({STATE_PATH}, "
                f"{len(assessment.completion['entries'])} entries); nothing to do"]
    if assessment.status == "not-needed" and not assessment.has_version:
        return [f"{head} not needed (no .ged/VERSION); nothing to do",
                f"  {missing_version_hint(root, str(root))}"]
    if assessment.status == "not-needed":
        return [f"{head} not needed (VERSION {assessment.version}, no actionable legacy "
                "memory); nothing to do"]
    version = assessment.version if assessment.version is not None else "?"
    lines = [f"{head} migration needed (VERSION {version})"]
    journal = read_journal(root)
    if journal:
        lines.append(f"  resume: {len(journal)} journal entries from an interrupted run "
                     "are kept")
    for candidate in read_lock_candidates(root):
        owner = candidate.owner
        if holder_alive(root, owner):
            lines.append(f"  wait: lock {owner.token} is held by live pid {owner.pid}")
        else:
            lines.append(f"  quarantine stale lock {owner.token} (pid {owner.pid} is gone) "
                         f"to {RUNTIME}/STALE-{owner.token}.json")
    lines.extend(action.line() for action in plan_actions(root, journal))
    return lines
