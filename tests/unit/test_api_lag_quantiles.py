"""Lag quantiles estimated from the stored lag histogram, as Prometheus's histogram_quantile does."""

from __future__ import annotations

import pytest

from ostinato.domain.origin_metrics import LAG_BOUNDS, bucket_label, lag_quantile

HOUR, DAY = 3600.0, 86400.0


def test_empty_histogram_has_no_quantile():
    assert lag_quantile({}, 0.5) is None


def test_interpolates_within_the_bucket():
    # 10 origins under 1h, 10 between 1h and 6h: the median is the top of the first bucket
    histogram = {bucket_label(0): 10, bucket_label(1): 10}
    assert lag_quantile(histogram, 0.5) == pytest.approx(HOUR)
    assert lag_quantile(histogram, 0.25) == pytest.approx(HOUR / 2)
    assert lag_quantile(histogram, 0.75) == pytest.approx(HOUR + 5 * HOUR / 2)


def test_lag_max_caps_the_estimate():
    histogram = {bucket_label(2): 4}  # 6h to 1d
    assert lag_quantile(histogram, 1.0, lag_max=8 * HOUR) == pytest.approx(8 * HOUR)
    assert lag_quantile(histogram, 0.5, lag_max=8 * HOUR) == pytest.approx(7 * HOUR)


def test_the_open_last_bucket_ends_at_lag_max():
    last = len(LAG_BOUNDS)
    histogram = {bucket_label(last): 2}
    assert lag_quantile(histogram, 0.5, lag_max=LAG_BOUNDS[-1] + 100 * DAY) == pytest.approx(LAG_BOUNDS[-1] + 50 * DAY)
    assert lag_quantile(histogram, 0.5) == LAG_BOUNDS[-1]


@pytest.mark.parametrize("q", [0.0, 0.1, 0.5, 0.9, 0.99, 1.0])
def test_quantiles_are_monotonic_and_within_bounds(q):
    histogram = {bucket_label(i): i + 1 for i in range(len(LAG_BOUNDS) + 1)}
    value = lag_quantile(histogram, q, lag_max=1000 * DAY)
    assert 0 <= value <= 1000 * DAY
    assert value <= lag_quantile(histogram, min(1.0, q + 0.05), lag_max=1000 * DAY)
