"""Schedules on every store: definitions, the indexed pick with ownership, pings,
run ends (the schedule's state), the steal protocol and the run history."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from conftest import T0

from ostinato.domain.blackouts import parse_blackout_periods
from ostinato.domain.errors import ConflictError, NotFoundError, ValidationError
from ostinato.domain.schedules import (
    RunStatus,
    Schedule,
    ScheduleKind,
    ScheduleTiming,
    updated_average,
)
from ostinato.domain.tasks import TaskArguments

H = timedelta(hours=1)
M = timedelta(minutes=1)
S = timedelta(seconds=1)


def periodic(name: str, **kw) -> Schedule:
    base = dict(name=name, kind=ScheduleKind.PERIODIC, task_type="scrape", created_at=T0 - 10 * H,
                scheduling_period=24 * H, cooldown_duration=H)
    return Schedule(**{**base, **kw})


def test_create_get_list_save_delete(store):
    s = periodic("bills", arguments=TaskArguments(("ca",), {"depth": 2}), tz="America/Los_Angeles",
                 blackout_periods=parse_blackout_periods([{"start": "23:00", "end": "01:00"}]),
                 dont_run_on_nodes=("old-box",), max_expected_duration=H, max_allowed_duration=2 * H)
    store.create_schedule(s, T0)
    assert store.get_schedule("bills") == s.validated()
    with pytest.raises(ConflictError):
        store.create_schedule(s, T0)
    store.create_schedule(Schedule("nightly", ScheduleKind.CALENDAR, "scrape", T0, cron_schedule="0 2 * * *",
                                   cron_max_schedule_duration=4 * H, tz="Europe/Paris"), T0)
    assert [x.name for x in store.list_schedules()] == ["bills", "nightly"]
    assert [x.name for x in store.list_schedules(after="bills")] == ["nightly"]
    store.save_schedule(replace(s, enabled=False), T0)
    assert store.get_schedule("bills").enabled is False
    with pytest.raises(NotFoundError):
        store.save_schedule(periodic("ghost"), T0)
    assert store.delete_schedule("bills", T0, actor="ana") is True and store.delete_schedule("bills", T0, actor="ana") is False
    assert store.get_schedule("bills") is None


def test_bad_schedules_are_refused_and_nothing_is_stored(store):
    with pytest.raises(ValidationError, match="cooldown_duration"):
        store.create_schedule(periodic("x", scheduling_period=H, cooldown_duration=2 * H), T0)
    with pytest.raises(ValidationError, match="cron_schedule"):
        store.create_schedule(Schedule("y", ScheduleKind.CALENDAR, "scrape", T0, cron_schedule="every day",
                                       cron_max_schedule_duration=H), T0)
    assert store.list_schedules() == []


def test_the_pick_takes_the_lowest_should_start_by_that_can_start(store):
    # should_start_by = last good start + period - average; can_start_by = last good end + cooldown
    store.create_schedule(periodic("late", last_good_start_at=T0 - 23 * H, last_good_end_at=T0 - 22 * H), T0)
    store.create_schedule(periodic("early", last_good_start_at=T0 - 2 * H, last_good_end_at=T0 - 2 * H), T0)
    store.create_schedule(periodic("cooling", last_good_start_at=T0 - 23 * H - 30 * M,
                                   last_good_end_at=T0 - 10 * M), T0)  # most urgent, but cooling down
    store.create_schedule(periodic("paused", enabled=False), T0)
    store.create_schedule(periodic("not_here", dont_run_on_nodes=("n1",)), T0)
    schedule, run = store.pick_schedule(node="n1", owner_name="a", tag="tag-1", now=T0)
    assert schedule.name == "late" and schedule.owner_tag == "tag-1" and schedule.running
    assert (run.schedule, run.owner_node, run.owner_name, run.status) == ("late", "n1", "a", RunStatus.RUNNING)
    # running schedules are not picked again; the next is "early"; "not_here" is excluded on n1
    assert store.pick_schedule(node="n1", owner_name="a", tag="tag-2", now=T0)[0].name == "early"
    assert store.pick_schedule(node="n1", owner_name="a", tag="tag-3", now=T0) is None
    assert store.pick_schedule(node="n2", owner_name="b", tag="tag-4", now=T0)[0].name == "not_here"
    # "cooling" becomes pickable once its cooldown is over
    assert store.next_can_start_by() == T0 + 50 * M
    assert store.pick_schedule(node="n1", owner_name="a", tag="tag-5", now=T0 + 50 * M)[0].name == "cooling"


def test_a_run_end_moves_the_state_by_the_seed_rules(store):
    store.create_schedule(periodic("bills", average_good_duration=10 * M), T0)
    schedule, run = store.pick_schedule(node="n", owner_name="a", tag="t1", now=T0)
    assert store.ping_schedule("bills", "t1", T0 + M) is True
    assert store.end_schedule_run("bills", "t1", status=RunStatus.SUCCEEDED, ended=T0 + 20 * M,
                                  detail={"items": 12}) is True
    after = store.get_schedule("bills")
    assert (after.last_good_start_at, after.last_good_end_at, after.failure_count) == (T0, T0 + 20 * M, 0)
    assert after.average_good_duration == updated_average(10 * M, 20 * M) and not after.running
    [ended] = store.list_schedule_runs("bills")
    assert (ended.id, ended.status, ended.ended_at, ended.detail) == (run.id, RunStatus.SUCCEEDED, T0 + 20 * M, {"items": 12})
    # a failure: counted, retried 5 minutes after its end (can_start_by 1 h cooldown wins here)
    store.pick_schedule(node="n", owner_name="a", tag="t2", now=T0 + 2 * H)
    store.end_schedule_run("bills", "t2", status=RunStatus.FAILED, ended=T0 + 2 * H + M)
    after = store.get_schedule("bills")
    assert after.failure_count == 1 and after.last_good_start_at == T0 and after.last_end_at == T0 + 2 * H + M
    assert [r.status for r in store.list_schedule_runs("bills")] == [RunStatus.FAILED, RunStatus.SUCCEEDED]


def test_a_running_schedule_without_a_recorded_ping_is_silent_from_the_start_of_its_run(store):
    """The last sign of life is the last ping, or the run's start when none was recorded (an imported
    schedule): the steal counts from there, as the condition's owner_silent does."""
    timing = ScheduleTiming()
    store.create_schedule(periodic("bills", owner_tag="t1", owner_node="n1", owner_name="a", owner_started_at=T0), T0)
    assert store.steal_silent_schedules(T0 + 30 * S, timing) == {"marked": [], "taken": []}
    assert store.steal_silent_schedules(T0 + 31 * S, timing) == {"marked": ["bills"], "taken": []}
    assert store.steal_silent_schedules(T0 + 62 * S, timing) == {"marked": [], "taken": ["bills"]}
    taken = store.get_schedule("bills")
    assert not taken.running and taken.failure_count == 1 and taken.last_start_at == T0


def test_steal_protocol_marks_then_takes_and_the_old_owner_learns_it(store):
    timing = ScheduleTiming()
    store.create_schedule(periodic("bills"), T0)
    store.pick_schedule(node="n1", owner_name="a", tag="t1", now=T0)
    assert store.steal_silent_schedules(T0 + 20 * S, timing) == {"marked": [], "taken": []}
    assert store.steal_silent_schedules(T0 + 31 * S, timing) == {"marked": ["bills"], "taken": []}
    assert store.get_schedule("bills").steal_start_at == T0 + 31 * S
    # within the grace period the mark stays; a ping clears it
    assert store.steal_silent_schedules(T0 + 50 * S, timing)["taken"] == []
    assert store.ping_schedule("bills", "t1", T0 + 55 * S) is True
    assert store.get_schedule("bills").steal_start_at is None
    # silent again: marked, then taken after the grace
    store.steal_silent_schedules(T0 + 90 * S, timing)
    assert store.steal_silent_schedules(T0 + 121 * S, timing) == {"marked": [], "taken": ["bills"]}
    taken = store.get_schedule("bills")
    assert not taken.running and taken.failure_count == 1
    assert store.list_schedule_runs("bills")[0].status is RunStatus.LOST
    # another scheduler runs it (after the retry backoff); the old owner's ping and end fail
    schedule, _ = store.pick_schedule(node="n2", owner_name="b", tag="t2", now=T0 + 121 * S + 5 * M)
    assert schedule.owner_tag == "t2"
    assert store.ping_schedule("bills", "t1", T0 + 7 * M) is False
    assert store.end_schedule_run("bills", "t1", status=RunStatus.SUCCEEDED, ended=T0 + 7 * M) is False
    assert store.get_schedule("bills").owner_tag == "t2"


def test_runs_left_by_a_dead_process_are_released_at_its_restart(store):
    store.create_schedule(periodic("a"), T0)
    store.create_schedule(periodic("b"), T0)
    store.pick_schedule(node="n1", owner_name="x", tag="t1", now=T0)
    store.pick_schedule(node="n1", owner_name="y", tag="t2", now=T0)
    assert store.release_owner_schedules("n1", "x", T0 + M) == ["a"]
    assert not store.get_schedule("a").running and store.get_schedule("b").running
    assert store.list_schedule_runs("a")[0].status is RunStatus.LOST
