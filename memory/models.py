"""Projects, their tokens, append-only memory entries and review candidates.

Each set of choices is a module-level TextChoices (``MembershipRole``, named
on its model too: ``Membership.Role``), so the model's CHECK constraint is
built from its ``values`` and the two can never disagree.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, ClassVar, cast

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from gedweb.append_only import AppendOnlyModel
from gedweb.lib.chain import is_redacted
from gedweb.lib.digest import sha256_text
from memory.querysets import (
    CandidateQuerySet,
    ChainCheckpointQuerySet,
    DocumentRevisionQuerySet,
    EntryQuerySet,
    ProjectQuerySet,
    ProjectTokenQuerySet,
)
from memory.validators import (
    validate_category,
    validate_content,
    validate_project_id,
    validate_source,
    validate_token_name,
)

__all__ = [
    "ChainCheckpoint",
    "DocumentRevision",
    "DocumentVector",
    "EntryVector",
    "MemoryCandidate",
    "MemoryEntry",
    "Membership",
    "Project",
    "ProjectQuota",
    "ProjectToken",
    "RecallCursor",
    "RecallProgress",
]


def format_timestamp(moment: datetime) -> str:
    """The one wire and hash form of a time: UTC, six fractional digits, +00:00."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def hash_token(raw: str) -> str:
    return sha256_text(raw)


class Project(models.Model):
    # The id is also the mirror directory name; its pattern admits no path
    # separators, dots or case variants, so no two projects share a mirror.
    id = models.CharField(primary_key=True, max_length=64, validators=[validate_project_id])
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.id


class MembershipRole(models.TextChoices):
    VIEWER = "viewer"
    OPERATOR = "operator"


class Membership(models.Model):
    """A person's access to one project's team pages; managed by operators in the admin.

    Both roles read every page of the project. Operator is the role for
    people who also run the project in the Django admin; the admin itself
    still needs staff status and model permissions, which the role does not
    grant.
    """

    Role = MembershipRole

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_memberships"
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project_id", "user_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "project"], name="memory_membership_unique_user_project"
            ),
            models.CheckConstraint(
                condition=Q(role__in=MembershipRole.values), name="memory_membership_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project_id} ({self.role})"


class ProjectToken(models.Model):
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="tokens")
    name = models.CharField(max_length=64, validators=[validate_token_name])
    # Only the SHA-256 of the token is stored; the raw token is shown once.
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=8, help_text="First characters, to recognise a token.")
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ProjectTokenQuerySet.as_manager()

    class Meta:
        ordering = ["project_id", "name", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name"],
                condition=Q(revoked_at__isnull=True),
                name="memory_projecttoken_unique_active_name",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}/{self.name}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])


class MemoryEntry(AppendOnlyModel):
    """One append-only memory record; rows are never updated or deleted.

    The ORM refuses changes (gedweb.append_only); migrations add database
    triggers that refuse UPDATE and DELETE from any client.
    """

    append_only_rows = "memory entries"
    append_only_instead = "append a correction instead"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # No index of its own on the three foreign keys (memory 0016): (project,
    # seq) serves every project lookup, memory_memoryentry_one_redaction
    # every redacts one, and corrects has a partial index. Each index is a
    # page written per append, for nothing.
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="entries",
                                db_index=False)
    seq = models.PositiveBigIntegerField()
    category = models.CharField(max_length=64, validators=[validate_category])
    content = models.TextField(validators=[validate_content])
    source = models.CharField(max_length=128, default="operator", validators=[validate_source])
    corrects = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="corrected_by",
        db_index=False,
    )
    author = models.CharField(max_length=64)
    created_at = models.DateTimeField()
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)
    # Chain format 2 (gedweb.lib.chain): the hash commits to the content's
    # SHA-256, so the content can be redacted and the link still holds. NULL
    # on entries written before memory 0014 (format 1: the hash commits to
    # the content's bytes, which can never leave). Nullable, so adding it kept
    # SQLite's append-only triggers (an ALTER TABLE, not a table rebuild).
    content_sha256 = models.CharField(max_length=64, null=True, blank=True)
    # Set on a redaction record: the entry whose content it removed. The
    # record is itself an entry of the chain (category "redaction", content
    # the reason), so it is append-only, chained and checkpointed like any.
    redacts = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="redactions",
        db_index=False,
    )
    # An Idempotency-Key lives as long as its entry: a replay is answered
    # from this row, and the request hash tells a replay from a reuse. Only
    # the key's SHA-256 is stored (memory.services.idempotency_key_digest).
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    request_hash = models.CharField(max_length=64, null=True, blank=True)
    # Whose key it is: "token:<id>", "admin", or the author for commands and
    # imports. The same key from two tokens is two keys. NULL on rows keyed
    # before scopes (memory 0011); nullable, so adding it kept SQLite's
    # append-only triggers (an ALTER TABLE, not a table rebuild).
    idempotency_scope = models.CharField(max_length=80, null=True, blank=True)
    # The HMAC of (project, seq, hash) under the installation's signing key
    # (memory.checkpoints.entry_mac), named by ``key_id`` as the ledger's
    # records are. The chain's sha256 is public, so a database role that may
    # INSERT could append a well-chained entry under any author; it cannot
    # sign one. Nullable (memory 0023 signed every earlier entry), so adding
    # them kept SQLite's append-only triggers.
    mac = models.CharField(max_length=64, null=True, blank=True)
    key_id = models.CharField(max_length=16, null=True, blank=True)

    # The correcting entries, in seq order: set by EntryQuerySet.with_links()
    # (a Prefetch to_attr) and, empty, on a new entry.
    corrected_by_rows: list[MemoryEntry]

    objects: ClassVar = EntryQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "memory entries"
        ordering = ["project_id", "seq"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "seq"], name="memory_memoryentry_unique_seq"
            ),
            # A partial unique index on both engines, so changing it never
            # rebuilds the table on SQLite (which would drop its triggers).
            models.UniqueConstraint(
                fields=["project", "idempotency_scope", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="memory_memoryentry_unique_scoped_idempotency_key",
            ),
            models.CheckConstraint(condition=Q(seq__gte=1), name="memory_memoryentry_seq_positive"),
            # One redaction per entry: a second one is refused (memory.redaction).
            models.UniqueConstraint(
                fields=["redacts"], condition=Q(redacts__isnull=False),
                name="memory_memoryentry_one_redaction",
            ),
        ]
        permissions = [("redact_memoryentry", "Can redact the content of memory entries")]
        indexes = [
            models.Index(fields=["project", "category", "seq"], name="memory_entry_category_idx"),
            models.Index(fields=["project", "source", "seq"], name="memory_entry_source_idx"),
            models.Index(fields=["project", "created_at"], name="memory_entry_created_idx"),
            # Only corrections are indexed: an entry that corrects nothing
            # (most of them) writes no page here.
            models.Index(fields=["corrects"], condition=Q(corrects__isnull=False),
                         name="memory_entry_corrects_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}#{self.seq}"

    def get_absolute_url(self) -> str:
        return f"/v1/projects/{self.project_id}/memory/{self.uuid}"

    @property
    def created_at_text(self) -> str:
        return format_timestamp(self.created_at)

    def corrects_uuid_text(self) -> str | None:
        # with_links() annotates the uuid so lists do not query per row.
        if hasattr(self, "corrects_uuid"):
            value = self.corrects_uuid
        elif self.corrects_id is None:
            value = None
        else:
            # corrects_id is set and PROTECT keeps the corrected row.
            value = cast(MemoryEntry, self.corrects).uuid
        return str(value) if value is not None else None

    def redacts_uuid_text(self) -> str | None:
        if hasattr(self, "redacts_uuid"):
            value = self.redacts_uuid
        elif self.redacts_id is None:
            value = None
        else:
            value = cast(MemoryEntry, self.redacts).uuid
        return str(value) if value is not None else None

    @property
    def is_redacted(self) -> bool:
        """Its content is a redaction notice, not what was written (format 2 only)."""
        return is_redacted(self.content, self.content_sha256)

    def chained_fields(self) -> dict[str, Any]:
        """The fields its hash commits to, in its chain format (gedweb.lib.chain)."""
        fields: dict[str, Any] = {
            "author": self.author,
            "category": self.category,
            "corrects": self.corrects_uuid_text(),
            "created_at": self.created_at_text,
            "project_id": self.project_id,
            "seq": self.seq,
            "source": self.source,
        }
        if self.content_sha256 is None:
            fields["content"] = self.content
        else:
            fields["content_sha256"] = self.content_sha256
            fields["redacts"] = self.redacts_uuid_text()
        return fields

    def chain_row(self) -> dict[str, Any]:
        """The chained fields with the entry's id and links: one mirror block's data.

        The same dict as EntryQuerySet.chain_rows() yields for this entry.
        """
        return {
            "id": str(self.uuid),
            "seq": self.seq,
            "project_id": self.project_id,
            "category": self.category,
            "content": self.content,
            "source": self.source,
            "corrects": self.corrects_uuid_text(),
            "author": self.author,
            "created_at": self.created_at_text,
            "content_sha256": self.content_sha256,
            "redacts": self.redacts_uuid_text(),
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }


class ChainVerification(models.Model):
    """The last time a project's chain was verified on the server, and what it found.

    Written by memory.services.memory_chain_verify when `manage.py memory verify`
    or `manage.py doctor` runs it (checkpoint=True); the API's GET /verify only
    reads and records nothing. One row per project, replaced at each check: the
    pages' chain badge says when the chain was last checked and whether it held,
    and that entries written since are not yet checked. Not evidence itself
    (checkpoints are): a row anyone could edit can only make the badge lie
    about a past check, never make a broken chain verify.
    """

    project = models.OneToOneField(Project, on_delete=models.CASCADE, primary_key=True,
                                   related_name="last_verification")
    checked_at = models.DateTimeField()
    ok = models.BooleanField()
    # The number of entries checked (the head's seq at the time).
    entries = models.PositiveBigIntegerField()
    first_bad_seq = models.PositiveBigIntegerField(null=True, blank=True)
    # The first problem's words when it failed; "" when it held.
    problem = models.TextField(blank=True, default="")

    def __str__(self) -> str:
        return f"{self.project_id}: {'ok' if self.ok else 'failed'} at {self.checked_at}"


class ChainCheckpoint(AppendOnlyModel):
    """A signed record of a project's chain head: after it, the log may only grow.

    A hash chain alone cannot show that its newest entries were deleted, or
    that its last entry was swapped for another well-chained one. A
    checkpoint keeps (seq, hash) of a head the log once had, with an HMAC
    keyed from the signing key (settings.SIGNING_KEY), in this append-only
    table and as a line of <GEDWEB_MEMORY_ROOT>/<project>/CHECKPOINTS
    (memory.checkpoints), so
    deleting rows here does not erase the evidence there.
    """

    append_only_rows = "chain checkpoints"

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="checkpoints")
    seq = models.PositiveBigIntegerField()
    hash = models.CharField(max_length=64)
    created_at = models.DateTimeField()
    mac = models.CharField(max_length=64)
    # Which key signed it (memory.checkpoints.key_id): after a rotation the
    # verifier picks that key among the signing keys and their fallbacks, and
    # names a missing one. NULL on rows from before key ids: every key is tried.
    # Nullable so that adding it is an ALTER TABLE on SQLite, which keeps
    # the append-only triggers (a table rebuild would drop them).
    key_id = models.CharField(max_length=16, null=True, blank=True)

    objects: ClassVar = ChainCheckpointQuerySet.as_manager()

    class Meta:
        ordering = ["project_id", "seq"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "seq"], name="memory_chaincheckpoint_unique_seq"
            ),
            models.CheckConstraint(
                condition=Q(seq__gte=1), name="memory_chaincheckpoint_seq_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id} checkpoint at seq {self.seq}"


class MemoryCandidateStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    # Taken back by its own proposer before anyone decided it: not a
    # reviewer's rejection (memory.services.candidate_withdraw).
    WITHDRAWN = "withdrawn"


class MemoryCandidate(models.Model):
    """A proposed entry that becomes memory only when someone with write rights approves it."""

    Status = MemoryCandidateStatus

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="candidates")
    category = models.CharField(max_length=64, validators=[validate_category])
    content = models.TextField(validators=[validate_content])
    source = models.CharField(max_length=128, default="operator", validators=[validate_source])
    author = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.CharField(max_length=64, blank=True, default="")
    entry = models.OneToOneField(
        MemoryEntry, on_delete=models.PROTECT, null=True, blank=True, related_name="candidate"
    )
    # A proposal's Idempotency-Key, under the same rules as an entry's
    # (memory.services): it lives as long as the candidate, the request hash
    # tells a replay from a reuse, and the scope names the token that sent it.
    # Only the key's SHA-256 is stored, as for entries.
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    request_hash = models.CharField(max_length=64, null=True, blank=True)
    idempotency_scope = models.CharField(max_length=80, null=True, blank=True)

    objects = CandidateQuerySet.as_manager()

    class Meta:
        ordering = ["project_id", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=MemoryCandidateStatus.values),
                name="memory_memorycandidate_status_valid",
            ),
            # An approved candidate always names its entry, and only then.
            models.CheckConstraint(
                condition=Q(status="approved", entry__isnull=False)
                | (~Q(status="approved") & Q(entry__isnull=True)),
                name="memory_memorycandidate_entry_iff_approved",
            ),
            # Partial, as MemoryEntry's: unkeyed proposals (NULL) never collide.
            models.UniqueConstraint(
                fields=["project", "idempotency_scope", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="memory_memorycandidate_unique_scoped_idempotency_key",
            ),
        ]
        indexes = [models.Index(fields=["project", "status", "id"], name="memory_cand_status_idx")]

    def __str__(self) -> str:
        return f"{self.project_id} candidate {self.uuid}"

    def entry_uuid_text(self) -> str | None:
        if self.entry_id is None:
            return None
        # entry_id is set, so the entry row exists.
        value = getattr(self, "entry_uuid", None) or cast(MemoryEntry, self.entry).uuid
        return str(value)


class DocumentRevision(AppendOnlyModel):
    """One append-only revision of a durable document (PROJECT.md, an ADR, a report...).

    A document is the set of its revisions; the newest is the current text.
    The ORM refuses changes (gedweb.append_only); migration 0003 adds
    triggers that refuse UPDATE and DELETE from any client.
    """

    append_only_rows = "document revisions"
    append_only_instead = "add a revision instead"

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="documents")
    path = models.CharField(max_length=160)
    revision = models.PositiveIntegerField()
    # Stored exactly as received: no newline or Unicode normalisation.
    content = models.TextField()
    sha256 = models.CharField(max_length=64)
    author = models.CharField(max_length=64)
    created_at = models.DateTimeField()
    reason = models.TextField(null=True, blank=True)

    objects: ClassVar = DocumentRevisionQuerySet.as_manager()

    class Meta:
        ordering = ["project_id", "path", "revision"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "path", "revision"],
                name="memory_documentrevision_unique_revision",
            ),
            models.CheckConstraint(
                condition=Q(revision__gte=1), name="memory_documentrevision_revision_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}/{self.path}@{self.revision}"


class AllowedSecret(AppendOnlyModel):
    """An operator's word that one finding of the secret scanner is not a secret here.

    ``fingerprint`` is gedweb.secretscan.fingerprint(kind, secret): the
    secret's text is never stored, here or anywhere the scanner reports.
    A write whose every finding is allowed in its project is stored
    (memory.secret_scan). Append-only: who allowed what, and why, stays on
    record; an allowance is never taken back by editing it.
    """

    append_only_rows = "allowed secret findings"

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="allowed_secrets")
    fingerprint = models.CharField(max_length=64)
    reason = models.TextField()
    allowed_by = models.CharField(max_length=150)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["project_id", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "fingerprint"], name="memory_allowedsecret_unique_fingerprint"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}: {self.fingerprint[:12]} allowed by {self.allowed_by}"


class SecretFinding(models.Model):
    """A secret the scanner found in stored text, as of the last `manage.py memory scan`.

    Derived state, like an index: each scan of a project replaces the
    project's rows (memory.secret_scan.record_findings). Where the secret
    sits (source, row, field, line, column, offset, length), what kind it is
    and which rule of which rule set found it; never the secret itself, only
    its fingerprint. ``seq`` names the entry for an entry's finding, the one
    kind of row a redaction can clear (memory.redaction).
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="secret_findings")
    source = models.CharField(max_length=40)
    row = models.JSONField()
    seq = models.PositiveBigIntegerField(null=True, blank=True)
    field = models.CharField(max_length=300)
    kind = models.CharField(max_length=100)
    rule_origin = models.CharField(max_length=20)
    rule_version = models.CharField(max_length=120)
    line = models.PositiveIntegerField()
    column = models.PositiveIntegerField()
    offset = models.PositiveBigIntegerField()
    length = models.PositiveIntegerField()
    fingerprint = models.CharField(max_length=64)
    allowed = models.BooleanField()
    found_at = models.DateTimeField()

    class Meta:
        ordering = ["project_id", "source", "id"]
        indexes = [models.Index(fields=["project", "allowed"],
                                name="memory_secretfinding_open")]

    def __str__(self) -> str:
        return f"{self.project_id}: {self.kind} in {self.source} {self.where()}"

    def where(self) -> str:
        """The row, as its identifying values: ``seq 41``, ``path CONTEXT.md revision 2``."""
        return " ".join(f"{key} {value}" for key, value in self.row.items())


class RateCounter(models.Model):
    """Requests one token made in one rate-limit window (gedweb/throttling.py).

    Only used on PostgreSQL when REDIS_URL is unset: the database is then
    the one place every app server shares. A row per (limit, token, window),
    counted by a single atomic upsert and deleted once its window is over;
    the table is UNLOGGED (memory 0017). SQLite installations keep the same
    rows in a file of their own beside the database, off its writer lock.
    """

    counter_key = models.CharField(primary_key=True, max_length=200)
    hits = models.PositiveBigIntegerField()
    # Unix time at which the window ends; the row is garbage after it.
    expires_at = models.BigIntegerField(db_index=True)

    class Meta:
        db_table = "gedweb_rate_counter"

    def __str__(self) -> str:
        return f"{self.counter_key}: {self.hits}"


class ProjectQuotaKind(models.TextChoices):
    # Labelled with their own names: the names the API's 409 body uses.
    ENTRIES = "entries", "entries"
    DOCUMENTS = "documents", "documents"
    WORK_FILES = "work_files", "work_files"
    SKILLS = "skills", "skills"


class ProjectQuota(models.Model):
    """How many bytes of one kind of stored text a project holds, and its limit.

    ``used_bytes`` is kept by memory.quotas.quota_charge in the transaction of
    every write of that kind; ``limit_mib`` is the operator's override (in the
    admin), NULL for the installation's default (GEDWEB_QUOTA_<KIND>_MIB).
    Not append-only: stored rows are never removed, so usage only grows.
    """

    Kind = ProjectQuotaKind

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="quotas")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    used_bytes = models.PositiveBigIntegerField(default=0)
    limit_mib = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="MiB for this project; empty for the installation's default.",
    )

    class Meta:
        ordering = ["project_id", "kind"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "kind"], name="memory_projectquota_unique_kind"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=ProjectQuotaKind.values),
                name="memory_projectquota_kind_valid",
            ),
            models.CheckConstraint(
                condition=Q(limit_mib__isnull=True) | Q(limit_mib__gte=1),
                name="memory_projectquota_limit_positive",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id} {self.kind} quota"


class EntryVector(models.Model):
    """An entry's vector for recall by meaning: derived data, outside the chain (docs/recall.md).

    Written by the indexer (memory.recall.indexer), never on the append's
    path; deleted with the entry's content by a redaction, in its
    transaction. One row per entry: a model change replaces it. The vector is
    the model's unit vector quantised to int8 (``vector``, ``dimension``
    bytes) with its scale: component i is ``vector[i] * scale``.
    ``content_sha256`` is the digest of the text it was made from, so a
    vector whose text changed is found stale.
    """

    entry = models.OneToOneField(MemoryEntry, on_delete=models.CASCADE, primary_key=True,
                                 related_name="vector")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, db_index=False,
                                related_name="+")
    seq = models.PositiveBigIntegerField()
    model = models.CharField(max_length=64)
    content_sha256 = models.CharField(max_length=64)
    vector = models.BinaryField()
    scale = models.FloatField()

    class Meta:
        indexes = [
            # A process's matrix of a project grows by seq (memory.recall.index).
            models.Index(fields=["project", "model", "seq"], name="memory_vector_project_seq"),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}#{self.seq} ({self.model})"


class DocumentVector(models.Model):
    """One section of a document's current revision, embedded for recall (docs/recall.md).

    Derived like EntryVector: the indexer splits a revision at its Markdown
    headings and embeds each section; a newer revision's sections replace an
    older one's. ``heading`` and ``start``/``end`` (character offsets into
    the revision's content) name the section a recall shows.
    """

    revision = models.ForeignKey(DocumentRevision, on_delete=models.CASCADE,
                                 related_name="vectors")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, db_index=False,
                                related_name="+")
    path = models.CharField(max_length=160)
    section = models.PositiveIntegerField()
    heading = models.TextField(blank=True)
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    model = models.CharField(max_length=64)
    content_sha256 = models.CharField(max_length=64)
    vector = models.BinaryField()
    scale = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["revision", "section"],
                                    name="memory_documentvector_unique_section"),
        ]
        indexes = [
            models.Index(fields=["project", "model", "path"], name="memory_docvector_project"),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}/{self.path} section {self.section} ({self.model})"


class RecallCursor(models.Model):
    """The last entry id the indexer followed the record to, for one model."""

    model = models.CharField(max_length=64, primary_key=True)
    through_id = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.model} through entry id {self.through_id}"


class RecallProgress(models.Model):
    """How far one project is indexed for one model, and when its vectors last left.

    ``through_seq``: every entry up to it has a current vector or needs none
    (redacted). ``generation`` grows when vectors are removed (a redaction, a
    rebuild): each process's cached matrix of the project is dropped at its
    next recall when the generation it was built at is not this one.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=64)
    through_seq = models.PositiveBigIntegerField(default=0)
    generation = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "model"],
                                    name="memory_recallprogress_unique_model"),
        ]

    def __str__(self) -> str:
        return f"{self.project_id} ({self.model}) through #{self.through_seq}"
