"""HTTP API for the trust ledger: GET /v1/projects/{project}/ledger/verify."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from gedweb.api.views import ProjectAPIView, errors
from governance import ledger_checkpoints


class LedgerHeadSerializer(serializers.Serializer[Any]):
    seq = serializers.IntegerField()
    hash = serializers.CharField()


class LedgerProblemSerializer(serializers.Serializer[Any]):
    table = serializers.CharField(
        help_text="the table of the row at fault, or LEDGER-CHECKPOINTS for a line of the file"
    )
    row_id = serializers.IntegerField(allow_null=True)
    message = serializers.CharField()


class LedgerVerifySerializer(serializers.Serializer[Any]):
    ok = serializers.BooleanField()
    records = serializers.IntegerField()
    head = LedgerHeadSerializer(allow_null=True, help_text="The newest record, or null.")
    problems = LedgerProblemSerializer(
        many=True,
        help_text="Every finding, one line each: a broken link or a record failing its HMAC, "
        "a covered row inserted, changed or deleted behind GedWeb, a ledger shorter than "
        "LEDGER-CHECKPOINTS (truncated) or different at one of its lines (fork), a forged "
        "line, an unreadable file.",
    )


class LedgerVerifyView(ProjectAPIView):
    @extend_schema(
        responses={200: LedgerVerifySerializer, **errors(401, 404)},
        operation_id="ledger_verify",
        summary="Verify the trust ledger, its covered rows, and the ledger against "
        "LEDGER-CHECKPOINTS",
    )
    def get(self, request: Request, project_id: str) -> Response:
        # Catches the file up first, as doctor does: it only ever gains lines
        # for authentic records past its newest one, so this cannot hide a
        # truncation, and evidence a follower has not written yet is written.
        return Response(ledger_checkpoints.ledger_report(self.project))
