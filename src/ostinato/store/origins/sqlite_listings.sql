-- The origins role's named queries for SQLite on listings: listers, listed origins, and the visit stats
-- and visit changes the journal's statuses feed (the feedback loop). See store/origins/flow.py and
-- docs/design/origins.md; the role's other queries are in sqlite_scheduling.sql and sqlite_metrics.sql,
-- the same names as postgresql_listings.sql.
-- :named parameters; lists as JSON text read with json_each, a batch of keys or records as rows by
-- position (value ->> 0), or a statement run once per record of a batch (executemany), its fields as
-- :named parameters; times as ISO 8601 text in UTC, `now` always from the caller.

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
