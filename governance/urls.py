"""Team pages for governance, under /p/<project_id>/ (names like governance:work-detail)."""

from __future__ import annotations

from django.urls import path

from gedweb import converters  # noqa: F401  (registers the path converters)
from governance import views

app_name = "governance"

urlpatterns = [
    path("work/", views.work_list, name="work-list"),
    path("work/<work:work_id>/", views.work_detail, name="work-detail"),
    path("work/<work:work_id>/revisions/<number:number>", views.revision_detail,
         name="revision-detail"),
    path("standards/", views.standards_state, name="standards"),
    path("STANDARDS.md", views.standards_text, name="standards-text"),
    path("standards/<standards_import:import_id>", views.standards_import, name="standards-import"),
    path("skills/", views.skill_list, name="skill-list"),
    path("skills/<text:name>", views.skill_detail, name="skill-detail"),
    path("context/", views.context_log, name="context-log"),
    path("context/<number:delivery_id>", views.context_delivery, name="context-delivery"),
    path("context/<number:delivery_id>/bundle", views.context_delivery_bundle,
         name="context-bundle"),
]
