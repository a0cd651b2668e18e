"""Realistic project data for the page tests, the browser tests and the screenshots.

Everything is written through GedWeb's own services, as agents would
through the API; nothing is inserted behind their back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from governance import services as governance_services
from governance.context import context_deliver
from governance.models import WorkItem
from governance.skills import skill_put, skill_record_legacy
from governance.standards import standards_import_submit
from memory import services
from memory.documents import document_put
from memory.models import MemoryEntry, Project

# The one password of every person the page tests, browser tests and screenshots log in as.
PASSWORD = "pw-correct-horse-battery"

PROJECT_MD = """# Web shop

The customer-facing shop: catalogue, basket, checkout and order history.

## Stack

- Django 6.1 on PostgreSQL 16, served by gunicorn behind nginx
- Payments through the provider's hosted checkout; no card data here

## Conventions

| area | rule |
| --- | --- |
| money | integer cents, never floats |
| time | UTC in the database, local time only in templates |

See [the runbook](https://example.org/runbook) for deployments.
"""

ADR_1 = """# ADR 0001: Orders stay on PostgreSQL

## Status

Accepted.

## Context

Order history needs transactions and row locks across services.

## Decision

Keep orders on PostgreSQL 16; reporting reads a replica.
"""

ADR_1_REVISED = ADR_1.replace(
    "reporting reads a replica.", "reporting reads a replica with a 5-minute lag budget."
)

SKILL = """---
name: {name}
description: {description}
---

# {title}

1. Read the failing test first.
2. Change the smallest thing that makes it pass.
"""

MEMORY = [
    ("decision", "architect", "Orders stay on **PostgreSQL 16**; SQLite only for local runs."),
    ("convention", "reviewer", "Money is stored as integer cents. Never use `float` for prices."),
    ("finding", "test-runner", "Checkout test `test_coupon_stacking` is flaky under load: "
     "two coupons apply when requests race."),
    ("note", "operator", "Staging database was restored from Monday's backup."),
    ("decision", "architect", "Coupons are validated in one transaction with a row lock on "
     "the basket."),
    ("todo", "planner", "Add an index on `orders(customer_id, created_at)` before the sale."),
    ("finding", "profiler", "Catalogue page spends 70% of its time rendering prices; cache "
     "the formatted price per currency."),
    ("convention", "reviewer", "Templates use `{% translate %}` for every visible string."),
]


@dataclass
class Seeded:
    project: Project
    entries: list[MemoryEntry] = field(default_factory=list)
    original: MemoryEntry | None = None
    correction: MemoryEntry | None = None
    second_correction: MemoryEntry | None = None
    work: WorkItem | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def seed_project(project: Project, *, author: str = "agent-claude") -> Seeded:
    seeded = Seeded(project)
    for category, source, content in MEMORY:
        seeded.entries.append(services.memory_entry_create(
            project=project, author=author, category=category, content=content, source=source,
        ).entry)
    seeded.original = services.memory_entry_create(
        project=project, author=author, category="decision", source="architect",
        content="Search runs on Elasticsearch 7.",
    ).entry
    seeded.correction = services.memory_entry_create(
        project=project, author=author, category="decision", source="architect",
        content="Correction: search runs on PostgreSQL full-text search; Elasticsearch was "
        "dropped.", corrects=seeded.original.seq,
    ).entry
    seeded.second_correction = services.memory_entry_create(
        project=project, author=author, category="decision", source="architect",
        content="Correction: search uses PostgreSQL `tsvector` with a GIN index.",
        corrects=seeded.correction.seq,
    ).entry

    document_put(project=project, path="PROJECT.md", content=PROJECT_MD, author=author)
    document_put(project=project, path="CONTEXT.md",
                 content="# Context\n\nThe sale starts on Friday; freeze deploys on Thursday.\n",
                 author=author)
    document_put(project=project, path="adr/0001-orders-on-postgresql.md", content=ADR_1,
                 author=author)
    document_put(project=project, path="adr/0001-orders-on-postgresql.md",
                 content=ADR_1_REVISED, author="agent-codex", expected_revision=1,
                 reason="Name the replica lag budget.")
    document_put(project=project, path="reports/2026-11-load-test.md",
                 content="# Load test\n\nCheckout held 450 requests/s at p95 180 ms.\n",
                 author=author)

    opened = governance_services.work_open(
        project=project, author=author, summary="Fix coupon stacking race in checkout",
        minimum_mode="direct-change", ambiguity="sufficient", risk="normal",
        clear_scope=True, bounded=True, reversible=True, deterministic_check=True,
    )
    work = opened.work
    revision = opened.governance["revision"]
    revision = governance_services.governance_update(
        work=work, expected_revision=revision,
        changes={"currentSlice": "Lock the basket row while validating coupons"}, author=author,
    )["revision"]
    governance_services.evidence_append(
        work=work, expected_revision=revision, policy="none", author=author,
        evidence={"kind": "implementation", "source": "agent", "outcome": "observed",
                  "summary": "Basket row locked with select_for_update in apply_coupon"},
    )
    seeded.work = work
    governance_services.work_open(
        project=project, author=author, summary="Rework billing exports",
        minimum_mode="planned-change", ambiguity="sufficient", risk="low",
        clear_scope=True, bounded=True, reversible=True, deterministic_check=True,
    )

    accepted, _ = standards_import_submit(
        project=project, path="AGENTS.md", author=author,
        content="# Agents\n\nRun `make test` before every commit.\n",
    )
    accepted.accept(by="user:olga", sha256=accepted.sha256)
    renewal, _ = standards_import_submit(
        project=project, path="AGENTS.md", author=author,
        content="# Agents\n\nRun `make test` and `make lint` before every commit.\n",
    )
    claude, _ = standards_import_submit(
        project=project, path="CLAUDE.md", author=author,
        content="Prefer small commits.\n",
    )
    seeded.extra.update(accepted=accepted, renewal=renewal, claude=claude)

    skill_put(
        project=project, name="fix-flaky-test", reason="Used on every flaky CI failure",
        source="https://example.org/skills/fix-flaky-test", author=author,
        content=SKILL.format(name="fix-flaky-test", title="Fix a flaky test",
                             description='Fixes flaky tests. Triggers include "flaky"'),
    )
    skill_record_legacy(
        project=project, name="old-release", recorded_hash="0" * 64, author=author,
        content=SKILL.format(name="old-release", title="Release", description="Old release."),
    )

    context_deliver(project=project, work=None, author=author, output_format="text")
    context_deliver(project=project, work=work, author="agent-codex", output_format="json")
    return seeded
