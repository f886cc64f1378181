"""The console's history rules: intervals, rollups by figure, a visit type's gauges from its listers'
metrics, run counts per interval, the views' windows and the bound on rows per series."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ostinato.domain.errors import ValidationError
from ostinato.domain.history import (
    ROWS_PER_SERIES,
    WINDOWS,
    EndedRun,
    interval_start,
    lateness,
    mean_duration,
    rollup,
    run_counts,
    visit_type_figures,
    window,
)
from ostinato.domain.origin_metrics import OriginMetrics

T = datetime(2026, 3, 1, 10, 7, 30, tzinfo=UTC)
M = timedelta(minutes=1)


def test_intervals_are_counted_from_1970_in_utc():
    assert interval_start(T, 5 * M) == T.replace(minute=5, second=0)
    assert interval_start(T, timedelta(hours=6)) == T.replace(hour=6, minute=0, second=0)


def test_a_rollup_averages_gauges_sums_counts_and_keeps_maxima():
    merged = rollup([{"fresh": 0.5, "late": 10, "runs": 2, "failures": 1, "duration_sum": 30, "duration_max": 20},
                     {"fresh": 1.0, "late": 40, "runs": 1, "failures": 0, "duration_sum": 5, "duration_max": 5},
                     {"in_flight": 3}])
    assert merged == {"fresh": 0.75, "late": 40, "runs": 3, "failures": 1, "duration_sum": 35, "duration_max": 20,
                      "in_flight": 3}
    assert mean_duration(merged) == pytest.approx(35 / 3) and mean_duration({"runs": 0}) is None


def test_a_visit_types_gauges_sum_its_listers():
    at = T
    metrics = [OriginMetrics(1, "git", at, 10, 10, 0, 4, {"<1h": 2, "<6h": 2}, None, visits_in_flight=3,
                             visits_last_hour=6, eventful_visits_last_hour=1, uneventful_visits_last_hour=3),
               OriginMetrics(2, "git", at, 10, 10, 0, 0, {}, None, visits_in_flight=1, visits_last_hour=2,
                             eventful_visits_last_hour=1, uneventful_visits_last_hour=0),
               OriginMetrics(3, "hg", at, 0, 0, 0, 0)]
    figures = visit_type_figures(metrics)
    assert figures["visit_type:git"] == {"fresh": 0.8, "lag_p50": 3600.0, "lag_p90": pytest.approx(3600 + 0.8 * 5 * 3600),
                                         "in_flight": 4.0, "visits_per_hour": 8.0, "eventful_share": 0.4}
    assert figures["visit_type:hg"] == {"in_flight": 0.0, "visits_per_hour": 0.0}  # nothing enabled: no share


def test_runs_count_in_the_interval_they_ended_in():
    runs = [EndedRun("schedule:a", False, T - 3 * M, T), EndedRun("schedule:a", True, None, T + M),
            EndedRun("schedule:a", False, T, T + 5 * M)]
    assert run_counts(runs, T, T + 5 * M) == {"schedule:a": {"runs": 2, "failures": 1, "duration_sum": 180.0,
                                                             "duration_max": 180.0}}


def test_views_lateness_and_the_bound():
    assert window("7d").step == timedelta(hours=1)
    with pytest.raises(ValidationError, match="window: expected one of 1h, 6h, 24h, 7d, 30d"):
        window("1y")
    assert lateness(T - M, T) == 60 and lateness(T + M, T) == 0 and lateness(None, T) == 0
    assert ROWS_PER_SERIES == 60 + 288 + 168 + 120


def test_the_short_windows_read_samples_fine_enough_for_dozens_of_points():
    """The first hours of a history are readable: the last hour by the minute, six hours by five minutes."""
    assert (window("1h").step, window("1h").points) == (M, 60)
    assert (window("6h").step, window("6h").points) == (5 * M, 72)
    for name in WINDOWS:
        assert 50 <= window(name).points <= 300, name
        assert window(name).span <= window(name).resolution.span, name  # its samples are kept that long
