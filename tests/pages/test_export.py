"""Exports: memory as JSON Lines and documents as a zip, from the pages and the API."""

from __future__ import annotations

import hashlib
import io
import json
import tracemalloc
import zipfile
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gedweb.lib.chain import GENESIS_HASH, entry_hash
from memory import checkpoints, documents, exports, services
from memory.models import DocumentRevision, MemoryEntry
from tests.django_fixtures import bearer_client
from tests.pages.conftest import login

pytestmark = pytest.mark.django_db


def _body(response: Any) -> bytes:
    assert response.streaming  # never built whole in memory
    return b"".join(response.streaming_content)


def _lines(body: bytes) -> list[dict[str, Any]]:
    text = body.decode("utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def test_the_memory_export_is_every_entry_as_the_api_shows_it(site):
    response = login(site.member).get("/p/alpha/memory.jsonl")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="alpha-memory.jsonl"'
    rows = _lines(_body(response))
    entries = MemoryEntry.objects.filter(project=site.alpha.project)
    assert [row["seq"] for row in rows] == list(range(1, entries.count() + 1))
    api = bearer_client(site.alpha_token)
    for row in rows:
        # Every field the API answers for the entry, the chain links included.
        assert row == api.get(f"/v1/projects/alpha/memory/{row['seq']}").json()


def test_the_export_carries_the_chain_and_the_corrections(site):
    rows = _lines(_body(login(site.member).get("/p/alpha/memory.jsonl")))
    previous = GENESIS_HASH
    for row in rows:
        assert row["prev_hash"] == previous
        # Chain format 2 (docs/operations.md): the link commits to the content's digest.
        assert row["content_sha256"] == hashlib.sha256(row["content"].encode()).hexdigest()
        chained = {key: row[key] for key in ("author", "category", "content_sha256", "corrects",
                                             "created_at", "project_id", "redacts", "seq",
                                             "source")}
        assert entry_hash(previous, chained) == row["hash"]  # verifiable from the file alone
        previous = row["hash"]
    by_id = {row["id"]: row for row in rows}
    original = by_id[str(site.alpha.original.uuid)]
    assert original["corrected_by"] == [str(site.alpha.correction.uuid)]
    assert by_id[str(site.alpha.correction.uuid)]["corrects"] == str(site.alpha.original.uuid)


def test_the_export_reads_in_batches_across_batch_edges(site):
    whole = b"".join(exports.entry_export_lines(site.alpha.project))
    # A correction and what it corrects in different batches still find each other.
    assert b"".join(exports.entry_export_lines(site.alpha.project, batch=2)) == whole
    assert b"".join(exports.entry_export_lines(site.alpha.project, batch=1)) == whole


def test_the_export_stops_at_the_newest_entry_when_it_began(site):
    project = site.alpha.project
    count = MemoryEntry.objects.filter(project=project).count()
    lines = exports.entry_export_lines(project, batch=3)
    first = next(lines)
    services.memory_entry_create(project=project, author="agent", category="note",
                                 content="written during the export")
    rows = _lines(first + b"".join(lines))
    assert len(rows) == count and rows[-1]["seq"] == count


def test_an_empty_memory_exports_nothing(site, make_project):
    from memory.models import Membership

    make_project("gamma")
    Membership.objects.create(user=site.member, project_id="gamma")
    assert _body(login(site.member).get("/p/gamma/memory.jsonl")) == b""


def test_the_api_serves_the_same_bytes_to_its_token_and_the_admin(site, admin_client):
    page = _body(login(site.member).get("/p/alpha/memory.jsonl"))
    api = bearer_client(site.alpha_token).get("/v1/projects/alpha/memory.jsonl")
    assert api.status_code == 200 and _body(api) == page
    assert _body(admin_client.get("/v1/projects/alpha/memory.jsonl")) == page
    assert bearer_client(site.alpha_token).get("/v1/projects/beta/memory.jsonl").status_code == 404
    assert bearer_client().get("/v1/projects/alpha/memory.jsonl").status_code == 401


def test_non_members_and_anonymous_visitors_get_no_export(site):
    from django.test import Client

    for path in ("/p/alpha/memory.jsonl", "/p/alpha/documents.zip"):
        assert login(site.outsider).get(path).status_code == 404
        response = Client().get(path)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def _archive(body: bytes) -> zipfile.ZipFile:
    return zipfile.ZipFile(io.BytesIO(body))


def test_the_documents_archive_holds_every_revision_and_a_manifest(site):
    response = login(site.member).get("/p/alpha/documents.zip")
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == 'attachment; filename="alpha-documents.zip"'
    archive = _archive(_body(response))
    assert archive.testzip() is None
    project = site.alpha.project
    for current in documents.document_list(project):
        assert archive.read(f"alpha-documents/{current.path}").decode() == current.content
    manifest = json.loads(archive.read("alpha-documents/MANIFEST.json"))
    revisions = DocumentRevision.objects.filter(project=project)
    assert len(manifest) == revisions.count()
    for item in manifest:
        row = revisions.get(path=item["path"], revision=item["revision"])
        data = archive.read(f"alpha-documents/{item['file']}")
        assert data.decode() == row.content
        assert item["sha256"] == row.sha256 and item["author"] == row.author
    adr = [i for i in manifest if i["path"] == "adr/0001-orders-on-postgresql.md"]
    assert [(i["revision"], i["current"]) for i in adr] == [(1, False), (2, True)]
    assert adr[1]["reason"] == "Name the replica lag budget."
    assert adr[0]["file"] == "revisions/adr/0001-orders-on-postgresql.r1.md"


def test_the_api_archive_matches_the_pages(site):
    page = _archive(_body(login(site.member).get("/p/alpha/documents.zip")))
    api = bearer_client(site.alpha_token).get("/v1/projects/alpha/documents.zip")
    assert api.status_code == 200
    served = _archive(_body(api))
    assert served.namelist() == page.namelist()
    assert all(served.read(n) == page.read(n) for n in page.namelist())
    assert bearer_client(site.alpha_token).get("/v1/projects/beta/documents.zip").status_code == 404


def test_an_archive_never_holds_another_projects_documents(site):
    from memory.documents import document_put

    document_put(project=site.beta.project, path="adr/0077-quokka.md", author="agent-beta",
                 content="# ADR 0077: quokka\n\nThe quokka plan stays in beta.\n")
    archive = _archive(_body(login(site.member).get("/p/alpha/documents.zip")))
    assert all(name.startswith("alpha-documents/") for name in archive.namelist())
    assert not any("quokka" in name for name in archive.namelist())
    assert all(b"quokka" not in archive.read(name) for name in archive.namelist())


# --- memory stays flat ---------------------------------------------------------------------


def _bulk_entries(project: Any, count: int) -> None:
    """Chained entries inserted in bulk, as bench/seed.py builds them."""
    prev = GENESIS_HASH
    base = datetime.now(UTC) - timedelta(hours=1)
    rows = []
    for seq in range(1, count + 1):
        entry = MemoryEntry(project=project, seq=seq, category="note", source="bench",
                            content=f"entry {seq} " + "words " * 20, author="seed",
                            created_at=base + timedelta(milliseconds=seq), prev_hash=prev)
        entry.hash = entry_hash(prev, entry.chained_fields())
        checkpoints.seal(entry)
        prev = entry.hash
        rows.append(entry)
    MemoryEntry.objects.bulk_create(rows, batch_size=2_000)


def _peak_while_streaming(project: Any) -> tuple[int, int]:
    tracemalloc.start()
    try:
        size = sum(len(chunk) for chunk in exports.entry_export_lines(project, batch=500))
        return size, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_export_memory_does_not_grow_with_the_log(make_project):
    """Peak traced memory for 2,000 and for 10,000 entries is about the same (one batch);
    bench/export_memory.py measures 100,000."""
    small, large = make_project("small").project, make_project("large").project
    _bulk_entries(small, 2_000)
    _bulk_entries(large, 10_000)
    small_bytes, small_peak = _peak_while_streaming(small)
    large_bytes, large_peak = _peak_while_streaming(large)
    assert large_bytes > 4 * small_bytes
    assert large_peak < 1.5 * small_peak, (small_peak, large_peak)
