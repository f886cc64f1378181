-- The origins role's named queries for PostgreSQL on metrics: the metrics per (lister, visit type), their
-- cells, their counts and their search. See store/origins/flow.py and docs/design/origins.md; the
-- role's other queries are in postgresql_listings.sql and postgresql_scheduling.sql, the same names as
-- sqlite_metrics.sql.
-- %(named)s parameters; a batch of keys as one array per column (%(named)b, binary), a batch of records
-- as one JSON array of objects read with json_to_recordset; `now` always from the caller.

-- Metrics per (lister, visit type), at the times of domain/origin_metrics.py (MetricClock, lag_of): lags
-- in whole hours below a week (to lag_hour, the hour at or after `now`, in hours since 1970), in whole days
-- beyond (to lag_day); activity to the minute (visits in (since, until], `now`'s minute less the window and
-- `now`'s minute); in flight at `now` itself. Activity (in flight; visits of any outcome (last_status_date),
-- eventful and uneventful) counts an origin once, for the listing its loader gets (s.lister_id), so that it
-- adds up over listers. Origins one lister lists are counted from the cells their writes keep up to date
-- (origin_metric_cell, see migrations/0012, 0013 and 0029); recounted in full only on demand (single_listed_metrics, which
-- also rebuilds the cells). Rows are one per (lister, visit type, lag bucket), the bucket NULL for origins
-- with nothing pending, as fold_metrics takes them.

-- name: lock_metric_cells
-- a rebuild holds writers back at their commit (their changes then apply to the rebuilt cells)
LOCK TABLE origin_metric_cell IN EXCLUSIVE MODE;

-- name: prune_metric_cells
-- cells that count nothing any more: empty, in flight until before now, visits before the window
-- (rows a writer is applying are left for the next pass)
DELETE FROM origin_metric_cell AS c
USING (SELECT lister_id, visit_type, kind, cell FROM origin_metric_cell
       WHERE origins = 0 OR (kind = 6 AND cell <= %(now_us)s) OR (kind IN (7, 8, 9) AND cell <= %(since_minute)s)
       FOR UPDATE SKIP LOCKED) AS d
WHERE (c.lister_id, c.visit_type, c.kind, c.cell) = (d.lister_id, d.visit_type, d.kind, d.cell);

-- name: metrics_from_cells
-- an hour cell a week old counts with its day cell (where a later write may have taken the origin away)
SELECT lister_id, visit_type, NULL::integer AS bucket,
       coalesce(sum(origins) FILTER (WHERE kind = 1), 0) - coalesce(sum(origins) FILTER (WHERE kind IN (5, 10)), 0)
           AS origins,
       coalesce(sum(origins) FILTER (WHERE kind = 2), 0) AS enabled,
       coalesce(sum(origins) FILTER (WHERE kind = 3), 0) AS never_visited,
       coalesce(sum(origins) FILTER (WHERE kind = 4), 0) AS never_successful,
       NULL::float8 AS lag_max,
       coalesce(sum(origins) FILTER (WHERE kind = 6 AND cell > %(now_us)s), 0) AS in_flight,
       coalesce(sum(origins) FILTER (WHERE kind = 7 AND cell > %(since_minute)s AND cell <= %(until_minute)s), 0) AS visits,
       coalesce(sum(origins) FILTER (WHERE kind = 8 AND cell > %(since_minute)s AND cell <= %(until_minute)s), 0) AS eventful,
       coalesce(sum(origins) FILTER (WHERE kind = 9 AND cell > %(since_minute)s AND cell <= %(until_minute)s), 0) AS uneventful
FROM origin_metric_cell
GROUP BY lister_id, visit_type
HAVING coalesce(sum(origins) FILTER (WHERE kind = 1), 0) <> 0
UNION ALL
SELECT lister_id, visit_type, CASE WHEN o.old THEN cardinality(%(hour_bounds)s::float8[]) + width_bucket(o.lag_d * 86400.0, %(day_bounds)s::float8[])
                  ELSE width_bucket(o.lag_h * 3600.0, %(hour_bounds)s::float8[]) END,
       sum(origins), 0, 0, 0, max(CASE WHEN o.old THEN o.lag_d * 86400.0 ELSE o.lag_h * 3600.0 END), 0, 0, 0, 0
FROM (SELECT lister_id, visit_type, old, at, sum(origins) AS origins
      FROM (SELECT lister_id, visit_type, origins, old, CASE WHEN old THEN day_cell ELSE cell END AS at
            FROM (SELECT lister_id, visit_type, origins, kind, cell, day_cell,
                         kind = 10 OR %(lag_day)s - day_cell >= %(day_lags_from)s AS old
                  FROM (SELECT *, CASE WHEN kind = 10 THEN cell ELSE ceil(cell / 24.0)::bigint END AS day_cell
                        FROM origin_metric_cell WHERE kind IN (5, 10) AND origins <> 0) AS c) AS c) AS c
      GROUP BY 1, 2, 3, 4 HAVING sum(origins) <> 0) AS e
CROSS JOIN LATERAL (SELECT e.old, %(lag_day)s - e.at AS lag_d, %(lag_hour)s - e.at AS lag_h) AS o
GROUP BY 1, 2, 3;

-- name: rebuild_metric_cells
-- every cell counted again from the scheduling rows (with single_listed_metrics: the full recount), by the
-- rule the writes count by (migrations/0029)
DELETE FROM origin_metric_cell;
SELECT origin_metric_cells_recount(%(horizon)s);

-- name: single_listed_metrics
-- the full recount of the origins one lister lists: their scheduling row says it all (one scan, no join)
SELECT lister_id, visit_type, bucket, count(*) AS origins, count(*) FILTER (WHERE enabled) AS enabled,
       count(*) FILTER (WHERE enabled AND last_successful IS NULL AND last_status_date IS NULL) AS never_visited,
       count(*) FILTER (WHERE enabled AND last_successful IS NULL AND last_status_date IS NOT NULL) AS never_successful,
       max(lag) AS lag_max,
       count(*) FILTER (WHERE in_flight) AS in_flight, count(*) FILTER (WHERE visited) AS visits,
       count(*) FILTER (WHERE eventful) AS eventful, count(*) FILTER (WHERE uneventful) AS uneventful
FROM (SELECT s.lister_id AS lister_id, s.visit_type, s.enabled AS enabled, s.last_successful, s.last_status_date,
             CASE WHEN p.pending THEN CASE WHEN old THEN cardinality(%(hour_bounds)s::float8[]) + width_bucket(lag_d * 86400.0, %(day_bounds)s::float8[])
                                       ELSE width_bucket(lag_h * 3600.0, %(hour_bounds)s::float8[]) END END AS bucket,
             CASE WHEN p.pending THEN CASE WHEN old THEN lag_d * 86400.0 ELSE lag_h * 3600.0 END END AS lag,
             s.cooldown_until > %(now)s AND s.last_scheduled IS NOT NULL
                 AND (s.last_status_date IS NULL OR s.last_scheduled > s.last_status_date) AS in_flight,
             s.last_status_date > %(since)s AND s.last_status_date <= %(until)s AS visited,
             s.last_eventful > %(since)s AND s.last_eventful <= %(until)s AS eventful,
             s.last_uneventful > %(since)s AND s.last_uneventful <= %(until)s AS uneventful
      FROM origin_visit_stats AS s
      CROSS JOIN LATERAL (SELECT s.enabled AND s.last_update IS NOT NULL
                                 AND (s.last_successful IS NULL OR s.last_update > s.last_successful) AS pending) AS p
      CROSS JOIN LATERAL (SELECT lag_d >= %(day_lags_from)s AS old, lag_d, lag_h
                   FROM (SELECT %(lag_day)s - ceil(extract(epoch FROM s.last_update) / 86400) AS lag_d,
                                %(lag_hour)s - ceil(extract(epoch FROM s.last_update) / 3600) AS lag_h) AS l) AS l
      WHERE s.listing_count = 1) AS x
GROUP BY lister_id, visit_type, bucket;

-- name: multi_listed_metrics
-- origins several listers list (few: walked by their partial index): each listing counts for its lister
SELECT lister_id, visit_type, bucket, count(*) AS origins, count(*) FILTER (WHERE enabled) AS enabled,
       count(*) FILTER (WHERE enabled AND last_successful IS NULL AND last_status_date IS NULL) AS never_visited,
       count(*) FILTER (WHERE enabled AND last_successful IS NULL AND last_status_date IS NOT NULL) AS never_successful,
       max(lag) AS lag_max,
       count(*) FILTER (WHERE in_flight) AS in_flight, count(*) FILTER (WHERE visited) AS visits,
       count(*) FILTER (WHERE eventful) AS eventful, count(*) FILTER (WHERE uneventful) AS uneventful
FROM (SELECT o.lister_id AS lister_id, s.visit_type, o.enabled AS enabled, s.last_successful, s.last_status_date,
             CASE WHEN p.pending THEN CASE WHEN old THEN cardinality(%(hour_bounds)s::float8[]) + width_bucket(lag_d * 86400.0, %(day_bounds)s::float8[])
                                       ELSE width_bucket(lag_h * 3600.0, %(hour_bounds)s::float8[]) END END AS bucket,
             CASE WHEN p.pending THEN CASE WHEN old THEN lag_d * 86400.0 ELSE lag_h * 3600.0 END END AS lag,
             o.lister_id = s.lister_id AND s.cooldown_until > %(now)s AND s.last_scheduled IS NOT NULL
                 AND (s.last_status_date IS NULL OR s.last_scheduled > s.last_status_date) AS in_flight,
             o.lister_id = s.lister_id AND s.last_status_date > %(since)s AND s.last_status_date <= %(until)s AS visited,
             o.lister_id = s.lister_id AND s.last_eventful > %(since)s AND s.last_eventful <= %(until)s AS eventful,
             o.lister_id = s.lister_id AND s.last_uneventful > %(since)s AND s.last_uneventful <= %(until)s AS uneventful
      FROM origin_visit_stats AS s
      JOIN listed_origin AS o ON o.url = s.url AND o.visit_type = s.visit_type
      CROSS JOIN LATERAL (SELECT o.enabled AND o.last_update IS NOT NULL
                                 AND (s.last_successful IS NULL OR o.last_update > s.last_successful) AS pending) AS p
      CROSS JOIN LATERAL (SELECT lag_d >= %(day_lags_from)s AS old, lag_d, lag_h
                   FROM (SELECT %(lag_day)s - ceil(extract(epoch FROM o.last_update) / 86400) AS lag_d,
                                %(lag_hour)s - ceil(extract(epoch FROM o.last_update) / 3600) AS lag_h) AS l) AS l
      WHERE s.listing_count > 1) AS x
GROUP BY lister_id, visit_type, bucket;

-- name: upsert_origin_metrics
-- a count per (lister, visit type), its row replaced unless it holds the same count already (an
-- import of the same metrics changes nothing: its row count says what changed)
INSERT INTO origin_metrics AS m (lister_id, visit_type, computed_at, origins_known, origins_enabled,
                                 origins_never_visited, origins_with_pending_changes, lag_histogram, lag_max,
                                 visits_in_flight, visits_last_hour, eventful_visits_last_hour,
                                 uneventful_visits_last_hour, origins_never_successful)
VALUES (%(lister_id)s, %(visit_type)s, %(computed_at)s, %(origins_known)s, %(origins_enabled)s,
        %(origins_never_visited)s, %(origins_with_pending_changes)s, %(lag_histogram)s::jsonb, %(lag_max)s,
        %(visits_in_flight)s, %(visits_last_hour)s, %(eventful_visits_last_hour)s, %(uneventful_visits_last_hour)s,
        %(origins_never_successful)s)
ON CONFLICT (lister_id, visit_type) DO UPDATE SET
    computed_at = excluded.computed_at, origins_known = excluded.origins_known,
    origins_enabled = excluded.origins_enabled, origins_never_visited = excluded.origins_never_visited,
    origins_with_pending_changes = excluded.origins_with_pending_changes, lag_histogram = excluded.lag_histogram,
    lag_max = excluded.lag_max, visits_in_flight = excluded.visits_in_flight,
    visits_last_hour = excluded.visits_last_hour, eventful_visits_last_hour = excluded.eventful_visits_last_hour,
    uneventful_visits_last_hour = excluded.uneventful_visits_last_hour,
    origins_never_successful = excluded.origins_never_successful
WHERE (m.computed_at, m.origins_known, m.origins_enabled, m.origins_never_visited, m.origins_with_pending_changes,
       m.lag_histogram, m.lag_max, m.visits_in_flight, m.visits_last_hour, m.eventful_visits_last_hour,
       m.uneventful_visits_last_hour, m.origins_never_successful)
      IS DISTINCT FROM (excluded.computed_at, excluded.origins_known, excluded.origins_enabled,
                        excluded.origins_never_visited, excluded.origins_with_pending_changes, excluded.lag_histogram,
                        excluded.lag_max, excluded.visits_in_flight, excluded.visits_last_hour,
                        excluded.eventful_visits_last_hour, excluded.uneventful_visits_last_hour,
                        excluded.origins_never_successful);

-- name: search_origin_metrics
SELECT m.*, l.name AS lister_name, l.instance_name AS lister_instance_name
FROM origin_metrics AS m JOIN lister AS l ON l.id = m.lister_id
WHERE (%(lister_id)s::bigint IS NULL OR m.lister_id = %(lister_id)s::bigint)
  AND (%(visit_type)s::text IS NULL OR m.visit_type = %(visit_type)s::text)
ORDER BY l.name, l.instance_name, m.visit_type;
