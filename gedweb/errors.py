"""GedWeb's domain errors: what services raise when a rule refuses a write.

No HTTP, no DRF: the API's status for each is gedweb.exceptions.STATUSES.
"""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """A refusal by a rule of GedWeb's own: a message for people, a code for programs.

    Plain Python: services raise these whoever calls them (API, admin,
    pages, commands, MCP); each face turns them into its own answer, the API
    through gedweb.exceptions.api_exception_handler, which maps each to an
    HTTP status.
    """

    code = "conflict"

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra


class Conflict(DomainError):
    code = "conflict"


class HashMismatch(DomainError):
    """A decision named other bytes than the ones on record."""

    code = "hash_mismatch"


class IdempotencyInFlight(DomainError):
    code = "idempotency_in_flight"


class IdempotencyKeyReused(DomainError):
    code = "idempotency_key_reused"


class ReviewRefused(DomainError):
    """A candidate decision by a principal the review gate does not allow.

    The proposer approving or rejecting its own proposal, or anyone but the
    proposer withdrawing it (memory.services.candidate_refusal).
    """

    code = "review_forbidden"


class InvalidState(DomainError):
    code = "invalid_state"


class StaleRevision(DomainError):
    """A compare-and-swap named a revision that is no longer current."""

    code = "stale_revision"


class DuplicateEvidence(DomainError):
    code = "duplicate_evidence"


class GovernanceBlocked(DomainError):
    code = "governance_blocked"


class DecisionRequired(DomainError):
    code = "decision_required"


class QuotaExceeded(DomainError):
    """A write would take a project past one of its storage quotas.

    ``quota`` names it (entries, documents, work_files, skills) in the body.
    """

    code = "quota_exceeded"


class SecretDetected(DomainError):
    """A write holds a credential (memory.secret_scan): refused, nothing stored.

    ``findings`` in the body name each one's field, kind, line, column and
    fingerprint; never the secret.
    """

    code = "secret_detected"


class ExportRefused(DomainError):
    """ged_export will not write into the target it was given."""

    code = "export_refused"


class ArchiveRefused(DomainError):
    """An uploaded archive is not one GedWeb unpacks (gedweb.checkout.archive's rules)."""

    code = "invalid_archive"


class CheckoutRefused(DomainError):
    """ged_import, ged_migrate_v3 or doctor --checkout will not read the checkout."""

    code = "checkout_refused"
