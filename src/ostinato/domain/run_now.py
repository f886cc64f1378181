"""Running a schedule now, out of its rule: a run asked of the schedulers (modes run and submit), or a
fire time of its own sent once through Celery for a schedule the beats send (mode send); and when each
is refused."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from .errors import ConflictError
from .schedules import RunMode, Schedule


def _paused(schedule: Schedule) -> str:
    return (f"schedule {schedule.name!r} is paused: resume it first (ostinato schedule resume {schedule.name}), "
            "and it starts at once")


def request_run(schedule: Schedule, now: datetime) -> Schedule:
    """The schedule the schedulers run (mode run or submit) with a run asked for at ``now``; ConflictError,
    saying what to do, when it cannot be. (One the beats send gets a fire time of its own instead.)"""
    if not schedule.enabled:
        raise ConflictError(_paused(schedule))
    return replace(schedule, run_requested_at=now)


def send_now_refusal(schedule: Schedule) -> str | None:
    """Why a fire time of its own cannot be sent now for ``schedule``; None when it can."""
    if not schedule.enabled:
        return _paused(schedule)
    if schedule.mode is not RunMode.SEND:
        return (f"schedule {schedule.name!r} is run by the schedulers (mode {schedule.mode.value}), not sent by "
                "the beats: ask them for a run (request_schedule_run)")
    return None


__all__ = ["request_run", "send_now_refusal"]
