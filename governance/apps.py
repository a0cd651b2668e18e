from __future__ import annotations

from django.apps import AppConfig


class GovernanceConfig(AppConfig):
    """Work items, governance revisions, standards, skills and context (later issues)."""

    name = "governance"
    verbose_name = "Governance"

    def ready(self) -> None:
        # memory cannot import governance (dependencies point one way), so
        # memory.documents asks this hook whether a handoff's work id names
        # a work item of the same project (GedPi Gap G-11).
        from governance import ledger
        from governance.models import WorkItem
        from memory.documents import register_work_item_check

        # Every insert of a trust-bearing row, memory's document revisions
        # included, records itself in the project's trust ledger.
        ledger.connect()

        register_work_item_check(
            lambda project, work_id: WorkItem.objects.filter(
                project=project, work_id=work_id
            ).exists()
        )

        # The same one-way rule for the follower: `memory mirror --follow`
        # keeps LEDGER-CHECKPOINTS current because it is registered here.
        from governance import ledger_checkpoints

        ledger_checkpoints.register_follower()
