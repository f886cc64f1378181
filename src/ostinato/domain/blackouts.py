"""Blackout periods: daily windows, in a schedule's zone, when it must not run. Parsed from their
written form (``{"start": "HH:MM[:SS]", "end": "HH:MM[:SS]"}``), each checked (an end different from
its start) and checked against the others (no two overlap, a window crossing midnight included).
Where a moment falls relative to them is the schedule's rule (``domain.schedules.out_of_blackout``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import time
from typing import Any

from .errors import ValidationError

_TIME = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")


@dataclass(frozen=True, slots=True)
class BlackoutPeriod:
    """A daily window, in the schedule's zone, when it must not run; ``end`` before ``start``
    crosses midnight."""

    start: time
    end: time

    def to_dict(self) -> dict[str, str]:
        return {"start": self.start.isoformat(), "end": self.end.isoformat()}


def parse_blackout_periods(value: Any) -> tuple[BlackoutPeriod, ...]:
    """``[{"start": "00:00", "end": "01:00"}, …]`` (or None) as checked periods."""
    if value is None:
        return ()
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise ValidationError("blackout_periods", 'a list of {"start": "HH:MM[:SS]", "end": "HH:MM[:SS]"}', value)
    periods = []
    for index, item in enumerate(value):
        if not isinstance(item, Mapping) or set(item) != {"start", "end"}:
            raise ValidationError(f"blackout_periods[{index}]", 'an object {"start": "HH:MM[:SS]", "end": "HH:MM[:SS]"}', item)
        periods.append(BlackoutPeriod(_parse_time(item["start"], f"blackout_periods[{index}].start"),
                                      _parse_time(item["end"], f"blackout_periods[{index}].end")))
    return check_blackouts(tuple(periods))


def _parse_time(value: Any, field_name: str) -> time:
    match = _TIME.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValidationError(field_name, "a time of day HH:MM or HH:MM:SS", value)
    hours, minutes, seconds = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    if hours > 23 or minutes > 59 or seconds > 59:
        raise ValidationError(field_name, "a time of day HH:MM or HH:MM:SS", value)
    return time(hours, minutes, seconds)


def _minutes_covered(period: BlackoutPeriod) -> list[tuple[int, int]]:
    """The period as seconds-of-day intervals [a, b), split at midnight."""
    a = period.start.hour * 3600 + period.start.minute * 60 + period.start.second
    b = period.end.hour * 3600 + period.end.minute * 60 + period.end.second
    return [(a, b)] if a < b else [(a, 86400), (0, b)]


def check_blackouts(periods: tuple[BlackoutPeriod, ...]) -> tuple[BlackoutPeriod, ...]:
    intervals = []
    for index, period in enumerate(periods):
        if period.start == period.end:
            raise ValidationError(f"blackout_periods[{index}]", "an end different from its start", period.to_dict())
        intervals += [(a, b, index) for a, b in _minutes_covered(period) if a < b]
    intervals.sort()
    for (_a1, b1, i1), (a2, _b2, i2) in zip(intervals, intervals[1:], strict=False):
        if a2 < b1:
            raise ValidationError(f"blackout_periods[{max(i1, i2)}]",
                                  f"no overlap with blackout_periods[{min(i1, i2)}]", periods[max(i1, i2)].to_dict())
    return periods
