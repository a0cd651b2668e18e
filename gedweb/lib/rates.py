"""A request rate as operators write it: ``N/second``, ``N/minute``, ``N/hour``, ``N/day``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class Rate:
    """At most ``requests`` per ``seconds``: parsed from ``N/second|minute|hour|day``.

    DRF's shorter spellings are read too: ``5/min``, ``100/h``, ``1000/d``.
    """

    requests: int
    seconds: int

    PERIODS: ClassVar[dict[str, int]] = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
    # DRF's own spellings (its throttles read the first letter: 5/min, 100/h,
    # 1000/day) and the plurals, each named: "5/mango" stays a mistake.
    SPELLINGS: ClassVar[dict[str, int]] = {
        **PERIODS,
        **dict.fromkeys(("s", "sec", "secs", "seconds"), 1),
        **dict.fromkeys(("m", "min", "mins", "minutes"), 60),
        **dict.fromkeys(("h", "hr", "hrs", "hours"), 3600),
        **dict.fromkeys(("d", "days"), 86400),
    }

    @classmethod
    def parse(cls, text: str) -> Rate | None:
        """None for ``off``; ValueError for anything but ``N/period``."""
        text = text.strip().lower()
        if text == "off":
            return None
        count, _, period = text.partition("/")
        if (not (count.isascii() and count.isdigit()) or int(count) < 1
                or period not in cls.SPELLINGS):
            raise ValueError(text)
        return cls(int(count), cls.SPELLINGS[period])

    def __str__(self) -> str:
        return f"{self.requests}/{self._period_name()}"

    def describe(self, what: str) -> str:
        """``600 writes per minute`` for ``writes``; ``1 write per minute``."""
        noun = what.removesuffix("s") if self.requests == 1 else what
        return f"{self.requests:,} {noun} per {self._period_name()}"

    def _period_name(self) -> str:
        return next(k for k, v in self.PERIODS.items() if v == self.seconds)
