"""HTTP API for project skills: content with provenance, and trigger matching."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from gedweb.api.schema import TEXT_PATTERN, enforced
from gedweb.api.serializers import StrictCharField, StrictSerializer
from gedweb.api.views import ProjectAPIView, errors, validated_query
from gedweb.lib import skills as rules
from governance import skills
from governance.models import Skill


class SkillPutSerializer(StrictSerializer):
    content = enforced(StrictCharField(
        help_text="SKILL.md: LF-only YAML front matter with name and description"
    ), minLength=1, maxLength=rules.MAX_CONTENT_CHARS)
    reason = enforced(StrictCharField(help_text="why the skill is installed"),
                      minLength=1, maxLength=rules.MAX_REASON_CHARS, pattern=TEXT_PATTERN)
    source = enforced(StrictCharField(  # type: ignore[assignment]  # a field, not Field.source
        required=False, help_text="where it came from"
    ), minLength=1, maxLength=rules.MAX_SOURCE_CHARS)


class SkillMatchQuerySerializer(StrictSerializer):
    # Bounded like memory search's q, so the longest valid request line
    # (500 four-byte characters at 12 bytes each) fits gunicorn's 8,190 bytes
    # and a longer text is this 400, never gunicorn's HTML 414 (docs/api.md).
    text = serializers.CharField(max_length=500, trim_whitespace=False)


class SkillSummarySerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    version = serializers.IntegerField()
    content_hash = serializers.CharField(help_text="sha256 of the stored content's UTF-8 bytes")
    recorded_hash = serializers.CharField(allow_null=True, help_text="the provenance record's hash")
    provenance = serializers.CharField(
        help_text="reusable-explicit, installed-copy or legacy-unverified"
    )
    status = serializers.CharField(
        help_text="verified or unverified; verified: provenance reusable-explicit and "
        "recorded_hash == content_hash",
    )
    description = serializers.CharField(allow_null=True)
    triggers = serializers.ListField(child=serializers.CharField())


class SkillSerializer(SkillSummarySerializer):
    content = serializers.CharField()
    reason = serializers.CharField(allow_blank=True)
    source = serializers.CharField(  # type: ignore[assignment]  # a field, not Field.source
        allow_null=True
    )
    installed_at = serializers.DateTimeField()
    author = serializers.CharField()
    created_at = serializers.DateTimeField()


class SkillWriteSerializer(SkillSerializer):
    result = serializers.CharField(help_text="created or confirmed")


class SkillPageSerializer(serializers.Serializer[Any]):
    items = SkillSummarySerializer(many=True)


class SkillListView(ProjectAPIView):
    @extend_schema(
        operation_id="skills_list",
        responses={200: SkillPageSerializer, **errors(401, 404)},
        summary="Every skill (newest version) with its hashes and status",
    )
    def get(self, request: Request, project_id: str) -> Response:
        rows = skills.current_skills(self.project)
        unverified = skills.off_record(rows)
        return Response({"items": [skills.skill_summary(row, on_record=row.pk not in unverified)
                                   for row in rows]})


class SkillMatchView(ProjectAPIView):
    @extend_schema(
        operation_id="skills_match",
        parameters=[SkillMatchQuerySerializer],
        responses={200: SkillPageSerializer, **errors(400, 401, 404)},
        summary="Verified skills with a trigger word inside text (case-insensitive)",
    )
    def get(self, request: Request, project_id: str) -> Response:
        query = validated_query(SkillMatchQuerySerializer, request)
        rows = skills.skills_matching(self.project, query["text"])
        return Response({"items": [skills.skill_summary(row) for row in rows]})


class SkillDetailView(ProjectAPIView):
    @extend_schema(
        operation_id="skills_get",
        responses={200: SkillSerializer, **errors(401, 404)},
        summary="A skill's content and provenance",
    )
    def get(self, request: Request, project_id: str, name: str) -> Response:
        row = Skill.objects.for_project(self.project).filter(name=name).order_by("-version").first()
        if row is None:
            raise Http404
        return Response(skills.skill_as_dict(row))

    @extend_schema(
        operation_id="skills_put",
        request=SkillPutSerializer,
        responses={
            201: OpenApiResponse(SkillWriteSerializer, description="created"),
            200: OpenApiResponse(
                SkillWriteSerializer,
                description="confirmed: identical content (a legacy or drifted record is "
                "re-verified; installed_at is kept)",
            ),
            **errors(400, 401, 404, 409, 413, 415),
        },
        summary="Create a skill; different content under an existing name -> 409 conflict",
    )
    def put(self, request: Request, project_id: str, name: str) -> Response:
        serializer = SkillPutSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        written = skills.skill_put(
            project=self.project,
            name=name,
            content=data["content"],
            reason=data["reason"],
            source=data.get("source"),
            author=self.author,
        )
        status = 201 if written.result == skills.CREATED else 200
        return Response({**skills.skill_as_dict(written.skill), "result": written.result},
                        status=status)
