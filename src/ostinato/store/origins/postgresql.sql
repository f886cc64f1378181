-- The origins role's named queries for PostgreSQL (see store/origins/flow.py); the same names as sqlite.sql.
-- Listers, listed origins, visit stats and the feedback loop, the scheduling policies, change_rate_optimal's
-- threshold and rate samples, and metrics (see docs/design/origins.md). %(named)s parameters; a batch of
-- keys as one array per column (%(named)b, binary), a batch of records as one JSON array of objects
-- read with json_to_recordset; `now` always from the caller.

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

-- Scheduling policies. Each pick_* walks one partial index in its order and
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

-- name: pick_never_visited_oldest_update_first
SELECT s.ctid AS tid, s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.listing_count, s.last_status_date,
       s.host
FROM origin_visit_stats AS s
WHERE s.visit_type = %(visit_type)s AND s.enabled AND s.cooldown_until IS NULL
  AND s.last_successful IS NULL AND s.last_update IS NOT NULL
  AND (%(lister_id)s::bigint IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = %(lister_id)s::bigint AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.is_fork, s.last_update
LIMIT %(limit)s FOR UPDATE OF s SKIP LOCKED;

-- name: pick_already_visited_order_by_lag
SELECT s.ctid AS tid, s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.listing_count, s.last_status_date,
       s.host
FROM origin_visit_stats AS s
WHERE s.visit_type = %(visit_type)s AND s.enabled AND s.cooldown_until IS NULL
  AND s.last_update > s.last_successful
  AND (%(lister_id)s::bigint IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = %(lister_id)s::bigint AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, (s.last_update - s.last_successful) DESC
LIMIT %(limit)s FOR UPDATE OF s SKIP LOCKED;

-- name: pick_without_last_update_never_loaded
SELECT s.ctid AS tid, s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.listing_count, s.last_status_date,
       s.host
FROM origin_visit_stats AS s
WHERE s.visit_type = %(visit_type)s AND s.enabled AND s.cooldown_until IS NULL
  AND s.last_update IS NULL AND s.last_successful IS NULL
  AND (%(lister_id)s::bigint IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = %(lister_id)s::bigint AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.first_seen
LIMIT %(limit)s FOR UPDATE OF s SKIP LOCKED;

-- name: pick_without_last_update_loaded_once
-- "ordered by date of last visit; clamped to $minimum_interval (oldest first)"
SELECT s.ctid AS tid, s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.listing_count, s.last_status_date,
       s.host
FROM origin_visit_stats AS s
WHERE s.visit_type = %(visit_type)s AND s.enabled AND s.cooldown_until IS NULL
  AND s.last_update IS NULL AND s.successful_visits = 1 AND s.last_visit <= %(visited_before)s
  AND (%(lister_id)s::bigint IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = %(lister_id)s::bigint AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.last_visit
LIMIT %(limit)s FOR UPDATE OF s SKIP LOCKED;

-- name: pick_without_last_update_loaded_more
-- "order by next run target", those that are due
SELECT s.ctid AS tid, s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.listing_count, s.last_status_date,
       s.host
FROM origin_visit_stats AS s
WHERE s.visit_type = %(visit_type)s AND s.enabled AND s.cooldown_until IS NULL
  AND s.last_update IS NULL AND s.successful_visits > 1 AND s.next_visit_target <= %(now)s
  AND (%(lister_id)s::bigint IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = %(lister_id)s::bigint AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.next_visit_target
LIMIT %(limit)s FOR UPDATE OF s SKIP LOCKED;

-- name: pick_oldest_scheduled_first
SELECT s.ctid AS tid, s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.listing_count, s.last_status_date,
       s.host
FROM origin_visit_stats AS s
WHERE s.visit_type = %(visit_type)s AND s.enabled AND s.cooldown_until IS NULL
  AND (%(lister_id)s::bigint IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = %(lister_id)s::bigint AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.last_scheduled NULLS FIRST
LIMIT %(limit)s FOR UPDATE OF s SKIP LOCKED;

-- name: pick_stop_after_success
SELECT s.ctid AS tid, s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.listing_count, s.last_status_date,
       s.host
FROM origin_visit_stats AS s
WHERE s.visit_type = %(visit_type)s AND s.enabled AND s.cooldown_until IS NULL AND s.last_successful IS NULL
  AND (%(lister_id)s::bigint IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = %(lister_id)s::bigint AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.last_scheduled NULLS FIRST
LIMIT %(limit)s FOR UPDATE OF s SKIP LOCKED;

-- name: pick_change_rate_optimal_never_visited
SELECT s.ctid AS tid, s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.listing_count, s.last_status_date,
       s.host
FROM origin_visit_stats AS s
WHERE s.visit_type = %(visit_type)s AND s.enabled AND s.cooldown_until IS NULL AND s.last_successful IS NULL
  AND (%(lister_id)s::bigint IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = %(lister_id)s::bigint AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.first_seen
LIMIT %(limit)s FOR UPDATE OF s SKIP LOCKED;

-- name: pick_change_rate_optimal_due
-- by the time each origin's optimal revisit falls due, due or not: the capacity is spent in this order
SELECT s.ctid AS tid, s.url, s.lister_id, s.extra_loader_arguments, s.last_update, s.listing_count, s.last_status_date,
       s.host
FROM origin_visit_stats AS s
WHERE s.visit_type = %(visit_type)s AND s.enabled AND s.cooldown_until IS NULL AND s.last_successful IS NOT NULL
  AND (%(lister_id)s::bigint IS NULL OR EXISTS (
      SELECT 1 FROM listed_origin AS o WHERE o.lister_id = %(lister_id)s::bigint AND o.url = s.url AND o.visit_type = s.visit_type))
ORDER BY s.visit_type, s.next_optimal_visit
LIMIT %(limit)s FOR UPDATE OF s SKIP LOCKED;

-- name: grab_picked
-- one pick_* query (in place of the braced word pick, without its semicolon) and the marking of what it
-- locked, in one statement: the update finds each row by its tuple id, which
-- the lock keeps valid; rows come back in the pick's order
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

-- Metrics per (lister, visit type), at the times of domain/origin_metrics.py (MetricClock, lag_of): lags
-- in whole hours below a week (to lag_hour, the hour at or after `now`, in hours since 1970), in whole days
-- beyond (to lag_day); activity to the minute (visits in (since, until], `now`'s minute less the window and
-- `now`'s minute); in flight at `now` itself. Activity (in flight; visits of any outcome (last_status_date),
-- eventful and uneventful) counts an origin once, for the listing its loader gets (s.lister_id), so that it
-- adds up over listers. Origins one lister lists are counted from the cells their writes keep up to date
-- (origin_metric_cell, see migrations/0012 and 0013); recounted in full only on demand (single_listed_metrics, which
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
-- every cell counted again from the scheduling rows (with single_listed_metrics: the full recount)
DELETE FROM origin_metric_cell;
INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
SELECT s.lister_id, s.visit_type, c.kind, c.cell, count(*)
FROM origin_visit_stats AS s
CROSS JOIN LATERAL origin_metric_cells(s.enabled, s.last_update, s.last_successful, s.last_status_date,
                                       s.last_scheduled, s.cooldown_until, s.last_eventful, s.last_uneventful,
                                       %(horizon)s) AS c
WHERE s.listing_count = 1
GROUP BY 1, 2, 3, 4;

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
INSERT INTO origin_metrics (lister_id, visit_type, computed_at, origins_known, origins_enabled, origins_never_visited,
                            origins_with_pending_changes, lag_histogram, lag_max, visits_in_flight, visits_last_hour,
                            eventful_visits_last_hour, uneventful_visits_last_hour, origins_never_successful)
VALUES (%(lister_id)s, %(visit_type)s, %(computed_at)s, %(origins_known)s, %(origins_enabled)s,
        %(origins_never_visited)s, %(origins_with_pending_changes)s, %(lag_histogram)s::jsonb, %(lag_max)s,
        %(visits_in_flight)s, %(visits_last_hour)s, %(eventful_visits_last_hour)s, %(uneventful_visits_last_hour)s,
        %(origins_never_successful)s)
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
WHERE (%(lister_id)s::bigint IS NULL OR m.lister_id = %(lister_id)s::bigint)
  AND (%(visit_type)s::text IS NULL OR m.visit_type = %(visit_type)s::text)
ORDER BY l.name, l.instance_name, m.visit_type;

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
-- one pick_* query with host_filter (in place of the braced word pick, without its semicolon): what it
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
