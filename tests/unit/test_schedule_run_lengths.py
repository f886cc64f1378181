"""How long a schedule's runs last, on hand-computed cases: the spread of good durations, the expected
duration in place of the average, the start that fits before a blackout period (``cannot_fit``
otherwise), and retries by the failed run's length."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

import ostinato
from ostinato.domain.blackouts import BlackoutPeriod
from ostinato.domain.errors import ValidationError
from ostinato.domain.next_start import next_start
from ostinato.domain.run_lengths import fit_start, retry_delay, updated_spread
from ostinato.domain.schedules import (
    Reason,
    Schedule,
    ScheduleKind,
    ScheduleTiming,
    State,
    apply_run_end,
    assess,
    cannot_fit,
    expected_run,
    get_schedule_condition,
    get_schedule_start_times,
    retry_at,
)

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)  # a Monday
H = timedelta(hours=1)
M = timedelta(minutes=1)
S = timedelta(seconds=1)
BACKOFF = (5 * M, H, 4 * H)


def periodic(**fields) -> Schedule:
    return Schedule("s", ScheduleKind.PERIODIC, "job", T0 - 10 * H, **{"scheduling_period": 24 * H, **fields}).validated()


# -- the spread -----------------------------------------------------------------------
def test_the_spread_is_the_ew_standard_deviation_of_good_durations():
    alpha = 0.5
    assert updated_spread(None, None, 10 * M, alpha) == timedelta(0)  # the first run: no spread yet
    # mean 10m, x 14m: d = 240 s; var' = (1 - .5)(0 + .5 * 240²) = 14400: spread 120 s
    assert updated_spread(10 * M, timedelta(0), 14 * M, alpha) == 120 * S
    # then x = mean (12m): var' = .5 * 120² = 7200
    assert updated_spread(12 * M, 120 * S, 12 * M, alpha).total_seconds() == pytest.approx(math.sqrt(7200))
    # a spread kept before (None: read as 0) and a run shorter than the mean
    assert updated_spread(10 * M, None, 6 * M, alpha) == 120 * S


def test_a_good_run_moves_the_spread_beside_the_average_and_a_failed_one_does_not():
    schedule = periodic()
    first = apply_run_end(schedule, T0, T0 + 10 * M, True, alpha=0.5)
    assert first.average_good_duration == 10 * M and first.duration_spread == timedelta(0)
    second = apply_run_end(first, T0 + H, T0 + H + 14 * M, True, alpha=0.5)
    assert second.average_good_duration == 12 * M and second.duration_spread == 120 * S
    failed = apply_run_end(second, T0 + 2 * H, T0 + 2 * H + 40 * M, False, alpha=0.5)
    assert (failed.average_good_duration, failed.duration_spread) == (12 * M, 120 * S)


# -- the expected duration --------------------------------------------------------------
def test_expected_run_is_the_override_when_set_else_the_average():
    assert expected_run(periodic()) == timedelta(0)
    assert expected_run(periodic(average_good_duration=3 * H)) == 3 * H
    assert expected_run(periodic(average_good_duration=3 * H, expected_duration=20 * M)) == 20 * M


def test_the_override_moves_the_start_times_and_the_condition():
    skewed = periodic(average_good_duration=5 * H, last_good_start_at=T0 - 20 * H, last_good_end_at=T0 - 19 * H)
    assert get_schedule_condition(skewed, T0, ping_timeout=30 * S).reason is Reason.LIKELY_LATE  # T0 + 5h > T0 + 4h
    overridden = replace(skewed, expected_duration=30 * M)
    assert get_schedule_condition(overridden, T0, ping_timeout=30 * S).state is State.OK
    times = get_schedule_start_times(overridden, T0, backoff=BACKOFF)
    assert times is not None and times.should_start_by == T0 + 4 * H - 30 * M


@pytest.mark.parametrize("value", [timedelta(0), -M])
def test_an_expected_duration_of_zero_or_less_is_refused_naming_it(value):
    with pytest.raises(ValidationError) as caught:
        periodic(expected_duration=value)
    assert caught.value.field == "expected_duration"


# -- blackout periods ---------------------------------------------------------------------
NIGHT = (BlackoutPeriod(time(22, 0), time(6, 0)),)  # crosses midnight


def test_a_run_that_would_run_into_a_blackout_period_starts_after_it():
    # can start at 20:00; runs of 1h30 ± 20m likely last 2h10: they would meet 22:00, so 06:00 the next day
    schedule = periodic(blackout_periods=NIGHT, average_good_duration=90 * M, duration_spread=20 * M,
                        last_good_start_at=T0 - 4 * H, last_good_end_at=T0 + 8 * H - 90 * M, cooldown_duration=90 * M)
    times = get_schedule_start_times(schedule, T0, backoff=BACKOFF)
    assert times is not None and times.can_start_by == datetime(2026, 1, 6, 6, 0, tzinfo=UTC)
    # a run of 1h30 with no spread ends at 21:30: it starts at 20:00
    fits = replace(schedule, duration_spread=timedelta(0))
    assert get_schedule_start_times(fits, T0, backoff=BACKOFF).can_start_by == T0 + 8 * H
    # ending exactly as the blackout period starts fits
    assert fit_start(NIGHT, UTC, T0 + 8 * H, 2 * H) == T0 + 8 * H
    assert fit_start(NIGHT, UTC, T0 + 8 * H, 2 * H + S) == datetime(2026, 1, 6, 6, 0, tzinfo=UTC)


def test_the_fit_is_read_in_the_schedules_zone_across_a_daylight_saving_change():
    paris = ZoneInfo("Europe/Paris")
    morning = (BlackoutPeriod(time(9, 0), time(10, 0)),)
    # the night of 28 to 29 March 2026 loses an hour in Paris: from 05:00 local (03:00 UTC) a run of 4h
    # ends at 09:00 local, as the blackout period starts: it fits
    at = datetime(2026, 3, 29, 5, 0, tzinfo=paris)
    assert fit_start(morning, paris, at, 4 * H) == at
    # 4h01 does not: it starts at the end of the blackout period, 10:00 Paris time (08:00 UTC)
    assert fit_start(morning, paris, at, 4 * H + M).astimezone(UTC) == datetime(2026, 3, 29, 8, 0, tzinfo=UTC)


def test_between_several_blackout_periods_the_first_gap_long_enough_is_taken():
    periods = (BlackoutPeriod(time(1, 0), time(2, 0)), BlackoutPeriod(time(4, 0), time(5, 0)),
               BlackoutPeriod(time(12, 0), time(13, 0)))
    start = datetime(2026, 1, 5, 0, 30, tzinfo=UTC)
    assert fit_start(periods, UTC, start, 3 * H) == datetime(2026, 1, 5, 5, 0, tzinfo=UTC)  # 2-4 is too short
    assert fit_start(periods, UTC, start, 12 * H) == datetime(2026, 1, 5, 13, 0, tzinfo=UTC)  # 13-01 next day


def test_runs_longer_than_every_gap_keep_the_old_rule_and_read_cannot_fit():
    # blackout 22:00-06:00 leaves 16h; runs of 15h ± 1h likely last 17h: they cannot fit
    schedule = periodic(blackout_periods=NIGHT, average_good_duration=15 * H, duration_spread=H,
                        scheduling_period=72 * H, last_good_start_at=T0 - H, last_good_end_at=T0 + 10 * H,
                        cooldown_duration=0 * H)
    at = T0 + 11 * H  # 23:00, in the blackout period: out of it only
    assert cannot_fit(schedule, at)
    times = get_schedule_start_times(schedule, at, backoff=BACKOFF)
    assert times is not None and times.can_start_by == datetime(2026, 1, 6, 6, 0, tzinfo=UTC)
    condition = get_schedule_condition(schedule, at, ping_timeout=30 * S)
    assert (condition.state, condition.reason) == (State.WARNING, Reason.CANNOT_FIT)
    # with its expected duration set shorter, it fits again
    assert not cannot_fit(replace(schedule, expected_duration=10 * H), at)
    # without blackout periods, or with nothing known of its length, nothing to fit
    assert not cannot_fit(replace(schedule, blackout_periods=()), at)
    assert not cannot_fit(replace(schedule, average_good_duration=None, duration_spread=None), at)


def test_the_next_start_says_a_fitted_start_is_the_end_of_a_blackout_period():
    schedule = periodic(blackout_periods=NIGHT, average_good_duration=3 * H, last_good_start_at=T0 - 4 * H,
                        last_good_end_at=T0 + 8 * H - 3 * H, cooldown_duration=3 * H)
    start = next_start(schedule, T0, ScheduleTiming())
    assert start is not None and start.at == datetime(2026, 1, 6, 6, 0, tzinfo=UTC)
    assert (start.cause, start.blackout) == ("cooldown", True)


# -- retries by the failed run's length -------------------------------------------------------
@pytest.mark.parametrize("failures, lasted, fixed, wait", [
    (1, 2 * S, 5 * M, 10 * S),           # seconds: the floor
    (1, 3 * M, 5 * M, 3 * M),            # its own length
    (2, 3 * M, H, 6 * M),                # doubled after the second failure
    (3, 3 * M, 4 * H, 12 * M),
    (1, 12 * H, 5 * M, 15 * M),          # hours: at most 3 times the fixed backoff
    (9, 12 * H, 4 * H, 12 * H),
    (1, 2 * S, timedelta(0), timedelta(0)),  # a backoff of 0: the cap wins over the floor
    (10_000, H, 4 * H, 12 * H),          # no overflow however many failures
    (1, -5 * S, 5 * M, 10 * S),          # a clock stepped back: no time
])
def test_the_retry_delay_formula(failures, lasted, fixed, wait):
    assert retry_delay(failures, fixed, lasted) == wait


def test_retries_by_length_only_with_the_setting():
    failed = periodic(failure_count=2, last_start_at=T0 - 3 * M, last_end_at=T0, last_good_start_at=T0 - 5 * H,
                      last_good_end_at=T0 - 4 * H)
    assert retry_at(failed, BACKOFF) == T0 + H  # the fixed backoff of failure 2
    assert retry_at(failed, BACKOFF, by_length=True) == T0 + 6 * M
    by_length = ScheduleTiming(retry_by_length=True)
    assert assess(failed, T0, by_length).start_times.can_start_by == T0 + 6 * M
    assert assess(failed, T0, ScheduleTiming()).start_times.can_start_by == T0 + H  # the setting's 1h
    own = replace(failed, retry_backoff=(M,))  # its own backoff caps it: 3 × 1m
    assert retry_at(own, BACKOFF, by_length=True) == T0 + 3 * M


def test_the_timing_refuses_a_retry_by_length_that_is_not_a_boolean():
    with pytest.raises(ValidationError) as caught:
        ScheduleTiming(retry_by_length="yes").validated()  # type: ignore[arg-type]  # the bad input under test
    assert caught.value.field == "retry_by_length"


def test_declared_schedules_take_the_expected_duration_and_the_threshold():
    jobs = ostinato.Schedules("lengths")
    jobs.periodic("1h", expected_duration="20m", partial_failure_threshold=0.3)(scrape)
    [declared] = jobs.schedules
    assert (declared.expected_duration, declared.partial_failure_threshold) == (20 * M, 0.3)
    for options, field in [({"expected_duration": "0s"}, "expected_duration"),
                           ({"partial_failure_threshold": 1.01}, "partial_failure_threshold")]:
        with pytest.raises(ValidationError) as caught:
            jobs.periodic("1h", name=f"bad-{field}", **options)(scrape)
        assert caught.value.field == field


def scrape() -> None:
    """A declared job (at the top level of a module, as declarations require)."""
