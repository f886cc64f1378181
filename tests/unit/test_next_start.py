"""A schedule's next start and its cause (domain.next_start): the time is always the pick's
``can_start_by``, and the cause the rule that set it, on hand-made cases and on any schedule."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from ostinato.domain.blackouts import BlackoutPeriod
from ostinato.domain.next_start import next_start
from ostinato.domain.schedules import Schedule, ScheduleKind, ScheduleTiming, assess

NOW = datetime(2026, 11, 29, 11, 30, tzinfo=UTC)
M = timedelta(minutes=1)
H = timedelta(hours=1)
TIMING = ScheduleTiming()


def calendar(**kw) -> Schedule:
    base = dict(name="hourly", kind=ScheduleKind.CALENDAR, task_type="scrape", created_at=NOW - 3 * H,
                cron_schedule="28 * * * *", cron_max_schedule_duration=H)
    return Schedule(**{**base, **kw}).validated()


def periodic(**kw) -> Schedule:
    base = dict(name="bills", kind=ScheduleKind.PERIODIC, task_type="scrape", created_at=NOW - 100 * H,
                scheduling_period=24 * H)
    return Schedule(**{**base, **kw}).validated()


def failed_at_its_fire_time(**kw) -> Schedule:
    """Its run for the fire time of 11:28 failed at 11:28:30 (its 10:28 run went well)."""
    return calendar(fired_through=NOW - 62 * M, last_good_start_at=NOW - 62 * M, last_good_end_at=NOW - 61 * M,
                    last_start_at=NOW - 2 * M, last_end_at=NOW - 90 * timedelta(seconds=1), failure_count=1, **kw)


def test_a_calendar_schedule_waiting_out_its_retry_says_so():
    found = next_start(failed_at_its_fire_time(), NOW, TIMING)
    assert found is not None
    assert found.at == NOW + 3 * M + 30 * timedelta(seconds=1)  # 5 min after 11:28:30, not 11:28
    assert (found.cause, found.fire_time, found.blackout) == ("retry", NOW - 2 * M, False)
    assert found.words == "a retry after failure 1, 5m after its last run ended"


def test_a_calendar_schedule_waits_for_its_fire_time():
    found = next_start(calendar(fired_through=NOW - 62 * M, last_good_start_at=NOW - 62 * M), NOW + 30 * M, TIMING)
    assert found is not None and (found.at, found.cause, found.words) == (NOW - 2 * M, "fire time", "its fire time")


def test_a_blackout_period_is_said_after_the_cause():
    dark = (BlackoutPeriod(time(11, 0), time(12, 0)),)
    found = next_start(failed_at_its_fire_time(blackout_periods=dark), NOW, TIMING)
    assert found is not None and found.at == NOW + 30 * M
    assert found.words == "a retry after failure 1, 5m after its last run ended, then the end of a blackout period"


def test_a_run_asked_for_now_lifts_the_backoff():
    found = next_start(failed_at_its_fire_time(run_requested_at=NOW), NOW, TIMING)
    assert found is not None and (found.at, found.cause, found.words) == (NOW, "asked", "a run asked for now")


def test_periodic_causes():
    good = dict(last_good_start_at=NOW - 10 * H, last_good_end_at=NOW - 10 * H + M, last_start_at=NOW - 10 * H,
                last_end_at=NOW - 10 * H + M)
    assert next_start(periodic(), NOW, TIMING).cause == "first run"
    spare = next_start(periodic(**good), NOW, TIMING)
    assert (spare.at, spare.cause) == (NOW - 10 * H + 24 * H - 144 * M, "spare")
    assert spare.words == "a tenth of its period (2h24m) before it must start"
    cooling = next_start(periodic(cooldown_duration=2 * H, **good), NOW, TIMING)
    assert (cooling.at, cooling.words) == (NOW - 8 * H + M, "its cooldown, 2h after its last good run ended")
    failed = {**good, "last_start_at": NOW - 2 * H, "last_end_at": NOW - 2 * H + M, "failure_count": 2}
    retry = next_start(periodic(**failed), NOW, TIMING)
    assert (retry.at, retry.cause, retry.words) == (NOW - H + M, "retry", "a retry after failure 2, 1h after its last run ended")
    assert next_start(periodic(enabled=False), NOW, TIMING) is None


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(list(ScheduleKind)), good=st.one_of(st.none(), st.integers(1, 60 * 48)),
       took=st.integers(0, 120), failures=st.integers(0, 4), since_failure=st.integers(0, 60 * 6),
       cooldown=st.one_of(st.none(), st.integers(0, 600)), asked=st.one_of(st.none(), st.integers(-120, 0)),
       dark=st.one_of(st.none(), st.tuples(st.integers(0, 23), st.integers(0, 23))), minutes=st.integers(0, 60 * 30))
def test_the_time_is_always_the_picks_and_the_cause_a_rule(kind, good, took, failures, since_failure, cooldown, asked,
                                                          dark, minutes):
    now = NOW + minutes * M
    state: dict = {}
    if good is not None:
        state |= dict(last_good_start_at=NOW - good * M, last_good_end_at=NOW - good * M + took * M,
                      last_start_at=NOW - good * M, last_end_at=NOW - good * M + took * M)
        if kind is ScheduleKind.CALENDAR:
            state["fired_through"] = calendar().rule.next_fire_time(NOW - good * M - H)
    if failures:
        state |= dict(failure_count=failures, last_start_at=NOW - since_failure * M - M, last_end_at=NOW - since_failure * M)
    if asked is not None:
        state["run_requested_at"] = NOW + asked * M
    if dark is not None and dark[0] != dark[1]:
        state["blackout_periods"] = (BlackoutPeriod(time(dark[0]), time(dark[1])),)
    schedule = calendar(**state) if kind is ScheduleKind.CALENDAR else \
        periodic(cooldown_duration=None if cooldown is None else cooldown * M, **state)
    times = assess(schedule, now, TIMING).start_times
    found = next_start(schedule, now, TIMING)
    assert (found is None) == (times is None)
    if found is not None:
        assert found.at == times.can_start_by
        assert found.cause != "rule", (found, schedule)
        assert not found.blackout or schedule.blackout_periods
