"""gunicorn's gthread worker, accepting a connection only while it has a free thread.

A gthread worker's main thread accepts every connection it is offered,
whether or not a thread is free to serve it, and keeps a keep-alive
connection for good. Under 16 keep-alive clients and 5 single-thread
workers, the first worker to wake took 10 of the 16 connections while
another served 1: those 10 clients waited behind each other (p50 300 ms)
while two workers idled, and the 16-client p99 was 5 to 9 times the p50
(bench/overhead.py; docs/performance.md, issue 20's section).

This worker stops listening while all its threads are busy, so a new
connection waits in the kernel's accept queue for a worker that can serve
it at once; gunicorn.conf.py turns keep-alive off, so every request comes
back to that queue. Everything else is gthread's own: the poller for
pending connections (browsers' preconnects tie up no thread), the timeouts
and graceful shutdown. gunicorn.conf.py names it as worker_class.
"""

from __future__ import annotations

import json
from typing import Any

from gunicorn import util  # type: ignore[import-untyped]
from gunicorn.http.errors import (  # type: ignore[import-untyped]
    LimitRequestHeaders,
    LimitRequestLine,
)
from gunicorn.workers.gthread import ThreadWorker  # type: ignore[import-untyped]

# What gunicorn refuses before the application sees the request, as the API
# answers everything else: the JSON error shape, not gunicorn's HTML page.
# gunicorn has not read the path yet (the line itself is what it refused), so
# every such answer is JSON: the API is what sends long query strings.
_TOO_LARGE = {
    LimitRequestLine: (414, "URI Too Long",
                       "the request line is longer than the server accepts (8190 bytes)"),
    LimitRequestHeaders: (431, "Request Header Fields Too Large",
                          "the request headers are larger than the server accepts"),
}


class BalancedThreadWorker(ThreadWorker):  # type: ignore[misc]
    def init_process(self) -> None:
        # Requests handed to the thread pool and not finished yet; only the
        # worker's main thread (its poller loop) changes it.
        self.busy_threads = 0
        super().init_process()

    def enqueue_req(self, conn: Any) -> None:
        self.busy_threads += 1
        super().enqueue_req(conn)

    def finish_request(self, conn: Any, fut: Any) -> None:
        self.busy_threads -= 1
        super().finish_request(conn, fut)

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        # gthread's loop has just enabled accepting if it holds fewer than
        # worker_connections; take that back while no thread is free.
        if self.busy_threads >= self.cfg.threads:
            self.set_accept_enabled(False)
        super().wait_for_and_dispatch_events(timeout)

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        refused = next((answer for kind, answer in _TOO_LARGE.items()
                        if isinstance(exc, kind)), None)
        if refused is None:
            super().handle_error(req, client, addr, exc)
            return
        from gedweb.exceptions import error_body  # the app is loaded in a worker

        status, reason, message = refused
        self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
        body = json.dumps(error_body("bad_request", message)).encode()
        head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
        try:
            util.write_nonblock(client, head.encode("latin-1") + body)
        except Exception:  # noqa: BLE001 - the client may be gone; gunicorn does the same
            self.log.debug("Failed to send error message.")
