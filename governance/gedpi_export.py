"""ged_export: a project's GedWeb state written back as a GedPi v3 checkout layout.

``render_tree`` is pure rendering from the database (the supported files of
docs/interop.md, as ``{relative path: bytes}``); ``export_tree`` writes them
with gedweb.checkout.safefs: every target is checked first (no symlink anywhere
under PATH, no directory where a file goes), then each file that differs is
replaced atomically. Files of PATH that GedWeb does not render are never
touched or deleted.

JSON files use GedPi's writer format: two-space indentation, non-ASCII
characters unescaped, a trailing newline (JSON.stringify(value, null, 2)).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gedweb.checkout import safefs, sync
from gedweb.errors import ExportRefused
from gedweb.lib.governance import render_state_md
from gedweb.progress import Progress, no_progress
from governance import services
from governance.models import WorkItem
from governance.skills import exported_skills, gedpi_skills_state
from governance.standards import gedpi_import_state, standards_markdown
from memory.models import DocumentRevision, Project

VERSION_BYTES = b"3\n"
# GedPi's initialisation writes .ged/.gitignore with exactly these bytes (its
# GITIGNORE template, gedpi-behaviour.md Appendix A), and only when it is
# missing; it never recreates it in a tree already at VERSION 3.
GITIGNORE_PATH = sync.GITIGNORE_PATH
GITIGNORE_BYTES = (
    b"# Ephemeral session state\nruntime/\n\n# Local repo-map cache artifacts\nREPO-MAP.md\n"
    b"REPO-MAP.json\n"
)
# Written only where absent, as GedPi does (gedweb.checkout.sync, the pull's rule too).
CREATE_ONLY = sync.CREATE_ONLY


def gedpi_json(value: Any) -> bytes:
    """GedPi's JSON file bytes (JSON.stringify(value, null, 2) plus a newline)."""
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def document_file(path: str) -> str:
    """Where a GedWeb document lives in a checkout (the inverse of ged_import's map)."""
    if path == "PROJECT.md":
        return ".ged/PROJECT.md"
    if path == "CONTEXT.md":
        return "CONTEXT.md"
    if path.startswith("adr/"):
        return "docs/adr/" + path[len("adr/"):]
    if path.startswith("reports/"):
        return ".ged/reports/" + path[len("reports/"):]
    if path.startswith("handoff/"):
        return f".ged/runtime/{path[len('handoff/'):-len('.md')]}/SESSION-SUMMARY.md"
    raise ValueError(f"no checkout path for document {path}")


def work_files(work: WorkItem) -> dict[str, bytes]:
    """META, work files, task artifacts, governance.json and STATE.md of one work item."""
    work_dir, runtime = f".ged/work/{work.work_id}", f".ged/runtime/{work.work_id}"
    files = {f"{work_dir}/META.json": gedpi_json(services.meta_document(work))}
    for name, row in services.latest_files(work).items():
        files[f"{work_dir}/{name}"] = row.content.encode("utf-8")
    for (task_id, name), artifact in services.latest_task_artifacts(work).items():
        files[f"{work_dir}/tasks/{task_id}/{name}"] = artifact.content.encode("utf-8")
    document = services.governance_document(work)
    files[f"{runtime}/governance.json"] = gedpi_json(document)
    # A projection: rendered from the current revision, never imported.
    files[f"{runtime}/STATE.md"] = render_state_md(document).encode("utf-8")
    return files


def render_tree(project: Project) -> dict[str, bytes]:
    """Every supported file of the project's checkout layout, as bytes."""
    files: dict[str, bytes] = {".ged/VERSION": VERSION_BYTES, GITIGNORE_PATH: GITIGNORE_BYTES}
    for row in DocumentRevision.objects.for_project(project).current():
        files[document_file(row.path)] = row.content.encode("utf-8")
    # GedPi writes IMPORT-STATE.json on every initialisation, even when empty.
    files[".ged/IMPORT-STATE.json"] = gedpi_json(gedpi_import_state(project))
    standards = standards_markdown(project)
    if standards is not None:
        files[".ged/STANDARDS.md"] = standards[0].encode("utf-8")
    skills = exported_skills(project)
    if skills:
        files[".ged/SKILLS-STATE.json"] = gedpi_json(gedpi_skills_state(skills))
        for skill in skills:
            files[f".agents/skills/{skill.name}/SKILL.md"] = skill.content.encode("utf-8")
    for work in WorkItem.objects.for_project(project).order_by("work_id"):
        if services.latest_revision(work) is not None:
            files.update(work_files(work))
    return dict(sorted(files.items()))


@dataclass
class ExportResult:
    root: str
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    # CREATE_ONLY files PATH already had with other bytes: left as they are.
    kept: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"root": self.root, "written": self.written, "unchanged": self.unchanged,
                "kept": self.kept}


def export_tree(*, project: Project, root: Path,
                progress: Progress = no_progress) -> ExportResult:
    """Write the project's supported files under root (created if missing).

    Every target path is checked before anything is written, so a symlink or
    a directory in the way refuses the export with nothing written. Files
    whose bytes are already right are left alone, and so is a CREATE_ONLY file
    PATH already has (``kept``). ``progress`` counts the files written.
    """
    files = render_tree(project)
    try:
        plan = sync.plan_writes(sync.checked_root(root, create=True), files)
        sync.write_planned(plan, files, progress(len(plan.write), "export", "files"))
    except safefs.UnsafePath as exc:
        raise ExportRefused(str(exc)) from None
    except OSError as exc:
        raise ExportRefused(f"cannot write {exc.filename or root}: {exc.strerror}") from None
    return ExportResult(str(plan.root), plan.write, plan.unchanged, plan.kept)
