"""HTTP API for standards imports and the STANDARDS.md built from accepted bytes."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from gedweb.api.serializers import StrictCharField, StrictSerializer
from gedweb.api.views import ProjectAPIView, errors, request_principal, validated_query
from governance import standards
from governance.models import STANDARDS_PATHS, StandardsDecision, StandardsImport

STATUSES = ["pending", "accepted", "rejected"]


# --- shapes -------------------------------------------------------------------------------


class StandardsImportCreateSerializer(StrictSerializer):
    path = serializers.ChoiceField(choices=list(STANDARDS_PATHS))
    content = StrictCharField(help_text="the file's text; its UTF-8 bytes are hashed as sent")


class StandardsDecideSerializer(StrictSerializer):
    sha256 = serializers.RegexField(
        r"^[0-9a-fA-F]{64}$", help_text="the sha256 of the bytes being decided on"
    )


class StandardsImportListQuerySerializer(StrictSerializer):
    status = serializers.ChoiceField(choices=STATUSES, required=False)
    path = serializers.ChoiceField(choices=list(STANDARDS_PATHS), required=False)


class StandardsImportSerializer(serializers.Serializer[Any]):
    id = serializers.CharField(help_text="the import's public id: si_ and 22 random characters")
    path = serializers.CharField()
    sha256 = serializers.CharField()
    status = serializers.CharField(help_text="pending, accepted or rejected")
    served = serializers.BooleanField(help_text="these bytes are in STANDARDS.md now")
    author = serializers.CharField()
    created_at = serializers.DateTimeField()
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)


class StandardsImportDetailSerializer(StandardsImportSerializer):
    content = serializers.CharField()


class StandardsImportPageSerializer(serializers.Serializer[Any]):
    items = StandardsImportSerializer(many=True)


class StandardsSourceSerializer(serializers.Serializer[Any]):
    path = serializers.CharField()
    state = serializers.CharField(
        help_text="approved, pending, rejected, renewal-pending, renewal-rejected or "
        "left-out; renewal-*: the older approved bytes are still served while the newest "
        "version is pending or was rejected; left-out: the newest approval is not on the "
        "trust ledger's record, and nothing of the path is served",
    )
    served_sha256 = serializers.CharField(allow_null=True)
    latest_sha256 = serializers.CharField()
    latest_status = serializers.CharField(help_text="pending, accepted or rejected")


class StandardsLeftOutSerializer(StandardsImportSerializer):
    reason = serializers.CharField()


class StandardsStateSerializer(serializers.Serializer[Any]):
    standards_hash = serializers.CharField(allow_null=True)
    rule = serializers.CharField()
    served = StandardsImportSerializer(many=True)
    left_out = StandardsLeftOutSerializer(
        many=True, help_text="approvals not served: their import or decision row does not "
        "match the trust ledger (doctor: ledger)")
    sources = StandardsSourceSerializer(many=True)
    accepted = StandardsImportSerializer(many=True)
    pending = StandardsImportSerializer(many=True)
    rejected = StandardsImportSerializer(many=True)


# --- views ----------------------------------------------------------------------------------


def _import_or_404(project: Any, import_id: str) -> StandardsImport:
    row: StandardsImport | None = (
        StandardsImport.objects.for_project(project)
        .select_related("decision")
        .filter(public_id=import_id)
        .first()
    )
    if row is None:
        raise Http404
    return row


class StandardsView(ProjectAPIView):
    @extend_schema(
        operation_id="standards_get",
        responses={
            (200, "text/markdown"): OpenApiResponse(
                OpenApiTypes.STR,
                description="STANDARDS.md in GedPi's byte format, from accepted bytes only; "
                "`X-Standards-Hash` is the sha256 of the body; `X-Standards-Stale-Paths` lists "
                "paths whose approved bytes are served while a newer version is pending or "
                "rejected; `X-Standards-Left-Out-Paths` lists paths left out because their "
                "approval is not on the trust ledger's record",
            ),
            **errors(401, 404),
        },
        summary="STANDARDS.md (404 while nothing is accepted)",
    )
    def get(self, request: Request, project_id: str) -> HttpResponse:
        state = standards.standards_state(self.project)
        rendered = standards.standards_markdown(self.project)
        if rendered is None:
            raise Http404
        text, sha256 = rendered
        response = HttpResponse(text.encode("utf-8"), content_type="text/markdown; charset=utf-8")
        response["X-Standards-Hash"] = sha256
        stale = [s["path"] for s in state["sources"] if s["state"].startswith("renewal-")]
        if stale:
            response["X-Standards-Stale-Paths"] = ", ".join(stale)
        if state["left_out"]:
            response["X-Standards-Left-Out-Paths"] = ", ".join(
                row["path"] for row in state["left_out"])
        return response


class StandardsStateView(ProjectAPIView):
    @extend_schema(
        operation_id="standards_state",
        responses={200: StandardsStateSerializer, **errors(401, 404)},
        summary="What STANDARDS.md serves, every decision, and open renewals",
    )
    def get(self, request: Request, project_id: str) -> Response:
        return Response(standards.standards_state(self.project))


class StandardsImportListView(ProjectAPIView):
    @extend_schema(
        operation_id="standards_imports_list",
        parameters=[StandardsImportListQuerySerializer],
        responses={200: StandardsImportPageSerializer, **errors(400, 401, 404)},
        summary="Import decisions, oldest first",
    )
    def get(self, request: Request, project_id: str) -> Response:
        query = validated_query(StandardsImportListQuerySerializer, request)
        rows = StandardsImport.objects.for_project(self.project).select_related("decision")
        if "status" in query:
            rows = rows.with_status(query["status"])
        if "path" in query:
            rows = rows.filter(path=query["path"])
        served = standards.served_ids(self.project)
        return Response(
            {"items": [standards.import_as_dict(row, served) for row in rows.order_by("id")]}
        )

    @extend_schema(
        operation_id="standards_imports_create",
        request=StandardsImportCreateSerializer,
        responses={
            201: OpenApiResponse(StandardsImportSerializer, description="new, pending"),
            200: OpenApiResponse(
                StandardsImportSerializer, description="known (path, sha256): its decision"
            ),
            **errors(400, 401, 404, 413, 415),
        },
        summary="Offer a repository-wide instruction file for approval",
    )
    def post(self, request: Request, project_id: str) -> Response:
        serializer = StandardsImportCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        row, created = standards.standards_import_submit(
            project=self.project, author=self.author, **serializer.validated_data
        )
        body = standards.import_as_dict(row, standards.served_ids(self.project))
        return Response(body, status=201 if created else 200)


class StandardsImportDetailView(ProjectAPIView):
    @extend_schema(
        operation_id="standards_imports_get",
        responses={200: StandardsImportDetailSerializer, **errors(401, 404)},
        summary="One import with its content",
    )
    def get(self, request: Request, project_id: str, import_id: str) -> Response:
        row = _import_or_404(self.project, import_id)
        body = standards.import_as_dict(row, standards.served_ids(self.project))
        return Response({**body, "content": row.content})


class StandardsDecideView(ProjectAPIView):
    """Accept or reject; only the admin token (or an operator in Django admin) decides."""

    decision: str

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # Scoping first: another project's token gets 404, this project's 403.
        super().initial(request, *args, **kwargs)
        if not request_principal(request).is_admin:
            raise PermissionDenied("only the admin token or an operator in Django admin decides")

    def _decide(self, request: Request, import_id: str) -> Response:
        row = _import_or_404(self.project, import_id)
        serializer = StandardsDecideSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        sha256 = serializer.validated_data["sha256"]
        if self.decision == StandardsDecision.Status.ACCEPTED:
            row.accept(by=self.author, sha256=sha256)
        else:
            row.reject(by=self.author, sha256=sha256)
        return Response(standards.import_as_dict(row, standards.served_ids(self.project)))


DECIDE_ERRORS = errors(400, 401, 403, 404, 409, 413, 415)


class StandardsAcceptView(StandardsDecideView):
    decision = StandardsDecision.Status.ACCEPTED

    @extend_schema(
        operation_id="standards_imports_accept",
        request=StandardsDecideSerializer,
        responses={200: StandardsImportSerializer, **DECIDE_ERRORS},
        summary="Accept exactly these bytes (admin token; 409 hash_mismatch, 409 conflict)",
    )
    def post(self, request: Request, project_id: str, import_id: str) -> Response:
        return self._decide(request, import_id)


class StandardsRejectView(StandardsDecideView):
    decision = StandardsDecision.Status.REJECTED

    @extend_schema(
        operation_id="standards_imports_reject",
        request=StandardsDecideSerializer,
        responses={200: StandardsImportSerializer, **DECIDE_ERRORS},
        summary="Reject exactly these bytes (admin token; 409 hash_mismatch, 409 conflict)",
    )
    def post(self, request: Request, project_id: str, import_id: str) -> Response:
        return self._decide(request, import_id)
