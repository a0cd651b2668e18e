"""Work items and their governance history, stored append-only.

GedPi keeps one mutable governance.json per work item. Here every accepted
write adds one GovernanceRevision row (the document without its evidence)
and zero or more EvidenceRecord rows; a revision's full document is its row
plus the first ``evidence_count`` evidence records. Nothing is ever
updated or deleted: the ORM refuses, and migration triggers refuse raw SQL.

Each set of choices is a module-level TextChoices (``WorkItemMode``, named
on its model too: ``WorkItem.Mode``), so the model's CHECK constraint is
built from its ``values`` and the two can never disagree.
"""

from __future__ import annotations

import json
import secrets
from typing import Any, ClassVar

from django.db import IntegrityError, models, transaction
from django.db.models import Q
from django.utils import timezone

from gedweb.append_only import AppendOnlyModel, AppendOnlyQuerySet
from gedweb.errors import Conflict, HashMismatch
from gedweb.lib.digest import sha256_text
from memory.locks import lock_project
from memory.models import Project


class WorkItemQuerySet(AppendOnlyQuerySet):
    def for_project(self, project: Project) -> WorkItemQuerySet:
        return self.filter(project=project)


class WorkItemMode(models.TextChoices):
    READ_ONLY = "read-only"
    DIRECT_CHANGE = "direct-change"
    PLANNED_CHANGE = "planned-change"


class WorkItem(AppendOnlyModel):
    """A work item and its META, which never changes after it is opened."""

    Mode = WorkItemMode

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="work_items")
    work_id = models.CharField(max_length=128, unique=True)
    summary = models.CharField(max_length=240)
    mode = models.CharField(max_length=16, choices=Mode.choices)
    created_at = models.DateTimeField()
    branch = models.CharField(max_length=255, null=True, blank=True)
    base_head = models.CharField(max_length=64, null=True, blank=True)
    origin = models.JSONField(null=True, blank=True)
    author = models.CharField(max_length=64)

    objects: ClassVar = WorkItemQuerySet.as_manager()

    class Meta:
        ordering = ["project_id", "work_id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(mode__in=WorkItemMode.values),
                name="governance_workitem_mode_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.work_id

    def meta(self) -> dict[str, Any]:
        """META.json in GedPi's shape."""
        from gedweb.lib.governance import format_time

        meta: dict[str, Any] = {
            "schemaVersion": 1,
            "workId": self.work_id,
            "summary": self.summary,
            "createdAt": format_time(self.created_at),
            "branch": self.branch,
            "baseHead": self.base_head,
        }
        if self.origin is not None:
            meta["origin"] = self.origin
        return meta


class GovernanceRevision(AppendOnlyModel):
    work = models.ForeignKey(WorkItem, on_delete=models.PROTECT, related_name="revisions")
    revision = models.PositiveIntegerField()
    # The document without its "evidence" list, as JSON text in GedPi's key
    # order (a jsonb column would reorder keys).
    document_json = models.TextField()
    evidence_count = models.PositiveIntegerField()
    operation = models.CharField(max_length=64)
    author = models.CharField(max_length=64)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["work_id", "revision"]
        constraints = [
            # Two app servers can never both write revision n+1 (GedPi gap G-1).
            models.UniqueConstraint(
                fields=["work", "revision"], name="governance_revision_unique_number"
            ),
        ]

    def __str__(self) -> str:
        return f"revision {self.revision} of {self.work.work_id}"

    @property
    def document_without_evidence(self) -> dict[str, Any]:
        # Written by json.dumps of a document object: it loads as a dict.
        document: dict[str, Any] = json.loads(self.document_json)
        return document


class EvidenceRecord(AppendOnlyModel):
    """One governance evidence record; the list can only grow (GedPi gap G-2)."""

    work = models.ForeignKey(WorkItem, on_delete=models.PROTECT, related_name="evidence")
    position = models.PositiveIntegerField(help_text="Index in the evidence list (append order).")
    evidence_id = models.CharField(max_length=255)
    record_json = models.TextField()
    revision = models.PositiveIntegerField(help_text="The revision that appended it.")
    author = models.CharField(max_length=64)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["work_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["work", "position"], name="governance_evidence_unique_position"
            ),
            models.UniqueConstraint(
                fields=["work", "evidence_id"], name="governance_evidence_unique_id"
            ),
        ]

    def __str__(self) -> str:
        return f"evidence {self.evidence_id} of {self.work.work_id}"

    @property
    def record(self) -> dict[str, Any]:
        # Written by json.dumps of an evidence object: it loads as a dict.
        record: dict[str, Any] = json.loads(self.record_json)
        return record


class GovernanceTrust(AppendOnlyModel):
    """An operator's word that a work item's imported governance counts as GedWeb's own.

    What a checkout brought (governance revisions written by ``ged_import`` or
    ``POST .../checkout``, operation ``import``) is kept as found, but its
    evidence, approvals and lifecycle transitions never count for the guard or
    a lifecycle step until an operator trusts them here, as standards
    decisions are trusted (governance/provenance.py). One row trusts every
    import of the work item up to and including governance revision
    ``revision``, whose stored document hashes to ``document_sha256``;
    ``trusted_by`` is ``ged_import:trusted-by:<name>``.
    """

    work = models.ForeignKey(WorkItem, on_delete=models.PROTECT, related_name="trusts")
    revision = models.PositiveIntegerField(help_text="The import revision trusted, and those "
                                                     "before it.")
    document_sha256 = models.CharField(max_length=64)
    trusted_by = models.CharField(max_length=64)
    trusted_at = models.DateTimeField()

    class Meta:
        ordering = ["work_id", "revision"]
        constraints = [
            models.UniqueConstraint(fields=["work", "revision"],
                                    name="governance_governancetrust_unique_revision"),
        ]

    def __str__(self) -> str:
        return f"{self.work.work_id} import revision {self.revision} trusted by {self.trusted_by}"


class WorkFileName(models.TextChoices):
    DIRECT = "DIRECT.md"
    SPEC = "SPEC.md"
    TASKS = "TASKS.md"
    TESTS = "TESTS.md"


class WorkFile(AppendOnlyModel):
    """A version of DIRECT.md, SPEC.md, TASKS.md or TESTS.md; every write adds one."""

    Name = WorkFileName

    work = models.ForeignKey(WorkItem, on_delete=models.PROTECT, related_name="files")
    name = models.CharField(max_length=16, choices=Name.choices)
    version = models.PositiveIntegerField()
    content = models.TextField()
    author = models.CharField(max_length=64)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["work_id", "name", "version"]
        constraints = [
            models.UniqueConstraint(
                fields=["work", "name", "version"], name="governance_workfile_unique_version"
            ),
            models.CheckConstraint(
                condition=Q(name__in=WorkFileName.values),
                name="governance_workfile_name_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.work.work_id}/{self.name} version {self.version}"


class TaskArtifactName(models.TextChoices):
    BRIEF = "BRIEF.md"
    HISTORY = "HISTORY.json"
    RECOVERY = "RECOVERY.md"


class TaskArtifact(AppendOnlyModel):
    """A version of a task's BRIEF.md, HISTORY.json or RECOVERY.md."""

    Name = TaskArtifactName

    work = models.ForeignKey(WorkItem, on_delete=models.PROTECT, related_name="task_artifacts")
    task_id = models.CharField(max_length=128)
    name = models.CharField(max_length=16, choices=Name.choices)
    version = models.PositiveIntegerField()
    content = models.TextField()
    author = models.CharField(max_length=64)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["work_id", "task_id", "name", "version"]
        constraints = [
            models.UniqueConstraint(
                fields=["work", "task_id", "name", "version"],
                name="governance_taskartifact_unique_version",
            ),
            models.CheckConstraint(
                condition=Q(name__in=TaskArtifactName.values),
                name="governance_taskartifact_name_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.work.work_id}/tasks/{self.task_id}/{self.name} version {self.version}"


class ActiveWorkOperation(models.TextChoices):
    OPEN = "open"
    CONTINUE = "continue"


class ActiveWork(models.Model):
    """Which work item a session has selected (GedPi's active-work pointer)."""

    Operation = ActiveWorkOperation

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="active_work")
    # First 32 hex of sha256(session id), as GedPi names its pointer files.
    session_key = models.CharField(max_length=32)
    session_id = models.CharField(max_length=256)
    work = models.ForeignKey(WorkItem, on_delete=models.PROTECT, related_name="selections")
    operation = models.CharField(max_length=16, choices=Operation.choices)
    request_id = models.CharField(max_length=256)
    selected_at = models.DateTimeField()

    class Meta:
        ordering = ["project_id", "session_key"]
        verbose_name_plural = "active work pointers"
        constraints = [
            models.UniqueConstraint(
                fields=["project", "session_key"], name="governance_activework_unique_session"
            ),
            models.CheckConstraint(
                condition=Q(operation__in=ActiveWorkOperation.values),
                name="governance_activework_operation_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id} session {self.session_key} -> {self.work.work_id}"


# --- standards imports ---------------------------------------------------------------

STANDARDS_PATHS = (
    "AGENTS.md",
    "AGENTS.override.md",
    "CLAUDE.md",
    "GEMINI.md",
    ".github/copilot-instructions.md",
    ".cursorrules",
)


def new_standards_import_id() -> str:
    """A fresh public id (gedweb.lib.ids.STANDARDS_IMPORT_ID): 128 random bits."""
    return "si_" + secrets.token_urlsafe(16)


class StandardsImportQuerySet(AppendOnlyQuerySet):
    def for_project(self, project: Project) -> StandardsImportQuerySet:
        return self.filter(project=project)

    def with_status(self, status: str) -> StandardsImportQuerySet:
        if status == StandardsImport.PENDING:
            return self.filter(decision__isnull=True)
        return self.filter(decision__status=status)


class StandardsImport(AppendOnlyModel):
    """The raw bytes of one repository-wide instruction file, offered for approval.

    One row per (project, path, sha256 of the raw UTF-8 bytes); the decision
    on it is a separate append-only StandardsDecision row, so a decision can
    be taken once and never rewritten, and "pending" means "no decision row".
    """

    PENDING = "pending"

    class Path(models.TextChoices):
        AGENTS = "AGENTS.md"
        AGENTS_OVERRIDE = "AGENTS.override.md"
        CLAUDE = "CLAUDE.md"
        GEMINI = "GEMINI.md"
        COPILOT = ".github/copilot-instructions.md"
        CURSOR = ".cursorrules"

    project = models.ForeignKey(
        Project, on_delete=models.PROTECT, related_name="standards_imports"
    )
    # What URLs and answers call the import: random, so it tells nothing of
    # other projects' activity, as the sequential pk would.
    public_id = models.CharField(
        max_length=25, unique=True, editable=False, default=new_standards_import_id
    )
    path = models.CharField(max_length=64, choices=Path.choices)
    sha256 = models.CharField(max_length=64)
    content = models.TextField()
    author = models.CharField(max_length=64)
    created_at = models.DateTimeField()

    objects: ClassVar = StandardsImportQuerySet.as_manager()

    class Meta:
        ordering = ["project_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "path", "sha256"], name="governance_standardsimport_unique_bytes"
            ),
            models.CheckConstraint(
                condition=Q(path__in=list(STANDARDS_PATHS)),
                name="governance_standardsimport_path_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}/{self.path} {self.sha256[:12]}"

    @property
    def current_decision(self) -> StandardsDecision | None:
        try:
            return self.decision
        except StandardsDecision.DoesNotExist:
            return None

    @property
    def status(self) -> str:
        decision = self.current_decision
        return decision.status if decision is not None else self.PENDING

    def accept(self, *, by: str, sha256: str) -> StandardsDecision:
        return self._decide(StandardsDecision.Status.ACCEPTED, by=by, sha256=sha256)

    def reject(self, *, by: str, sha256: str) -> StandardsDecision:
        return self._decide(StandardsDecision.Status.REJECTED, by=by, sha256=sha256)

    def _decide(self, status: str, *, by: str, sha256: str) -> StandardsDecision:
        # The decision is bound to the bytes the decider saw, never to the row id.
        if sha256.lower() != self.sha256:
            raise HashMismatch(
                f"{self.path}: the import's sha256 is {self.sha256}, not {sha256}",
                sha256=self.sha256,
            )
        existing = StandardsDecision.objects.filter(standards_import=self).first()
        if existing is None:
            try:
                # UNIQUE(standards_import) lets exactly one of two racing
                # deciders in; the loser lands below. The decision and its
                # ledger record commit together, under the project lock.
                with transaction.atomic():
                    lock_project(self.project_id)
                    decision = StandardsDecision.objects.create(
                        standards_import=self,
                        status=status,
                        decided_by=by[:64],
                        decided_at=timezone.now(),
                    )
                self.decision = decision
                return decision
            except IntegrityError:
                existing = StandardsDecision.objects.get(standards_import=self)
        raise Conflict(
            f"{self.path} {self.sha256} was already {existing.status} by {existing.decided_by}",
            status=existing.status,
        )


class StandardsDecisionStatus(models.TextChoices):
    ACCEPTED = "accepted"
    REJECTED = "rejected"


class StandardsDecision(AppendOnlyModel):
    """Who accepted or rejected one import, and when; taken once."""

    Status = StandardsDecisionStatus

    standards_import = models.OneToOneField(
        StandardsImport, on_delete=models.PROTECT, related_name="decision"
    )
    status = models.CharField(max_length=16, choices=Status.choices)
    decided_by = models.CharField(max_length=64)
    decided_at = models.DateTimeField()

    class Meta:
        ordering = ["decided_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=StandardsDecisionStatus.values),
                name="governance_standardsdecision_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.standards_import} {self.status}"


# --- skills ----------------------------------------------------------------------------


class SkillQuerySet(AppendOnlyQuerySet):
    def for_project(self, project: Project) -> SkillQuerySet:
        return self.filter(project=project)

    def current(self) -> SkillQuerySet:
        """The newest version of each skill name."""
        newer = Skill.objects.filter(
            project=models.OuterRef("project"),
            name=models.OuterRef("name"),
            version__gt=models.OuterRef("version"),
        )
        return self.exclude(models.Exists(newer))


class SkillProvenance(models.TextChoices):
    REUSABLE_EXPLICIT = "reusable-explicit"
    INSTALLED_COPY = "installed-copy"
    LEGACY_UNVERIFIED = "legacy-unverified"


class Skill(AppendOnlyModel):
    """One version of a project skill: its SKILL.md text and its provenance record.

    Content and provenance are one row, written in one transaction (GedPi gap
    G-7). ``recorded_hash`` is the provenance's contentHash; the skill is
    verified only while it equals the hash of ``content`` and the provenance
    is reusable-explicit. Legacy imports may carry a record that does not.
    """

    Provenance = SkillProvenance

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="skills")
    name = models.CharField(max_length=64)
    version = models.PositiveIntegerField()
    content = models.TextField()
    recorded_hash = models.CharField(max_length=64, null=True, blank=True)
    provenance = models.CharField(max_length=24, choices=Provenance.choices)
    reason = models.CharField(max_length=500, blank=True)
    source = models.CharField(max_length=1000, null=True, blank=True)
    installed_at = models.DateTimeField()
    # The GedPi provenance record exactly as ged_import found it in
    # SKILLS-STATE.json (key order, taskRefs, source kind, installedAt text),
    # so ged_export writes it back byte for byte; null for GedWeb's own writes.
    gedpi_record = models.TextField(null=True, blank=True)
    author = models.CharField(max_length=64)
    created_at = models.DateTimeField()

    objects: ClassVar = SkillQuerySet.as_manager()

    class Meta:
        ordering = ["project_id", "name", "version"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name", "version"], name="governance_skill_unique_version"
            ),
            models.CheckConstraint(
                condition=Q(
                    provenance__in=SkillProvenance.values
                ),
                name="governance_skill_provenance_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}/skills/{self.name} v{self.version}"

    @property
    def content_hash(self) -> str:
        # Raw UTF-8, no normalisation: line endings, BOM and spaces all count.
        return sha256_text(self.content)

    @property
    def committed_hash(self) -> str:
        """The hash of the content as written, through its redactions (memory.TextRedaction).

        A skill whose secret an operator cut out (memory.redaction) keeps the
        provenance hash of the text it was installed with: the redaction
        records lead from that hash to the content stored now.
        """
        from memory.redaction import committed_sha256

        return committed_sha256(self, "content") or self.content_hash

    @property
    def verified(self) -> bool:
        return (
            self.provenance == self.Provenance.REUSABLE_EXPLICIT
            and self.recorded_hash == self.committed_hash
        )

    @property
    def status(self) -> str:
        return "verified" if self.verified else "unverified"


# --- context deliveries ------------------------------------------------------------------


class ContextDeliveryFormat(models.TextChoices):
    TEXT = "text"
    JSON = "json"


class ContextDelivery(AppendOnlyModel):
    """Who received which context bundle bytes, and when."""

    Format = ContextDeliveryFormat

    project = models.ForeignKey(
        Project, on_delete=models.PROTECT, related_name="context_deliveries"
    )
    work = models.ForeignKey(
        WorkItem,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="context_deliveries",
    )
    author = models.CharField(max_length=64)
    format = models.CharField(max_length=8, choices=Format.choices)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveIntegerField()
    created_at = models.DateTimeField()
    # The seqs of the entries recalled for a task (GET /context?task=), as
    # canonical JSON, best first; NULL when no task was given. Nullable, so
    # adding it kept SQLite's append-only triggers (an ALTER TABLE).
    recalled = models.TextField(null=True, blank=True)
    # The agent's session that received the bundle (GET /context?session=,
    # sent by `gedweb hook`); NULL when none was named. Nullable for the
    # same reason as ``recalled``.
    session = models.CharField(max_length=128, null=True, blank=True)

    class Meta:
        ordering = ["project_id", "-created_at"]
        verbose_name_plural = "context deliveries"
        constraints = [
            models.CheckConstraint(
                condition=Q(format__in=ContextDeliveryFormat.values),
                name="governance_contextdelivery_format_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id} context {self.sha256[:12]} to {self.author}"

    @property
    def recalled_seqs(self) -> list[int] | None:
        """The seqs recalled for its task, best first; None when it had no task."""
        if self.recalled is None:
            return None
        seqs: list[int] = json.loads(self.recalled)
        return seqs


class ContextBundle(AppendOnlyModel):
    """The exact text of a delivered context bundle, stored once per project and sha256.

    Deliveries name their bundle by (project, sha256), so a bundle delivered
    a thousand times is stored once. ``sections`` is canonical JSON of
    ``[title, trust, file, characters]`` per section: with ``text`` it gives
    back the JSON form too (a section's text is its slice of ``text``, the
    sections joined by a blank line), byte for byte as the API rendered it.
    """

    append_only_rows = "context bundles"

    project = models.ForeignKey(
        Project, on_delete=models.PROTECT, related_name="context_bundles"
    )
    sha256 = models.CharField(max_length=64)
    text = models.TextField()
    sections = models.TextField()
    created_at = models.DateTimeField()
    # Set when a redaction scrubbed the bundle (governance.context.bundle_scrub):
    # the redaction record whose entry's content was cut out of ``text``. The
    # text is then no longer the delivered bytes, whose sha256 stays above.
    # Nullable, so adding it kept SQLite's append-only triggers.
    redaction = models.ForeignKey(
        "memory.MemoryEntry", on_delete=models.PROTECT, null=True, blank=True,
        related_name="scrubbed_bundles",
    )
    # Set when a redaction of another stored text (a document, a skill...: a
    # memory.TextRedaction) scrubbed the secret out of ``text``; the last one.
    text_redaction = models.ForeignKey(
        "memory.TextRedaction", on_delete=models.PROTECT, null=True, blank=True,
        related_name="scrubbed_bundles",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "sha256"], name="governance_contextbundle_unique_sha256"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id} bundle {self.sha256[:12]}"


# --- the trust ledger -----------------------------------------------------------------


class LedgerRecordKind(models.TextChoices):
    STANDARDS_IMPORT = "standards_import"
    STANDARDS_DECISION = "standards_decision"
    DOCUMENT_REVISION = "document_revision"
    WORK_ITEM = "work_item"
    GOVERNANCE_REVISION = "governance_revision"
    EVIDENCE_RECORD = "evidence_record"
    WORK_FILE = "work_file"
    TASK_ARTIFACT = "task_artifact"
    SKILL = "skill"
    GOVERNANCE_TRUST = "governance_trust"


class LedgerRecord(AppendOnlyModel):
    """One trust-bearing write, linked into its project's ledger (governance/ledger.py).

    ``digest`` is the row's digest (gedweb.lib.ledger.row_digest), ``hash``
    links the record to the one before it, and ``mac`` is an HMAC of the
    link under the installation's signing key (named by ``key_id``), so a
    writer without the key can neither add a record nor re-chain the tail.
    """

    Kind = LedgerRecordKind

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="ledger")
    seq = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=32, choices=Kind.choices)
    row_id = models.BigIntegerField()
    digest = models.CharField(max_length=64)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)
    created_at = models.DateTimeField()
    mac = models.CharField(max_length=64)
    key_id = models.CharField(max_length=16)

    class Meta:
        ordering = ["project_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["project", "seq"],
                                    name="governance_ledgerrecord_unique_seq"),
            models.UniqueConstraint(fields=["kind", "row_id"],
                                    name="governance_ledgerrecord_unique_row"),
            models.CheckConstraint(
                condition=Q(kind__in=LedgerRecordKind.values),
                name="governance_ledgerrecord_kind_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id} ledger {self.seq}: {self.kind} {self.row_id}"
