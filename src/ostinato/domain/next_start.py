"""When a schedule starts next, and why: its ``can_start_by`` (``domain.schedules``, the time the
pick reads) with the rule that set it, in words, for the console and the CLI.

``get_schedule_start_times`` takes the latest of a few lower bounds: the schedule's own rule (a
calendar schedule's first fire time not yet run; a periodic one's creation, cooldown or spare tenth
of its period), the retry backoff after a failed run, a run asked for now (which lifts both), then
the end of a blackout period it falls in, or of the first one after which a run likely ends before the
next (``domain.run_lengths.fit_start``). :func:`next_start` names the one that won. A calendar
schedule whose run failed at its fire time of 11:28 thus reads "11:30: a retry after failure 1, 2m
after its last run ended (its fire time of 11:28 is still to run)", not "next: 11:28 (2 min ago)".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .durations import format_duration
from .firings import fire_time_after
from .schedules import (
    PERIOD_SPARE,
    Schedule,
    ScheduleKind,
    ScheduleTiming,
    expected_run,
    fitted_start,
    retry_at,
    run_requested,
    stored_start_times,
)


@dataclass(frozen=True, slots=True)
class NextStart:
    """A schedule's next start (its ``can_start_by``) and what set it."""

    at: datetime
    #: what set it: ``fire time``, ``retry``, ``asked``, ``first run``, ``cooldown``, ``spare``, ``last good end``
    #: or ``period`` (a periodic schedule's failed period: by the backoff alone, once it is over)
    cause: str
    #: the cause in words, with no time in it (``a retry after failure 1, 5m after its last run ended``)
    why: str
    #: the fire time its run is for, still to run (a calendar schedule), else None
    fire_time: datetime | None
    #: moved to the end of a blackout period it fell in, or that a run would likely have run into
    blackout: bool

    @property
    def words(self) -> str:
        """The cause, and the blackout period that moved it (``…, then the end of a blackout period``)."""
        return self.why + (", then the end of a blackout period" if self.blackout else "")


def next_start(schedule: Schedule, now: datetime, timing: ScheduleTiming) -> NextStart | None:
    """The schedule's next start at ``now`` and its cause; None when the pick never takes it (paused, sent
    by the beats, or a calendar rule that fires no more with no run asked for)."""
    times = stored_start_times(schedule, now, timing)
    if times is None:
        return None
    fire_time = None
    if schedule.kind is ScheduleKind.CALENDAR:
        fire_time = fire_time_after(schedule, schedule.fired_through or schedule.last_good_start_at
                                    or schedule.created_at)
        can, cause, why = fire_time, "fire time", "its fire time"
    elif schedule.last_good_end_at is None:
        can, cause, why = schedule.created_at, "first run", "its first run, due since it was created"
    elif schedule.cooldown_duration is not None:
        can, cause = schedule.last_good_end_at + schedule.cooldown_duration, "cooldown"
        why = f"its cooldown, {format_duration(schedule.cooldown_duration)} after its last good run ended"
    elif schedule.failure_count:
        can, cause, why = schedule.last_good_end_at, "period", "its period's run, still to be done"
    else:  # once a period, a tenth of it to spare before it must start (domain.schedules' docstring)
        should = (schedule.last_good_start_at or schedule.created_at) + schedule.period \
            - expected_run(schedule)
        spare = should - schedule.period * PERIOD_SPARE
        if spare >= schedule.last_good_end_at:
            can, cause = spare, "spare"
            why = f"a tenth of its period ({format_duration(schedule.period * PERIOD_SPARE)}) before it must start"
        else:
            can, cause, why = schedule.last_good_end_at, "last good end", "the end of its last good run"
    retry = retry_at(schedule, timing.backoff, by_length=timing.retry_by_length)
    if retry is not None and (can is None or retry > can):
        failures = schedule.failure_count or 0
        assert schedule.last_end_at is not None  # a retry is counted from it
        can, cause = retry, "retry"
        why = (f"a retry after failure {failures}, {format_duration(retry - schedule.last_end_at)} after its last "
               "run ended")
    if run_requested(schedule) and schedule.run_requested_at is not None and \
            (can is None or schedule.run_requested_at <= can):
        can, cause, why = schedule.run_requested_at, "asked", "a run asked for now"
    if can is None or fitted_start(schedule, can) != times.can_start_by:  # the rules moved on: say only when
        return NextStart(times.can_start_by, "rule", "its start rule", fire_time, False)
    return NextStart(times.can_start_by, cause, why, fire_time, times.can_start_by != can)

