"""The deadline-greedy formulas (docs/design/deadline-greedy.md) on hand-computed cases: conditions, start times, retries,
blackout periods, the EWMA, overruns and the steal protocol."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, time, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ostinato.domain.blackouts import BlackoutPeriod, parse_blackout_periods
from ostinato.domain.errors import ValidationError
from ostinato.domain.schedule_watch import Overrun, StealStep, overruns, steal_step
from ostinato.domain.schedules import (
    DEFAULT_RETRY_BACKOFF,
    Reason,
    Schedule,
    ScheduleKind,
    ScheduleTiming,
    State,
    apply_run_end,
    assess,
    deadline,
    get_schedule_condition,
    get_schedule_start_times,
    last_sign_of_life,
    updated_average,
)

UTC = UTC
T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)  # a Monday
H = timedelta(hours=1)
M = timedelta(minutes=1)
S = timedelta(seconds=1)


def condition_at(schedule: Schedule, now: datetime):
    return get_schedule_condition(schedule, now, ping_timeout=30 * S)


def start_times_at(schedule: Schedule, now: datetime):
    return get_schedule_start_times(schedule, now, backoff=DEFAULT_RETRY_BACKOFF)


def periodic(**kw) -> Schedule:
    base = dict(name="bills", kind=ScheduleKind.PERIODIC, task_type="scrape", created_at=T0 - 100 * H,
                scheduling_period=24 * H, cooldown_duration=2 * H)
    return Schedule(**{**base, **kw}).validated()


def calendar(**kw) -> Schedule:
    base = dict(name="nightly", kind=ScheduleKind.CALENDAR, task_type="scrape", created_at=T0 - 100 * H,
                cron_schedule="0 0 * * *", cron_max_schedule_duration=6 * H)
    return Schedule(**{**base, **kw}).validated()


# -- periodic ------------------------------------------------------------------------
def test_periodic_condition():
    s = periodic(last_good_start_at=T0 - 20 * H, last_good_end_at=T0 - 19 * H, average_good_duration=H, failure_count=0)
    # deadline = last good start + period = T0 + 4 h
    assert condition_at(s, T0) == condition_at(s, T0)
    assert condition_at(s, T0).state is State.OK and condition_at(s, T0).deadline == T0 + 4 * H
    # NOW + average > deadline: WARNING likely late
    assert condition_at(s, T0 + 3 * H + M) .reason is Reason.LIKELY_LATE
    # NOW - last_good_start_at > scheduling_period: ERROR
    assert condition_at(s, T0 + 4 * H + M) .state is State.ERROR
    assert condition_at(s, T0 + 4 * H + M).reason is Reason.STALE
    # running: owner_started_at + average > deadline
    running = replace(s, owner_started_at=T0 + 3 * H + 30 * M, owner_tag="x", owner_last_ping_at=T0 + 3 * H + 30 * M)
    assert condition_at(running, T0 + 3 * H + 31 * M).reason is Reason.RUNNING_LATE
    early = replace(s, owner_started_at=T0, owner_tag="x", owner_last_ping_at=T0 + 3 * H + 30 * M + 50 * S)
    assert condition_at(early, T0 + 3 * H + 31 * M).state is State.OK  # started in time: no warning
    # the last run failed
    assert condition_at(replace(s, failure_count=1), T0).reason is Reason.LAST_RUN_FAILED


def test_periodic_start_times():
    s = periodic(last_good_start_at=T0 - 20 * H, last_good_end_at=T0 - 19 * H, average_good_duration=H)
    times = start_times_at(s, T0)
    assert times.can_start_by == T0 - 17 * H  # last_good_end_at + cooldown_duration
    assert times.should_start_by == T0 + 3 * H  # last_good_start_at + scheduling_period - average_good_duration


def test_a_schedule_that_never_succeeded_counts_from_its_creation():
    s = periodic(created_at=T0 - 30 * H)
    assert start_times_at(s, T0).can_start_by == T0 - 30 * H
    assert condition_at(s, T0) .state is State.ERROR  # 30 h since creation > 24 h


# -- calendar ------------------------------------------------------------------------
def test_calendar_condition_and_start_times():
    # last good start at 00:10 today; next cron time 00:00 tomorrow; deadline 06:00 tomorrow
    s = calendar(last_good_start_at=datetime(2026, 1, 5, 0, 10, tzinfo=UTC),
                 last_good_end_at=datetime(2026, 1, 5, 1, 0, tzinfo=UTC), average_good_duration=2 * H)
    tomorrow = datetime(2026, 1, 6, tzinfo=UTC)
    times = start_times_at(s, T0)
    assert times.can_start_by == tomorrow and times.should_start_by == tomorrow + 4 * H
    assert condition_at(s, T0).state is State.OK
    assert condition_at(s, tomorrow + 4 * H + M).reason is Reason.LIKELY_LATE
    assert condition_at(s, tomorrow + 6 * H + M).reason is Reason.DEADLINE_MISSED


def test_a_calendar_deadline_adds_elapsed_time_across_a_clock_change():
    """Due at 01:30 EDT on 2026-11-01 (05:30Z), one hour to complete: the deadline is 06:30Z (01:30
    EST), an hour later, not 02:30 EST (07:30Z), which wall-clock arithmetic on the local time gives."""
    s = calendar(cron_schedule="30 1 * * *", tz="America/New_York", cron_max_schedule_duration=H,
                 created_at=datetime(2026, 10, 31, 12, tzinfo=UTC))
    assert deadline(s) == datetime(2026, 11, 1, 6, 30, tzinfo=UTC)
    assert start_times_at(s, datetime(2026, 11, 1, tzinfo=UTC)).should_start_by == datetime(2026, 11, 1, 6, 30, tzinfo=UTC)


def test_calendar_rules_are_read_in_the_schedule_zone():
    s = calendar(tz="America/New_York", last_good_start_at=datetime(2026, 1, 5, 5, 0, tzinfo=UTC))
    assert start_times_at(s, T0).can_start_by == datetime(2026, 1, 6, 5, 0, tzinfo=UTC)  # 00:00 EST


# -- retries and blackouts -----------------------------------------------------------
@pytest.mark.parametrize("failures, wait", [(1, 5 * M), (2, H), (3, 4 * H), (7, 4 * H)])
def test_retry_backoff(failures, wait):
    s = periodic(last_good_start_at=T0 - 20 * H, last_good_end_at=T0 - 19 * H, last_end_at=T0, failure_count=failures)
    assert start_times_at(s, T0).can_start_by == T0 + wait


def test_can_start_by_moves_out_of_a_blackout_but_should_start_by_does_not():
    s = periodic(last_good_start_at=T0 - 20 * H, last_good_end_at=T0 - 19 * H, tz="Europe/Paris",
                 blackout_periods=parse_blackout_periods([{"start": "23:00", "end": "02:00"}]))
    # can_start_by = T0 - 17 h = 19:00 UTC the day before = 20:00 Paris: not in the blackout
    assert start_times_at(s, T0).can_start_by == T0 - 17 * H
    s = replace(s, last_good_end_at=T0 - 14 * H)  # can_start_by 00:00 UTC = 01:00 Paris: inside 23:00–02:00
    times = start_times_at(s, T0)
    assert times.can_start_by == datetime(2026, 1, 5, 1, 0, tzinfo=UTC)  # 02:00 Paris
    assert times.should_start_by == T0 + 4 * H
    s = replace(s, last_good_end_at=T0 - 13 * H - 30 * M)  # can_start_by 01:30 Paris, the morning part: 02:00 today
    assert start_times_at(s, T0).can_start_by == datetime(2026, 1, 5, 1, 0, tzinfo=UTC)


@pytest.mark.parametrize("value, field", [
    ([{"start": "25:00", "end": "01:00"}], "blackout_periods[0].start"),
    ([{"start": "01:00"}], "blackout_periods[0]"),
    ([{"start": "01:00", "end": "01:00"}], "blackout_periods[0]"),
    ([{"start": "01:00", "end": "03:00"}, {"start": "02:00", "end": "04:00"}], "blackout_periods[1]"),
    ([{"start": "23:00", "end": "02:00"}, {"start": "01:00", "end": "01:30"}], "blackout_periods[1]"),
    ("01:00-02:00", "blackout_periods"),
])
def test_bad_blackout_periods_name_the_field(value, field):
    with pytest.raises(ValidationError) as caught:
        parse_blackout_periods(value)
    assert caught.value.field == field


# -- the EWMA and the end of a run ---------------------------------------------------
def test_ewma_and_run_end():
    assert updated_average(None, 10 * M) == 10 * M
    assert updated_average(10 * M, 20 * M) == 0.37 * 20 * M + 0.63 * 10 * M
    s = periodic(average_good_duration=10 * M, failure_count=2, owner_tag="t", owner_node="n", owner_started_at=T0)
    good = apply_run_end(s, T0, T0 + 20 * M, True)
    assert (good.last_good_start_at, good.last_good_end_at, good.failure_count) == (T0, T0 + 20 * M, 0)
    assert good.average_good_duration == updated_average(10 * M, 20 * M) and good.owner_tag is None and not good.running
    bad = apply_run_end(good, T0 + H, T0 + 2 * H, False)
    assert bad.failure_count == 1 and bad.last_good_start_at == T0 and bad.last_end_at == T0 + 2 * H
    assert bad.average_good_duration == good.average_good_duration


def test_a_run_that_seems_to_end_before_it_started_lasted_no_time():
    """A clock stepped back (or an end told by another machine) keeps the average a duration the schedule
    can be saved with, as the operator's update saves it."""
    first = apply_run_end(periodic(), T0, T0 + 10 * M, True)
    backwards = apply_run_end(first, T0 + H, T0 + H - 5 * M, True)
    assert backwards.average_good_duration is not None and backwards.average_good_duration >= timedelta(0)
    assert backwards.validated() == backwards


def test_overruns():
    s = periodic(max_expected_duration=H, max_allowed_duration=2 * H, owner_started_at=T0, owner_tag="t",
                 blackout_periods=(BlackoutPeriod(time(16), time(17)),))
    assert overruns(s, T0 + 30 * M) == []
    assert overruns(s, T0 + 90 * M) == [Overrun.EXPECTED]
    assert overruns(s, T0 + 150 * M) == [Overrun.ALLOWED]
    assert overruns(s, T0 + 4 * H + M) == [Overrun.ALLOWED, Overrun.BLACKOUT]


def test_steal_protocol():
    owned = periodic(owner_tag="t", owner_started_at=T0, owner_last_ping_at=T0)
    timing = dict(ping_timeout=30 * timedelta(seconds=1), grace=30 * timedelta(seconds=1))
    assert steal_step(owned, T0 + timedelta(seconds=20), **timing) is StealStep.NONE
    assert steal_step(owned, T0 + timedelta(seconds=31), **timing) is StealStep.MARK
    marked = replace(owned, steal_start_at=T0 + timedelta(seconds=31))
    assert steal_step(marked, T0 + timedelta(seconds=50), **timing) is StealStep.NONE  # grace
    assert steal_step(marked, T0 + timedelta(seconds=62), **timing) is StealStep.TAKE
    # the owner pinged after the mark: it keeps the run
    pinged = replace(marked, owner_last_ping_at=T0 + timedelta(seconds=40))
    assert steal_step(pinged, T0 + timedelta(seconds=62), **timing) is StealStep.NONE
    assert steal_step(periodic(), T0, **timing) is StealStep.NONE


def test_the_timing_knobs_are_required():
    """Forgetting the configured ping timeout or backoff is an error, not a silent OK."""
    s = periodic()
    with pytest.raises(TypeError):
        get_schedule_condition(s, T0)  # type: ignore[call-arg]  # left out on purpose: the TypeError is the test
    with pytest.raises(TypeError):
        get_schedule_start_times(s, T0)  # type: ignore[call-arg]  # left out on purpose: the TypeError is the test
    with pytest.raises(TypeError):
        assess(s, T0)  # type: ignore[call-arg]  # left out on purpose: the TypeError is the test


def test_assess_uses_the_configured_ping_timeout_and_backoff():
    s = periodic(last_good_start_at=T0 - 20 * H, last_good_end_at=T0 - 19 * H, last_end_at=T0 - H, failure_count=1,
                 owner_tag="t", owner_node="n", owner_name="a", owner_started_at=T0 - 20 * M,
                 owner_last_ping_at=T0 - 10 * M)
    default = assess(s, T0, ScheduleTiming())
    assert (default.condition.state, default.condition.reason) == (State.WARNING, Reason.OWNER_SILENT)
    assert default.start_times.can_start_by == T0 - H + 5 * M
    patient = assess(s, T0, ScheduleTiming(ping_timeout=15 * M, backoff=(7 * M,)))
    assert patient.condition.reason is Reason.LAST_RUN_FAILED  # 10 min without a ping is within 15 min
    assert patient.start_times.can_start_by == T0 - H + 7 * M
    assert assess(replace(s, enabled=False), T0, ScheduleTiming()).start_times is None  # paused: nothing stored


@pytest.mark.parametrize("ping", [None, T0 + 10 * S])
@pytest.mark.parametrize("after", [0, 29, 30, 31, 45, 90])
def test_owner_silent_and_the_steal_read_the_same_last_sign_of_life(ping, after):
    """The last ping, or the run's start when no ping was recorded; exactly the timeout is not silent."""
    running = periodic(last_good_start_at=T0 - H, owner_tag="t", owner_node="n", owner_name="a", owner_started_at=T0,
                       owner_last_ping_at=ping)
    last = ping or T0
    assert last_sign_of_life(running) == last
    now = last + after * S
    silent = condition_at(running, now).reason is Reason.OWNER_SILENT
    assert silent == (after > 30)
    assert (steal_step(running, now, ping_timeout=30 * S, grace=30 * S) is StealStep.MARK) == silent
    assert last_sign_of_life(periodic()) is None


def test_a_running_schedule_needs_the_start_of_its_run():
    with pytest.raises(ValidationError) as caught:
        periodic(owner_tag="t", owner_node="n", owner_name="a", owner_last_ping_at=T0)
    assert caught.value.field == "owner_started_at"


@pytest.mark.parametrize("kw, field", [
    (dict(scheduling_period=H, cooldown_duration=2 * H), "cooldown_duration"),
    (dict(scheduling_period=-H), "scheduling_period"),
    (dict(scheduling_period=None), "scheduling_period"),
    (dict(tz="Mars/Base"), "tz"),
    (dict(name="has space"), "name"),
    (dict(max_expected_duration=3 * H, max_allowed_duration=H), "max_expected_duration"),
])
def test_bad_periodic_schedules_name_the_field(kw, field):
    with pytest.raises(ValidationError) as caught:
        periodic(**kw)
    assert caught.value.field == field


@pytest.mark.parametrize("kw, field", [
    (dict(cron_schedule="61 * * * *"), "cron_schedule"),
    (dict(cron_max_schedule_duration=None), "cron_max_schedule_duration"),
    (dict(scheduling_period=H), "scheduling_period"),
])
def test_bad_calendar_schedules_name_the_field(kw, field):
    with pytest.raises(ValidationError) as caught:
        calendar(**kw)
    assert caught.value.field == field


@settings(max_examples=200, deadline=None)
@given(period_h=st.integers(1, 200), cooldown_h=st.integers(0, 200), average_m=st.integers(0, 600),
       since_start_h=st.integers(0, 400), failures=st.integers(0, 5), now_h=st.integers(0, 400))
def test_periodic_invariants(period_h, cooldown_h, average_m, since_start_h, failures, now_h):
    if cooldown_h > period_h:
        return
    start = T0 - since_start_h * H
    s = periodic(scheduling_period=period_h * H, cooldown_duration=cooldown_h * H, last_good_start_at=start,
                 last_good_end_at=start + average_m * M, average_good_duration=average_m * M,
                 failure_count=failures, last_end_at=start + average_m * M)
    now = T0 + now_h * H
    times = start_times_at(s, now)
    condition = condition_at(s, now)
    # can_start_by never before the cooldown, never before the retry
    assert times.can_start_by >= s.last_good_end_at + s.cooldown_duration
    # should_start_by + average is exactly the deadline
    assert times.should_start_by + s.average_good_duration == condition.deadline
    # ERROR exactly when the deadline has passed
    assert (condition.state is State.ERROR) == (now > condition.deadline)
