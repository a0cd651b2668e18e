"""gunicorn.conf.py's worker (gedweb/server_worker.py): a request goes to a free worker.

A real gunicorn with gunicorn.conf.py and two single-thread workers serves
an app whose /sleep holds its thread for 0.4 s. Plain gthread lets a busy
worker accept a second connection and queue it behind the first while the
other worker idles; the balanced worker leaves it to the free one.
"""

from __future__ import annotations

import http.client
import os
import threading
import time
from pathlib import Path

import pytest

from tests.live_server import ServerProcess, free_port, gunicorn_command
from tests.site.sleepy_wsgi import HOLD_SECONDS

pytestmark = [pytest.mark.live_server, pytest.mark.slow]


@pytest.fixture
def two_workers(tmp_path: Path):
    port = free_port()
    env = dict(os.environ, PORT=str(port), WEB_CONCURRENCY="2", GUNICORN_THREADS="1",
               GUNICORN_ACCESS_LOG="", GEDWEB_DATA_DIR=str(tmp_path / "data"))
    command = gunicorn_command(tmp_path / "gunicorn.ctl", "tests.site.sleepy_wsgi:app")
    server = ServerProcess(command, env, port, tmp_path / "gunicorn.log")
    server.start()
    yield server
    server.stop()


def _get(port: int, path: str) -> tuple[int, str, str | None]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read().decode(), response.getheader("Connection")
    finally:
        conn.close()


def test_concurrent_requests_are_served_by_free_workers_at_once(two_workers):
    answers: list[tuple[str, float]] = []
    gate = threading.Barrier(2)

    def sleep() -> None:
        gate.wait()
        started = time.monotonic()
        status, pid, _ = _get(two_workers.port, "/sleep")
        assert status == 200
        answers.append((pid, time.monotonic() - started))

    for _ in range(5):
        answers.clear()
        threads = [threading.Thread(target=sleep) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # Two workers, two requests: each on its own worker, neither waited for the other.
        assert len({pid for pid, _ in answers}) == 2, answers
        assert max(seconds for _, seconds in answers) < 2 * HOLD_SECONDS, answers


def test_every_answer_closes_its_connection(two_workers):
    # keepalive = 0: the next request queues for a free worker again.
    status, _, connection = _get(two_workers.port, "/healthz")
    assert (status, connection) == (200, "close")
