"""`gedweb push` and `gedweb pull` against a live server (docs/interop.md, "Over HTTP").

The key round trip: a real-shaped checkout pushed, then pulled into an empty
directory, is byte for byte what `manage.py ged_export` writes from the
server's database. Push only reads the checkout; pull writes only the files
ged_export writes, each atomically, and refuses (writing nothing) to overwrite a
file changed here since the last pull.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gedweb.checkout import sync
from tests.checkout.real_trees import gedpi_clone
from tests.checkout.trees import snapshot
from tests.cli.conftest import LiveServer, run_cli
from tests.cli.test_commands import Project, assert_refused
from tests.interop import gedpi_trees as trees
from tests.interop.gedpi_trees import migrated_checkout, write_tree

pytestmark = [pytest.mark.live_server]

STATE = sync.PULL_STATE


def tree_hash(root: Path) -> str:
    """Every path, link and byte under root (directories too), as one sha256."""
    digest = hashlib.sha256()
    for directory, dirnames, filenames in sorted(os.walk(root)):
        for name in sorted(dirnames + filenames):
            path = Path(directory) / name
            info = path.lstat()
            digest.update(f"{path.relative_to(root)}\0{info.st_mode}\0{info.st_mtime_ns}\0"
                          .encode())
            if path.is_file() and not path.is_symlink():
                digest.update(path.read_bytes())
    return digest.hexdigest()


def checkout_files(salt: str) -> dict[str, bytes]:
    """The realistic migrated checkout with work ids of its own.

    Work ids are unique across projects, and the session's server keeps every
    test's projects, so each test renames the tree's work items.
    """
    renamed = {}
    for work_id in (trees.PLANNED_ID, trees.DIRECT_ID, trees.LEGACY_ID, trees.BOOTSTRAP_ID):
        renamed[work_id] = work_id[:-32] + hashlib.md5(f"{salt}{work_id}".encode()).hexdigest()

    def rename(text: str) -> str:
        for old, new in renamed.items():
            text = text.replace(old, new)
        return text

    return {rename(rel): rename(data.decode()).encode()
            for rel, data in migrated_checkout().items()}


def big_checkout(root: Path, salt: str) -> Path:
    """The realistic migrated checkout, grown: 300 ADRs and 60 reports beside it."""
    files: dict[str, bytes | str] = dict(checkout_files(salt))
    for number in range(1, 301):
        files[f"docs/adr/{number + 100:04d}-decision.md"] = (
            f"# ADR {number + 100}: decision {number}\n\nStatus: accepted\n\n"
            + "Because the invoices must stream. " * 60 + "\n")
    for number in range(60):
        files[f".ged/reports/audit-{number:03d}.md"] = f"# Audit {number}\n\n" + "ok. " * 400
    return write_tree(root, files)


def exported(server: LiveServer, project: str, target: Path) -> dict[str, bytes]:
    assert server.gunicorn is not None
    done = server.gunicorn.manage("ged_export", "--project", project, str(target))
    assert done.returncode == 0, done.stderr
    return snapshot(target)


def pulled(root: Path) -> dict[str, bytes]:
    """What a pull left, less its own record."""
    return {rel: data for rel, data in snapshot(root).items()
            if not rel.startswith(sync.PULL_STATE_DIR)
            and rel not in (".ged/runtime", ".ged/runtime/gedweb")}


def test_push_then_pull_into_an_empty_directory_is_ged_export_byte_for_byte(
    gedweb_server: LiveServer, tmp_path: Path
) -> None:
    shop = Project(gedweb_server, "sync-round")
    source = big_checkout(tmp_path / "source", shop.id)
    before = tree_hash(source)
    started = time.monotonic()
    report = shop.json("push", "--project", shop.id, str(source))
    pushed = time.monotonic() - started
    assert report["created"]["documents"] >= 360 and report["created"]["work_items"] == 3
    assert report["root"] == str(source)
    assert tree_hash(source) == before  # push never touches the checkout

    started = time.monotonic()
    result = shop.json("pull", "--project", shop.id, str(tmp_path / "empty"))
    pulled_in = time.monotonic() - started
    export = exported(gedweb_server, shop.id, tmp_path / "exported")
    files = pulled(tmp_path / "empty")
    assert files == export
    assert sorted(result["written"]) == sorted(rel for rel in export
                                               if (tmp_path / "exported" / rel).is_file())
    assert result["unchanged"] == [] and result["kept"] == []
    state = json.loads((tmp_path / "empty" / STATE).read_text())
    assert state["project"] == shop.id
    assert state["files"] == {rel: hashlib.sha256(data).hexdigest()
                              for rel, data in export.items()
                              if (tmp_path / "exported" / rel).is_file()}
    size = sum(len(data) for data in export.values())
    print(f"\nround trip: {len(result['written'])} files, {size:,} bytes; "
          f"push {pushed:.2f} s, pull {pulled_in:.2f} s")

    again = shop.json("pull", "--project", shop.id, str(tmp_path / "empty"))
    assert again["written"] == [] and len(again["unchanged"]) == len(result["written"])


def test_a_dry_run_push_writes_nothing_on_the_server(gedweb_server: LiveServer,
                                                     tmp_path: Path) -> None:
    shop = Project(gedweb_server, "sync-dry")
    source = write_tree(tmp_path / "source", checkout_files(shop.id))
    dry = shop.json("push", "--project", shop.id, str(source), "--dry-run")
    assert dry["created"]["documents"] >= 5
    status, documents = shop.api("GET", "/documents")
    assert status == 200 and documents["items"] == []
    status, work = shop.api("GET", "/work")
    assert work["items"] == []
    real = shop.json("push", "--project", shop.id, str(source))
    assert real == dry


def test_push_refusals_are_the_command_refusals(gedweb_server: LiveServer,
                                                tmp_path: Path) -> None:
    shop = Project(gedweb_server, "sync-refused")
    source = write_tree(tmp_path / "source", checkout_files(shop.id))
    (source / ".ged/VERSION").write_text("2\n")
    (source / ".ged/MEMORY-MIGRATION.json").unlink()
    (source / ".ged/GLOSSARY.md").write_text(trees.GLOSSARY)
    assert gedweb_server.gunicorn is not None
    command = gedweb_server.gunicorn.manage("ged_import", str(source), "--project", shop.id)
    assert command.returncode == 1
    message = command.stderr.strip().removeprefix("CommandError: ")
    result = shop.cli("push", "--project", shop.id, str(source))
    assert_refused(result, 422, "checkout_refused")
    assert result.stderr == f"gedweb: 422 checkout_refused: {message}\n"


def test_push_refuses_a_symlink_locally_and_sends_nothing(gedweb_server: LiveServer,
                                                          tmp_path: Path) -> None:
    shop = Project(gedweb_server, "sync-link")
    source = write_tree(tmp_path / "source", checkout_files(shop.id))
    (tmp_path / "secret.md").write_text("# Secret\n\nNot yours.\n")
    (source / "docs/adr/0009-secret.md").symlink_to(tmp_path / "secret.md")
    before = tree_hash(source)
    result = shop.cli("push", "--project", shop.id, str(source))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == ("gedweb: Read source traverses a symbolic link: "
                             "docs/adr/0009-secret.md\n")
    assert tree_hash(source) == before
    status, documents = shop.api("GET", "/documents")
    assert documents["items"] == []


def test_push_needs_no_memory_token_and_never_echoes_the_token(gedweb_server: LiveServer,
                                                               tmp_path: Path) -> None:
    shop = Project(gedweb_server, "sync-tokens")
    source = gedpi_clone(tmp_path / "clone")
    env = {**shop.env, "GEDWEB_MEMORY_TOKEN": ""}
    done = run_cli("push", "--project", shop.id, str(source), "--format", "text", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("created: documents 3\n")
    assert "skipped: .ged/GLOSSARY.md: a compatibility pointer" in done.stdout
    bad = run_cli("push", "--project", shop.id, str(source), "--token", "gwp_wrong-token-xyz",
                  env=env)
    assert_refused(bad, 401, "unauthenticated")
    assert "gwp_wrong" not in bad.stderr


# --- pull: only GedPi's files, atomically, never over a local change -------------------------


@pytest.fixture
def pulled_shop(gedweb_server: LiveServer, tmp_path: Path) -> tuple[Project, Path]:
    shop = Project(gedweb_server, f"sync-pull-{os.getpid()}-{time.monotonic_ns() % 10**9}")
    source = write_tree(tmp_path / "source", checkout_files(shop.id))
    shop.json("push", "--project", shop.id, str(source))
    checkout = tmp_path / "checkout"
    shop.json("pull", "--project", shop.id, str(checkout))
    return shop, checkout


def put_context(shop: Project, text: str) -> None:
    status, current = shop.api("GET", "/documents/CONTEXT.md")
    assert status == 200, current
    status, body = shop.api("PUT", "/documents/CONTEXT.md",
                            {"content": text, "expected_revision": current["revision"]})
    assert status in (200, 201), body


def test_a_pull_replaces_what_it_wrote_when_the_server_changed(pulled_shop) -> None:
    shop, checkout = pulled_shop
    put_context(shop, "# Context\n\n**Invoice**: a bill, streamed.\n")
    result = shop.json("pull", "--project", shop.id, str(checkout))
    assert result["written"] == ["CONTEXT.md"]
    assert (checkout / "CONTEXT.md").read_text() == "# Context\n\n**Invoice**: a bill, streamed.\n"


def test_a_pull_over_a_local_change_is_refused_and_writes_nothing(pulled_shop) -> None:
    shop, checkout = pulled_shop
    put_context(shop, "# Context\n\n**Invoice**: changed on the server.\n")
    status, current = shop.api("GET", "/documents/PROJECT.md")
    shop.api("PUT", "/documents/PROJECT.md",
             {"content": "# Billing\n\nServer side.\n", "expected_revision": current["revision"]})
    (checkout / "CONTEXT.md").write_text("# Context\n\n**Invoice**: my local edit.\n")
    before = snapshot(checkout)
    result = shop.cli("pull", "--project", shop.id, str(checkout))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == ("gedweb: CONTEXT.md changed here since the last pull; nothing was "
                             "written; give --force to overwrite local changes\n")
    assert snapshot(checkout) == before  # PROJECT.md was not written either
    forced = shop.json("pull", "--project", shop.id, str(checkout), "--force")
    assert sorted(forced["written"]) == [".ged/PROJECT.md", "CONTEXT.md"]
    assert "changed on the server" in (checkout / "CONTEXT.md").read_text()
    state = json.loads((checkout / STATE).read_text())
    assert state["files"]["CONTEXT.md"] == hashlib.sha256(
        (checkout / "CONTEXT.md").read_bytes()).hexdigest()


def test_a_pull_never_overwrites_a_file_it_did_not_write(gedweb_server: LiveServer,
                                                         pulled_shop, tmp_path: Path) -> None:
    shop, _ = pulled_shop
    mine = write_tree(tmp_path / "mine", {"CONTEXT.md": "# Mine\n\nLocal only.\n",
                                          ".ged/.gitignore": "runtime/\n",
                                          "src/app.py": "print('hi')\n"})
    refused = shop.cli("pull", "--project", shop.id, str(mine))
    assert refused.returncode == 1
    assert "CONTEXT.md changed here since the last pull" in refused.stderr
    assert not (mine / ".ged/VERSION").exists()
    forced = shop.json("pull", "--project", shop.id, str(mine), "--force")
    assert forced["kept"] == [".ged/.gitignore"]  # a checkout's own ignore rules stay
    assert (mine / ".ged/.gitignore").read_text() == "runtime/\n"
    assert (mine / "src/app.py").read_text() == "print('hi')\n"
    assert ".ged/.gitignore" not in json.loads((mine / STATE).read_text())["files"]


def test_a_pull_refuses_a_symlink_on_the_way(pulled_shop, tmp_path: Path) -> None:
    shop, _ = pulled_shop
    target = tmp_path / "elsewhere"
    target.mkdir()
    checkout = tmp_path / "linked"
    checkout.mkdir()
    (checkout / ".ged").symlink_to(target)
    result = shop.cli("pull", "--project", shop.id, str(checkout), "--force")
    assert result.returncode == 1
    assert "symbolic link: .ged" in result.stderr
    assert list(target.iterdir()) == []


def test_pushing_a_pulled_checkout_changes_nothing(pulled_shop) -> None:
    shop, checkout = pulled_shop
    report = shop.json("push", "--project", shop.id, str(checkout))
    assert report["created"] == {}
    assert not any(line.startswith(sync.PULL_STATE_DIR) for line in report["skipped"])


# --- a hostile server ------------------------------------------------------------------------


def _archive(*members: tuple[str, bytes, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.SYMTYPE:
                info.linkname = "/etc/passwd"
            else:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if info.size else None)
    return raw.getvalue()


@contextmanager
def archive_server(payload: bytes, **headers: str) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "application/gzip")
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.mark.parametrize(("members", "expected"), [
    ([(".ged/VERSION", tarfile.REGTYPE, b"3\n"), ("CONTEXT.md", tarfile.SYMTYPE, b"")],
     "CONTEXT.md: a symbolic link"),
    ([(".ged/VERSION", tarfile.REGTYPE, b"3\n"), ("../../.bashrc", tarfile.REGTYPE, b"x")],
     "../../.bashrc: the name goes up a directory (..)"),
    ([(".ged/VERSION", tarfile.REGTYPE, b"3\n"), (".ged/hooks/post.sh", tarfile.REGTYPE, b"x")],
     "the server sent .ged/hooks/post.sh, which is not a file ged_export writes"),
])
def test_a_pull_takes_nothing_from_a_hostile_archive(gedweb_server: LiveServer, tmp_path: Path,
                                                     members, expected) -> None:
    checkout = tmp_path / "checkout"
    with archive_server(_archive(*members)) as url:
        result = run_cli("pull", "--project", "any", str(checkout),
                         env=gedweb_server.cli_env(GEDWEB_URL=url))
    assert result.returncode == 1, result.stdout
    assert expected in result.stderr and result.stderr.count("\n") == 1
    assert not checkout.exists() or list(checkout.rglob("*")) == []


@pytest.mark.parametrize("encoding", [None, "gzip"])
def test_a_pull_reads_no_more_than_an_archive_may_hold(gedweb_server: LiveServer,
                                                       tmp_path: Path, encoding) -> None:
    limit = sync.LIMITS.archive_bytes
    if encoding is None:
        payload, headers = b"\x1f\x8b" + b"\0" * limit, {}
    else:  # a bomb in the HTTP layer: 64 MiB of zeros in a few dozen KiB
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        payload = b"".join(compressor.compress(b"\0" * (1 << 20)) for _ in range(64))
        payload += compressor.flush()
        headers = {"Content_Encoding": "gzip"}
    checkout = tmp_path / "checkout"
    with archive_server(payload, **headers) as url:
        result = run_cli("pull", "--project", "any", str(checkout),
                         env=gedweb_server.cli_env(GEDWEB_URL=url))
    assert result.returncode == 1
    assert result.stderr == (f"gedweb: 200 bad_response: the answer is larger than "
                             f"{limit:,} bytes\n")
    assert not checkout.exists()


def on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run gedweb with stderr on a pseudo-terminal and stdout on a pipe: (rc, stdout, stderr)."""
    import fcntl
    import pty
    import struct
    import subprocess
    import termios

    from tests.cli.conftest import GEDWEB

    leader, follower = pty.openpty()
    # 24 rows of 120 columns: a new pseudo-terminal is 0 columns wide, and a bar
    # is drawn to the terminal's width.
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    terminal = {key: value for key, value in env.items() if key != "CI"}
    with subprocess.Popen([str(GEDWEB), *args], env=terminal, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=follower) as process:
        os.close(follower)
        drawn = bytearray()
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the process closed its end
                break
            if not chunk:
                break
            drawn += chunk
        assert process.stdout is not None
        out = process.stdout.read().decode()
        rc = process.wait(timeout=60)
    os.close(leader)
    return rc, out, drawn.decode(errors="replace")


def test_push_and_pull_draw_progress_on_a_terminal_and_keep_stdout_the_answer(
    gedweb_server: LiveServer, tmp_path: Path
) -> None:
    shop = Project(gedweb_server, "sync-bars")
    source = big_checkout(tmp_path / "source", shop.id)
    rc, out, drawn = on_a_terminal(["push", "--project", shop.id, str(source)], shop.env)
    assert rc == 0, drawn
    assert json.loads(out)["created"]["work_items"] == 3
    assert "upload:" in drawn and "B/" in drawn
    rc, out, drawn = on_a_terminal(["pull", "--project", shop.id, str(tmp_path / "into")],
                                   shop.env)
    assert rc == 0, drawn
    written = json.loads(out)["written"]
    assert len(written) >= 360
    # The download in bytes, then the files to write, out of their total (tqdm
    # redraws at most every 0.1 s, so a fast pull may show only its start).
    assert "download:" in drawn and "pull:   0%|" in drawn and f"0/{len(written)} [" in drawn
    # In a pipe (Project.json asserts an empty stderr) nothing is drawn.
    again = shop.json("pull", "--project", shop.id, "--force", str(tmp_path / "again"))
    assert len(again["written"]) == len(written)
