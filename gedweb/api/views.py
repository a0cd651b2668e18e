"""The API's shared views: the base every GedWeb API view builds on, health, the /v1 404.

GedWebAPIView settles who is asking before anything else; ProjectAPIView
resolves the project before any body is read; ``query`` and
``refuse_body`` are the one way a view reads a query string or refuses a
body. Memory's and governance's APIs both build on these.
"""

from __future__ import annotations

from typing import Any, cast

from django.core.exceptions import ValidationError
from django.db import connection
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.permissions import SAFE_METHODS, AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from gedweb.api import serializers as s
from gedweb.exceptions import InsufficientScope
from memory.api.authentication import Principal
from memory.api.permissions import require_memory_write
from memory.models import Project


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    described = {
        400: "malformed body or query, or failed validation (`fields` names each field)",
        401: "missing, malformed, unknown or revoked token",
        403: "authenticated but not allowed (`forbidden`, `memory_write_forbidden`, "
             "`review_forbidden`)",
        404: "absent, or in a project this token does not cover",
        405: "method not allowed",
        409: "state conflict",
        413: "body over 1 MiB",
        415: "body is not application/json",
        422: "semantic refusal",
    }
    return {
        status: OpenApiResponse(s.ErrorSerializer, description=described[status])
        for status in statuses
    }


def request_principal(request: Request) -> Principal:
    """Who is asking, in a view behind the default permission.

    The stubs type ``request.user`` as Django's user; there it is always a
    Principal: BearerTokenAuthentication is the only authenticator, and
    IsAuthenticatedPrincipal refuses a request it did not authenticate.
    """
    return cast(Principal, request.user)


READ_ERRORS = (400, 401, 404)
WRITE_ERRORS = (400, 401, 403, 404, 413, 415)


class JSONErrorsMixin:
    """An error is the JSON shape whatever renderer the answer would have had.

    The context bundle's text/plain, the schema's YAML, Swagger UI's HTML.
    """

    def finalize_response(
        self, request: Request, response: Any, *args: Any, **kwargs: Any
    ) -> Any:
        if isinstance(response, Response) and response.status_code >= 400:
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = JSONRenderer.media_type
        return super().finalize_response(  # type: ignore[misc]
            request, response, *args, **kwargs
        )


class GedWebAPIView(JSONErrorsMixin, APIView):
    """Base of every GedWeb API view: who is asking is settled before anything else.

    DRF's ``initial`` negotiates the renderer before it authenticates, so a
    request without a valid token got 406 for an odd ``Accept``. Here
    authentication, permissions and throttles come first (a refusal is then
    rendered as JSON whatever the ``Accept``: ``finalize_response`` falls back
    to the first renderer), then content negotiation (406
    ``not_acceptable``), then the query string is parsed once, so more than
    DATA_UPLOAD_MAX_NUMBER_FIELDS parameters is a 400 on every route, after
    the 401. ``?format=`` is not DRF's (URL_FORMAT_OVERRIDE is None): the
    context bundle reads it as its own parameter.
    """

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        self.format_kwarg = self.get_format_suffix(**kwargs)
        self.perform_authentication(request)
        self.check_permissions(request)
        self.check_oauth_scope(request)
        self.check_throttles(request)
        renderer, media_type = self.perform_content_negotiation(request)
        request.accepted_renderer, request.accepted_media_type = renderer, media_type
        version, scheme = self.determine_version(request, *args, **kwargs)
        request.version, request.versioning_scheme = version, scheme
        # TooManyFieldsSent, raised while the QueryDict is built, is a 400
        # (gedweb.exceptions).
        _ = request.query_params

    # The unsafe methods an OAuth grant of memory:propose may call: proposing
    # and withdrawing candidates. Every other unsafe method needs memory:write.
    proposal_methods: frozenset[str] = frozenset()

    def check_oauth_scope(self, request: Request) -> None:
        """An OAuth token calls what its grant's scope allows (gedweb/oauth/scopes.py).

        Reads need memory:read, which every grant includes; proposals need
        memory:propose; anything else that changes state needs memory:write.
        Project and admin tokens have no OAuth scope and pass.
        """
        principal = request.user
        grant = getattr(principal, "oauth_scope", None)
        if grant is None or request.method in SAFE_METHODS:
            return
        needed = "memory:propose" if request.method in self.proposal_methods else "memory:write"
        if not grant.allows(needed):
            raise InsufficientScope(grant.memory, needed)

    def finalize_response(
        self, request: Request, response: Any, *args: Any, **kwargs: Any
    ) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        # Answers carry a project's memory, documents and instructions, sent
        # with a bearer token: no shared or browser cache may keep them.
        # Set on every answer, refusals too, so no route can be forgotten.
        response["Cache-Control"] = "no-store"
        return response



class ProjectAPIView(GedWebAPIView):
    """Base for /v1/projects/{project_id}/...: resolves the project before any body is read.

    A project the token does not cover answers exactly like a missing one.
    """

    memory_write_methods: frozenset[str] = frozenset()
    project: Project

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        principal = request_principal(request)
        project_id = kwargs["project_id"]
        if not principal.covers(project_id):
            raise Http404
        project = principal.project
        if project is None:
            project = Project.objects.filter(pk=project_id).first()
        if project is None:
            raise Http404
        self.project = project
        if request.method in self.memory_write_methods:
            require_memory_write(request)

    @property
    def author(self) -> str:
        return request_principal(self.request).name


def validated_query(serializer_class: type[s.StrictSerializer], request: Request) -> dict[str, Any]:
    # A plain dict, not the QueryDict: DRF reads an empty value in form-style
    # input as "not given", so `?after=` would silently mean no cursor. Here
    # it is validated like any other value, and a repeated parameter is
    # refused rather than one of its values picked.
    params = request.query_params
    repeated = {
        name: ["must be given at most once"]
        for name in params
        if len(params.getlist(name)) > 1
    }
    if repeated:
        raise ValidationError(repeated)
    serializer = serializer_class(data={name: params[name] for name in params})
    serializer.is_valid(raise_exception=True)
    validated: dict[str, Any] = serializer.validated_data
    return validated


def refuse_body(request: Request) -> None:
    """For operations without a body: only nothing, or an empty object, is accepted.

    Parsing still runs (413, 415, malformed JSON -> 400). A `null` or `[]`
    is falsy, so a bare truthiness test would let it through as "no body".
    """
    data = request.data
    if isinstance(data, dict) and not data:
        return
    s.EmptyBodySerializer(data=data).is_valid(raise_exception=True)


# --- health ----------------------------------------------------------------


class HealthView(GedWebAPIView):
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]

    @extend_schema(
        responses={200: s.HealthSerializer, 503: s.HealthSerializer},
        auth=[],
        operation_id="healthz",
        summary="Liveness and database check (no token)",
    )
    def get(self, request: Request) -> Response:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
        except Exception:
            return Response({"status": "unavailable", "api_version": "v1"}, status=503)
        return Response({"status": "ok", "api_version": "v1"})


# --- fallbacks ------------------------------------------------------------------


class NotFoundView(GedWebAPIView):
    """Every unknown path under /v1 answers with the JSON error shape."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    schema = None

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        self.args, self.kwargs = args, kwargs
        self.request = self.initialize_request(request, *args, **kwargs)
        self.headers = self.default_response_headers
        response = self.handle_exception(Http404())
        self.response = self.finalize_response(self.request, response, *args, **kwargs)
        return self.response
