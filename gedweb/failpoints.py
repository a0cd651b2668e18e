"""Named crash points for crash-safety tests.

``failpoint("name")`` kills the process with SIGKILL when the environment
variable GEDWEB_FAILPOINT names it, and does nothing otherwise. Tests run a
command in a subprocess with the variable set, then check that a re-run
recovers. Reading one environment variable is the whole production cost.
"""

from __future__ import annotations

import os
import signal

ENV_VAR = "GEDWEB_FAILPOINT"


def failpoint(name: str) -> None:
    if os.environ.get(ENV_VAR) == name:
        os.kill(os.getpid(), signal.SIGKILL)
