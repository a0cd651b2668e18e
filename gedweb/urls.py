"""Top-level routes: the API under /v1, health, admin and the team pages."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from memory import views as pages
from memory.api import views as api

urlpatterns = [
    path("", pages.home, name="home"),
    path("healthz", api.HealthView.as_view(), name="healthz"),
    path("admin/", admin.site.urls),
    path("v1/schema", SpectacularAPIView.as_view(), name="schema"),
    path("v1/docs", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("v1/", include("memory.api.urls")),
    path("v1/", include("governance.api.urls")),
    # Last: any other /v1 path is a JSON 404, whatever DEBUG says.
    re_path(r"^v1(?:/.*)?$", api.NotFoundView.as_view()),
]

handler404 = "gedweb.views.page_not_found"
handler500 = "gedweb.views.server_error"
