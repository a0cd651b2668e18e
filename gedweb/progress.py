"""Progress bars for the long commands: on a terminal only, quiet in pipes and CI.

tqdm draws the bar on the command's stderr when that is a terminal
(``disable=None``) and never where ``CI`` is set, so a pipe, a log file or a
CI job gets only the command's own output. The commands pass the bar's
``update`` to the services as a callback of the rows done; the services
know nothing of terminals.
"""

from __future__ import annotations

import os
from typing import Any

from tqdm import tqdm


def progress_bar(total: int | None, *, unit: str, file: Any, description: str = "") -> Any:
    """A tqdm bar of ``total`` ``unit`` on ``file`` (a stream, such as a command's stderr)."""
    quiet = bool(os.environ.get("CI")) or not total
    return tqdm(total=total, unit=unit, file=file, desc=description or None,
                disable=True if quiet else None, dynamic_ncols=True, leave=False)
