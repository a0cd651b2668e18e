"""Bar charts drawn on the server: geometry here, inline SVG in templates/_chart.html.

No JavaScript and no style attributes, so the strict CSP holds (colours are
classes in site.css). The SVG holds only the bars and is stretched to the
width of the page; every word (legend, dates, the scale) is HTML beside it,
so nothing shrinks to an unreadable size on a phone. Each chart comes with
its numbers as a table (the text alternative) and an aria-label summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

# The SVG's own coordinates: one unit per day across, 100 units up.
HEIGHT = 100
BAR_WIDTH = 0.8
# Series drawn apart at most; the rest are summed as "other".
MAX_SERIES = 5
OTHER = "other"


@dataclass(frozen=True)
class Segment:
    series: int  # the colour class s0..s5
    label: str
    count: int
    y: float
    height: float


@dataclass(frozen=True)
class Bar:
    day: date
    x: float  # the left edge: a day's unit less a gap either side (BAR_WIDTH)
    total: int
    segments: list[Segment]


@dataclass(frozen=True)
class Series:
    index: int
    label: str
    total: int
    key: str | None  # the series' own name (an author string), None for "other"


@dataclass(frozen=True)
class Chart:
    """A stacked bar a day: what _chart.html draws, and the numbers behind it."""

    title: str
    days: list[date]
    series: list[Series]
    bars: list[Bar]
    peak: int
    total: int

    @property
    def width(self) -> int:
        return len(self.days)

    @property
    def summary(self) -> str:
        """The chart in one sentence, for screen readers (aria-label)."""
        if not self.total:
            return f"{self.title}: none from {self.days[0]} to {self.days[-1]}."
        parts = ", ".join(f"{s.label} {s.total}" for s in self.series)
        return (f"{self.title} from {self.days[0]} to {self.days[-1]}: {self.total} in all "
                f"({parts}); at most {self.peak} on one day.")

    @property
    def table_rows(self) -> list[tuple[date, list[int], int]]:
        """Days that have any count, each with its count per series: the text alternative."""
        rows = []
        for bar in self.bars:
            if bar.total:
                by_series = {segment.series: segment.count for segment in bar.segments}
                rows.append((bar.day, [by_series.get(s.index, 0) for s in self.series],
                             bar.total))
        return rows


def stacked(title: str, days: list[date], counts: dict[str, dict[date, int]],
            labels: dict[str, str] | None = None) -> Chart:
    """A chart of ``counts`` (series name -> day -> count) over ``days``, biggest series first.

    Series past MAX_SERIES are summed into one "other"; ``labels`` words a
    series name for readers (memory.authors for authors).
    """
    labels = labels or {}
    totals = {name: sum(by_day.values()) for name, by_day in counts.items()}
    ranked = sorted((name for name in totals if totals[name]), key=lambda n: (-totals[n], n))
    # An "other" of one series would hide its name for nothing: draw it apart instead.
    kept = ranked if len(ranked) <= MAX_SERIES + 1 else ranked[:MAX_SERIES]
    rest = [name for name in ranked if name not in kept]
    merged: list[tuple[str, dict[date, int]]] = [(labels.get(n, n), counts[n]) for n in kept]
    keys: list[str | None] = [*kept, None]
    if rest:
        other: dict[date, int] = {}
        for name in rest:
            for day, n in counts[name].items():
                other[day] = other.get(day, 0) + n
        merged.append((f"{OTHER} ({len(rest)})", other))
    series = [Series(i, label, sum(by_day.values()), keys[i])
              for i, (label, by_day) in enumerate(merged)]
    day_totals = [sum(by_day.get(day, 0) for _, by_day in merged) for day in days]
    peak = max(day_totals, default=0)
    bars = []
    for x, day in enumerate(days):
        segments, top = [], float(HEIGHT)
        for i, (label, by_day) in enumerate(merged):
            n = by_day.get(day, 0)
            if not n:
                continue
            height = HEIGHT * n / peak
            top -= height
            segments.append(Segment(i, label, n, round(top, 3), round(height, 3)))
        bars.append(Bar(day, round(x + (1 - BAR_WIDTH) / 2, 3), day_totals[x], segments))
    return Chart(title, days, series, bars, peak, sum(day_totals))
