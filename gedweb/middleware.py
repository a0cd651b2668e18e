"""Requests refused before any middleware, view or query sees them.

First in MIDDLEWARE after the request timing (gedweb.metrics, which only
observes), so these hold for every route (API, team pages, admin)
whatever DEBUG says:

- A path holding a NUL is a 404. PostgreSQL refuses a NUL in a text
  parameter (psycopg.DataError, a 500); the path converters keep it out of
  every GedWeb route, and this keeps it out of the admin's
  ``<path:object_id>`` URLs and anything added later.
- A Host header outside ALLOWED_HOSTS is a 400: the JSON error shape under
  /v1, Django's plain 400 page elsewhere, never the debug page (which shows
  paths and settings). Django would log it with a traceback; here it is one
  line on ``django.security.DisallowedHost``, as for any client error.
- Outside /v1, more query parameters or form fields than
  DATA_UPLOAD_MAX_NUMBER_FIELDS are Django's plain 400 page with one log
  line, not the debug page and a traceback. Under /v1 the API view answers
  them after authentication (401 first), in its JSON shape.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import DisallowedHost, TooManyFieldsSent
from django.http import Http404, HttpRequest, HttpResponse
from django.views import defaults

from gedweb.exceptions import json_error
from gedweb.views import page_not_found

host_logger = logging.getLogger("django.security.DisallowedHost")
fields_logger = logging.getLogger("django.security.TooManyFieldsSent")


def is_api_path(path: str) -> bool:
    return path == "/v1" or path.startswith("/v1/")


class RequestShapeMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        api = is_api_path(request.path_info)
        try:
            request.get_host()
        except DisallowedHost as exc:
            host_logger.warning("%s (%s %s)", exc, request.method, request.path_info[:200])
            if api:
                return json_error(request, "bad_request", "the Host header is not allowed", 400)
            return defaults.bad_request(request, exc)
        if "\x00" in request.path_info:
            return page_not_found(request, Http404())
        if not api:
            try:
                # Parsed here once; every later reader gets these QueryDicts.
                request.GET  # noqa: B018
                if request.method == "POST":
                    request.POST  # noqa: B018
            except TooManyFieldsSent as exc:
                fields_logger.warning("%s (%s %s)", exc, request.method, request.path_info[:200])
                return defaults.bad_request(request, exc)
        return self.get_response(request)


class OwnNotFoundPageMiddleware:
    """A page that is not there is the site's own 404 page, with DEBUG on too.

    With DEBUG on (``DJANGO_DEBUG=true``) Django answers a 404 with its
    technical page, which lists every URL pattern of the site; people
    reading memory should meet the page production shows them, and clients
    of /v1 the JSON error shape (a path no route matches, such as
    ``/v1/projects/%0a``, never reaches the API's own 404). Any HTML 404 is
    replaced, so a missing entry, a project the reader may not see and an
    unknown route read alike.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (settings.DEBUG and response.status_code == 404
                and response.get("Content-Type", "").startswith("text/html")):
            return page_not_found(request, Http404())
        return response
