"""Fire times and the catch-up rules (domain.firings): which fire times are due after the cursor,
what ``latest``, ``all:N`` and ``skip`` run of a backlog, the grace that tells a late beat from an
outage, the grid of a periodic schedule the beats send, and the refusals naming the field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ostinato.domain.errors import ValidationError
from ostinato.domain.firings import (
    CatchUp,
    CatchUpKind,
    Due,
    Skipped,
    due_fire_times,
    fire_time_after,
    plan_catch_up,
)
from ostinato.domain.schedules import RunMode, Schedule, ScheduleKind, ScheduleTiming, assess, get_schedule_start_times

UTC = UTC
T0 = datetime(2026, 3, 1, 0, 0, tzinfo=UTC)
H, M, S = timedelta(hours=1), timedelta(minutes=1), timedelta(seconds=1)
GRACE = timedelta(seconds=10)


def hourly(**kw) -> Schedule:
    base = dict(name="h", kind=ScheduleKind.CALENDAR, task_type="t", created_at=T0, cron_schedule="0 * * * *",
                cron_max_schedule_duration=30 * M)
    return Schedule(**{**base, **kw}).validated()


def every(period: timedelta, **kw) -> Schedule:
    base = dict(name="p", kind=ScheduleKind.PERIODIC, task_type="t", created_at=T0, scheduling_period=period,
                mode=RunMode.SEND)
    return Schedule(**{**base, **kw}).validated()


def test_catch_up_rules_parse_and_refuse_naming_the_field():
    assert CatchUp.parse("latest") == CatchUp() and CatchUp.parse("skip").kind is CatchUpKind.SKIP
    assert CatchUp.parse("all:5") == CatchUp.all(5) and str(CatchUp.all(5)) == "all:5"
    for bad, field in [("all", "catch_up.budget"), ("all:0", "catch_up.budget"), ("sometimes", "catch_up"),
                       ("latest:2", "catch_up.budget"), (3, "catch_up")]:
        with pytest.raises(ValidationError) as refused:
            CatchUp.parse(bad)
        assert refused.value.field == field, bad


def test_due_fire_times_after_the_cursor():
    schedule = hourly(fired_through=T0 + H)
    assert due_fire_times(schedule, T0 + H + 30 * M) == Due((), T0 + H, 0, None)
    due = due_fire_times(schedule, T0 + 5 * H)
    assert due.tail == (T0 + 2 * H, T0 + 3 * H, T0 + 4 * H, T0 + 5 * H) and due.earlier == 0
    short = due_fire_times(schedule, T0 + 5 * H, keep=2)
    assert short.tail == (T0 + 4 * H, T0 + 5 * H) and short.earlier == 2 and short.before == T0 + 3 * H
    assert short.first == T0 + 2 * H


def test_a_periodic_schedule_the_beats_send_fires_on_a_grid_from_its_cursor():
    schedule = every(10 * S)
    assert fire_time_after(schedule, T0) == T0 + 10 * S and fire_time_after(schedule, T0 + 25 * S) == T0 + 30 * S
    assert due_fire_times(schedule, T0 + 35 * S).tail == (T0 + 10 * S, T0 + 20 * S, T0 + 30 * S)
    moved = every(10 * S, fired_through=T0 + 3 * S)
    assert fire_time_after(moved, T0 + 3 * S) == T0 + 13 * S
    long = due_fire_times(every(S), T0 + timedelta(days=1), keep=3)
    assert long.count == 86400 and long.tail[-1] == T0 + timedelta(days=1) and long.before == long.tail[0] - S


@pytest.mark.parametrize("rule, run, skipped", [
    (CatchUp(), (T0 + 5 * H,), Skipped(T0 + 2 * H, T0 + 4 * H, 3)),
    (CatchUp.all(2), (T0 + 4 * H, T0 + 5 * H), Skipped(T0 + 2 * H, T0 + 3 * H, 2)),
    (CatchUp.all(10), (T0 + 2 * H, T0 + 3 * H, T0 + 4 * H, T0 + 5 * H), None),
    (CatchUp.skip(), (), Skipped(T0 + 2 * H, T0 + 5 * H, 4)),
])
def test_what_each_rule_runs_of_a_backlog(rule, run, skipped):
    plan = plan_catch_up(rule, due_fire_times(hourly(fired_through=T0 + H), T0 + 5 * H + M), T0 + 5 * H + M, GRACE)
    assert plan.run == run and plan.skipped == skipped
    assert plan.fired_through == (skipped.last if skipped else None)


def test_fire_times_within_the_grace_all_run_whatever_the_rule():
    due = due_fire_times(every(S), T0 + 4 * S)
    for rule in (CatchUp(), CatchUp.skip()):
        assert plan_catch_up(rule, due, T0 + 4 * S, GRACE).run == due.tail and len(due.tail) == 4
    late = plan_catch_up(CatchUp(), due_fire_times(every(S), T0 + 60 * S), T0 + 60 * S, GRACE)
    assert late.run == (T0 + 60 * S,) and late.skipped == Skipped(T0 + S, T0 + 59 * S, 59)


def test_one_late_fire_time_is_not_a_backlog():
    plan = plan_catch_up(CatchUp.skip(), due_fire_times(hourly(fired_through=T0 + H), T0 + 2 * H + 50 * M),
                         T0 + 2 * H + 50 * M, GRACE)
    assert plan.run == (T0 + 2 * H,) and plan.skipped is None


def test_a_calendar_schedules_next_start_follows_its_cursor():
    schedule = hourly(last_good_start_at=T0 + 10 * M, fired_through=T0 + 3 * H)
    times = get_schedule_start_times(schedule, T0 + 3 * H, backoff=ScheduleTiming().backoff)
    assert times.can_start_by == T0 + 4 * H
    assert get_schedule_start_times(hourly(last_good_start_at=T0 + 10 * M), T0, backoff=(M,)).can_start_by == T0 + H


def test_a_good_run_moves_the_cursor_to_the_fire_time_it_ran_for():
    from ostinato.domain.schedules import apply_run_end

    schedule = hourly(fired_through=T0 + H)
    after = apply_run_end(schedule, T0 + 4 * H, T0 + 4 * H + M, True)
    assert after.fired_through == T0 + 2 * H  # the next run is for 03:00, already due
    failed = apply_run_end(schedule, T0 + 4 * H, T0 + 4 * H + M, False)
    assert failed.fired_through == T0 + H


def test_a_schedule_the_beats_send_is_in_error_when_a_fire_time_is_not_sent():
    schedule = every(10 * S, fired_through=T0)
    timing = ScheduleTiming()
    assert assess(schedule, T0 + 30 * S, timing).condition.state.value == "OK"
    late = assess(schedule, T0 + 10 * S + M + S, timing).condition
    assert late.state.value == "ERROR" and late.reason.value == "stale" and late.deadline == T0 + 10 * S + M
    assert assess(schedule, T0, timing).start_times is None  # never picked by the scheduler


def test_refusals_name_the_field():
    for kw, field in [(dict(scheduling_period=timedelta(milliseconds=500)), "scheduling_period"),
                      (dict(retry_backoff=()), "retry_backoff"), (dict(options=[1]), "options"),
                      (dict(declared_by=""), "declared_by")]:
        with pytest.raises(ValidationError) as refused:
            every(S, **kw)
        assert refused.value.field == field
    with pytest.raises(ValidationError, match="catch_up"):
        Schedule("x", ScheduleKind.PERIODIC, "t", T0, scheduling_period=H, catch_up=CatchUp.skip()).validated()
