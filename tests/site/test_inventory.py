"""The artifact contract covers every model GedWeb persists."""

from __future__ import annotations

from django.apps import apps

from gedweb.inventory import AUTHORITY_LEVELS, inventory


def test_every_model_of_gedweb_has_an_inventory_row():
    listed = {row["artifact"] for row in inventory()}
    models = {
        model._meta.label
        for app in ("memory", "governance")
        for model in apps.get_app_config(app).get_models()
    }
    assert models - listed == set()
    assert {name for name in listed if "." in name and "/" not in name} - models == set()


def test_every_row_names_one_producer_consumers_an_authority_and_a_lifecycle():
    for row in inventory():
        assert row["producer"] and row["consumers"] and row["lifecycle"], row
        assert row["authority"] in AUTHORITY_LEVELS, row


def test_the_contract_is_served(client):
    body = client.get("/v1/contract").json()
    assert body["items"] == inventory()
