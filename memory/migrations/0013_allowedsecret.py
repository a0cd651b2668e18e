"""Allowed secret findings (issue 22): an operator's allowance of one scanner finding
per project, by fingerprint, with who and why; append-only, with triggers that
refuse UPDATE and DELETE from any client (see memory.secret_scan)."""

import django.db.models.deletion
from django.db import migrations, models

from gedweb.append_only import make_append_only

TABLES = ("memory_allowedsecret",)


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0012_memorycandidate_idempotency_key'),
    ]

    operations = [
        migrations.CreateModel(
            name='AllowedSecret',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('fingerprint', models.CharField(max_length=64)),
                ('reason', models.TextField()),
                ('allowed_by', models.CharField(max_length=150)),
                ('created_at', models.DateTimeField()),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='allowed_secrets', to='memory.project')),
            ],
            options={
                'ordering': ['project_id', 'created_at', 'id'],
                'constraints': [models.UniqueConstraint(fields=('project', 'fingerprint'), name='memory_allowedsecret_unique_fingerprint')],
            },
        ),
        make_append_only(*TABLES),
    ]
