"""Operators' trust of imported governance (issue 34 §4), on the trust ledger and append-only.

A checkout's governance is kept as found; a GovernanceTrust row is the
operator's word that its imports count as GedWeb's own. The row joins the
ledger's kinds (the CHECK constraint widened, as 0007 did) and gets the
append-only triggers of every such table.
"""

from typing import Any

import django.db.models.deletion
from django.db import migrations, models

from gedweb.append_only import make_append_only, sqlite_backward, sqlite_forward

LEDGER = "governance_ledgerrecord"
TABLES = ("governance_governancetrust",)


def restore_sqlite_triggers(apps: Any, schema_editor: Any) -> None:
    # SQLite rebuilt the ledger's table to change its CHECK constraint, and
    # the old table's append-only triggers went with it.
    if schema_editor.connection.vendor != "sqlite":
        return
    for statement in sqlite_backward(LEDGER) + sqlite_forward(LEDGER):
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):

    dependencies = [
        ('governance', '0013_standardsimport_public_id'),
    ]

    operations = [
        # Backwards, this runs last: after the ledger's table was rebuilt again.
        migrations.RunPython(migrations.RunPython.noop, restore_sqlite_triggers),
        migrations.CreateModel(
            name='GovernanceTrust',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('revision', models.PositiveIntegerField(help_text='The import revision trusted, and those before it.')),
                ('document_sha256', models.CharField(max_length=64)),
                ('trusted_by', models.CharField(max_length=64)),
                ('trusted_at', models.DateTimeField()),
            ],
            options={
                'ordering': ['work_id', 'revision'],
            },
        ),
        migrations.RemoveConstraint(
            model_name='ledgerrecord',
            name='governance_ledgerrecord_kind_valid',
        ),
        migrations.AlterField(
            model_name='ledgerrecord',
            name='kind',
            field=models.CharField(choices=[('standards_import', 'Standards Import'), ('standards_decision', 'Standards Decision'), ('document_revision', 'Document Revision'), ('work_item', 'Work Item'), ('governance_revision', 'Governance Revision'), ('evidence_record', 'Evidence Record'), ('work_file', 'Work File'), ('task_artifact', 'Task Artifact'), ('skill', 'Skill'), ('governance_trust', 'Governance Trust')], max_length=32),
        ),
        migrations.AddConstraint(
            model_name='ledgerrecord',
            constraint=models.CheckConstraint(condition=models.Q(('kind__in', ['standards_import', 'standards_decision', 'document_revision', 'work_item', 'governance_revision', 'evidence_record', 'work_file', 'task_artifact', 'skill', 'governance_trust'])), name='governance_ledgerrecord_kind_valid'),
        ),
        migrations.AddField(
            model_name='governancetrust',
            name='work',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='trusts', to='governance.workitem'),
        ),
        migrations.AddConstraint(
            model_name='governancetrust',
            constraint=models.UniqueConstraint(fields=('work', 'revision'), name='governance_governancetrust_unique_revision'),
        ),
        migrations.RunPython(restore_sqlite_triggers, migrations.RunPython.noop),
        make_append_only(*TABLES),
    ]
