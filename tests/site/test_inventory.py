"""The artifact contract covers every model GedWeb persists."""

from __future__ import annotations

from django.apps import apps

from gedweb.inventory import AUTHORITY_LEVELS, gedpi_inventory, inventory


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


# GedPi's artifact contract as /work/shared/reference/gedpi-behaviour.md §1
# states it (rows 1-20): the path of every row.
GEDPI_CONTRACT_PATHS = (
    ".ged/VERSION", ".ged/.gitignore", ".ged/IMPORT-STATE.json", ".ged/MEMORY-MIGRATION.json",
    ".ged/runtime/migrations/durable-memory-v3/*", ".ged/runtime/active-work/<session-key>.json",
    ".ged/runtime/<work-id>/governance.json", ".ged/work/<work-id>/META.json",
    ".ged/PROJECT.md", ".ged/reports/*.md", "CONTEXT.md", "docs/adr/*.md", ".ged/STANDARDS.md",
    ".ged/work/<work-id>/DIRECT.md", ".ged/work/<work-id>/{SPEC,TASKS,TESTS}.md",
    ".ged/work/<work-id>/tasks/<task-id>/*", ".ged/runtime/<work-id>/{STATE,SESSION-SUMMARY}.md",
    ".agents/skills/<name>/SKILL.md", ".ged/SKILLS-STATE.json", ".ged/{GLOSSARY,DECISIONS}.md",
)


def test_every_gedpi_artifact_has_a_row_saying_where_gedweb_keeps_it():
    rows = gedpi_inventory()
    assert [row["path"] for row in rows] == list(GEDPI_CONTRACT_PATHS)
    for row in rows:
        assert row["producer"] and row["consumers"] and row["lifecycle"], row
        assert row["authority"] in AUTHORITY_LEVELS, row
        assert row["gedweb"], row


def test_each_model_a_gedpi_row_names_exists():
    """A row that names a GedWeb model names one that is there (and in the inventory)."""
    import re

    models = {row["artifact"] for row in inventory() if "." in row["artifact"]}
    for row in gedpi_inventory():
        for named in re.findall(r"\b(?:memory|governance)\.[A-Z]\w+", row["gedweb"]):
            assert named in models, (row["path"], named)


def test_the_gedpi_contract_is_served(client):
    assert client.get("/v1/contract").json()["gedpi"] == gedpi_inventory()
