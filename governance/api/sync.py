"""HTTP API for GedPi sync: a checkout's layout in (ged_import), the project's out (ged_export).

``POST .../checkout`` takes a tar.gz of a checkout's GedPi layout and answers
ged_import's report; ``GET .../checkout`` answers the tar.gz of what ged_export
writes (governance.gedpi_sync; docs/interop.md, "Over HTTP").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from gedweb.api.serializers import ErrorSerializer, StrictSerializer
from gedweb.api.views import ProjectAPIView, errors, validated_query
from gedweb.checkout.archive import MEDIA_TYPE
from gedweb.errors import ArchiveRefused
from gedweb.parsers import ArchiveParser
from governance.gedpi_sync import DEFAULT_SHOWN, export_archive, import_archive


class ArchiveRenderer(BaseRenderer):
    """Negotiation only: the archive is an HttpResponse of its own."""

    media_type = MEDIA_TYPE
    format = "tar.gz"
    charset = None

    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: Mapping[str, Any] | None = None) -> bytes:
        return bytes(data)


class PushQuerySerializer(StrictSerializer):
    dry_run = serializers.ChoiceField(
        choices=["true", "false"], required=False, default="false",
        help_text="true: run the whole import and roll it back; nothing is written")
    # No control character, so a name cannot break the one-line refusal it appears in.
    name = serializers.RegexField(
        r"^[^\x00-\x1f\x7f]{1,1024}$", required=False, default=DEFAULT_SHOWN,
        help_text="how refusals and the report name the checkout (gedweb push sends its PATH)")


class ImportReportSerializer(serializers.Serializer[Any]):
    root = serializers.CharField()  # type: ignore[assignment]
    created = serializers.DictField(child=serializers.IntegerField())
    unchanged = serializers.DictField(child=serializers.IntegerField())
    skipped = serializers.ListField(child=serializers.CharField())
    standards = serializers.ListField(child=serializers.CharField())
    trusted = serializers.ListField(child=serializers.DictField(), help_text="always empty")
    trusted_by = serializers.CharField(allow_null=True, help_text="always null")
    not_reproducible = serializers.ListField(child=serializers.CharField())


class CheckoutView(ProjectAPIView):
    parser_classes = [ArchiveParser]

    def get_renderers(self) -> list[BaseRenderer]:
        # The download is an archive; the upload's answer is JSON, like every error.
        if self.request.method == "GET":
            return [ArchiveRenderer()]
        return [JSONRenderer()]

    @extend_schema(
        operation_id="checkout_export",
        responses={
            (200, MEDIA_TYPE): OpenApiResponse(
                OpenApiTypes.BINARY, description="tar.gz of exactly the files ged_export writes"),
            **errors(401, 404),
        },
        summary="Download the project's GedPi layout (ged_export) as a tar.gz",
    )
    def get(self, request: Request, project_id: str) -> HttpResponse:
        data = export_archive(self.project)
        response = HttpResponse(data, content_type=MEDIA_TYPE)
        response["Content-Disposition"] = f'attachment; filename="{self.project.pk}.tar.gz"'
        return response

    @extend_schema(
        operation_id="checkout_import",
        parameters=[PushQuerySerializer],
        request={MEDIA_TYPE: OpenApiTypes.BINARY},
        responses={
            200: ImportReportSerializer, **errors(400, 401, 404, 409, 422),
            413: OpenApiResponse(ErrorSerializer, description="an archive over 32 MiB"),
            415: OpenApiResponse(ErrorSerializer, description="the body is not application/gzip"),
        },
        summary="Upload a checkout's GedPi layout as a tar.gz and import it (ged_import)",
        description="400 `invalid_archive`: the archive is refused (docs/interop.md); "
                    "422 `checkout_refused`: ged_import refuses the tree, with the command's "
                    "message. The checkout's standards decisions always arrive pending.",
    )
    def post(self, request: Request, project_id: str) -> Response:
        query = validated_query(PushQuerySerializer, request)
        data = request.data
        if not isinstance(data, bytes) or not data:
            raise ArchiveRefused("the body is empty; send the checkout's layout as a tar.gz")
        result = import_archive(project=self.project, data=data, author=self.author,
                                dry_run=query["dry_run"] == "true", shown=query["name"])
        return Response(result.as_dict())
