"""How long `gedweb hook` takes, from its spawn to its exit, when the server cannot answer.

The hooks fail open within GEDWEB_HOOK_DEADLINE (2 s by default), counted
from the process's start (gedweb/cli/hooks.py). The tests assert only the
exit status and the empty output; this measures the time, as the agent
sees it: a server that refuses connections (nothing listens on the port)
and one that accepts them and never answers.

    .venv/bin/python bench/hooks_deadline.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

GEDWEB = Path(sys.executable).parent / "gedweb"
EVENTS = ("session-start", "prompt")


def _silent_server() -> tuple[socket.socket, str]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return listener, f"http://127.0.0.1:{listener.getsockname()[1]}"


def _closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    listener, silent = _silent_server()
    data = json.dumps({"session_id": "s-1", "prompt": "which database holds orders?",
                       "source": "startup", "cwd": "/tmp"})
    env = {"PATH": "/usr/bin:/bin", "GEDWEB_TOKEN": "gwp_" + "b" * 40}
    print("server   event          exit  max s  median s")
    for name, url in (("down", _closed_port()), ("silent", silent)):
        for event in EVENTS:
            times, codes = [], set()
            for _ in range(args.runs):
                started = time.monotonic()
                done = subprocess.run([str(GEDWEB), "hook", event, "--project", "shop", "--url",
                                       url], input=data, capture_output=True, text=True,
                                      env=env, timeout=30, check=False)
                times.append(time.monotonic() - started)
                codes.add(done.returncode)
                assert done.stdout == "", done.stdout
            print(f"{name:8} {event:14} {sorted(codes)}  {max(times):5.2f}  "
                  f"{statistics.median(times):8.2f}")
    listener.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
