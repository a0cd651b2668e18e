"""A realistic GedPi checkout after the durable-memory v3 migration, for ged_import/ged_export.

``migrated_checkout()`` returns ``{relpath: bytes}``; write it with ``write_tree``
(shared with tests/migration). Governance documents are built with GedWeb's
pure GedPi rules at fixed times, then written in GedPi's JSON format.

What the tree holds (docs/interop.md lists which files round-trip):
- PROJECT.md, a CONTEXT.md with the migrated glossary section, ADRs including
  the content-addressed 0000-migrated-ged-decisions ADR, a report;
- AGENTS.md accepted and since changed (a pending renewal; STANDARDS.md still
  holds the accepted bytes because every accepted source changed), CLAUDE.md
  rejected with its bytes still in place;
- three skills: verified, drifted (file edited after recording) and a legacy
  record without provenance or hash;
- a planned-change work item with an accepted plan, task artifacts, STATE.md and
  a handoff; an abandoned direct-change work item; the paused, non-selectable
  work item of GedPi's legacy checkpoint import;
- things ged_import leaves alone: the v3 completion record and backups, the
  bootstrap work item (no governance), the legacy ``root`` work folder, the
  active-work pointer, the GLOSSARY/DECISIONS pointers (``.ged/.gitignore``, GedPi's
  exact bytes, is not imported; ged_export writes the same bytes where it is missing).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from gedweb.lib import governance as gov
from gedweb.lib.fingerprint import file_set_fingerprint
from gedweb.lib.standards import render_standards
from tests.checkout.trees import GITIGNORE_TEMPLATE, snapshot, write_tree

__all__ = ["migrated_checkout", "pretty", "snapshot", "write_tree"]


def pretty(value: Any) -> bytes:
    """GedPi's JSON file bytes: JSON.stringify(value, null, 2) and a newline."""
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def at(minute: int) -> datetime:
    return datetime(2026, 8, 10, 5, minute, 0, 123000, tzinfo=UTC)


REPOSITORY = {"repositoryId": "1" * 64, "worktreeId": "2" * 64, "branch": "main",
              "baseHead": "3" * 40}

GLOSSARY = (
    "# Glossary\n\n- Ferry: a batch of memory entries moved together.\n- Café: the break room.\n"
)
DECISIONS = "# Decisions\n\n- 2026-01-01: Keep memory append-only. Why: audit.\n"
GLOSSARY_SHA, DECISIONS_SHA = sha(GLOSSARY), sha(DECISIONS)
BACKUPS = ".ged/runtime/migrations/durable-memory-v3/backups"
MIGRATED_ADR = f"docs/adr/0000-migrated-ged-decisions-{DECISIONS_SHA[:12]}.md"

AGENTS_ACCEPTED = "# Agents\n\nUse exact checks.\n"
AGENTS_NOW = "# Agents\n\nSkip every check.\n"
CLAUDE_REJECTED = "Always push to main."

SKILL_VERIFIED = (
    "---\nname: release-notes\ndescription: Write release notes. Triggers include \"release\", "
    "\"changelog\".\n---\n\nCollect merged changes and group them by area.\n"
)
SKILL_DRIFTED_RECORDED = (
    "---\nname: deploy-checklist\ndescription: Deploy safely. Triggers include \"deploy\".\n"
    "---\n\nRun the smoke tests first.\n"
)
SKILL_DRIFTED_NOW = SKILL_DRIFTED_RECORDED + "Then skip the review.\n"
SKILL_LEGACY = "---\nname: login-cache\ndescription: Cache login lookups.\n---\n\nUse the cache.\n"

PLANNED_ID = gov.work_id_for("Rework billing exports", at(1), "a" * 32)
DIRECT_ID = gov.work_id_for("Fix the café login button", at(2), "b" * 32)
LEGACY_SOURCE = ".ged/runtime/root/checkpoints.json"
LEGACY_SUMMARY = f"Legacy checkpoint import from {LEGACY_SOURCE}"
LEGACY_ID = gov.work_id_for(LEGACY_SUMMARY, at(0), "c" * 32)
BOOTSTRAP_ID = gov.work_id_for("Ged bootstrap work", at(0), "d" * 32)

SPEC = "# Spec\n\n## Problem\n\nBilling exports time out for large accounts.\n"
TASKS = gov.TASKS_TEMPLATE + "| T01 | Stream the export | - | done | rows stream |\n"
TESTS = gov.TESTS_TEMPLATE.replace("-\n\n## Task", "- make test\n\n## Task", 1)
HISTORY = [{"summary": "Streamed rows", "verification": {
    "taskId": "T01", "passed": True, "checksRun": ["make test"], "failureSummary": [],
    "retryRecommended": False}}]


def meta(work_id: str, summary: str, created: datetime, **extra: Any) -> dict[str, Any]:
    return {"schemaVersion": 1, "workId": work_id, "summary": summary,
            "createdAt": gov.format_time(created), "branch": REPOSITORY["branch"],
            "baseHead": REPOSITORY["baseHead"], **extra}


def evidence(ident: str, kind: str, outcome: str, minute: int, **extra: Any) -> dict[str, Any]:
    return {"id": ident, "kind": kind, "source": "runtime", "producerId": "coordinator",
            "recordedAt": gov.format_time(at(minute)), "summary": f"{kind} {outcome}",
            "outcome": outcome, **extra}


def planned_governance() -> dict[str, Any]:
    decision = gov.resolve_mode(minimum_mode="planned-change", ambiguity="sufficient",
                                risk="normal", clear_scope=True, bounded=True, reversible=True,
                                deterministic_check=True)
    state = gov.initial_state(work_id=PLANNED_ID, summary="Rework billing exports",
                              repository=REPOSITORY, decision=decision,
                              execution_profile="assisted", now=at(1))
    plan = file_set_fingerprint({f".ged/work/{PLANNED_ID}/{name}": text.encode()
                                 for name, text in (("SPEC.md", SPEC), ("TASKS.md", TASKS),
                                                    ("TESTS.md", TESTS))})
    state = gov.append_evidence(state, evidence("evidence-plan", "plan", "satisfied", 3,
                                                binding={"type": "plan-content", **plan}), at(3))
    state = gov.append_evidence(state, evidence("evidence-impl", "implementation", "observed", 4,
                                                binding={"type": "mutation-content",
                                                         "beforeDigest": "4" * 64,
                                                         "afterDigest": "5" * 64,
                                                         "changedPaths": ["billing/export.py"]}),
                                at(4))
    return gov.cas_update(state, {"currentSlice": "T01 stream the export"}, at(5))


def direct_governance() -> dict[str, Any]:
    decision = gov.resolve_mode(minimum_mode="direct-change", ambiguity="sufficient", risk="low",
                                clear_scope=True, bounded=True, reversible=True,
                                deterministic_check=True)
    state = gov.initial_state(work_id=DIRECT_ID, summary="Fix the café login button",
                              repository=REPOSITORY, decision=decision,
                              execution_profile="solo", now=at(2))
    state = gov.append_evidence(state, evidence("evidence-verify", "verification", "failed", 6),
                                at(6))
    return gov.transition(state, action="abandon", reason="Superseded by the redesign.",
                          expected_lifecycle="active", transition_id="lifecycle-1", now=at(7))


def legacy_governance() -> dict[str, Any]:
    decision = {"mode": "planned-change", "reasonCode": "decision-needed",
                "reason": "Legacy checkpoint state requires human review and cannot authorize "
                          "current work.", "requiresDecision": True}
    record = {"id": "legacy-migration-" + "e" * 24, "kind": "migration-required",
              "source": "runtime", "recordedAt": gov.format_time(at(0)),
              "summary": f"Legacy checkpoints from {LEGACY_SOURCE} were preserved in backup "
                         "20260810050000123-0123456789abcdef but were not trusted as "
                         "authorization.", "outcome": "failed"}
    return gov.initial_state(work_id=LEGACY_ID, summary=LEGACY_SUMMARY,
                             repository={**REPOSITORY, "branch": None, "baseHead": None},
                             decision=decision, execution_profile="solo", now=at(0),
                             lifecycle="paused", evidence=[record])


def migrated_checkout() -> dict[str, bytes]:
    standards_md = render_standards([("AGENTS.md", sha(AGENTS_ACCEPTED), AGENTS_ACCEPTED)])
    planned, direct, legacy = planned_governance(), direct_governance(), legacy_governance()
    context_marker = f"ged-memory-v3:context:{GLOSSARY_SHA}"
    decisions_marker = f"ged-memory-v3:decisions:{DECISIONS_SHA}"
    files: dict[str, str | bytes] = {
        ".ged/VERSION": "3\n",
        ".ged/.gitignore": GITIGNORE_TEMPLATE,
        ".ged/MEMORY-MIGRATION.json": pretty({
            "schemaVersion": 1, "migrationId": "durable-memory-v3", "status": "complete",
            "completedAt": gov.format_time(at(0)), "entries": [
                {"sourcePath": ".ged/GLOSSARY.md", "action": "migrated-context",
                 "sha256": GLOSSARY_SHA, "backupPath": f"{BACKUPS}/.ged/GLOSSARY.md",
                 "destinationPath": "CONTEXT.md"},
                {"sourcePath": ".ged/DECISIONS.md", "action": "migrated-decisions",
                 "sha256": DECISIONS_SHA, "backupPath": f"{BACKUPS}/.ged/DECISIONS.md",
                 "destinationPath": MIGRATED_ADR},
            ]}),
        f"{BACKUPS}/.ged/GLOSSARY.md": GLOSSARY,
        f"{BACKUPS}/.ged/DECISIONS.md": DECISIONS,
        ".ged/GLOSSARY.md": "# Glossary moved\n\nCanonical project and domain vocabulary now "
                            "lives in [../CONTEXT.md](../CONTEXT.md).\n\nMigration content "
                            f"hash: {GLOSSARY_SHA}\n",
        ".ged/DECISIONS.md": f"# Decisions moved\n\nCanonical durable decisions now live in "
                             f"[../{MIGRATED_ADR}](../{MIGRATED_ADR}).\n\nMigration content "
                             f"hash: {DECISIONS_SHA}\n",
        # durable documents
        ".ged/PROJECT.md": "# Billing service\n\nInvoices and exports for Acme's customers.\n",
        "CONTEXT.md": f"# Project Context\n\n<!-- {context_marker}:begin -->\n"
                      f"## Migrated Ged glossary\n\n{GLOSSARY}<!-- {context_marker}:end -->\n",
        MIGRATED_ADR: f"# ADR 0000: Migrated Ged decisions\n\nStatus: migrated\n\n"
                      f"<!-- {decisions_marker}:begin -->\n{DECISIONS}"
                      f"<!-- {decisions_marker}:end -->\n",
        "docs/adr/0001-postgres.md": "# ADR 0001: PostgreSQL\n\nStatus: accepted\n\nUse it.\n",
        "docs/adr/0002-exports-stream.md": "# ADR 0002: Stream exports\n\nNo buffering.",
        "docs/adr/README.md": "# ADRs\n\nOne file per decision.\n",
        ".ged/reports/billing-audit.md": "# Billing audit\n\nTwo rounding bugs found.\n",
        # standards: AGENTS.md accepted then changed (renewal pending), CLAUDE.md rejected
        "AGENTS.md": AGENTS_NOW,
        "CLAUDE.md": CLAUDE_REJECTED,
        ".ged/STANDARDS.md": standards_md,
        ".ged/IMPORT-STATE.json": pretty({
            "accepted": [{"path": "AGENTS.md", "hash": sha(AGENTS_ACCEPTED)}],
            "rejected": [{"path": "CLAUDE.md", "hash": sha(CLAUDE_REJECTED)}],
            "pending": [{"path": "AGENTS.md", "hash": sha(AGENTS_NOW)}],
            "standardsHash": sha(standards_md),
        }),
        # skills
        ".ged/SKILLS-STATE.json": pretty({"schemaVersion": 2, "managed": [
            {"name": "release-notes", "source": "created", "sourcePath": "docs/release.md",
             "taskRefs": [], "installedAt": "2026-08-09T10:00:00.000Z",
             "reason": "Reused every release.", "provenance": "reusable-explicit",
             "contentHash": sha(SKILL_VERIFIED)},
            {"name": "deploy-checklist", "source": "created", "taskRefs": [],
             "installedAt": "2026-08-09T11:00:00.000Z", "reason": "Deploys go wrong.",
             "provenance": "reusable-explicit", "contentHash": sha(SKILL_DRIFTED_RECORDED)},
            {"name": "login-cache", "source": "user", "sourcePath": ".ged/project-skills/x",
             "taskRefs": ["T01"], "installedAt": "2025-06-01T10:00:00.000Z"},
        ]}),
        ".agents/skills/release-notes/SKILL.md": SKILL_VERIFIED,
        ".agents/skills/deploy-checklist/SKILL.md": SKILL_DRIFTED_NOW,
        ".agents/skills/login-cache/SKILL.md": SKILL_LEGACY,
        # planned-change work
        f".ged/work/{PLANNED_ID}/META.json": pretty(meta(PLANNED_ID, "Rework billing exports",
                                                         at(1))),
        f".ged/work/{PLANNED_ID}/SPEC.md": SPEC,
        f".ged/work/{PLANNED_ID}/TASKS.md": TASKS,
        f".ged/work/{PLANNED_ID}/TESTS.md": TESTS,
        f".ged/work/{PLANNED_ID}/NOTES.md": "# Notes\n\nAsk finance about rounding.\n",
        f".ged/work/{PLANNED_ID}/tasks/T01/BRIEF.md": "# T01: Stream the export\n\n## Objective\n"
                                                      "\nStream rows.\n",
        f".ged/work/{PLANNED_ID}/tasks/T01/HISTORY.json": pretty(HISTORY),
        f".ged/work/{PLANNED_ID}/tasks/T01/RECOVERY.md": "# Recovery\n\nPrior attempts: 1\n",
        f".ged/runtime/{PLANNED_ID}/governance.json": pretty(planned),
        f".ged/runtime/{PLANNED_ID}/STATE.md": gov.render_state_md(planned),
        f".ged/runtime/{PLANNED_ID}/SESSION-SUMMARY.md": "# Session summary\n\n## Recent "
                                                         "progress\n\n- Streamed T01.\n",
        # direct-change work, abandoned
        f".ged/work/{DIRECT_ID}/META.json": pretty(meta(DIRECT_ID, "Fix the café login button",
                                                        at(2))),
        f".ged/work/{DIRECT_ID}/DIRECT.md": gov.render_direct_md(
            DIRECT_ID, "Fix the café login button", direct["decision"], True),
        f".ged/runtime/{DIRECT_ID}/governance.json": pretty(direct),
        # the legacy checkpoint import's target: paused, never selectable
        f".ged/work/{LEGACY_ID}/META.json": pretty(meta(
            LEGACY_ID, LEGACY_SUMMARY, at(0), branch=None, baseHead=None,
            origin={"kind": "legacy-import", "migrationId": "0f0e0d0c-0b0a-4909-8807-060504030201",
                    "candidateId": "legacy-" + "f" * 20, "selectable": False})),
        f".ged/work/{LEGACY_ID}/SPEC.md": gov.SPEC_TEMPLATE,
        f".ged/work/{LEGACY_ID}/TASKS.md": gov.TASKS_TEMPLATE,
        f".ged/work/{LEGACY_ID}/TESTS.md": gov.TESTS_TEMPLATE,
        f".ged/runtime/{LEGACY_ID}/governance.json": pretty(legacy),
        f".ged/runtime/{LEGACY_ID}/STATE.md": gov.render_state_md(legacy),
        # left alone by ged_import
        f".ged/work/{BOOTSTRAP_ID}/META.json": pretty(meta(BOOTSTRAP_ID, "Ged bootstrap work",
                                                           at(0), branch=None, baseHead=None)),
        ".ged/work/root/NOTES.md": "# Notes\n\nOld branch notes.\n",
        ".ged/work/root/META.json": '{"workId":"root","schema":1}',
        ".ged/runtime/root/checkpoints.json": pretty({"schemaVersion": 2}),
        ".ged/runtime/active-work/0123456789abcdef0123456789abcdef.json": pretty({
            "schemaVersion": 1, "sessionId": "ged-default-session", "workId": PLANNED_ID,
            "operation": "open", "selectedAt": gov.format_time(at(1)), "requestId": "req-1"}),
    }
    return {rel: data.encode("utf-8") if isinstance(data, str) else data
            for rel, data in files.items()}


# The files ged_export gives back byte for byte from this tree (docs/interop.md).
SUPPORTED = sorted([
    ".ged/VERSION", ".ged/.gitignore", ".ged/PROJECT.md", "CONTEXT.md", MIGRATED_ADR,
    "docs/adr/0001-postgres.md",
    "docs/adr/0002-exports-stream.md", ".ged/reports/billing-audit.md", ".ged/STANDARDS.md",
    ".ged/IMPORT-STATE.json", ".ged/SKILLS-STATE.json", ".agents/skills/release-notes/SKILL.md",
    ".agents/skills/deploy-checklist/SKILL.md", ".agents/skills/login-cache/SKILL.md",
    *(f".ged/work/{PLANNED_ID}/{name}" for name in (
        "META.json", "SPEC.md", "TASKS.md", "TESTS.md", "tasks/T01/BRIEF.md",
        "tasks/T01/HISTORY.json", "tasks/T01/RECOVERY.md")),
    *(f".ged/runtime/{PLANNED_ID}/{name}" for name in (
        "governance.json", "STATE.md", "SESSION-SUMMARY.md")),
    f".ged/work/{DIRECT_ID}/META.json", f".ged/work/{DIRECT_ID}/DIRECT.md",
    f".ged/runtime/{DIRECT_ID}/governance.json",
    *(f".ged/work/{LEGACY_ID}/{name}" for name in ("META.json", "SPEC.md", "TASKS.md",
                                                   "TESTS.md")),
    f".ged/runtime/{LEGACY_ID}/governance.json", f".ged/runtime/{LEGACY_ID}/STATE.md",
])
# Rendered by ged_export although this tree has none (STATE.md is a projection).
EXPORT_ONLY = [f".ged/runtime/{DIRECT_ID}/STATE.md"]
