"""`gedweb hook session-start|prompt|session-end` against a live server, as Claude Code runs them.

Each hook is the installed `gedweb` fed Claude Code's documented hook input
on stdin. The server is tests/live_server.py's gunicorn with the recall
indexer on and the suite's hashing embedder, so recalled entries have
their cosines. The output is checked to be exactly the JSON Claude Code
reads; failures (server down, silent, refusing; bad input) exit 0 with
nothing on stdout, one line on stderr and no token in it.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from governance.context import PROJECT_BOUNDARY, PROMPT_LEAD
from tests.cli.conftest import GEDWEB
from tests.live_server import LiveGunicorn, free_port

pytestmark = [pytest.mark.live_server, pytest.mark.timeout(300)]

PROJECT = "hooks-shop"
SESSION = "5f0c1d2e-3a4b-4c5d-8e9f-0a1b2c3d4e5f"
FACTS = [
    ("decision", "Orders stay on PostgreSQL 16; the reporting replica lags a minute."),
    ("bug", "The upload client resets connections because nginx client_max_body_size was 1m."),
    ("gotcha", "Celery workers need the solo pool on Windows laptops."),
]


class Server:
    def __init__(self, gunicorn: LiveGunicorn, token: str) -> None:
        self.gunicorn = gunicorn
        self.token = token

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.gunicorn.port}"

    def deliveries(self) -> list[tuple[Any, ...]]:
        return self.gunicorn.sql(
            "SELECT session, recalled, sha256, size FROM governance_contextdelivery ORDER BY id")

    def candidates(self) -> list[tuple[Any, ...]]:
        return self.gunicorn.sql(
            "SELECT category, source, content, status FROM memory_memorycandidate ORDER BY id")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("hooks-live")
    with LiveGunicorn.running(tmp, engine="sqlite", WEB_CONCURRENCY="1",
                              GEDWEB_RECALL_MODEL="hashing",
                              GEDWEB_RECALL_INDEXER="auto") as gunicorn:
        token = gunicorn.new_project(PROJECT)
        for category, content in FACTS:
            status, body, _ = gunicorn.append(PROJECT, token, {"category": category,
                                                               "content": content})
            assert status == 201, body
        deadline = time.monotonic() + 60
        while True:  # the indexer beside the server gives each entry its vector
            status, body, _ = gunicorn.request(
                "GET", f"/v1/projects/{PROJECT}/recall?q=orders", token)
            assert status == 200, body
            if body["index"]["through_seq"] == len(FACTS):
                break
            assert time.monotonic() < deadline, body
            time.sleep(0.2)
        yield Server(gunicorn, token)


def hook(event: str, stdin: Any, *, url: str, token: str | None,
         extra: tuple[str, ...] = (), **env: str) -> subprocess.CompletedProcess[str]:
    environment = {"PATH": "/usr/bin:/bin", "GEDWEB_HOOK_DEADLINE": "30", **env}
    if token is not None:
        environment["GEDWEB_TOKEN"] = token
    text = stdin if isinstance(stdin, str) else json.dumps(stdin)
    return subprocess.run([str(GEDWEB), "hook", event, "--project", PROJECT, "--url", url,
                           *extra], input=text, env=environment, capture_output=True,
                          text=True, timeout=60, check=False)


def session_start_input(source: str, cwd: str = "/tmp") -> dict[str, Any]:
    return {"session_id": SESSION, "transcript_path": "/tmp/t.jsonl", "cwd": cwd,
            "permission_mode": "default", "hook_event_name": "SessionStart",
            "source": source, "model": "claude-sonnet-4-5"}


def prompt_input(prompt: str) -> dict[str, Any]:
    return {"session_id": SESSION, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
            "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
            "prompt": prompt}


def _context_of(done: subprocess.CompletedProcess[str], event_name: str) -> str:
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("\n") and done.stdout.count("\n") == 1
    output = json.loads(done.stdout)
    # Exactly the shape Claude Code reads, nothing more.
    assert list(output) == ["hookSpecificOutput"]
    assert list(output["hookSpecificOutput"]) == ["hookEventName", "additionalContext"]
    assert output["hookSpecificOutput"]["hookEventName"] == event_name
    context: str = output["hookSpecificOutput"]["additionalContext"]
    return context


# --- session-start ---------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["startup", "resume", "clear", "compact"])
def test_session_start_prints_the_framed_bundle_and_logs_the_session(server, source):
    before = len(server.deliveries())
    done = hook("session-start", session_start_input(source), url=server.url,
                token=server.token)
    context = _context_of(done, "SessionStart")
    assert context.startswith(PROJECT_BOUNDARY)
    assert FACTS[0][1] in context  # the recent memory, in its durable-data frame
    assert done.stderr == ""
    rows = server.deliveries()
    assert len(rows) == before + 1
    session, recalled, _sha256, size = rows[-1]
    assert session == SESSION and recalled is None
    assert size == len(context.encode("utf-8"))


# --- prompt ----------------------------------------------------------------------------------


def test_prompt_prints_the_entry_that_answers_it_framed_as_data(server):
    before = len(server.deliveries())
    done = hook("prompt", prompt_input("why does the upload client reset connections?"),
                url=server.url, token=server.token)
    context = _context_of(done, "UserPromptSubmit")
    assert context.startswith(PROMPT_LEAD + "\n\n")
    assert FACTS[1][1] in context
    begin = context.index("<<<GED_")
    assert 'trust=durable-data file="memory: recalled for the task, best first">>>' in context
    assert context.index(FACTS[1][1]) > begin
    assert context.rstrip("\n").split("\n")[-1].endswith(":END>>>")
    session, recalled, _sha256, _size = server.deliveries()[-1]
    assert len(server.deliveries()) == before + 1
    assert session == SESSION and json.loads(recalled)[0] == 2


def test_prompt_prints_nothing_when_nothing_is_relevant_and_logs_nothing(server):
    before = len(server.deliveries())
    done = hook("prompt", prompt_input("zygote quasar marmalade xylophone"), url=server.url,
                token=server.token)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert len(server.deliveries()) == before


@pytest.mark.parametrize("data", [
    {"session_id": SESSION, "hook_event_name": "UserPromptSubmit"},
    {"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": "   "},
    {"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": 12},
])
def test_prompt_without_a_prompt_prints_nothing(server, data):
    before = len(server.deliveries())
    done = hook("prompt", data, url=server.url, token=server.token)
    assert (done.returncode, done.stdout) == (0, "")
    assert len(server.deliveries()) == before


def test_a_long_prompt_is_recalled_on_its_first_1000_characters(server):
    # GET /context takes a task of at most 1,000 characters: a longer prompt is cut, not refused.
    text = "why does the upload client reset connections? " + "x" * 5_000
    done = hook("prompt", prompt_input(text), url=server.url, token=server.token)
    assert FACTS[1][1] in _context_of(done, "UserPromptSubmit")
    assert done.stderr == ""


# --- failing open ----------------------------------------------------------------------------


def _fails_open(done: subprocess.CompletedProcess[str], *secrets: str) -> str:
    assert done.returncode == 0
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("gedweb: hook")
    for secret in secrets:
        assert secret not in done.stderr
    return done.stderr


@pytest.mark.parametrize("event", ["session-start", "prompt", "session-end"])
def test_a_server_that_is_down_gives_no_context_and_exit_0(event, tmp_path):
    token = "gwp_" + "s3cret" * 8
    data = (prompt_input("orders database") if event == "prompt"
            else session_start_input("startup", str(tmp_path)))
    (tmp_path / ".gedweb").mkdir()
    (tmp_path / ".gedweb" / "handoff.md").write_text("Left for the next session.\n")
    done = hook(event, data, url=f"http://127.0.0.1:{free_port()}", token=token)
    assert "connection refused" in _fails_open(done, token)
    # The handoff stays where it was, for the next session's end.
    assert (tmp_path / ".gedweb" / "handoff.md").exists()


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()


@pytest.mark.parametrize("event", ["session-start", "prompt"])
def test_a_server_that_never_answers_gives_no_context_and_exit_0(event, silent_server):
    data = prompt_input("orders") if event == "prompt" else session_start_input("startup")
    done = hook(event, data, url=silent_server, token="gwp_" + "x" * 40,
                GEDWEB_HOOK_DEADLINE="0.5")
    _fails_open(done, "gwp_" + "x" * 40)


@pytest.mark.parametrize("event", ["session-start", "prompt"])
def test_a_server_that_refuses_the_token_gives_no_context_and_exit_0(server, event):
    token = "gwp_" + "wrong" * 9
    data = prompt_input("orders database") if event == "prompt" else session_start_input("clear")
    done = hook(event, data, url=server.url, token=token)
    assert "401 unauthenticated" in _fails_open(done, token)


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '"text"'])
def test_bad_input_gives_no_context_and_exit_0(server, stdin):
    done = hook("prompt", stdin, url=server.url, token=server.token)
    if stdin == "":
        # An empty input is an input without a prompt: nothing to recall.
        assert (done.returncode, done.stdout) == (0, "")
    else:
        _fails_open(done, server.token)


@pytest.mark.parametrize("extra", [("--budget", "0"), ("--budget", "x"), ("--bogus",)])
def test_bad_options_still_exit_0(server, extra):
    done = hook("prompt", prompt_input("orders"), url=server.url, token=server.token,
                extra=extra)
    _fails_open(done, server.token)


def test_a_missing_project_exits_0():
    done = subprocess.run([str(GEDWEB), "hook", "prompt"], input="{}", capture_output=True,
                          text=True, timeout=60, check=False,
                          env={"PATH": "/usr/bin:/bin"})
    _fails_open(done)


# --- session-end -----------------------------------------------------------------------------


def session_end_input(cwd: Path) -> dict[str, Any]:
    return {"session_id": SESSION, "transcript_path": "/tmp/t.jsonl", "cwd": str(cwd),
            "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}


def test_session_end_without_a_handoff_proposes_nothing(server, tmp_path):
    before = server.candidates()
    done = hook("session-end", session_end_input(tmp_path), url=server.url, token=server.token)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert server.candidates() == before


def test_session_end_proposes_the_handoff_file_once_and_moves_it_aside(server, tmp_path):
    (tmp_path / ".gedweb").mkdir()
    handoff = tmp_path / ".gedweb" / "handoff.md"
    handoff.write_text("Done: the upload limit. Open: the replica lag alert.\n")
    before = server.candidates()
    done = hook("session-end", session_end_input(tmp_path), url=server.url, token=server.token)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr.startswith("gedweb: handoff proposed for review: candidate ")
    added = server.candidates()[len(before):]
    assert added == [("handoff", "gedweb hook session-end",
                      f"Handoff from agent session {SESSION}:\n\n"
                      "Done: the upload limit. Open: the replica lag alert.\n", "pending")]
    assert not handoff.exists()
    assert (tmp_path / ".gedweb" / "handoff.proposed.md").read_text().startswith("Done:")
    # Run again: the file is gone, so nothing more is proposed.
    again = hook("session-end", session_end_input(tmp_path), url=server.url, token=server.token)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    assert server.candidates()[len(before):] == added


def test_session_end_takes_the_handoff_from_the_environment(server, tmp_path):
    before = server.candidates()
    done = hook("session-end", session_end_input(tmp_path), url=server.url, token=server.token,
                GEDWEB_HANDOFF="Check the nightly export first.")
    assert done.returncode == 0
    added = server.candidates()[len(before):]
    assert [row[2] for row in added] == [
        f"Handoff from agent session {SESSION}:\n\nCheck the nightly export first.\n"]
    # The same handoff twice (the hook run again) is one candidate.
    hook("session-end", session_end_input(tmp_path), url=server.url, token=server.token,
         GEDWEB_HANDOFF="Check the nightly export first.")
    assert server.candidates()[len(before):] == added


@pytest.mark.parametrize("content", ["   \n\n", "x" * 32_001])
def test_a_blank_or_oversized_handoff_is_not_proposed(server, tmp_path, content):
    (tmp_path / ".gedweb").mkdir()
    (tmp_path / ".gedweb" / "handoff.md").write_text(content)
    before = server.candidates()
    done = hook("session-end", session_end_input(tmp_path), url=server.url, token=server.token)
    assert (done.returncode, done.stdout) == (0, "")
    assert server.candidates() == before
    assert (tmp_path / ".gedweb" / "handoff.md").exists()


def test_the_plain_http_warning_joins_the_one_stderr_line():
    token = "gwp_" + "p1ain" * 8
    done = hook("prompt", prompt_input("orders"), url="http://gedweb.invalid:8787", token=token,
                GEDWEB_HOOK_DEADLINE="2")
    line = _fails_open(done, token)
    assert "(warning: sending a token over plain http:// to gedweb.invalid" in line


def test_a_long_prompt_in_a_wide_script_still_fits_the_request_line(server):
    # 1,000 CJK characters are 9,000 bytes percent-encoded: over gunicorn's request line.
    text = "why does the upload client reset connections? " + "接続" * 600
    done = hook("prompt", prompt_input(text), url=server.url, token=server.token)
    assert done.returncode == 0 and done.stderr == ""
