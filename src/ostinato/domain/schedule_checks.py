"""The checks of a schedule's fields that need no rule of ``domain.schedules`` (its durations, times,
owner, counts and declared fields), which :meth:`~ostinato.domain.schedules.Schedule.validated` runs:
a ValidationError names the first field at fault."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from .errors import ValidationError
from .limits import MAX_DURATION, check_json_value, check_stored_text, check_time_range, check_whole
from .run_items import check_threshold

#: the times of a schedule (definition and state), as validated and exported
TIME_FIELDS = ("created_at", "last_good_start_at", "last_good_end_at", "last_start_at", "last_end_at",
               "owner_started_at", "owner_last_ping_at", "steal_start_at", "fired_through", "run_requested_at")


class CheckedSchedule(Protocol):
    """A schedule as these checks read it (``domain.schedules.Schedule`` is one); the fields named in
    lists (the durations, :data:`TIME_FIELDS`, the owner's names) are read by name."""

    @property
    def owner_tag(self) -> str | None: ...
    @property
    def owner_started_at(self) -> datetime | None: ...
    @property
    def failure_count(self) -> int | None: ...
    @property
    def last_items_done(self) -> int | None: ...
    @property
    def last_items_failed(self) -> int | None: ...
    @property
    def expected_duration(self) -> timedelta | None: ...
    @property
    def partial_failure_threshold(self) -> float | None: ...
    @property
    def retry_backoff(self) -> tuple[timedelta, ...] | None: ...
    @property
    def options(self) -> Mapping[str, Any]: ...


def check_fields(schedule: CheckedSchedule) -> None:
    """Durations, times, the owner, the counts, the expected duration and the threshold."""
    for name in ("scheduling_period", "cooldown_duration", "cron_max_schedule_duration",
                 "max_expected_duration", "max_allowed_duration", "average_good_duration", "expected_duration",
                 "duration_spread"):
        value = getattr(schedule, name)
        if value is not None and (not isinstance(value, timedelta) or not timedelta(0) <= value <= MAX_DURATION):
            raise ValidationError(name, f"a duration from 0 to {MAX_DURATION.days} days", value)
    for name in TIME_FIELDS:
        value = getattr(schedule, name)
        if value is None and name != "created_at":
            continue
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise ValidationError(name, "a time with a zone", value)
        check_time_range(value, name)
    for name in ("owner_node", "owner_name", "owner_tag"):
        value = getattr(schedule, name)
        if value is not None and not isinstance(value, str):
            raise ValidationError(name, "text or null", value)
        if value is not None:
            check_stored_text(value, name)
    if schedule.owner_tag is not None and schedule.owner_started_at is None:  # a running schedule's last sign of life
        raise ValidationError("owner_started_at", "the start of the run (owner_tag is set: the schedule is running)", None)
    check_whole(schedule.failure_count, "failure_count", nullable=True)
    check_whole(schedule.last_items_done, "last_items_done", nullable=True)
    check_whole(schedule.last_items_failed, "last_items_failed", nullable=True)
    if schedule.expected_duration is not None and schedule.expected_duration <= timedelta(0):
        raise ValidationError("expected_duration", "a positive duration (how long a run is expected to last), "
                              "or null for the moving average", schedule.expected_duration)
    check_threshold(schedule.partial_failure_threshold, "partial_failure_threshold", nullable=True)


def check_declared_fields(schedule: CheckedSchedule) -> None:
    """The fields of declared schedules and of those the beats send (the mode's rule aside)."""
    if schedule.retry_backoff is not None and (
            not isinstance(schedule.retry_backoff, tuple) or not schedule.retry_backoff
            or any(not isinstance(b, timedelta) or not timedelta(0) <= b <= MAX_DURATION for b in schedule.retry_backoff)):
        raise ValidationError("retry_backoff", f"one or more durations from 0 to {MAX_DURATION.days} days, or null",
                              schedule.retry_backoff)
    if not isinstance(schedule.options, Mapping):
        raise ValidationError("options", "an object (Celery's options of a send)", schedule.options)
    check_json_value(dict(schedule.options), "options")
    for name in ("declared_by", "declaration"):
        value = getattr(schedule, name)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ValidationError(name, "a non-empty name, or null", value)
        if value is not None:
            check_stored_text(value, name, 200)
