"""The `gedweb` console script, run as a real subprocess against a live server."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from gedweb.cli.client import Client, NetworkError, is_loopback
from gedweb.lib.chain import GENESIS_HASH, entry_hash
from tests.cli.conftest import LiveServer, run_cli

pytestmark = [pytest.mark.live_server]


def test_add_list_all_and_verify(gedweb_server: LiveServer) -> None:
    project = "cli-happy"
    token = gedweb_server.new_project(project)
    env = gedweb_server.cli_env(GEDWEB_TOKEN=token)
    added = []
    for number in range(5):
        result = run_cli("memory", "add", "--project", project, "--category", "decision",
                         "--content", f"Entscheidung {number}: ümlaut", "--source", "cli-test",
                         env=env)
        assert result.returncode == 0, result.stderr
        entry = json.loads(result.stdout)
        assert entry["seq"] == number + 1
        assert entry["content"] == f"Entscheidung {number}: ümlaut"
        assert entry["source"] == "cli-test"
        added.append(entry)
    correction = run_cli("memory", "add", "--project", project, "--category", "note",
                         "--content", "fixes 2", "--corrects", "2", env=env)
    assert correction.returncode == 0, correction.stderr
    assert json.loads(correction.stdout)["corrects"] == added[1]["id"]

    first_two = run_cli("memory", "list", "--project", project, "--limit", "2", env=env)
    assert first_two.returncode == 0, first_two.stderr
    assert [e["seq"] for e in json.loads(first_two.stdout)["items"]] == [1, 2]

    # --all with a page size of 2 follows next_cursor through 3 pages.
    everything = run_cli("memory", "list", "--project", project, "--all", "--limit", "2",
                         env=env)
    assert everything.returncode == 0, everything.stderr
    assert [e["seq"] for e in json.loads(everything.stdout)["items"]] == [1, 2, 3, 4, 5, 6]

    notes = run_cli("memory", "list", "--project", project, "--category", "note", env=env)
    assert [e["seq"] for e in json.loads(notes.stdout)["items"]] == [6]

    verified = run_cli("memory", "verify", "--project", project, env=env)
    assert verified.returncode == 0, verified.stderr
    report = json.loads(verified.stdout)
    assert report == {"ok": True, "entries": 6, "head": gedweb_server.entries(project)[-1]["hash"],
                      "first_bad_seq": None, "redacted": 0}


def test_context_prints_the_bundle(gedweb_server: LiveServer) -> None:
    env = gedweb_server.cli_env()
    run_cli("memory", "add", "--project", gedweb_server.project, "--category", "fact",
            "--content", "context marker 4711", env=env)
    result = run_cli("context", "--project", gedweb_server.project, env=env)
    assert result.returncode == 0, result.stderr
    assert "context marker 4711" in result.stdout


def test_bad_token_is_a_one_line_401(gedweb_server: LiveServer) -> None:
    env = gedweb_server.cli_env(GEDWEB_TOKEN="gwp_not-a-real-token-at-all")
    result = run_cli("memory", "list", "--project", gedweb_server.project, env=env)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gedweb: 401 unauthenticated: "), lines


def test_memory_write_boundary_needs_the_memory_token(gedweb_server: LiveServer) -> None:
    env = gedweb_server.cli_env()
    del env["GEDWEB_MEMORY_TOKEN"]
    before = len(gedweb_server.entries())
    result = run_cli("memory", "add", "--project", gedweb_server.project, "--category", "note",
                     "--content", "no write rights", env=env)
    assert result.returncode == 1
    assert result.stderr.startswith("gedweb: 403 memory_write_forbidden: ")
    assert len(gedweb_server.entries()) == before


def test_unknown_project_and_usage_errors(gedweb_server: LiveServer) -> None:
    env = gedweb_server.cli_env()
    missing = run_cli("memory", "list", "--project", "no-such-project", env=env)
    assert missing.returncode == 1
    assert missing.stderr.startswith("gedweb: 404 not_found: ")
    usage = run_cli("memory", "add", "--project", gedweb_server.project, env=env)
    assert usage.returncode == 2
    invalid = run_cli("memory", "add", "--project", gedweb_server.project, "--category", "BAD",
                      "--content", "x", env=env)
    assert invalid.returncode == 1
    assert invalid.stderr.startswith("gedweb: 400 validation_error: ")


def test_network_failure_exits_3(gedweb_server: LiveServer) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = gedweb_server.cli_env(GEDWEB_URL=f"http://127.0.0.1:{port}")
    result = run_cli("memory", "list", "--project", gedweb_server.project, env=env)
    assert result.returncode == 3
    assert result.stderr.startswith("gedweb: cannot reach ")
    assert "connection refused" in result.stderr and len(result.stderr.splitlines()) == 1


# --- retry never doubles ----------------------------------------------------------------


def _read_http_message(sock: socket.socket) -> bytes:
    """One HTTP/1.1 request or response with Content-Length (bounded to 4 MiB)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
        assert len(data) < 4 << 20
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


@contextmanager
def cutting_proxy(upstream_port: int) -> Iterator[dict[str, Any]]:
    """A 127.0.0.1 proxy: the first POST reaches the server, whose answer is then
    thrown away and the client's connection closed; everything else is relayed."""
    state: dict[str, Any] = {"posts": 0, "cut": 0, "relayed": 0}
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    state["port"] = listener.getsockname()[1]
    stop = threading.Event()

    def handle(client: socket.socket) -> None:
        with client, socket.create_connection(("127.0.0.1", upstream_port), timeout=10) as up:
            client.settimeout(10)
            request = _read_http_message(client)
            if not request:
                return
            up.sendall(request)
            response = _read_http_message(up)
            if request.startswith(b"POST "):
                state["posts"] += 1
                if state["posts"] == 1:
                    state["cut"] += 1
                    client.shutdown(socket.SHUT_RDWR)  # committed, answer lost
                    return
            state["relayed"] += 1
            client.sendall(response)

    def serve() -> None:
        deadline_connections = 50
        while not stop.is_set() and deadline_connections > 0:
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            deadline_connections -= 1
            threading.Thread(target=handle, args=(client,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def test_memory_add_retry_after_a_cut_connection_never_doubles(gedweb_server: LiveServer) -> None:
    project = "cli-retry"
    token = gedweb_server.new_project(project)
    with cutting_proxy(gedweb_server.port) as proxy:
        env = gedweb_server.cli_env(GEDWEB_TOKEN=token,
                                  GEDWEB_URL=f"http://127.0.0.1:{proxy['port']}")
        result = run_cli("memory", "add", "--project", project, "--category", "decision",
                         "--content", "written once", env=env)
    assert result.returncode == 0, result.stderr
    assert proxy["cut"] == 1 and proxy["posts"] == 2  # the retry went through
    entry = json.loads(result.stdout)
    stored = gedweb_server.entries(project)
    assert len(stored) == 1
    assert stored[0]["id"] == entry["id"] and entry["seq"] == 1


# --- verify trusts only its own arithmetic ---------------------------------------------------


def _chain(project: str, count: int) -> list[dict[str, Any]]:
    entries, prev = [], GENESIS_HASH
    for seq in range(1, count + 1):
        fields = {"author": "agent", "category": "note", "content": f"entry {seq}",
                  "corrects": None, "created_at": f"2026-11-30T08:00:0{seq}.000000+00:00",
                  "project_id": project, "seq": seq, "source": "operator"}
        digest = entry_hash(prev, fields)
        entries.append({"id": f"00000000-0000-4000-8000-{seq:012d}", **fields,
                        "prev_hash": prev, "hash": digest, "corrected_by": []})
        prev = digest
    return entries


@contextmanager
def forged_server(entries: list[dict[str, Any]]) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path.endswith("/memory/verify"):
                body: Any = {"ok": True, "entries": len(entries), "head": entries[-1]["hash"],
                             "first_bad_seq": None, "redacted": 0}
            elif parts.path.endswith("/memory"):
                after, limit = int(query.get("after", 0)), int(query.get("limit", 100))
                page = [e for e in entries if e["seq"] > after][:limit]
                more = page and page[-1]["seq"] < entries[-1]["seq"]
                body = {"items": page, "next_cursor": page[-1]["seq"] if more else None}
            else:
                self.send_error(404)
                return
            payload = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
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


def test_verify_names_a_forged_middle_link(gedweb_server: LiveServer) -> None:
    entries = _chain("forged", 5)
    with forged_server(entries) as url:
        env = gedweb_server.cli_env(GEDWEB_URL=url)
        honest = run_cli("memory", "verify", "--project", "forged", env=env)
        assert honest.returncode == 0, honest.stderr
        entries[2]["content"] = "rewritten history"  # seq 3; both hashes left as they were
        forged = run_cli("memory", "verify", "--project", "forged", env=env)
    assert forged.returncode == 1
    assert json.loads(forged.stdout)["first_bad_seq"] == 3
    assert "seq 3" in forged.stderr


def test_verify_fails_on_a_malformed_last_entry(gedweb_server: LiveServer) -> None:
    entries: list[Any] = _chain("garbage", 3)
    entries.append({"seq": 4, "content": "garbage without a hash or a link"})
    with forged_server(entries) as url:
        env = gedweb_server.cli_env(GEDWEB_URL=url)
        result = run_cli("memory", "verify", "--project", "garbage", env=env)
    assert result.returncode == 1, result.stdout
    report = json.loads(result.stdout)
    assert (report["ok"], report["first_bad_seq"], report["entries"]) == (False, 4, 4)
    assert "broken at seq 4" in result.stderr


# --- a token in clear --------------------------------------------------------------------


def test_a_token_over_plain_http_to_another_host_is_warned_about_once(
    gedweb_server: LiveServer,
) -> None:
    # .invalid never resolves (RFC 6761), so nothing leaves the machine; the
    # CLI retries five times and warns once, before the first attempt.
    env = gedweb_server.cli_env(GEDWEB_URL="http://gedweb.invalid:8787")
    result = run_cli("memory", "list", "--project", gedweb_server.project, env=env)
    assert result.returncode == 3
    lines = result.stderr.splitlines()
    assert lines[0] == ("gedweb: warning: sending a token over plain http:// to gedweb.invalid, "
                        "which is not this machine; anyone on the network path can read it "
                        "(use https://)")
    assert len(lines) == 2 and lines[1].startswith("gedweb: cannot reach ")
    assert gedweb_server.cli_env()["GEDWEB_TOKEN"] not in result.stderr


def test_no_warning_for_loopback_https_or_no_token() -> None:
    assert [is_loopback(h) for h in ("localhost", "LOCALHOST.", "app.localhost", "127.0.0.1",
                                     "127.8.9.1", "::1")] == [True] * 6
    # Only the exact name, its subdomains and loopback addresses (issue 34 §11): a name that
    # merely ends or starts with "localhost" is someone else's host.
    not_loopback = ("gedweb.example.org", "10.0.0.1", "localhost.example", "0.0.0.0",
                    "evillocalhost", "evil-localhost", "localhost.evil.example",
                    "127.0.0.1.example", "xn--localhost", "localhostx", "::ffff:10.0.0.1")
    assert [is_loopback(h) for h in not_loopback] == [False] * len(not_loopback)
    for url, token, warned in (("http://localhost:1", "t", 0), ("https://gedweb.invalid", "t", 0),
                               ("http://gedweb.invalid", None, 0),
                               ("http://gedweb.invalid", "t", 1)):
        warnings: list[str] = []
        client = Client(url, token, max_attempts=2, timeout=1, sleep=lambda _: None,
                        warn=warnings.append)
        for _ in range(2):
            with pytest.raises(NetworkError):
                client.request("GET", "/v1/projects/x")
        assert len(warnings) == warned, (url, token, warnings)
