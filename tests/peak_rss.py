"""A command's own peak memory, for the tests and bench/million.py (standard library only).

The peak resident set the kernel reports for a child (wait4's ru_maxrss)
starts from the memory of the process that forked it: Linux carries the
high-water mark of the old address space across fork and exec, so a command
started from a test runner or a benchmark holding 300 MB reports at least
300 MB. Here the command is forked from a small Python process of its own
(about 10 MB, the floor of every figure), which reports the command's
ru_maxrss through a pipe and exits with its status.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

# Run as ``python -c _SPAWNER <report fd> argv...``.
_SPAWNER = """
import os, sys
report = int(sys.argv[1])
pid = os.fork()
if pid == 0:
    os.close(report)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
os.write(report, b"%d" % usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status) % 256)
"""


class PeakRss:
    """``argv`` running under its own small parent; wait() gives its exit status and peak MiB.

    Popen's keyword arguments (stdout, env, cwd, ...) apply to the command;
    it runs in a new session, so kill() ends the command and its parent.
    """

    def __init__(self, argv: list[str], **popen: Any) -> None:
        read_end, write_end = os.pipe()
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", _SPAWNER, str(write_end), *argv],
                                         pass_fds=(write_end,), start_new_session=True, **popen)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        self._report = read_end

    def wait(self, timeout: float | None = None) -> tuple[int, float]:
        """(exit status, peak resident set in MiB); the peak is nan if it was killed."""
        self.proc.wait(timeout)
        with os.fdopen(self._report, "rb") as report:
            text = report.read()
        return self.proc.returncode, int(text) / 1024 if text else float("nan")

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
