"""Keep one command running: restart it when it dies, stop it with us (no Django).

    python -m gedweb.supervise [--name NAME] -- COMMAND [ARG ...]

What gunicorn.conf.py starts beside the workers for the recall indexer
(docs/recall.md). gunicorn's master cannot restart it itself: a thread of
the master that starts a process races the master's forks of workers (a
worker forked while the thread is inside subprocess.Popen inherits the
pipe Popen waits on, and the thread then waits as long as that worker
lives). This process is single-threaded and forks nothing else.

- The command is restarted when it exits, after 1 s, doubling to 60 s while
  it keeps dying within a minute of its start (a setting that stops it at
  once does not spin).
- SIGTERM or SIGINT: the command gets SIGTERM (SIGKILL after 10 s) and this
  process exits.
- When the process that started this one ends (gunicorn's master killed),
  the command is stopped the same way and this process exits.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess  # nosec B404 - runs the one command it is given, no shell
import sys
import time

POLL_SECONDS = 0.5
STOP_SECONDS = 10.0
MAX_DELAY_SECONDS = 60.0
STEADY_SECONDS = 60.0


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def supervise(command: list[str], name: str) -> int:
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    parent = os.getppid()
    delay = 0.5  # the first quick death waits 1 s
    while True:
        started = time.monotonic()
        process = subprocess.Popen(command)  # nosec B603 - the command line we were given
        while process.poll() is None and not stopping and os.getppid() == parent:
            time.sleep(POLL_SECONDS)
        if stopping or os.getppid() != parent:
            _stop(process)
            return 0
        delay = 1.0 if time.monotonic() - started > STEADY_SECONDS else min(delay * 2,
                                                                              MAX_DELAY_SECONDS)
        print(f"{name} exited with {process.returncode}; restarting in {delay:.0f} s",
              file=sys.stderr, flush=True)
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline and not stopping and os.getppid() == parent:
            time.sleep(POLL_SECONDS)
        if stopping or os.getppid() != parent:
            return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gedweb.supervise",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="the command", help="how the log names it")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- then the command and its arguments")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to keep running after --")
    return supervise(command, args.name)


if __name__ == "__main__":
    sys.exit(main())
