"""Calendar rules: when a calendar schedule fires (a schedule's ``cron_schedule``,
a systemd-like timer, see docs/design/periodic-tasks.md), in the schedule's IANA time zone.

Three kinds of rule, each read by a well-kept library:

- **cron**: five fields, or ``@hourly``, ``@daily``, ``@weekly``, ``@monthly``,
  ``@yearly`` (``@annually``, ``@midnight``), read by ``cronsim``;
- **systemd** calendar events (``OnCalendar=``): ``Mon..Fri *-*-* 02:00``,
  ``*:0/15``, ``*-*~01``, ``quarterly``, … with an optional zone at the end,
  read by ``oncalendar``;
- **rrule** (RFC 5545): ``FREQ=DAILY;BYHOUR=2`` or ``DTSTART:…`` plus
  ``RRULE:…`` lines, read by ``python-dateutil``. A DTSTART in UTC (``…Z``), with
  an offset, or with a ``TZID`` is read in that zone, whatever the schedule's zone.

And **solar** events, only with their prefix: ``solar:sunrise 48.8566 2.3522`` (an event of the
Sun at a latitude and longitude, computed by ``ephem`` where it is installed: :mod:`.solar`),
whose fire times are instants, whatever the zone.

A rule yields wall-clock times of its zone; :mod:`.wall_clock` turns them into
instants across daylight-saving changes by one rule for every kind, which
depends on whether the rule names fixed times of the day or repeats through the
hours (:attr:`CalendarRule.repeats_through_the_hours`).
"""

from __future__ import annotations

import difflib
import enum
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import NamedTuple
from zoneinfo import ZoneInfo

from .errors import ValidationError, did_you_mean
from .limits import MAX_TIME, MIN_TIME, TIME_RANGE, check_stored_text
from .solar import solar_times
from .wall_clock import FireTime, ordered_firings, resolve_local
from .zones import ZONE_EXPECTED, is_zone, parse_zone, zone_label, zone_suggestions

__all__ = ["CalendarRule", "FireTime", "RuleKind", "detect_kind", "parse_zone", "resolve_local", "zone_suggestions",
           "ZONE_EXPECTED", "HORIZON_YEARS", "MAX_PREVIEW"]

UTC = UTC
#: cron's named schedules, as five fields
CRON_NICKNAMES = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
_KIND_PREFIX = re.compile(r"^(cron|systemd|rrule|solar):\s*", re.IGNORECASE)
#: how far a rule is searched for its next firing before it is called exhausted
HORIZON_YEARS = 200
#: the most firings a preview lists (``ostinato calendar next --count``)
MAX_PREVIEW = 10_000
CRON_FIELDS = "minute hour day-of-month month day-of-week"
#: how far back wall times are read near a change of the clock (daylight saving moves it 2 hours at most)
_REWIND = timedelta(hours=3)
#: systemd's shorthands that repeat through the hours (the others name midnight)
_SYSTEMD_REPEATING_WORDS = {"minutely", "hourly"}


class RuleKind(str, enum.Enum):
    CRON = "cron"
    SYSTEMD = "systemd"
    RRULE = "rrule"
    #: an event of the Sun at a place (``solar:sunrise 48.8566 2.3522``: domain.solar), only with its prefix
    SOLAR = "solar"


def detect_kind(text: str) -> RuleKind:
    """``cron:``/``systemd:``/``rrule:`` prefixes win; else RRULE text, then five cron fields or a
    cron nickname, else a systemd calendar event."""
    stripped = text.strip()
    prefix = _KIND_PREFIX.match(stripped)
    if prefix:
        return RuleKind(prefix.group(1).lower())
    upper = stripped.upper()
    if upper.startswith(("FREQ=", "RRULE:", "DTSTART")) or "\nRRULE:" in upper:
        return RuleKind.RRULE
    if stripped.startswith("@") or len(stripped.split()) == 5:
        return RuleKind.CRON
    return RuleKind.SYSTEMD


def _guessed_between_cron_and_systemd(text: str) -> bool:
    """True when the kind was only guessed from the number of fields (no prefix, no RRULE words, no
    @nickname): a refusal then says what each kind made of the text."""
    stripped = text.strip()
    upper = stripped.upper()
    return not (_KIND_PREFIX.match(stripped) or stripped.startswith("@") or upper.startswith(("FREQ=", "RRULE:", "DTSTART"))
                or "\nRRULE:" in upper)


class _Shape(NamedTuple):
    """What a rule's text says beyond its wall times: the zone they are read in, whether the rule
    repeats through the hours, and (RRULE) its text with DTSTART made a wall time of that zone."""

    zone: tzinfo
    repeating: bool
    text: str


@dataclass(frozen=True, slots=True)
class CalendarRule:
    """A validated rule: its kind, its text (prefix removed) and the zone it is read in."""

    kind: RuleKind
    expression: str
    tz: str

    @classmethod
    def parse(cls, text: str, tz: str = "UTC", *, kind: RuleKind | str | None = None, field: str = "calendar") -> CalendarRule:
        if not isinstance(text, str) or not text.strip():
            raise ValidationError(field, "a cron, systemd calendar or RRULE expression", text)
        check_stored_text(text, field, 1000)
        parse_zone(tz)
        rule_kind = RuleKind(kind) if kind is not None else detect_kind(text)
        expression = _KIND_PREFIX.sub("", text.strip())
        rule = cls(rule_kind, expression, tz)
        try:
            _shape(rule_kind, expression, tz, field)
            next(rule._wall_times(datetime(2000, 1, 1), field=field), None)  # reading it is the check
        except ValidationError:
            if kind is not None or not _guessed_between_cron_and_systemd(text):
                raise
            raise _every_kind_refuses(expression, field) from None
        return rule

    @property
    def zone(self) -> tzinfo:
        """The zone the rule's wall times are read in: the schedule's, unless the rule names its own
        (a zone ending a systemd event, a DTSTART in UTC, with an offset or a TZID)."""
        return _shape(self.kind, self.expression, self.tz).zone

    @property
    def zone_name(self) -> str:
        return zone_label(self.zone)

    @property
    def repeats_through_the_hours(self) -> bool:
        """True when the rule leaves its hour or its minute open (``*/15 * * * *``, ``0 * * * *``,
        ``*:0/15``, ``hourly``, ``FREQ=HOURLY``) rather than naming fixed times of the day: it then
        fires at both occurrences of a repeated wall time and skips those of a gap (see
        :mod:`.wall_clock`)."""
        return _shape(self.kind, self.expression, self.tz).repeating

    def next_fire_times(self, after: datetime, count: int = 1) -> list[FireTime]:
        """The next ``count`` firings strictly after ``after`` (an aware instant), in time order."""
        if after.tzinfo is None:
            raise ValidationError("after", "a time with a zone", after.isoformat())
        shape = _shape(self.kind, self.expression, self.tz)
        local = after.astimezone(shape.zone)
        start_local = local.replace(tzinfo=None)
        offset = local.utcoffset()
        if any((after + shift).astimezone(shape.zone).utcoffset() != offset for shift in (-_REWIND, _REWIND)):
            # the clock changes near ``after``: the second pass of a repeated hour, or the end of a
            # gap, comes after wall times later than its own, so walls are read from further back
            start_local -= _REWIND
        return ordered_firings(self._wall_times(start_local), shape.zone, repeating=shape.repeating, after=after,
                               count=count)

    def next_fire_time(self, after: datetime) -> datetime | None:
        """The next firing strictly after ``after``, in UTC (so that adding a duration to it adds
        elapsed time, not wall-clock time), or None when the rule fires no more."""
        times = self.next_fire_times(after, 1)
        return times[0].at.astimezone(UTC) if times else None

    # -- wall-clock iteration, per kind ------------------------------------
    def _wall_times(self, start: datetime, *, field: str = "calendar") -> Iterator[datetime]:
        """Wall-clock times of the rule (naive, in its zone) after ``start``."""
        if self.kind is RuleKind.CRON:
            return _cron_times(self.expression, start, field)
        if self.kind is RuleKind.SYSTEMD:
            return _systemd_times(self.expression, start, field)
        if self.kind is RuleKind.SOLAR:
            return solar_times(self.expression, start, field)
        return _rrule_times(_shape(self.kind, self.expression, self.tz, field).text, start, field, shown=self.expression)


@functools.lru_cache(maxsize=4096)
def _shape(kind: RuleKind, expression: str, tz: str, field: str = "calendar") -> _Shape:
    if kind is RuleKind.CRON:
        fields = CRON_NICKNAMES.get(expression.strip().lower(), expression).split()
        repeating = len(fields) == 5 and (_open_field(fields[0], 0, 59) or _open_field(fields[1], 0, 23))
        return _Shape(ZoneInfo(tz), repeating, expression)
    if kind is RuleKind.SOLAR:  # instants: no wall time to read, none repeated or skipped
        return _Shape(ZoneInfo("UTC"), False, expression)
    if kind is RuleKind.SYSTEMD:
        head, _, last = expression.strip().rpartition(" ")
        zone = ZoneInfo(last) if head and is_zone(last) else ZoneInfo(tz)
        return _Shape(zone, _systemd_repeats(head if head and is_zone(last) else expression), expression)
    return _rrule_shape(expression, tz, field)


def _open_field(text: str, low: int, high: int) -> bool:
    """True for an hour or minute field left open: ``*``, ``*/15``, or the same written from the field's
    start (``0/15``, ``00/2``, ``0-59/15``, ``0..23``, ``0-23``)."""
    base, slash, _ = text.strip().partition("/")
    if base.startswith("*"):
        return True
    starts = (str(low), f"{low:02d}")
    if slash and base in starts:
        return True
    return base in {f"{start}{sep}{high}" for start in starts for sep in ("-", "..")}


def _systemd_repeats(event: str) -> bool:
    words = event.split()
    if len(words) == 1 and words[0].lower() in _SYSTEMD_REPEATING_WORDS:
        return True
    times = [word for word in words if ":" in word]
    if not times:
        return False  # a date alone, or a shorthand naming midnight
    parts = times[-1].split(":")
    return _open_field(parts[0], 0, 23) or _open_field(parts[1], 0, 59)


def _every_kind_refuses(expression: str, field: str) -> ValidationError:
    """The refusal of a text whose kind was guessed: what cron, systemd and RRULE each made of it."""
    said = [f"as cron: {_cron_complaint(expression)}", f"as systemd OnCalendar: {_systemd_complaint(expression)}",
            "as RRULE: it starts with FREQ=, RRULE: or DTSTART"]
    return ValidationError(field, "a cron, systemd OnCalendar or RRULE expression; " + "; ".join(said), expression)


def _cron_times(expression: str, start: datetime, field: str) -> Iterator[datetime]:
    from cronsim import CronSim, CronSimError

    text = CRON_NICKNAMES.get(expression.strip().lower(), expression)
    try:
        iterator = CronSim(text, start)
    except CronSimError:
        raise ValidationError(field, f"a cron expression: {_cron_complaint(expression)}", expression) from None
    limit = start.year + HORIZON_YEARS
    for wall in iterator:
        if wall.year > limit:
            return
        yield wall


def _cron_complaint(expression: str) -> str:
    """Why ``expression`` is not a cron expression: an unknown @nickname, a wrong number of fields (six:
    the seconds-first form of other tools), or what ``cronsim`` said of a field."""
    from cronsim import CronSim, CronSimError

    text = expression.strip()
    if text.startswith("@"):
        close = difflib.get_close_matches(text.lower(), list(CRON_NICKNAMES), n=1)
        return f"an @nickname is one of {', '.join(CRON_NICKNAMES)}{did_you_mean(close)}"
    fields = text.split()
    if len(fields) != 5:
        said = f"five fields ({CRON_FIELDS}) or an @nickname, not {len(fields)}"
        if len(fields) == 6:
            said += f" (a leading seconds field is not cron's: {' '.join(fields[1:])!r} without it)"
        return said
    try:
        CronSim(text, datetime(2000, 1, 1))
    except CronSimError as exc:
        return f"five fields ({CRON_FIELDS}): {exc}"
    return "a valid expression"  # only asked about expressions that failed


#: the last word of a systemd event meant as a zone (Area/Location), valid or not
_ZONE_LIKE = re.compile(r"^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)+$")
#: a seconds field with a fraction (systemd accepts ``12:34:56.5``; see :func:`_systemd_complaint`)
_FRACTIONAL_SECONDS = re.compile(r":[0-9*,/.]*\d\.\d+\b")


def _systemd_complaint(expression: str) -> str:
    """Why ``expression`` is not a systemd calendar event: an unknown zone at its end, or what
    ``oncalendar`` said."""
    from oncalendar import BaseIterator, OnCalendarError

    head, _, last = expression.strip().rpartition(" ")
    if head and _ZONE_LIKE.match(last) and not is_zone(last):
        return f"an IANA time zone at the end, not {last!r}{did_you_mean(zone_suggestions(last))}"
    fraction = _FRACTIONAL_SECONDS.search(expression)
    if fraction:
        return (f"whole seconds, not {fraction.group(0).lstrip(':')!r}: Ostinato starts runs to the second, so "
                "it refuses a fraction rather than round it away")
    try:
        BaseIterator(head if head and is_zone(last) else expression, datetime(2000, 1, 1))
    except OnCalendarError as exc:
        return str(exc)
    return "a valid event"  # only asked about events that failed


def _systemd_times(expression: str, start: datetime, field: str) -> Iterator[datetime]:
    from oncalendar import BaseIterator, OnCalendarError

    head, _, last = expression.strip().rpartition(" ")
    text = head if head and is_zone(last) else expression
    try:
        iterator = BaseIterator(text, start)
    except OnCalendarError:
        raise ValidationError(field, f"a systemd calendar event such as 'Mon..Fri *-*-* 02:00': "
                                     f"{_systemd_complaint(expression)}", expression) from None
    try:
        yield from iterator
    except OnCalendarError as exc:
        raise ValidationError(field, f"a systemd calendar event ({exc})", expression) from None


#: a DTSTART line and its parts (``DTSTART;TZID=America/New_York:20260101T090000``)
_DTSTART_LINE = re.compile(r"^DTSTART(?P<params>;[^:\n]*)?:(?P<value>[^\n]*?)[ \t]*$", re.IGNORECASE | re.MULTILINE)
_TZID = re.compile(r";TZID=(?P<name>[^;:]+)", re.IGNORECASE)
_NUMERIC_OFFSET = re.compile(r"(?P<sign>[+-])(?P<hours>\d\d):?(?P<minutes>\d\d)$")
_UNTIL_UTC = re.compile(r"(?P<key>UNTIL=)(?P<value>\d{8}T\d{6})Z", re.IGNORECASE)
_SUB_DAILY = re.compile(r"FREQ=(HOURLY|MINUTELY|SECONDLY)\b", re.IGNORECASE)
TZID_EXPECTED = "an IANA time zone in DTSTART's TZID, such as America/New_York"


def _rrule_shape(expression: str, tz: str, field: str) -> _Shape:
    """An RRULE's zone (the schedule's, or DTSTART's: ``Z``, an offset or a TZID) and its text with
    DTSTART as a wall time of that zone (and an UNTIL in UTC turned into one, as RFC 5545 writes it)."""
    text = expression.strip()
    zone: tzinfo = ZoneInfo(tz)
    found = _DTSTART_LINE.search(text)
    if found:
        value = found.group("value").strip()
        tzid = _TZID.search(found.group("params") or "")
        if tzid:
            zone = parse_zone(tzid.group("name").strip().strip('"'), field, expected=TZID_EXPECTED)
            if value.upper().endswith("Z"):
                raise ValidationError(field, "a DTSTART with a TZID given as a local time (without Z)", found.group(0))
        elif value.upper().endswith("Z"):
            zone, value = UTC, value[:-1]
        elif "T" in value.upper() and (offset := _NUMERIC_OFFSET.search(value)):
            minutes = int(offset.group("hours")) * 60 + int(offset.group("minutes"))
            if minutes >= 24 * 60:
                raise ValidationError(field, "a DTSTART offset under 24 hours", found.group(0))
            zone = timezone(timedelta(minutes=-minutes if offset.group("sign") == "-" else minutes))
            value = value[:offset.start()]
        text = f"{text[:found.start()]}DTSTART:{value}{text[found.end():]}"
    if zone is not UTC:
        text = _UNTIL_UTC.sub(lambda until: until.group("key") + _wall_of_utc(until.group("value"), zone), text)
    return _Shape(zone, bool(_SUB_DAILY.search(text)), text)


def _wall_of_utc(value: str, zone: tzinfo) -> str:
    try:
        instant = datetime.strptime(value, "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
        return instant.astimezone(zone).strftime("%Y%m%dT%H%M%S")
    except (ValueError, OverflowError):
        return value  # dateutil says what is wrong with it


def _rrule_times(expression: str, start: datetime, field: str, *, shown: str | None = None) -> Iterator[datetime]:
    """The wall times of an RRULE whose DTSTART, if any, is already a wall time (:func:`_rrule_shape`);
    errors show the text as typed (``shown``)."""
    from dateutil.rrule import rrule, rrulestr

    text = expression.strip()
    expression = shown or expression
    has_dtstart = "DTSTART" in text.upper()
    body = text if "RRULE:" in text.upper() or has_dtstart else f"RRULE:{text}"
    try:
        rule = rrulestr(body, dtstart=None if has_dtstart else datetime(2000, 1, 1), ignoretz=True)
    except (ValueError, TypeError) as exc:
        raise ValidationError(field, f"an RFC 5545 RRULE such as FREQ=DAILY;BYHOUR=2 ({exc})", expression) from None
    if not isinstance(rule, rrule):
        raise ValidationError(field, "a single RRULE (no RDATE, EXDATE or several rules)", expression)
    interval = rule._interval  # type: ignore[attr-defined]  # dateutil keeps INTERVAL private, out of its stubs
    if interval < 1:  # dateutil would loop forever
        raise ValidationError(field, "an RRULE with INTERVAL of 1 or more", expression)
    dtstart = rule._dtstart  # type: ignore[attr-defined]  # dateutil keeps DTSTART private, out of its stubs
    if has_dtstart and not MIN_TIME.replace(tzinfo=None) <= dtstart < MAX_TIME.replace(tzinfo=None):
        # an anchor in year 1 makes dateutil walk two thousand years of a sub-daily rule's firings
        raise ValidationError(field, f"an RRULE whose DTSTART is {TIME_RANGE}", expression)
    _check_anchor(rule, has_dtstart, expression, field)
    _check_some_day(rule, expression, field)
    rule = _fast_forward(rule, start)
    # one walk (xafter), not one rule.after() per firing: each of those walks again from DTSTART,
    # which made the 10,800 firings of a FREQ=SECONDLY rule in the 3 hours before ``start`` take minutes
    try:
        for wall in rule.xafter(start):
            if wall.year > start.year + HORIZON_YEARS:
                return
            yield wall
    except (TypeError, ValueError, IndexError, KeyError, OverflowError) as exc:  # e.g. BYSECOND=61
        raise ValidationError(field, f"an RFC 5545 RRULE such as FREQ=DAILY;BYHOUR=2 ({exc})", expression) from None


def _check_some_day(rule, expression: str, field: str) -> None:
    """Refuse a rule whose day filters (BYMONTH, BYMONTHDAY, BYYEARDAY, BYWEEKNO, BYDAY, BYEASTER)
    match no day at all: dateutil would walk every period to the year 9999 looking for one (seconds
    of CPU at each evaluation). The Gregorian calendar repeats every 400 years, so a yearly rule
    with the same day filters (a superset: BYDAY's ordinals dropped) tried over the last 400 years
    dateutil knows tells."""
    from dateutil.rrule import YEARLY, rrule

    filters = {key: value for key, value in rule._original_rule.items()
               if key in ("bymonth", "bymonthday", "byyearday", "byweekno", "byweekday", "byeaster") and value}
    if not filters:
        return
    if "byweekday" in filters:
        days = filters["byweekday"] if isinstance(filters["byweekday"], (tuple, list)) else (filters["byweekday"],)
        filters["byweekday"] = tuple({getattr(day, "weekday", day) for day in days})
    probe_start = datetime(datetime.max.year - 400, 1, 1)
    try:
        found = rrule(YEARLY, dtstart=probe_start, **filters).after(probe_start, inc=True)
    except (TypeError, ValueError, IndexError, KeyError, OverflowError) as exc:
        raise ValidationError(field, f"an RFC 5545 RRULE such as FREQ=DAILY;BYHOUR=2 ({exc})", expression) from None
    if found is None:
        raise ValidationError(field, "an RRULE whose BYMONTH, BYMONTHDAY, BYYEARDAY, BYWEEKNO and BYDAY match "
                                     "some day", expression)


def _check_anchor(rule, has_dtstart: bool, expression: str, field: str) -> None:
    """Without DTSTART the rule is anchored at 2000-01-01 00:00: refuse rules whose meaning
    would depend on that arbitrary anchor."""
    if has_dtstart:
        return
    from dateutil.rrule import MONTHLY, WEEKLY, YEARLY

    interval, freq = rule._interval, rule._freq  # dateutil keeps them as attributes only
    anchored = interval > 1 or (freq == WEEKLY and rule._original_rule.get("byweekday") is None) \
        or (freq == MONTHLY and not (rule._original_rule.get("bymonthday") or rule._original_rule.get("byweekday"))) \
        or (freq == YEARLY and not (rule._original_rule.get("bymonth") or rule._original_rule.get("byyearday")
                                    or rule._original_rule.get("byweekno")))
    if anchored:
        raise ValidationError(field, "a DTSTART line (the rule's anchor) with INTERVAL above 1, or with WEEKLY, "
                                     "MONTHLY or YEARLY and no BYDAY, BYMONTHDAY or BYMONTH", expression)


def _fast_forward(rule, start: datetime):
    """A rule of fixed-length steps (daily or shorter, weekly) restarted close to ``start`` on the
    same phase, so that finding the next firing does not walk from a DTSTART long ago."""
    from dateutil.rrule import DAILY, HOURLY, MINUTELY, SECONDLY, WEEKLY

    steps = {SECONDLY: timedelta(seconds=1), MINUTELY: timedelta(minutes=1), HOURLY: timedelta(hours=1),
             DAILY: timedelta(days=1), WEEKLY: timedelta(weeks=1)}
    step = steps.get(rule._freq)
    if step is None or rule._count is not None or rule._dtstart >= start:
        return rule
    period = step * rule._interval
    skipped = (start - rule._dtstart) // period
    if skipped <= 1:
        return rule
    return rule.replace(dtstart=rule._dtstart + (skipped - 1) * period)
