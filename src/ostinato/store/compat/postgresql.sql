-- The compat role's named queries for PostgreSQL (see store/compat/flow.py); the same names as
-- sqlite.sql.

-- name: existing_tasks
SELECT id FROM task WHERE id = ANY(%(ids)s::bigint[]);

-- name: open_grabbed_runs
-- each task's oldest run a grab recorded, with no executor yet (task_run_task_idx)
SELECT task, min(id) AS id FROM task_run
WHERE task = ANY(%(ids)s::bigint[]) AND status = 'scheduled' AND backend_id IS NULL
GROUP BY task;

-- name: adopt_grabbed_runs
-- rows: [{id, backend_id, scheduled, metadata}], ids: their ids: each run a grab recorded takes its executor's
-- id; one an executor took meanwhile (a concurrent schedule) is left as it is, and not answered. The runs by
-- their primary key, the rows hashed: a plan whatever the statistics say of task_run (run outside the
-- index-driven batch settings, which would make it a nested loop over the rows)
UPDATE task_run AS t SET backend_id = r.backend_id, scheduled = r.scheduled, metadata = coalesce(r.metadata, 'null')
FROM json_to_recordset(%(rows)s::json) AS r(id bigint, backend_id text, scheduled timestamptz, metadata jsonb)
WHERE t.id = ANY(%(ids)s::bigint[]) AND t.id = r.id AND t.status = 'scheduled' AND t.backend_id IS NULL
RETURNING t.*;

-- name: insert_runs
-- rows: [{task, backend_id, scheduled, metadata}], added in the order given
INSERT INTO task_run (task, backend_id, scheduled, status, metadata)
SELECT r.task, r.backend_id, r.scheduled, 'scheduled', coalesce(r.metadata, 'null')
FROM ROWS FROM (json_to_recordset(%(rows)s::json) AS (task bigint, backend_id text, scheduled timestamptz, metadata jsonb))
     WITH ORDINALITY AS r(task, backend_id, scheduled, metadata, ord)
ORDER BY r.ord
RETURNING *;

-- name: runs_by_backend_id
SELECT * FROM task_run WHERE backend_id = ANY(%(backend_ids)s::text[]) ORDER BY id;

-- name: overwrite_task_status
UPDATE task SET status = %(status)s, next_run = coalesce(%(next_run)s, next_run)
WHERE id = ANY(%(ids)s::bigint[])
  AND (%(except_completed_before)s::timestamptz IS NULL
       OR (status <> 'completed' AND next_run < %(except_completed_before)s::timestamptz));

-- name: runs_to_archive
SELECT r.id AS run_id, r.task AS run_task, r.backend_id, r.scheduled, r.started, r.ended, r.metadata,
       r.status AS run_status, t.id, t.type, t.arguments, t.next_run, t.current_interval, t.policy, t.status,
       t.retries_left, t.priority
FROM task_run AS r JOIN task AS t ON t.id = r.task
WHERE (r.task, r.id) > (%(after_task)s, %(after_run)s)
  AND ((t.policy = 'oneshot' AND t.status IN ('completed', 'disabled'))
       OR (t.policy = 'recurring' AND t.status = 'disabled'))
  AND ((r.started >= %(after)s AND r.started < %(before)s)
       OR (r.started IS NULL AND r.scheduled >= %(after)s AND r.scheduled < %(before)s))
  -- not a run a grab opened that no executor took (the protocol's store has none such)
  AND NOT (r.backend_id IS NULL AND r.status = 'scheduled')
ORDER BY r.task, r.id LIMIT %(limit)s;

-- name: delete_runs
DELETE FROM task_run WHERE id = ANY(%(run_ids)s::bigint[]);

-- name: delete_tasks_without_runs
-- of these tasks, those no run is left of
DELETE FROM task AS t
WHERE t.id = ANY(%(task_ids)s::bigint[]) AND NOT EXISTS (SELECT 1 FROM task_run AS r WHERE r.task = t.id);

-- name: get_compat_records
SELECT key, value FROM compat_record WHERE namespace = %(namespace)s AND key = ANY(%(keys)s::text[]);

-- name: list_compat_records
SELECT key, value FROM compat_record WHERE namespace = %(namespace)s AND key > %(after)s ORDER BY key LIMIT %(limit)s;

-- name: put_compat_record
INSERT INTO compat_record (namespace, key, value) VALUES (%(namespace)s, %(key)s, %(value)s::jsonb)
ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value;

-- name: delete_compat_record
DELETE FROM compat_record WHERE namespace = %(namespace)s AND key = %(key)s;

-- name: protocol_cooldowns
-- the protocol's cooldowns, each computed from the grab's own bounds (NULL: not applied), as conditions on
-- the visit stats s: what protocol_walk and grab_listings hold in place of the braced word cooldowns
AND (%(absolute_since)s::timestamptz IS NULL OR s.last_scheduled IS NULL
     OR s.last_scheduled < %(absolute_since)s::timestamptz)
AND (%(scheduled_since)s::timestamptz IS NULL OR s.last_scheduled IS NULL
     OR s.last_scheduled < GREATEST(%(scheduled_since)s::timestamptz, s.last_visit))
AND (%(failed_since)s::timestamptz IS NULL OR s.last_visit_status IS DISTINCT FROM 'failed'
     OR s.last_visit < %(failed_since)s::timestamptz)
AND (%(not_found_since)s::timestamptz IS NULL OR s.last_visit_status IS DISTINCT FROM 'not_found'
     OR s.last_visit < %(not_found_since)s::timestamptz)

-- name: protocol_walk
-- The swh protocol's grab of enabled listings (see domain/listing_grabs.py): a walk of the origins
-- in the index of its policy (in braces below: a walk_* fragment, its filter and its ORDER BY), each
-- cooldown computed from the grab's own bounds (protocol_cooldowns, in place below), at most %(walk)s origins,
-- locked by a real grab (grab_lock, in place below; a dry run locks nothing); with the listings of each origin
-- the grab takes (none: NULL). An origin Ostinato's own grab holds (its cooldown) is left out.
WITH walked AS MATERIALIZED (
    SELECT s.url, s.visit_type, s.last_scheduled, s.last_successful, s.first_seen AS first_listed, s.oldest_update,
           s.last_update AS newest_update, s.queue_position, s.ctid
    FROM origin_visit_stats AS s
    WHERE s.visit_type = %(visit_type)s AND s.enabled AND s.cooldown_until IS NULL
      {cooldowns}
      -- the grab's listers: an origin none of them lists enabled is not walked (nor locked); a probe of
      -- listed_origin's primary key per origin walked (a scalar subquery: an EXISTS may be planned as a hash
      -- of every listing of the listers, which grows with them)
      AND (%(lister_ids)s::bigint[] IS NULL OR (
          SELECT true FROM listed_origin AS l WHERE l.lister_id = ANY(%(lister_ids)s::bigint[]) AND l.url = s.url
                                                AND l.visit_type = s.visit_type AND l.enabled LIMIT 1))
      {walk}
    LIMIT %(walk)s
    {lock}
)
SELECT w.url, w.visit_type, w.last_scheduled, w.last_successful, w.first_listed, w.oldest_update, w.newest_update,
       w.queue_position, o.lister_id, o.extra_loader_arguments, o.enabled, o.first_seen, o.last_seen, o.last_update,
       o.is_fork, o.forked_from_url, w.ctid::text AS tid
FROM walked AS w
LEFT JOIN listed_origin AS o ON o.url = w.url AND o.visit_type = w.visit_type AND o.enabled
     AND (%(lister_ids)s::bigint[] IS NULL OR o.lister_id = ANY(%(lister_ids)s::bigint[]));

-- name: walk_oldest_scheduled_first
-- visit_oldest_scheduled_idx
ORDER BY s.last_scheduled NULLS FIRST

-- name: walk_first_visits_after_listing
-- visit_oldest_scheduled_idx: the lister's listings are those joined
AND (s.last_scheduled IS NULL OR s.last_scheduled < %(scheduled_before)s::timestamptz)
ORDER BY s.last_scheduled NULLS FIRST

-- name: walk_stop_after_success
-- protocol_stop_after_success_idx
AND s.last_visit_status IS DISTINCT FROM 'successful'
ORDER BY s.oldest_update NULLS LAST, s.first_seen

-- name: walk_never_visited_oldest_update_first
-- protocol_never_visited_idx
AND s.last_snapshot IS NULL AND s.oldest_update IS NOT NULL
ORDER BY s.oldest_update

-- name: walk_already_visited_order_by_lag
-- visit_by_lag_idx
AND s.last_update > s.last_successful AND s.last_snapshot IS NOT NULL
ORDER BY s.last_update - s.last_successful DESC

-- name: walk_origins_without_last_update
-- protocol_without_update_idx
AND s.update_missing
ORDER BY s.queue_position NULLS FIRST, s.first_seen

-- name: grab_listings
-- The swh protocol's grab of disabled listings (see domain/listing_grabs.py): a scan of the
-- visit type's listings with their visit stats, as the protocol's own store does, each cooldown
-- computed from the grab's own bounds (NULL: not applied); a listing_order_* fragment follows,
-- then listing_limit. Enabled listings are walked (protocol_walk).
SELECT o.*, s.queue_position, s.ctid::text AS tid
FROM listed_origin AS o
JOIN origin_visit_stats AS s ON s.url = o.url AND s.visit_type = o.visit_type
WHERE o.visit_type = %(visit_type)s AND o.enabled = %(enabled)s
  AND (%(lister_ids)s::bigint[] IS NULL OR o.lister_id = ANY(%(lister_ids)s::bigint[]))
  {cooldowns}
  AND (%(sample_percent)s::float8 IS NULL OR random() * 100 < %(sample_percent)s::float8)

-- name: listing_order_oldest_scheduled_first
ORDER BY s.last_scheduled NULLS FIRST, o.url, o.lister_id

-- name: listing_order_stop_after_success
AND s.last_visit_status IS DISTINCT FROM 'successful'
ORDER BY o.last_update NULLS LAST, o.first_seen, o.url, o.lister_id

-- name: listing_order_never_visited_oldest_update_first
AND s.last_snapshot IS NULL AND o.last_update IS NOT NULL
ORDER BY o.last_update, o.url, o.lister_id

-- name: listing_order_already_visited_order_by_lag
AND s.last_snapshot IS NOT NULL AND o.last_update > s.last_successful
ORDER BY o.last_update - s.last_successful DESC, o.url, o.lister_id

-- name: listing_order_origins_without_last_update
AND o.last_update IS NULL
ORDER BY queue_position NULLS FIRST, o.first_seen, o.url, o.lister_id

-- name: listing_order_first_visits_after_listing
AND (s.last_scheduled IS NULL OR s.last_scheduled < %(scheduled_before)s::timestamptz)
ORDER BY s.last_scheduled NULLS FIRST, o.url, o.lister_id

-- name: listing_limit
LIMIT %(count)s

-- name: grab_lock
-- a real grab locks the stats rows it walks (SKIP LOCKED: a concurrent grab walks past them and takes
-- others); a dry run locks nothing, so it neither writes nor keeps a concurrent grab from them
FOR UPDATE OF s SKIP LOCKED

-- name: protocol_marks_count_nothing
-- set at the start of a grab of enabled listings: the cooldowns it frees are over (no later pass counts
-- them) and its marking sets last_scheduled of origins with no cooldown (no cell counts it): the metric
-- triggers leave the transaction alone, as they do Ostinato's own grab
SET LOCAL ostinato.metrics_by_statement = on;

-- name: mark_listings_scheduled
-- tids: the tuple ids of the stats the grab locked (the lock keeps them valid); last_scheduled only moves forward
UPDATE origin_visit_stats AS s SET last_scheduled = %(now)s
WHERE s.ctid = ANY(%(tids)s::tid[]) AND (s.last_scheduled IS NULL OR s.last_scheduled < %(now)s);

-- name: raise_queue_position
-- the visit type's queue position only moves forward
INSERT INTO compat_record (namespace, key, value)
VALUES (%(queue_records)s, %(visit_type)s, jsonb_build_object('position', %(position)s::bigint))
ON CONFLICT (namespace, key) DO UPDATE SET
    value = jsonb_build_object('position', GREATEST((compat_record.value ->> 'position')::bigint, %(position)s::bigint));

-- name: merge_visit_stats
-- rows: a JSON array of the protocol's visit stats, one per origin (domain.listing_grabs.fold_protocol_stats;
-- snapshots in hex), one statement a batch: each field given replaces the stored one; Ostinato's guard of
-- the newest status (last_status_date) follows the newest last_visit forward; an origin with no row gets
-- one (not listed: disabled)
INSERT INTO origin_visit_stats AS s (url, visit_type, last_visit, last_visit_status, last_successful, last_snapshot,
                                     last_scheduled, queue_position, position_offset, successive_visits,
                                     last_status_date)
SELECT r.url, r.visit_type, r.last_visit, r.last_visit_status, r.last_successful, decode(r.last_snapshot, 'hex'),
       r.last_scheduled, r.queue_position, r.position_offset, r.successive_visits, r.newest_visit
FROM json_to_recordset(%(rows)s::json) AS r(
    url text, visit_type text, last_visit timestamptz, last_visit_status text, last_successful timestamptz,
    last_snapshot text, last_scheduled timestamptz, queue_position bigint, position_offset integer,
    successive_visits integer, newest_visit timestamptz)
-- in key order: the batch's entries land side by side in the primary key
ORDER BY r.url, r.visit_type
ON CONFLICT (url, visit_type) DO UPDATE SET
    last_visit = coalesce(excluded.last_visit, s.last_visit),
    last_visit_status = coalesce(excluded.last_visit_status, s.last_visit_status),
    last_successful = coalesce(excluded.last_successful, s.last_successful),
    last_snapshot = coalesce(excluded.last_snapshot, s.last_snapshot),
    last_scheduled = coalesce(excluded.last_scheduled, s.last_scheduled),
    queue_position = coalesce(excluded.queue_position, s.queue_position),
    position_offset = coalesce(excluded.position_offset, s.position_offset),
    successive_visits = coalesce(excluded.successive_visits, s.successive_visits),
    last_status_date = GREATEST(s.last_status_date, excluded.last_status_date)
-- stats sent again as they are (a journal replayed, an import run again) write nothing
WHERE (s.last_visit, s.last_visit_status, s.last_successful, s.last_snapshot, s.last_scheduled, s.queue_position,
       s.position_offset, s.successive_visits, s.last_status_date)
      IS DISTINCT FROM (coalesce(excluded.last_visit, s.last_visit),
                        coalesce(excluded.last_visit_status, s.last_visit_status),
                        coalesce(excluded.last_successful, s.last_successful),
                        coalesce(excluded.last_snapshot, s.last_snapshot),
                        coalesce(excluded.last_scheduled, s.last_scheduled),
                        coalesce(excluded.queue_position, s.queue_position),
                        coalesce(excluded.position_offset, s.position_offset),
                        coalesce(excluded.successive_visits, s.successive_visits),
                        GREATEST(s.last_status_date, excluded.last_status_date));

-- name: protocol_visit_stats
-- the protocol's visit stats of these origins, those with a row
SELECT s.url, s.visit_type, s.last_visit, s.last_visit_status, s.last_successful, s.last_snapshot, s.last_scheduled,
       s.queue_position, s.position_offset, s.successive_visits
FROM unnest(%(urls)s::text[], %(visit_types)s::text[]) AS k(url, visit_type)
JOIN origin_visit_stats AS s ON s.url = k.url AND s.visit_type = k.visit_type;

-- name: listings_page
-- the protocol's pages of listings: by (lister, url), after the previous page's last (lister, url) (an index
-- walk of the listings' primary key, or of the URL index for the URLs asked)
SELECT * FROM listed_origin
WHERE (%(lister_id)s::bigint IS NULL OR lister_id = %(lister_id)s::bigint)
  AND (%(urls)s::text[] IS NULL OR url = ANY(%(urls)s::text[]))
  AND (%(enabled)s::boolean IS NULL OR enabled = %(enabled)s::boolean)
  AND (lister_id, url) > (%(after_lister)s::bigint, %(after_url)s::text)
ORDER BY lister_id, url, visit_type
LIMIT %(limit)s;

-- name: lister_visit_types
SELECT DISTINCT visit_type FROM listed_origin WHERE lister_id = %(lister_id)s ORDER BY visit_type;

-- name: count_listings
-- the protocol's metrics, over the listings: visited means a snapshot was recorded
SELECT o.lister_id, o.visit_type, count(*) AS origins_known,
       count(*) FILTER (WHERE o.enabled) AS origins_enabled,
       count(*) FILTER (WHERE o.enabled AND s.last_snapshot IS NULL) AS origins_never_visited,
       count(*) FILTER (WHERE o.enabled AND o.last_update > s.last_successful) AS origins_with_pending_changes
FROM listed_origin AS o
LEFT JOIN origin_visit_stats AS s ON s.url = o.url AND s.visit_type = o.visit_type
WHERE %(lister_id)s::bigint IS NULL OR o.lister_id = %(lister_id)s::bigint
GROUP BY o.lister_id, o.visit_type
ORDER BY o.lister_id, o.visit_type;
