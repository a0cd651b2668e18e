"""The framed context bundle for agents, and the artifact contract."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from gedweb.api.schema import TEXT_PATTERN
from gedweb.api.serializers import StrictCharField, StrictSerializer
from gedweb.api.views import GedWebAPIView, ProjectAPIView, errors, validated_query
from gedweb.inventory import AUTHORITY_LEVELS, gedpi_inventory, inventory
from gedweb.validation import validate_text
from governance.context import (
    CHARS_PER_TOKEN,
    DEFAULT_RECALL_BUDGET,
    MAX_RECALL_BUDGET,
    TASK_MAX_CHARS,
    context_deliver,
)
from governance.models import WorkItem

SESSION_MAX_CHARS = 128
# An agent's session id (Claude Code's is a uuid): printable ASCII, no space.
SESSION_VALIDATOR = RegexValidator(r"\A[\x21-\x7e]+\Z",
                                   "printable ASCII characters without spaces")


class ContextQuerySerializer(StrictSerializer):
    work_id = serializers.CharField(required=False, max_length=128)
    format = serializers.ChoiceField(choices=["text", "json"], required=False, default="text")
    task = StrictCharField(required=False, allow_blank=False, max_length=TASK_MAX_CHARS,
                           validators=[validate_text],
                           help_text="what the agent is about to do: the bundle adds the "
                           "entries recalled for it")
    budget = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_RECALL_BUDGET,
        help_text=f"tokens (characters / {CHARS_PER_TOKEN}) for the recalled entries; "
        f"default {DEFAULT_RECALL_BUDGET}; only with task")

    session = StrictCharField(
        required=False, allow_blank=False, max_length=SESSION_MAX_CHARS,
        validators=[SESSION_VALIDATOR],
        help_text="the agent's session, recorded in the delivery log (gedweb hook)")
    only = serializers.ChoiceField(
        choices=["recalled"], required=False,
        help_text="recalled: the entries recalled for the task alone, each relevant enough; "
        "204 when none is")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "budget" in attrs and "task" not in attrs:
            raise serializers.ValidationError({"budget": ["only with task"]})
        if "only" in attrs and "task" not in attrs:
            raise serializers.ValidationError({"only": ["only with task"]})
        if "only" in attrs and "work_id" in attrs:
            raise serializers.ValidationError({"only": ["not with work_id"]})
        return attrs


class ContextSectionSerializer(serializers.Serializer[Any]):
    title = serializers.CharField()
    trust = serializers.CharField(allow_null=True)
    file = serializers.CharField(allow_null=True)
    text = serializers.CharField()
    sha256 = serializers.CharField()


class ContextBundleSerializer(serializers.Serializer[Any]):
    project_id = serializers.CharField()
    work_id = serializers.CharField(allow_null=True)
    sha256 = serializers.CharField(help_text="sha256 of the text form of the bundle")
    sections = ContextSectionSerializer(many=True)


class ArtifactSerializer(serializers.Serializer[Any]):
    artifact = serializers.CharField()
    storage = serializers.CharField()
    producer = serializers.CharField()
    consumers = serializers.ListField(child=serializers.CharField())
    authority = serializers.CharField()
    lifecycle = serializers.CharField()


class GedPiArtifactSerializer(serializers.Serializer[Any]):
    path = serializers.CharField(help_text="where GedPi keeps it in a checkout")
    producer = serializers.CharField()
    consumers = serializers.ListField(child=serializers.CharField())
    authority = serializers.ChoiceField(choices=list(AUTHORITY_LEVELS))
    lifecycle = serializers.CharField()
    gedweb = serializers.CharField(help_text="where GedWeb keeps it: the model and kind, or "
                                             "why nothing is stored")


class ContractSerializer(serializers.Serializer[Any]):
    items = ArtifactSerializer(many=True)
    gedpi = GedPiArtifactSerializer(many=True, help_text="GedPi's artifact contract, row for "
                                                         "row, and where GedWeb keeps each")


class PlainTextRenderer(BaseRenderer):
    """Negotiation only: the text bundle is an HttpResponse of its own."""

    media_type = "text/plain"
    format = "text"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: Mapping[str, Any] | None = None) -> bytes:
        return str(data).encode()


class ContextView(ProjectAPIView):
    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # ?format= chooses the form (docs/context.md); Accept may only refuse
        # it (406 not_acceptable). It runs after authentication
        # (GedWebAPIView), so reading the query here cannot come before a 401.
        # Forced (an answer that must be rendered anyway) is JSON, the form of
        # every error.
        if force:
            return JSONRenderer(), JSONRenderer.media_type
        wanted = request.query_params.get("format")
        renderer = JSONRenderer() if wanted == "json" else PlainTextRenderer()
        return self.get_content_negotiator().select_renderer(
            request, [renderer], self.format_kwarg
        )

    @extend_schema(
        operation_id="context_get",
        parameters=[
            OpenApiParameter("work_id", str, description="the selected work item (optional)"),
            OpenApiParameter("format", str, enum=["text", "json"],
                             description="text (default) or json with trust labels and hashes"),
            OpenApiParameter("task", {"type": "string", "minLength": 1,
                                      "maxLength": TASK_MAX_CHARS, "pattern": TEXT_PATTERN},
                             description="what the agent is about to do: the bundle adds a "
                             "durable-data section of the entries recalled for it, best first"),
            OpenApiParameter("budget", {"type": "integer", "minimum": 1,
                                        "maximum": MAX_RECALL_BUDGET,
                                        "default": DEFAULT_RECALL_BUDGET},
                             description=f"tokens (characters / {CHARS_PER_TOKEN}) for that "
                             "section; only with task"),
            OpenApiParameter("session", {"type": "string",
                                         "pattern": f"^[!-~]{{1,{SESSION_MAX_CHARS}}}$"},
                             description="the agent's session (printable ASCII, no space), "
                             "recorded with the delivery"),
            OpenApiParameter("only", str, enum=["recalled"], description=(
                "with task: the bundle is the recalled entries alone, each relevant enough "
                "(docs/context.md); 204 and nothing logged when none is")),
        ],
        responses={
            (200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="the bundle"),
            (200, "application/json"): ContextBundleSerializer,
            204: OpenApiResponse(description="only=recalled: no entry relevant enough"),
            **errors(400, 401, 404),
        },
        summary="The agent context bundle: framed, trust-labelled, logged",
    )
    def get(self, request: Request, project_id: str) -> Any:
        query = validated_query(ContextQuerySerializer, request)
        work = None
        if "work_id" in query:
            work = WorkItem.objects.for_project(self.project).filter(
                work_id=query["work_id"]
            ).first()
            if work is None:
                raise ValidationError({"work_id": ["no such work item in this project"]})
        bundle = context_deliver(project=self.project, work=work, author=self.author,
                                 output_format=query["format"], task=query.get("task"),
                                 budget=query.get("budget", DEFAULT_RECALL_BUDGET),
                                 session=query.get("session"),
                                 only_recalled=query.get("only") == "recalled")
        if bundle is None:
            return HttpResponse(status=204)
        if query["format"] == "json":
            return Response(bundle.as_dict())
        response = HttpResponse(bundle.text, content_type="text/plain; charset=utf-8")
        response["X-Context-Sha256"] = bundle.sha256
        return response


class ContractView(GedWebAPIView):
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="contract_get",
        auth=[],
        responses={200: ContractSerializer},
        summary="The artifact inventory: producer, consumers, authority, lifecycle",
    )
    def get(self, request: Request) -> Response:
        return Response({"items": inventory(), "gedpi": gedpi_inventory()})
