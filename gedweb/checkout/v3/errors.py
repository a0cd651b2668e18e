"""The one error of the v3 migration."""

from __future__ import annotations


class MigrationError(Exception):
    """The migration refused to continue; the message is GedPi's where GedPi has one."""
