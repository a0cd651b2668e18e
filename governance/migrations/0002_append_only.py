"""Work items (their META), governance revisions, evidence, work files and task
artifacts are append-only in the database itself."""

from django.db import migrations

from gedweb.append_only import make_append_only

TABLES = (
    "governance_workitem",
    "governance_governancerevision",
    "governance_evidencerecord",
    "governance_workfile",
    "governance_taskartifact",
)


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0001_initial"),
        # gedweb_refuse_change() on PostgreSQL is created there.
        ("memory", "0002_append_only_and_search"),
    ]

    operations = [make_append_only(*TABLES)]
