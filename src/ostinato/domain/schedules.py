"""Schedules: deadline-greedy scheduling (see docs/design/deadline-greedy.md), with periodic
tasks as one way to run them. Pure rules, by the proposal's names:

- a schedule is **periodic** (``scheduling_period``, ``cooldown_duration``) or
  **calendar** (``cron_schedule``: any rule of ``domain.calendars``, and
  ``cron_max_schedule_duration``);
- :func:`get_schedule_condition`: ``OK``, ``WARNING`` or ``ERROR``, each
  WARNING and ERROR with a reason code (one of the proposal's future directions);
- :func:`get_schedule_start_times`: ``can_start_by`` and ``should_start_by``,
  with the retry backoff and the blackout periods;
- :func:`assess`: both at once, with the configured :class:`ScheduleTiming`: the one
  path every interface (command line, API, dashboard, metrics) takes, so that
  none can forget the ping timeout or the backoff;
- :func:`apply_run_end`: a run's end moves the state (the EWMA of good
  durations and their spread, the failure count, the items of a partial failure).

How long runs last (:func:`expected_run`: the schedule's ``expected_duration`` when it has one, else
the moving average), the spread of good durations, the fit before a blackout period and the retry by
the failed run's length are ``domain.run_lengths``; partial failures, ``domain.run_items``.

Where the proposal leaves a case open, the rule chosen is written here:

- a schedule that never succeeded counts from ``created_at`` (it is as late as
  if it had last succeeded when it was created);
- the proposal writes the periodic "running" warning as ``owner_start_at +
  average_good_duration > last_good_start_at - scheduling_period``; the
  deadline is ``last_good_start_at + scheduling_period`` in every other
  formula, and that is the one used;
- ``average_good_duration`` unknown (never succeeded) counts as zero;
- a periodic schedule given no ``cooldown_duration`` runs once a period, not back to back: it can
  start when a tenth of the period is left before it should (``should_start_by - period / 10``, and
  not before its last good run ended). Every 1h with runs of a minute starts about every 53 minutes,
  each run done 6 minutes before its deadline. After a failed run it is retried by the backoff alone:
  the period's run is still to be done. ``cooldown_duration`` 0 asks for runs back to back; any
  other one, for that wait after a good run (the proposal's rule);
- a paused schedule is WARNING (``PAUSED``), not ERROR, whatever its age;
- an owner's last sign of life is its last ping, or the run's start when no ping
  was recorded (:func:`last_sign_of_life`); it is silent when that is more than
  the ping timeout ago (exactly the timeout is not silent). The condition
  (``owner_silent``) and the steal (:func:`steal_step`) read it the same way;
- a run asked for now (``domain.run_now.request_run``, ``schedule run-now``) can start at once, whatever the
  cooldown, the period or the retry backoff say, and should start by the moment it was asked (the pick
  takes it before schedules due later, after those already past due); not in a blackout period, and
  never beside a run in progress: asked while one runs, it starts when that one ends. It is done by the
  first run that starts at or after the request (``last_start_at``). Paused schedules and those the
  beats send are refused: resume the one, send the other from Celery.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from . import run_lengths
from .blackouts import BlackoutPeriod, check_blackouts
from .calendars import CalendarRule, parse_zone
from .durations import format_duration
from .errors import ValidationError
from .firings import CatchUp, check_catch_up, fire_time_after, send_deadline
from .limits import check_json_value, check_stored_text
from .run_items import DEFAULT_PARTIAL_FAILURE_THRESHOLD, ItemCounts, check_threshold, partial_failure
from .run_lengths import expected_length
from .schedule_checks import check_declared_fields, check_fields
from .schedule_kinds import RunMode, ScheduleKind
from .tasks import TaskArguments

#: a periodic schedule given no cooldown starts when this share of its period is left before its latest
#: start (``should_start_by``): once a period, never back to back
PERIOD_SPARE = 0.1
#: the last 3 runs carry about 75% of the average's weight
DEFAULT_ALPHA = 0.37
#: the retry backoff after failure 1, 2, and 3 or more
DEFAULT_RETRY_BACKOFF = (timedelta(minutes=5), timedelta(hours=1), timedelta(hours=4))
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,199}$")


class State(str, enum.Enum):
    OK = "OK"
    WARNING = "WARNING"
    ERROR = "ERROR"

    @property
    def rank(self) -> int:
        """Worst first: ERROR 0, WARNING 1, OK 2."""
        return {"ERROR": 0, "WARNING": 1, "OK": 2}[self.value]


class Reason(str, enum.Enum):
    #: periodic: no good start within ``scheduling_period``
    STALE = "stale"
    #: calendar: the run due at the last firing has not completed within ``cron_max_schedule_duration``
    DEADLINE_MISSED = "deadline_missed"
    #: not running, and even started now it would likely end after its deadline
    LIKELY_LATE = "likely_late"
    #: running, and likely to end after its deadline
    RUNNING_LATE = "running_late"
    #: the last run failed
    LAST_RUN_FAILED = "last_run_failed"
    #: running, but its owner has not pinged for longer than the ping timeout
    OWNER_SILENT = "owner_silent"
    #: paused: not run until resumed
    PAUSED = "paused"
    #: its last good run failed more of its items than its partial_failure_threshold
    PARTIAL_FAILURE = "partial_failure"
    #: its runs are likely longer than every gap between its blackout periods: started out of them anyway
    CANNOT_FIT = "cannot_fit"


#: each reason as a sentence for people (the console, ``schedule condition``)
REASON_TEXT = {
    Reason.STALE: "no good run within its scheduling period",
    Reason.DEADLINE_MISSED: "the run due at its last firing has not completed in time",
    Reason.LIKELY_LATE: "even started now, it would likely end after its deadline",
    Reason.RUNNING_LATE: "running, and likely to end after its deadline",
    Reason.LAST_RUN_FAILED: "its last run failed",
    Reason.OWNER_SILENT: "running, but its owner stopped pinging",
    Reason.PAUSED: "paused: not run until resumed",
    Reason.PARTIAL_FAILURE: "its last good run failed more of its items than its threshold allows",
    Reason.CANNOT_FIT: "its runs are likely longer than every gap between its blackout periods",
}


def reason_text(reason: Reason | None) -> str:
    """The reason of a condition as a sentence (nothing for OK)."""
    return REASON_TEXT.get(reason, reason.value) if reason else ""


@dataclass(frozen=True, slots=True)
class Condition:
    state: State
    reason: Reason | None = None
    #: the time by which the constraint is violated, when the schedule has one
    deadline: datetime | None = None


@dataclass(frozen=True, slots=True)
class StartTimes:
    can_start_by: datetime
    should_start_by: datetime


@dataclass(frozen=True, slots=True)
class Schedule:
    name: str
    kind: ScheduleKind
    #: the job: a task type (its callable) and arguments
    task_type: str
    created_at: datetime
    arguments: TaskArguments = field(default_factory=TaskArguments)
    mode: RunMode = RunMode.RUN
    scheduling_period: timedelta | None = None
    cooldown_duration: timedelta | None = None
    cron_schedule: str | None = None
    cron_max_schedule_duration: timedelta | None = None
    tz: str = "UTC"
    enabled: bool = True
    max_expected_duration: timedelta | None = None
    max_allowed_duration: timedelta | None = None
    blackout_periods: tuple[BlackoutPeriod, ...] = ()
    dont_run_on_nodes: tuple[str, ...] = ()
    #: what happens to the fire times an outage made it miss (domain.firings)
    catch_up: CatchUp = CatchUp()
    #: the retry backoff after failure 1, 2, 3 or more; None: the setting ``schedule_retry_backoff``
    retry_backoff: tuple[timedelta, ...] | None = None
    #: how long a run is expected to last, in place of the moving average (:func:`expected_run`); None: the average
    expected_duration: timedelta | None = None
    #: the failed share of a good run's items above which it reads ``partial_failure``; None: the setting
    #: ``schedule_partial_failure_threshold``
    partial_failure_threshold: float | None = None
    #: send mode: Celery's options of the send (queue, routing_key, priority, expires, headers, …)
    options: Mapping[str, Any] = field(default_factory=dict)
    #: who declares it in code ("python:<name>", "beat:<app>"), and the fingerprint of the
    #: declarations that last wrote it (domain.declarations); None for a schedule added by hand
    declared_by: str | None = None
    declaration: str | None = None
    # -- state --
    #: the last fire time handled (run, sent or skipped; domain.firings)
    fired_through: datetime | None = None
    last_good_start_at: datetime | None = None
    last_good_end_at: datetime | None = None
    last_start_at: datetime | None = None
    last_end_at: datetime | None = None
    failure_count: int | None = None
    average_good_duration: timedelta | None = None
    #: the exponentially weighted standard deviation of good durations (domain.run_lengths)
    duration_spread: timedelta | None = None
    #: the items the last good run did and failed, when it reported them (domain.run_items)
    last_items_done: int | None = None
    last_items_failed: int | None = None
    owner_started_at: datetime | None = None
    owner_node: str | None = None
    owner_name: str | None = None
    owner_tag: str | None = None
    owner_last_ping_at: datetime | None = None
    steal_start_at: datetime | None = None
    #: when a run was last asked for now (``domain.run_now.request_run``); pending until a run starts at or after it
    run_requested_at: datetime | None = None

    @property
    def running(self) -> bool:
        return self.owner_tag is not None

    @property
    def rule(self) -> CalendarRule:
        return _parsed_rule(self.cron_schedule or "", self.tz)

    @property
    def period(self) -> timedelta:  # a periodic schedule's scheduling_period, which every valid one has
        assert self.scheduling_period is not None, f"periodic schedule {self.name!r} without a scheduling_period"
        return self.scheduling_period

    @property
    def cron_max_duration(self) -> timedelta:  # a calendar schedule's cron_max_schedule_duration, as above
        assert self.cron_max_schedule_duration is not None, f"calendar schedule {self.name!r} without one"
        return self.cron_max_schedule_duration

    def validated(self) -> Schedule:
        """The same schedule, checked: a ValidationError names the first field at fault."""
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValidationError("name", "letters, digits and _ . @ : - (at most 200, not starting with a sign)", self.name)
        if not isinstance(self.task_type, str) or not self.task_type.strip():
            raise ValidationError("task_type", "the task type whose callable runs the job", self.task_type)
        check_stored_text(self.task_type, "task_type")
        kind = ScheduleKind(self.kind)
        parse_zone(self.tz)
        check_fields(self)
        self._check_declared()
        if not isinstance(self.arguments, TaskArguments):
            raise ValidationError("arguments", 'an object {"args": [...], "kwargs": {...}}', self.arguments)
        check_json_value(list(self.arguments.args), "arguments.args")
        check_json_value(dict(self.arguments.kwargs), "arguments.kwargs")
        if kind is ScheduleKind.PERIODIC:
            if self.scheduling_period is None or self.scheduling_period <= timedelta(0):
                raise ValidationError("scheduling_period", "a positive duration (how stale the data may get)",
                                      self.scheduling_period)
            if self.cron_schedule is not None:
                raise ValidationError("cron_schedule", "nothing for a periodic schedule", self.cron_schedule)
            if self.cooldown_duration is not None and self.cooldown_duration > self.scheduling_period:
                raise ValidationError("cooldown_duration", f"at most the scheduling_period ({self.scheduling_period})",
                                      self.cooldown_duration)
        else:
            _ = self.rule  # parses and checks the rule
            if self.cron_max_schedule_duration is None or self.cron_max_schedule_duration <= timedelta(0):
                raise ValidationError("cron_max_schedule_duration", "a positive duration (how long after a firing "
                                      "the run must have completed)", self.cron_max_schedule_duration)
            if self.scheduling_period is not None:
                raise ValidationError("scheduling_period", "nothing for a calendar schedule", self.scheduling_period)
        if (self.max_expected_duration and self.max_allowed_duration
                and self.max_expected_duration > self.max_allowed_duration):
            raise ValidationError("max_expected_duration", f"at most max_allowed_duration ({self.max_allowed_duration})",
                                  self.max_expected_duration)
        check_blackouts(self.blackout_periods)
        check_catch_up(replace(self, kind=kind, mode=RunMode(self.mode)))
        for node in self.dont_run_on_nodes:
            if not isinstance(node, str) or not node.strip():
                raise ValidationError("dont_run_on_nodes", "node names", node)
            check_stored_text(node, "dont_run_on_nodes")
        return replace(self, kind=kind, mode=RunMode(self.mode), catch_up=self.catch_up.validated())

    def _check_declared(self) -> None:
        """The fields of declared schedules and of those the beats send."""
        check_declared_fields(self)
        if RunMode(self.mode) is RunMode.SEND and ScheduleKind(self.kind) is ScheduleKind.PERIODIC \
                and self.scheduling_period is not None and self.scheduling_period < timedelta(seconds=1):
            raise ValidationError("scheduling_period", "at least 1 second for a schedule the beats send",
                                  self.scheduling_period)


@functools.lru_cache(maxsize=4096)
def _parsed_rule(text: str, tz: str) -> CalendarRule:
    """A schedule's rule, parsed once per text and zone (a refusal is not cached: it raises again)."""
    return CalendarRule.parse(text, tz, field="cron_schedule")


# -- blackout periods --------------------------------------------------------------
def blackout_end(schedule: Schedule, at: datetime) -> datetime | None:
    """When the blackout period containing ``at`` ends (None when ``at`` is in none)."""
    return run_lengths.blackout_end(schedule.blackout_periods, parse_zone(schedule.tz), at)


def out_of_blackout(schedule: Schedule, at: datetime) -> datetime:
    """``at``, moved to the end of the blackout period it falls in (repeatedly, for adjacent ones)."""
    return run_lengths.out_of_blackout(schedule.blackout_periods, parse_zone(schedule.tz), at)


def fitted_start(schedule: Schedule, at: datetime) -> datetime:
    """The first moment from ``at`` when a run likely fits before the next blackout period
    (``domain.run_lengths.fit_start``); when none does (:func:`cannot_fit`), ``at`` out of them alone."""
    return _fit(schedule, at) or out_of_blackout(schedule, at)


def cannot_fit(schedule: Schedule, at: datetime) -> bool:
    """Its runs likely last longer than every gap between its blackout periods (searched from ``at``)."""
    return bool(schedule.blackout_periods) and _fit(schedule, at) is None


def _fit(schedule: Schedule, at: datetime) -> datetime | None:
    length = run_lengths.likely_length(expected_run(schedule), schedule.duration_spread)
    return run_lengths.fit_start(schedule.blackout_periods, parse_zone(schedule.tz), at, length)


# -- the formulas -----------------------------------------------------------------
def next_cron_time(schedule: Schedule, after: datetime) -> datetime | None:
    return schedule.rule.next_fire_time(after)


def _reference(schedule: Schedule) -> datetime:
    """The last good start, or the creation of a schedule that never succeeded."""
    return schedule.last_good_start_at or schedule.created_at


def deadline(schedule: Schedule) -> datetime | None:
    """When the schedule's constraint is violated unless a run starts and completes before it
    (sent by the beats: unless its next fire time is sent, ``domain.firings.send_deadline``)."""
    if schedule.mode is RunMode.SEND:
        return send_deadline(schedule)
    if schedule.kind is ScheduleKind.PERIODIC:
        return _reference(schedule) + schedule.period
    due = next_cron_time(schedule, _reference(schedule))
    return None if due is None else due + schedule.cron_max_duration


def expected_run(schedule: Schedule) -> timedelta:
    """How long the schedule's next run is expected to last, as the conditions, the start times and the
    pick's lookahead read it (:func:`expected_length`)."""
    return expected_length(schedule.average_good_duration, schedule.expected_duration)


def last_sign_of_life(schedule: Schedule) -> datetime | None:
    """A running schedule's last ping, or its run's start when no ping was recorded (None when idle)."""
    if not schedule.running:
        return None
    return schedule.owner_last_ping_at or schedule.owner_started_at


def owner_silent(schedule: Schedule, now: datetime, ping_timeout: timedelta) -> bool:
    """Running, with no sign of life for more than ``ping_timeout`` (exactly the timeout is not silent)."""
    last = last_sign_of_life(schedule)
    return schedule.running and (last is None or now - last > ping_timeout)


def get_schedule_condition(schedule: Schedule, now: datetime, *, ping_timeout: timedelta,
                           partial_threshold: float = DEFAULT_PARTIAL_FAILURE_THRESHOLD) -> Condition:
    """The schedule's condition, with a reason for every WARNING and ERROR; ``ping_timeout`` is the
    setting ``schedule_ping_timeout`` (required: without it a silent owner would read as OK),
    ``partial_threshold`` the setting ``schedule_partial_failure_threshold``."""
    if not schedule.enabled:
        return Condition(State.WARNING, Reason.PAUSED)
    limit = deadline(schedule)
    average = expected_run(schedule)
    if limit is not None:
        if now > limit:
            reason = Reason.STALE if schedule.kind is ScheduleKind.PERIODIC else Reason.DEADLINE_MISSED
            return Condition(State.ERROR, reason, limit)
        if schedule.running and schedule.owner_started_at is not None:
            if schedule.owner_started_at + average > limit:
                return Condition(State.WARNING, Reason.RUNNING_LATE, limit)
        elif now + average > limit:
            return Condition(State.WARNING, Reason.LIKELY_LATE, limit)
    if owner_silent(schedule, now, ping_timeout):
        return Condition(State.WARNING, Reason.OWNER_SILENT, limit)
    if schedule.failure_count:
        return Condition(State.WARNING, Reason.LAST_RUN_FAILED, limit)
    threshold = partial_threshold if schedule.partial_failure_threshold is None else schedule.partial_failure_threshold
    if partial_failure(schedule.last_items_done, schedule.last_items_failed, threshold):
        return Condition(State.WARNING, Reason.PARTIAL_FAILURE, limit)
    if schedule.mode is not RunMode.SEND and cannot_fit(schedule, now):
        return Condition(State.WARNING, Reason.CANNOT_FIT, limit)
    return Condition(State.OK, None, limit)


def describe_start_rule(schedule: Schedule) -> str:
    """How a periodic schedule's runs follow each other, in words (``schedule show``, the dashboard)."""
    period = format_duration(schedule.period)
    if schedule.cooldown_duration is None:
        spare = format_duration(schedule.period * PERIOD_SPARE, resolution=timedelta(seconds=1))
        return (f"once every {period}, at most {period} stale: a run starts {spare} (a tenth of the period) before "
                "it must, not before the last good run ended; after a failure, by the retry backoff (no cooldown "
                "given)")
    if not schedule.cooldown_duration:
        return f"at most {period} stale, runs back to back (cooldown 0s)"
    return (f"at most {period} stale, each run at least {format_duration(schedule.cooldown_duration)} after the "
            "last good run ended (cooldown)")


def retry_at(schedule: Schedule, backoff: Sequence[timedelta], *, by_length: bool = False) -> datetime | None:
    """After ``failure_count`` failures: the last end plus the backoff of that many failures (the
    schedule's own ``retry_backoff`` when it has one, else ``backoff``); ``by_length`` (the setting
    ``schedule_retry_by_length``): plus ``domain.run_lengths.retry_delay`` of the failed run's length instead."""
    if not schedule.failure_count or schedule.last_end_at is None:
        return None
    backoff = schedule.retry_backoff or backoff
    fixed = backoff[min(schedule.failure_count, len(backoff)) - 1]
    if by_length and schedule.last_start_at is not None:
        lasted = schedule.last_end_at - schedule.last_start_at
        return schedule.last_end_at + run_lengths.retry_delay(schedule.failure_count, fixed, lasted)
    return schedule.last_end_at + fixed


def get_schedule_start_times(schedule: Schedule, now: datetime, *, backoff: Sequence[timedelta],
                             retry_by_length: bool = False) -> StartTimes | None:
    """The schedule's ``can_start_by`` and ``should_start_by``; None for a calendar rule that fires no more.
    ``backoff`` is the setting ``schedule_retry_backoff`` (required, as the ping timeout of the condition),
    ``retry_by_length`` the setting ``schedule_retry_by_length``. ``can_start_by`` is moved to the first
    moment a run likely fits before the next blackout period (:func:`fitted_start`)."""
    average = expected_run(schedule)
    if schedule.kind is ScheduleKind.PERIODIC:
        should = _reference(schedule) + schedule.period - average
        if schedule.last_good_end_at is None:
            can = schedule.created_at
        elif schedule.cooldown_duration is None:  # once a period: a tenth of it to spare (module docstring)
            can = schedule.last_good_end_at if schedule.failure_count else \
                max(schedule.last_good_end_at, should - schedule.period * PERIOD_SPARE)
        else:
            can = schedule.last_good_end_at + schedule.cooldown_duration
    else:
        due = next_cron_time(schedule, _reference(schedule))
        if due is None:
            return _requested_only(schedule)
        # the next fire time not yet handled (domain.firings)
        unhandled = due if schedule.fired_through is None else fire_time_after(schedule, schedule.fired_through)
        if unhandled is None:
            return _requested_only(schedule)
        can = unhandled
        should = due + schedule.cron_max_duration - average
    retry = retry_at(schedule, backoff, by_length=retry_by_length)
    if retry is not None:
        can = max(can, retry)
    asked = _pending_request(schedule)
    if asked is not None:
        can, should = min(can, asked), min(should, asked)
    return StartTimes(fitted_start(schedule, can), should)


def _requested_only(schedule: Schedule) -> StartTimes | None:
    """A calendar rule that fires no more: only a run asked for now starts."""
    asked = _pending_request(schedule)
    return None if asked is None else StartTimes(fitted_start(schedule, asked), asked)


def run_requested(schedule: Schedule) -> bool:
    """A run was asked for now and none has started since (module docstring)."""
    return _pending_request(schedule) is not None


def _pending_request(schedule: Schedule) -> datetime | None:
    """When a run was asked for now, if none has started since (else None)."""
    asked, started = schedule.run_requested_at, schedule.last_start_at
    return asked if asked is not None and (started is None or started < asked) else None


def updated_average(previous: timedelta | None, duration: timedelta, alpha: float = DEFAULT_ALPHA) -> timedelta:
    """``average_good_duration = α * last_duration + (1 - α) * average_good_duration``."""
    if previous is None:
        return duration
    return alpha * duration + (1 - alpha) * previous


def apply_run_end(schedule: Schedule, started: datetime, ended: datetime, succeeded: bool, *,
                  alpha: float = DEFAULT_ALPHA, items: ItemCounts | None = None) -> Schedule:
    """The schedule after a run that started at ``started`` ended; its ownership is released. A run that
    seems to end before it started (a clock stepped back, or the end told by another machine) lasted no
    time. A good run moves the average and spread of good durations and keeps its ``items`` (none: cleared)."""
    released: dict[str, Any] = dict(owner_started_at=None, owner_node=None, owner_name=None, owner_tag=None,
                                    owner_last_ping_at=None, steal_start_at=None, last_start_at=started,
                                    last_end_at=ended)
    if succeeded:
        lasted = max(ended - started, timedelta(0))
        return replace(schedule, **released, last_good_start_at=started, last_good_end_at=ended, failure_count=0,
                       fired_through=_fire_time_run(schedule, started),
                       average_good_duration=updated_average(schedule.average_good_duration, lasted, alpha),
                       duration_spread=run_lengths.updated_spread(schedule.average_good_duration,
                                                                  schedule.duration_spread, lasted, alpha),
                       last_items_done=None if items is None else items.items_done,
                       last_items_failed=None if items is None else items.items_failed)
    return replace(schedule, **released, failure_count=(schedule.failure_count or 0) + 1)


def _fire_time_run(schedule: Schedule, started: datetime) -> datetime | None:
    """The cursor after a good run of a calendar schedule: the fire time it ran for (the first one
    not yet handled), so that the next run is for the next fire time, not the next after its start."""
    if schedule.kind is not ScheduleKind.CALENDAR:
        return schedule.fired_through
    nominal = fire_time_after(schedule, schedule.fired_through or _reference(schedule))
    return nominal if nominal is not None and nominal <= started else schedule.fired_through


class RunStatus(str, enum.Enum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    #: stopped by its owner: max_allowed_duration or a blackout period reached
    STOPPED = "stopped"
    #: its owner found the schedule taken over by another scheduler
    STOLEN = "stolen"
    #: its owner died or went silent; ended by the steal protocol or at the node's restart
    LOST = "lost"
    #: submit mode: the schedule submitted a one-shot task to the queue instead of running
    SUBMITTED = "submitted"

    @property
    def succeeded(self) -> bool:
        return self in (RunStatus.SUCCEEDED, RunStatus.SUBMITTED)


@dataclass(frozen=True, slots=True)
class ScheduleRun:
    """One run of a schedule, in its history."""

    id: int
    schedule: str
    owner_tag: str
    owner_node: str
    owner_name: str
    started_at: datetime
    ended_at: datetime | None
    status: RunStatus
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ScheduleTiming:
    """The knobs that are not per schedule (configurable)."""

    #: the EWMA's α for average_good_duration
    alpha: float = DEFAULT_ALPHA
    #: the retry backoff after failure 1, 2, and 3 or more
    backoff: tuple[timedelta, ...] = DEFAULT_RETRY_BACKOFF
    #: an owner pings this often while running
    ping_interval: timedelta = timedelta(seconds=30)
    #: no ping for this long: another scheduler marks the schedule for stealing
    ping_timeout: timedelta = timedelta(seconds=30)
    #: a mark still there after this long: the schedule is taken over
    steal_grace: timedelta = timedelta(seconds=30)
    #: fire times due at once are a backlog (for the catch-up rule) only when the oldest is older than this
    catch_up_grace: timedelta = timedelta(seconds=10)
    #: retries wait by the failed run's length (domain.run_lengths.retry_delay), not the fixed backoff alone
    retry_by_length: bool = False
    #: the failed share of a good run's items above which a schedule without its own reads ``partial_failure``
    partial_failure_threshold: float = DEFAULT_PARTIAL_FAILURE_THRESHOLD

    def validated(self) -> ScheduleTiming:
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not 0 < self.alpha <= 1:
            raise ValidationError("alpha", "a number above 0 and at most 1", self.alpha)
        if len(self.backoff) == 0 or any(not isinstance(b, timedelta) or b < timedelta(0) for b in self.backoff):
            raise ValidationError("retry_backoff", "one or more durations of 0 or more", self.backoff)
        for name in ("ping_interval", "ping_timeout", "steal_grace", "catch_up_grace"):
            value = getattr(self, name)
            if not isinstance(value, timedelta) or value <= timedelta(0):
                raise ValidationError(name, "a positive duration", value)
        if not isinstance(self.retry_by_length, bool):
            raise ValidationError("retry_by_length", "true or false", self.retry_by_length)
        check_threshold(self.partial_failure_threshold, "partial_failure_threshold")
        return self


def stored_start_times(schedule: Schedule, now: datetime, timing: ScheduleTiming) -> StartTimes | None:
    """The start times a store keeps beside a schedule: None while it is paused, when its rule fires
    no more, or when the beats send it (the scheduler never picks it: its next fire time is kept)."""
    if not schedule.enabled or schedule.mode is RunMode.SEND:
        return None
    return get_schedule_start_times(schedule, now, backoff=timing.backoff, retry_by_length=timing.retry_by_length)


@dataclass(frozen=True, slots=True)
class Assessment:
    """What every interface shows of a schedule at a moment."""

    condition: Condition
    #: None while paused, or when a calendar rule fires no more (as stored beside the schedule)
    start_times: StartTimes | None


def assess(schedule: Schedule, now: datetime, timing: ScheduleTiming) -> Assessment:
    """The schedule's condition and start times at ``now`` under the configured ``timing``
    (``settings.schedule_timing()``): the command line, the API, the dashboard and the
    metrics all go through here, so that they cannot disagree."""
    return Assessment(get_schedule_condition(schedule, now, ping_timeout=timing.ping_timeout,
                                             partial_threshold=timing.partial_failure_threshold),
                      stored_start_times(schedule, now, timing))

