"""Secrets found in stored text by `manage.py memory scan` (issue 35): derived rows, each
scan of a project replacing that project's (memory.secret_scan.record_findings)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0021_idempotency_key_digest'),
    ]

    operations = [
        migrations.CreateModel(
            name='SecretFinding',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('source', models.CharField(max_length=40)),
                ('row', models.JSONField()),
                ('seq', models.PositiveBigIntegerField(blank=True, null=True)),
                ('field', models.CharField(max_length=300)),
                ('kind', models.CharField(max_length=100)),
                ('rule_origin', models.CharField(max_length=20)),
                ('rule_version', models.CharField(max_length=120)),
                ('line', models.PositiveIntegerField()),
                ('column', models.PositiveIntegerField()),
                ('offset', models.PositiveBigIntegerField()),
                ('length', models.PositiveIntegerField()),
                ('fingerprint', models.CharField(max_length=64)),
                ('allowed', models.BooleanField()),
                ('found_at', models.DateTimeField()),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='secret_findings', to='memory.project')),
            ],
            options={
                'ordering': ['project_id', 'source', 'id'],
                'indexes': [models.Index(fields=['project', 'allowed'], name='memory_secretfinding_open')],
            },
        ),
    ]
