"""A project's memory as JSON Lines and its documents as a zip archive, streamed.

The team pages and the API serve the same bytes from these generators. Both
read in batches and yield as they go, so memory stays flat however large
the project: the entries in seq ranges of EXPORT_BATCH (seq is gap-free,
so a range is one index read and a batch never holds more than that many
rows), the documents one revision at a time through a zip writer that
never seeks.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.http import StreamingHttpResponse

from gedweb.lib.canonical import canonical_json
from gedweb.lib.chain import is_redacted
from gedweb.lib.digest import sha256_text
from memory.models import DocumentRevision, MemoryEntry, Project, format_timestamp

EXPORT_BATCH = 1_000
DOCUMENT_CHUNK = 20


def entry_export_lines(project: Project, *, batch: int = EXPORT_BATCH) -> Iterator[bytes]:
    """One JSON object per entry, in seq order, each line ending in a newline.

    A line is the API's entry (GET .../memory/{ref}): id, seq, project_id,
    category, content, source, corrects, author, created_at, content_sha256,
    redacts, redacted, prev_hash, hash and corrected_by, so the hash chain
    can be verified from the file alone (gedweb.lib.chain, both formats).
    The export stops at the newest entry when it began: later appends are
    not half-included.
    """
    head = MemoryEntry.objects.for_project(project).head()
    last = head["seq"] if head is not None else 0
    done = 0
    while done < last:
        upper = min(done + batch, last)
        entries = MemoryEntry.objects.for_project(project).filter(seq__gt=done, seq__lte=upper)
        rows = list(entries.chain_rows())
        corrected_by = _corrections(project, entries)
        lines = []
        for row in rows:
            # Shown, not chained: the API's flag, one digest per exported row.
            row["redacted"] = is_redacted(row["content"], row["content_sha256"])
            row["corrected_by"] = corrected_by.get(row["id"], [])
            lines.append(canonical_json(row))
        yield ("\n".join(lines) + "\n").encode("utf-8")
        done = upper


def _corrections(project: Project, entries: Any) -> dict[str, list[str]]:
    """uuid -> the uuids of the entries that correct it, in seq order: one query a batch."""
    found: dict[str, list[str]] = {}
    rows = (
        MemoryEntry.objects.for_project(project)
        .filter(corrects__in=entries.values("pk"))
        .order_by("seq")
        .values_list("corrects__uuid", "uuid")
    )
    for corrected, correcting in rows:
        found.setdefault(str(corrected), []).append(str(correcting))
    return found


class _Drain:
    """A write-only file for zipfile that hands over what was written since the last drain."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._offset = 0

    def write(self, data: bytes, /) -> int:
        self._parts.append(bytes(data))
        self._offset += len(data)
        return len(data)

    def tell(self) -> int:
        return self._offset

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def drain(self) -> bytes:
        data = b"".join(self._parts)
        self._parts.clear()
        return data


def _zip_time(at: datetime) -> tuple[int, int, int, int, int, int]:
    return (max(at.year, 1980), at.month, at.day, at.hour, at.minute, at.second)


def archive_name(project: Project) -> str:
    return f"{project.pk}-documents"


def documents_archive(project: Project) -> Iterator[bytes]:
    """Every document revision in a zip: the current text at its path, all of them
    under revisions/, and MANIFEST.json listing each revision's author, time, reason
    and sha256. Revisions are read one at a time; the zip is never seeked."""
    root = archive_name(project)
    sink = _Drain()
    manifest: list[dict[str, Any]] = []
    revisions = DocumentRevision.objects.for_project(project).order_by("path", "revision")
    newest: dict[str, int] = dict(revisions.current().values_list("path", "revision"))
    with zipfile.ZipFile(sink, mode="w", compression=zipfile.ZIP_DEFLATED) as archive:
        # A small chunk: a revision holds at most 200,000 characters.
        for row in revisions.iterator(chunk_size=DOCUMENT_CHUNK):
            stem = row.path[: -len(".md")]
            stored = f"revisions/{stem}.r{row.revision}.md"
            data = row.content.encode("utf-8")
            archive.writestr(zipfile.ZipInfo(f"{root}/{stored}", _zip_time(row.created_at)), data)
            if newest.get(row.path) == row.revision:
                archive.writestr(zipfile.ZipInfo(f"{root}/{row.path}", _zip_time(row.created_at)),
                                 data)
            manifest.append({
                "path": row.path, "revision": row.revision, "file": stored,
                "current": newest.get(row.path) == row.revision, "author": row.author,
                "reason": row.reason, "created_at": format_timestamp(row.created_at),
                "sha256": row.sha256,
                # A secret redacted out of it since (memory.redaction): the file is
                # no longer the bytes ``sha256`` names; the record explains them.
                **({"redacted": True, "content_sha256": digest}
                   if (digest := sha256_text(row.content)) != row.sha256 else {}),
            })
            yield sink.drain()
        archive.writestr(f"{root}/MANIFEST.json",
                         json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    yield sink.drain()


# --- the responses: the team pages and the API serve these ---------------------------------


def memory_export_response(project: Project) -> StreamingHttpResponse:
    """The whole memory as JSON Lines, streamed (memory.exports): the pages' and the API's."""
    response = StreamingHttpResponse(entry_export_lines(project),
                                     content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{project.pk}-memory.jsonl"'
    return response


def documents_export_response(project: Project) -> StreamingHttpResponse:
    """Every document revision as a zip, streamed (memory.exports): the pages' and the API's."""
    response = StreamingHttpResponse(documents_archive(project),
                                     content_type="application/zip")
    response["Content-Disposition"] = (
        f'attachment; filename="{archive_name(project)}.zip"'
    )
    return response
