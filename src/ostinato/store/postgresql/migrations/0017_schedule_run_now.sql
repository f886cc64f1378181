-- 0017: a schedule's run asked for now (``ostinato schedule run-now``, the API, the dashboard).
--
-- The request is kept beside the schedule's state: the start times the store keeps (can_start_by,
-- should_start_by) bring it forward until a run starts at or after it (domain/schedules.py).

ALTER TABLE schedule ADD COLUMN run_requested_at timestamptz;
