"""GedPi sync over HTTP: POST and GET /v1/projects/{id}/checkout (docs/interop.md, "Over HTTP").

The upload runs ged_import's service on the archive and the download packs what
ged_export writes; both are checked against the command and the service run on
the same tree. Every hostile archive is one 400 ``invalid_archive`` with every
table as it was and no temporary file left behind.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import tempfile
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import transaction

from gedweb.checkout import archive, sync
from governance.gedpi_export import render_tree
from governance.gedpi_import import import_checkout
from governance.models import StandardsDecision, StandardsImport
from memory.models import DocumentRevision, MemoryEntry
from tests.checkout.real_trees import gedpi_clone, working_checkout
from tests.django_fixtures import stored_models
from tests.interop import gedpi_trees as trees
from tests.interop.gedpi_trees import migrated_checkout, write_tree
from tests.interop.test_ged_import import refused, replace_skill

URL = "/v1/projects/{}/checkout"


def tar_gz(*members: tuple[tarfile.TarInfo, bytes | None], fmt: int = tarfile.PAX_FORMAT,
           level: int = 6) -> bytes:
    """A tar.gz of exactly these members, whatever they are (links, devices, twins...)."""
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=level) as zipped, \
            tarfile.open(fileobj=zipped, mode="w", format=fmt) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return raw.getvalue()


def member(name: str, data: bytes = b"x\n", kind: bytes = tarfile.REGTYPE,
           **attrs: Any) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = len(data) if kind in (tarfile.REGTYPE, tarfile.AREGTYPE) else 0
    for key, value in attrs.items():
        setattr(info, key, value)
    return info, data if info.size else None


VERSION = member(".ged/VERSION", b"3\n")


def push(client: Any, project: str, data: bytes, **query: str) -> Any:
    path = URL.format(project)
    if query:
        path += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    return client.post(path, data=data, content_type="application/gzip")


def layout_archive(root: Path) -> bytes:
    """What gedweb push sends for the checkout at root."""
    return archive.pack(sync.collect_layout(root))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "src", migrated_checkout())


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the upload's temporary directory goes, to prove it is always removed."""
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def database() -> dict[str, list[dict[str, Any]]]:
    """Every row of GedWeb's data (the rate counters count every request: left out)."""
    return {model._meta.label: list(model.objects.order_by("pk").values())
            for model in stored_models()}


class _RolledBack(Exception):
    pass


def command_run(project: Any, root: Path) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """ged_import's service on the directory, then rolled back: its report and documents.

    Work ids are unique across projects, so the command cannot run for real in
    another project to compare with.
    """
    seen: dict[str, Any] = {}
    try:
        with transaction.atomic():
            seen["report"] = import_checkout(project=project, root=root).as_dict()
            seen["documents"] = sorted(DocumentRevision.objects.filter(project=project)
                                       .values_list("path", "content"))
            raise _RolledBack
    except _RolledBack:
        pass
    return seen["report"], seen["documents"]


def without_root(report: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in report.items() if key != "root"}


# --- the upload runs ged_import ---------------------------------------------------------------


def test_a_push_reports_exactly_what_the_command_reports_on_the_same_tree(
    alpha, client_for, tree, private_tmp
):
    command, documents = command_run(alpha.project, tree)
    assert DocumentRevision.objects.count() == 0
    response = push(client_for(alpha.token), "alpha", layout_archive(tree), name="src")
    assert response.status_code == 200, response.json()
    report = response.json()
    assert set(report) == set(command)
    assert report["root"] == "src"
    assert without_root(report) == without_root(command)
    assert report["created"]["work_items"] == 3 and report["skipped"]
    # Written by the pushing token, as every API write; the same rows as the command's.
    assert set(DocumentRevision.objects.filter(project=alpha.project)
               .values_list("author", flat=True)) == {"default"}
    assert sorted(DocumentRevision.objects.filter(project=alpha.project)
                  .values_list("path", "content")) == documents
    assert list(private_tmp.iterdir()) == []
    # A second push of the same tree writes nothing.
    again = push(client_for(alpha.token), "alpha", layout_archive(tree)).json()
    assert again["created"] == {}


def test_a_dry_run_reports_the_import_and_changes_nothing(alpha, client_for, tree, private_tmp,
                                                          memory_root):
    before = database()
    files_before = sorted(p.relative_to(memory_root).as_posix()
                          for p in memory_root.rglob("*")) if memory_root.exists() else []
    dry = push(client_for(alpha.token), "alpha", layout_archive(tree), dry_run="true")
    assert dry.status_code == 200, dry.json()
    assert dry.json()["created"]["documents"] >= 5
    assert database() == before
    files_after = sorted(p.relative_to(memory_root).as_posix()
                         for p in memory_root.rglob("*")) if memory_root.exists() else []
    assert files_after == files_before
    real = push(client_for(alpha.token), "alpha", layout_archive(tree), dry_run="false")
    assert real.json() == dry.json()
    assert database() != before
    assert list(private_tmp.iterdir()) == []


def test_the_checkout_approvals_in_an_upload_never_become_decisions(alpha, client_for, tree):
    state = (tree / ".ged/IMPORT-STATE.json").read_text()
    assert '"accepted": [' in state and "AGENTS.md" in state  # the checkout approves AGENTS.md
    report = push(client_for(alpha.token), "alpha", layout_archive(tree)).json()
    assert StandardsDecision.objects.count() == 0
    imports = StandardsImport.objects.filter(project=alpha.project)
    assert imports.count() == 3 and all(row.current_decision is None for row in imports)
    assert report["trusted"] == [] and report["trusted_by"] is None
    assert any("the checkout's own acceptance is not trusted" in line
               for line in report["standards"])
    # Nothing accepted, so there is no STANDARDS.md to serve.
    assert client_for(alpha.token).get("/v1/projects/alpha/standards").status_code == 404


def test_an_upload_takes_no_trust_option(alpha, client_for, tree):
    response = push(client_for(alpha.token), "alpha", layout_archive(tree),
                    trust_decisions="AGENTS.md")
    assert response.status_code == 400
    assert response.json()["fields"] == {"trust_decisions": ["unknown field"]}
    assert StandardsImport.objects.count() == 0


@pytest.mark.parametrize("build", [gedpi_clone, working_checkout])
def test_real_shaped_trees_push_with_the_command_report(alpha, client_for, tmp_path, build):
    root = build(tmp_path / "repo")
    command, _ = command_run(alpha.project, root)
    report = push(client_for(alpha.token), "alpha", layout_archive(root)).json()
    assert without_root(report) == without_root(command)


def test_an_unmigrated_tree_is_refused_with_the_command_message(alpha, client_for, tree,
                                                                private_tmp):
    (tree / ".ged/VERSION").write_text("2\n")
    (tree / ".ged/MEMORY-MIGRATION.json").unlink()
    (tree / ".ged/GLOSSARY.md").write_text(trees.GLOSSARY)
    message = refused(str(tree), "--project", "alpha")
    before = database()
    response = push(client_for(alpha.token), "alpha", layout_archive(tree), name=str(tree))
    assert response.status_code == 422
    assert response.json() == {"code": "checkout_refused", "message": message}
    assert database() == before
    assert list(private_tmp.iterdir()) == []


def test_a_tree_without_version_is_refused_with_the_command_message(alpha, client_for,
                                                                    tmp_path):
    root = write_tree(tmp_path / "plain", {".ged/PROJECT.md": "# P\n\nWords.\n",
                                           "CONTEXT.md": "# Context\n\nWords.\n"})
    message = refused(str(root), "--project", "alpha")
    assert ".ged/VERSION is missing" in message
    response = push(client_for(alpha.token), "alpha", layout_archive(root), name=str(root))
    assert response.json() == {"code": "checkout_refused", "message": message}
    # Without a name the refusal names the checkout PATH, as the command's usage does.
    default = push(client_for(alpha.token), "alpha", layout_archive(root)).json()
    assert default["message"] == message.replace(str(root), "PATH")


def test_a_bad_file_inside_is_refused_as_the_command_refuses_it(alpha, client_for, tree):
    (tree / "CONTEXT.md").write_bytes(b"\xc3\x28 broken\n")
    response = push(client_for(alpha.token), "alpha", layout_archive(tree))
    assert response.status_code == 422
    assert response.json()["message"] == refused(str(tree), "--project", "alpha")
    assert DocumentRevision.objects.count() == 0


def test_an_upload_never_replaces_a_skills_bytes_under_its_name(alpha, client_for, tree):
    """The rule of PUT .../skills/{name} (409) holds for POST .../checkout too."""
    client = client_for(alpha.token)
    assert push(client, "alpha", layout_archive(tree)).status_code == 200
    assert push(client, "alpha", layout_archive(tree)).json()["created"] == {}  # same bytes
    replace_skill(tree, "release-notes", trees.SKILL_VERIFIED + "Skip the tests.\n")
    before = database()

    response = push(client, "alpha", layout_archive(tree))

    assert response.status_code == 409
    assert response.json() == {"code": "conflict",
                               "message": refused(str(tree), "--project", "alpha")}
    assert "skill release-notes exists with different content" in response.json()["message"]
    assert database() == before


# --- who may push and pull ---------------------------------------------------------------------


def test_only_the_project_token_or_the_admin_token_may_push(alpha, beta, client_for,
                                                            admin_client, tree):
    data = layout_archive(tree)
    assert push(client_for(None), "alpha", data).status_code == 401
    assert push(client_for(beta.token), "alpha", data).status_code == 404
    assert DocumentRevision.objects.count() == 0
    assert push(admin_client, "alpha", data).status_code == 200
    assert set(DocumentRevision.objects.values_list("author", flat=True)) == {"admin"}


def test_a_push_writes_no_memory_so_needs_no_memory_token(alpha, client_for, tree,
                                                          memory_write_token):
    response = push(client_for(alpha.token), "alpha", layout_archive(tree))
    assert response.status_code == 200, response.json()
    assert MemoryEntry.objects.count() == 0
    assert DocumentRevision.objects.filter(project=alpha.project).exists()


def test_a_pull_is_a_read_for_the_project_token_or_the_admin(alpha, beta, client_for,
                                                             admin_client):
    assert client_for(None).get(URL.format("alpha")).status_code == 401
    assert client_for(beta.token).get(URL.format("alpha")).status_code == 404
    assert admin_client.get(URL.format("alpha")).status_code == 200


# --- the download is what ged_export writes -----------------------------------------------------


def test_the_download_holds_exactly_the_files_ged_export_writes(alpha, client_for, tree,
                                                                tmp_path):
    push(client_for(alpha.token), "alpha", layout_archive(tree))
    response = client_for(alpha.token).get(URL.format("alpha"))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/gzip"
    files = archive.read_all(response.content, sync.LIMITS, lambda name, is_dir: True)
    assert files == render_tree(alpha.project)
    assert all(sync.is_export_path(rel) for rel in files)
    assert len(files) > 20
    # The same bytes for the same project: nothing depends on the clock.
    assert client_for(alpha.token).get(URL.format("alpha")).content == response.content


def test_the_download_refuses_an_accept_it_cannot_answer(alpha, client_for):
    response = client_for(alpha.token).get(URL.format("alpha"), HTTP_ACCEPT="text/html")
    assert response.status_code == 406
    assert response.json()["code"] == "not_acceptable"


# --- hostile archives: one 400 invalid_archive, nothing written -------------------------------


def _device(name: str, kind: bytes) -> tuple[tarfile.TarInfo, bytes | None]:
    return member(name, kind=kind, devmajor=1, devminor=3)


HOSTILE: dict[str, tuple[Callable[[], bytes], str]] = {
    "absolute path": (lambda: tar_gz(VERSION, member("/etc/cron.d/x")),
                      "/etc/cron.d/x: an absolute path"),
    "dot dot": (lambda: tar_gz(VERSION, member(".ged/../../x")),
                ".ged/../../x: the name goes up a directory (..)"),
    "symlink": (lambda: tar_gz(VERSION, member("CONTEXT.md", kind=tarfile.SYMTYPE,
                                               linkname="/etc/passwd")),
                "CONTEXT.md: a symbolic link; only regular files and directories are taken"),
    "hardlink": (lambda: tar_gz(VERSION, member("CONTEXT.md", kind=tarfile.LNKTYPE,
                                                linkname=".ged/VERSION")),
                 "CONTEXT.md: a hard link; only regular files and directories are taken"),
    "character device": (lambda: tar_gz(VERSION, _device(".ged/PROJECT.md", tarfile.CHRTYPE)),
                         ".ged/PROJECT.md: a character device; only regular files"),
    "block device": (lambda: tar_gz(VERSION, _device(".ged/PROJECT.md", tarfile.BLKTYPE)),
                     ".ged/PROJECT.md: a block device; only regular files"),
    "fifo": (lambda: tar_gz(VERSION, member(".ged/PROJECT.md", kind=tarfile.FIFOTYPE)),
             ".ged/PROJECT.md: a FIFO; only regular files"),
    "duplicate": (lambda: tar_gz(VERSION, member("CONTEXT.md"), member("./CONTEXT.md")),
                  "./CONTEXT.md: the archive holds CONTEXT.md twice"),
    "file and directory": (lambda: tar_gz(VERSION, member(".ged/work"),
                                          member(".ged/work/x/META.json")),
                           ".ged/work/x/META.json: the archive has .ged/work both as a file "
                           "and as a directory"),
    "outside the layout": (lambda: tar_gz(VERSION, member("src/app.py")),
                           "src/app.py: not a file of the GedPi layout"),
    "control character": (lambda: tar_gz(VERSION, member(".ged/a\x1b[2Jb")),
                          ".ged/a\\x1b[2Jb: the name holds a control character"),
    "not utf-8": (lambda: tar_gz(VERSION, member(".ged/\udcff.md"), fmt=tarfile.GNU_FORMAT),
                  "the name is not valid UTF-8"),
    "not gzip": (lambda: b"PK\x03\x04 a zip file, perhaps",
                 "the body is not a gzip-compressed tar archive (.tar.gz)"),
    "gzip of text": (lambda: gzip.compress(b"hello " * 200),
                     "the body is not a valid tar.gz archive"),
    "truncated": (lambda: tar_gz(VERSION, member("CONTEXT.md", b"# C\n\n" + b"w" * 5000))[:-60],
                  "the body is not a valid tar.gz archive"),
    "declared too large": (lambda: tar_gz(VERSION, member(
        ".ged/PROJECT.md", b"# P\n" + b"a" * (sync.LIMITS.member_bytes + 1))),
        f".ged/PROJECT.md: {sync.LIMITS.member_bytes + 5:,} bytes; a file may hold at most "
        f"{sync.LIMITS.member_bytes:,}"),
    "huge header": (lambda: tar_gz(member(".ged/" + "n" * 20_000 + ".md")),
                    "a tar extension header of"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_archive_is_one_clear_error_and_nothing_is_written(
    alpha, client_for, tree, private_tmp, case
):
    build, expected = HOSTILE[case]
    push(client_for(alpha.token), "alpha", layout_archive(tree))  # something to keep
    before = database()
    response = push(client_for(alpha.token), "alpha", build())
    assert response.status_code == 400, response.json()
    body = response.json()
    assert set(body) == {"code", "message"} and body["code"] == "invalid_archive"
    assert expected in body["message"] and "\n" not in body["message"]
    assert database() == before
    assert list(private_tmp.iterdir()) == []


def test_an_archive_refused_at_its_last_member_writes_nothing(alpha, client_for, tree):
    files = sync.collect_layout(tree)
    good = [member(rel, data) for rel, data in files.items()]
    response = push(client_for(alpha.token), "alpha", tar_gz(*good, member("/abs")))
    assert response.json()["code"] == "invalid_archive"
    assert DocumentRevision.objects.count() == 0


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> archive.Limits:
    limits = archive.Limits(archive_bytes=64 * 1024, members=6, member_bytes=4096,
                            total_bytes=8192)
    monkeypatch.setattr(sync, "LIMITS", limits)
    return limits


def test_too_many_members_are_refused(alpha, client_for, small_limits):
    data = tar_gz(VERSION, *(member(f".ged/reports/r{i}.md") for i in range(6)))
    body = push(client_for(alpha.token), "alpha", data).json()
    assert body == {"code": "invalid_archive", "message": "the archive has more than 6 members"}


def test_files_over_the_total_are_refused(alpha, client_for, small_limits):
    data = tar_gz(VERSION, *(member(f".ged/reports/r{i}.md", b"w" * 3000) for i in range(3)))
    body = push(client_for(alpha.token), "alpha", data).json()
    assert body["message"] == "the archive's files hold more than 8,192 bytes together"


def test_the_decompressed_stream_is_counted_past_the_headers(alpha, client_for, small_limits):
    # Each pax header is within MAX_HEADER_BYTES, but together they unpack to more
    # than the limits allow: refused by the count of what came out of gzip.
    data = tar_gz(*(member(f".ged/reports/r{i}.md", pax_headers={"comment": "c" * 15_000})
                    for i in range(3)))
    body = push(client_for(alpha.token), "alpha", data).json()
    assert body["code"] == "invalid_archive"
    assert body["message"] == (f"the archive unpacks to more than "
                               f"{small_limits.stream_bytes:,} bytes, the most its limits allow")


def test_a_body_over_the_archive_limit_is_413(alpha, client_for, small_limits):
    response = push(client_for(alpha.token), "alpha", b"\x1f\x8b" + b"\0" * 70_000)
    assert response.status_code == 413
    assert response.json() == {"code": "payload_too_large",
                               "message": "request body is larger than 65,536 bytes, the most "
                                          "an archive may hold"}


def test_a_gzip_bomb_fails_fast_in_bounded_memory(alpha, client_for):
    # 256 MiB of zeros behind one pax header that claims them all: about 250 KiB sent.
    header = tarfile.TarInfo("././@PaxHeader")
    header.type, header.size = tarfile.XHDTYPE, 256 * 1024 * 1024
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [compressor.compress(header.tobuf(tarfile.USTAR_FORMAT))]
    zeros = b"\0" * (1 << 20)
    parts += [compressor.compress(zeros) for _ in range(256)]
    bomb = b"".join(parts) + compressor.flush()
    assert len(bomb) < 1024 * 1024
    tracemalloc.start()
    response = push(client_for(alpha.token), "alpha", bomb)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert response.json()["code"] == "invalid_archive"
    assert "a tar extension header of 268,435,456 bytes" in response.json()["message"]
    # Fast is bench/bounded_inputs.py's to measure; bounded memory is this test's.
    assert peak < 16 * 1024 * 1024


def test_zeros_after_the_first_block_are_never_read(alpha, client_for):
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = b"\0" * (1 << 20)
    bomb = b"".join(compressor.compress(zeros) for _ in range(512)) + compressor.flush()
    tracemalloc.start()
    body = push(client_for(alpha.token), "alpha", bomb).json()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert body["code"] == "invalid_archive"
    # Never read: 512 MiB of zeros leave no trace in memory (the time is
    # bench/bounded_inputs.py's).
    assert peak < 16 * 1024 * 1024


def test_an_empty_body_and_another_media_type_are_refused(alpha, client_for):
    empty = push(client_for(alpha.token), "alpha", b"")
    assert empty.status_code == 400 and empty.json()["code"] == "invalid_archive"
    json_body = client_for(alpha.token).post(URL.format("alpha"), data={"a": 1}, format="json")
    assert json_body.status_code == 415
    assert json_body.json()["code"] == "unsupported_media_type"


def test_a_bad_query_is_a_validation_error(alpha, client_for, tree):
    response = push(client_for(alpha.token), "alpha", layout_archive(tree), dry_run="yes")
    assert response.status_code == 400 and "dry_run" in response.json()["fields"]
    assert DocumentRevision.objects.count() == 0


def test_the_limits_are_ged_import_own():
    from governance import gedpi_import

    assert sync.LIMITS.member_bytes == gedpi_import.MAX_FILE_BYTES
    assert sync.LIMITS.total_bytes == gedpi_import.MAX_TOTAL_BYTES
    assert sync.LIMITS.members == gedpi_import.MAX_ENTRIES
    assert settings.API_MAX_BODY_BYTES < sync.LIMITS.archive_bytes
