"""HTTP API for work items, their files, governance revisions, guard and active work."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework.request import Request
from rest_framework.response import Response

from gedweb.api.serializers import StrictSerializer
from gedweb.api.views import ProjectAPIView, errors, refuse_body, validated_query
from gedweb.converters import SessionIdConverter
from gedweb.errors import Conflict
from gedweb.lib.governance import format_time, render_state_md
from gedweb.lib.ids import is_task_id
from gedweb.pagination import keyset_slice
from governance import provenance, selectors, services
from governance.api import serializers as s
from governance.models import ActiveWork, TaskArtifact, WorkFile, WorkItem

GOVERNANCE_WRITE_ERRORS = (400, 401, 404, 409, 413, 415, 422)


def _work_or_404(project: Any, work_id: str) -> WorkItem:
    work: WorkItem | None = WorkItem.objects.for_project(project).filter(work_id=work_id).first()
    if work is None:
        raise Http404
    return work


class WorkAPIView(ProjectAPIView):
    """Resolves {work_id} inside the token's project before any body is read."""

    work: WorkItem

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self.work = _work_or_404(self.project, kwargs["work_id"])

    def _validated(
        self, serializer_class: type[StrictSerializer], request: Request
    ) -> dict[str, Any]:
        serializer = serializer_class(data=request.data)
        serializer.is_valid(raise_exception=True)
        validated: dict[str, Any] = serializer.validated_data
        return validated


def _work_body(work: WorkItem, document: dict[str, Any]) -> dict[str, Any]:
    return {"work_id": work.work_id, "meta": work.meta(), "governance": document}


# --- work items ---------------------------------------------------------------------------


class WorkListView(ProjectAPIView):
    @extend_schema(
        operation_id="work_list",
        parameters=[s.WorkListQuerySerializer],
        responses={200: s.WorkPageSerializer, **errors(400, 401, 404)},
        summary="List work items, ordered by work id (which sorts by creation time)",
    )
    def get(self, request: Request, project_id: str) -> Response:
        query = validated_query(s.WorkListQuerySerializer, request)
        page = keyset_slice(selectors.work_list(project=self.project), key="work_id",
                            limit=query["limit"], after=query.get("after"))
        return Response({"items": s.WorkSummarySerializer.render_many(page.items),
                         "next_cursor": page.next_cursor})

    @extend_schema(
        operation_id="work_open",
        request=s.WorkOpenSerializer,
        responses={201: s.WorkSerializer, **errors(400, 401, 404, 413, 415, 422)},
        summary="Open direct or planned work (422 decision_required creates nothing)",
    )
    def post(self, request: Request, project_id: str) -> Response:
        serializer = s.WorkOpenSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        opened = services.work_open(
            project=self.project, author=self.author, **serializer.validated_data
        )
        return Response(_work_body(opened.work, opened.governance), status=201)


class WorkDetailView(WorkAPIView):
    @extend_schema(
        operation_id="work_get",
        responses={200: s.WorkDetailSerializer, **errors(401, 404)},
        summary="A work item: its immutable META, current governance, and what was imported",
    )
    def get(self, request: Request, project_id: str, work_id: str) -> Response:
        document = services.governance_document(self.work)
        found = provenance.provenance(self.work)
        return Response({**_work_body(self.work, document),
                         "provenance": provenance.as_dict(found, document)})


# --- files and task artifacts ----------------------------------------------------------------


def _file_body(row: WorkFile | TaskArtifact) -> dict[str, Any]:
    return {
        "name": row.name,
        "version": row.version,
        "content": row.content,
        "author": row.author,
        "created_at": format_time(row.created_at),
    }


class WorkFileView(WorkAPIView):
    def _name(self, name: str) -> str:
        if name not in WorkFile.Name.values:
            raise Http404
        return name

    @extend_schema(
        operation_id="work_file_get",
        parameters=[s.FileQuerySerializer],
        responses={200: s.FileSerializer, **errors(400, 401, 404, 409)},
        summary="The newest version of a work file, or ?version=n",
    )
    def get(self, request: Request, project_id: str, work_id: str, name: str) -> Response:
        name = self._name(name)
        if name not in services.allowed_files(self.work):
            # Contract §5: planned files only for planned-change work, DIRECT.md
            # only for direct-change, else 409 (as for PUT).
            raise Conflict(f"{name} is not a file of {self.work.mode} work")
        query = validated_query(s.FileQuerySerializer, request)
        rows = WorkFile.objects.filter(work=self.work, name=name)
        if "version" in query:
            rows = rows.filter(version=query["version"])
        row = rows.order_by("-version").first()
        if row is None:
            raise Http404
        return Response(_file_body(row))

    @extend_schema(
        operation_id="work_file_put",
        request=s.FileWriteSerializer,
        responses={200: s.FileSerializer, **errors(*GOVERNANCE_WRITE_ERRORS)},
        summary="Write a new version (earlier versions are kept)",
    )
    def put(self, request: Request, project_id: str, work_id: str, name: str) -> Response:
        name = self._name(name)
        data = self._validated(s.FileWriteSerializer, request)
        row = services.work_file_write(
            work=self.work,
            name=name,
            content=data["content"],
            author=self.author,
            expected_version=data.get("expected_version"),
        )
        return Response(_file_body(row))


class TaskArtifactView(WorkAPIView):
    def _target(self, task_id: str, name: str) -> str:
        # A task id outside the rule (services.validate_task_id) names no artifact.
        if not is_task_id(task_id) or name not in TaskArtifact.Name.values:
            raise Http404
        return name

    @extend_schema(
        operation_id="task_artifact_get",
        parameters=[s.FileQuerySerializer],
        responses={200: s.FileSerializer, **errors(400, 401, 404)},
        summary="The newest version of a task artifact, or ?version=n",
    )
    def get(
        self, request: Request, project_id: str, work_id: str, task_id: str, name: str
    ) -> Response:
        query = validated_query(s.FileQuerySerializer, request)
        rows = TaskArtifact.objects.filter(
            work=self.work, task_id=task_id, name=self._target(task_id, name)
        )
        if "version" in query:
            rows = rows.filter(version=query["version"])
        row = rows.order_by("-version").first()
        if row is None:
            raise Http404
        return Response(_file_body(row))

    @extend_schema(
        operation_id="task_artifact_put",
        request=s.FileWriteSerializer,
        responses={200: s.FileSerializer, **errors(*GOVERNANCE_WRITE_ERRORS)},
        summary="Write a new version of BRIEF.md, HISTORY.json or RECOVERY.md",
    )
    def put(
        self, request: Request, project_id: str, work_id: str, task_id: str, name: str
    ) -> Response:
        name = self._target(task_id, name)
        data = self._validated(s.FileWriteSerializer, request)
        row = services.task_artifact_write(
            work=self.work,
            task_id=task_id,
            name=name,
            content=data["content"],
            author=self.author,
            expected_version=data.get("expected_version"),
        )
        return Response(_file_body(row))


# --- governance ---------------------------------------------------------------------------------


class GovernanceView(WorkAPIView):
    @extend_schema(
        operation_id="governance_get",
        responses={200: s.GovernanceDocumentSerializer, **errors(401, 404)},
        summary="The current governance document (GedPi's governance.json shape)",
    )
    def get(self, request: Request, project_id: str, work_id: str) -> Response:
        return Response(services.governance_document(self.work))


class StateProjectionView(WorkAPIView):
    @extend_schema(
        operation_id="governance_state_md",
        responses={
            (200, "text/markdown"): OpenApiResponse(OpenApiTypes.STR, description="STATE.md"),
            **errors(401, 404),
        },
        summary="GedPi's STATE.md projection, rendered now from the current revision",
    )
    def get(self, request: Request, project_id: str, work_id: str) -> HttpResponse:
        document = services.governance_document(self.work)
        response = HttpResponse(
            render_state_md(document), content_type="text/markdown; charset=utf-8"
        )
        response["X-Governance-Revision"] = str(document["revision"])
        return response


class RevisionListView(WorkAPIView):
    @extend_schema(
        operation_id="governance_revisions",
        parameters=[s.RevisionListQuerySerializer],
        responses={200: s.RevisionPageSerializer, **errors(400, 401, 404)},
        summary="Every revision, oldest first",
    )
    def get(self, request: Request, project_id: str, work_id: str) -> Response:
        query = validated_query(s.RevisionListQuerySerializer, request)
        page = keyset_slice(selectors.revision_summaries(work=self.work), key="revision",
                            limit=query["limit"], after=query.get("after"))
        return Response({"items": s.RevisionSummarySerializer.render_many(page.items),
                         "next_cursor": page.next_cursor})


class RevisionDetailView(WorkAPIView):
    @extend_schema(
        operation_id="governance_revision_get",
        responses={200: s.GovernanceDocumentSerializer, **errors(401, 404)},
        summary="The whole governance document as it was at revision n",
    )
    def get(self, request: Request, project_id: str, work_id: str, number: int) -> Response:
        document = services.revision_document(self.work, number)
        if document is None:
            raise Http404
        return Response(document)


class GovernanceWriteView(WorkAPIView):
    """Base for every revision-adding write: one body, one service call.

    Subclasses set serializer_class and define ``apply(data, **url_kwargs)``,
    which calls exactly one governance service and returns the new document.
    """

    serializer_class: type[s.ExpectedRevisionSerializer]
    apply: Callable[..., dict[str, Any]]

    def post(self, request: Request, project_id: str, work_id: str, **kwargs: Any) -> Response:
        data = self._validated(self.serializer_class, request)
        return Response(self.apply(data, **kwargs))


WriteView = TypeVar("WriteView", bound=GovernanceWriteView)


def governance_write(
    operation_id: str, summary: str
) -> Callable[[type[WriteView]], type[WriteView]]:
    """Document a GovernanceWriteView subclass's POST from its serializer."""

    def decorate(view: type[WriteView]) -> type[WriteView]:
        return extend_schema_view(
            post=extend_schema(
                operation_id=operation_id,
                request=view.serializer_class,
                responses={
                    200: s.GovernanceDocumentSerializer,
                    **errors(*GOVERNANCE_WRITE_ERRORS),
                },
                summary=summary,
                description="Adds exactly one revision. A stale expected_revision answers 409 "
                "stale_revision with current_revision.",
            )
        )(view)

    return decorate


@governance_write("governance_evidence", "Append evidence (optionally through a GedPi policy)")
class EvidenceView(GovernanceWriteView):
    serializer_class = s.EvidenceAppendSerializer

    def apply(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return services.evidence_append(
            work=self.work,
            expected_revision=data["expected_revision"],
            evidence=data["evidence"],
            policy=data["policy"],
            author=self.author,
        )


@governance_write(
    "governance_update", "Compare-and-swap of currentSlice, decision, executionProfile, approvals"
)
class UpdateView(GovernanceWriteView):
    serializer_class = s.UpdateSerializer

    def apply(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return services.governance_update(
            work=self.work,
            expected_revision=data["expected_revision"],
            changes=data["changes"],
            author=self.author,
        )


@governance_write("governance_mutation_begin", "Begin a pending mutation (guarded)")
class MutationBeginView(GovernanceWriteView):
    serializer_class = s.MutationBeginSerializer

    def apply(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return services.mutation_begin(
            work=self.work,
            expected_revision=data["expected_revision"],
            request_id=data["request_id"],
            tool_call_id=data["tool_call_id"],
            target=data["target"],
            action=data["action"],
            author=self.author,
            mutation_id=data.get("id"),
        )


@governance_write(
    "governance_mutation_complete", "Complete a pending mutation with implementation evidence"
)
class MutationCompleteView(GovernanceWriteView):
    serializer_class = s.CompleteSerializer

    def apply(self, data: dict[str, Any], *, pending_id: str) -> dict[str, Any]:
        return services.mutation_complete(
            work=self.work,
            expected_revision=data["expected_revision"],
            mutation_id=pending_id,
            evidence=data["evidence"],
            author=self.author,
        )


@governance_write("governance_mutation_clear", "Clear a pending mutation without evidence")
class MutationClearView(GovernanceWriteView):
    serializer_class = s.ExpectedRevisionSerializer

    def apply(self, data: dict[str, Any], *, pending_id: str) -> dict[str, Any]:
        return services.mutation_clear(
            work=self.work,
            expected_revision=data["expected_revision"],
            mutation_id=pending_id,
            author=self.author,
        )


@governance_write("governance_commit_begin", "Begin the one pending commit (guarded)")
class CommitBeginView(GovernanceWriteView):
    serializer_class = s.CommitBeginSerializer

    def apply(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        fields = {
            "requestId": data["request_id"],
            "toolCallId": data["tool_call_id"],
            "beforeHead": data["before_head"],
            "expectedTree": data["expected_tree"],
            "unstagedDigest": data["unstaged_digest"],
            "untrackedDigest": data["untracked_digest"],
            "verifiedSnapshotDigest": data["verified_snapshot_digest"],
        }
        return services.commit_begin(
            work=self.work,
            expected_revision=data["expected_revision"],
            fields=fields,
            author=self.author,
            commit_id=data.get("id"),
        )


@governance_write(
    "governance_commit_complete", "Complete the pending commit with matching milestone evidence"
)
class CommitCompleteView(GovernanceWriteView):
    serializer_class = s.CompleteSerializer

    def apply(self, data: dict[str, Any], *, pending_id: str) -> dict[str, Any]:
        return services.commit_complete(
            work=self.work,
            expected_revision=data["expected_revision"],
            commit_id=pending_id,
            evidence=data["evidence"],
            author=self.author,
        )


@governance_write("governance_commit_clear", "Clear the pending commit")
class CommitClearView(GovernanceWriteView):
    serializer_class = s.ExpectedRevisionSerializer

    def apply(self, data: dict[str, Any], *, pending_id: str) -> dict[str, Any]:
        return services.commit_clear(
            work=self.work,
            expected_revision=data["expected_revision"],
            commit_id=pending_id,
            author=self.author,
        )


@governance_write("governance_lifecycle", "pause, resume, complete, abandon or supersede")
class LifecycleView(GovernanceWriteView):
    serializer_class = s.LifecycleSerializer

    def apply(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return services.lifecycle_transition(
            work=self.work,
            expected_revision=data["expected_revision"],
            action=data["action"],
            reason=data["reason"],
            expected_lifecycle=data["expected_lifecycle"],
            author=self.author,
        )


class GuardView(WorkAPIView):
    @extend_schema(
        operation_id="governance_guard",
        request=s.GuardSerializer,
        responses={200: s.GuardResultSerializer, **errors(400, 401, 404, 413, 415)},
        summary="Would this action be allowed now? GedPi's ordered checks",
    )
    def post(self, request: Request, project_id: str, work_id: str) -> Response:
        data = self._validated(s.GuardSerializer, request)
        reason = services.guard_check(work=self.work, action=data["action"])
        return Response({"allowed": reason is None, "reason": reason})


# --- active work ----------------------------------------------------------------------------------


_SESSION_PARAM = OpenApiParameter(
    "session_id", {"type": "string", "pattern": f"^{SessionIdConverter.regex}$"},
    OpenApiParameter.PATH, description="the agent's session id",
)


class ActiveWorkView(ProjectAPIView):
    def _session(self, session_id: str) -> str:
        if not session_id.strip() or len(session_id) > 256:
            raise Http404
        return session_id

    def _pointer(self, session_id: str) -> ActiveWork:
        pointer = (
            ActiveWork.objects.filter(
                project=self.project, session_key=services.session_key(session_id)
            )
            .select_related("work")
            .first()
        )
        if pointer is None or pointer.session_id != session_id:
            raise Http404
        return pointer

    @extend_schema(
        operation_id="active_work_get",
        parameters=[_SESSION_PARAM],
        responses={200: s.ActiveWorkSerializer, **errors(401, 404)},
        summary="The work item this session has selected",
    )
    def get(self, request: Request, project_id: str, session_id: str) -> Response:
        return Response(s.ActiveWorkSerializer.render(self._pointer(self._session(session_id))))

    @extend_schema(
        operation_id="active_work_put",
        parameters=[_SESSION_PARAM],
        request=s.ActiveWorkWriteSerializer,
        responses={200: s.ActiveWorkSerializer, **errors(*GOVERNANCE_WRITE_ERRORS)},
        summary="Select a work item for this session (continue needs the metadata guard)",
    )
    def put(self, request: Request, project_id: str, session_id: str) -> Response:
        session_id = self._session(session_id)
        serializer = s.ActiveWorkWriteSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        work = WorkItem.objects.for_project(self.project).filter(work_id=data["work_id"]).first()
        if work is None:
            raise ValidationError({"work_id": ["no such work item in this project"]})
        pointer = services.active_work_select(
            project=self.project,
            session_id=session_id,
            work=work,
            operation=data["operation"],
            request_id=data["request_id"],
        )
        return Response(s.ActiveWorkSerializer.render(pointer))

    @extend_schema(
        operation_id="active_work_delete",
        parameters=[_SESSION_PARAM],
        responses={204: None, **errors(400, 401, 404, 413, 415)},
        summary="Forget this session's selection",
    )
    def delete(self, request: Request, project_id: str, session_id: str) -> Response:
        refuse_body(request)
        if not services.active_work_clear(
            project=self.project, session_id=self._session(session_id)
        ):
            raise Http404
        return Response(status=204)
