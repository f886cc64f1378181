-- The origins role's named queries for SQLite on metrics: the metrics per (lister, visit type), their
-- cells, their counts and their search. See store/origins/flow.py and docs/design/origins.md; the
-- role's other queries are in sqlite_listings.sql and sqlite_scheduling.sql, the same names as
-- postgresql_metrics.sql.
-- :named parameters; lists as JSON text read with json_each, a batch of keys or records as rows by
-- position (value ->> 0), or a statement run once per record of a batch (executemany), its fields as
-- :named parameters; times as ISO 8601 text in UTC, `now` always from the caller.

-- Metrics per (lister, visit type), at the times of domain/origin_metrics.py (MetricClock, lag_of): lags
-- in whole hours below a week (to :lag_hour_at, the hour at or after `now`), in whole days beyond (to
-- :lag_day_at); activity to the minute (visits after :since and up to :until, `now`'s minute); in flight at
-- `now`. Activity (in flight; visits of any outcome (last_status_date), eventful and uneventful) counts an
-- origin once, for the listing its loader gets (s.lister_id), so that it adds up over listers. Origins one
-- lister lists are counted from the cells their writes keep up to date (origin_metric_cell, see
-- migrations/0012 and 0029: this store's cells are times as text); recounted in full only on demand
-- (single_listed_metrics, which also rebuilds the cells). Rows are one per (lister, visit type, lag
-- bucket), the bucket NULL for origins with nothing pending, as fold_metrics takes them.

-- name: lock_metric_cells
-- nothing to take: the write transaction is the only writer
SELECT 1;

-- name: prune_metric_cells
-- cells that count nothing any more: empty, in flight until before now, visits before the window
DELETE FROM origin_metric_cell
WHERE origins = 0 OR (kind = 6 AND cell <= :now) OR (kind IN (7, 8, 9) AND cell <= :since);

-- name: metrics_from_cells
SELECT lister_id, visit_type, NULL AS bucket,
       coalesce(sum(origins) FILTER (WHERE kind = 1), 0) - coalesce(sum(origins) FILTER (WHERE kind = 5), 0) AS origins,
       coalesce(sum(origins) FILTER (WHERE kind = 2), 0) AS enabled,
       coalesce(sum(origins) FILTER (WHERE kind = 3), 0) AS never_visited,
       coalesce(sum(origins) FILTER (WHERE kind = 4), 0) AS never_successful,
       NULL AS lag_max,
       coalesce(sum(origins) FILTER (WHERE kind = 6 AND cell > :now), 0) AS in_flight,
       coalesce(sum(origins) FILTER (WHERE kind = 7 AND cell > :since AND cell <= :until), 0) AS visits,
       coalesce(sum(origins) FILTER (WHERE kind = 8 AND cell > :since AND cell <= :until), 0) AS eventful,
       coalesce(sum(origins) FILTER (WHERE kind = 9 AND cell > :since AND cell <= :until), 0) AS uneventful
FROM origin_metric_cell
GROUP BY lister_id, visit_type
HAVING coalesce(sum(origins) FILTER (WHERE kind = 1), 0) <> 0
UNION ALL
SELECT lister_id, visit_type, CASE WHEN lag_d >= :day_lags_from
                  THEN json_array_length(:hour_bounds) + (SELECT count(*) FROM json_each(:day_bounds) AS q WHERE q.value <= lag_d * 86400.0)
                  ELSE (SELECT count(*) FROM json_each(:hour_bounds) AS q WHERE q.value <= lag_h * 3600.0) END, sum(origins), 0, 0, 0, max(CASE WHEN lag_d >= :day_lags_from THEN lag_d * 86400.0 ELSE lag_h * 3600.0 END), 0, 0, 0, 0
FROM (SELECT lister_id, visit_type, origins,
             round(julianday(:lag_day_at) - julianday(CASE WHEN substr(cell, 12) = '00:00:00.000000+00:00' THEN cell ELSE strftime('%Y-%m-%dT00:00:00.000000+00:00', cell, '+1 day') END)) AS lag_d,
             round((julianday(:lag_hour_at) - julianday(cell)) * 24) AS lag_h
      FROM origin_metric_cell WHERE kind = 5 AND origins <> 0)
GROUP BY 1, 2, 3;

-- name: rebuild_metric_cells
-- every cell counted again from the scheduling rows (with single_listed_metrics: the full recount), by the
-- rule the triggers count by (origin_metric_cell_of_row, migrations/0029)
DELETE FROM origin_metric_cell;
INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
SELECT lister_id, visit_type, kind, cell, count(*) FROM origin_metric_cell_of_row GROUP BY 1, 2, 3, 4;

-- name: single_listed_metrics
-- the full recount of the origins one lister lists: their scheduling row says it all (one scan, no join)
SELECT lister_id, visit_type, bucket, count(*) AS origins, count(*) FILTER (WHERE enabled) AS enabled,
       count(*) FILTER (WHERE enabled AND last_successful IS NULL AND last_status_date IS NULL) AS never_visited,
       count(*) FILTER (WHERE enabled AND last_successful IS NULL AND last_status_date IS NOT NULL) AS never_successful,
       max(lag) AS lag_max,
       count(*) FILTER (WHERE in_flight) AS in_flight, count(*) FILTER (WHERE visited) AS visits,
       count(*) FILTER (WHERE eventful) AS eventful, count(*) FILTER (WHERE uneventful) AS uneventful
FROM (SELECT lister_id, visit_type, enabled, last_successful, last_status_date, in_flight, visited, eventful, uneventful,
             CASE WHEN pending THEN CASE WHEN lag_d >= :day_lags_from
                                    THEN json_array_length(:hour_bounds) + (SELECT count(*) FROM json_each(:day_bounds) AS q WHERE q.value <= lag_d * 86400.0)
                                    ELSE (SELECT count(*) FROM json_each(:hour_bounds) AS q WHERE q.value <= lag_h * 3600.0) END END AS bucket,
             CASE WHEN pending THEN CASE WHEN lag_d >= :day_lags_from THEN lag_d * 86400.0 ELSE lag_h * 3600.0 END END AS lag
      FROM (SELECT s.lister_id AS lister_id, s.visit_type, s.enabled AS enabled, s.last_successful, s.last_status_date,
                   s.enabled AND s.last_update IS NOT NULL
                       AND (s.last_successful IS NULL OR s.last_update > s.last_successful) AS pending,
                   round(julianday(:lag_day_at) - julianday(CASE WHEN substr(s.last_update, 12) = '00:00:00.000000+00:00' THEN s.last_update ELSE strftime('%Y-%m-%dT00:00:00.000000+00:00', s.last_update, '+1 day') END)) AS lag_d,
                   round((julianday(:lag_hour_at) - julianday(CASE WHEN substr(s.last_update, 15) = '00:00.000000+00:00' THEN s.last_update ELSE strftime('%Y-%m-%dT%H:00:00.000000+00:00', s.last_update, '+1 hour') END)) * 24) AS lag_h,
                   s.cooldown_until > :now AND s.last_scheduled IS NOT NULL
                       AND (s.last_status_date IS NULL OR s.last_scheduled > s.last_status_date) AS in_flight,
                   s.last_status_date > :since AND s.last_status_date <= :until AS visited,
                   s.last_eventful > :since AND s.last_eventful <= :until AS eventful,
                   s.last_uneventful > :since AND s.last_uneventful <= :until AS uneventful
            FROM origin_visit_stats AS s
            WHERE s.listing_count = 1))
GROUP BY lister_id, visit_type, bucket;

-- name: multi_listed_metrics
-- origins several listers list (few: walked by their partial index): each listing counts for its lister
SELECT lister_id, visit_type, bucket, count(*) AS origins, count(*) FILTER (WHERE enabled) AS enabled,
       count(*) FILTER (WHERE enabled AND last_successful IS NULL AND last_status_date IS NULL) AS never_visited,
       count(*) FILTER (WHERE enabled AND last_successful IS NULL AND last_status_date IS NOT NULL) AS never_successful,
       max(lag) AS lag_max,
       count(*) FILTER (WHERE in_flight) AS in_flight, count(*) FILTER (WHERE visited) AS visits,
       count(*) FILTER (WHERE eventful) AS eventful, count(*) FILTER (WHERE uneventful) AS uneventful
FROM (SELECT lister_id, visit_type, enabled, last_successful, last_status_date, in_flight, visited, eventful, uneventful,
             CASE WHEN pending THEN CASE WHEN lag_d >= :day_lags_from
                                    THEN json_array_length(:hour_bounds) + (SELECT count(*) FROM json_each(:day_bounds) AS q WHERE q.value <= lag_d * 86400.0)
                                    ELSE (SELECT count(*) FROM json_each(:hour_bounds) AS q WHERE q.value <= lag_h * 3600.0) END END AS bucket,
             CASE WHEN pending THEN CASE WHEN lag_d >= :day_lags_from THEN lag_d * 86400.0 ELSE lag_h * 3600.0 END END AS lag
      FROM (SELECT o.lister_id AS lister_id, s.visit_type, o.enabled AS enabled, s.last_successful, s.last_status_date,
                   o.enabled AND o.last_update IS NOT NULL
                       AND (s.last_successful IS NULL OR o.last_update > s.last_successful) AS pending,
                   round(julianday(:lag_day_at) - julianday(CASE WHEN substr(o.last_update, 12) = '00:00:00.000000+00:00' THEN o.last_update ELSE strftime('%Y-%m-%dT00:00:00.000000+00:00', o.last_update, '+1 day') END)) AS lag_d,
                   round((julianday(:lag_hour_at) - julianday(CASE WHEN substr(o.last_update, 15) = '00:00.000000+00:00' THEN o.last_update ELSE strftime('%Y-%m-%dT%H:00:00.000000+00:00', o.last_update, '+1 hour') END)) * 24) AS lag_h,
                   o.lister_id = s.lister_id AND s.cooldown_until > :now AND s.last_scheduled IS NOT NULL
                       AND (s.last_status_date IS NULL OR s.last_scheduled > s.last_status_date) AS in_flight,
                   o.lister_id = s.lister_id AND s.last_status_date > :since AND s.last_status_date <= :until AS visited,
                   o.lister_id = s.lister_id AND s.last_eventful > :since AND s.last_eventful <= :until AS eventful,
                   o.lister_id = s.lister_id AND s.last_uneventful > :since AND s.last_uneventful <= :until AS uneventful
            FROM origin_visit_stats AS s
            JOIN listed_origin AS o ON o.url = s.url AND o.visit_type = s.visit_type
            WHERE s.listing_count > 1))
GROUP BY lister_id, visit_type, bucket;

-- name: upsert_origin_metrics
-- a count per (lister, visit type), its row replaced unless it holds the same count already (an
-- import of the same metrics changes nothing: its row count says what changed)
INSERT INTO origin_metrics AS m (lister_id, visit_type, computed_at, origins_known, origins_enabled,
                                 origins_never_visited, origins_with_pending_changes, lag_histogram, lag_max,
                                 visits_in_flight, visits_last_hour, eventful_visits_last_hour,
                                 uneventful_visits_last_hour, origins_never_successful)
VALUES (:lister_id, :visit_type, :computed_at, :origins_known, :origins_enabled, :origins_never_visited,
        :origins_with_pending_changes, :lag_histogram, :lag_max, :visits_in_flight, :visits_last_hour,
        :eventful_visits_last_hour, :uneventful_visits_last_hour, :origins_never_successful)
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
      IS NOT (excluded.computed_at, excluded.origins_known, excluded.origins_enabled, excluded.origins_never_visited,
              excluded.origins_with_pending_changes, excluded.lag_histogram, excluded.lag_max,
              excluded.visits_in_flight, excluded.visits_last_hour, excluded.eventful_visits_last_hour,
              excluded.uneventful_visits_last_hour, excluded.origins_never_successful);

-- name: search_origin_metrics
SELECT m.*, l.name AS lister_name, l.instance_name AS lister_instance_name
FROM origin_metrics AS m JOIN lister AS l ON l.id = m.lister_id
WHERE (:lister_id IS NULL OR m.lister_id = :lister_id)
  AND (:visit_type IS NULL OR m.visit_type = :visit_type)
ORDER BY l.name, l.instance_name, m.visit_type;
