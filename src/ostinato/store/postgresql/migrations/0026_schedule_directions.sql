-- 0026: how long a schedule's runs last, and how many of their items failed (docs/reference/schedules.md).
--
-- Definition: expected_duration, how long a run is expected to last in place of the moving average
-- (NULL: the average); partial_failure_threshold, the failed share of a good run's items above which
-- the schedule reads partial_failure (NULL: the setting schedule_partial_failure_threshold).
-- State: duration_spread, the exponentially weighted standard deviation of good durations beside
-- average_good_duration (NULL until the next good run: read as 0); last_items_done and
-- last_items_failed, the items its last good run reported (NULL: none reported).
-- Nullable columns without a default: adding them rewrites nothing.

ALTER TABLE schedule
    ADD COLUMN expected_duration interval,
    ADD COLUMN partial_failure_threshold double precision,
    ADD COLUMN duration_spread interval,
    ADD COLUMN last_items_done bigint,
    ADD COLUMN last_items_failed bigint;
