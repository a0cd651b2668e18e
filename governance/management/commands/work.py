"""`manage.py work list|show|guard|lifecycle|trust`: operators' view of governed work.

`work trust` is the operator's word that a work item's imported governance
(ged_import or an upload) counts as GedWeb's own (docs/governance.md).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from gedweb.commands import GedWebCommand, get_project, run_service, to_json
from gedweb.lib import governance as gov
from governance import provenance, selectors, services
from governance.models import WorkItem
from memory.services import CLI_AUTHOR


class Command(GedWebCommand):
    help = ("List work items, show their governance, ask the guard, move their lifecycle, "
            "trust their imported governance.")

    def add_arguments(self, parser: CommandParser) -> None:
        actions = self.add_actions(parser, "command")
        listing = actions.add_parser("list", help="work items of a project")
        listing.add_argument("--project", required=True)
        show = actions.add_parser("show", help="META and the current governance document")
        show.add_argument("work_id")
        show.add_argument("--project", required=True)
        guard = actions.add_parser("guard", help="would an action be allowed now?")
        guard.add_argument("work_id")
        guard.add_argument("--project", required=True)
        guard.add_argument("--action", required=True, choices=gov.GUARD_ACTIONS)
        lifecycle = actions.add_parser("lifecycle", help="pause, resume, complete, abandon, ...")
        lifecycle.add_argument("work_id")
        lifecycle.add_argument("--project", required=True)
        lifecycle.add_argument("--action", required=True, choices=list(gov.LIFECYCLE_ACTIONS))
        lifecycle.add_argument("--reason", required=True)
        lifecycle.add_argument(
            "--expected-revision", type=int, required=True,
            help="the revision you looked at (compare-and-swap)",
        )
        trust = actions.add_parser(
            "trust", help="count the work item's imported governance as GedWeb's own")
        trust.add_argument("work_id")
        trust.add_argument("--project", required=True)
        trust.add_argument(
            "--by", metavar="NAME",
            help="who trusts it (default: the OS user running the command); recorded as "
                 "ged_import:trusted-by:NAME")

    def handle(self, *args: Any, command: str, **options: Any) -> None:
        getattr(self, f"_{command}")(**options)

    def _work(self, project_id: str, work_id: str) -> WorkItem:
        work: WorkItem | None = WorkItem.objects.for_project(get_project(project_id)).filter(
            work_id=work_id
        ).first()
        if work is None:
            raise CommandError(f"no work item {work_id!r} in project {project_id}")
        return work

    def _list(self, *, project: str, **_: Any) -> None:
        items = [
            {"work_id": w.work_id, "summary": w.summary, "mode": w.mode,
             "created_at": gov.format_time(w.created_at)}
            for w in selectors.work_list(project=get_project(project)).order_by("work_id")
        ]
        self.stdout.write(to_json({"items": items}))

    def _show(self, *, project: str, work_id: str, **_: Any) -> None:
        work = self._work(project, work_id)
        state = services.governance_document(work)
        self.stdout.write(to_json({
            "work_id": work.work_id, "meta": work.meta(), "governance": state,
            "provenance": provenance.as_dict(provenance.provenance(work), state)}))

    def _guard(self, *, project: str, work_id: str, action: str, **_: Any) -> None:
        reason = services.guard_check(work=self._work(project, work_id), action=action)
        self.stdout.write(to_json({"allowed": reason is None, "reason": reason}))

    def _lifecycle(self, *, project: str, work_id: str, action: str, reason: str,
                   expected_revision: int, **_: Any) -> None:
        work = self._work(project, work_id)
        current = services.governance_document(work)
        document = run_service(
            lambda: services.lifecycle_transition(
                work=work, expected_revision=expected_revision, action=action, reason=reason,
                expected_lifecycle=current["lifecycle"], author=CLI_AUTHOR,
            )
        )
        self.stdout.write(to_json({"revision": document["revision"],
                                   "lifecycle": document["lifecycle"]}))

    def _trust(self, *, project: str, work_id: str, by: str | None, **_: Any) -> None:
        # Imported here: the command module of ged_import holds the one naming rule.
        from governance.management.commands.ged_import import trusted_by_name

        work = self._work(project, work_id)
        trusted_by = trusted_by_name(by, "work trust")
        row = run_service(lambda: services.governance_trust(work=work, trusted_by=trusted_by))
        if row is None:
            self.stdout.write(to_json({"work_id": work.work_id, "trusted": None}))
            return
        self.stdout.write(to_json({"work_id": work.work_id, "trusted": {
            "revision": row.revision, "document_sha256": row.document_sha256,
            "trusted_by": row.trusted_by}}))
