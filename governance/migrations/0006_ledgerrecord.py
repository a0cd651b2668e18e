"""The trust ledger (governance/ledger.py): its append-only table, and a baseline.

Every standards import and decision already in the database is recorded,
with the digests governance.ledger computes, so an upgraded database
verifies clean: the baseline trusts what the tables held at upgrade time.
"""

from typing import Any

import django.db.models.deletion
from django.db import migrations, models

from gedweb.append_only import make_append_only

TABLES = ("governance_ledgerrecord",)


def record_baseline(apps: Any, schema_editor: Any) -> None:
    from django.utils import timezone

    from gedweb.lib.ledger import GENESIS_HASH
    from governance.ledger import new_record

    alias = schema_editor.connection.alias
    imports = apps.get_model("governance", "StandardsImport").objects.using(alias)
    decisions = apps.get_model("governance", "StandardsDecision").objects.using(alias)
    records = apps.get_model("governance", "LedgerRecord").objects.using(alias)
    rows: dict[str, list[tuple[str, Any]]] = {}
    for row in imports.order_by("id"):
        rows.setdefault(row.project_id, []).append(("standards_import", row))
    for row in decisions.select_related("standards_import").order_by("decided_at", "id"):
        rows.setdefault(row.standards_import.project_id, []).append(("standards_decision", row))
    now = timezone.now()
    for project_id, items in sorted(rows.items()):
        prev_hash = GENESIS_HASH
        for seq, (kind, row) in enumerate(items, start=1):
            values = new_record(project_id=project_id, seq=seq, prev_hash=prev_hash, kind=kind,
                                row=row, created_at=now)
            records.create(**values)
            prev_hash = values["hash"]


class Migration(migrations.Migration):

    dependencies = [
        ('governance', '0005_skill_gedpi_record'),
        ('memory', '0011_memoryentry_idempotency_scope'),
    ]

    operations = [
        migrations.CreateModel(
            name='LedgerRecord',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('seq', models.PositiveBigIntegerField()),
                ('kind', models.CharField(choices=[('standards_import', 'Standards Import'), ('standards_decision', 'Standards Decision')], max_length=32)),
                ('row_id', models.BigIntegerField()),
                ('digest', models.CharField(max_length=64)),
                ('prev_hash', models.CharField(max_length=64)),
                ('hash', models.CharField(max_length=64)),
                ('created_at', models.DateTimeField()),
                ('mac', models.CharField(max_length=64)),
                ('key_id', models.CharField(max_length=16)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='ledger', to='memory.project')),
            ],
            options={
                'ordering': ['project_id', 'seq'],
                'constraints': [models.UniqueConstraint(fields=('project', 'seq'), name='governance_ledgerrecord_unique_seq'), models.UniqueConstraint(fields=('kind', 'row_id'), name='governance_ledgerrecord_unique_row'), models.CheckConstraint(condition=models.Q(('kind__in', ['standards_import', 'standards_decision'])), name='governance_ledgerrecord_kind_valid')],
            },
        ),
        make_append_only(*TABLES),
        migrations.RunPython(record_baseline, migrations.RunPython.noop),
    ]
