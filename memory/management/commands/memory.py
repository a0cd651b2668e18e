"""`manage.py memory add|list|verify|checkpoint|mirror|index|scan|allow-secret|redact|purge`."""

from __future__ import annotations

import getpass
import os
import signal
import threading
import time
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import DatabaseError, close_old_connections

from gedweb.commands import GedWebCommand, get_project, run_service, to_json
from gedweb.embedding import EmbedderUnavailable
from gedweb.pagination import keyset_slice
from gedweb.progress import progress_bar
from memory import checkpoints, mirror, redaction, secret_scan, selectors, services
from memory.api.serializers import ChainCheckpointSerializer, EntrySerializer, VerifySerializer
from memory.models import MemoryEntry, Project
from memory.recall import indexer, vectors


def _stop_on_signals() -> threading.Event:
    """Set when SIGTERM or SIGINT arrives: a follower finishes its pass, then stops."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    signal.signal(signal.SIGINT, lambda signum, frame: stop.set())
    return stop


class Command(GedWebCommand):
    help = "Append, list and verify project memory; check, rebuild or follow the mirrors."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.add_actions(parser, "action")

        add = actions.add_parser("add", help="append an entry (author 'cli')")
        add.add_argument("--project", required=True)
        add.add_argument("--category", required=True)
        add.add_argument("--content", required=True)
        add.add_argument("--source", default="operator")
        add.add_argument("--corrects", help="uuid or seq of the corrected entry")

        listing = actions.add_parser("list", help="print entries as JSON, oldest first")
        listing.add_argument("--project", required=True)
        listing.add_argument("--limit", type=int, default=100)
        listing.add_argument("--category")
        listing.add_argument("--after", type=int, default=0, help="only seq greater than this")

        verify = actions.add_parser(
            "verify",
            help="recompute the hash chain, check it against every checkpoint; exit 1 if not "
            "intact (an intact head is recorded as a checkpoint)",
        )
        verify.add_argument("--project", required=True)

        checkpoint = actions.add_parser(
            "checkpoint", help="verify, then record the head as a signed checkpoint"
        )
        checkpoint.add_argument("--project", required=True)

        mirror_parser = actions.add_parser("mirror", help="check, rebuild or follow MEMORY.md")
        mirror_parser.add_argument("--project", help="one project (default: all)")
        mode = mirror_parser.add_mutually_exclusive_group(required=True)
        mode.add_argument("--check", action="store_true", help="exit 1 if a mirror drifted")
        mode.add_argument("--rebuild", action="store_true", help="rewrite from the database")
        mode.add_argument(
            "--follow", action="store_true", help="keep every mirror current (follower mode)"
        )
        mirror_parser.add_argument(
            "--interval", type=float, default=0.5, help="seconds between follower passes"
        )
        mirror_parser.add_argument(
            "--force", action="store_true",
            help="--rebuild even a memory that fails verification (the mirror may be the "
            "last copy of what the database held)")
        mirror_parser.add_argument(
            "--once", action="store_true", help="with --follow: one catch-up pass, then exit"
        )

        index = actions.add_parser(
            "index", help="give entries their vectors for recall by meaning: backfill with a "
            "progress bar, rebuild after a model change, or follow the record (docs/recall.md)")
        index.add_argument("--project", help="one project (default: every project)")
        index.add_argument("--rebuild", action="store_true",
                           help="forget the vectors first, then make them all again")
        index.add_argument("--follow", action="store_true",
                           help="keep following the record (what `make run` starts)")
        index.add_argument("--interval", type=float, default=0.25,
                           help="with --follow: seconds between looks when idle")
        index.add_argument("--exit-with-parent", action="store_true",
                           help="with --follow: stop when the process that started it ends")
        index.add_argument("--nice", type=int, default=10,
                           help="with --follow: lower its CPU priority by this much, so "
                           "requests come first (default 10)")

        scan = actions.add_parser(
            "scan",
            help="find secrets in stored text, keep the findings for the admin and list them "
            "(one JSON line per finding: row, field, kind, rule, position, fingerprint; never "
            "the secret); exit 1 if one is not allowed",
        )
        scan.add_argument("--project", help="one project (default: all)")

        allow = actions.add_parser(
            "allow-secret",
            help="allow one finding of the secret scanner in a project, by its fingerprint",
        )
        allow.add_argument("--project", required=True)
        allow.add_argument("--fingerprint", required=True, help="as a refusal or scan names it")
        allow.add_argument("--reason", required=True, help="why it is not a secret")
        allow.add_argument("--by", required=True, help="who allows it (recorded)")

        redact = actions.add_parser(
            "redact",
            help="remove an entry's content for good, keeping its place in the chain: the "
            "content becomes the notice of a redaction record (docs/operations.md, Redaction)",
        )
        redact.add_argument("--project", required=True)
        what = redact.add_mutually_exclusive_group(required=True)
        what.add_argument("--seq", type=int, help="the entry to redact")
        what.add_argument("--finding", type=int,
                          help="the secret finding (of `memory scan`, its id in the admin) to "
                          "redact: an entry's content, or the secret's span in any other text")
        redact.add_argument("--reason", required=True, help="why (recorded, shown in its place)")
        redact.add_argument("--by", default=None,
                            help="who redacts (recorded; default cli:<login name>)")
        redact.add_argument("--full-vacuum", action="store_true",
                            help="rewrite the whole table or file afterwards (PostgreSQL VACUUM "
                            "FULL locks the entries table while it runs)")

        purge = actions.add_parser(
            "purge", help="take the bytes of redacted content out of the database files again "
            "(what `redact` does after its commit)")
        purge.add_argument("--full-vacuum", action="store_true")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        getattr(self, f"_{action.replace('-', '_')}")(**options)

    def _add(self, *, project: str, category: str, content: str, source: str,
             corrects: str | None, **_: Any) -> None:
        target = get_project(project)
        result = run_service(
            lambda: services.memory_entry_create(
                project=target,
                author=services.CLI_AUTHOR,
                category=category,
                content=content,
                source=source,
                corrects=corrects,
            )
        )
        self.stdout.write(to_json(EntrySerializer.render(result.entry)))

    def _list(self, *, project: str, limit: int, category: str | None, after: int,
              **_: Any) -> None:
        if not 1 <= limit <= 500:
            raise CommandError("--limit must be between 1 and 500")
        entries = selectors.entry_list(project=get_project(project), category=category)
        page = keyset_slice(entries, key="seq", limit=limit, after=after)
        items = EntrySerializer.render_many(page.items)
        self.stdout.write(to_json({"items": items}))

    def _verify(self, *, project: str, **_: Any) -> None:
        target = get_project(project)
        with self._entries_bar(target, f"{target.pk} verify") as bar:
            report = services.memory_chain_verify(project=target, checkpoint=True,
                                                  on_entry=bar.update)
        self.stdout.write(to_json(VerifySerializer.render(report)))
        self._fail_unless_intact(project, report)

    def _entries_bar(self, project: Project, description: str) -> Any:
        """A progress bar over the project's entries, on a terminal only (gedweb.progress)."""
        head = MemoryEntry.objects.for_project(project).head()
        return progress_bar(head["seq"] if head else 0, unit="entries",
                            file=self.stderr._out, description=description)

    def _fail_unless_intact(self, project: str, report: checkpoints.VerifyReport) -> None:
        if report.ok:
            return
        where = f" at seq {report.first_bad_seq}" if report.first_bad_seq is not None else ""
        first, *more = report.problems
        also = f" (and {len(more)} more problem(s), listed in the report)" if more else ""
        raise CommandError(
            f"memory of {project} fails verification{where}: {first.message}{also}", returncode=1
        )

    def _checkpoint(self, *, project: str, **_: Any) -> None:
        target = get_project(project)
        report = services.memory_chain_verify(project=target)
        if not report.ok:
            self.stdout.write(to_json(VerifySerializer.render(report)))
            self._fail_unless_intact(project, report)
        taken = services.chain_checkpoint_take(project=target, head=(report.entries, report.head))
        self.stdout.write(to_json({
            "project_id": target.pk,
            "checkpoint": ChainCheckpointSerializer.render(taken) if taken else None,
        }))

    def _projects(self, project_id: str | None) -> list[Project]:
        if project_id:
            return [get_project(project_id)]
        return list(Project.objects.order_by("id"))

    def _mirror(self, *, project: str | None, check: bool, rebuild: bool, follow: bool,
                interval: float, once: bool, force: bool = False, **_: Any) -> None:
        projects = self._projects(project)
        if check:
            drifted = [p.pk for p in projects if not mirror.check(p)]
            for project_id in drifted:
                # Not mirror_path(): it refuses the unsafe paths being reported here.
                path = mirror.memory_dir(project_id) / mirror.MIRROR_NAME
                self.stderr.write(f"mirror drifted: {path}")
            self.stdout.write(to_json({"checked": len(projects), "drifted": drifted}))
            if drifted:
                raise CommandError(f"{len(drifted)} mirror(s) drifted", returncode=1)
        elif rebuild:
            for target in projects:
                if not force:
                    # A rebuild over a forged or broken record would erase
                    # the mirror's copy, the one signal left outside the database.
                    self._fail_unless_intact(target.pk, checkpoints.verify(target.pk))
                try:
                    with self._entries_bar(target, f"{target.pk} mirror") as bar:
                        mirror.rebuild(target, on_entry=bar.update)
                except (mirror.MirrorPathError, OSError) as exc:
                    raise CommandError(f"cannot rebuild the mirror of {target.pk}: {exc}") from None
            self.stdout.write(to_json({"rebuilt": [p.pk for p in projects]}))
        else:
            self._follow(project, interval, once)

    def _follow(self, project_id: str | None, interval: float, once: bool) -> None:
        """Tail the record and keep mirrors current (GEDWEB_MIRROR_WRITER=follower)."""
        stop = _stop_on_signals()
        # The files other apps keep beside the mirror (the trust ledger's
        # LEDGER-CHECKPOINTS) registered themselves: memory cannot import them.
        followed = checkpoints.followed_files()
        synced: dict[str, tuple[int, ...]] = {}
        while not stop.is_set():
            for target in self._projects(project_id):
                head = MemoryEntry.objects.for_project(target).head()
                heads = (head["seq"] if head else 0,
                         *(extra.head(target.pk) for extra in followed))
                if synced.get(target.pk) == heads:
                    continue
                try:
                    result = mirror.sync(target)
                    checkpoints.sync_file(target.pk)
                    for extra in followed:
                        extra.sync(target.pk)
                except Exception as exc:  # keep following the other projects
                    self.stderr.write(f"mirror {target.pk}: {exc}")
                    continue
                synced[target.pk] = heads
                if result.appended or result.rebuilt:
                    self.stdout.write(to_json(result.__dict__))
            if once:
                return
            time.sleep(interval)

    def _index(self, *, project: str | None, rebuild: bool, follow: bool, interval: float,
               exit_with_parent: bool, nice: int, **_: Any) -> None:
        embedder = vectors.embedder()
        try:
            embedder.load()
        except EmbedderUnavailable as error:
            raise CommandError(f"cannot index: {error}") from None
        if follow:
            if project or rebuild:
                raise CommandError("--follow follows every project; run --rebuild first, alone")
            if nice > 0:
                os.nice(nice)
            self._index_follow(embedder, interval, exit_with_parent)
            return
        target = get_project(project) if project else None
        if rebuild:
            indexer.rebuild(target, embedder.model_id)
        behind = [(p, through, head) for p, through, head
                  in indexer.projects_behind(embedder.model_id)
                  if target is None or p.pk == target.pk]
        total = sum(head - through for _, through, head in behind)
        indexed = 0
        with progress_bar(total, unit="entries", file=self.stderr._out) as bar:
            for behind_project, _through, _head in behind:
                bar.set_description(behind_project.pk)

                def advanced(result: indexer.BatchResult, through_seq: int) -> None:
                    bar.update(result.seen)

                indexed += indexer.backfill(behind_project, embedder, on_batch=advanced)
        documents = sum(indexer.backfill_documents(each, embedder)
                        for each in ([target] if target else self._projects(None)))
        self.stdout.write(to_json({
            "model": embedder.model_id, "projects": [p.pk for p, _, _ in behind],
            "entries": total, "indexed": indexed, "documents": documents, "rebuilt": rebuild,
        }))

    def _index_follow(self, embedder: Any, interval: float, exit_with_parent: bool) -> None:
        """Follow the record under the lease; wait as a standby while another indexer holds it."""
        stop = _stop_on_signals()
        parent = os.getppid()

        def orphaned() -> bool:
            return exit_with_parent and os.getppid() != parent

        while not stop.is_set() and not orphaned():
            try:
                with indexer.lease():
                    self.stderr.write(f"indexer: following the record ({embedder.model_id})")
                    while not stop.is_set() and not orphaned() and indexer.lease_held():
                        try:
                            result = indexer.follow_once(embedder)
                            documents = indexer.follow_documents_once(embedder)
                        except EmbedderUnavailable as error:
                            raise CommandError(f"cannot index: {error}") from None
                        if not result.seen and not documents.seen:
                            time.sleep(interval)
            except indexer.LeaseTaken:
                time.sleep(max(interval, 2.0))
            except DatabaseError as error:
                # The database went away or restarted: try again, never die of it.
                self.stderr.write(f"indexer: {error}; retrying")
                close_old_connections()
                time.sleep(max(interval, 2.0))

    def _scan(self, *, project: str | None, **_: Any) -> None:
        """Every finding as a JSON line, then a summary line; the secret is never printed."""
        projects = self._projects(project)
        found = not_allowed = 0
        for target in projects:
            for hit in secret_scan.record_findings(target):
                found += 1
                not_allowed += not hit.allowed
                self.stdout.write(to_json({"project_id": target.pk, **hit.as_dict()}))
        self.stdout.write(to_json({"scanned": [p.pk for p in projects], "findings": found,
                                   "not_allowed": not_allowed}))
        if not_allowed:
            raise CommandError(f"{not_allowed} stored secret(s) not allowed", returncode=1)

    def _allow_secret(self, *, project: str, fingerprint: str, reason: str, by: str,
                      **_: Any) -> None:
        target = get_project(project)
        record = run_service(lambda: secret_scan.secret_allow(
            project=target, fingerprint=fingerprint, reason=reason, by=by))
        self.stdout.write(to_json({
            "project_id": target.pk, "fingerprint": record.fingerprint,
            "allowed_by": record.allowed_by, "reason": record.reason,
            "created_at": record.created_at.isoformat(),
        }))

    def _redact(self, *, project: str, seq: int | None, finding: int | None, reason: str,
                by: str | None, full_vacuum: bool, **_: Any) -> None:
        target = get_project(project)
        who = by if by is not None else f"cli:{getpass.getuser()}"[:redaction.MAX_BY_CHARS]
        if finding is not None:
            found = run_service(lambda: redaction.finding_redact(
                finding_id=finding, reason=reason, by=who, full_vacuum=full_vacuum,
                project=target))
            if isinstance(found, redaction.TextRedactionResult):
                record = found.redaction
                self.stdout.write(to_json({
                    "project_id": target.pk,
                    "redaction": {"id": record.pk, "source": record.source, **record.row,
                                  "field": record.field, "kind": record.kind,
                                  "notice": record.notice, "by": record.redacted_by,
                                  "created_at": record.created_at.isoformat()},
                    "purge": found.purge, "copies_scrubbed": found.copies_scrubbed,
                }))
                return
            self._entry_redacted(target.pk, found)
            return
        result = run_service(lambda: redaction.memory_entry_redact(
            project=target, seq=int(seq or 0), reason=reason, by=who, full_vacuum=full_vacuum))
        self._entry_redacted(target.pk, result)

    def _entry_redacted(self, project_id: str, result: redaction.RedactionResult) -> None:
        seq = result.entry.seq
        self.stdout.write(to_json({
            "project_id": project_id,
            "entry": EntrySerializer.render(result.entry),
            "record": EntrySerializer.render(result.record),
            "mirror_rebuilt": result.mirror_rebuilt,
            "purge": result.purge,
            "copies_scrubbed": result.copies_scrubbed,
        }))
        if not result.mirror_rebuilt:
            raise CommandError(f"entry #{seq} is redacted, but its mirror could not be rebuilt: "
                               "run `manage.py memory mirror --rebuild`", returncode=1)

    def _purge(self, *, full_vacuum: bool, **_: Any) -> None:
        self.stdout.write(to_json(redaction.purge(full=full_vacuum,
                                                  tables=redaction.redactable_tables())))
