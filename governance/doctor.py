"""Health checks behind `manage.py doctor` (GedPi gap G-12, contract §7).

Each check is a small function returning an Outcome: its problems (one
line each, naming the first bad seq, work id or path) and a short summary
for the ok line. The command only picks the projects and prints the lines.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor

from gedweb import append_only
from gedweb.lib import governance as gov
from gedweb.lib.digest import sha256_text
from governance import ledger_checkpoints
from governance.models import EvidenceRecord, GovernanceRevision, Skill, StandardsImport, WorkItem
from memory import mirror, redaction
from memory.models import EntryVector, MemoryEntry, Project
from memory.recall import vectors
from memory.redaction import pre_format_entries
from memory.services import memory_chain_verify
from memory.validators import validate_token_name

# A writer holds the mirror lock for one append or one rebuild; a lock still
# held after this long belongs to a stuck process, and every later mirror
# update of the project would wait behind it.
LOCK_WAIT_SECONDS = 2.0


@dataclass(frozen=True)
class Outcome:
    check: str
    problems: list[str] = field(default_factory=list)
    summary: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class Report:
    subject: str  # a project id, "database" or a checkout path
    outcome: Outcome

    def lines(self) -> list[str]:
        if self.outcome.ok:
            detail = f" ({self.outcome.summary})" if self.outcome.summary else ""
            return [f"ok   {self.subject}: {self.outcome.check}{detail}"]
        return [f"FAIL {self.subject}: {self.outcome.check}: {p}" for p in self.outcome.problems]


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


# --- memory ---------------------------------------------------------------------------


def check_chain(project: Project) -> Outcome:
    """Every link, and the log against every checkpoint; an intact head is checkpointed."""
    report = memory_chain_verify(project=project, checkpoint=True)
    if report.ok:
        noun = "entry" if report.entries == 1 else "entries"
        matched = (f", matches the checkpoint at seq {report.checkpoint.seq}"
                   if report.checkpoint is not None else "")
        redacted = f", {report.redacted} redacted" if report.redacted else ""
        # Said on every run, so an operator knows before a redaction is refused.
        old = pre_format_entries(project)
        pre_format = (f", {old} in chain format 1 (written before format 2: cannot be redacted)"
                      if old else "")
        return Outcome("chain", summary=f"{report.entries} {noun}{redacted}{pre_format}{matched}")
    return Outcome("chain", [problem.message for problem in report.problems])


def _lock_held(lock: Path) -> bool:
    """True when another process keeps the mirror lock for LOCK_WAIT_SECONDS."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    try:
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                if time.monotonic() >= deadline:
                    return True
                time.sleep(0.05)
            else:
                return False
    finally:
        os.close(fd)


def check_mirror(project: Project) -> Outcome:
    # Not mirror.project_dir(): it refuses the unsafe paths reported here.
    directory = mirror.memory_dir(project.pk)
    path = directory / mirror.MIRROR_NAME
    if not os.path.lexists(path) and not MemoryEntry.objects.for_project(project).exists():
        return Outcome("mirror", summary="no entries, no file yet")
    if directory.is_dir() and not directory.is_symlink():
        try:
            held = _lock_held(directory / mirror.LOCK_NAME)
        except OSError as exc:
            return Outcome("mirror", [f"cannot probe the lock {directory / mirror.LOCK_NAME}: "
                                      f"{exc.strerror}"])
        if held:
            return Outcome("mirror", [f"not compared: {directory / mirror.LOCK_NAME} is held"])
    if mirror.check(project):
        return Outcome("mirror", summary="MEMORY.md matches the record")
    if not os.path.lexists(path):
        return Outcome("mirror", [f"{path} is missing (memory mirror --rebuild writes it)"])
    return Outcome(
        "mirror", [f"{path} differs from a rebuild of the record (memory mirror --rebuild)"]
    )


def check_mirror_files(project: Project) -> Outcome:
    """Temp files of a rebuild that died, and a lock some process never lets go of."""
    directory = mirror.memory_dir(project.pk)
    if not directory.is_dir() or directory.is_symlink():
        return Outcome("mirror-files", summary="no mirror directory")
    problems = []
    leftovers = sorted(directory.glob(f"{mirror.TMP_PREFIX}*"))
    if leftovers:
        more = f" and {len(leftovers) - 1} more" if len(leftovers) > 1 else ""
        problems.append(
            f"leftover temp file {leftovers[0]}{more} from a rebuild that did not finish "
            "(memory mirror --rebuild removes it)"
        )
    lock = directory / mirror.LOCK_NAME
    if lock.is_symlink():
        problems.append(f"{lock} is a symlink")
    else:
        try:
            if _lock_held(lock):
                problems.append(
                    f"{lock} is held by another process for more than {LOCK_WAIT_SECONDS:g}s"
                )
        except OSError as exc:
            problems.append(f"cannot probe the lock {lock}: {exc.strerror}")
    return Outcome("mirror-files", problems, "no leftovers, lock free")


# --- governance -----------------------------------------------------------------------


def _work_problem(work: WorkItem) -> str | None:
    """What is wrong with one work item's stored governance, or None."""
    revisions = list(
        GovernanceRevision.objects.filter(work=work)
        .order_by("revision")
        .values_list("revision", "document_json", "evidence_count")
    )
    if not revisions:
        return "has no governance revision"
    for expected, (number, _, _) in enumerate(revisions):
        if number != expected:
            return f"revisions are not contiguous: r{expected} is missing"
    counts = [count for _, _, count in revisions]
    for number, (before, after) in enumerate(zip(counts, counts[1:]), start=1):
        if after < before:
            return f"r{number} counts fewer evidence records than r{number - 1}"
    records = list(
        EvidenceRecord.objects.filter(work=work)
        .order_by("position")
        .values_list("position", "record_json")
    )
    for expected, (position, _) in enumerate(records):
        if position != expected:
            return f"evidence positions are not contiguous: {expected} is missing"
    number, document_json, count = revisions[-1]
    if count != len(records):
        return f"r{number} counts {count} evidence records, {len(records)} are stored"
    try:
        document = json.loads(document_json)
        evidence = [json.loads(text) for _, text in records]
    except ValueError:
        return f"r{number} or its evidence is not valid JSON"
    if not isinstance(document, dict):
        return f"r{number} is not a JSON object"
    if document.get("revision") != number:
        return f"r{number} says it is revision {document.get('revision')!r}"
    try:
        gov.validate_state({**document, "evidence": evidence}, work.work_id)
    except gov.GovernanceError as exc:
        return f"r{number} is invalid: {exc.message}"
    return None


def check_governance(project: Project) -> Outcome:
    works = list(WorkItem.objects.for_project(project).order_by("work_id"))
    problems = []
    for work in works:
        problem = _work_problem(work)
        if problem is not None:
            problems.append(f"work {work.work_id}: {problem}")
    return Outcome("governance", problems, f"{_plural(len(works), 'work item')} valid")


def check_standards(project: Project) -> Outcome:
    """Each import's bytes still hash to the sha256 its decision was bound to."""
    rows = list(StandardsImport.objects.for_project(project).select_related("decision")
                .order_by("id"))
    # A redacted import's content leads back to the bytes decided on through
    # its redaction records (memory.redaction.committed_sha256).
    problems = [
        f"import {row.pk} of {row.path} ({row.status}): content hashes to "
        f"{sha256_text(row.content)}, not its recorded {row.sha256}"
        for row in rows
        if redaction.committed_sha256(row, "content") != row.sha256
    ]
    accepted = sum(1 for row in rows if row.status == "accepted")
    return Outcome("standards", problems, f"{_plural(len(rows), 'import')}, {accepted} accepted")


def check_ledger(project: Project) -> Outcome:
    """The trust ledger's links, every covered row against its record (governance.ledger),
    and the ledger against LEDGER-CHECKPOINTS, caught up first (governance.ledger_checkpoints)."""
    report = ledger_checkpoints.ledger_report(project)
    return Outcome("ledger", [problem["message"] for problem in report["problems"]],
                   f"{_plural(report['records'], 'record')}, "
                   "every trust-bearing row on it")


def check_skills(project: Project) -> Outcome:
    """A recorded content hash must match the content (a drifted skill is never served)."""
    current = list(Skill.objects.for_project(project).current().order_by("name"))
    problems = [
        f"skill {skill.name} v{skill.version}: content hashes to {skill.content_hash}, "
        f"not its recorded {skill.recorded_hash}"
        for skill in current
        if skill.recorded_hash is not None and skill.recorded_hash != skill.committed_hash
    ]
    verified = sum(1 for skill in current if skill.verified)
    return Outcome("skills", problems, f"{_plural(len(current), 'skill')}, {verified} verified")


def check_token_names(project: Project) -> Outcome:
    """No active token is named like an author GedWeb writes as (admin, cli, system, x:y).

    Such names are refused since issue 16; a token issued before keeps
    writing as that author until it is revoked. A revoked one is only noted:
    its entries stay, and revoking again fixes nothing.
    """
    problems, revoked = [], []
    for name, revoked_at in project.tokens.order_by("name", "pk").values_list("name",
                                                                             "revoked_at"):
        try:
            validate_token_name(name)
        except ValidationError:
            if revoked_at is None:
                problems.append(
                    f"active token {name!r} writes as an author GedWeb keeps for itself "
                    f"(admin, cli, system or a name with ':'): revoke it (manage.py project "
                    f"revoke {project.pk} --name {name}) and issue another")
            else:
                revoked.append(name)
    if revoked:
        names = ", ".join(repr(n) for n in revoked)
        return Outcome("token-names", problems,
                       f"revoked tokens named like GedWeb's own authors: {names}; entries "
                       "with those authors may be theirs")
    return Outcome("token-names", problems, "no token writes as GedWeb's own authors")


def check_recall_index(project: Project) -> Outcome:
    """Recall's vectors follow the record (docs/recall.md): none of a redacted entry, none stale.

    A vector of a redacted entry, or one made from a text the entry no longer
    holds, keeps a trace of content that left: a problem (`memory index
    --project P --rebuild` makes them again). Entries without a vector of
    the configured model are counted in the summary: the indexer may be
    behind, or stopped.
    """
    if settings.RECALL_MODEL == "off":
        return Outcome("recall-index", [], "recall by meaning is off (GEDWEB_RECALL_MODEL)")
    model = vectors.embedder().model_id
    problems = []
    redacted = set(MemoryEntry.objects.for_project(project)
                   .filter(redacts__isnull=False).values_list("redacts_id", flat=True))
    rows = (EntryVector.objects.filter(project=project).order_by("seq")
            .values_list("seq", "entry_id", "content_sha256", "entry__content"))
    indexed = 0
    for seq, entry_id, made_from, content in rows.iterator(chunk_size=2000):
        if entry_id in redacted:
            problems.append(f"entry #{seq} is redacted but keeps a recall vector: run "
                            f"manage.py memory index --project {project.pk} --rebuild")
        elif made_from != sha256_text(content):
            problems.append(f"entry #{seq}'s recall vector was made from another text than "
                            f"the entry holds: run manage.py memory index --project "
                            f"{project.pk} --rebuild")
        else:
            indexed += 1
    current = EntryVector.objects.filter(project=project, model=model).count()
    entries = MemoryEntry.objects.for_project(project).count() - len(redacted)
    missing = max(entries - current, 0)
    summary = f"{current} entr{'y' if current == 1 else 'ies'} indexed by {model}"
    if missing:
        summary += (f"; {missing} entr{'y' if missing == 1 else 'ies'} without a vector yet "
                    "(the indexer "
                    f"follows the record; manage.py memory index --project {project.pk})")
    return Outcome("recall-index", problems, summary)


def check_text_redactions(project: Project) -> Outcome:
    """Every secret cut out of a stored text is on a record GedWeb signed (memory.redaction)."""
    count, problems = redaction.text_redaction_problems(project)
    return Outcome("text-redactions", problems,
                   f"{_plural(count, 'text redaction')}, each signed")


PROJECT_CHECKS: tuple[Callable[[Project], Outcome], ...] = (
    check_chain,
    check_mirror,
    check_mirror_files,
    check_governance,
    check_standards,
    check_ledger,
    check_skills,
    check_text_redactions,
    check_token_names,
    check_recall_index,
)


# --- the server and a checkout ------------------------------------------------------------


def _gedweb_tables() -> list[str]:
    """The tables GedWeb's own models live in, memory's first (memory_project leads)."""
    return [model._meta.db_table for label in ("memory", "governance")
            for model in apps.get_app_config(label).get_models() if model._meta.managed]


def check_schema() -> Outcome:
    """GedWeb's tables exist. Without them no other database check can run, so the
    command reports this one line instead of failing on the first query."""
    try:
        existing = set(connection.introspection.table_names())
    except DatabaseError as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        return Outcome("migrations", [f"cannot read the database's tables: {text}"])
    tables = _gedweb_tables()
    missing = [table for table in tables if table not in existing]
    if not missing:
        return Outcome("migrations", summary=f"{_plural(len(tables), 'table')} present")
    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return Outcome("migrations", [
        f"the database is not migrated ({_plural(len(pending), 'migration')} not applied; "
        f"{len(missing)} of GedWeb's {len(tables)} tables are missing, {missing[0]} first): "
        "run `manage.py migrate`, then doctor again; no other check could run"])


def check_migrations() -> Outcome:
    executor = MigrationExecutor(connection)
    pending = [migration for migration, _ in executor.migration_plan(
        executor.loader.graph.leaf_nodes()
    )]
    # The plan skips a migration left unapplied below an applied one; list those too.
    planned = {(migration.app_label, migration.name) for migration in pending}
    pending += [
        executor.loader.graph.nodes[key]
        for key in sorted(executor.loader.graph.nodes)
        if key not in executor.loader.applied_migrations and key not in planned
    ]
    if not pending:
        return Outcome("migrations", summary="all applied")
    first = pending[0]
    return Outcome(
        "migrations",
        [f"{_plural(len(pending), 'migration')} not applied, first "
         f"{first.app_label}.{first.name} (manage.py migrate)"],
    )


def _normalized(sql: str) -> str:
    return " ".join(sql.split())


def _sqlite_trigger_problems(cursor: Any) -> list[str]:
    cursor.execute("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'")
    present = {name: (table, sql) for name, table, sql in cursor.fetchall()}
    problems = []
    for table in append_only.TABLES:
        for name, statement in append_only.expected_triggers("sqlite", table).items():
            found = present.get(name)
            if found is None:
                problems.append(f"{table}: trigger {name} is missing, so the database no longer "
                                f"refuses {name.rsplit('_', 1)[1].upper()} there")
            elif found[0] != table or _normalized(found[1]) != _normalized(statement):
                problems.append(f"{table}: trigger {name} is not the one GedWeb's migrations "
                                "created (its statement differs)")
    return problems


# tgenabled: O fires in the normal (origin) mode, A always; R only on
# replicas and D never, so either one lets UPDATE and DELETE through.
_FIRING = {"O", "A"}


def _postgres_trigger_problems(cursor: Any) -> list[str]:
    problems = []
    cursor.execute("SHOW session_replication_role")
    (role_mode,) = cursor.fetchone()
    if role_mode != "origin":
        problems.append(f"session_replication_role is {role_mode!r} for this connection "
                        "(a role or database setting): row triggers do not fire")
    for function, body in append_only.trigger_functions().items():
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", [function])
        bodies = [row[0] for row in cursor.fetchall()]
        if not bodies:
            problems.append(f"function {function}() is missing")
        elif any(_normalized(found) != _normalized(body) for found in bodies):
            problems.append(f"function {function}() is not the one GedWeb's migrations "
                            "created: its body differs")
    cursor.execute(
        "SELECT c.relname, t.tgname, t.tgenabled, p.proname, t.tgtype "
        "FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
        "JOIN pg_proc p ON p.oid = t.tgfoid "
        "WHERE NOT t.tgisinternal AND c.relname = ANY(%s) "
        "AND c.relnamespace = current_schema()::regnamespace",
        [list(append_only.TABLES)],
    )
    present = {(table, name): (enabled, function, kind)
               for table, name, enabled, function, kind in cursor.fetchall()}
    # tgtype bits: ROW 1, BEFORE 2, DELETE 8, UPDATE 16.
    wanted_type = 1 | 2 | 8 | 16
    for table in append_only.TABLES:
        for name in append_only.expected_triggers("postgresql", table):
            found = present.get((table, name))
            if found is None:
                problems.append(f"{table}: trigger {name} is missing, so the database no longer "
                                "refuses UPDATE and DELETE there")
                continue
            enabled, function, kind = found
            if enabled not in _FIRING:
                problems.append(f"{table}: trigger {name} is disabled "
                                f"(tgenabled {enabled!r}: ALTER TABLE ... ENABLE TRIGGER {name})")
            wanted_function = append_only.trigger_function(table)
            if function != wanted_function or kind & wanted_type != wanted_type:
                problems.append(f"{table}: trigger {name} is not the one GedWeb's migrations "
                                f"created (it must run {wanted_function}() BEFORE UPDATE OR "
                                "DELETE FOR EACH ROW)")
    return problems


def check_append_only_triggers() -> Outcome:
    """Every append-only table's triggers exist, unchanged and firing (docs/security.md)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            problems = _sqlite_trigger_problems(cursor)
        elif connection.vendor == "postgresql":
            problems = _postgres_trigger_problems(cursor)
        else:
            return Outcome("append-only triggers", summary=f"not checked on {connection.vendor}")
    return Outcome("append-only triggers", problems,
                   f"{_plural(len(append_only.TABLES), 'table')} refuse UPDATE and DELETE")


def check_database_privileges() -> Outcome:
    """On PostgreSQL, that this role cannot rewrite an append-only table (docs/security.md).

    Connected as a superuser or as the tables' owner, every privilege is
    there by design: that is reported in the summary, not failed. As any
    other role, an UPDATE, DELETE or TRUNCATE privilege on an append-only
    table is a failure (TRUNCATE fires no row trigger).
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user")
        user, superuser = cursor.fetchone()
        cursor.execute(
            "SELECT tablename, tableowner = current_user, "
            "has_table_privilege(current_user, quote_ident(tablename), 'UPDATE'), "
            "has_table_privilege(current_user, quote_ident(tablename), 'DELETE'), "
            "has_table_privilege(current_user, quote_ident(tablename), 'TRUNCATE') "
            "FROM pg_tables WHERE schemaname = current_schema() AND tablename = ANY(%s) "
            "ORDER BY tablename",
            [list(append_only.TABLES)],
        )
        rows = cursor.fetchall()
    owned = [table for table, owner, *_ in rows if owner]
    if superuser or owned:
        what = "a superuser" if superuser else f"the owner of {_plural(len(owned), 'table')}"
        return Outcome("database privileges", summary=(
            f"connected as {user!r}, {what}: it may UPDATE, DELETE and TRUNCATE the append-only "
            "tables and switch their triggers off; in production the server connects as an "
            "application role without them (docs/security.md, Privileges)"))
    problems = []
    for table, _, update, delete, truncate in rows:
        granted = [name for name, has in (("UPDATE", update), ("DELETE", delete),
                                          ("TRUNCATE", truncate)) if has]
        if granted:
            problems.append(f"{table}: role {user!r} has {', '.join(granted)} "
                            f"(REVOKE {', '.join(granted)} ON {table} FROM {user})")
    return Outcome("database privileges", problems,
                   f"role {user!r} cannot UPDATE, DELETE or TRUNCATE an append-only table")


def check_checkout(root: Path) -> Outcome:
    """A GedPi checkout's v3 migration leftovers and locks (gedweb.checkout.v3)."""
    from gedweb.checkout.v3 import checkout_problems

    return Outcome("checkout", list(checkout_problems(root)), "no migration leftovers or locks")


def _guarded(name: str, check: Callable[..., Outcome], *args: object) -> Outcome:
    # A doctor reports a check it could not finish; it does not stop there.
    try:
        return check(*args)
    except Exception as exc:  # noqa: BLE001 - any failure is a finding
        text = " ".join(str(exc).split()) or type(exc).__name__
        return Outcome(name, [f"could not run: {type(exc).__name__}: {text}"])


def diagnose(projects: list[Project], checkout: Path | None = None) -> list[Report]:
    """Every check, in a fixed order: the database first, then each project, then a checkout."""
    reports = [Report("database", _guarded("migrations", check_migrations)),
               Report("database", _guarded("append-only triggers", check_append_only_triggers))]
    if connection.vendor == "postgresql":
        reports.append(
            Report("database", _guarded("database privileges", check_database_privileges)))
    for project in projects:
        for check in PROJECT_CHECKS:
            name = check.__name__.removeprefix("check_").replace("_", "-")
            reports.append(Report(project.pk, _guarded(name, check, project)))
    if checkout is not None:
        reports.append(checkout_report(checkout))
    return reports


def checkout_report(checkout: Path) -> Report:
    """The checkout's check alone: it needs no database."""
    return Report(str(checkout), _guarded("checkout", check_checkout, checkout))


def diagnose_unmigrated(schema: Outcome, checkout: Path | None = None) -> list[Report]:
    """What doctor reports on a database without GedWeb's tables: that, and the checkout."""
    reports = [Report("database", schema)]
    if checkout is not None:
        reports.append(checkout_report(checkout))
    return reports
