-- The origins role's named queries for PostgreSQL on scheduling: the scheduling policies' picks and the
-- grab, change_rate_optimal's threshold and rate samples, and politeness per host (the polite grab).
-- See store/origins/flow.py and docs/design/origins.md; the role's other queries are in
-- postgresql_listings.sql and postgresql_metrics.sql, the same names as sqlite_scheduling.sql.
-- %(named)s parameters; a batch of keys as one array per column (%(named)b, binary), a batch of records
-- as one JSON array of objects read with json_to_recordset; `now` always from the caller.

-- Scheduling policies. Each pick walks one partial index in its order and
-- locks what it takes (SKIP LOCKED: two orchestrators never take the same
-- origin); the grab then marks them scheduled, which gives them a cooldown and
-- takes them out of every policy index. The lister filter is a probe of
-- listed_origin's primary key per candidate.

-- name: index_ordered_picks
-- set at the start of a grab: a policy is a walk of its index in order, stopped
-- at the batch; a bitmap scan plus sort would read every candidate first, and a
-- sequential scan every row, which the planner may prefer on a small table, on a
-- fresh one it has no statistics of, or when a lister filter fools its
-- estimates, and which grows with the table
SET LOCAL enable_sort = off;
SET LOCAL enable_bitmapscan = off;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_hashjoin = off;
SET LOCAL enable_mergejoin = off;
-- the grab counts what it puts in flight itself (grab_picked); freeing cooldowns that are over changes no
-- count a later pass reads: the metric triggers leave this transaction alone
SET LOCAL ostinato.metrics_by_statement = on;

-- name: release_cooldowns
-- cooldowns that are over: back into the policy indexes
UPDATE origin_visit_stats AS s SET cooldown_until = NULL
FROM (SELECT url FROM origin_visit_stats
      WHERE visit_type = %(visit_type)s AND cooldown_until IS NOT NULL AND cooldown_until <= %(now)s
      ORDER BY visit_type, cooldown_until
      FOR UPDATE SKIP LOCKED) AS r
WHERE s.visit_type = %(visit_type)s AND s.url = r.url;

-- name: pick
-- a policy's index walk: the template of every pick (domain.policy_picks declares each, store/origins/picks.py
-- writes its conditions and its order in place of the braced words); the order after the visit type is the
-- columns of the pick's partial index, which the walk follows
SELECT s.ctid AS tid, s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.listing_count, s.last_status_date,
       s.host
FROM origin_visit_stats AS s
WHERE s.visit_type = %(visit_type)s AND s.enabled AND s.cooldown_until IS NULL{conditions}
  AND (%(lister_id)s::bigint IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = %(lister_id)s::bigint AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, {order}
LIMIT %(limit)s FOR UPDATE OF s SKIP LOCKED;

-- name: grab_picked
-- one pick as store/origins/picks.py renders it (in place of the braced word pick, without its
-- semicolon) and the marking of what it locked, in one statement: the update finds each row by its
-- tuple id, which the lock keeps valid; rows come back in the pick's order
WITH picked AS MATERIALIZED ({pick}),
marked AS (
    UPDATE origin_visit_stats AS u SET last_scheduled = %(now)s, cooldown_until = %(cooldown_until)s
    FROM picked WHERE u.ctid = picked.tid
),
-- what the marking adds to the metric cells (see migrations/0012 and 0013): in flight until the new cooldown, for
-- the origins one lister lists whose last status is older than now; it changes no other cell
counted AS (
    INSERT INTO origin_metric_delta AS d (xid, lister_ids, visit_types, kinds, cells, origins)
    SELECT pg_current_xact_id(), array_agg(lister_id), array_agg(%(visit_type)s::text), array_agg(6::smallint),
           array_agg(round(date_part('epoch', %(cooldown_until)s::timestamptz) * 1000000)::bigint), array_agg(n)
    FROM (SELECT lister_id, count(*)::integer AS n FROM picked
          WHERE listing_count = 1 AND (last_status_date IS NULL OR last_status_date < %(now)s)
          GROUP BY lister_id) AS t
    HAVING count(*) > 0
    ON CONFLICT (xid) DO UPDATE SET lister_ids = d.lister_ids || excluded.lister_ids,
        visit_types = d.visit_types || excluded.visit_types, kinds = d.kinds || excluded.kinds,
        cells = d.cells || excluded.cells, origins = d.origins || excluded.origins
)
SELECT url, lister_id, extra_loader_arguments, last_update FROM picked;

-- name: dry_picked
-- a dry run's one pick (in place of the braced word pick): the rows it locks, as grab_picked returns them,
-- unmarked (the transaction is rolled back: marking would only leave dead row versions behind)
WITH picked AS MATERIALIZED ({pick})
SELECT url, lister_id, extra_loader_arguments, last_update FROM picked;

-- name: listers_named
SELECT id, name, instance_name FROM lister WHERE id = ANY(%(ids)s::bigint[]);

-- name: release_grabbed
-- visits handed back unstarted (an executor stopping): free again at once
UPDATE origin_visit_stats AS s SET cooldown_until = NULL
FROM unnest(%(urls)b::text[], %(visit_types)b::text[]) AS k(url, visit_type)
WHERE s.url = k.url AND s.visit_type = k.visit_type AND s.cooldown_until IS NOT NULL
  AND s.last_scheduled IS NOT NULL AND (s.last_status_date IS NULL OR s.last_scheduled > s.last_status_date);

-- name: revisit_thresholds
SELECT visit_type, threshold, visits_per_day, origins, computed_at FROM revisit_threshold;

-- name: upsert_revisit_threshold
INSERT INTO revisit_threshold (visit_type, threshold, visits_per_day, origins, computed_at)
VALUES (%(visit_type)s, %(threshold)s, %(visits_per_day)s, %(origins)s, %(computed_at)s)
ON CONFLICT (visit_type) DO UPDATE SET threshold = excluded.threshold, visits_per_day = excluded.visits_per_day,
    origins = excluded.origins, computed_at = excluded.computed_at;

-- name: table_size_estimate
-- the planner's estimate of the row count (none before the table's first analyze)
SELECT CASE WHEN relpages > 0 THEN greatest(reltuples, 0)::bigint ELSE 0 END AS rows
FROM pg_class WHERE oid = 'origin_visit_stats'::regclass;

-- name: sample_change_rates
-- a share of the table's pages (SYSTEM): reads about that share, never the whole table
SELECT rate_changes, rate_days, rate_evidence FROM origin_visit_stats TABLESAMPLE SYSTEM (%(percent)s) REPEATABLE (%(seed)s)
WHERE visit_type = %(visit_type)s AND enabled;

-- Politeness per host (see docs/reference/origins.md, "Politeness per host", and store/origins/polite_grab.py).
-- A polite grab runs each pick with host_filter before its ORDER BY (hosts without room left out, as
-- the walk goes), through polite_pick; it locks the hosts of what it found (lock_hosts: an advisory lock
-- per (visit type, host), tried, never waited for: a host another grab holds is left for the next pass),
-- counts their visits in flight again (read after the lock: what another grab committed is seen), keeps
-- what their room allows, marks it (mark_grabbed) and records the hosts' starts (record_starts).

-- name: politeness
-- the visit type's limits (host NULL), then the hosts that override them
SELECT NULL::text AS host, max_concurrent_per_host AS max_concurrent, min_spacing_per_host AS min_spacing
FROM visit_type_politeness WHERE visit_type = %(visit_type)s
UNION ALL
SELECT host, max_concurrent, min_spacing FROM host_politeness
WHERE visit_type = %(visit_type)s AND (max_concurrent IS NOT NULL OR min_spacing IS NOT NULL);

-- name: loader_type_exists
SELECT 1 FROM task_type WHERE type = 'load-' || %(visit_type)s;

-- name: upsert_visit_type_politeness
INSERT INTO visit_type_politeness (visit_type, max_concurrent_per_host, min_spacing_per_host)
VALUES (%(visit_type)s, %(max_concurrent)s, %(min_spacing)s)
ON CONFLICT (visit_type) DO UPDATE SET max_concurrent_per_host = excluded.max_concurrent_per_host,
    min_spacing_per_host = excluded.min_spacing_per_host;

-- name: upsert_host_politeness
INSERT INTO host_politeness (visit_type, host, max_concurrent, min_spacing)
VALUES (%(visit_type)s, %(host)s, %(max_concurrent)s, %(min_spacing)s)
ON CONFLICT (visit_type, host) DO UPDATE SET max_concurrent = excluded.max_concurrent,
    min_spacing = excluded.min_spacing;

-- name: host_filter
AND (s.host IS NULL OR s.host <> ALL(%(closed_hosts)s::text[]))

-- name: polite_pick
-- one rendered pick with host_filter (in place of the braced word pick, without its semicolon): what it
-- locked, in its order, with each origin's host
WITH picked AS MATERIALIZED ({pick})
SELECT url, lister_id, extra_loader_arguments, last_update, host FROM picked;

-- name: in_flight_by_host
-- the visits in flight now, by host (the in-flight index: only those rows)
SELECT host, count(*) FROM origin_visit_stats
WHERE visit_type = %(visit_type)s AND host IS NOT NULL AND cooldown_until IS NOT NULL AND last_scheduled IS NOT NULL
  AND (last_status_date IS NULL OR last_scheduled > last_status_date) AND cooldown_until > %(now)s
GROUP BY host;

-- name: in_flight_of_hosts
SELECT host, count(*) FROM origin_visit_stats
WHERE visit_type = %(visit_type)s AND host = ANY(%(hosts)s::text[]) AND cooldown_until IS NOT NULL
  AND last_scheduled IS NOT NULL AND (last_status_date IS NULL OR last_scheduled > last_status_date)
  AND cooldown_until > %(now)s
GROUP BY host;

-- name: recent_starts
SELECT host, last_start FROM host_politeness
WHERE visit_type = %(visit_type)s AND last_start IS NOT NULL AND last_start > %(since)s;

-- name: starts_of_hosts
SELECT host, last_start FROM host_politeness WHERE visit_type = %(visit_type)s AND host = ANY(%(hosts)s::text[]);

-- name: lock_hosts
-- the hosts whose lock this transaction got (held to its end)
SELECT h FROM unnest(%(hosts)s::text[]) AS h
WHERE pg_try_advisory_xact_lock(hashtext('politeness:' || %(visit_type)s), hashtext(h));

-- name: mark_grabbed
-- the marking of grab_picked, given the urls, and what it adds to the metric cells
WITH marked AS (
    UPDATE origin_visit_stats AS u SET last_scheduled = %(now)s, cooldown_until = %(cooldown_until)s
    WHERE u.visit_type = %(visit_type)s AND u.url = ANY(%(urls)s::text[])
    RETURNING u.lister_id, u.listing_count, u.last_status_date
)
INSERT INTO origin_metric_delta AS d (xid, lister_ids, visit_types, kinds, cells, origins)
SELECT pg_current_xact_id(), array_agg(lister_id), array_agg(%(visit_type)s::text), array_agg(6::smallint),
       array_agg(round(date_part('epoch', %(cooldown_until)s::timestamptz) * 1000000)::bigint), array_agg(n)
FROM (SELECT lister_id, count(*)::integer AS n FROM marked
      WHERE listing_count = 1 AND (last_status_date IS NULL OR last_status_date < %(now)s)
      GROUP BY lister_id) AS t
HAVING count(*) > 0
ON CONFLICT (xid) DO UPDATE SET lister_ids = d.lister_ids || excluded.lister_ids,
    visit_types = d.visit_types || excluded.visit_types, kinds = d.kinds || excluded.kinds,
    cells = d.cells || excluded.cells, origins = d.origins || excluded.origins;

-- name: record_starts
INSERT INTO host_politeness AS h (visit_type, host, last_start)
SELECT %(visit_type)s, x, %(now)s FROM unnest(%(hosts)s::text[]) AS x
ON CONFLICT (visit_type, host) DO UPDATE SET last_start = excluded.last_start;
