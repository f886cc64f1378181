"""Calendar rules: when a calendar schedule fires (a schedule's ``cron_schedule``,
a systemd-like timer, see docs/design/periodic-tasks.md), in the schedule's IANA time zone.

Three kinds of rule, each read by a well-kept library:

- **cron**: five fields, or ``@hourly``, ``@daily``, ``@weekly``, ``@monthly``,
  ``@yearly`` (``@annually``, ``@midnight``), read by ``cronsim``;
- **systemd** calendar events (``OnCalendar=``): ``Mon..Fri *-*-* 02:00``,
  ``*:0/15``, ``*-*~01``, ``quarterly``, … with an optional zone at the end,
  read by ``oncalendar``;
- **rrule** (RFC 5545): ``FREQ=DAILY;BYHOUR=2`` or ``DTSTART:…`` plus
  ``RRULE:…`` lines, read by ``python-dateutil``.

A rule yields wall-clock times of its zone; :func:`resolve_local` turns each
into one instant, the same way for every kind, so that a daylight-saving
change never runs a schedule twice and never skips it silently:

- a wall time that does not exist (the hour skipped in spring) fires at the
  end of the gap, the first instant after it (02:30 → 03:00 in Paris), and
  several such times collapse into that one firing; systemd itself skips them,
  so for systemd rules this is the one place where Ostinato fires and
  ``systemd-analyze`` does not;
- a wall time that happens twice (the hour repeated in autumn) fires once, at
  its first occurrence (the earlier offset), as systemd and cron do.

Every such firing carries a ``note`` saying what happened; the preview
(``ostinato calendar next``) prints it.
"""

from __future__ import annotations

import difflib
import enum
import functools
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Iterator
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import ValidationError
from .limits import MAX_TIME, MIN_TIME, TIME_RANGE, check_stored_text

UTC = timezone.utc
#: cron's named schedules, as five fields
CRON_NICKNAMES = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}
_KIND_PREFIX = re.compile(r"^(cron|systemd|rrule):\s*", re.IGNORECASE)
#: how far a rule is searched for its next firing before it is called exhausted
HORIZON_YEARS = 200
#: the most firings a preview lists (``ostinato calendar next --count``)
MAX_PREVIEW = 10_000
CRON_FIELDS = "minute hour day-of-month month day-of-week"
ZONE_EXPECTED = "an IANA time zone such as Europe/Paris or UTC"


class RuleKind(str, enum.Enum):
    CRON = "cron"
    SYSTEMD = "systemd"
    RRULE = "rrule"


@dataclass(frozen=True, slots=True)
class FireTime:
    at: datetime
    #: what a daylight-saving change did to this firing, if anything
    note: str | None = None
    #: True when the firing is only there for wall times that do not exist (the rule names no
    #: time at this instant): systemd would skip it
    moved: bool = False


def parse_zone(name: str, field: str = "tz") -> ZoneInfo:
    """The zone of an IANA name typed by someone: a name that is not one is refused with the closest
    names (``Europe/Pariss``, ``europe/paris``, ``Paris``: did you mean Europe/Paris?).

    A name in the wrong case is suggested, not accepted: the name is stored and shown as given, and
    whether ``ZoneInfo`` finds it would depend on the file system's case sensitivity."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError(field, ZONE_EXPECTED, name)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a folder (Europe), a name too long
        close = zone_suggestions(name)
        raise ValidationError(field, ZONE_EXPECTED + _did_you_mean(close), name) from None


def _did_you_mean(names: list[str]) -> str:
    return f" (did you mean {' or '.join(names)}?)" if names else ""


def zone_suggestions(name: str, limit: int = 3) -> list[str]:
    """The IANA names closest to ``name``: the same name in another case, the zones of a city of that
    name (``new york``: America/New_York), then the nearest spellings."""
    wanted = name.strip()[:64].lower().replace(" ", "_")
    if not wanted or not wanted.isprintable():
        return []
    by_lower = _zone_names()
    if wanted in by_lower:
        return [by_lower[wanted]]
    cities = [zone for key, zone in by_lower.items() if "/" not in wanted and key.rpartition("/")[2] == wanted]
    if cities:
        return cities[:limit]
    matcher = difflib.SequenceMatcher(b=wanted)
    scored = []
    for key, zone in by_lower.items():
        matcher.set_seq1(key)
        if matcher.real_quick_ratio() >= 0.75 and matcher.quick_ratio() >= 0.75:
            scored.append((matcher.ratio(), zone))
    best = max((score for score, _ in scored), default=0.0)
    return [zone for score, zone in sorted(scored, key=lambda item: (-item[0], item[1]))
            if score >= max(0.75, best - 0.05)][:limit]


@functools.lru_cache(maxsize=1)
def _zone_names() -> dict[str, str]:
    """Every IANA name this system knows, by its lower-case form (``posix/`` and ``right/`` copies left out)."""
    from zoneinfo import available_timezones

    names = sorted(z for z in available_timezones() if not z.startswith(("posix/", "right/")))
    return {zone.lower(): zone for zone in names}


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


@dataclass(frozen=True, slots=True)
class CalendarRule:
    """A validated rule: its kind, its text (prefix removed) and the zone it is read in."""

    kind: RuleKind
    expression: str
    tz: str

    @classmethod
    def parse(cls, text: str, tz: str = "UTC", *, kind: RuleKind | str | None = None, field: str = "calendar") -> "CalendarRule":
        if not isinstance(text, str) or not text.strip():
            raise ValidationError(field, "a cron, systemd calendar or RRULE expression", text)
        check_stored_text(text, field, 1000)
        parse_zone(tz)
        rule_kind = RuleKind(kind) if kind is not None else detect_kind(text)
        expression = _KIND_PREFIX.sub("", text.strip())
        rule = cls(rule_kind, expression, tz)
        try:
            next(rule._wall_times(datetime(2000, 1, 1), field=field), None)  # reading it is the check
        except ValidationError:
            if kind is not None or not _guessed_between_cron_and_systemd(text):
                raise
            raise _every_kind_refuses(expression, field) from None
        return rule

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self._zone_name())

    def _zone_name(self) -> str:
        if self.kind is RuleKind.SYSTEMD:
            head, _, last = self.expression.rpartition(" ")
            if head and _is_zone(last):
                return last
        return self.tz

    def next_fire_times(self, after: datetime, count: int = 1) -> list[FireTime]:
        """The next ``count`` firings strictly after ``after`` (an aware instant)."""
        if after.tzinfo is None:
            raise ValidationError("after", "a time with a zone", after.isoformat())
        zone = self.zone
        start_local = after.astimezone(zone).replace(tzinfo=None) - timedelta(hours=3)  # a DST gap is at most 2 h
        found: list[FireTime] = []
        gap_walls: list[datetime] = []  # wall times of the gap collapsed into the last firing
        for wall in self._wall_times(start_local):
            instant, note = resolve_local(wall, zone)
            if instant <= after:
                continue
            in_gap = note is not None and _IN_GAP in note
            if found and instant == found[-1].at:
                last = found[-1]
                if in_gap:
                    gap_walls.append(wall)
                if in_gap and last.moved:
                    found[-1] = FireTime(instant, _gap_note(gap_walls, instant), moved=True)
                elif gap_walls:  # the gap's times and a time the rule names share this instant
                    found[-1] = FireTime(instant, _gap_note(gap_walls, instant, with_rule_time=True))
                continue
            gap_walls = [wall] if in_gap else []
            found.append(FireTime(instant, note, moved=in_gap))
            if len(found) > count:
                break
        return found[:count]

    def next_fire_time(self, after: datetime) -> datetime | None:
        times = self.next_fire_times(after, 1)
        return times[0].at if times else None

    # -- wall-clock iteration, per kind ------------------------------------
    def _wall_times(self, start: datetime, *, field: str = "calendar") -> Iterator[datetime]:
        """Wall-clock times of the rule (naive, in its zone) after ``start``."""
        if self.kind is RuleKind.CRON:
            return _cron_times(self.expression, start, field)
        if self.kind is RuleKind.SYSTEMD:
            return _systemd_times(self.expression, start, field)
        return _rrule_times(self.expression, start, field)


def _every_kind_refuses(expression: str, field: str) -> ValidationError:
    """The refusal of a text whose kind was guessed: what cron, systemd and RRULE each made of it."""
    said = [f"as cron: {_cron_complaint(expression)}", f"as systemd OnCalendar: {_systemd_complaint(expression)}",
            "as RRULE: it starts with FREQ=, RRULE: or DTSTART"]
    return ValidationError(field, "a cron, systemd OnCalendar or RRULE expression; " + "; ".join(said), expression)


def _is_zone(name: str) -> bool:
    if not name or name[0] in "0123456789*":
        return False
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


_IN_GAP = "does not exist"


def _gap_note(walls: list[datetime], at: datetime, *, with_rule_time: bool = False) -> str:
    times = ", ".join(f"{w:%H:%M:%S}" for w in walls)
    verb = "does" if len(walls) == 1 else "do"
    where = f"runs once, with {at:%H:%M:%S}" if with_rule_time else f"runs once, at the gap's end, {at:%H:%M:%S}"
    return f"{times} {verb} not exist (daylight-saving gap): {where}"


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
        return f"an @nickname is one of {', '.join(CRON_NICKNAMES)}{_did_you_mean(close)}"
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


def _systemd_complaint(expression: str) -> str:
    """Why ``expression`` is not a systemd calendar event: an unknown zone at its end, or what
    ``oncalendar`` said."""
    from oncalendar import BaseIterator, OnCalendarError

    head, _, last = expression.strip().rpartition(" ")
    if head and _ZONE_LIKE.match(last) and not _is_zone(last):
        return f"an IANA time zone at the end, not {last!r}{_did_you_mean(zone_suggestions(last))}"
    try:
        BaseIterator(head if head and _is_zone(last) else expression, datetime(2000, 1, 1))
    except OnCalendarError as exc:
        return str(exc)
    return "a valid event"  # only asked about events that failed


def _systemd_times(expression: str, start: datetime, field: str) -> Iterator[datetime]:
    from oncalendar import BaseIterator, OnCalendarError

    head, _, last = expression.strip().rpartition(" ")
    text = head if head and _is_zone(last) else expression
    try:
        iterator = BaseIterator(text, start)
    except OnCalendarError:
        raise ValidationError(field, f"a systemd calendar event such as 'Mon..Fri *-*-* 02:00': "
                                     f"{_systemd_complaint(expression)}", expression) from None
    try:
        yield from iterator
    except OnCalendarError as exc:
        raise ValidationError(field, f"a systemd calendar event ({exc})", expression) from None


def _rrule_times(expression: str, start: datetime, field: str) -> Iterator[datetime]:
    from dateutil.rrule import rrule, rrulestr

    text = expression.strip()
    has_dtstart = "DTSTART" in text.upper()
    body = text if "RRULE:" in text.upper() or has_dtstart else f"RRULE:{text}"
    try:
        rule = rrulestr(body, dtstart=None if has_dtstart else datetime(2000, 1, 1), ignoretz=True)
    except (ValueError, TypeError) as exc:
        raise ValidationError(field, f"an RFC 5545 RRULE such as FREQ=DAILY;BYHOUR=2 ({exc})", expression) from None
    if not isinstance(rule, rrule):
        raise ValidationError(field, "a single RRULE (no RDATE, EXDATE or several rules)", expression)
    if rule._interval < 1:  # dateutil would loop forever
        raise ValidationError(field, "an RRULE with INTERVAL of 1 or more", expression)
    if has_dtstart and not MIN_TIME.replace(tzinfo=None) <= rule._dtstart < MAX_TIME.replace(tzinfo=None):
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


def resolve_local(wall: datetime, zone: ZoneInfo) -> tuple[datetime, str | None]:
    """The instant a wall-clock time of ``zone`` fires at, and a note when DST moved it."""
    early = wall.replace(tzinfo=zone, fold=0)
    late = wall.replace(tzinfo=zone, fold=1)
    if early.utcoffset() == late.utcoffset():
        return early, None
    exists = early.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == wall
    if exists:
        return early, f"{wall:%H:%M:%S} happens twice ({_offset(early)} then {_offset(late)}): runs once, at the first"
    end = _gap_end(wall, zone)
    return end, _gap_note([wall], end)


def _gap_end(wall: datetime, zone: ZoneInfo) -> datetime:
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
