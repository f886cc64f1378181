-- The compat role's named queries for PostgreSQL (see store/compat/flow.py); the same names as
-- sqlite.sql.

-- name: task_exists
SELECT 1 FROM task WHERE id = %(task)s;

-- name: adopt_grabbed_run
-- the run a grab recorded for the task, with no executor yet, takes this one's id
UPDATE task_run SET backend_id = %(backend_id)s, scheduled = %(scheduled)s, metadata = %(metadata)s::jsonb
WHERE id = (SELECT id FROM task_run
            WHERE task = %(task)s AND status = 'scheduled' AND backend_id IS NULL ORDER BY id LIMIT 1
            FOR UPDATE SKIP LOCKED)
RETURNING *;

-- name: insert_run
INSERT INTO task_run (task, backend_id, scheduled, status, metadata)
VALUES (%(task)s, %(backend_id)s, %(scheduled)s, 'scheduled', %(metadata)s::jsonb)
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
ORDER BY r.task, r.id LIMIT %(limit)s;

-- name: get_compat_records
SELECT key, value FROM compat_record WHERE namespace = %(namespace)s AND key = ANY(%(keys)s::text[]);

-- name: list_compat_records
SELECT key, value FROM compat_record WHERE namespace = %(namespace)s AND key > %(after)s ORDER BY key LIMIT %(limit)s;

-- name: put_compat_record
INSERT INTO compat_record (namespace, key, value) VALUES (%(namespace)s, %(key)s, %(value)s::jsonb)
ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value;

-- name: delete_compat_record
DELETE FROM compat_record WHERE namespace = %(namespace)s AND key = %(key)s;

-- name: grab_listings
-- The swh protocol's grab of listings (see domain/listing_grabs.py): a scan of the visit
-- type's listings with their visit stats, each cooldown computed from the grab's own
-- bounds (NULL: not applied); a listing_order_* fragment follows, then listing_limit.
SELECT o.*, (c.value ->> 'next_visit_queue_position')::bigint AS queue_position
FROM listed_origin AS o
JOIN origin_visit_stats AS s ON s.url = o.url AND s.visit_type = o.visit_type
LEFT JOIN compat_record AS c ON c.namespace = %(position_records)s::text AND c.key = o.visit_type || ' ' || o.url
WHERE o.visit_type = %(visit_type)s AND o.enabled = %(enabled)s
  AND (%(lister_ids)s::bigint[] IS NULL OR o.lister_id = ANY(%(lister_ids)s::bigint[]))
  AND (%(absolute_since)s::timestamptz IS NULL OR s.last_scheduled IS NULL
       OR s.last_scheduled < %(absolute_since)s::timestamptz)
  AND (%(scheduled_since)s::timestamptz IS NULL OR s.last_scheduled IS NULL
       OR s.last_scheduled < GREATEST(%(scheduled_since)s::timestamptz, s.last_visit))
  AND (%(failed_since)s::timestamptz IS NULL OR s.last_visit_status IS DISTINCT FROM 'failed'
       OR s.last_visit < %(failed_since)s::timestamptz)
  AND (%(not_found_since)s::timestamptz IS NULL OR s.last_visit_status IS DISTINCT FROM 'not_found'
       OR s.last_visit < %(not_found_since)s::timestamptz)
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
-- the stats rows are locked (SKIP LOCKED: a concurrent grab takes other listings)
LIMIT %(count)s FOR UPDATE OF s SKIP LOCKED

-- name: mark_listings_scheduled
-- last_scheduled only moves forward
UPDATE origin_visit_stats AS s SET last_scheduled = %(now)s
FROM unnest(%(urls)s::text[], %(visit_types)s::text[]) AS k(url, visit_type)
WHERE s.url = k.url AND s.visit_type = k.visit_type
  AND (s.last_scheduled IS NULL OR s.last_scheduled < %(now)s);

-- name: raise_queue_position
-- the visit type's queue position only moves forward
INSERT INTO compat_record (namespace, key, value)
VALUES (%(queue_records)s, %(visit_type)s, jsonb_build_object('position', %(position)s::bigint))
ON CONFLICT (namespace, key) DO UPDATE SET
    value = jsonb_build_object('position', GREATEST((compat_record.value ->> 'position')::bigint, %(position)s::bigint));

-- name: merge_visit_stats
-- the protocol's upsert: each field given replaces the stored one; Ostinato's guard of the newest
-- status (last_status_date) follows last_visit forward; an origin with no row gets one (not listed: disabled)
INSERT INTO origin_visit_stats AS s (url, visit_type, last_visit, last_visit_status, last_successful, last_snapshot,
                                     last_scheduled, last_status_date)
VALUES (%(url)s, %(visit_type)s, %(last_visit)s, %(last_visit_status)s, %(last_successful)s, %(last_snapshot)s,
        %(last_scheduled)s, %(last_visit)s)
ON CONFLICT (url, visit_type) DO UPDATE SET
    last_visit = coalesce(excluded.last_visit, s.last_visit),
    last_visit_status = coalesce(excluded.last_visit_status, s.last_visit_status),
    last_successful = coalesce(excluded.last_successful, s.last_successful),
    last_snapshot = coalesce(excluded.last_snapshot, s.last_snapshot),
    last_scheduled = coalesce(excluded.last_scheduled, s.last_scheduled),
    last_status_date = GREATEST(s.last_status_date, excluded.last_visit);

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
