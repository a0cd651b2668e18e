"""The trust ledger covers every trust-bearing table, and records what they already hold.

Document revisions, work items, governance revisions, evidence, work files,
task artifacts and skills join standards imports and decisions. Their
existing rows are appended to each project's ledger (oldest first), so an
upgraded database verifies clean: like 0006, the baseline trusts what the
tables held at upgrade time.
"""

from typing import Any

from django.db import migrations, models

from gedweb.append_only import sqlite_backward, sqlite_forward

TABLE = "governance_ledgerrecord"
KINDS = [
    "standards_import", "standards_decision", "document_revision", "work_item",
    "governance_revision", "evidence_record", "work_file", "task_artifact", "skill",
]
# kind -> (app, model, the lookup to its project)
NEW_KINDS = {
    "document_revision": ("memory", "DocumentRevision", "project_id"),
    "work_item": ("governance", "WorkItem", "project_id"),
    "governance_revision": ("governance", "GovernanceRevision", "work__project_id"),
    "evidence_record": ("governance", "EvidenceRecord", "work__project_id"),
    "work_file": ("governance", "WorkFile", "work__project_id"),
    "task_artifact": ("governance", "TaskArtifact", "work__project_id"),
    "skill": ("governance", "Skill", "project_id"),
}
BATCH = 1000


def restore_sqlite_triggers(apps: Any, schema_editor: Any) -> None:
    # SQLite rebuilt the table to change its CHECK constraint, and the old
    # table's append-only triggers went with it.
    if schema_editor.connection.vendor != "sqlite":
        return
    for statement in sqlite_backward(TABLE) + sqlite_forward(TABLE):
        schema_editor.execute(statement, params=None)


def widen_kinds(apps: Any, schema_editor: Any) -> None:
    """The CHECK constraint of the kinds, widened; going back keeps it wide.

    Backwards, the records of the new kinds stay (they are interleaved with
    the standards records, and the file beside the mirror holds them all):
    0006's code verifies its own kinds among them and skips the rest.
    """
    # ``apps`` is the state after the constraint change (the state-only
    # operations before this one), so the model carries the wide constraint.
    model = apps.get_model("governance", "LedgerRecord")
    [wide] = [
        c for c in model._meta.constraints if c.name == "governance_ledgerrecord_kind_valid"]
    if schema_editor.connection.vendor != "sqlite":
        old = models.CheckConstraint(
            condition=models.Q(kind__in=["standards_import", "standards_decision"]),
            name="governance_ledgerrecord_kind_valid")
        schema_editor.remove_constraint(model, old)
    # On SQLite this rebuilds the table from the model, constraints and all.
    schema_editor.add_constraint(model, wide)


def record_baseline(apps: Any, schema_editor: Any) -> None:
    from django.utils import timezone

    from gedweb.lib.ledger import GENESIS_HASH
    from governance.ledger import new_record

    alias = schema_editor.connection.alias
    records = apps.get_model("governance", "LedgerRecord").objects.using(alias)
    rows: dict[str, list[tuple[Any, str, Any]]] = {}
    for kind, (app, name, owner) in NEW_KINDS.items():
        model = apps.get_model(app, name).objects.using(alias)
        # Rows already on the ledger (an upgrade after a downgrade) are skipped.
        recorded = set(records.filter(kind=kind).values_list("row_id", flat=True))
        for row in model.annotate(ledger_project=models.F(owner)).order_by("id").iterator():
            if row.id in recorded:
                continue
            rows.setdefault(row.ledger_project, []).append((row.created_at, kind, row))
    now = timezone.now()
    for project_id, items in sorted(rows.items()):
        head = (records.filter(project_id=project_id).order_by("-seq")
                .values_list("seq", "hash").first())
        seq, prev_hash = head if head is not None else (0, GENESIS_HASH)
        batch = []
        for _, kind, row in sorted(items, key=lambda item: (item[0], KINDS.index(item[1]),
                                                            item[2].id)):
            seq += 1
            values = new_record(project_id=project_id, seq=seq, prev_hash=prev_hash, kind=kind,
                                row=row, created_at=now)
            batch.append(records.model(**values))
            prev_hash = values["hash"]
            if len(batch) == BATCH:
                records.bulk_create(batch)
                batch = []
        records.bulk_create(batch)


class Migration(migrations.Migration):

    dependencies = [
        ('governance', '0006_ledgerrecord'),
        ('memory', '0011_memoryentry_idempotency_scope'),
    ]

    operations = [
        migrations.AlterField(
            model_name='ledgerrecord',
            name='kind',
            field=models.CharField(choices=[('standards_import', 'Standards Import'), ('standards_decision', 'Standards Decision'), ('document_revision', 'Document Revision'), ('work_item', 'Work Item'), ('governance_revision', 'Governance Revision'), ('evidence_record', 'Evidence Record'), ('work_file', 'Work File'), ('task_artifact', 'Task Artifact'), ('skill', 'Skill')], max_length=32),
        ),
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.RemoveConstraint(
                model_name='ledgerrecord',
                name='governance_ledgerrecord_kind_valid',
            ),
            migrations.AddConstraint(
                model_name='ledgerrecord',
                constraint=models.CheckConstraint(condition=models.Q(('kind__in', KINDS)), name='governance_ledgerrecord_kind_valid'),
            ),
        ]),
        migrations.RunPython(widen_kinds, migrations.RunPython.noop),
        migrations.RunPython(restore_sqlite_triggers, migrations.RunPython.noop),
        migrations.RunPython(record_baseline, migrations.RunPython.noop),
    ]
