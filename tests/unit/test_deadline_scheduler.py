"""The deadline-greedy scheduler on every store, with a manual clock: runs,
failures, submit mode's submissions, stealing from a silent owner, overruns and
the release of runs left by a dead process."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from waiting import wait_until

from ostinato.domain.schedules import RunMode, RunStatus, Schedule, ScheduleKind, ScheduleTiming
from ostinato.domain.tasks import TaskArguments, TaskStatus, TaskType
from ostinato.execution.registry import TaskRegistry
from ostinato.services.deadline_scheduler import DeadlineScheduler

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)  # the clock fixture's start (tests/conftest.py)

H = timedelta(hours=1)
M = timedelta(minutes=1)
S = timedelta(seconds=1)


@pytest.fixture
def registry():
    reg = TaskRegistry()
    reg.calls = []
    release = threading.Event()

    def ok(*args, **kwargs):
        reg.calls.append((args, kwargs))
        return {"status": "eventful", "items": 3}

    def boom():
        raise RuntimeError("site down")

    def slow(stop=None):
        # a cooperative job: returns when asked to stop, or when the test releases it
        while not release.is_set() and not (stop is not None and stop.is_set()):
            time.sleep(0.01)  # the job's work, until one of the two events ends it
        return True

    reg.register("jobs.ok", ok)
    reg.register("jobs.boom", boom)
    reg.register("jobs.slow", slow)
    reg.release = release
    return reg


@pytest.fixture
def types(store):
    for name in ("ok", "boom", "slow"):
        store.create_task_type(TaskType(name, f"{name} job", f"jobs.{name}", default_interval=H))
    return store


def schedule(name: str, task_type: str, **kw) -> Schedule:
    base = dict(name=name, kind=ScheduleKind.PERIODIC, task_type=task_type, created_at=T0 - 2 * H,
                scheduling_period=24 * H, cooldown_duration=H)
    return Schedule(**{**base, **kw})


def settle(scheduler: DeadlineScheduler, timeout: float = 10.0) -> None:
    wait_until(lambda: not scheduler.running(), timeout=timeout, interval=0.01, what="the scheduler's runs to end")


def test_runs_the_job_and_moves_the_schedule(types, clock, registry):
    store = types
    store.create_schedule(schedule("bills", "ok", arguments=TaskArguments(("ca",), {"depth": 2})), clock.now())
    store.create_schedule(schedule("broken", "boom"), clock.now())
    scheduler = DeadlineScheduler(store, clock, node="n1", registry=registry)
    assert scheduler.run_once() == 2
    settle(scheduler)
    assert registry.calls == [(("ca",), {"depth": 2})]
    bills, broken = store.get_schedule("bills"), store.get_schedule("broken")
    assert bills.last_good_start_at == T0 and bills.failure_count == 0 and not bills.running
    assert broken.failure_count == 1 and broken.last_good_start_at is None
    [run] = store.list_schedule_runs("bills")
    assert run.status is RunStatus.SUCCEEDED and run.detail == {"items": 3} and run.owner_node == "n1"
    assert "site down" in store.list_schedule_runs("broken")[0].detail["error"]
    # nothing can start again before the cooldown (and the retry backoff)
    assert scheduler.run_once() == 0
    clock.advance(H)
    assert scheduler.run_once() == 2
    settle(scheduler)


def test_submit_mode_queues_one_task_at_a_time(types, clock, registry):
    store = types
    store.create_schedule(schedule("cleanup", "ok", mode=RunMode.SUBMIT, cooldown_duration=M), clock.now())
    scheduler = DeadlineScheduler(store, clock, node="n1", registry=registry)
    assert scheduler.run_once() == 1
    [run] = store.list_schedule_runs("cleanup")
    task_id = run.detail["task_id"]
    assert run.status is RunStatus.SUBMITTED and store.get_tasks([task_id])[0].policy.value == "oneshot"
    assert registry.calls == []  # the job queue runs it, not the scheduler
    clock.advance(2 * M)
    scheduler.run_once()
    latest = store.list_schedule_runs("cleanup")[0]
    assert "still pending" in latest.detail["skipped"] and latest.detail["task_id"] == task_id
    assert store.get_schedule("cleanup").last_good_start_at == T0 + 2 * M  # the next start moved either way
    store.set_task_status([task_id], TaskStatus.DISABLED)
    clock.advance(2 * M)
    scheduler.run_once()
    assert store.list_schedule_runs("cleanup")[0].detail["task_id"] != task_id


def test_a_silent_owner_is_stolen_from_and_stops(types, clock, registry):
    store = types
    timing = ScheduleTiming(ping_timeout=30 * S, steal_grace=30 * S)
    store.create_schedule(schedule("long", "slow"), clock.now())
    a = DeadlineScheduler(store, clock, node="a", registry=registry, timing=timing)
    b = DeadlineScheduler(store, clock, node="b", registry=registry, timing=timing)
    assert a.run_once() == 1 and a.running() == ["long"]
    # a stops pinging (paused); b marks, then takes over after the grace period
    clock.advance(31 * S)
    assert b.run_once() == 0 and store.get_schedule("long").steal_start_at == clock.now()
    clock.advance(31 * S)
    b.run_once()
    assert store.list_schedule_runs("long")[0].status is RunStatus.LOST
    clock.advance(5 * M)  # the retry backoff after the lost run
    assert b.run_once() == 1 and b.running() == ["long"]
    # a wakes up: its ping finds the schedule taken, it stops its run
    a.watch()
    settle(a)
    assert store.get_schedule("long").owner_node == "b"
    registry.release.set()
    settle(b)
    runs = store.list_schedule_runs("long")
    assert [r.status for r in runs] == [RunStatus.SUCCEEDED, RunStatus.LOST]
    assert runs[0].owner_node == "b" and runs[1].owner_node == "a"


def test_overrunning_max_allowed_duration_stops_the_run_as_a_failure(types, clock, registry):
    store = types
    store.create_schedule(schedule("long", "slow", max_expected_duration=10 * M, max_allowed_duration=20 * M),
                          clock.now())
    scheduler = DeadlineScheduler(store, clock, node="n1", registry=registry)
    scheduler.run_once()
    clock.advance(15 * M)
    scheduler.watch()
    assert scheduler.running() == ["long"]  # past expected: only logged
    clock.advance(10 * M)
    scheduler.watch()
    settle(scheduler)
    after = store.get_schedule("long")
    assert after.failure_count == 1 and not after.running
    assert store.list_schedule_runs("long")[0].status is RunStatus.STOPPED


def test_runs_left_by_a_dead_process_end_at_its_restart(types, clock, registry):
    store = types
    store.create_schedule(schedule("long", "slow"), clock.now())
    first = DeadlineScheduler(store, clock, node="n1", instance="i", registry=registry)
    first.run_once()
    # the process dies: a new one with the same node and instance starts
    second = DeadlineScheduler(store, clock, node="n1", instance="i", registry=registry)
    assert second.start() == ["long"]
    assert store.list_schedule_runs("long")[0].status is RunStatus.LOST
    registry.release.set()
    settle(first)
    assert store.list_schedule_runs("long")[0].status is RunStatus.LOST  # the old thread's result is not recorded


@pytest.mark.parametrize("cooldown, fewest, most, closest", [
    (None, 24, 28, 50 * M),  # no cooldown given: about once an hour (every 54 min here), never back to back
    (timedelta(0), 24 * 60, 10 * 24 * 60, timedelta(0)),  # cooldown 0s asks for back to back: again at each pass
    (30 * M, 40, 50, 30 * M),  # a cooldown given: that wait after each good run
])
@pytest.mark.long
def test_an_hourly_schedule_over_a_simulated_day(types, clock, registry, cooldown, fewest, most, closest):
    store = types
    store.create_schedule(schedule("hourly", "ok", scheduling_period=H, cooldown_duration=cooldown,
                                   created_at=T0), clock.now())
    scheduler = DeadlineScheduler(store, clock, node="n1", registry=registry)
    for _ in range(24 * 60):  # a pass a minute, the clock moved between passes (the runs take no time)
        scheduler.run_once()
        settle(scheduler)
        scheduler.run_once()  # the ends are recorded at the next pass
        clock.advance(M)
    runs = sorted(run.started_at for run in store.list_schedule_runs("hourly", limit=10_000))
    assert fewest <= len(runs) <= most, len(runs)
    assert min(b - a for a, b in zip(runs, runs[1:], strict=False)) >= closest
    assert all(b - a <= H for a, b in zip(runs, runs[1:], strict=False))  # never stale
