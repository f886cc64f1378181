"""A running schedule watched: what its run has overrun (a duration bound, a blackout), and the two-step
steal of a run whose owner went silent, as another scheduler sees it."""

from __future__ import annotations

import enum
from datetime import datetime, timedelta

from .schedules import Schedule, blackout_end, last_sign_of_life, owner_silent


class Overrun(str, enum.Enum):
    #: longer than ``max_expected_duration``: log an error, keep running
    EXPECTED = "max_expected_duration"
    #: longer than ``max_allowed_duration``: stop, count a failure
    ALLOWED = "max_allowed_duration"
    #: a blackout period reached while running: stop, count a failure
    BLACKOUT = "blackout_period"


def overruns(schedule: Schedule, now: datetime) -> list[Overrun]:
    """What a run of ``schedule`` started at ``owner_started_at`` has overrun by ``now``."""
    if schedule.owner_started_at is None:
        return []
    found = []
    elapsed = now - schedule.owner_started_at
    if schedule.max_allowed_duration is not None and elapsed > schedule.max_allowed_duration:
        found.append(Overrun.ALLOWED)
    elif schedule.max_expected_duration is not None and elapsed > schedule.max_expected_duration:
        found.append(Overrun.EXPECTED)
    if blackout_end(schedule, now) is not None:
        found.append(Overrun.BLACKOUT)
    return found


class StealStep(str, enum.Enum):
    #: the owner pings: nothing to do
    NONE = "none"
    #: no ping for the timeout: mark ``steal_start_at``
    MARK = "mark"
    #: marked long enough ago and still no ping: the schedule may be taken over
    TAKE = "take"


def steal_step(schedule: Schedule, now: datetime, *, ping_timeout: timedelta, grace: timedelta) -> StealStep:
    """The two-step steal, seen from another scheduler."""
    if not owner_silent(schedule, now, ping_timeout):
        return StealStep.NONE
    last_sign = last_sign_of_life(schedule)
    if schedule.steal_start_at is None or (last_sign is not None and last_sign > schedule.steal_start_at):
        return StealStep.MARK
    return StealStep.TAKE if now - schedule.steal_start_at > grace else StealStep.NONE
