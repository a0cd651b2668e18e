"""Progress bars for the long commands: on a terminal only, quiet in pipes and CI.

tqdm draws the bar on the command's stderr when that is a terminal
(``disable=None``) and never where ``CI`` is set, so a pipe, a log file or a
CI job gets only the command's own output. The services know nothing of
terminals: a service that can take long takes a ``Progress`` (below), tells
it how much work there is once it knows, and advances the callback it gets
back; a command passes a ``Bars`` over its stderr.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import ExitStack
from types import TracebackType
from typing import Any, Protocol

# advance(n): n more units done.
Advance = Callable[[int], None]


class Progress(Protocol):
    """Told of a stage of work once its size is known; answers how to advance it.

    ``unit`` is what the total counts ("B" for bytes, shown scaled).
    """

    def __call__(self, total: int, description: str, unit: str = "items") -> Advance: ...


def progress_bar(total: int | None, *, unit: str, file: Any, description: str = "") -> Any:
    """A tqdm bar of ``total`` ``unit`` on ``file`` (a stream, such as a command's stderr)."""
    # Imported here: the CLI's client takes this module's types, and `gedweb
    # hook` must start fast.
    from tqdm import tqdm

    quiet = bool(os.environ.get("CI")) or not total
    return tqdm(total=total, unit=unit, file=file, desc=description or None,
                disable=True if quiet else None, dynamic_ncols=True, leave=False,
                unit_scale=unit == "B")


def unshown(n: int) -> None:
    """The ``Advance`` of a caller that shows no progress."""


def no_progress(total: int, description: str, unit: str = "items") -> Advance:
    """The ``Progress`` of a caller that shows none."""
    return unshown


class Bars:
    """A ``Progress`` drawing one bar per announced stage, all closed on exit.

    ``with Bars(stderr) as bars: service(..., progress=bars)``.
    """

    def __init__(self, file: Any) -> None:
        self._file = file
        self._stack = ExitStack()

    def __call__(self, total: int, description: str, unit: str = "items") -> Advance:
        bar = self._stack.enter_context(
            progress_bar(total, unit=unit, file=self._file, description=description))
        advance: Advance = bar.update
        return advance

    def __enter__(self) -> Bars:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stack.close()
