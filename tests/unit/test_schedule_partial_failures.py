"""Partial failures: a run's items done and failed, from its job's result to the schedule's condition
(``partial_failure``), with its threshold; bad counts and thresholds refused naming the field."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from waiting import wait_until

from ostinato.config import Settings
from ostinato.domain.clock import ManualClock
from ostinato.domain.declarations import Declaration, definition_of
from ostinato.domain.errors import ValidationError
from ostinato.domain.run_items import ItemCounts, failed_share, items_of, partial_failure
from ostinato.domain.schedule_records import schedule_from_dict, schedule_to_dict
from ostinato.domain.schedules import (
    REASON_TEXT,
    Reason,
    Schedule,
    ScheduleKind,
    ScheduleTiming,
    State,
    apply_run_end,
    assess,
    get_schedule_condition,
)
from ostinato.domain.tasks import TaskArguments, TaskType
from ostinato.execution.calls import call_schedule_job
from ostinato.execution.registry import TaskRegistry
from ostinato.integrations.celery.worker import WorkerRuntime, run_schedule_here
from ostinato.services.deadline_scheduler import DeadlineScheduler

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)  # the clock fixture's start (tests/conftest.py)
H = timedelta(hours=1)
M = timedelta(minutes=1)


def periodic(**fields) -> Schedule:
    return Schedule("s", ScheduleKind.PERIODIC, "job", T0 - 2 * H, scheduling_period=24 * H,
                    last_good_start_at=T0 - H, last_good_end_at=T0 - H + M, failure_count=0, **fields).validated()


def test_the_failed_share_and_the_threshold():
    assert failed_share(90, 10) == 0.1 and failed_share(0, 0) is None and failed_share(None, 3) is None
    assert not partial_failure(90, 10, 0.1)  # exactly the threshold: not above it
    assert partial_failure(89, 11, 0.1)
    assert partial_failure(0, 1, 0.0) and not partial_failure(5, 0, 0.0)
    assert not partial_failure(0, 0, 0.0)  # no item at all


def test_items_are_read_from_a_result_checked():
    assert items_of({"pages": 3}) is None
    assert items_of({"items_done": 4}) == ItemCounts(4, 0)
    assert items_of({"items_done": 4, "items_failed": 1, "other": "x"}) == ItemCounts(4, 1)


@pytest.mark.parametrize("detail, field", [
    ({"items_done": -1, "items_failed": 0}, "items_done"),
    ({"items_done": 1, "items_failed": 2.5}, "items_failed"),
    ({"items_done": True, "items_failed": 0}, "items_done"),
    ({"items_done": "3", "items_failed": 0}, "items_done"),
    ({"items_failed": 2**63}, "items_failed"),
])
def test_bad_counts_are_refused_naming_the_key(detail, field):
    with pytest.raises(ValidationError) as caught:
        items_of(detail)
    assert caught.value.field == field


def test_the_condition_warns_after_a_partial_failure_by_the_schedules_threshold_or_the_settings():
    now = T0
    ok = periodic(last_items_done=95, last_items_failed=5)
    assert get_schedule_condition(ok, now, ping_timeout=30 * timedelta(seconds=1)).state is State.OK
    partial = periodic(last_items_done=80, last_items_failed=20)
    condition = get_schedule_condition(partial, now, ping_timeout=timedelta(seconds=30))
    assert (condition.state, condition.reason) == (State.WARNING, Reason.PARTIAL_FAILURE)
    assert REASON_TEXT[Reason.PARTIAL_FAILURE]
    # the schedule's own threshold, then the setting's
    assert get_schedule_condition(replace(partial, partial_failure_threshold=0.25), now,
                                  ping_timeout=timedelta(seconds=30)).state is State.OK
    assert assess(partial, now, ScheduleTiming(partial_failure_threshold=0.5)).condition.state is State.OK
    assert assess(ok, now, ScheduleTiming(partial_failure_threshold=0.0)).condition.reason is Reason.PARTIAL_FAILURE
    # a failed last run says so first; late and stale come before both
    failed = replace(partial, failure_count=1, last_end_at=T0 - M, last_start_at=T0 - 2 * M)
    assert get_schedule_condition(failed, now, ping_timeout=timedelta(seconds=30)).reason is Reason.LAST_RUN_FAILED
    assert get_schedule_condition(partial, now + 30 * H, ping_timeout=timedelta(seconds=30)).reason is Reason.STALE


def test_a_good_run_keeps_its_items_a_good_run_without_clears_them_a_failed_run_leaves_them():
    schedule = periodic()
    good = apply_run_end(schedule, T0, T0 + M, True, items=ItemCounts(7, 3))
    assert (good.last_items_done, good.last_items_failed, good.failure_count) == (7, 3, 0)
    failed = apply_run_end(good, T0 + H, T0 + H + M, False, items=ItemCounts(0, 10))
    assert (failed.last_items_done, failed.last_items_failed) == (7, 3)
    cleared = apply_run_end(failed, T0 + 2 * H, T0 + 2 * H + M, True)
    assert (cleared.last_items_done, cleared.last_items_failed) == (None, None)


@pytest.mark.parametrize("value", [-0.1, 1.5, float("nan"), True, "0.2"])
def test_a_threshold_outside_0_to_1_is_refused_naming_it(value):
    with pytest.raises(ValidationError) as caught:
        periodic(partial_failure_threshold=value)
    assert caught.value.field == "partial_failure_threshold"
    with pytest.raises(ValidationError) as caught:
        ScheduleTiming(partial_failure_threshold=value).validated()
    assert caught.value.field == "partial_failure_threshold"


@pytest.mark.parametrize("field, value", [("last_items_done", -1), ("last_items_failed", True),
                                          ("last_items_done", 1.5)])
def test_bad_state_counts_are_refused_naming_them(field, value):
    with pytest.raises(ValidationError) as caught:
        periodic(**{field: value})
    assert caught.value.field == field


def test_the_settings_name_themselves():
    settings = Settings().with_values({"schedule_partial_failure_threshold": "0.25", "schedule_retry_by_length": "true"})
    timing = settings.schedule_timing()
    assert (timing.partial_failure_threshold, timing.retry_by_length) == (0.25, True)
    assert (Settings().schedule_timing().partial_failure_threshold, Settings().schedule_retry_by_length) == (0.1, False)
    for bad in ("1.5", "nan", "-1", "a tenth"):
        with pytest.raises(ValidationError) as caught:
            Settings().with_values({"schedule_partial_failure_threshold": bad})
        assert caught.value.field == "schedule_partial_failure_threshold"


def test_export_and_import_keep_the_new_fields_and_refuse_bad_ones():
    schedule = periodic(expected_duration=20 * M, partial_failure_threshold=0.2, duration_spread=90 * timedelta(seconds=1),
                        average_good_duration=15 * M, last_items_done=9, last_items_failed=1)
    data = schedule_to_dict(schedule)
    assert (data["expected_duration"], data["duration_spread"], data["partial_failure_threshold"]) == (1200, 90, 0.2)
    assert (data["last_items_done"], data["last_items_failed"]) == (9, 1)
    assert schedule_from_dict(data) == schedule
    for field, value in [("expected_duration", 0), ("expected_duration", -5), ("partial_failure_threshold", 2),
                         ("partial_failure_threshold", True), ("last_items_failed", -1), ("last_items_done", "x"),
                         ("duration_spread", -1)]:
        with pytest.raises(ValidationError) as caught:
            schedule_from_dict({**data, field: value})
        assert caught.value.field == field, (field, value)


def test_a_declaration_setting_neither_new_field_keeps_its_fingerprint():
    """The definition compared and fingerprinted leaves the fields added later out while they are unset."""
    plain = Declaration("python:x", (periodic(),))
    assert plain.fingerprint == "fbe4c1f38f57a594576b"  # as computed before the fields were added
    assert "expected_duration" not in definition_of(periodic())
    assert "partial_failure_threshold" not in definition_of(periodic())
    assert definition_of(periodic(expected_duration=M))["expected_duration"] == 60
    assert plain.fingerprint != Declaration("python:x", (periodic(partial_failure_threshold=0.5),)).fingerprint


def test_a_jobs_items_go_into_the_runs_detail_and_bad_ones_fail_the_run():
    registry = TaskRegistry()
    registry.register("jobs.partial", lambda: {"items_done": 8, "items_failed": 2})
    registry.register("jobs.nonsense", lambda: {"items_done": -3, "items_failed": 0})
    ok, detail = call_schedule_job(registry, "jobs.partial", TaskArguments(), threading.Event())
    assert ok and detail == {"items_done": 8, "items_failed": 2}
    ok, detail = call_schedule_job(registry, "jobs.nonsense", TaskArguments(), threading.Event())
    assert not ok and detail["error"].startswith("ValidationError: items_done")
    assert "items_done" not in detail


def test_the_scheduler_records_a_partial_failure(store, clock):
    registry = TaskRegistry()
    registry.register("jobs.partial", lambda: {"items_done": 6, "items_failed": 4})
    store.create_task_type(TaskType("partial", "a partial job", "jobs.partial", default_interval=H))
    store.create_schedule(Schedule("p", ScheduleKind.PERIODIC, "partial", T0 - 2 * H, scheduling_period=24 * H),
                          clock.now())
    scheduler = DeadlineScheduler(store, clock, node="n1", registry=registry)
    assert scheduler.run_once() == 1
    wait_until(lambda: not scheduler.running(), timeout=10, interval=0.01, what="the run to end")
    stored = store.get_schedule("p")
    assert (stored.last_items_done, stored.last_items_failed, stored.failure_count) == (6, 4, 0)
    [run] = store.list_schedule_runs("p")
    assert run.detail["items_done"] == 6 and run.detail["items_failed"] == 4
    assert assess(stored, clock.now(), ScheduleTiming()).condition.reason is Reason.PARTIAL_FAILURE


def test_a_celery_worker_ends_a_schedule_run_with_its_items(store):
    clock = ManualClock(T0)
    registry = TaskRegistry()
    registry.register("partial", lambda: {"items_done": 1, "items_failed": 3})
    settings = Settings().with_values({"schedule_ping_interval": "0.05s", "schedule_ping_timeout": "1s"})
    store.create_task_type(TaskType("job", "a job", "partial"))
    store.create_schedule(Schedule("s", ScheduleKind.PERIODIC, "job", T0 - 2 * H, scheduling_period=H), T0,
                          settings.schedule_timing())
    [(_, run)] = store.pick_schedules(node="n1", owner_name="sched", tags=["tag-1"], now=clock.now())
    runtime = WorkerRuntime(settings, clock, registry, open_store=lambda url: store)
    result = run_schedule_here(runtime, name="s", tag=run.owner_tag, backend_name="partial", arguments=TaskArguments())
    assert result == {"status": "succeeded", "items_done": 1, "items_failed": 3}
    stored = store.get_schedule("s")
    assert (stored.last_items_done, stored.last_items_failed) == (1, 3)
    assert assess(stored, T0, settings.schedule_timing()).condition.reason is Reason.PARTIAL_FAILURE
