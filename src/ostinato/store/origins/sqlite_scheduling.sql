-- The origins role's named queries for SQLite on scheduling: the scheduling policies' picks and the
-- grab, change_rate_optimal's threshold and rate samples, and politeness per host (the polite grab).
-- See store/origins/flow.py and docs/design/origins.md; the role's other queries are in
-- sqlite_listings.sql and sqlite_metrics.sql, the same names as postgresql_scheduling.sql.
-- :named parameters; lists as JSON text read with json_each, a batch of keys or records as rows by
-- position (value ->> 0), or a statement run once per record of a batch (executemany), its fields as
-- :named parameters; times as ISO 8601 text in UTC, `now` always from the caller.

-- Scheduling policies. Each pick walks one partial index in its order (the
-- write transaction holds SQLite's single writer lock, so nobody else grabs
-- meanwhile); the grab then marks them scheduled, which gives them a cooldown
-- and takes them out of every policy index.

-- name: index_ordered_picks
-- nothing to set: SQLite's planner walks each pick's partial index in its order

-- name: release_cooldowns
-- cooldowns that are over: back into the policy indexes
UPDATE origin_visit_stats SET cooldown_until = NULL
WHERE visit_type = :visit_type AND cooldown_until IS NOT NULL AND cooldown_until <= :now;

-- name: pick
-- a policy's index walk: the template of every pick (domain.policy_picks declares each, store/origins/picks.py
-- writes its conditions and its order in place of the braced words); the order after the visit type is the
-- columns of the pick's partial index, which the walk follows
SELECT s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.host FROM origin_visit_stats AS s
WHERE s.visit_type = :visit_type AND s.enabled AND s.cooldown_until IS NULL{conditions}
  AND (:lister_id IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = :lister_id AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, {order}
LIMIT :limit;

-- name: grab_picked
-- one pick as store/origins/picks.py renders it (in place of the braced word pick, without its
-- semicolon), then the marking of what it returned (SQLite cannot update in a WITH), the urls it
-- returned as a JSON array
{pick};
UPDATE origin_visit_stats SET last_scheduled = :now, cooldown_until = :cooldown_until
WHERE visit_type = :visit_type AND url IN (SELECT value FROM json_each(:urls));

-- name: dry_picked
-- a dry run's one pick (in place of the braced word pick, without its semicolon), unmarked
{pick};

-- name: listers_named
SELECT id, name, instance_name FROM lister WHERE id IN (SELECT value FROM json_each(:ids));

-- name: release_grabbed
-- visits handed back unstarted (an executor stopping): free again at once
UPDATE origin_visit_stats SET cooldown_until = NULL
WHERE cooldown_until IS NOT NULL AND last_scheduled IS NOT NULL
  AND (last_status_date IS NULL OR last_scheduled > last_status_date)
  AND (url, visit_type) IN (SELECT value ->> 0, value ->> 1 FROM json_each(:rows));

-- name: revisit_thresholds
SELECT visit_type, threshold, visits_per_day, origins, computed_at FROM revisit_threshold;

-- name: upsert_revisit_threshold
INSERT INTO revisit_threshold (visit_type, threshold, visits_per_day, origins, computed_at)
VALUES (:visit_type, :threshold, :visits_per_day, :origins, :computed_at)
ON CONFLICT (visit_type) DO UPDATE SET threshold = excluded.threshold, visits_per_day = excluded.visits_per_day,
    origins = excluded.origins, computed_at = excluded.computed_at;

-- name: table_size_estimate
-- the largest rowid: about the row count of a table whose rows are never deleted
SELECT coalesce(max(rowid), 0) AS rows FROM origin_visit_stats;

-- name: sample_change_rates
-- about `percent` of the table's rows: rowids spread over 1..rows by a prime stride from a start the
-- seed sets, distinct while rows is below the stride; a probe of the table's b-tree each, never a scan
WITH RECURSIVE probe(k) AS (
    SELECT 0 WHERE :rows > 0
    UNION ALL
    SELECT k + 1 FROM probe WHERE k + 1 < round(:rows * :percent / 100.0))
SELECT rate_changes, rate_days, rate_evidence FROM origin_visit_stats
WHERE rowid IN (SELECT (abs(:seed) + k * 2654435761) % :rows + 1 FROM probe) AND visit_type = :visit_type AND enabled;

-- Politeness per host (see docs/reference/origins.md, "Politeness per host", and store/origins/polite_grab.py):
-- the same steps as on PostgreSQL; the write transaction is the only writer, so every host is its own.

-- name: politeness
SELECT NULL AS host, max_concurrent_per_host AS max_concurrent, min_spacing_per_host AS min_spacing
FROM visit_type_politeness WHERE visit_type = :visit_type
UNION ALL
SELECT host, max_concurrent, min_spacing FROM host_politeness
WHERE visit_type = :visit_type AND (max_concurrent IS NOT NULL OR min_spacing IS NOT NULL);

-- name: loader_type_exists
SELECT 1 FROM task_type WHERE type = 'load-' || :visit_type;

-- name: upsert_visit_type_politeness
INSERT INTO visit_type_politeness (visit_type, max_concurrent_per_host, min_spacing_per_host)
VALUES (:visit_type, :max_concurrent, :min_spacing)
ON CONFLICT (visit_type) DO UPDATE SET max_concurrent_per_host = excluded.max_concurrent_per_host,
    min_spacing_per_host = excluded.min_spacing_per_host;

-- name: upsert_host_politeness
INSERT INTO host_politeness (visit_type, host, max_concurrent, min_spacing)
VALUES (:visit_type, :host, :max_concurrent, :min_spacing)
ON CONFLICT (visit_type, host) DO UPDATE SET max_concurrent = excluded.max_concurrent,
    min_spacing = excluded.min_spacing;

-- name: host_filter
AND (s.host IS NULL OR s.host NOT IN (SELECT value FROM json_each(:closed_hosts)))

-- name: polite_pick
{pick};

-- name: in_flight_by_host
SELECT host, count(*) FROM origin_visit_stats
WHERE visit_type = :visit_type AND host IS NOT NULL AND cooldown_until IS NOT NULL AND last_scheduled IS NOT NULL
  AND (last_status_date IS NULL OR last_scheduled > last_status_date) AND cooldown_until > :now
GROUP BY host;

-- name: in_flight_of_hosts
SELECT host, count(*) FROM origin_visit_stats
WHERE visit_type = :visit_type AND host IN (SELECT value FROM json_each(:hosts)) AND cooldown_until IS NOT NULL
  AND last_scheduled IS NOT NULL AND (last_status_date IS NULL OR last_scheduled > last_status_date)
  AND cooldown_until > :now
GROUP BY host;

-- name: recent_starts
SELECT host, last_start FROM host_politeness
WHERE visit_type = :visit_type AND last_start IS NOT NULL AND last_start > :since;

-- name: starts_of_hosts
SELECT host, last_start FROM host_politeness
WHERE visit_type = :visit_type AND host IN (SELECT value FROM json_each(:hosts));

-- name: lock_hosts
-- nothing to take: the write transaction is the only writer
SELECT value FROM json_each(:hosts);

-- name: mark_grabbed
UPDATE origin_visit_stats SET last_scheduled = :now, cooldown_until = :cooldown_until
WHERE visit_type = :visit_type AND url IN (SELECT value FROM json_each(:urls));

-- name: record_starts
INSERT INTO host_politeness (visit_type, host, last_start)
SELECT :visit_type, value, :now FROM json_each(:hosts) WHERE true
ON CONFLICT (visit_type, host) DO UPDATE SET last_start = excluded.last_start;
