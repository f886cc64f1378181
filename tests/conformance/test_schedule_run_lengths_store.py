"""Run lengths and partial failures on every store: expected_duration, partial_failure_threshold,
duration_spread and the last good run's items round-trip; end_schedule_run with items keeps them on
the run and the schedule, and refuses bad counts writing nothing; the stored start times fit before
the next blackout period and follow the retry by length."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from conftest import T0

from ostinato.domain.blackouts import parse_blackout_periods
from ostinato.domain.errors import ValidationError
from ostinato.domain.run_items import ItemCounts
from ostinato.domain.run_lengths import updated_spread
from ostinato.domain.schedules import Reason, RunStatus, Schedule, ScheduleKind, ScheduleTiming, assess

H = timedelta(hours=1)
M = timedelta(minutes=1)
S = timedelta(seconds=1)


def periodic(name: str, **kw) -> Schedule:
    base = dict(name=name, kind=ScheduleKind.PERIODIC, task_type="scrape", created_at=T0 - 10 * H,
                scheduling_period=24 * H, cooldown_duration=H)
    return Schedule(**{**base, **kw})


def take(store, name: str, tag: str, at: datetime) -> None:
    picked = store.pick_schedule(node="n", owner_name="me", tag=tag, now=at)
    assert picked is not None and picked[0].name == name


def test_the_new_fields_round_trip(store):
    s = periodic("bills", expected_duration=20 * M, partial_failure_threshold=0.25, duration_spread=90 * S,
                 average_good_duration=15 * M, last_items_done=9, last_items_failed=1)
    store.create_schedule(s, T0)
    assert store.get_schedule("bills") == s.validated()
    cleared = replace(s, expected_duration=None, partial_failure_threshold=None)
    store.save_schedule(cleared, T0)
    assert store.get_schedule("bills") == cleared.validated()
    store.update_schedule(replace(cleared, expected_duration=5 * M, partial_failure_threshold=0.0), T0,
                          fields=["expected_duration", "partial_failure_threshold"], actor="ana")
    updated = store.get_schedule("bills")
    assert (updated.expected_duration, updated.partial_failure_threshold) == (5 * M, 0.0)
    assert (updated.duration_spread, updated.last_items_done) == (90 * S, 9)  # the state stays


def test_end_schedule_run_with_items_keeps_them_on_the_run_and_the_schedule(store):
    store.create_schedule(periodic("bills", created_at=T0 - 48 * H), T0)
    take(store, "bills", "t1", T0)
    assert store.end_schedule_run("bills", "t1", status=RunStatus.SUCCEEDED, ended=T0 + 10 * M,
                                  detail={"pages": 3}, items=ItemCounts(70, 30), timing=ScheduleTiming(alpha=0.5))
    after = store.get_schedule("bills")
    assert (after.last_items_done, after.last_items_failed, after.failure_count) == (70, 30, 0)
    assert after.average_good_duration == 10 * M and after.duration_spread == timedelta(0)
    [run] = store.list_schedule_runs("bills")
    assert dict(run.detail) == {"pages": 3, "items_done": 70, "items_failed": 30}
    assert assess(after, T0 + 11 * M, ScheduleTiming()).condition.reason is Reason.PARTIAL_FAILURE
    # the next good run moves the spread; one without items clears them
    take(store, "bills", "t2", T0 + 2 * H)
    store.end_schedule_run("bills", "t2", status=RunStatus.SUCCEEDED, ended=T0 + 2 * H + 14 * M,
                           timing=ScheduleTiming(alpha=0.5))
    after = store.get_schedule("bills")
    assert after.average_good_duration == 12 * M
    assert after.duration_spread == updated_spread(10 * M, timedelta(0), 14 * M, 0.5) == 120 * S
    assert (after.last_items_done, after.last_items_failed) == (None, None)


@pytest.mark.parametrize("items, field", [(ItemCounts(-1, 0), "items_done"), (ItemCounts(1, True), "items_failed"),
                                          (ItemCounts(1, 0.5), "items_failed"), ({"items_done": 1}, "items")])
def test_bad_items_are_refused_naming_the_field_and_nothing_is_written(store, items, field):
    store.create_schedule(periodic("bills", created_at=T0 - 48 * H), T0)
    take(store, "bills", "t1", T0)
    before = store.get_schedule("bills")
    with pytest.raises(ValidationError) as caught:
        store.end_schedule_run("bills", "t1", status=RunStatus.SUCCEEDED, ended=T0 + M, items=items)
    assert caught.value.field == field
    assert store.get_schedule("bills") == before
    assert [r.status for r in store.list_schedule_runs("bills")] == [RunStatus.RUNNING]


def test_the_stored_start_fits_before_the_next_blackout_period(store):
    # its cooldown ends at 20:00 UTC; runs of 3h would meet the blackout period from 22:00: 06:00 the next day
    night = parse_blackout_periods([{"start": "22:00", "end": "06:00"}])
    last_end = datetime(2026, 1, 1, 19, 0, tzinfo=UTC)
    s = periodic("bills", blackout_periods=night, average_good_duration=3 * H, last_good_start_at=last_end - 3 * H,
                 last_good_end_at=last_end)
    store.create_schedule(s, T0)
    assert store.next_can_start_by() == datetime(2026, 1, 2, 6, 0, tzinfo=UTC)
    assert store.pick_schedule(node="n", owner_name="me", tag="t", now=datetime(2026, 1, 1, 20, 30, tzinfo=UTC)) is None
    # with an expected duration of 1h it fits at 20:00
    store.save_schedule(replace(s, expected_duration=H), T0)
    assert store.next_can_start_by() == datetime(2026, 1, 1, 20, 0, tzinfo=UTC)


def test_the_stored_retry_follows_the_failed_runs_length_with_the_setting(store):
    by_length = ScheduleTiming(retry_by_length=True)
    store.create_schedule(periodic("bills", created_at=T0 - 48 * H), T0, by_length)
    take(store, "bills", "t1", T0)
    store.end_schedule_run("bills", "t1", status=RunStatus.FAILED, ended=T0 + 3 * M, timing=by_length)
    assert store.next_can_start_by() == T0 + 6 * M  # 3 minutes: clamp(3m, 10s, 3 × 5m)
    take(store, "bills", "t2", T0 + 6 * M)
    store.end_schedule_run("bills", "t2", status=RunStatus.FAILED, ended=T0 + 6 * M + 2 * S, timing=ScheduleTiming())
    assert store.next_can_start_by() == T0 + 6 * M + 2 * S + H  # the fixed backoff without the setting
