"""Standards imports get a random public id, used in URLs and answers instead of the pk.

The sequential pk, shared by all projects, told one project how many imports
the others made. Existing rows get their ids here: the table is append-only,
so its triggers are dropped for the one UPDATE that gives them, and made
again, the same statements, once the column is unique and not null (on
SQLite that step rebuilds the table, which would drop them anyway). The
trust ledger's digest of an import (governance/ledger.py) names its fields
and leaves the public id out, so existing records still verify.
"""

import secrets

from django.db import migrations, models

import governance.models
from gedweb.append_only import make_append_only

TABLE = "governance_standardsimport"


def new_id() -> str:
    # This migration's own copy of the rule, so a later change of the model's
    # default does not change what it gave existing rows.
    return "si_" + secrets.token_urlsafe(16)


def give_ids(apps, schema_editor):
    StandardsImport = apps.get_model("governance", "StandardsImport")
    # The QuerySet's own update() is refused for append-only models; the
    # historical model's base manager is a plain one.
    rows = StandardsImport._base_manager.filter(public_id__isnull=True).values_list("pk", flat=True)
    for pk in list(rows):
        StandardsImport._base_manager.filter(pk=pk).update(public_id=new_id())


def triggers_back(apps, schema_editor):
    make_append_only(TABLE).code(apps, schema_editor)


def triggers_off(apps, schema_editor):
    make_append_only(TABLE).reverse_code(apps, schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ("governance", "0011_contextdelivery_session"),
    ]

    operations = [
        migrations.AddField(
            model_name="standardsimport",
            name="public_id",
            field=models.CharField(editable=False, max_length=25, null=True),
        ),
        migrations.RunPython(triggers_off, triggers_back),
        migrations.RunPython(give_ids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="standardsimport",
            name="public_id",
            field=models.CharField(default=governance.models.new_standards_import_id,
                                   editable=False, max_length=25, unique=True),
        ),
        make_append_only(TABLE),
    ]
