"""A WSGI app for tests/site/test_server_worker.py: /healthz, and /sleep that holds its thread."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

HOLD_SECONDS = 0.4


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    if environ.get("PATH_INFO") == "/sleep":
        time.sleep(HOLD_SECONDS)
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
