"""The exact request each Client call sends, and how it reads the answer (gedweb/cli/client.py).

The CLI's own tests run ``gedweb`` in a subprocess against a real server;
these call the client in-process through httpx's MockTransport, which
records each request and answers what the test says, so a wrong path,
header, body, retry or error reading fails here.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from gedweb.cli import client as client_module
from gedweb.cli.client import (
    ApiError,
    Client,
    NetworkError,
    Response,
    new_idempotency_key,
    without_hashes,
)

Answer = tuple[int, Any, dict[str, str]]


class Recorder:
    """A MockTransport that records every request and answers from a queue (else 200 {})."""

    def __init__(self, *answers: Answer | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[httpx2.Request] = []
        self.slept: list[float] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        request.read()
        self.requests.append(request)
        answer = self.answers.pop(0) if self.answers else (200, {}, {})
        if isinstance(answer, Exception):
            raise answer
        status, body, headers = answer
        if isinstance(body, bytes):
            return httpx2.Response(status, content=body, headers=headers)
        return httpx2.Response(status, json=body, headers=headers)

    def client(self, **options: Any) -> Client:
        settings: dict[str, Any] = {"url": "http://gedweb.test:8787/base/", "token": "tok",
                                    "memory_token": "mem", "sleep": self.slept.append,
                                    "transport": httpx2.MockTransport(self.handle)}
        return Client(**(settings | options))

    @property
    def only(self) -> httpx2.Request:
        [request] = self.requests
        return request


def body(request: httpx2.Request) -> Any:
    return json.loads(request.content)


def target(request: httpx2.Request) -> str:
    """The path and query as sent, percent-escapes kept."""
    return request.url.raw_path.decode()


# --- each call's request ---------------------------------------------------------------------


def test_memory_add_posts_the_entry_with_one_idempotency_key():
    recorder = Recorder((201, {"seq": 1}, {}))
    answer = recorder.client().memory_add("my project", "decision", "Use X", source="adr",
                                          corrects=4, idempotency_key="key-1")
    assert answer == {"seq": 1}
    request = recorder.only
    assert (request.method, target(request)) == ("POST", "/base/v1/projects/my%20project/memory")
    assert body(request) == {"category": "decision", "content": "Use X", "source": "adr",
                             "corrects": 4}
    assert request.headers["Idempotency-Key"] == "key-1"
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["Authorization"] == "Bearer tok"
    assert request.headers["X-Memory-Token"] == "mem"
    assert request.headers["User-Agent"] == "gedweb-cli/1"
    assert request.headers["Accept"] == "application/json, text/plain;q=0.9, */*;q=0.1"


def test_memory_add_leaves_out_what_was_not_given_and_makes_its_own_key():
    recorder = Recorder((201, {}, {}))
    recorder.client().memory_add("p", "note", "text é")
    request = recorder.only
    assert body(request) == {"category": "note", "content": "text é"}
    assert "text é".encode() in request.content  # UTF-8 as is, not \\u escapes
    key = request.headers["Idempotency-Key"]
    assert key.startswith("gedweb-cli-") and len(key) == len("gedweb-cli-") + 32
    int(key.removeprefix("gedweb-cli-"), 16)


def test_a_keyed_post_in_flight_is_retried_with_the_same_key():
    recorder = Recorder((409, {"code": "idempotency_in_flight", "message": "wait"}, {}),
                        (201, {"id": "c1"}, {}))
    answer = recorder.client().candidate_propose("p", "note", "idea", source="me")
    assert answer == {"id": "c1"}
    first, second = recorder.requests
    assert target(first) == target(second) == "/base/v1/projects/p/memory/candidates"
    assert first.headers["Idempotency-Key"] == second.headers["Idempotency-Key"]
    assert body(first) == {"category": "note", "content": "idea", "source": "me"}
    assert len(recorder.slept) == 1 and 0.125 <= recorder.slept[0] <= 0.25


def test_another_conflict_is_not_retried():
    recorder = Recorder((409, {"code": "idempotency_key_reused", "message": "no"}, {}))
    with pytest.raises(ApiError) as raised:
        recorder.client().candidate_propose("p", "note", "idea")
    assert (raised.value.status, raised.value.code) == (409, "idempotency_key_reused")
    assert len(recorder.requests) == 1 and recorder.slept == []
    assert body(recorder.only) == {"category": "note", "content": "idea"}


def test_recall_posts_the_question_and_only_the_fields_given():
    recorder = Recorder((200, {"items": []}, {}))
    answer = recorder.client().memory_recall("p", "why X?", limit=3, mode=None)
    assert answer == {"items": []}
    assert (recorder.only.method, target(recorder.only)) == ("POST", "/base/v1/projects/p/recall")
    assert body(recorder.only) == {"q": "why X?", "limit": 3}


@pytest.mark.parametrize(("call", "path"), [
    (lambda c: c.project("p"), "/base/v1/projects/p"),
    (lambda c: c.candidates_page("p", limit=2), "/base/v1/projects/p/memory/candidates?limit=2"),
    (lambda c: c.documents("p"), "/base/v1/projects/p/documents"),
    (lambda c: c.documents("p", prefix="adr/"), "/base/v1/projects/p/documents?prefix=adr%2F"),
    (lambda c: c.document("p", "adr/0001 x.md"), "/base/v1/projects/p/documents/adr/0001%20x.md"),
    (lambda c: c.document("p", "a.md", revision=2),
     "/base/v1/projects/p/documents/a.md?revision=2"),
    (lambda c: c.work_page("p", status="open"), "/base/v1/projects/p/work?status=open"),
    (lambda c: c.work_get("p", "W-1"), "/base/v1/projects/p/work/W-1"),
    (lambda c: c.memory_page("p", limit=5), "/base/v1/projects/p/memory?limit=5"),
    (lambda c: c.memory_get("p", 7), "/base/v1/projects/p/memory/7"),
    (lambda c: c.governance("p", "W-1"), "/base/v1/projects/p/work/W-1/governance"),
])
def test_each_read_gets_its_path(call: Callable[[Client], Any], path: str):
    recorder = Recorder((200, {"answer": 1}, {}))
    assert call(recorder.client()) == {"answer": 1}
    assert (recorder.only.method, target(recorder.only)) == ("GET", path)
    assert "X-Memory-Token" not in recorder.only.headers  # only writes carry it
    assert recorder.only.content == b"" and "Content-Type" not in recorder.only.headers


@pytest.mark.parametrize(("call", "path"), [
    (lambda c: c.mirror_text("p"), "/base/v1/projects/p/memory.md"),
    (lambda c: c.standards("p"), "/base/v1/projects/p/standards"),
    (lambda c: c.context("p"), "/base/v1/projects/p/context"),
    (lambda c: c.context("p", work_id="W-1", task="fix it", budget=900, session="s1",
                         only="recalled"),
     "/base/v1/projects/p/context?work_id=W-1&task=fix+it&budget=900&session=s1&only=recalled"),
])
def test_each_text_read_answers_the_text(call: Callable[[Client], Any], path: str):
    recorder = Recorder((200, "# Text é\n".encode(), {"Content-Type": "text/markdown"}))
    assert call(recorder.client()) == "# Text é\n"
    assert (recorder.only.method, target(recorder.only)) == ("GET", path)


@pytest.mark.parametrize("decision", ["approve", "reject", "withdraw"])
def test_a_decision_posts_to_its_own_path_and_is_never_retried(decision):
    recorder = Recorder((503, {"code": "unavailable", "message": "later"}, {}))
    with pytest.raises(ApiError) as raised:
        recorder.client().candidate_decide("p", "c/1", decision)
    assert raised.value.status == 503
    assert (recorder.only.method, target(recorder.only)) == (
        "POST", f"/base/v1/projects/p/memory/candidates/c%2F1/{decision}")
    assert recorder.slept == []


def test_a_decision_answers_what_the_server_said():
    recorder = Recorder((200, {"seq": 9}, {}))
    assert recorder.client().candidate_decide("p", "c1", "approve") == {"seq": 9}


def test_an_unknown_decision_is_refused_before_any_request():
    recorder = Recorder()
    with pytest.raises(ValueError, match="unknown decision 'accept'"):
        recorder.client().candidate_decide("p", "c1", "accept")
    assert recorder.requests == []


def test_opening_work_is_posted_once_and_never_retried():
    recorder = Recorder((502, b"bad gateway", {}))
    with pytest.raises(ApiError) as raised:
        recorder.client().work_open("p", {"title": "T"})
    assert (raised.value.status, raised.value.code) == (502, "http_error")
    assert (recorder.only.method, target(recorder.only)) == ("POST", "/base/v1/projects/p/work")
    assert body(recorder.only) == {"title": "T"}
    recorder = Recorder((201, {"id": "W-1"}, {}))
    assert recorder.client().work_open("p", {"title": "T"}) == {"id": "W-1"}


def test_the_guard_posts_the_action():
    recorder = Recorder((200, {"allowed": True}, {}))
    assert recorder.client().guard("p", "W-1", "commit") == {"allowed": True}
    assert target(recorder.only) == "/base/v1/projects/p/work/W-1/governance/guard"
    assert body(recorder.only) == {"action": "commit"}


@pytest.mark.parametrize(("dry_run", "flag"), [(True, "true"), (False, "false")])
def test_a_push_sends_the_archive_as_gzip(dry_run, flag):
    recorder = Recorder((200, {"written": 0}, {}))
    answer = recorder.client().checkout_push("p", b"\x1f\x8b archive", name="tree",
                                             dry_run=dry_run)
    assert answer == {"written": 0}
    request = recorder.only
    assert (request.method, target(request)) == (
        "POST", f"/base/v1/projects/p/checkout?dry_run={flag}&name=tree")
    assert request.content == b"\x1f\x8b archive"
    assert request.headers["Content-Type"] == "application/gzip"


def test_a_push_without_dry_run_is_not_one():
    recorder = Recorder((200, {}, {}))
    recorder.client().checkout_push("p", b"x", name="tree")
    assert target(recorder.only) == "/base/v1/projects/p/checkout?dry_run=false&name=tree"


def test_a_pull_asks_for_gzip_and_answers_the_bytes_up_to_the_limit():
    recorder = Recorder((200, b"12345", {"Content-Type": "application/gzip"}))
    assert recorder.client().checkout_pull("p", max_bytes=5) == b"12345"
    assert target(recorder.only) == "/base/v1/projects/p/checkout"
    assert recorder.only.headers["Accept"] == "application/gzip"


def test_a_pull_past_the_limit_is_refused():
    recorder = Recorder((200, b"123456", {}))
    with pytest.raises(ApiError) as raised:
        recorder.client().checkout_pull("p", max_bytes=5)
    assert (raised.value.status, raised.value.code) == (200, "bad_response")
    assert raised.value.message == "the answer is larger than 5 bytes"


def test_a_streamed_answer_keeps_its_status_and_headers():
    recorder = Recorder((201, b"ok", {"X-Thing": "1"}))
    response = recorder.client().request("GET", "/x", max_bytes=10)
    assert (response.status, response.headers["x-thing"], response.body) == (201, "1", b"ok")


def test_memory_iter_newest_first_follows_before():
    recorder = Recorder((200, {"items": [{"seq": 5}], "next_cursor": 5}, {}),
                        (200, {"items": [{"seq": 4}], "next_cursor": None}, {}))
    items = list(recorder.client().memory_iter("p", page_size=1, order="desc"))
    assert items == [{"seq": 5}, {"seq": 4}]
    assert [target(r) for r in recorder.requests] == [
        "/base/v1/projects/p/memory?limit=1&order=desc",
        "/base/v1/projects/p/memory?limit=1&before=5&order=desc",
    ]


def test_memory_iter_oldest_first_follows_after_500_at_a_time():
    recorder = Recorder((200, {"items": [], "next_cursor": None}, {}))
    assert list(recorder.client().memory_iter("p")) == []
    assert target(recorder.only) == "/base/v1/projects/p/memory?limit=500&order=asc"


@pytest.mark.parametrize(("cursor", "position", "kind", "descending", "advances"), [
    (2, 1, int, False, True), (1, 1, int, False, False), (0, 1, int, False, False),
    (0, 1, int, True, True), (1, 1, int, True, False), (2, 1, int, True, False),
    ("b", "a", str, False, True), ("a", "a", str, False, False), ("a", "b", str, True, True),
    ("b", "b", str, True, False), (True, None, int, False, False), ("1", None, int, False, False),
    (1, None, int, False, True), (1, "a", int, False, False),
])
def test_a_cursor_advances_only_past_the_last_one(cursor, position, kind, descending, advances):
    assert client_module._advances(cursor, position, kind, descending=descending) is advances


# --- headers and tokens ----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_every_write_carries_the_memory_token(method):
    recorder = Recorder()
    recorder.client().request(method, "/x")
    assert recorder.only.headers["X-Memory-Token"] == "mem"


def test_without_tokens_no_token_header_is_sent():
    recorder = Recorder()
    recorder.client(token=None, memory_token=None).request("POST", "/x")
    assert "Authorization" not in recorder.only.headers
    assert "X-Memory-Token" not in recorder.only.headers


def test_extra_headers_are_sent_and_a_calls_own_headers_win():
    recorder = Recorder()
    client = recorder.client(extra_headers={"Host": "app.example", "X-A": "1"})
    client.request("GET", "/x", query={"a": 1, "b": None}, headers={"X-A": "2"})
    assert recorder.only.headers["Host"] == "app.example"
    assert recorder.only.headers["X-A"] == "2"
    assert target(recorder.only) == "/base/x?a=1"


def test_a_query_of_nothing_but_none_adds_no_question_mark():
    recorder = Recorder()
    recorder.client().request("GET", "/x", query={"a": None})
    assert target(recorder.only) == "/base/x"


def test_a_token_over_plain_http_to_another_host_is_warned_about_once():
    recorder, warned = Recorder(), []
    client = Client(url="http://gedweb.example", token="tok", sleep=recorder.slept.append,
                    warn=warned.append)
    client.transport = httpx2.MockTransport(recorder.handle)  # after the check, as a network
    client.request("GET", "/x")
    client.request("GET", "/x")
    assert warned == ["sending a token over plain http:// to gedweb.example, which is not this "
                      "machine; anyone on the network path can read it (use https://)"]


@pytest.mark.parametrize(("url", "tokens"), [
    ("https://gedweb.example", {"token": "tok"}),
    ("http://127.0.0.1:8787", {"token": "tok"}),
    ("http://gedweb.example", {}),
])
def test_no_warning_over_https_to_loopback_or_without_a_token(url, tokens):
    recorder, warned = Recorder(), []
    client = Client(url=url, warn=warned.append, **tokens)
    client.transport = httpx2.MockTransport(recorder.handle)
    client.request("GET", "/x")
    assert warned == [] and len(recorder.requests) == 1


def test_the_memory_token_alone_is_warned_about_too():
    recorder, warned = Recorder(), []
    client = Client(url="http://gedweb.example", memory_token="mem", warn=warned.append)
    client.transport = httpx2.MockTransport(recorder.handle)
    client.request("GET", "/x")
    assert len(warned) == 1


@pytest.mark.parametrize("url", ["ftp://gedweb.example", "gedweb.example", "http://"])
def test_a_url_that_is_not_http_with_a_host_is_refused(url):
    with pytest.raises(ValueError, match="--url must be an http"):
        Client(url=url)


def test_close_ends_the_pool_and_the_next_request_opens_another():
    recorder = Recorder()
    client = recorder.client()
    client.request("GET", "/x")
    pool = client._http
    assert pool is not None
    client.close()
    assert client._http is None and pool.is_closed
    client.request("GET", "/x")
    assert client._http is not None and client._http is not pool
    assert len(recorder.requests) == 2


# --- retries and errors ----------------------------------------------------------------------


def test_a_transient_status_is_retried_with_capped_backoff_then_raised():
    answers = [(503, {"code": "unavailable", "message": f"try {n}"}, {}) for n in range(7)]
    recorder = Recorder(*answers)
    with pytest.raises(ApiError) as raised:
        recorder.client(max_attempts=7).request("GET", "/x")
    assert raised.value.message == "try 6" and len(recorder.requests) == 7
    ceilings = [0.25, 0.5, 1.0, 2.0, 4.0, 4.0]
    assert len(recorder.slept) == 6
    for slept, ceiling in zip(recorder.slept, ceilings, strict=True):
        assert ceiling / 2 <= slept <= ceiling


@pytest.mark.parametrize("status", [502, 504])
def test_a_gateway_error_is_retried_until_an_answer(status):
    recorder = Recorder((status, b"", {}), (200, {"ok": 1}, {}))
    assert recorder.client().request("GET", "/x").json() == {"ok": 1}
    assert len(recorder.requests) == 2


def test_without_retry_one_attempt_is_made():
    recorder = Recorder(httpx2.ConnectError("refused"))
    with pytest.raises(NetworkError) as raised:
        recorder.client().request("GET", "/x", retry=False)
    assert str(raised.value) == (
        "cannot reach http://gedweb.test:8787/base/: refused (after 1 attempt)")
    assert recorder.slept == []


def test_an_unreachable_server_is_a_network_error_after_every_attempt():
    recorder = Recorder(*[httpx2.ConnectError("refused")] * 3)
    with pytest.raises(NetworkError) as raised:
        recorder.client(max_attempts=3).request("GET", "/x")
    assert str(raised.value) == (
        "cannot reach http://gedweb.test:8787/base/: refused (after 3 attempts)")
    assert len(recorder.slept) == 2


def test_an_error_body_becomes_the_errors_fields():
    recorder = Recorder((429, {"code": "rate_limited", "message": "slow down",
                               "fields": {"limit": ["100/hour"]}}, {"Retry-After": "30"}))
    with pytest.raises(ApiError) as raised:
        recorder.client().request("GET", "/x")
    error = raised.value
    assert (error.status, error.code, error.message) == (429, "rate_limited", "slow down")
    assert error.fields == {"limit": ["100/hour"]} and error.retry_after == "30"
    assert str(error) == "429 rate_limited: slow down"
    assert error.one_line() == '429 rate_limited: slow down {"limit":["100/hour"]}'


def test_an_error_without_a_message_has_an_empty_one():
    recorder = Recorder((400, {"code": "invalid"}, {}))
    with pytest.raises(ApiError) as raised:
        recorder.client().request("GET", "/x")
    assert (raised.value.code, raised.value.message, raised.value.fields) == ("invalid", "", None)


@pytest.mark.parametrize(("status", "payload", "message"), [
    (418, b"<html>teapot</html>", "I'm a Teapot"),
    (404, b'{"code": 7}', "Not Found"),
    (599, b"\xff", "unexpected response"),
])
def test_an_error_without_a_json_code_is_an_http_error_named_by_its_status(status, payload,
                                                                           message):
    recorder = Recorder((status, payload, {"Retry-After": "5"}))
    with pytest.raises(ApiError) as raised:
        recorder.client().request("GET", "/x")
    assert (raised.value.status, raised.value.code, raised.value.message) == (
        status, "http_error", message)
    assert raised.value.retry_after == "5"


def test_one_line_folds_every_whitespace_run():
    error = ApiError(400, "invalid", "two\nlines\t here", {"content": ["é  x"]})
    assert error.one_line() == '400 invalid: two lines here {"content":["é x"]}'
    assert ApiError(400, "invalid", "m").one_line() == "400 invalid: m"


def refused() -> OSError:
    error = OSError("wrapped")
    error.__cause__ = ConnectionRefusedError()
    return error


def reset_in_context() -> OSError:
    error = OSError("wrapped")
    error.__context__ = ConnectionResetError()
    return error


@pytest.mark.parametrize(("exc", "phrase"), [
    (httpx2.ConnectTimeout("t"), "timed out"),
    (httpx2.RemoteProtocolError("r"), "connection closed before a response"),
    (refused(), "connection refused"),
    (reset_in_context(), "connection closed before a response"),
    (TimeoutError(), "timed out"),
    (socket.gaierror(-2, "Name or service not known"), "unknown host"),
    (OSError("no\n route"), "no route"),
    (OSError(), "OSError"),
])
def test_a_network_failure_is_named_in_a_short_phrase(exc, phrase):
    assert client_module._describe(exc) == phrase


# --- small helpers ---------------------------------------------------------------------------


def test_hashes_are_left_out_and_everything_else_kept():
    record = {"seq": 1, "prev_hash": "a", "hash": "b", "content_sha256": "c", "content": "x"}
    assert without_hashes(record) == {"seq": 1, "content": "x"}


def test_each_idempotency_key_is_new():
    assert new_idempotency_key() != new_idempotency_key()


def test_a_response_reads_as_utf8_text_and_json():
    response = Response(200, {}, '{"a": "é"}'.encode())
    assert response.json() == {"a": "é"} and response.text == '{"a": "é"}'
