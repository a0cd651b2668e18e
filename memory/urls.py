"""Team pages for memory, under /p/<project_id>/ (names like memory:entry-detail).

/p/<project_id>/ itself, the overview, is the site's (gedweb/urls.py).
"""

from __future__ import annotations

from django.urls import path

from gedweb import converters  # noqa: F401  (registers the path converters)
from memory import views

app_name = "memory"

urlpatterns = [
    path("memory/", views.entry_list, name="entry-list"),
    path("memory/<ref:ref>", views.entry_detail, name="entry-detail"),
    path("memory/authors/<str:author>/", views.author_entries, name="author-entries"),
    path("mirror/", views.mirror, name="mirror"),
    path("MEMORY.md", views.mirror_text, name="mirror-text"),
    path("memory.jsonl", views.memory_export, name="memory-export"),
    path("documents.zip", views.documents_export, name="documents-export"),
    path("documents/", views.document_list, name="document-list"),
    path("documents/<docpath:path>", views.document_detail, name="document-detail"),
    path("compare/<docpath:path>", views.document_compare, name="document-compare"),
    path("review/", views.candidate_list, name="candidate-list"),
    path("review/<uuid_text:candidate_id>/approve", views.candidate_decide,
         {"decision": "approve"}, name="candidate-approve"),
    path("review/<uuid_text:candidate_id>/reject", views.candidate_decide,
         {"decision": "reject"}, name="candidate-reject"),
]
