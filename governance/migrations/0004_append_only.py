"""Standards imports and decisions, skill versions and context deliveries are
append-only in the database itself."""

from django.db import migrations

from gedweb.append_only import make_append_only

# Parents before children: purge_append_only_tables deletes in reverse.
TABLES = (
    "governance_standardsimport",
    "governance_standardsdecision",
    "governance_skill",
    "governance_contextdelivery",
)


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0003_standards_skills_context"),
        # gedweb_refuse_change() on PostgreSQL is created there.
        ("memory", "0002_append_only_and_search"),
    ]

    operations = [make_append_only(*TABLES)]
