"""The floor's one write: authenticate, take the turn, chain, insert, commit, mirror."""

from __future__ import annotations

import fcntl
import json
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.db import connection, transaction
from django.http import HttpRequest, JsonResponse
from floor_rules import GENESIS_HASH, chained_fields, link, validate
from rest_framework import exceptions, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from django_floor.models import Entry, Project

MIRROR_ROOT = Path(os.environ["FLOOR_MIRROR_ROOT"])


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


class Append(APIView):
    def post(self, request: Request, project: str) -> Response:
        token = request.auth
        if token is None:
            raise exceptions.NotAuthenticated()
        if token.project_id != project:
            raise exceptions.NotFound()
        body = request.data
        problem = validate(body)
        if problem:
            return Response({"code": "invalid", "message": problem},
                            status=status.HTTP_400_BAD_REQUEST)
        with transaction.atomic():
            if connection.vendor == "postgresql":
                # SQLite's BEGIN IMMEDIATE already holds the database's one write lock.
                Project.objects.select_for_update(no_key=True).filter(pk=project).exists()
            head = (Entry.objects.filter(project_id=project).order_by("-seq")
                    .values_list("seq", "hash").first())
            seq, prev = (head[0] + 1, head[1]) if head else (1, GENESIS_HASH)
            fields = chained_fields(
                author=token.name, category=body["category"], content=body["content"],
                created_at=datetime.now(UTC).isoformat(timespec="microseconds"),
                project_id=project, seq=seq, source=body.get("source", "operator"),
            )
            digest = link(prev, fields)
            entry = Entry.objects.create(
                uuid=uuid.uuid4(), project_id=project, seq=seq, category=fields["category"],
                content=body["content"], content_sha256=fields["content_sha256"],
                source=fields["source"], author=fields["author"],
                created_at=fields["created_at"], prev_hash=prev, hash=digest,
            )
        shown = {"id": str(entry.uuid), **fields, "content": entry.content,
                 "prev_hash": prev, "hash": digest}
        append_mirror_block(project, shown)
        return Response(shown, status=status.HTTP_201_CREATED)


def append_mirror_block(project: str, entry: dict[str, Any]) -> None:
    """The entry's block at the end of the project's mirror, on disk before the answer."""
    directory = MIRROR_ROOT / project
    directory.mkdir(parents=True, exist_ok=True)
    block = (f"## {entry['seq']} · {entry['category']} · {entry['created_at']}\n\n"
             f"{entry['content']}\n\n<!-- entry {json.dumps(entry, sort_keys=True)} -->\n\n")
    with open(directory / "MEMORY.md", "a", encoding="utf-8") as mirror:
        fcntl.flock(mirror, fcntl.LOCK_EX)
        mirror.write(block)
        mirror.flush()
        os.fsync(mirror.fileno())
