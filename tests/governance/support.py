"""Plain helpers shared by the governance tests: request bodies, URLs and reads.

Setup goes through GedWeb's own services (never mocks); the behaviour under
test goes through the API.
"""

from __future__ import annotations

import re
from typing import Any

from governance import services
from governance.models import (
    EvidenceRecord,
    GovernanceRevision,
    TaskArtifact,
    WorkFile,
    WorkItem,
)

WORK_ID = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,47})-\d{17}-[a-f0-9]{32}$")
CANONICAL_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")

DIRECT = {
    "summary": "Fix the login button",
    "minimum_mode": "direct-change",
    "ambiguity": "sufficient",
    "risk": "low",
    "clear_scope": True,
    "bounded": True,
    "reversible": True,
    "deterministic_check": True,
}
PLANNED = {**DIRECT, "summary": "Rework billing exports", "minimum_mode": "planned-change"}

HEAD_A, HEAD_B, TREE, DIGEST = "a" * 40, "b" * 40, "c" * 40, "d" * 64

GOVERNANCE_KEYS = [
    "schemaVersion", "revision", "workId", "summary", "repository", "createdAt", "updatedAt",
    "currentSlice", "decision", "executionProfile", "approvals", "evidence",
    "pendingMutations", "pendingCommits", "lifecycleTransitions", "lifecycle",
]


def work_url(project_id: str, work_id: str | None = None, *parts: str) -> str:
    url = f"/v1/projects/{project_id}/work"
    if work_id is not None:
        url += f"/{work_id}"
    return "/".join([url, *parts])


def gov_url(project_id: str, work_id: str, *parts: str) -> str:
    return work_url(project_id, work_id, "governance", *parts)


def evidence(kind: str, outcome: str, **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "source": "agent", "summary": f"{kind} {outcome}", "outcome": outcome,
            **extra}


def milestone_evidence(before_head: str | None = HEAD_A, tree: str = TREE,
                       digest: str = DIGEST) -> dict[str, Any]:
    return evidence("milestone", "observed", binding={
        "type": "commit-milestone", "beforeHead": before_head, "afterHead": HEAD_B,
        "committedTree": tree, "verifiedSnapshotDigest": digest,
    })


def commit_body(expected_revision: int, **overrides: Any) -> dict[str, Any]:
    return {"expected_revision": expected_revision, "request_id": "req-1",
            "tool_call_id": "call-commit", "before_head": HEAD_A, "expected_tree": TREE,
            "unstaged_digest": "e" * 64, "untracked_digest": "f" * 64,
            "verified_snapshot_digest": DIGEST, **overrides}


def open_work(project: Any, body: dict[str, Any] | None = None, **overrides: Any) -> WorkItem:
    return services.work_open(project=project, author="seed", **{**(body or DIRECT),
                                                                   **overrides}).work


def revision_of(work: WorkItem) -> int:
    return services.latest_revision(work).revision


def add_evidence(work: WorkItem, kind: str, outcome: str, policy: str = "none",
                 **extra: Any) -> dict[str, Any]:
    return services.evidence_append(work=work, expected_revision=revision_of(work),
                                    evidence=evidence(kind, outcome, **extra), policy=policy,
                                    author="seed")


def transition(work: WorkItem, action: str, reason: str = "step") -> dict[str, Any]:
    state = services.governance_document(work)
    return services.lifecycle_transition(work=work, expected_revision=state["revision"],
                                         action=action, reason=reason,
                                         expected_lifecycle=state["lifecycle"], author="seed")


def stored(work: WorkItem) -> dict[str, list]:
    """Every governance row of a work item, to show that a refusal changed nothing."""
    return {
        "revisions": list(GovernanceRevision.objects.filter(work=work)
                          .order_by("revision").values_list("revision", "document_json")),
        "evidence": list(EvidenceRecord.objects.filter(work=work)
                         .order_by("position").values_list("evidence_id", "record_json")),
        "files": list(WorkFile.objects.filter(work=work)
                      .order_by("name", "version").values_list("name", "version", "content")),
        "tasks": list(TaskArtifact.objects.filter(work=work)
                      .order_by("task_id", "name", "version")
                      .values_list("task_id", "name", "version", "content")),
    }


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["code"] == code, body
    return body
