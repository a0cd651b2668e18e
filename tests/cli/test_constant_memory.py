"""`gedweb memory verify` and `memory list --all` hold one page, not the record.

A project of a million entries is hundreds of megabytes of JSON: the CLI
must check and print each page as it arrives (bench/million.py measures it
at that size). Here a stand-in server answers the listing of a valid chain,
and the CLI's peak memory over 30,000 entries is compared with its peak over
1,000; kept in a list, the extra 29,000 entries took 60 MB or more.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from gedweb.cli.main import compact_json, main
from gedweb.lib.chain import GENESIS_HASH, entry_hash
from gedweb.lib.digest import sha256_text
from tests.cli.conftest import GEDWEB
from tests.peak_rss import PeakRss

SMALL, LARGE = 1_000, 30_000
PAGE = 500
# Growth of the peak RSS from SMALL to LARGE entries that still counts as one
# page held: a page of 500 entries is well under 5 MB decoded.
MAX_GROWTH_MIB = 20


def chain(project: str, count: int) -> list[dict[str, Any]]:
    """``count`` entries of a valid chain (format 2), as GET .../memory lists them."""
    start = datetime(2026, 11, 30, 8, tzinfo=UTC)
    entries, prev = [], GENESIS_HASH
    for seq in range(1, count + 1):
        content = f"Entry {seq} of {project}: " + "lorem ipsum dolor " * 12
        entry = {
            "id": str(uuid.UUID(int=seq)), "seq": seq, "project_id": project,
            "category": "note", "content": content, "source": "test", "corrects": None,
            "author": "tester",
            "created_at": (start + timedelta(milliseconds=seq)).isoformat(timespec="microseconds"),
            "content_sha256": sha256_text(content), "redacts": None, "prev_hash": prev,
            "corrected_by": [],
        }
        entry["hash"] = prev = entry_hash(prev, entry)
        entries.append(entry)
    return entries


@contextmanager
def listing_server(projects: dict[str, list[dict[str, Any]]],
                   ) -> Iterator[tuple[str, list[tuple[str, int]]]]:
    """GET /v1/projects/{p}/memory?limit=&after= over ``projects``; records each request."""
    asked: list[tuple[str, int]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            url = urlsplit(self.path)
            project = url.path.split("/")[3]
            query = parse_qs(url.query)
            after = int(query.get("after", ["0"])[0])
            limit = min(int(query.get("limit", ["100"])[0]), PAGE)
            asked.append((project, after))
            items = projects[project][after:after + limit]
            more = after + limit < len(projects[project])
            payload = json.dumps({"items": items,
                                  "next_cursor": items[-1]["seq"] if more else None}).encode()
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
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def chains() -> Iterator[str]:
    with listing_server({"small": chain("small", SMALL), "large": chain("large", LARGE)}) as (
            url, _):
        yield url


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB is Linux's")
@pytest.mark.parametrize("command", [
    ("memory", "verify"),
    ("memory", "list", "--all"),
    ("memory", "list", "--all", "--format", "text"),
], ids=["verify", "list-all-json", "list-all-text"])
def test_the_cli_reads_a_whole_record_in_the_memory_of_one_page(
        chains: str, command: tuple[str, ...]) -> None:
    small_peak, small_out = run_measured(chains, *command, "--project", "small")
    large_peak, large_out = run_measured(chains, *command, "--project", "large")
    if command[1] == "verify":
        assert json.loads(large_out)["ok"] is True
        assert json.loads(large_out)["entries"] == LARGE
    elif "text" in command:
        assert len(large_out.splitlines()) == LARGE
    else:
        assert len(json.loads(large_out)["items"]) == LARGE
    assert large_peak - small_peak < MAX_GROWTH_MIB, (small_peak, large_peak)


def run_measured(url: str, *args: str) -> tuple[float, bytes]:
    """Run the installed CLI to its end: (the peak resident set of that process, in MiB, stdout)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEDWEB_")}
    run = PeakRss([str(GEDWEB), *args, "--url", url], env=env, stdin=subprocess.DEVNULL,
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = run.proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        run.kill()
        raise
    status, peak = run.wait()
    assert status == 0, err.decode()
    return peak, out


class WritesSeen:
    """stdout that notes how many pages the server had answered at each write."""

    def __init__(self, asked: list[tuple[str, int]]) -> None:
        self.asked = asked
        self.writes: list[tuple[int, str]] = []

    def write(self, text: str) -> int:
        self.writes.append((len(self.asked), text))
        return len(text)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("output", ["json", "text"])
def test_list_all_prints_each_page_before_it_asks_for_the_next(
        monkeypatch: pytest.MonkeyPatch, output: str) -> None:
    entries = chain("paged", 5)
    with listing_server({"paged": entries}) as (url, asked):
        seen = WritesSeen(asked)
        monkeypatch.setattr(sys, "stdout", seen)
        assert main(["memory", "list", "--all", "--project", "paged", "--limit", "2",
                     "--url", url, "--format", output]) == 0
    assert asked == [("paged", 0), ("paged", 2), ("paged", 4)]
    first_entry_written = next(pages for pages, text in seen.writes if '"seq":1' in text
                               or text.startswith("#1 "))
    assert first_entry_written == 1
    text = "".join(written for _, written in seen.writes)
    lean = [{k: v for k, v in entry.items() if k not in ("prev_hash", "hash", "content_sha256")}
            for entry in entries]
    if output == "json":
        # Byte for byte what printing the whole list at once wrote.
        assert text == compact_json({"items": lean, "next_cursor": None}) + "\n"
    else:
        assert [line.split(" ", 1)[0] for line in text.splitlines()] == [
            f"#{seq}" for seq in range(1, 6)]
