from __future__ import annotations

from django.urls import path

from gedweb import converters  # noqa: F401  (registers the path converters)
from governance.api import context, handoffs, ledger, skills, standards, sync, views

app_name = "governance-api"

WORK = "projects/<project:project_id>/work/<work:work_id>"
GOV = f"{WORK}/governance"
STANDARDS = "projects/<project:project_id>/standards"
IMPORT = f"{STANDARDS}/imports/<standards_import:import_id>"
SKILLS = "projects/<project:project_id>/skills"

# A handoff's path is also a memory document's (documents/<path>): gedweb/urls.py
# includes this route before memory's, so it serves a handoff's reads and
# writes (governance.handoffs), and governance's other routes after memory's.
handoff_urlpatterns = [
    path("projects/<project:project_id>/documents/handoff/<work:work_id>.md",
         handoffs.HandoffView.as_view(), name="handoff"),
]

urlpatterns = [
    path("contract", context.ContractView.as_view(), name="contract"),
    path("projects/<project:project_id>/context", context.ContextView.as_view(), name="context"),
    path("projects/<project:project_id>/work", views.WorkListView.as_view(), name="work-list"),
    path(WORK, views.WorkDetailView.as_view(), name="work-detail"),
    path(f"{WORK}/files/<filename:name>", views.WorkFileView.as_view(), name="work-file"),
    path(
        f"{WORK}/tasks/<task:task_id>/<filename:name>",
        views.TaskArtifactView.as_view(),
        name="task-artifact",
    ),
    path(GOV, views.GovernanceView.as_view(), name="governance"),
    path(f"{GOV}/state.md", views.StateProjectionView.as_view(), name="state-md"),
    path(f"{GOV}/revisions", views.RevisionListView.as_view(), name="revision-list"),
    path(f"{GOV}/revisions/<number:number>", views.RevisionDetailView.as_view(),
         name="revision-detail"),
    path(f"{GOV}/evidence", views.EvidenceView.as_view(), name="evidence"),
    path(f"{GOV}/update", views.UpdateView.as_view(), name="update"),
    path(f"{GOV}/mutations", views.MutationBeginView.as_view(), name="mutation-begin"),
    path(f"{GOV}/mutations/<text:pending_id>/complete", views.MutationCompleteView.as_view(),
         name="mutation-complete"),
    path(f"{GOV}/mutations/<text:pending_id>/clear", views.MutationClearView.as_view(),
         name="mutation-clear"),
    path(f"{GOV}/commits", views.CommitBeginView.as_view(), name="commit-begin"),
    path(f"{GOV}/commits/<text:pending_id>/complete", views.CommitCompleteView.as_view(),
         name="commit-complete"),
    path(f"{GOV}/commits/<text:pending_id>/clear", views.CommitClearView.as_view(),
         name="commit-clear"),
    path(f"{GOV}/lifecycle", views.LifecycleView.as_view(), name="lifecycle"),
    path(f"{GOV}/guard", views.GuardView.as_view(), name="guard"),
    path(STANDARDS, standards.StandardsView.as_view(), name="standards"),
    path(f"{STANDARDS}/state", standards.StandardsStateView.as_view(), name="standards-state"),
    path(f"{STANDARDS}/imports", standards.StandardsImportListView.as_view(),
         name="standards-import-list"),
    path(IMPORT, standards.StandardsImportDetailView.as_view(),
         name="standards-import-detail"),
    path(f"{IMPORT}/accept", standards.StandardsAcceptView.as_view(),
         name="standards-import-accept"),
    path(f"{IMPORT}/reject", standards.StandardsRejectView.as_view(),
         name="standards-import-reject"),
    path("projects/<project:project_id>/ledger/verify", ledger.LedgerVerifyView.as_view(),
         name="ledger-verify"),
    path("projects/<project:project_id>/checkout", sync.CheckoutView.as_view(), name="checkout"),
    path(SKILLS, skills.SkillListView.as_view(), name="skill-list"),
    # Before <name>: "match" is therefore not available as a skill name.
    path(f"{SKILLS}/match", skills.SkillMatchView.as_view(), name="skill-match"),
    path(f"{SKILLS}/<text:name>", skills.SkillDetailView.as_view(), name="skill-detail"),
    path(
        "projects/<project:project_id>/sessions/<session:session_id>/active-work",
        views.ActiveWorkView.as_view(),
        name="active-work",
    ),
]
