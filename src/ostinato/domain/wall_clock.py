"""Wall-clock times to instants across daylight-saving changes: the one rule
every calendar rule follows, whatever its kind (the rule and its examples:
docs/reference/schedules.md#daylight-saving-changes).

A calendar rule either names **fixed times** of the day (``30 1 * * *``,
``Mon *-*-* 02:00``, ``FREQ=DAILY``), or **repeats through the hours**: its hour
or its minute is left open (``*/15 * * * *``, ``0 * * * *``, ``*:0/15``,
``FREQ=HOURLY``), the distinction Debian's cron draws. Then:

- a wall time that happens twice (the hour repeated in autumn) fires once, at
  its first occurrence, for a fixed time; a repeating rule fires at both
  occurrences, so it keeps running on elapsed time (``*/15`` every 15 minutes,
  ``0 *`` every hour) through the repeated hour;
- a wall time that does not exist (the hour skipped in spring) fires once at
  the end of the gap, the first instant after it, for a fixed time (several such
  times collapse into that one firing, so a daily job is not lost); a repeating
  rule skips it, as the clock does, and simply fires at its next time.

Every firing a change touched carries a note saying what happened, which the
previews print. Instants are compared in UTC here: Python compares two times of
the same zone by their wall clocks, which would take 01:30 EDT and 01:30 EST
for one moment.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, tzinfo

UTC = UTC


@dataclass(frozen=True, slots=True)
class FireTime:
    #: the instant, in the rule's zone (its offset says which pass of a repeated hour it is)
    at: datetime
    #: what a daylight-saving change did to this firing, if anything
    note: str | None = None
    #: True when the firing is only there for wall times that do not exist (a fixed time in the
    #: spring gap, run at the gap's end): systemd would skip it
    moved: bool = False
    #: True for the second occurrence of a repeated wall time (a rule that repeats through the hours)
    second_pass: bool = False
    #: the wall times of the gap this firing stands for
    gap: tuple[datetime, ...] = field(default=(), repr=False, compare=False)


def resolve_local(wall: datetime, zone: tzinfo) -> tuple[datetime, str | None]:
    """The instant a fixed wall time of ``zone`` fires at, and a note when a daylight-saving change
    moved it: the first occurrence of a repeated time, the gap's end for a time that does not exist."""
    firing = wall_firings(wall, zone, repeating=False)[0]
    return firing.at, firing.note


def wall_firings(wall: datetime, zone: tzinfo, *, repeating: bool) -> list[FireTime]:
    """The firings of one wall time (naive, in ``zone``): none, one or two."""
    early = wall.replace(tzinfo=zone, fold=0)
    late = wall.replace(tzinfo=zone, fold=1)
    if early.utcoffset() == late.utcoffset():
        return [FireTime(early)]
    first, second = early.astimezone(UTC), late.astimezone(UTC)
    if first.astimezone(zone).replace(tzinfo=None) == wall:  # it exists: it happens twice
        twice = f"{wall:%H:%M:%S} happens twice ({_offset(early)} then {_offset(late)})"
        if not repeating:
            return [FireTime(first.astimezone(zone), f"{twice}: runs once, at the first")]
        both = f"{twice}: the rule repeats through the hours, so it runs at both; this is the"
        return [FireTime(first.astimezone(zone), f"{both} first"),
                FireTime(second.astimezone(zone), f"{both} second", second_pass=True)]
    if repeating:
        return []
    end = _gap_end(wall, zone)
    return [FireTime(end, gap_note((wall,), end), moved=True, gap=(wall,))]


def ordered_firings(walls: Iterable[datetime], zone: tzinfo, *, repeating: bool, after: datetime,
                    count: int) -> list[FireTime]:
    """The first ``count`` firings strictly after ``after`` of ``walls`` (increasing wall times of
    ``zone``), in time order, with the firings that share an instant merged into one.

    A wall time's first instant never comes before an earlier wall time's first instant; only the
    second pass of a repeated hour comes later than the walls that follow it. So a firing waits in
    ``pending`` until a wall time's first instant passes it."""
    after_utc = after.astimezone(UTC)
    pending: dict[datetime, FireTime] = {}
    found: list[FireTime] = []
    skipped: list[datetime] = []  # gap times a repeating rule skipped since its last firing
    for wall in walls:
        firings = wall_firings(wall, zone, repeating=repeating)
        if not firings:
            skipped.append(wall)
            continue
        first = firings[0].at.astimezone(UTC)
        for key in sorted(key for key in pending if key < first):
            found.append(pending.pop(key))
            if len(found) == count:
                return found
        if skipped:
            firings[0] = _after_skipped(firings[0], skipped)
            skipped = []
        for firing in firings:
            key = firing.at.astimezone(UTC)
            if key > after_utc:
                pending[key] = merge(pending[key], firing) if key in pending else firing
    found += [pending[key] for key in sorted(pending)]
    return found[:count]


def merge(earlier: FireTime, later: FireTime) -> FireTime:
    """One firing for two that fell on the same instant: gap times collapsed into the gap's end, or
    into a time the rule names there."""
    gap = earlier.gap + later.gap
    if not gap:
        return earlier
    if earlier.moved and later.moved:
        return FireTime(earlier.at, gap_note(gap, earlier.at), moved=True, gap=gap)
    return FireTime(earlier.at, gap_note(gap, earlier.at, with_rule_time=True), gap=gap)


def gap_note(walls: tuple[datetime, ...], at: datetime, *, with_rule_time: bool = False) -> str:
    where = f"runs once, with {at:%H:%M:%S}" if with_rule_time else f"runs once, at the gap's end, {at:%H:%M:%S}"
    return f"{_times(walls)} not exist (daylight-saving gap): {where}"


def _after_skipped(firing: FireTime, skipped: list[datetime]) -> FireTime:
    said = f"{_times(tuple(skipped))} not exist (daylight-saving gap): skipped, the rule repeats through the hours"
    return replace(firing, note=said if firing.note is None else f"{said}; {firing.note}")


def _times(walls: tuple[datetime, ...]) -> str:
    if len(walls) == 1:
        return f"{walls[0]:%H:%M:%S} does"
    if len(walls) <= 4:
        return f"{', '.join(f'{w:%H:%M:%S}' for w in walls)} do"
    return f"{walls[0]:%H:%M:%S} to {walls[-1]:%H:%M:%S} ({len(walls):,} times) do"


def _gap_end(wall: datetime, zone: tzinfo) -> datetime:
    """The first instant after the spring-forward gap that contains ``wall``."""
    low = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)   # read with the offset after the change
    high = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)  # read with the offset before it
    low, high = min(low, high), max(low, high)
    before = low.astimezone(zone).utcoffset()
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        if middle.astimezone(zone).utcoffset() == before:
            low = middle
        else:
            high = middle
    return high.replace(microsecond=0).astimezone(zone)


def _offset(value: datetime) -> str:
    offset = value.utcoffset() or timedelta(0)
    sign = "+" if offset >= timedelta(0) else "-"
    minutes = int(abs(offset).total_seconds() // 60)
    return f"UTC{sign}{minutes // 60:02d}:{minutes % 60:02d}"
