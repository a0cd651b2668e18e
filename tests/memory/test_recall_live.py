"""The indexer as `make run` starts it: gunicorn's master runs it beside the workers.

A real gunicorn on the suite's database with the indexer on: an entry
appended over HTTP becomes recallable by meaning without anyone running a
command; an indexer killed is started again; a second server on the same
database runs a standby indexer that takes over when the first server
stops, never both indexing at once.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.live_server import LiveGunicorn

pytestmark = [pytest.mark.live_server, pytest.mark.slow, pytest.mark.timeout(300)]


def _processes() -> dict[int, tuple[int, list[bytes]]]:
    """pid -> (parent pid, command line) of every process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parent = next(int(line.split()[1]) for line in status.splitlines()
                      if line.startswith("PPid:"))
        found[int(entry.name)] = (parent, command)
    return found


def _indexers(server: LiveGunicorn) -> list[int]:
    """The pids of the indexers the server's master started (under its supervisor)."""
    processes = _processes()
    supervisors = {pid for pid, (parent, command) in processes.items()
                   if parent == server.proc.pid and b"gedweb.supervise" in command}
    return [pid for pid, (parent, command) in processes.items()
            if parent in supervisors and b"--follow" in command and b"index" in command]


def _wait(condition: Any, seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {seconds} s")


def _semantic_rank(server: LiveGunicorn, token: str, text: str) -> Any:
    status, body, _ = server.request(
        "GET", "/v1/projects/live/recall?mode=semantic&limit=5&q=" + text.replace(" ", "+"),
        token)
    assert status == 200, body
    return body


def test_an_append_becomes_recallable_by_meaning_and_a_killed_indexer_comes_back(
        tmp_path: Path) -> None:
    with LiveGunicorn.running(tmp_path, GEDWEB_RECALL_INDEXER="auto",
                              GEDWEB_RECALL_MODEL="hashing") as server:
        token = server.new_project("live")
        first = _wait(lambda: _indexers(server))
        assert len(first) == 1
        status, entry, _ = server.append("live", token, {
            "category": "note", "content": "kestrel migrations ran before the web containers"})
        assert status == 201, entry
        body = _wait(lambda: (b := _semantic_rank(server, token, "kestrel migrations"))
                     ["index"]["through_seq"] >= 1 and b)
        assert body["items"][0]["seq"] == 1
        assert body["items"][0]["ranks"]["semantic"] == 1
        assert body["index"]["head_seq"] == 1

        os.kill(first[0], signal.SIGKILL)
        second = _wait(lambda: [pid for pid in _indexers(server) if pid != first[0]])
        assert len(second) == 1
        server.append("live", token, {"category": "note",
                                      "content": "osprey cache warms after each deploy"})
        body = _wait(lambda: (b := _semantic_rank(server, token, "osprey cache"))
                     ["index"]["through_seq"] >= 2 and b)
        assert body["items"][0]["seq"] == 2
        assert "recall indexer exited" in server.log_text()
    # The server stopped its indexer with it.
    assert not _indexers(server)


def test_two_servers_on_one_database_index_one_at_a_time(tmp_path: Path) -> None:
    env = {"GEDWEB_RECALL_INDEXER": "auto", "GEDWEB_RECALL_MODEL": "hashing"}
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    with LiveGunicorn.running(tmp_path / "one", **env) as one:
        token = one.new_project("live")
        other = LiveGunicorn(tmp_path / "two", one.engine, **env)
        other.env["DATABASE_URL"] = one.database_url
        other.start()
        try:
            _wait(lambda: _indexers(one) and _indexers(other))
            _wait(lambda: "following the record" in one.log_text()
                  + other.log_text())
            time.sleep(3)  # a standby retries every 2 s: it must not start following
            followers = [s for s in (one, other) if "following the record" in s.log_text()]
            assert len(followers) == 1
            leader = followers[0]
            standby = other if leader is one else one
            one.append("live", token, {"category": "note", "content": "heron queue drains"})
            _wait(lambda: _semantic_rank(one, token, "heron queue")["index"]["through_seq"])
            leader.stop()
            _wait(lambda: "following the record" in standby.log_text())
            standby.append("live", token,
                           {"category": "note", "content": "plover logs rotate daily"})
            body = _wait(lambda: (b := _semantic_rank(standby, token, "plover logs"))
                         ["index"]["through_seq"] >= 2 and b)
            assert body["items"][0]["seq"] == 2
        finally:
            other.stop()
