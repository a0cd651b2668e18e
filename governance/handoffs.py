"""Handoffs: ``handoff/<work_id>.md``, the session summary of one work item.

A handoff is a durable document (memory's document store keeps its
revisions, lists it and serves its history), but the rule that makes it one
is governance's: it must name an existing work item of the same project
(gedpi-behaviour.md Gap G-11). This is the one writer that applies the rule:
the API's handoff route and ``ged_import`` write through it. It finds the
work item and hands the row to ``memory.documents.document_put``, which
refuses a handoff without the row of its own project and work id, so no
other writer can store one (fail closed).
"""

from __future__ import annotations

from governance.models import WorkItem
from memory.documents import PutResult, document_put
from memory.models import Project

__all__ = ["handoff_path", "handoff_put"]


def handoff_path(work_id: str) -> str:
    return f"handoff/{work_id}.md"


def handoff_put(
    *,
    project: Project,
    work_id: str,
    content: str,
    author: str,
    expected_revision: int | None = None,
    reason: str | None = None,
) -> PutResult:
    """Create the handoff of a work item of ``project`` or add its next revision.

    Any lifecycle state will do, terminal and paused included: a closing
    summary of finished work is a legitimate handoff. An unknown work id, or
    one of another project, is refused with a 400 naming ``path``, after the
    content and revision checks (the order every document write has).
    Work items are append-only, so the row found here still exists when the
    revision is stored.
    """
    work_item = WorkItem.objects.for_project(project).filter(work_id=work_id).first()
    return document_put(
        project=project,
        path=handoff_path(work_id),
        content=content,
        author=author,
        expected_revision=expected_revision,
        reason=reason,
        work_item=work_item,
    )
