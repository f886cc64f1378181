-- 0026: how long a schedule's runs last, and how many of their items failed (docs/reference/schedules.md).
--
-- Definition: expected_duration, seconds a run is expected to last in place of the moving average
-- (NULL: the average); partial_failure_threshold, the failed share of a good run's items above which
-- the schedule reads partial_failure (NULL: the setting schedule_partial_failure_threshold).
-- State: duration_spread, seconds, the exponentially weighted standard deviation of good durations
-- beside average_good_duration (NULL until the next good run: read as 0); last_items_done and
-- last_items_failed, the items its last good run reported (NULL: none reported).

ALTER TABLE schedule ADD COLUMN expected_duration REAL;
ALTER TABLE schedule ADD COLUMN partial_failure_threshold REAL;
ALTER TABLE schedule ADD COLUMN duration_spread REAL;
ALTER TABLE schedule ADD COLUMN last_items_done INTEGER;
ALTER TABLE schedule ADD COLUMN last_items_failed INTEGER;
