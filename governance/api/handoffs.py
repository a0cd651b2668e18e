"""HTTP API for handoffs: GET|PUT /v1/projects/{project}/documents/handoff/<work_id>.md.

Included before memory's document routes, so a handoff's reads and writes
reach governance, whose rule (a work item of this project) a handoff
needs; its revision history and the document list stay memory's, which
only read. A handoff path that is not a work id matches memory's route and
gets its 400. Left out of the schema: memory's documents_get and
documents_put describe the same URLs (``/documents/{path}``).
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from gedweb.api.serializers import (
    DocumentGetQuerySerializer,
    DocumentPutSerializer,
    DocumentSerializer,
)
from gedweb.api.views import ProjectAPIView, validated_query
from governance.handoffs import handoff_path, handoff_put
from memory import documents


@extend_schema(exclude=True)
class HandoffView(ProjectAPIView):
    def get(self, request: Request, project_id: str, work_id: str) -> Response:
        path = handoff_path(work_id)
        query = validated_query(DocumentGetQuerySerializer, request)
        document = documents.document_get(self.project, path, query.get("revision"))
        if document is None:
            raise Http404
        return Response(DocumentSerializer.render(document))

    def put(self, request: Request, project_id: str, work_id: str) -> Response:
        serializer = DocumentPutSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        result = handoff_put(
            project=self.project,
            work_id=work_id,
            content=data["content"],
            author=self.author,
            expected_revision=data["expected_revision"],
            reason=data["reason"],
        )
        return Response(DocumentSerializer.render(result.document),
                        status=201 if result.created else 200)
