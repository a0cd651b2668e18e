"""HTTP API for projects, memory entries, candidates, verification and the mirror.

Views stay thin: authenticate, scope to the project, validate the input
shape, call one service or selector, answer through the output serializer.
"""

from __future__ import annotations

from typing import Any, cast

from django.core.exceptions import ValidationError
from django.http import Http404, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from gedweb.api.serializers import (
    DocumentGetQuerySerializer,
    DocumentPutSerializer,
    DocumentRevisionSummarySerializer,
    DocumentSerializer,
)
from gedweb.api.views import (
    READ_ERRORS,
    WRITE_ERRORS,
    GedWebAPIView,
    ProjectAPIView,
    errors,
    refuse_body,
    request_principal,
    validated_query,
)
from gedweb.lib.ids import IDEMPOTENCY_KEY
from gedweb.lib.mirror import render_chunks
from gedweb.pagination import keyset_slice
from memory import documents, selectors, services
from memory.api import serializers as s
from memory.api.permissions import AdminEndpoint, IsAdmin
from memory.exports import documents_export_response, memory_export_response
from memory.models import MemoryCandidate, MemoryEntry, Project
from memory.querysets import seq_order_key

# --- projects --------------------------------------------------------------


class ProjectListView(AdminEndpoint, GedWebAPIView):
    permission_classes = [IsAdmin]

    @extend_schema(
        operation_id="projects_list",
        responses={200: s.ProjectListSerializer, **errors(401, 403)},
    )
    def get(self, request: Request) -> Response:
        projects = Project.objects.order_by("id")
        return Response({"items": s.ProjectSerializer.render_many(projects)})

    @extend_schema(
        operation_id="projects_create",
        request=s.ProjectCreateSerializer,
        responses={201: s.ProjectCreatedSerializer, **errors(400, 401, 403, 409, 413, 415)},
        summary="Create a project (admin token)",
    )
    def post(self, request: Request) -> Response:
        serializer = s.ProjectCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        project, raw = services.project_create(
            project_id=data["id"], name=data["name"], token=data.get("token")
        )
        body = s.ProjectSerializer.render(project)
        if "token" not in data:
            body["token"] = raw
        return Response(body, status=201)


class ProjectDetailView(ProjectAPIView):
    @extend_schema(
        operation_id="projects_get",
        responses={200: s.ProjectSerializer, **errors(401, 404)},
    )
    def get(self, request: Request, project_id: str) -> Response:
        return Response(s.ProjectSerializer.render(self.project))


# --- memory entries ----------------------------------------------------------


# Appends and candidate proposals take the same header, under the same rules.
IDEMPOTENCY_KEY_HEADER = OpenApiParameter(
    "Idempotency-Key",
    {"type": "string", "pattern": f"^{IDEMPOTENCY_KEY}$"},
    OpenApiParameter.HEADER,
    description="printable ASCII characters; a replay returns the first answer",
)


def body_fingerprint(request: Request) -> str:
    """The request hash of a keyed write: its body as sent, in canonical JSON."""
    # Called after the input serializer accepted the body, so it is a JSON object.
    return services.request_fingerprint(cast(dict[str, Any], request.data))


class EntryListView(ProjectAPIView):
    memory_write_methods = frozenset({"POST"})

    @extend_schema(
        operation_id="memory_list",
        parameters=[s.EntryListQuerySerializer],
        responses={200: s.EntryPageSerializer, **errors(*READ_ERRORS)},
        summary="List memory entries (cursor pagination by seq)",
        description=(
            "`order=asc` (default) pages with `after=next_cursor`; `order=desc` pages with "
            "`before=next_cursor`. `next_cursor` is null exactly when no more items exist."
        ),
    )
    def get(self, request: Request, project_id: str) -> Response:
        query = validated_query(s.EntryListQuerySerializer, request)
        entries = selectors.entry_list(
            project=self.project,
            category=query.get("category"),
            source=query.get("source"),
            since=query.get("since"),
            q=query.get("q"),
            current=query["view"] == "current",
        )
        page = keyset_slice(
            entries, key="seq", limit=query["limit"], after=query.get("after"),
            before=query.get("before"), descending=query["order"] == "desc",
            order=seq_order_key(searched="q" in query),
        )
        return Response({"items": s.EntrySerializer.render_many(page.items),
                         "next_cursor": page.next_cursor})

    @extend_schema(
        operation_id="memory_append",
        request=s.EntryCreateSerializer,
        parameters=[
            IDEMPOTENCY_KEY_HEADER,
            OpenApiParameter(
                "X-Memory-Token",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                description="needed when the server sets GEDWEB_MEMORY_WRITE_TOKEN "
                "(X-Ferryman-Memory-Token is accepted too)",
            ),
        ],
        responses={
            201: s.EntrySerializer,
            **errors(*WRITE_ERRORS, 409, 422),
        },
        summary="Append a memory entry",
    )
    def post(self, request: Request, project_id: str) -> Response:
        serializer = s.EntryCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        key = request.headers.get("Idempotency-Key")
        result = services.memory_entry_create(
            project=self.project,
            author=self.author,
            category=data["category"],
            content=data["content"],
            source=data["source"],
            corrects=data["corrects"],
            idempotency_key=key,
            request_hash=body_fingerprint(request) if key is not None else None,
            idempotency_scope=request_principal(request).idempotency_scope,
        )
        response = Response(s.EntrySerializer.render(result.entry), status=201)
        if result.replayed:
            response["Idempotent-Replayed"] = "true"
        return response


class RecallView(ProjectAPIView):
    """The entries that best answer a question (docs/recall.md): a read, by GET or POST."""

    def _answer(self, data: dict[str, Any]) -> Response:
        result = selectors.entry_recall(
            project=self.project, text=data["q"], limit=data["limit"], mode=data["mode"],
            view=data["view"], category=data.get("category"), source=data.get("source"),
            since=data.get("since"), until=data.get("until"),
        )
        return Response(s.RecallSerializer.render_result(result))

    @extend_schema(
        operation_id="memory_recall",
        parameters=[s.RecallQuerySerializer],
        responses={200: s.RecallSerializer, **errors(*READ_ERRORS)},
        summary="Recall the entries that best answer a question",
        description=(
            "Ranked best first: `hybrid` (default) blends the keyword ranking (any word, "
            "stemmed, stop words left out) with the semantic one (the entries' vectors); "
            "`index.through_seq` says how far the semantic index has followed the record. "
            "A `q` longer than a request line holds goes in the body of a POST."
        ),
    )
    def get(self, request: Request, project_id: str) -> Response:
        return self._answer(validated_query(s.RecallQuerySerializer, request))

    @extend_schema(
        operation_id="memory_recall_post",
        request=s.RecallQuerySerializer,
        responses={200: s.RecallSerializer, **errors(400, 401, 404, 413, 415)},
        summary="Recall, with the question in a JSON body (long task texts)",
    )
    def post(self, request: Request, project_id: str) -> Response:
        serializer = s.RecallQuerySerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return self._answer(serializer.validated_data)


class EntryDetailView(ProjectAPIView):
    @extend_schema(
        responses={200: s.EntrySerializer, **errors(401, 404)},
        operation_id="memory_get",
        summary="One entry, by uuid or seq, with the entries that correct it",
    )
    def get(self, request: Request, project_id: str, ref: str) -> Response:
        entry = selectors.entry_get(project=self.project, ref=ref)
        if entry is None:
            raise Http404
        return Response(s.EntrySerializer.render(entry))


class VerifyView(ProjectAPIView):
    @extend_schema(
        responses={200: s.VerifySerializer, **errors(401, 404)},
        operation_id="memory_verify",
        summary="Recompute every link of the hash chain and check it against every checkpoint",
    )
    def get(self, request: Request, project_id: str) -> Response:
        report = services.memory_chain_verify(project=self.project)
        return Response(s.VerifySerializer.render(report))


class MirrorTextView(ProjectAPIView):
    @extend_schema(
        responses={
            (200, "text/markdown"): OpenApiResponse(OpenApiTypes.STR, description="MEMORY.md"),
            **errors(401, 404),
        },
        operation_id="memory_mirror_text",
        summary="The Markdown mirror, rendered from the record",
    )
    def get(self, request: Request, project_id: str) -> StreamingHttpResponse:
        # Rendered from the database, the source of truth, so the text is
        # right on any app server whether or not it holds the mirror files.
        rows = MemoryEntry.objects.for_project(self.project).chain_rows()
        chunks = (chunk.encode() for chunk in render_chunks(self.project.pk, rows))
        return StreamingHttpResponse(chunks, content_type="text/markdown; charset=utf-8")


class MemoryExportView(ProjectAPIView):
    @extend_schema(
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(
                OpenApiTypes.STR,
                description="one entry a line, in seq order, each as GET .../memory/{ref} "
                "answers it (every field, prev_hash and hash included), up to the newest "
                "entry when the export began"),
            **errors(401, 404),
        },
        operation_id="memory_export",
        summary="Every entry as JSON Lines, streamed",
    )
    def get(self, request: Request, project_id: str) -> StreamingHttpResponse:
        return memory_export_response(self.project)


# --- candidates ---------------------------------------------------------------


class CandidateListView(ProjectAPIView):
    @extend_schema(
        operation_id="candidates_list",
        parameters=[s.CandidateListQuerySerializer],
        responses={200: s.CandidatePageSerializer, **errors(*READ_ERRORS)},
        summary="List review candidates, oldest first",
    )
    def get(self, request: Request, project_id: str) -> Response:
        query = validated_query(s.CandidateListQuerySerializer, request)
        candidates = selectors.candidate_list(project=self.project, status=query.get("status"))
        page = keyset_slice(candidates, key="pk", limit=query["limit"], after=query.get("after"))
        return Response({"items": s.CandidateSerializer.render_many(page.items),
                         "next_cursor": page.next_cursor})

    @extend_schema(
        operation_id="candidates_create",
        request=s.CandidateCreateSerializer,
        parameters=[IDEMPOTENCY_KEY_HEADER],
        responses={201: s.CandidateSerializer, **errors(*WRITE_ERRORS, 409, 422)},
        summary="Propose a memory entry for review (any project token)",
        description="An `Idempotency-Key` follows the rules of the append's.",
    )
    def post(self, request: Request, project_id: str) -> Response:
        serializer = s.CandidateCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        key = request.headers.get("Idempotency-Key")
        result = services.candidate_propose(
            project=self.project,
            author=self.author,
            **serializer.validated_data,
            idempotency_key=key,
            request_hash=body_fingerprint(request) if key is not None else None,
            idempotency_scope=request_principal(request).idempotency_scope,
        )
        response = Response(s.CandidateSerializer.render(result.candidate), status=201)
        if result.replayed:
            response["Idempotent-Replayed"] = "true"
        return response


class CandidateActionView(ProjectAPIView):
    # Approving writes memory; rejecting is the same reviewer decision, so
    # both sit behind the memory write boundary. Whether this principal may
    # take this decision (never its own proposal) is the services' rule.
    memory_write_methods = frozenset({"POST"})

    def _candidate(self, candidate_id: str) -> MemoryCandidate:
        try:
            candidate: MemoryCandidate = MemoryCandidate.objects.for_project(self.project).get(
                uuid=candidate_id
            )
            return candidate
        except (MemoryCandidate.DoesNotExist, ValueError, ValidationError):
            # A malformed id names no candidate: UUIDField lookups raise
            # ValidationError for it, which must not become a 400.
            raise Http404 from None

    def _check_body(self, request: Request) -> None:
        refuse_body(request)


class CandidateApproveView(CandidateActionView):
    @extend_schema(
        request=None,
        responses={200: s.EntrySerializer, **errors(*WRITE_ERRORS, 409)},
        operation_id="candidates_approve",
        summary="Approve a pending candidate: creates exactly one entry",
        description="403 `review_forbidden` when the principal asking proposed it: "
        "no principal approves (or rejects) its own proposal.",
    )
    def post(self, request: Request, project_id: str, candidate_id: str) -> Response:
        self._check_body(request)
        entry = services.candidate_approve(
            project=self.project, candidate=self._candidate(candidate_id), by=self.author
        )
        return Response(s.EntrySerializer.render(entry))


class CandidateRejectView(CandidateActionView):
    @extend_schema(
        request=None,
        responses={200: s.CandidateSerializer, **errors(*WRITE_ERRORS, 409)},
        operation_id="candidates_reject",
        summary="Reject a pending candidate",
    )
    def post(self, request: Request, project_id: str, candidate_id: str) -> Response:
        self._check_body(request)
        candidate = services.candidate_reject(
            project=self.project, candidate=self._candidate(candidate_id), by=self.author
        )
        return Response(s.CandidateSerializer.render(candidate))


class CandidateWithdrawView(CandidateActionView):
    # Taking one's own proposal back writes no memory: any project token
    # that proposed may, as any may propose.
    memory_write_methods = frozenset()

    @extend_schema(
        request=None,
        responses={200: s.CandidateSerializer, **errors(*WRITE_ERRORS, 409)},
        operation_id="candidates_withdraw",
        summary="Withdraw a pending candidate (its proposer only)",
        description="403 `review_forbidden` for any principal but the one that proposed it.",
    )
    def post(self, request: Request, project_id: str, candidate_id: str) -> Response:
        self._check_body(request)
        candidate = services.candidate_withdraw(
            project=self.project, candidate=self._candidate(candidate_id), by=self.author
        )
        return Response(s.CandidateSerializer.render(candidate))


# --- durable documents ------------------------------------------------------------


class DocumentsExportView(ProjectAPIView):
    @extend_schema(
        responses={
            (200, "application/zip"): OpenApiResponse(
                OpenApiTypes.BINARY,
                description="each document's current text at its path, every revision under "
                "revisions/ and MANIFEST.json (author, time, reason, sha256 of each)"),
            **errors(401, 404),
        },
        operation_id="documents_export",
        summary="Every document revision as a zip archive, streamed",
    )
    def get(self, request: Request, project_id: str) -> StreamingHttpResponse:
        return documents_export_response(self.project)

DOCUMENT_PATH = OpenApiParameter(
    "path",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    description=f"the document; {documents.PATH_RULE}. Slashes are sent as they are.",
)


def _document_path(path: str) -> str:
    # Any path outside the fixed set is a 400 naming `path`, for reads as
    # for writes, and nothing is looked up or stored for it.
    return documents.validate_document_path(path).path


class DocumentListView(ProjectAPIView):
    """Durable documents: PROJECT.md, CONTEXT.md, ADRs, reports and handoffs."""

    @extend_schema(
        operation_id="documents_list",
        parameters=[s.DocumentListQuerySerializer],
        responses={200: s.DocumentListSerializer, **errors(*READ_ERRORS)},
        summary="List durable documents with their current revision, sorted by path",
    )
    def get(self, request: Request, project_id: str) -> Response:
        query = validated_query(s.DocumentListQuerySerializer, request)
        rows = documents.document_list(self.project, prefix=query["prefix"])
        return Response({"items": s.DocumentListItemSerializer.render_many(rows)})


class DocumentDetailView(ProjectAPIView):
    """One durable document; every write adds an append-only revision."""

    @extend_schema(
        operation_id="documents_get",
        parameters=[DOCUMENT_PATH, DocumentGetQuerySerializer],
        responses={200: DocumentSerializer, **errors(*READ_ERRORS)},
        summary="A document's current revision, or `?revision=n`",
    )
    def get(self, request: Request, project_id: str, path: str) -> Response:
        path = _document_path(path)
        query = validated_query(DocumentGetQuerySerializer, request)
        document = documents.document_get(self.project, path, query.get("revision"))
        if document is None:
            raise Http404
        return Response(DocumentSerializer.render(document))

    @extend_schema(
        operation_id="documents_put",
        parameters=[DOCUMENT_PATH],
        request=DocumentPutSerializer,
        responses={
            201: OpenApiResponse(DocumentSerializer, description="a new document, revision 1"),
            200: OpenApiResponse(
                DocumentSerializer,
                description="the next revision, or the current one when the content is unchanged",
            ),
            **errors(400, 401, 404, 409, 413, 415),
        },
        summary="Create a document or add its next revision",
        description=(
            "The content must be substantive (GedPi's rule) and is stored byte-for-byte. "
            "Creating needs no `expected_revision` (or 0); updating needs the current "
            "revision, else 400 (missing) or 409 `stale_revision` with `current_revision`. "
            "Reports are write-once (409 `conflict`). Handoffs need a work item of this "
            "project. Not checked by the governance guard."
        ),
    )
    def put(self, request: Request, project_id: str, path: str) -> Response:
        path = _document_path(path)
        serializer = DocumentPutSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        result = documents.document_put(
            project=self.project,
            path=path,
            content=data["content"],
            author=self.author,
            expected_revision=data["expected_revision"],
            reason=data["reason"],
        )
        return Response(DocumentSerializer.render(result.document),
                        status=201 if result.created else 200)


class DocumentRevisionListView(ProjectAPIView):
    """The revision history of one durable document."""

    @extend_schema(
        operation_id="documents_revisions",
        parameters=[DOCUMENT_PATH],
        responses={200: s.DocumentRevisionListSerializer, **errors(*READ_ERRORS)},
        summary="Every revision of a document, oldest first, without content",
    )
    def get(self, request: Request, project_id: str, path: str) -> Response:
        path = _document_path(path)
        rows = documents.document_revisions(self.project, path)
        if not rows:
            raise Http404
        return Response(
            {"path": path, "items": DocumentRevisionSummarySerializer.render_many(rows)}
        )


