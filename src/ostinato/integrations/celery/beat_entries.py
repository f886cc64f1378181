"""A Celery app's ``beat_schedule``, read into Ostinato schedules the beats send (mode ``send``;
see docs/reference/distributed.md#celery-beat).

Each entry becomes a schedule of the same name (a name Ostinato cannot store is written with ``-``
for what it refuses, and a digest of the entry's name), whose job is the entry's task with its
``args``, ``kwargs`` and ``options``:

- a **number of seconds**, a ``timedelta`` or a ``celery.schedules.schedule``: a periodic
  schedule whose fire times are its creation (or its last fire time) plus whole periods, as beat's;
- a ``crontab``: a calendar rule in the crontab's own zone when one was set on it
  (``entry["schedule"].tz = ZoneInfo("Europe/Paris")``, which Celery honours too), else the app's
  ``timezone`` (UTC with ``enable_utc`` and no timezone). The rule is written from Celery's
  expanded fields: as cron when the day of the month or of the week is ``*``, else as a systemd
  calendar event, since Celery requires both days to match where cron accepts either. A minute or
  hour field that covers its whole range, or steps through it from 0, repeats through the hours
  across daylight-saving changes (see docs/reference/schedules.md#daylight-saving-changes);
- a ``solar`` schedule: a solar calendar rule (``solar:sunrise 48.8566 2.3522``, fire times at the
  event's instants, see docs/reference/schedules.md#solar-events) where the ``ephem`` package is
  installed, as Celery's own solar schedules need; refused, naming the field, where it is not;
- a ``relative`` interval, a ``nowfun`` or any other kind: refused.

An option ``ostinato_catch_up`` (``latest``, ``skip``, ``all:N``) sets the entry's catch-up rule
and is not sent; the app's ``ostinato_catch_up`` setting is the default. Any entry Ostinato cannot
honour is refused with the entry's name and the field, before anything is written.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, TypeGuard

from celery import Celery
from celery import schedules as celery_schedules

from ...domain.calendars import CalendarRule
from ...domain.errors import ValidationError
from ...domain.firings import CatchUp
from ...domain.limits import check_json_value
from ...domain.schedules import RunMode, Schedule, ScheduleKind
from ...domain.solar import solar_text
from ...domain.tasks import TaskArguments
from ...domain.zones import parse_zone

#: a crontab entry is in ERROR when a fire time is not sent within this of it
SEND_DEADLINE = timedelta(minutes=5)
#: the option of an entry that sets its catch-up rule (never sent)
CATCH_UP_OPTION = "ostinato_catch_up"
_ENTRY_KEYS = {"task", "schedule", "args", "kwargs", "options", "relative"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,199}$")
_WEEKDAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")
#: created_at of a schedule read from code; the store gives a new one its creation time
_UNSTORED = datetime(2000, 1, 1, tzinfo=UTC)


def beat_schedules(app: Celery, entries: Mapping[str, Any] | None = None) -> tuple[Schedule, ...]:
    """Every entry of ``entries`` (default: the app's ``beat_schedule``) as a schedule; a
    ValidationError names the first entry at fault (``record``) and its field."""
    entries = app.conf.beat_schedule if entries is None else entries
    if not isinstance(entries, Mapping):
        raise ValidationError("beat_schedule", "a mapping of entry names to entries", type(entries).__name__)
    default = CatchUp.parse(app.conf.get(CATCH_UP_OPTION) or "latest", CATCH_UP_OPTION)
    read: list[Schedule] = []
    names: dict[str, str] = {}  # a schedule's name -> the entry that gave it
    for entry_name, entry in entries.items():
        try:
            schedule = entry_schedule(app, entry_name, entry, default)
        except ValidationError as exc:
            raise exc.at(f"beat_schedule entry {entry_name!r}") from None
        if schedule.name in names:
            raise ValidationError("name", f"a name other than entry {names[schedule.name]!r}'s once stored",
                                  schedule.name, record=f"beat_schedule entry {entry_name!r}")
        names[schedule.name] = entry_name
        read.append(schedule)
    return tuple(read)


def schedule_name(entry_name: Any) -> str:
    """The entry's name, or, when Ostinato cannot store it, its characters outside letters, digits
    and ``_.@:-`` as ``-`` followed by a digest of the name (so that two entries stay two)."""
    if not isinstance(entry_name, str) or not entry_name.strip():
        raise ValidationError("name", "a non-empty entry name", entry_name)
    if _NAME.fullmatch(entry_name):
        return entry_name
    digest = hashlib.sha1(entry_name.encode("utf-8", "backslashreplace")).hexdigest()[:8]
    cleaned = re.sub(r"[^A-Za-z0-9_.@:-]+", "-", entry_name).strip("-_.@:")[:180] or "entry"
    return f"{cleaned}-{digest}"


def entry_schedule(app: Celery, entry_name: str, entry: Any, default: CatchUp) -> Schedule:
    """One entry as a schedule the beats send; a ValidationError names the field."""
    if not isinstance(entry, Mapping):
        raise ValidationError("entry", "a mapping with task and schedule", type(entry).__name__)
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise ValidationError(unknown[0], f"one of {', '.join(sorted(_ENTRY_KEYS))}", entry[unknown[0]])
    task = entry.get("task")
    if not isinstance(task, str) or not task.strip():
        raise ValidationError("task", "the name of a Celery task", task)
    args, kwargs, options = _arguments(entry)
    catch_up = CatchUp.parse(options.pop(CATCH_UP_OPTION), f"options.{CATCH_UP_OPTION}") \
        if CATCH_UP_OPTION in options else default
    timing = _timing(app, entry.get("schedule"), bool(entry.get("relative", False)))
    schedule = Schedule(name=schedule_name(entry_name), task_type=task, created_at=_UNSTORED, mode=RunMode.SEND,
                        arguments=TaskArguments(args, kwargs), options=options, catch_up=catch_up, **timing)
    return schedule.validated()


def _arguments(entry: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any], dict[str, Any]]:
    args, kwargs, options = entry.get("args") or (), entry.get("kwargs") or {}, entry.get("options") or {}
    if isinstance(args, (str, bytes)) or not isinstance(args, Iterable):
        raise ValidationError("args", "a list of positional arguments", args)
    args = tuple(args)
    if not isinstance(kwargs, Mapping):
        raise ValidationError("kwargs", "a mapping of keyword arguments", kwargs)
    if not isinstance(options, Mapping):
        raise ValidationError("options", "a mapping of Celery's options of a send", options)
    for field, value in (("args", list(args)), ("kwargs", dict(kwargs)), ("options", dict(options))):
        lazy = _lazy_value(value)
        if lazy is not None:
            raise ValidationError(field, "values stored as JSON (a BeatLazyFunc is computed at each send by Celery's "
                                         "beat; Ostinato stores the entry)", lazy)
        try:
            check_json_value(value, field)
        except ValidationError as exc:
            raise ValidationError(exc.field, "JSON values (Ostinato stores the entry: numbers, text, lists, "
                                             "mappings; an expires as seconds)", exc.got) from None
    return args, dict(kwargs), dict(options)


def _lazy_value(value: Any) -> str | None:
    from celery.beat import BeatLazyFunc

    values = value.values() if isinstance(value, Mapping) else value
    return next((repr(v) for v in values if isinstance(v, BeatLazyFunc)), None)


def _timing(app: Celery, value: Any, relative: bool) -> dict[str, Any]:
    """The schedule's timing fields for Celery's ``schedule`` value of an entry."""
    if isinstance(value, bool) or value is None:
        raise ValidationError("schedule", "a number of seconds, a timedelta, a schedule or a crontab", value)
    if isinstance(value, str):
        raise ValidationError("schedule", "a number of seconds, a timedelta, a schedule or a crontab (for cron "
                                          f"text, crontab.from_string({value!r}))", value)
    if isinstance(value, (int, float, timedelta)):
        value = celery_schedules.schedule(value, relative)
    if getattr(value, "nowfun", None) is not None:
        raise ValidationError("schedule.nowfun", "no nowfun: Ostinato reads the time from its own clock", value)
    if isinstance(value, celery_schedules.crontab):
        return _crontab_timing(app, value)
    if isinstance(value, celery_schedules.solar):
        return _solar_timing(value)
    if type(value) is celery_schedules.schedule:
        if value.relative:
            raise ValidationError("schedule.relative", "false: an interval rounded to its resolution has no fixed "
                                                       "fire times to claim", True)
        every: timedelta = value.run_every  # type: ignore[attr-defined]  # set by schedule(); the stubs omit it
        seconds = every.total_seconds()
        if seconds < 1:
            raise ValidationError("schedule", "an interval of at least 1 second", seconds)
        return {"kind": ScheduleKind.PERIODIC, "scheduling_period": every}
    raise ValidationError("schedule", "a number of seconds, a timedelta, a schedule or a crontab",
                          f"{type(value).__module__}.{type(value).__qualname__}")


def _crontab_timing(app: Celery, value: celery_schedules.crontab) -> dict[str, Any]:
    zone = value.__dict__.get("tz")
    if zone is None:
        try:
            zone = app.timezone
        except Exception:  # an unknown name in the app's timezone setting
            parse_zone(str(app.conf.timezone), "timezone")
            raise
    return {"kind": ScheduleKind.CALENDAR, "cron_schedule": crontab_rule(value), "tz": zone_name(zone),
            "cron_max_schedule_duration": SEND_DEADLINE}


def _solar_timing(value: celery_schedules.solar) -> dict[str, Any]:
    """A solar schedule as a solar calendar rule, checked (its event and place, and ephem installed)."""
    event, latitude, longitude = (getattr(value, name, None) for name in ("event", "lat", "lon"))
    if not isinstance(event, str) or not _is_number(latitude) or not _is_number(longitude):
        raise ValidationError("schedule", "a solar event with a latitude and a longitude", repr(value))
    rule = CalendarRule.parse(solar_text(event, latitude, longitude), "UTC", field="schedule")
    return {"kind": ScheduleKind.CALENDAR, "cron_schedule": f"solar:{rule.expression}", "tz": "UTC",
            "cron_max_schedule_duration": SEND_DEADLINE}


def _is_number(value: Any) -> TypeGuard[float]:
    """A number (int or float), not a bool."""
    return not isinstance(value, bool) and isinstance(value, (int, float))


def zone_name(zone: Any) -> str:
    """An IANA name for a zone Celery holds (zoneinfo, pytz, dateutil, datetime.timezone.utc)."""
    if zone is UTC or zone == UTC:
        return "UTC"
    name = getattr(zone, "key", None) or getattr(zone, "zone", None)
    if name is None and isinstance(zone, str):
        name = zone
    if not isinstance(name, str):
        raise ValidationError("schedule.tz", "an IANA time zone (the app's timezone setting, or one set on the "
                                             "crontab)", repr(zone) if isinstance(zone, tzinfo) else zone)
    parse_zone(name, "schedule.tz")
    return name


def crontab_rule(value: celery_schedules.crontab) -> str:
    """A crontab's expanded fields as a cron expression, or as a systemd calendar event when both
    days are restricted (Celery requires both to match; cron would accept either)."""
    minute, hour, dom, month, dow = (_field_values(value, name, low, high) for name, low, high in _CRON_RANGES)
    both_days = len(dom) < 31 and len(dow) < 7
    if not both_days:
        return " ".join([_field(minute, 0, 59), _field(hour, 0, 23), _field(dom, 1, 31), _field(month, 1, 12),
                         _field(dow, 0, 6)])
    days = ",".join(_WEEKDAYS[d] for d in dow)
    return (f"{days} *-{_field(month, 1, 12, systemd=True)}-{_field(dom, 1, 31, systemd=True)} "
            f"{_field(hour, 0, 23, systemd=True)}:{_field(minute, 0, 59, systemd=True)}:00")


_CRON_RANGES = (("minute", 0, 59), ("hour", 0, 23), ("day_of_month", 1, 31), ("month_of_year", 1, 12),
                ("day_of_week", 0, 6))


def _field_values(value: celery_schedules.crontab, name: str, low: int, high: int) -> list[int]:
    """A crontab field's expanded values, checked (Celery checks them when the crontab is made; a
    field changed afterwards is refused here)."""
    values = getattr(value, name, None)
    if not isinstance(values, (set, frozenset, list, tuple)) or not values or any(
            isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high for v in values):
        raise ValidationError(f"schedule.{name}", f"values from {low} to {high}",
                              sorted(values, key=str) if isinstance(values, (set, frozenset)) else values)
    return sorted(values)


def _step(values: list[int], low: int, high: int) -> int | None:
    """The step n when ``values`` are ``low, low+n, …`` through the field (``*/n``)."""
    for step in range(2, high - low + 1):
        if values == list(range(low, high + 1, step)):
            return step
    return None


def _runs(values: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and v == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs


def _field(values: list[int], low: int, high: int, *, systemd: bool = False) -> str:
    """One expanded field as cron writes it (``*``, ``*/15``, ``1,5-7``) or as a systemd calendar
    event does (``*``, ``00/15``, ``01,05..07``)."""
    if values == list(range(low, high + 1)):
        return "*"
    step = _step(values, low, high)
    if step is not None:
        return f"{low:02d}/{step}" if systemd else f"*/{step}"
    number, through = ("{:02d}", "..") if systemd else ("{}", "-")
    return ",".join(number.format(a) if a == b else f"{number.format(a)}{through}{number.format(b)}"
                    for a, b in _runs(values))
