"""The one append-only base (gedweb.append_only): every model on it, its refusals, its registry.

Each app's own tests show that the refusals leave the stored rows as they
were (tests/memory/test_append_only.py, tests/governance/test_append_only*.py)
and that the triggers fire (tests/security/). These check what the base
promises for every model at once: the ORM refuses each way of changing a
row with the model's own message, before any query, and the registry that
doctor and the suite read names exactly the tables of the models on it.
"""

from __future__ import annotations

import pytest
from django.apps import apps

from gedweb import append_only
from gedweb.append_only import AppendOnlyError, AppendOnlyModel, AppendOnlyQuerySet

BASED = sorted((model for model in apps.get_models() if issubclass(model, AppendOnlyModel)),
               key=lambda model: model._meta.db_table)
BASED_IDS = [model.__name__ for model in BASED]

# The rows each refusal names and what it suggests instead; a model that
# names neither is "<Model> rows".
MESSAGES = {
    "MemoryEntry": ("memory entries are append-only; append a correction instead",
                    "memory entries are append-only and cannot be deleted"),
    "ChainCheckpoint": ("chain checkpoints are append-only",
                        "chain checkpoints are append-only and cannot be deleted"),
    "AllowedSecret": ("allowed secret findings are append-only",
                      "allowed secret findings are append-only and cannot be deleted"),
    "TextRedaction": ("text redactions are append-only",
                      "text redactions are append-only and cannot be deleted"),
    "DocumentRevision": ("document revisions are append-only; add a revision instead",
                         "document revisions are append-only and cannot be deleted"),
    "ContextBundle": ("context bundles are append-only",
                      "context bundles are append-only and cannot be deleted"),
}


def refusals(model: type[AppendOnlyModel]) -> tuple[str, str]:
    return MESSAGES.get(model.__name__, (f"{model.__name__} rows are append-only",
                                         f"{model.__name__} rows are append-only and "
                                         "cannot be deleted"))


def test_the_registry_is_the_tables_of_the_models_on_the_base():
    """A new append-only model cannot be left out of doctor's checks, the REVOKE list or the purge.

    The registry's other checks: tests/security/test_doctor_defences.py
    compares it with the migrations that make tables append-only and checks
    its order.
    """
    assert [model._meta.db_table for model in BASED] == sorted(append_only.TABLES)
    assert len(BASED) == len(append_only.TABLES) == 17


@pytest.mark.parametrize("model", BASED, ids=BASED_IDS)
def test_the_default_manager_is_append_only(model):
    """A model that replaced its manager with a plain one would let update() and delete() through.

    Related managers (project.entries) are built from the default manager's class.
    """
    assert isinstance(model._default_manager.all(), AppendOnlyQuerySet)


@pytest.mark.parametrize("model", BASED, ids=BASED_IDS)
def test_each_queryset_write_is_refused_with_the_models_message(model):
    changed, deleted = refusals(model)
    rows = model.objects.all()
    for attempt in (lambda: rows.update(pk=1),
                    lambda: rows.bulk_update([model()], ["pk"]),
                    lambda: rows.update_or_create(pk=1)):
        with pytest.raises(AppendOnlyError) as refusal:
            attempt()
        assert str(refusal.value) == changed
    with pytest.raises(AppendOnlyError) as refusal:
        rows.delete()
    assert str(refusal.value) == deleted


@pytest.mark.parametrize("model", BASED, ids=BASED_IDS)
def test_saving_a_stored_row_or_deleting_one_is_refused_with_the_models_message(model):
    changed, deleted = refusals(model)
    stored = model()
    stored._state.adding = False
    with pytest.raises(AppendOnlyError) as refusal:
        stored.save()
    assert str(refusal.value) == changed
    with pytest.raises(AppendOnlyError) as refusal:
        stored.delete()
    assert str(refusal.value) == deleted
