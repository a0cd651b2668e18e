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

from typing import Any

from gunicorn.workers.gthread import ThreadWorker  # type: ignore[import-untyped]


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
