"""Client.iter_items, the one way the CLI reads a whole listing."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from gedweb.cli.client import ApiError, Client
from tests.cli.conftest import LiveServer


def test_it_follows_the_cursor_of_any_listing_to_its_end(gedweb_server: LiveServer) -> None:
    token = gedweb_server.new_project("cli-pages")
    client = Client(url=gedweb_server.url, token=token)
    listing = client.project_path("cli-pages", "memory", "candidates")
    proposed = [
        client.request("POST", listing,
                       json_body={"category": "note", "content": f"idea {n}"}).json()["id"]
        for n in range(3)
    ]
    candidates = list(client.iter_items(listing, page_size=1))
    assert [c["id"] for c in candidates] == proposed


def test_an_empty_listing_is_one_request_and_no_items(gedweb_server: LiveServer) -> None:
    token = gedweb_server.new_project("cli-pages-empty")
    client = Client(url=gedweb_server.url, token=token)
    assert list(client.memory_iter("cli-pages-empty", page_size=2)) == []


@contextmanager
def listing_server(pages: dict[str, Any]) -> Iterator[tuple[str, list[str | None]]]:
    """Answers each listing request with pages[after]; records every `after` it was sent."""
    asked: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            after = parse_qs(urlsplit(self.path).query).get("after", [None])[0]
            asked.append(after)
            payload = json.dumps(pages[str(after)]).encode()
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


def test_a_string_cursor_is_followed_when_the_listing_has_string_cursors() -> None:
    pages = {"None": {"items": [{"work_id": "w1"}], "next_cursor": "w1"},
             "w1": {"items": [{"work_id": "w2"}], "next_cursor": None}}
    with listing_server(pages) as (url, asked):
        items = list(Client(url=url).iter_items("/v1/projects/p/work", page_size=1,
                                                cursor_type=str))
    assert [item["work_id"] for item in items] == ["w1", "w2"]
    assert asked == [None, "w1"]


@pytest.mark.parametrize("pages", [
    # the server hands back the cursor it was given: following it would never end
    {"None": {"items": [{}], "next_cursor": 7}, "7": {"items": [{}], "next_cursor": 7}},
    # a cursor that goes backwards
    {"None": {"items": [{}], "next_cursor": 7}, "7": {"items": [{}], "next_cursor": 3}},
    # a cursor of another type than the listing's
    {"None": {"items": [{}], "next_cursor": "7"}},
    {"None": {"items": [{}], "next_cursor": True}},
], ids=["repeated", "backwards", "string", "bool"])
def test_a_cursor_that_does_not_advance_is_refused(pages: dict[str, Any]) -> None:
    with listing_server(pages) as (url, asked):
        with pytest.raises(ApiError, match="next_cursor does not advance") as refused:
            list(Client(url=url).iter_items("/v1/projects/p/memory", page_size=1))
    assert refused.value.code == "bad_response"
    assert len(asked) == len(pages)


def test_a_page_without_an_items_array_is_refused() -> None:
    with listing_server({"None": {"next_cursor": None}}) as (url, _):
        with pytest.raises(ApiError, match="no items array"):
            list(Client(url=url).iter_items("/v1/projects/p/memory", page_size=1))
