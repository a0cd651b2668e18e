"""Context bundles: the exact text of every delivered bundle, once per project and
sha256, append-only like the deliveries that name them."""

import django.db.models.deletion
from django.db import migrations, models

from gedweb.append_only import make_append_only

TABLES = ("governance_contextbundle",)


class Migration(migrations.Migration):

    dependencies = [
        ('governance', '0007_ledger_all_kinds'),
        ('memory', '0012_memorycandidate_idempotency_key'),
    ]

    operations = [
        migrations.CreateModel(
            name='ContextBundle',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('sha256', models.CharField(max_length=64)),
                ('text', models.TextField()),
                ('sections', models.TextField()),
                ('created_at', models.DateTimeField()),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='context_bundles', to='memory.project')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('project', 'sha256'), name='governance_contextbundle_unique_sha256')],
            },
        ),
        make_append_only(*TABLES),
    ]
