-- The origins role's named queries for SQLite (see store/origins/flow.py); the same names as postgresql.sql.
-- Listers, listed origins, visit stats and the feedback loop, the scheduling policies, change_rate_optimal's
-- threshold and rate samples, and metrics (see docs/design/origins.md). :named parameters; lists as JSON
-- text read with json_each, a batch of keys or records as rows by position (value ->> 0), or a statement
-- run once per record of a batch (executemany), its fields as :named parameters; times as ISO 8601
-- text in UTC, `now` always from the caller.

-- name: get_lister
SELECT * FROM lister WHERE name = :name AND instance_name = :instance_name;

-- name: insert_lister
INSERT INTO lister (name, instance_name, current_state, updated)
VALUES (:name, :instance_name, '{}', :now)
ON CONFLICT (name, instance_name) DO NOTHING;

-- name: lister_exists
SELECT 1 FROM lister WHERE id = :id;

-- name: lister_lists_origins
SELECT 1 FROM listed_origin WHERE lister_id = :id LIMIT 1;

-- name: delete_lister_metrics
DELETE FROM origin_metrics WHERE lister_id = :id;

-- name: delete_lister
DELETE FROM lister WHERE id = :id;

-- name: list_listers
SELECT * FROM lister ORDER BY name, instance_name;

-- name: update_lister
-- optimistic: only if nobody changed it since it was read
UPDATE lister SET current_state = :current_state, last_listing_finished_at = :last_listing_finished_at, updated = :now
WHERE id = :id AND updated = :expected_updated
RETURNING *;

-- name: record_listed_origins
-- rows: a JSON array of [url, visit_type, extra_loader_arguments, last_update, enabled, is_fork, forked_from_url,
-- host].
-- Three statements (SQLite has no INSERT in a WITH): upsert the listings, then carry what the listings
-- of these origins say to their scheduling rows:
-- enabled in any, earliest first_seen, newest and oldest last_update and whether one has none, fork in
-- any, and the listing a loader gets (an enabled one, the most recently seen, this lister's on
-- a tie). An origin disabled by the feedback loop and enabled again by a listing
-- starts over with no failures. A row the listings do not change is not written. The last
-- statement answers the listings as stored.
INSERT INTO listed_origin (lister_id, url, visit_type, extra_loader_arguments, enabled, first_seen, last_seen,
                           last_update, is_fork, forked_from_url, host)
SELECT :lister_id, r.value ->> 0, r.value ->> 1, coalesce(r.value ->> 2, '{}'), r.value ->> 4, :now, :now,
       r.value ->> 3, r.value ->> 5, r.value ->> 6, r.value ->> 7
FROM json_each(:rows) AS r WHERE true
ORDER BY r.value ->> 0, r.value ->> 1
ON CONFLICT (lister_id, url, visit_type) DO UPDATE SET
    extra_loader_arguments = excluded.extra_loader_arguments,
    enabled = excluded.enabled,
    last_seen = CASE WHEN :touch_last_seen THEN excluded.last_seen ELSE listed_origin.last_seen END,
    last_update = excluded.last_update,
    is_fork = excluded.is_fork,
    forked_from_url = excluded.forked_from_url,
    host = excluded.host;
INSERT INTO origin_visit_stats AS s (url, visit_type, enabled, first_seen, last_update, oldest_update, update_missing,
                                     is_fork, lister_id, extra_loader_arguments, listing_count, host)
SELECT o.url, o.visit_type, max(o.enabled), min(o.first_seen), max(o.last_update), min(o.last_update),
       max(o.last_update IS NULL), coalesce(max(o.is_fork), 0),
       (SELECT b.lister_id FROM listed_origin AS b WHERE b.url = o.url AND b.visit_type = o.visit_type
        ORDER BY b.enabled DESC, b.last_seen DESC, b.lister_id = :lister_id DESC LIMIT 1),
       (SELECT b.extra_loader_arguments FROM listed_origin AS b WHERE b.url = o.url AND b.visit_type = o.visit_type
        ORDER BY b.enabled DESC, b.last_seen DESC, b.lister_id = :lister_id DESC LIMIT 1),
       count(*), max(k.value ->> 7)
FROM json_each(:rows) AS k
JOIN listed_origin AS o ON o.url = k.value ->> 0 AND o.visit_type = k.value ->> 1
WHERE true
GROUP BY o.url, o.visit_type
ON CONFLICT (url, visit_type) DO UPDATE SET
    failure_count = CASE WHEN NOT s.enabled AND excluded.enabled THEN 0 ELSE s.failure_count END,
    enabled = excluded.enabled, first_seen = excluded.first_seen, last_update = excluded.last_update,
    oldest_update = excluded.oldest_update, update_missing = excluded.update_missing,
    is_fork = excluded.is_fork, lister_id = excluded.lister_id, extra_loader_arguments = excluded.extra_loader_arguments,
    listing_count = excluded.listing_count, host = excluded.host,
    -- a change reported since the last successful visit, new to this row: change_rate_optimal's next
    -- visit comes hint_wait_days after it, if sooner (domain.change_rates.hint_wait_days)
    next_optimal_visit = CASE
        WHEN s.hint_wait_days IS NOT NULL AND excluded.last_update > s.last_successful
             AND (s.last_update IS NULL OR excluded.last_update > s.last_update)
        THEN min(coalesce(s.next_optimal_visit, '9999'),
                 strftime('%Y-%m-%dT%H:%M:%f000+00:00', julianday(excluded.last_update) + s.hint_wait_days))
        ELSE s.next_optimal_visit END
WHERE (s.enabled, s.first_seen, s.last_update, s.oldest_update, s.update_missing, s.is_fork, s.lister_id,
       s.extra_loader_arguments, s.listing_count, s.host)
      IS NOT (excluded.enabled, excluded.first_seen, excluded.last_update, excluded.oldest_update,
              excluded.update_missing, excluded.is_fork, excluded.lister_id, excluded.extra_loader_arguments,
              excluded.listing_count, excluded.host);
SELECT o.lister_id, o.url, o.visit_type, o.extra_loader_arguments, o.enabled, o.first_seen, o.last_seen, o.last_update,
       o.is_fork, o.forked_from_url
FROM json_each(:rows) AS k
JOIN listed_origin AS o ON o.lister_id = :lister_id AND o.url = k.value ->> 0 AND o.visit_type = k.value ->> 1;

-- name: restate_listed_origins
-- nothing to do: record_listed_origins reads every listing after writing its own, and SQLite's writers
-- take turns

-- name: search_listed_origins
-- every listing, by (url, visit_type, lister_id) after the cursor: a walk of listed_origin_url_idx.
-- With a URL or a lister, the queries below (one statement per filter, so that each walks its index)
SELECT * FROM listed_origin
WHERE (url, visit_type, lister_id) > (:after_url, :after_type, :after_lister)
ORDER BY url, visit_type, lister_id LIMIT :limit;

-- name: listed_origins_of_url
-- one URL's listings: a walk of listed_origin_url_idx from the URL
SELECT * FROM listed_origin
WHERE url = :url AND visit_type >= :after_type
  AND (url, visit_type, lister_id) > (:after_url, :after_type, :after_lister)
ORDER BY url, visit_type, lister_id LIMIT :limit;

-- name: listed_origins_of_lister
-- one lister's listings: a walk of the primary key (lister_id, url, visit_type) from the cursor
SELECT * FROM listed_origin
WHERE lister_id = :lister_id AND (url, visit_type) >= (:after_url, :after_type)
  AND (url, visit_type, lister_id) > (:after_url, :after_type, :after_lister)
ORDER BY lister_id, url, visit_type LIMIT :limit;

-- name: listed_origins_of_url_and_lister
SELECT * FROM listed_origin
WHERE lister_id = :lister_id AND url = :url AND visit_type >= :after_type
  AND (url, visit_type, lister_id) > (:after_url, :after_type, :after_lister)
ORDER BY lister_id, url, visit_type LIMIT :limit;

-- name: listings_in
-- rows: [lister_id, url, visit_type] (columns lister_ids, urls, visit_types): these listings, those that exist
SELECT o.* FROM json_each(:rows) AS k
JOIN listed_origin AS o ON o.lister_id = k.value ->> 0 AND o.url = k.value ->> 1 AND o.visit_type = k.value ->> 2;

-- name: visit_stats_for_update
-- the fields of a VisitStats, in its order (read by position); the write transaction holds SQLite's
-- single writer lock: nobody changes them meanwhile
SELECT s.url, s.visit_type, s.last_visit, s.last_visit_status, s.last_successful, s.last_snapshot, s.last_eventful,
       s.last_uneventful, s.failure_count, s.last_scheduled, s.next_visit_target, s.last_status_date, s.successful_visits,
       s.cooldown_until, s.rate_changes, s.rate_days, s.rate_evidence, s.next_optimal_visit, s.hint_wait_days,
       s.last_update
FROM json_each(:rows) AS k
JOIN origin_visit_stats AS s ON s.url = k.value ->> 0 AND s.visit_type = k.value ->> 1
ORDER BY k.key;

-- name: visit_stats_in
SELECT s.* FROM json_each(:rows) AS k
JOIN origin_visit_stats AS s ON s.url = k.value ->> 0 AND s.visit_type = k.value ->> 1
ORDER BY k.key;

-- name: upsert_visit_stats
-- one visit stats record a run
INSERT INTO origin_visit_stats (url, visit_type, last_visit, last_visit_status, last_successful, last_snapshot,
                                last_eventful, last_uneventful, failure_count, last_scheduled, next_visit_target,
                                last_status_date, successful_visits, cooldown_until, rate_changes, rate_days,
                                next_optimal_visit, rate_evidence, hint_wait_days)
VALUES (:url, :visit_type, :last_visit, :last_visit_status, :last_successful, :last_snapshot,
        :last_eventful, :last_uneventful, :failure_count, :last_scheduled, :next_visit_target, :last_status_date,
        :successful_visits, :cooldown_until, :rate_changes, :rate_days, :next_optimal_visit, :rate_evidence,
        :hint_wait_days)
ON CONFLICT (url, visit_type) DO UPDATE SET
    last_visit = excluded.last_visit,
    last_visit_status = excluded.last_visit_status,
    last_successful = excluded.last_successful,
    last_snapshot = excluded.last_snapshot,
    last_eventful = excluded.last_eventful,
    last_uneventful = excluded.last_uneventful,
    failure_count = excluded.failure_count,
    last_scheduled = excluded.last_scheduled,
    next_visit_target = excluded.next_visit_target,
    last_status_date = excluded.last_status_date,
    successful_visits = excluded.successful_visits,
    cooldown_until = excluded.cooldown_until,
    rate_changes = excluded.rate_changes,
    rate_days = excluded.rate_days,
    next_optimal_visit = excluded.next_optimal_visit,
    rate_evidence = excluded.rate_evidence,
    hint_wait_days = excluded.hint_wait_days;

-- name: upsert_visit_changes
-- one record a run (rows.VisitChangesRecord): what the newest successful status of an origin that carried
-- them saw of its changes, change_times packed (migrations/0020); a status not newer than the one kept
-- changes nothing
INSERT INTO origin_visit_changes (url, visit_type, status_date, newest_change, change_times)
VALUES (:url, :visit_type, :status_date, :newest_change, :change_times)
ON CONFLICT (url, visit_type) DO UPDATE SET
    status_date = excluded.status_date,
    newest_change = excluded.newest_change,
    change_times = excluded.change_times
WHERE excluded.status_date > origin_visit_changes.status_date;

-- name: visit_changes_in
-- read by name (rows.row_to_visit_changes) and by position (rows.newest_changes)
SELECT c.url, c.visit_type, c.status_date, c.newest_change, c.change_times FROM json_each(:rows) AS k
JOIN origin_visit_changes AS c ON c.url = k.value ->> 0 AND c.visit_type = k.value ->> 1
ORDER BY k.key;

-- name: disable_listed_origins
UPDATE listed_origin SET enabled = 0
WHERE enabled AND (url, visit_type) IN (SELECT value ->> 0, value ->> 1 FROM json_each(:rows));

-- name: disable_visit_stats
UPDATE origin_visit_stats SET enabled = 0
WHERE enabled AND (url, visit_type) IN (SELECT value ->> 0, value ->> 1 FROM json_each(:rows));

-- Scheduling policies. Each pick_* walks one partial index in its order (the
-- write transaction holds SQLite's single writer lock, so nobody else grabs
-- meanwhile); the grab then marks them scheduled, which gives them a cooldown
-- and takes them out of every policy index.

-- name: index_ordered_picks
-- nothing to set: SQLite's planner walks each pick's partial index in its order

-- name: release_cooldowns
-- cooldowns that are over: back into the policy indexes
UPDATE origin_visit_stats SET cooldown_until = NULL
WHERE visit_type = :visit_type AND cooldown_until IS NOT NULL AND cooldown_until <= :now;

-- name: pick_never_visited_oldest_update_first
SELECT s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.host FROM origin_visit_stats AS s
WHERE s.visit_type = :visit_type AND s.enabled AND s.cooldown_until IS NULL
  AND s.last_successful IS NULL AND s.last_update IS NOT NULL
  AND (:lister_id IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = :lister_id AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.is_fork, s.last_update
LIMIT :limit;

-- name: pick_already_visited_order_by_lag
SELECT s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.host FROM origin_visit_stats AS s
WHERE s.visit_type = :visit_type AND s.enabled AND s.cooldown_until IS NULL
  AND s.last_update > s.last_successful
  AND (:lister_id IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = :lister_id AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, (julianday(s.last_update) - julianday(s.last_successful)) DESC
LIMIT :limit;

-- name: pick_without_last_update_never_loaded
SELECT s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.host FROM origin_visit_stats AS s
WHERE s.visit_type = :visit_type AND s.enabled AND s.cooldown_until IS NULL
  AND s.last_update IS NULL AND s.last_successful IS NULL
  AND (:lister_id IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = :lister_id AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.first_seen
LIMIT :limit;

-- name: pick_without_last_update_loaded_once
-- "ordered by date of last visit; clamped to $minimum_interval (oldest first)"
SELECT s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.host FROM origin_visit_stats AS s
WHERE s.visit_type = :visit_type AND s.enabled AND s.cooldown_until IS NULL
  AND s.last_update IS NULL AND s.successful_visits = 1 AND s.last_visit <= :visited_before
  AND (:lister_id IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = :lister_id AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.last_visit
LIMIT :limit;

-- name: pick_without_last_update_loaded_more
-- "order by next run target", those that are due
SELECT s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.host FROM origin_visit_stats AS s
WHERE s.visit_type = :visit_type AND s.enabled AND s.cooldown_until IS NULL
  AND s.last_update IS NULL AND s.successful_visits > 1 AND s.next_visit_target <= :now
  AND (:lister_id IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = :lister_id AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.next_visit_target
LIMIT :limit;

-- name: pick_oldest_scheduled_first
-- SQLite sorts NULL first: never scheduled first
SELECT s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.host FROM origin_visit_stats AS s
WHERE s.visit_type = :visit_type AND s.enabled AND s.cooldown_until IS NULL
  AND (:lister_id IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = :lister_id AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.last_scheduled
LIMIT :limit;

-- name: pick_change_rate_optimal_never_visited
SELECT s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.host FROM origin_visit_stats AS s
WHERE s.visit_type = :visit_type AND s.enabled AND s.cooldown_until IS NULL AND s.last_successful IS NULL
  AND (:lister_id IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = :lister_id AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.first_seen
LIMIT :limit;

-- name: pick_change_rate_optimal_due
-- by the time each origin's optimal revisit falls due, due or not: the capacity is spent in this order
SELECT s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.host FROM origin_visit_stats AS s
WHERE s.visit_type = :visit_type AND s.enabled AND s.cooldown_until IS NULL AND s.last_successful IS NOT NULL
  AND (:lister_id IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = :lister_id AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.next_optimal_visit
LIMIT :limit;

-- name: pick_stop_after_success
SELECT s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.host FROM origin_visit_stats AS s
WHERE s.visit_type = :visit_type AND s.enabled AND s.cooldown_until IS NULL AND s.last_successful IS NULL
  AND (:lister_id IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = :lister_id AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.last_scheduled
LIMIT :limit;

-- name: grab_picked
-- one pick_* query (in place of the braced word pick, without its semicolon), then the marking of
-- what it returned (SQLite cannot update in a WITH), the urls it returned as a JSON array
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

-- Metrics per (lister, visit type), at the times of domain/origin_metrics.py (MetricClock, lag_of): lags
-- in whole hours below a week (to :lag_hour_at, the hour at or after `now`), in whole days beyond (to
-- :lag_day_at); activity to the minute (visits after :since and up to :until, `now`'s minute); in flight at
-- `now`. Activity (in flight; visits of any outcome (last_status_date), eventful and uneventful) counts an
-- origin once, for the listing its loader gets (s.lister_id), so that it adds up over listers. Origins one
-- lister lists are counted from the cells their writes keep up to date (origin_metric_cell, see
-- migrations/0012: this store's cells are times as text); recounted in full only on demand
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
-- every cell counted again from the scheduling rows (with single_listed_metrics: the full recount)
DELETE FROM origin_metric_cell;
INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
SELECT s.lister_id, s.visit_type, k.column1,
       CASE k.column1
           WHEN 5 THEN CASE WHEN substr(s.last_update, 15) = '00:00.000000+00:00' THEN s.last_update ELSE strftime('%Y-%m-%dT%H:00:00.000000+00:00', s.last_update, '+1 hour') END
           WHEN 6 THEN s.cooldown_until
           WHEN 7 THEN CASE WHEN substr(s.last_status_date, 18) = '00.000000+00:00' THEN s.last_status_date ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', s.last_status_date, '+1 minute') END
           WHEN 8 THEN CASE WHEN substr(s.last_eventful, 18) = '00.000000+00:00' THEN s.last_eventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', s.last_eventful, '+1 minute') END
           WHEN 9 THEN CASE WHEN substr(s.last_uneventful, 18) = '00.000000+00:00' THEN s.last_uneventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', s.last_uneventful, '+1 minute') END
           ELSE 0 END,
       count(*)
FROM origin_visit_stats AS s, (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS k
WHERE s.listing_count = 1 AND CASE k.column1
          WHEN 1 THEN 1
          WHEN 2 THEN s.enabled
          WHEN 3 THEN s.enabled AND s.last_successful IS NULL AND s.last_status_date IS NULL
          WHEN 4 THEN s.enabled AND s.last_successful IS NULL AND s.last_status_date IS NOT NULL
          WHEN 5 THEN s.enabled AND s.last_update IS NOT NULL
                      AND (s.last_successful IS NULL OR s.last_update > s.last_successful)
          WHEN 6 THEN s.last_scheduled IS NOT NULL AND s.cooldown_until IS NOT NULL
                      AND (s.last_status_date IS NULL OR s.last_scheduled > s.last_status_date)
          WHEN 7 THEN s.last_status_date IS NOT NULL
          WHEN 8 THEN s.last_eventful IS NOT NULL
          WHEN 9 THEN s.last_uneventful IS NOT NULL END
GROUP BY 1, 2, 3, 4;

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
INSERT INTO origin_metrics (lister_id, visit_type, computed_at, origins_known, origins_enabled, origins_never_visited,
                            origins_with_pending_changes, lag_histogram, lag_max, visits_in_flight, visits_last_hour,
                            eventful_visits_last_hour, uneventful_visits_last_hour, origins_never_successful)
VALUES (:lister_id, :visit_type, :computed_at, :origins_known, :origins_enabled, :origins_never_visited,
        :origins_with_pending_changes, :lag_histogram, :lag_max, :visits_in_flight, :visits_last_hour,
        :eventful_visits_last_hour, :uneventful_visits_last_hour, :origins_never_successful)
ON CONFLICT (lister_id, visit_type) DO UPDATE SET
    computed_at = excluded.computed_at, origins_known = excluded.origins_known,
    origins_enabled = excluded.origins_enabled, origins_never_visited = excluded.origins_never_visited,
    origins_with_pending_changes = excluded.origins_with_pending_changes,
    lag_histogram = excluded.lag_histogram, lag_max = excluded.lag_max,
    visits_in_flight = excluded.visits_in_flight, visits_last_hour = excluded.visits_last_hour,
    eventful_visits_last_hour = excluded.eventful_visits_last_hour,
    uneventful_visits_last_hour = excluded.uneventful_visits_last_hour,
    origins_never_successful = excluded.origins_never_successful;

-- name: search_origin_metrics
SELECT m.*, l.name AS lister_name, l.instance_name AS lister_instance_name
FROM origin_metrics AS m JOIN lister AS l ON l.id = m.lister_id
WHERE (:lister_id IS NULL OR m.lister_id = :lister_id)
  AND (:visit_type IS NULL OR m.visit_type = :visit_type)
ORDER BY l.name, l.instance_name, m.visit_type;

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
