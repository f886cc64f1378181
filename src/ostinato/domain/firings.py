"""Fire times and catch-up: what happens to the fire times a schedule missed (see
docs/reference/schedules.md#catch-up). Pure rules.

A schedule with fire times (a calendar schedule, or a periodic one whose job the beat
processes send, ``mode = send``) keeps a cursor, ``fired_through``: every fire time at or
before it has been handled (run, sent, or skipped). The fire times due at ``now`` are those
after the cursor and not after ``now``.

- Usually one is due, or a few within :attr:`~ostinato.domain.schedules.ScheduleTiming.catch_up_grace`
  of ``now`` (a beat ticking a little late): every one of them runs.
- After an outage, several are due and the oldest is older than the grace: a **backlog**. Its
  schedule's :class:`CatchUp` rule decides: ``latest`` (the default) runs the latest one only,
  ``all`` runs them all up to a budget (the most recent ones, oldest first), ``skip`` runs none
  and waits for the next fire time. What is not run is recorded as skipped (one record for a
  run of skipped fire times: the first, the last and how many).

A periodic schedule sent by the beats fires on a grid: the cursor (or its creation) plus whole
periods, the first one period after it, as Celery beat's intervals do. A periodic schedule the
deadline scheduler runs has no fire times (only a staleness bound) and so no catch-up rule.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from .calendars import CalendarRule
from .errors import ValidationError
from .schedule_kinds import RunMode, ScheduleKind

#: a calendar backlog is walked one fire time at a time up to this many; beyond, only its tail is read
SCAN_LIMIT = 20_000
#: the most fire times of a backlog kept in memory (the tail that may run)
KEEP_LIMIT = 1_000


class CatchUpKind(str, enum.Enum):
    #: run the latest fire time of a backlog only (the default)
    LATEST = "latest"
    #: run every fire time of a backlog, up to a budget (the most recent ones)
    ALL = "all"
    #: run none of a backlog; wait for the next fire time
    SKIP = "skip"


CATCH_UP_FORMS = "latest, skip, or all:N (N ≥ 1, the most fire times of a backlog that run)"


@dataclass(frozen=True, slots=True)
class CatchUp:
    """A schedule's rule for the fire times an outage made it miss."""

    kind: CatchUpKind = CatchUpKind.LATEST
    #: ``all`` only: the most fire times of one backlog that run (the most recent ones)
    budget: int | None = None

    @classmethod
    def latest(cls) -> CatchUp:
        return cls(CatchUpKind.LATEST)

    @classmethod
    def all(cls, budget: int) -> CatchUp:
        return cls(CatchUpKind.ALL, budget).validated()

    @classmethod
    def skip(cls) -> CatchUp:
        return cls(CatchUpKind.SKIP)

    @classmethod
    def parse(cls, value: Any, field: str = "catch_up") -> CatchUp:
        """``latest``, ``skip``, ``all:N`` (or a :class:`CatchUp`); ValidationError naming ``field``."""
        if isinstance(value, CatchUp):
            return value.validated(field)
        if not isinstance(value, str):
            raise ValidationError(field, CATCH_UP_FORMS, value)
        kind, _, budget = value.strip().partition(":")
        try:
            rule = cls(CatchUpKind(kind.strip().lower()), int(budget) if budget.strip() else None)
        except ValueError:
            raise ValidationError(field, CATCH_UP_FORMS, value) from None
        return rule.validated(field)

    def validated(self, field: str = "catch_up") -> CatchUp:
        try:
            kind = CatchUpKind(self.kind)
        except ValueError:
            raise ValidationError(field, CATCH_UP_FORMS, self.kind) from None
        if kind is CatchUpKind.ALL:
            if isinstance(self.budget, bool) or not isinstance(self.budget, int) or not 1 <= self.budget <= KEEP_LIMIT:
                raise ValidationError(f"{field}.budget", f"a whole number from 1 to {KEEP_LIMIT} for all", self.budget)
        elif self.budget is not None:
            raise ValidationError(f"{field}.budget", f"nothing for {kind.value} (a budget is for all)", self.budget)
        return self if kind is self.kind else CatchUp(kind, self.budget)

    def __str__(self) -> str:
        return f"all:{self.budget}" if self.kind is CatchUpKind.ALL else self.kind.value


@dataclass(frozen=True, slots=True)
class Skipped:
    """A run of consecutive fire times not run: the first, the last, and how many (None: more than
    were counted, after a very long outage)."""

    first: datetime
    last: datetime
    count: int | None


@dataclass(frozen=True, slots=True)
class CatchUpPlan:
    """What to do with the fire times due: run these (oldest first), record those as skipped,
    and move the cursor to ``fired_through`` (the last fire time skipped, so that the first one
    to run is the next after it; None: the cursor stays)."""

    run: tuple[datetime, ...] = ()
    skipped: Skipped | None = None

    @property
    def fired_through(self) -> datetime | None:
        return self.skipped.last if self.skipped is not None else None


@dataclass(frozen=True, slots=True)
class Due:
    """The fire times due: the most recent ones (oldest first), how many came before them, and
    the instant just before the first of them (the fire time before it, or the cursor)."""

    tail: tuple[datetime, ...]
    before: datetime
    #: fire times before ``tail`` (None: more than :data:`SCAN_LIMIT`, not counted)
    earlier: int | None = 0
    #: the oldest fire time due (the first of ``tail`` when ``earlier`` is 0)
    first: datetime | None = None

    @property
    def count(self) -> int | None:
        return None if self.earlier is None else self.earlier + len(self.tail)


class FiringSchedule(Protocol):
    """A schedule as the rules of fire times read it (``domain.schedules.Schedule`` is one)."""

    @property
    def kind(self) -> ScheduleKind: ...
    @property
    def mode(self) -> RunMode: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def fired_through(self) -> datetime | None: ...
    @property
    def catch_up(self) -> CatchUp: ...
    @property
    def rule(self) -> CalendarRule: ...
    @property
    def period(self) -> timedelta: ...
    @property
    def cron_max_duration(self) -> timedelta: ...


def has_fire_times(schedule: FiringSchedule) -> bool:
    """Calendar schedules, and periodic ones sent by the beats (their grid)."""
    return schedule.kind is ScheduleKind.CALENDAR or schedule.mode is RunMode.SEND


def cursor_of(schedule: FiringSchedule) -> datetime:
    """The last fire time handled, or the schedule's creation."""
    return schedule.fired_through or schedule.created_at


def fire_time_after(schedule: FiringSchedule, after: datetime) -> datetime | None:
    """The schedule's first fire time strictly after ``after`` (None when its rule fires no more)."""
    if schedule.kind is ScheduleKind.CALENDAR:
        return schedule.rule.next_fire_time(after)
    period, anchor = schedule.period, cursor_of(schedule)
    steps = max((after - anchor) // period + 1, 1)
    return anchor + steps * period


def due_fire_times(schedule: FiringSchedule, now: datetime, keep: int = KEEP_LIMIT + 1) -> Due:
    """The fire times after the cursor and not after ``now``: the last ``keep`` and how many before."""
    cursor = cursor_of(schedule)
    if schedule.kind is not ScheduleKind.CALENDAR:
        period = schedule.period
        count = max((now - cursor) // period, 0)
        shown = min(count, keep)
        tail = tuple(cursor + (count - shown + i + 1) * period for i in range(shown))
        return Due(tail, cursor + (count - shown) * period, count - shown, cursor + period if count else None)
    rule = schedule.rule
    window: deque[datetime] = deque(maxlen=keep + 1)
    first, seen, after, size = None, 0, cursor, 2  # usually one or two are due: read few, then more
    while seen < SCAN_LIMIT:
        batch = [f.at for f in rule.next_fire_times(after, min(size, SCAN_LIMIT - seen))]
        size = min(size * 4, 256)
        for at in batch:
            if at > now:
                return _walked(window, seen, cursor, first, keep)
            first = first or at
            window.append(at)
            seen += 1
        if not batch:
            return _walked(window, seen, cursor, first, keep)
        after = batch[-1]
    start, tail = _calendar_tail(schedule, after, now, keep)
    return Due(tail, start, None, first)


def _walked(window: deque[datetime], seen: int, cursor: datetime, first: datetime | None, keep: int) -> Due:
    if seen <= keep:
        return Due(tuple(window), cursor, 0, first)
    items = list(window)
    return Due(tuple(items[1:]), items[0], seen - keep, first)


def _calendar_tail(schedule: FiringSchedule, scanned: datetime, now: datetime,
                   keep: int) -> tuple[datetime, tuple[datetime, ...]]:
    """The last fire times not after ``now`` of a backlog too long to walk (more than
    :data:`SCAN_LIMIT`), read from ever further back until some are found, with the instant
    they were read from."""
    span = max(now - scanned, timedelta(minutes=1))
    while True:
        start = max(now - span, scanned)
        found = [f.at for f in schedule.rule.next_fire_times(start, keep + 1) if f.at <= now]
        if found or start == scanned:
            if len(found) > keep:
                return found[-keep - 1], tuple(found[-keep:])
            return start, tuple(found)
        span *= 4


def plan_catch_up(rule: CatchUp, due: Due, now: datetime, grace: timedelta) -> CatchUpPlan:
    """What runs of the fire times ``due`` at ``now`` under ``rule``: every one of them when there is
    one, or none is older than ``grace`` (they are late, not missed), else the rule decides (a backlog)."""
    if not due.tail:
        return CatchUpPlan()
    oldest = due.first or due.tail[0]
    if due.earlier == 0 and (len(due.tail) == 1 or now - oldest <= grace):
        return CatchUpPlan(run=due.tail)
    kind = CatchUpKind(rule.kind)
    runs = {CatchUpKind.LATEST: 1, CatchUpKind.ALL: rule.budget or 1, CatchUpKind.SKIP: 0}[kind]
    kept = due.tail[len(due.tail) - min(runs, len(due.tail)):] if runs else ()
    skipped_count = None if due.count is None else due.count - len(kept)
    if skipped_count == 0:
        return CatchUpPlan(run=kept)
    last_skipped = due.tail[len(due.tail) - len(kept) - 1] if len(kept) < len(due.tail) else due.before
    return CatchUpPlan(run=kept, skipped=Skipped(oldest, last_skipped, skipped_count))


def check_catch_up(schedule: FiringSchedule) -> None:
    """A schedule's catch-up rule is ``latest`` unless it has fire times (ValidationError naming it)."""
    rule = schedule.catch_up
    if not isinstance(rule, CatchUp):
        raise ValidationError("catch_up", CATCH_UP_FORMS, rule)
    rule.validated()
    if rule.kind is not CatchUpKind.LATEST and not has_fire_times(schedule):
        raise ValidationError("catch_up", "latest for a periodic schedule the scheduler runs (it has no fire times, "
                                          "only a staleness bound)", str(rule))


#: a periodic schedule sent by the beats is in ERROR (``stale``) when a fire time is not sent
#: within its period, and never sooner than this
SEND_ALLOWANCE_FLOOR = timedelta(minutes=1)


def send_deadline(schedule: FiringSchedule) -> datetime | None:
    """When a schedule sent by the beats is in ERROR unless its next fire time is sent: that fire
    time plus ``cron_max_schedule_duration`` (calendar) or its period, at least a minute (periodic)."""
    due = fire_time_after(schedule, cursor_of(schedule))
    if due is None:
        return None
    if schedule.kind is ScheduleKind.CALENDAR:
        return due + schedule.cron_max_duration
    return due + max(schedule.period, SEND_ALLOWANCE_FLOOR)


class FiringStatus(str, enum.Enum):
    #: a beat is sending it, until its lease ends (then another beat may take it over)
    CLAIMED = "claimed"
    #: the broker took it
    SENT = "sent"
    #: the catch-up rule did not run it (one record for a run of consecutive fire times)
    SKIPPED = "skipped"


@dataclass(frozen=True, slots=True)
class FiringRecord:
    """One row of the ledger of fire times (``schedule_firing``)."""

    schedule: str
    nominal_at: datetime
    status: FiringStatus
    #: when it was claimed or skipped
    handled_at: datetime
    #: skipped: the last fire time of the run, and how many (None: too many to count)
    last_at: datetime | None = None
    firings: int | None = 1
    #: the beat (node/name) that claimed or sent it
    sender: str | None = None
    sent_at: datetime | None = None
    #: claimed: the claim's tag, and when another beat may take it over
    claimed_by: str | None = None
    lease_until: datetime | None = None


def skipped_record(name: str, skipped: Skipped, now: datetime, sender: str | None) -> FiringRecord:
    return FiringRecord(name, skipped.first, FiringStatus.SKIPPED, now, skipped.last, skipped.count, sender)


@dataclass(frozen=True, slots=True)
class Claim:
    """A fire time a beat claimed and must send: the Celery task, its arguments and options, and the
    claim's tag and lease (after ``lease_until`` another beat may take it over)."""

    schedule: str
    nominal_at: datetime
    task: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    options: dict[str, Any]
    tag: str
    lease_until: datetime


def claim_cursor(plan: CatchUpPlan) -> datetime | None:
    """The cursor after a beat's claim: the last fire time it claimed or skipped (None: nothing)."""
    handled = [*plan.run, *([plan.skipped.last] if plan.skipped is not None else [])]
    return max(handled) if handled else None


def describe_catch_up(rule: CatchUp) -> str:
    return {CatchUpKind.LATEST: "run the latest missed fire time only (latest)",
            CatchUpKind.ALL: f"run missed fire times, at most {rule.budget} (all:{rule.budget})",
            CatchUpKind.SKIP: "skip missed fire times (skip)"}[CatchUpKind(rule.kind)]


def caught_up(firing: FiringRecord, grace: timedelta) -> bool:
    """A fire time claimed (then sent) from a backlog: more than the catch-up grace after it, so
    that its schedule's catch-up rule is what ran it (a run of skipped ones is not)."""
    return firing.status is not FiringStatus.SKIPPED and firing.handled_at - firing.nominal_at > grace


def describe_firing(firing: FiringRecord, when: Any, grace: timedelta | None = None) -> str:
    """One line of the ledger for people: ``when`` formats a time; with the catch-up ``grace``, a
    fire time sent from a backlog is said to be caught up."""
    if firing.status is FiringStatus.SKIPPED:
        count = "many" if firing.firings is None else str(firing.firings)
        span = f"{when(firing.nominal_at)}" + (f" to {when(firing.last_at)}" if firing.last_at != firing.nominal_at else "")
        return f"skipped {count} fire time{'' if firing.firings == 1 else 's'} ({span}) at {when(firing.handled_at)}"
    late = grace is not None and caught_up(firing, grace)
    if firing.status is FiringStatus.SENT:
        if late:
            return f"caught up {when(firing.nominal_at)}: sent at {when(firing.sent_at)} by {firing.sender}"
        return f"sent {when(firing.nominal_at)} at {when(firing.sent_at)} by {firing.sender}"
    what = "claimed (catching up)" if late else "claimed"
    return f"{what} {when(firing.nominal_at)} by {firing.sender}, lease until {when(firing.lease_until)}"


def firing_to_dict(firing: FiringRecord, grace: timedelta | None = None) -> dict[str, Any]:
    """A ledger row as JSON (times in ISO 8601); with the catch-up ``grace``, ``caught_up`` says
    whether it was run from a backlog by the catch-up rule."""
    def iso(value: datetime | None) -> str | None:
        return None if value is None else value.isoformat()

    found = {"fire_time": iso(firing.nominal_at), "status": firing.status.value, "handled_at": iso(firing.handled_at),
             "last_fire_time": iso(firing.last_at), "fire_times": firing.firings, "sender": firing.sender,
             "sent_at": iso(firing.sent_at), "lease_until": iso(firing.lease_until)}
    if grace is not None:
        found["caught_up"] = caught_up(firing, grace)
    return found
