"""What kind a schedule is and how its job runs: the two choices every rule of a schedule reads, the
fire times' (``domain.firings``) as well as the conditions' and start times' (``domain.schedules``)."""

from __future__ import annotations

import enum


class ScheduleKind(str, enum.Enum):
    PERIODIC = "periodic"
    CALENDAR = "calendar"


class RunMode(str, enum.Enum):
    #: the scheduler runs the job itself, holding the schedule's ownership
    RUN = "run"
    #: the scheduler submits a one-shot task to the generic queue (see docs/design/periodic-tasks.md)
    SUBMIT = "submit"
    #: the beat processes send the job (a Celery task) at each fire time, exactly once, without
    #: waiting for it (see docs/reference/distributed.md#celery-beat)
    SEND = "send"
