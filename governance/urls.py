"""Team pages for governance, under /p/<project_id>/ (names like governance:work-detail)."""

from __future__ import annotations

from django.urls import path

from governance import views

app_name = "governance"

urlpatterns = [
    path("work/", views.work_list, name="work-list"),
    path("work/<str:work_id>/", views.work_detail, name="work-detail"),
    path("work/<str:work_id>/revisions/<int:number>", views.revision_detail,
         name="revision-detail"),
    path("standards/", views.standards_state, name="standards"),
    path("standards/<int:import_id>", views.standards_import, name="standards-import"),
    path("skills/", views.skill_list, name="skill-list"),
    path("skills/<str:name>", views.skill_detail, name="skill-detail"),
    path("context/", views.context_log, name="context-log"),
]
