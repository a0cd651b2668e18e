"""gedweb.supervise: the command restarted when it dies, stopped with the supervisor."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def _wait(condition, seconds: float = 30):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not within {seconds} s")


def _pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def test_a_killed_command_is_restarted_and_stopped_with_the_supervisor(tmp_path: Path):
    starts = tmp_path / "starts"
    # The command notes its pid, then sleeps: each start adds a line.
    child = f"import os, time; open({str(starts)!r}, 'a').write(f'{{os.getpid()}}\\n'); " \
            "time.sleep(600)"
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "gedweb.supervise", "--name", "sleeper", "--",
         sys.executable, "-c", child],
        cwd=Path(__file__).resolve().parents[2], stderr=subprocess.PIPE, text=True)
    try:
        first = _wait(lambda: _pids(starts))[0]
        os.kill(first, signal.SIGKILL)
        second = _wait(lambda: _pids(starts)[1:])[0]
        assert second != first
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=30) == 0
        # The command went with it: the lookup fails once it is gone (and reaped).
        with pytest.raises(ProcessLookupError):
            _wait(lambda: os.kill(second, 0), seconds=15)
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
    assert "sleeper exited with -9; restarting in 1 s" in supervisor.stderr.read()


def test_without_a_command_it_refuses():
    done = subprocess.run([sys.executable, "-m", "gedweb.supervise"], capture_output=True,
                          text=True, cwd=Path(__file__).resolve().parents[2], timeout=30)
    assert done.returncode == 2
    assert "give the command to keep running after --" in done.stderr
