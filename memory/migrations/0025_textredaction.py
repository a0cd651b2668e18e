"""Redaction of a secret in a stored text other than an entry's content (memory.redaction).

memory.TextRedaction records each one (append-only itself). Document
revisions' UPDATE triggers let exactly the UPDATE a record describes
through: one column (content or reason) of one revision, the record's span
replaced by its notice, once; every other column unchanged, DELETE refused
(memory/migrations/_redactable.py). Governance 0015 does the same for
governance's tables.
"""

import django.db.models.deletion
from django.db import migrations, models

from gedweb.append_only import make_append_only
from memory.migrations._redactable import make_redactable

TABLES = ("memory_textredaction",)

# Every column of each redactable table as this migration leaves it, and the
# ones a redaction may change (tests/memory/test_text_redaction.py checks the
# lists against the tables, so a later column cannot slip past the rule).
REDACTABLE = {
    "memory_documentrevision": (
        ("id", "project_id", "path", "revision", "content", "sha256", "author", "created_at",
         "reason"),
        ("content", "reason"),
    ),
}


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0023_memoryentry_mac'),
    ]

    operations = [
        migrations.CreateModel(
            name='TextRedaction',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('source', models.CharField(max_length=40)),
                ('row', models.JSONField()),
                ('field', models.CharField(max_length=300)),
                ('table_name', models.CharField(max_length=63)),
                ('row_id', models.BigIntegerField()),
                ('column_name', models.CharField(max_length=63)),
                ('cut_start', models.PositiveBigIntegerField()),
                ('cut_length', models.PositiveIntegerField()),
                ('notice', models.TextField()),
                ('before_length', models.PositiveBigIntegerField()),
                ('before_sha256', models.CharField(max_length=64)),
                ('after_sha256', models.CharField(max_length=64)),
                ('kind', models.CharField(max_length=100)),
                ('fingerprint', models.CharField(max_length=64)),
                ('reason', models.TextField()),
                ('redacted_by', models.CharField(max_length=64)),
                ('created_at', models.DateTimeField()),
                ('mac', models.CharField(max_length=64)),
                ('key_id', models.CharField(max_length=16)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='text_redactions', to='memory.project')),
            ],
            options={
                'ordering': ['project_id', 'id'],
                'indexes': [models.Index(fields=['table_name', 'row_id'], name='memory_textredaction_row')],
            },
        ),
        make_append_only(*TABLES),
        make_redactable(REDACTABLE),
    ]
