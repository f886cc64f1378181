"""The console's history charts: a series' figures over a window, as inline SVG charts drawn here.

No script and no library: each chart is a ``<svg>`` with a ``viewBox`` (it scales to its column), its
lines in the text's colour (``currentColor``; a second line dashed, so that it reads without colour),
a gap where samples are missing, or, for counts per interval (:attr:`Chart.bars`), a bar per
interval: the first figure (runs) a pale bar, the second (failures) drawn over it from the axis,
hatched and of its own class (``failures``: the page's style colours it as an error), so that the
part that failed reads with or without colour; the axis labelled with the window's start, its end and the largest
value, and for a screen reader a ``<title>``, a ``<desc>`` and an ``aria-label`` giving the latest,
lowest and highest values. The page writes the same values beside each chart, as text
(:func:`line_values`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from markupsafe import Markup, escape

WIDTH, HEIGHT = 360, 132
LEFT, RIGHT, TOP, BOTTOM = 52, 352, 16, 100
#: the second line's dash pattern (the first is solid)
DASHES = ("", "5 3", "2 2")


@dataclass(frozen=True, slots=True)
class Line:
    label: str
    points: Sequence[tuple[datetime, float]]


@dataclass(frozen=True, slots=True)
class Chart:
    title: str
    #: how a value is written (an axis label, the description)
    show: Callable[[float], str]
    lines: Sequence[Line] = field(default_factory=tuple)
    #: the lowest top of the axis (a share's chart always goes to 100 %)
    floor_top: float = 0.0
    #: counts per interval, drawn as bars: the first line the whole, the second the part that failed
    bars: bool = False

    @property
    def empty(self) -> bool:
        return not any(line.points for line in self.lines)


@dataclass(frozen=True, slots=True)
class LineValues:
    """A line's latest, lowest and highest values as written (all None when it has no samples)."""

    label: str
    latest: str | None
    lowest: str | None
    highest: str | None

    def __str__(self) -> str:
        if self.latest is None:
            return f"{self.label}: no samples"
        return f"{self.label}: latest {self.latest}, lowest {self.lowest}, highest {self.highest}"


def line_values(chart: Chart) -> list[LineValues]:
    """Each line's latest, lowest and highest values, as the chart writes them."""
    found = []
    for line in chart.lines:
        values = [v for _, v in line.points]
        found.append(LineValues(line.label, *(chart.show(v) for v in (values[-1], min(values), max(values))))
                     if values else LineValues(line.label, None, None, None))
    return found


def _segments(points: Sequence[tuple[datetime, float]], step: timedelta) -> list[list[tuple[datetime, float]]]:
    """The points split where samples are missing (more than one and a half steps apart)."""
    segments: list[list[tuple[datetime, float]]] = []
    for point in points:
        if segments and point[0] - segments[-1][-1][0] <= step * 1.5:
            segments[-1].append(point)
        else:
            segments.append([point])
    return segments


def chart_svg(chart: Chart, since: datetime, until: datetime, step: timedelta, key: str) -> Markup:
    """One chart over ``[since, until]``; ``key`` names it in the page (``data-chart``)."""
    values = [v for line in chart.lines for _, v in line.points]
    top = max([chart.floor_top, *values]) or 1.0
    span = (until - since).total_seconds() or 1.0

    def x(at: datetime) -> float:
        return LEFT + (RIGHT - LEFT) * min(max((at - since).total_seconds() / span, 0.0), 1.0)

    def y(value: float) -> float:
        return BOTTOM - (BOTTOM - TOP) * max(value, 0.0) / top

    described = [str(values) for values in line_values(chart)]
    label = f"{chart.title}, {since:%Y-%m-%d %H:%M} to {until:%Y-%m-%d %H:%M} UTC. " + "; ".join(described)
    parts = [
        f'<svg class="history" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" '
        f'preserveAspectRatio="xMinYMin meet" aria-label="{escape(label)}" data-chart="{escape(key)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(chart.title)}</title><desc>{escape(label)}</desc>",
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{BOTTOM}" stroke="currentColor" stroke-width="0.6"/>',
        f'<line x1="{LEFT}" y1="{BOTTOM}" x2="{RIGHT}" y2="{BOTTOM}" stroke="currentColor" stroke-width="0.6"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{RIGHT}" y2="{TOP}" stroke="currentColor" stroke-width="0.3" '
        'stroke-dasharray="1 3"/>',
        f'<text x="{LEFT - 4}" y="{TOP + 4}" text-anchor="end">{escape(chart.show(top))}</text>',
        f'<text x="{LEFT - 4}" y="{BOTTOM}" text-anchor="end">{escape(chart.show(0.0))}</text>',
        f'<text x="{LEFT}" y="{BOTTOM + 14}">{since:%m-%d %H:%M}</text>',
        f'<text x="{RIGHT}" y="{BOTTOM + 14}" text-anchor="end">{until:%m-%d %H:%M}</text>',
    ]
    hatch = "hatch-" + hashlib.sha256(key.encode()).hexdigest()[:16]
    if chart.bars:
        parts.append(f'<defs><pattern id="{hatch}" class="failures" patternUnits="userSpaceOnUse" width="4" height="4" '
                     'patternTransform="rotate(45)"><rect width="4" height="4" fill="currentColor" fill-opacity="0.35"/>'
                     '<line x1="0" y1="0" x2="0" y2="4" stroke="currentColor" stroke-width="2.5"/></pattern></defs>')
    for number, line in enumerate(chart.lines):
        legend_x = LEFT + 4 + 120 * number
        if chart.bars:
            parts += _bars(line, number, x, y, step, hatch)
            fill = f'fill="url(#{hatch})" class="failures"' if number else 'fill="currentColor" fill-opacity="0.3"'
            parts.append(f'<rect x="{legend_x}" y="{BOTTOM + 22}" width="14" height="8" stroke="currentColor" '
                         f'stroke-width="0.6" {fill}/>')
        else:
            dash = DASHES[number % len(DASHES)]
            style = f' stroke-dasharray="{dash}"' if dash else ""
            for segment in _segments(line.points, step):
                if len(segment) == 1:
                    at, value = segment[0]
                    parts.append(f'<circle cx="{x(at):.1f}" cy="{y(value):.1f}" r="1.8" fill="currentColor"/>')
                else:
                    drawn = " ".join(f"{x(at):.1f},{y(value):.1f}" for at, value in segment)
                    parts.append(f'<polyline points="{drawn}" fill="none" stroke="currentColor" stroke-width="1.5"{style}/>')
            parts.append(f'<line x1="{legend_x}" y1="{BOTTOM + 26}" x2="{legend_x + 16}" y2="{BOTTOM + 26}" '
                         f'stroke="currentColor" stroke-width="1.5"{style}/>')
        marked = ' class="failures"' if chart.bars and number else ""
        parts.append(f'<text x="{legend_x + 20}" y="{BOTTOM + 30}"{marked}>{escape(line.label)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def _bars(line: Line, number: int, x: Callable[[datetime], float], y: Callable[[float], float], step: timedelta,
          hatch: str) -> list[str]:
    """A bar per interval with a count above 0: the first line's pale, the second's hatched (``failures``)."""
    look = (f'class="bar failures" fill="url(#{hatch})" stroke="currentColor" stroke-width="0.6"' if number else
            'class="bar runs" fill="currentColor" fill-opacity="0.3"')
    drawn = []
    for at, value in line.points:
        if value <= 0:
            continue
        left, right = x(at), x(at + step)
        width = max(right - left - 0.2, 0.8)
        drawn.append(f'<rect {look} x="{left:.1f}" y="{y(value):.1f}" width="{width:.1f}" '
                     f'height="{BOTTOM - y(value):.1f}"/>')
    return drawn
