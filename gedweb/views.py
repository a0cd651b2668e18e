"""Error pages: JSON under /v1, HTML elsewhere."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views import defaults

from gedweb.exceptions import json_error


def _is_api(request: HttpRequest) -> bool:
    return request.path == "/v1" or request.path.startswith("/v1/")


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return json_error(request, "not_found", "not found", 404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    if _is_api(request):
        return json_error(request, "internal_error", "internal server error", 500)
    return defaults.server_error(request)
