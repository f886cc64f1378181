-- The origins role's named queries for PostgreSQL on listings: listers, listed origins, and the visit stats
-- and visit changes the journal's statuses feed (the feedback loop). See store/origins/flow.py and
-- docs/design/origins.md; the role's other queries are in postgresql_scheduling.sql and postgresql_metrics.sql,
-- the same names as sqlite_listings.sql.
-- %(named)s parameters; a batch of keys as one array per column (%(named)b, binary), a batch of records
-- as one JSON array of objects read with json_to_recordset; `now` always from the caller.

-- name: get_lister
SELECT * FROM lister WHERE name = %(name)s AND instance_name = %(instance_name)s;

-- name: insert_lister
INSERT INTO lister (name, instance_name, current_state, updated)
VALUES (%(name)s, %(instance_name)s, '{}', %(now)s)
ON CONFLICT (name, instance_name) DO NOTHING;

-- name: lister_exists
SELECT 1 FROM lister WHERE id = %(id)s;

-- name: lister_lists_origins
SELECT 1 FROM listed_origin WHERE lister_id = %(id)s LIMIT 1;

-- name: delete_lister_metrics
DELETE FROM origin_metrics WHERE lister_id = %(id)s;

-- name: delete_lister
DELETE FROM lister WHERE id = %(id)s;

-- name: list_listers
SELECT * FROM lister ORDER BY name, instance_name;

-- name: update_lister
-- optimistic: only if nobody changed it since it was read
UPDATE lister SET current_state = %(current_state)s::jsonb, last_listing_finished_at = %(last_listing_finished_at)s,
                  updated = %(now)s
WHERE id = %(id)s AND updated = %(expected_updated)s
RETURNING *;

-- name: record_listed_origins
-- rows: a JSON array of listed origins (one parameter, parsed by PostgreSQL in C).
-- One statement per batch: upsert the listings, then carry what they say to the
-- origins' scheduling rows. A new origin's row is the listing itself; an existing
-- one combines this listing with the other listers' (whose rows this statement
-- does not touch, so its snapshot sees them right): enabled in any, earliest
-- first_seen, newest and oldest last_update and whether one has none, fork in any,
-- and the listing a loader gets (this one if enabled, else the best other). An
-- origin disabled by the feedback loop and enabled again by a listing starts over
-- with no failures ("disable until the next run of the lister"). A listing that
-- changes nothing there writes nothing there. Answers the listings as stored.
WITH listed AS (
    INSERT INTO listed_origin AS o (lister_id, url, visit_type, extra_loader_arguments, enabled, first_seen, last_seen,
                                    last_update, is_fork, forked_from_url, host)
    SELECT %(lister_id)s, r.url, r.visit_type, coalesce(r.extra_loader_arguments, '{}'), r.enabled, %(now)s, %(now)s,
           r.last_update, r.is_fork, r.forked_from_url, r.host
    FROM json_to_recordset(%(rows)s::json) AS r(url text, visit_type text, extra_loader_arguments jsonb,
                                                 enabled boolean, last_update timestamptz, is_fork boolean,
                                                 forked_from_url text, host text)
    -- in key order: the batch's entries land side by side in both primary keys (a fifth faster at 1M)
    ORDER BY r.url, r.visit_type
    ON CONFLICT (lister_id, url, visit_type) DO UPDATE SET
        extra_loader_arguments = excluded.extra_loader_arguments,
        enabled = excluded.enabled,
        last_seen = CASE WHEN %(touch_last_seen)s THEN excluded.last_seen ELSE o.last_seen END,
        last_update = excluded.last_update,
        is_fork = excluded.is_fork,
        forked_from_url = excluded.forked_from_url,
        host = excluded.host
    RETURNING o.url, o.visit_type, o.enabled, o.first_seen, o.last_seen, o.last_update,
              coalesce(o.is_fork, false) AS any_fork, o.is_fork, o.forked_from_url, o.lister_id,
              o.extra_loader_arguments, (o.xmax = 0) AS new_listing, o.host
), stats AS (
    -- listing_count carries "this listing is new" (1) or not (0) into `excluded`: a new
    -- scheduling row has one listing; an existing one recounts when a listing is new
    -- (the host politeness counts it under is the newest listing's)
    INSERT INTO origin_visit_stats AS s (url, visit_type, enabled, first_seen, last_update, oldest_update, update_missing,
                                         is_fork, lister_id, extra_loader_arguments, listing_count, host)
    SELECT url, visit_type, enabled, first_seen, last_update, last_update, last_update IS NULL, any_fork, lister_id,
           extra_loader_arguments, CASE WHEN new_listing THEN 1 ELSE 0 END, host
    FROM listed
    ON CONFLICT (url, visit_type) DO UPDATE SET
        (enabled, first_seen, last_update, oldest_update, update_missing, is_fork, lister_id, extra_loader_arguments,
         failure_count, listing_count, host) = (
            SELECT excluded.enabled OR coalesce(bool_or(o.enabled), false),
                   least(excluded.first_seen, min(o.first_seen)),
                   greatest(excluded.last_update, max(o.last_update)),
                   least(excluded.last_update, min(o.last_update)),
                   excluded.last_update IS NULL OR coalesce(bool_or(o.last_update IS NULL), false),
                   excluded.is_fork OR coalesce(bool_or(o.is_fork), false),
                   CASE WHEN excluded.enabled OR count(o.*) = 0 THEN excluded.lister_id
                        ELSE (array_agg(o.lister_id ORDER BY o.enabled DESC, o.last_seen DESC))[1] END,
                   CASE WHEN excluded.enabled OR count(o.*) = 0 THEN excluded.extra_loader_arguments
                        ELSE (array_agg(o.extra_loader_arguments ORDER BY o.enabled DESC, o.last_seen DESC))[1] END,
                   CASE WHEN NOT s.enabled AND (excluded.enabled OR coalesce(bool_or(o.enabled), false)) THEN 0
                        ELSE s.failure_count END,
                   -- at least what the row counts (with this listing if new): a listing another lister
                   -- added since this statement's snapshot is in the row, not in the snapshot
                   greatest(1 + count(o.*), s.listing_count + excluded.listing_count), excluded.host
            FROM listed_origin AS o
            WHERE o.url = excluded.url AND o.visit_type = excluded.visit_type AND o.lister_id <> excluded.lister_id),
        -- a change reported since the last successful visit, new to this row: change_rate_optimal's next
        -- visit comes hint_wait_days after it, if sooner (domain.change_rates.hint_wait_days)
        next_optimal_visit = CASE
            WHEN s.hint_wait_days IS NOT NULL AND excluded.last_update > s.last_successful
                 AND excluded.last_update > coalesce(s.last_update, '-infinity')
            THEN least(s.next_optimal_visit, excluded.last_update + s.hint_wait_days * interval '1 day')
            ELSE s.next_optimal_visit END
    WHERE NOT (excluded.listing_count = 0 AND s.enabled = excluded.enabled
               AND s.is_fork = excluded.is_fork AND s.last_update IS NOT DISTINCT FROM excluded.last_update
               AND s.oldest_update IS NOT DISTINCT FROM excluded.oldest_update
               AND s.update_missing = excluded.update_missing AND s.first_seen <= excluded.first_seen
               AND s.lister_id IS NOT DISTINCT FROM excluded.lister_id
               AND s.extra_loader_arguments = excluded.extra_loader_arguments
               AND s.host IS NOT DISTINCT FROM excluded.host)
    RETURNING s.url, s.visit_type, s.listing_count
)
-- shared: the origin's row counts other listers' listings; restate_listed_origins makes it what they all say
-- (without `answer`, only those come back)
SELECT *
FROM (SELECT lister_id, url, visit_type, extra_loader_arguments, enabled, first_seen, last_seen, last_update, is_fork,
             forked_from_url,
             (url, visit_type) IN (SELECT url, visit_type FROM stats WHERE listing_count > 1) AS shared
      FROM listed) AS l
WHERE %(answer)s OR shared;

-- name: restate_listed_origins
-- after record_listed_origins, in its transaction: the scheduling rows it answered as shared (other listers
-- list the origin too), as all their listings make them now. record_listed_origins combines this listing with
-- the others as its snapshot saw them; another lister that wrote its listing of the same origin at the same
-- time (and whose lock on the row this transaction waited for) is missing from it. This statement's snapshot
-- has it, and this transaction's lock on each row keeps any later lister waiting until it commits (that one
-- then restates it in turn). The listing a loader gets is an enabled one, this lister's first, else the most
-- recently seen; the host and change_rate_optimal's hint stay as record_listed_origins set them.
UPDATE origin_visit_stats AS s SET
    (enabled, first_seen, last_update, oldest_update, update_missing, is_fork, lister_id, extra_loader_arguments,
     failure_count, listing_count) = (
        c.enabled, c.first_seen, c.newest_update, c.oldest_update, c.update_missing, c.is_fork, c.lister_id,
        c.extra_loader_arguments, CASE WHEN NOT s.enabled AND c.enabled THEN 0 ELSE s.failure_count END, c.listings)
FROM unnest(%(urls)b::text[], %(visit_types)b::text[]) AS k(url, visit_type)
CROSS JOIN LATERAL (
    SELECT count(*) AS listings, bool_or(o.enabled) AS enabled, min(o.first_seen) AS first_seen,
           max(o.last_update) AS newest_update, min(o.last_update) AS oldest_update,
           bool_or(o.last_update IS NULL) AS update_missing, coalesce(bool_or(o.is_fork), false) AS is_fork,
           (array_agg(o.lister_id ORDER BY o.enabled DESC, o.enabled AND o.lister_id = %(lister_id)s DESC,
                      o.lister_id <> %(lister_id)s DESC, o.last_seen DESC))[1] AS lister_id,
           (array_agg(o.extra_loader_arguments ORDER BY o.enabled DESC, o.enabled AND o.lister_id = %(lister_id)s DESC,
                      o.lister_id <> %(lister_id)s DESC, o.last_seen DESC))[1] AS extra_loader_arguments
    FROM listed_origin AS o
    WHERE o.url = k.url AND o.visit_type = k.visit_type
) AS c
WHERE s.url = k.url AND s.visit_type = k.visit_type
  AND (s.enabled, s.first_seen, s.last_update, s.oldest_update, s.update_missing, s.is_fork, s.lister_id,
       s.extra_loader_arguments, s.listing_count)
      IS DISTINCT FROM (c.enabled, c.first_seen, c.newest_update, c.oldest_update, c.update_missing, c.is_fork,
                        c.lister_id, c.extra_loader_arguments, c.listings);

-- name: search_listed_origins
-- every listing, by (url, visit_type, lister_id) after the cursor: a walk of listed_origin_url_idx.
-- With a URL or a lister, the queries below (one statement per filter, so that each walks its index)
SELECT * FROM listed_origin
WHERE (url, visit_type, lister_id) > (%(after_url)s::text, %(after_type)s::text, %(after_lister)s::bigint)
ORDER BY url, visit_type, lister_id LIMIT %(limit)s;

-- name: listed_origins_of_url
-- one URL's listings: a walk of listed_origin_url_idx from the URL
SELECT * FROM listed_origin
WHERE url = %(url)s AND visit_type >= %(after_type)s
  AND (url, visit_type, lister_id) > (%(after_url)s::text, %(after_type)s::text, %(after_lister)s::bigint)
ORDER BY url, visit_type, lister_id LIMIT %(limit)s;

-- name: listed_origins_of_lister
-- one lister's listings: a walk of the primary key (lister_id, url, visit_type) from the cursor
SELECT * FROM listed_origin
WHERE lister_id = %(lister_id)s AND (url, visit_type) >= (%(after_url)s::text, %(after_type)s::text)
  AND (url, visit_type, lister_id) > (%(after_url)s::text, %(after_type)s::text, %(after_lister)s::bigint)
ORDER BY lister_id, url, visit_type LIMIT %(limit)s;

-- name: listed_origins_of_url_and_lister
SELECT * FROM listed_origin
WHERE lister_id = %(lister_id)s AND url = %(url)s AND visit_type >= %(after_type)s
  AND (url, visit_type, lister_id) > (%(after_url)s::text, %(after_type)s::text, %(after_lister)s::bigint)
ORDER BY lister_id, url, visit_type LIMIT %(limit)s;

-- name: listings_in
-- these listings (lister_id, url, visit_type), those that exist: a primary-key probe each
SELECT o.* FROM unnest(%(lister_ids)s::bigint[], %(urls)s::text[], %(visit_types)s::text[]) AS k(lister_id, url, visit_type)
JOIN listed_origin AS o ON o.lister_id = k.lister_id AND o.url = k.url AND o.visit_type = k.visit_type;

-- name: visit_stats_for_update
-- the fields of a VisitStats, in its order (read by position)
SELECT s.url, s.visit_type, s.last_visit, s.last_visit_status, s.last_successful, s.last_snapshot, s.last_eventful,
       s.last_uneventful, s.failure_count, s.last_scheduled, s.next_visit_target, s.last_status_date, s.successful_visits,
       s.cooldown_until, s.rate_changes, s.rate_days, s.rate_evidence, s.next_optimal_visit, s.hint_wait_days,
       s.last_update
FROM unnest(%(urls)b::text[], %(visit_types)b::text[]) WITH ORDINALITY AS k(url, visit_type, n)
JOIN origin_visit_stats AS s ON s.url = k.url AND s.visit_type = k.visit_type
ORDER BY k.n
FOR UPDATE OF s;

-- name: visit_stats_in
SELECT s.* FROM unnest(%(urls)b::text[], %(visit_types)b::text[]) WITH ORDINALITY AS k(url, visit_type, n)
JOIN origin_visit_stats AS s ON s.url = k.url AND s.visit_type = k.visit_type
ORDER BY k.n;

-- name: upsert_visit_stats
-- rows: a JSON array of visit stats objects (snapshots in hex): one parameter that
-- PostgreSQL parses in C, where 14 array parameters cost more to build than to apply
INSERT INTO origin_visit_stats (url, visit_type, last_visit, last_visit_status, last_successful, last_snapshot,
                                last_eventful, last_uneventful, failure_count, last_scheduled, next_visit_target,
                                last_status_date, successful_visits, cooldown_until, rate_changes, rate_days,
                                next_optimal_visit, rate_evidence, hint_wait_days)
SELECT r.url, r.visit_type, r.last_visit, r.last_visit_status, r.last_successful, decode(r.last_snapshot, 'hex'),
       r.last_eventful, r.last_uneventful, r.failure_count, r.last_scheduled, r.next_visit_target,
       r.last_status_date, r.successful_visits, r.cooldown_until, r.rate_changes, r.rate_days, r.next_optimal_visit,
       r.rate_evidence, r.hint_wait_days
FROM json_to_recordset(%(rows)s::json) AS r(
    url text, visit_type text, last_visit timestamptz, last_visit_status text, last_successful timestamptz,
    last_snapshot text, last_eventful timestamptz, last_uneventful timestamptz, failure_count integer,
    last_scheduled timestamptz, next_visit_target timestamptz, last_status_date timestamptz,
    successful_visits integer, cooldown_until timestamptz, rate_changes double precision,
    rate_days double precision, next_optimal_visit timestamptz, rate_evidence real[], hint_wait_days double precision)
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
-- rows: a JSON array of rows.VisitChangesRecord objects (change_times packed, in hex: migrations/0020), one
-- per origin: what the newest successful status of an origin that carried them saw of its changes; a status
-- not newer than the one kept changes nothing
INSERT INTO origin_visit_changes (url, visit_type, status_date, newest_change, change_times)
SELECT r.url, r.visit_type, r.status_date, r.newest_change, decode(r.change_times, 'hex')
FROM json_to_recordset(%(rows)s::json) AS r(
    url text, visit_type text, status_date timestamptz, newest_change timestamptz, change_times text)
ON CONFLICT (url, visit_type) DO UPDATE SET
    status_date = excluded.status_date,
    newest_change = excluded.newest_change,
    change_times = excluded.change_times
WHERE excluded.status_date > origin_visit_changes.status_date;

-- name: visit_changes_in
-- read by name (rows.row_to_visit_changes) and by position (rows.newest_changes)
SELECT c.url, c.visit_type, c.status_date, c.newest_change, c.change_times
FROM unnest(%(urls)b::text[], %(visit_types)b::text[]) WITH ORDINALITY AS k(url, visit_type, n)
JOIN origin_visit_changes AS c ON c.url = k.url AND c.visit_type = k.visit_type
ORDER BY k.n;

-- name: disable_listed_origins
UPDATE listed_origin AS o SET enabled = false
FROM unnest(%(urls)b::text[], %(visit_types)b::text[]) AS k(url, visit_type)
WHERE o.url = k.url AND o.visit_type = k.visit_type AND o.enabled;

-- name: disable_visit_stats
UPDATE origin_visit_stats AS s SET enabled = false
FROM unnest(%(urls)b::text[], %(visit_types)b::text[]) AS k(url, visit_type)
WHERE s.url = k.url AND s.visit_type = k.visit_type AND s.enabled;
