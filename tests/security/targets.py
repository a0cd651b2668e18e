"""One project with one of everything an API path parameter can name (test-only)."""

from __future__ import annotations

from typing import Any

from governance.standards import standards_import_submit
from memory import services
from tests.governance.support import PLANNED, open_work


def project_with_everything(project_id: str, name: str) -> tuple[str, dict[str, Any]]:
    """Create the project, a work item, an entry, a candidate and a standards import.

    Returns the project token and a value for every path parameter of the API
    (the files and names need no row: a missing one is a valid 404).
    """
    project, token = services.project_create(project_id=project_id, name=name)
    work = open_work(project, PLANNED)
    entry = services.memory_entry_create(
        project=project, author="cli", category="decision", content="seed"
    ).entry
    candidate = services.candidate_create(
        project=project, author="cli", category="note", content="pending"
    )
    standards, _ = standards_import_submit(
        project=project, path="AGENTS.md", content="# Rules\n\nBe careful.\n", author="cli"
    )
    return token, {
        "project_id": project_id,
        "work_id": work.work_id,
        "ref": str(entry.uuid),
        "candidate_id": str(candidate.uuid),
        "import_id": standards.public_id,
        "path": "CONTEXT.md",
        "task_id": "T1",
        "session_id": "s1",
        "pending_id": "p1",
    }
