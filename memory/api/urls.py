from __future__ import annotations

from django.urls import path

from gedweb import converters  # noqa: F401  (registers the path converters)
from memory.api import views

app_name = "memory-api"

urlpatterns = [
    path("projects", views.ProjectListView.as_view(), name="project-list"),
    path("projects/<project:project_id>", views.ProjectDetailView.as_view(), name="project-detail"),
    path(
        "projects/<project:project_id>/memory",
        views.EntryListView.as_view(),
        name="entry-list",
    ),
    path(
        "projects/<project:project_id>/recall",
        views.RecallView.as_view(),
        name="recall",
    ),
    path(
        "projects/<project:project_id>/memory.md",
        views.MirrorTextView.as_view(),
        name="mirror-text",
    ),
    path(
        "projects/<project:project_id>/memory.jsonl",
        views.MemoryExportView.as_view(),
        name="memory-export",
    ),
    path(
        "projects/<project:project_id>/documents.zip",
        views.DocumentsExportView.as_view(),
        name="documents-export",
    ),
    path(
        "projects/<project:project_id>/memory/verify",
        views.VerifyView.as_view(),
        name="entry-verify",
    ),
    path(
        "projects/<project:project_id>/memory/candidates",
        views.CandidateListView.as_view(),
        name="candidate-list",
    ),
    path(
        "projects/<project:project_id>/memory/candidates/<uuid_text:candidate_id>/approve",
        views.CandidateApproveView.as_view(),
        name="candidate-approve",
    ),
    path(
        "projects/<project:project_id>/memory/candidates/<uuid_text:candidate_id>/reject",
        views.CandidateRejectView.as_view(),
        name="candidate-reject",
    ),
    path(
        "projects/<project:project_id>/memory/candidates/<uuid_text:candidate_id>/withdraw",
        views.CandidateWithdrawView.as_view(),
        name="candidate-withdraw",
    ),
    path(
        "projects/<project:project_id>/documents",
        views.DocumentListView.as_view(),
        name="document-list",
    ),
    # Document paths hold slashes (adr/<id>.md) and always end in ".md", so
    # ".../revisions" can only mean the history route.
    path(
        "projects/<project:project_id>/documents/<docpath:path>/revisions",
        views.DocumentRevisionListView.as_view(),
        name="document-revisions",
    ),
    path(
        "projects/<project:project_id>/documents/<docpath:path>",
        views.DocumentDetailView.as_view(),
        name="document-detail",
    ),
    path(
        "projects/<project:project_id>/memory/<ref:ref>",
        views.EntryDetailView.as_view(),
        name="entry-detail",
    ),
]
