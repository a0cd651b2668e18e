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
    path("mirror/", views.mirror, name="mirror"),
    path("MEMORY.md", views.mirror_text, name="mirror-text"),
    path("documents/", views.document_list, name="document-list"),
    path("documents/<docpath:path>", views.document_detail, name="document-detail"),
]
