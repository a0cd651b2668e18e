from __future__ import annotations

from django.apps import AppConfig


class GovernanceConfig(AppConfig):
    """Work items, governance revisions, standards, skills and context (later issues)."""

    name = "governance"
    verbose_name = "Governance"

    def ready(self) -> None:
        from governance import ledger

        # Every insert of a trust-bearing row, memory's document revisions
        # included, records itself in the project's trust ledger.
        ledger.connect()

        # memory cannot import governance (dependencies point one way), so
        # `memory mirror --follow` keeps LEDGER-CHECKPOINTS current because
        # the file is registered here.
        from governance import ledger_checkpoints

        ledger_checkpoints.register_follower()

        # `memory scan` reads governance's stored text too, for the same reason.
        from governance import secret_sources

        secret_sources.register()

        # A redaction (memory.redaction) also cuts the entry out of the stored
        # context bundles that delivered it.
        from governance.context import bundle_scrub
        from memory import redaction

        redaction.register_copies("context_bundles", bundle_scrub)
