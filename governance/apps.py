from __future__ import annotations

from django.apps import AppConfig


class GovernanceConfig(AppConfig):
    """Work items, governance revisions, standards, skills and context (later issues)."""

    name = "governance"
    verbose_name = "Governance"
