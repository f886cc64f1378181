-- The compat role's named queries for SQLite (see store/compat/flow.py); the same names as
-- postgresql.sql.

-- name: existing_tasks
SELECT id FROM task WHERE id IN (SELECT value FROM json_each(:ids));

-- name: open_grabbed_runs
-- each task's oldest run a grab recorded, with no executor yet (task_run_task_idx)
SELECT task, min(id) AS id FROM task_run
WHERE task IN (SELECT value FROM json_each(:ids)) AND status = 'scheduled' AND backend_id IS NULL
GROUP BY task;

-- name: adopt_grabbed_runs
-- rows: [[id, task, backend_id, scheduled, metadata]] (ids: unused, SQLite probes each row's id): each run
-- a grab recorded takes its executor's id
UPDATE task_run AS t SET backend_id = r.value ->> 2, scheduled = r.value ->> 3, metadata = coalesce(r.value ->> 4, 'null')
FROM json_each(:rows) AS r
WHERE t.id = r.value ->> 0 AND t.status = 'scheduled' AND t.backend_id IS NULL
RETURNING id, task, backend_id, scheduled, started, ended, metadata, status;

-- name: insert_runs
-- rows: [[id, task, backend_id, scheduled, metadata]], added in the order given
INSERT INTO task_run (task, backend_id, scheduled, status, metadata)
SELECT r.value ->> 1, r.value ->> 2, r.value ->> 3, 'scheduled', coalesce(r.value ->> 4, 'null')
FROM json_each(:rows) AS r WHERE true
ORDER BY r.key
RETURNING *;

-- name: runs_by_backend_id
SELECT * FROM task_run WHERE backend_id IN (SELECT value FROM json_each(:backend_ids)) ORDER BY id;

-- name: overwrite_task_status
UPDATE task SET status = :status, next_run = coalesce(:next_run, next_run)
WHERE id IN (SELECT value FROM json_each(:ids))
  AND (:except_completed_before IS NULL OR (status <> 'completed' AND next_run < :except_completed_before));

-- name: runs_to_archive
-- walks task_run_task_idx (task, then rowid = id) from the previous page's last (task, run)
SELECT r.id AS run_id, r.task AS run_task, r.backend_id, r.scheduled, r.started, r.ended, r.metadata,
       r.status AS run_status, t.*
FROM task_run AS r JOIN task AS t ON t.id = r.task
WHERE (r.task, r.id) > (:after_task, :after_run)
  AND ((t.policy = 'oneshot' AND t.status IN ('completed', 'disabled'))
       OR (t.policy = 'recurring' AND t.status = 'disabled'))
  AND ((r.started >= :after AND r.started < :before)
       OR (r.started IS NULL AND r.scheduled >= :after AND r.scheduled < :before))
  -- not a run a grab opened that no executor took (the protocol's store has none such)
  AND NOT (r.backend_id IS NULL AND r.status = 'scheduled')
ORDER BY r.task, r.id LIMIT :limit;

-- name: delete_runs
DELETE FROM task_run WHERE id IN (SELECT value FROM json_each(:run_ids));

-- name: delete_tasks_without_runs
-- of these tasks, those no run is left of
DELETE FROM task
WHERE id IN (SELECT value FROM json_each(:task_ids)) AND NOT EXISTS (SELECT 1 FROM task_run AS r WHERE r.task = task.id);

-- name: get_compat_records
SELECT key, value FROM compat_record
WHERE namespace = :namespace AND key IN (SELECT value FROM json_each(:keys));

-- name: list_compat_records
SELECT key, value FROM compat_record WHERE namespace = :namespace AND key > :after ORDER BY key LIMIT :limit;

-- name: put_compat_record
INSERT INTO compat_record (namespace, key, value) VALUES (:namespace, :key, :value)
ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value;

-- name: delete_compat_record
DELETE FROM compat_record WHERE namespace = :namespace AND key = :key;

-- name: protocol_cooldowns
-- the protocol's cooldowns, each computed from the grab's own bounds (NULL: not applied), as conditions on
-- the visit stats s: what protocol_walk and grab_listings hold in place of the braced word cooldowns
AND (:absolute_since IS NULL OR s.last_scheduled IS NULL OR s.last_scheduled < :absolute_since)
AND (:scheduled_since IS NULL OR s.last_scheduled IS NULL
     OR s.last_scheduled < max(:scheduled_since, coalesce(s.last_visit, :scheduled_since)))
AND (:failed_since IS NULL OR s.last_visit_status IS NOT 'failed' OR s.last_visit < :failed_since)
AND (:not_found_since IS NULL OR s.last_visit_status IS NOT 'not_found' OR s.last_visit < :not_found_since)

-- name: protocol_walk
-- The swh protocol's grab of enabled listings (see domain/listing_grabs.py): a walk of the origins
-- in the index of its policy (in braces below: a walk_* fragment, its filter and its ORDER BY), each
-- cooldown computed from the grab's own bounds (protocol_cooldowns, in place below), at most :walk origins (the
-- write transaction is the only writer: nothing to lock); with the listings of each origin the grab
-- takes (none: NULL). An origin Ostinato's own grab holds (its cooldown) is left out.
WITH walked AS MATERIALIZED (
    SELECT s.url, s.visit_type, s.last_scheduled, s.last_successful, s.first_seen AS first_listed, s.oldest_update,
           s.last_update AS newest_update, s.queue_position, s.rowid AS tid
    FROM origin_visit_stats AS s
    WHERE s.visit_type = :visit_type AND s.enabled AND s.cooldown_until IS NULL
      {cooldowns}
      -- the grab's listers: an origin none of them lists enabled is not walked
      AND (:lister_ids IS NULL OR EXISTS (
          SELECT 1 FROM listed_origin AS l WHERE l.lister_id IN (SELECT value FROM json_each(:lister_ids))
                                             AND l.url = s.url AND l.visit_type = s.visit_type AND l.enabled))
      {walk}
    LIMIT :walk
    {lock}
)
SELECT w.url, w.visit_type, w.last_scheduled, w.last_successful, w.first_listed, w.oldest_update, w.newest_update,
       w.queue_position, o.lister_id, o.extra_loader_arguments, o.enabled, o.first_seen, o.last_seen, o.last_update,
       o.is_fork, o.forked_from_url, w.tid
FROM walked AS w
LEFT JOIN listed_origin AS o ON o.url = w.url AND o.visit_type = w.visit_type AND o.enabled
     AND (:lister_ids IS NULL OR o.lister_id IN (SELECT value FROM json_each(:lister_ids)));

-- name: walk_oldest_scheduled_first
-- visit_oldest_scheduled_idx (nulls first)
ORDER BY s.last_scheduled

-- name: walk_first_visits_after_listing
-- visit_oldest_scheduled_idx: the lister's listings are those joined
AND (s.last_scheduled IS NULL OR s.last_scheduled < :scheduled_before)
ORDER BY s.last_scheduled

-- name: walk_stop_after_success
-- protocol_stop_after_success_idx
AND s.last_visit_status IS NOT 'successful'
ORDER BY s.oldest_update IS NULL, s.oldest_update, s.first_seen

-- name: walk_never_visited_oldest_update_first
-- protocol_never_visited_idx
AND s.last_snapshot IS NULL AND s.oldest_update IS NOT NULL
ORDER BY s.oldest_update

-- name: walk_already_visited_order_by_lag
-- visit_by_lag_idx
AND s.last_update > s.last_successful AND s.last_snapshot IS NOT NULL
ORDER BY (julianday(s.last_update) - julianday(s.last_successful)) DESC

-- name: walk_origins_without_last_update
-- protocol_without_update_idx
AND s.update_missing
ORDER BY s.queue_position, s.first_seen

-- name: grab_listings
-- The swh protocol's grab of disabled listings (see domain/listing_grabs.py): a scan of the
-- visit type's listings with their visit stats, as the protocol's own store does, each cooldown
-- computed from the grab's own bounds (NULL: not applied); a listing_order_* fragment follows,
-- then listing_limit. Enabled listings are walked (protocol_walk).
SELECT o.*, s.queue_position, s.rowid AS tid
FROM listed_origin AS o
JOIN origin_visit_stats AS s ON s.url = o.url AND s.visit_type = o.visit_type
WHERE o.visit_type = :visit_type AND o.enabled = :enabled
  AND (:lister_ids IS NULL OR o.lister_id IN (SELECT value FROM json_each(:lister_ids)))
  {cooldowns}
  AND (:sample_percent IS NULL OR abs(random() % 1000000) < :sample_percent * 10000)

-- name: listing_order_oldest_scheduled_first
ORDER BY s.last_scheduled NULLS FIRST, o.url, o.lister_id

-- name: listing_order_stop_after_success
AND s.last_visit_status IS NOT 'successful'
ORDER BY o.last_update NULLS LAST, o.first_seen, o.url, o.lister_id

-- name: listing_order_never_visited_oldest_update_first
AND s.last_snapshot IS NULL AND o.last_update IS NOT NULL
ORDER BY o.last_update, o.url, o.lister_id

-- name: listing_order_already_visited_order_by_lag
AND s.last_snapshot IS NOT NULL AND o.last_update > s.last_successful
ORDER BY julianday(o.last_update) - julianday(s.last_successful) DESC, o.url, o.lister_id

-- name: listing_order_origins_without_last_update
AND o.last_update IS NULL
ORDER BY queue_position NULLS FIRST, o.first_seen, o.url, o.lister_id

-- name: listing_order_first_visits_after_listing
AND (s.last_scheduled IS NULL OR s.last_scheduled < :scheduled_before)
ORDER BY s.last_scheduled NULLS FIRST, o.url, o.lister_id

-- name: listing_limit
LIMIT :count

-- name: grab_lock
-- (the write transaction is the only writer: nothing to lock)

-- name: protocol_marks_count_nothing
-- nothing to set: the metric triggers of SQLite run row by row, for the rows whose counted columns changed

-- name: mark_listings_scheduled
-- tids: the rowids of the stats the grab took (the write transaction is the only writer); last_scheduled only
-- moves forward
UPDATE origin_visit_stats SET last_scheduled = :now
WHERE rowid IN (SELECT value FROM json_each(:tids)) AND (last_scheduled IS NULL OR last_scheduled < :now);

-- name: raise_queue_position
-- the visit type's queue position only moves forward
INSERT INTO compat_record (namespace, key, value) VALUES (:queue_records, :visit_type, json_object('position', :position))
ON CONFLICT (namespace, key) DO UPDATE SET
    value = json_object('position', max(coalesce(compat_record.value ->> '$.position', :position), :position));

-- name: merge_visit_stats
-- a record per origin (domain.listing_grabs.fold_protocol_stats), run for each: each field given replaces
-- the stored one; Ostinato's guard of the newest status (last_status_date) follows the newest last_visit
-- forward; an origin with no row gets one (not listed: disabled)
INSERT INTO origin_visit_stats AS s (url, visit_type, last_visit, last_visit_status, last_successful, last_snapshot,
                                     last_scheduled, queue_position, position_offset, successive_visits,
                                     last_status_date)
VALUES (:url, :visit_type, :last_visit, :last_visit_status, :last_successful, :last_snapshot, :last_scheduled,
        :queue_position, :position_offset, :successive_visits, :newest_visit)
ON CONFLICT (url, visit_type) DO UPDATE SET
    last_visit = coalesce(excluded.last_visit, s.last_visit),
    last_visit_status = coalesce(excluded.last_visit_status, s.last_visit_status),
    last_successful = coalesce(excluded.last_successful, s.last_successful),
    last_snapshot = coalesce(excluded.last_snapshot, s.last_snapshot),
    last_scheduled = coalesce(excluded.last_scheduled, s.last_scheduled),
    queue_position = coalesce(excluded.queue_position, s.queue_position),
    position_offset = coalesce(excluded.position_offset, s.position_offset),
    successive_visits = coalesce(excluded.successive_visits, s.successive_visits),
    last_status_date = CASE WHEN s.last_status_date IS NULL OR excluded.last_status_date > s.last_status_date
                            THEN coalesce(excluded.last_status_date, s.last_status_date) ELSE s.last_status_date END
-- stats sent again as they are (a journal replayed, an import run again) write nothing
WHERE (s.last_visit, s.last_visit_status, s.last_successful, s.last_snapshot, s.last_scheduled, s.queue_position,
       s.position_offset, s.successive_visits)
      IS NOT (coalesce(excluded.last_visit, s.last_visit), coalesce(excluded.last_visit_status, s.last_visit_status),
              coalesce(excluded.last_successful, s.last_successful), coalesce(excluded.last_snapshot, s.last_snapshot),
              coalesce(excluded.last_scheduled, s.last_scheduled), coalesce(excluded.queue_position, s.queue_position),
              coalesce(excluded.position_offset, s.position_offset),
              coalesce(excluded.successive_visits, s.successive_visits))
   OR (excluded.last_status_date IS NOT NULL AND (s.last_status_date IS NULL
                                                  OR excluded.last_status_date > s.last_status_date));

-- name: protocol_visit_stats
-- rows: [url, visit_type] (columns urls, visit_types): the protocol's visit stats of these origins, those with a row
SELECT s.url, s.visit_type, s.last_visit, s.last_visit_status, s.last_successful, s.last_snapshot, s.last_scheduled,
       s.queue_position, s.position_offset, s.successive_visits
FROM json_each(:rows) AS k
JOIN origin_visit_stats AS s ON s.url = k.value ->> 0 AND s.visit_type = k.value ->> 1;

-- name: listings_page
-- the protocol's pages of listings: by (lister, url), after the previous page's last (lister, url)
SELECT * FROM listed_origin
WHERE (:lister_id IS NULL OR lister_id = :lister_id)
  AND (:urls IS NULL OR url IN (SELECT value FROM json_each(:urls)))
  AND (:enabled IS NULL OR enabled = :enabled)
  AND (lister_id, url) > (:after_lister, :after_url)
ORDER BY lister_id, url, visit_type
LIMIT :limit;

-- name: lister_visit_types
SELECT DISTINCT visit_type FROM listed_origin WHERE lister_id = :lister_id ORDER BY visit_type;

-- name: count_listings
-- the protocol's metrics, over the listings: visited means a snapshot was recorded
SELECT o.lister_id, o.visit_type, count(*) AS origins_known,
       count(*) FILTER (WHERE o.enabled) AS origins_enabled,
       count(*) FILTER (WHERE o.enabled AND s.last_snapshot IS NULL) AS origins_never_visited,
       count(*) FILTER (WHERE o.enabled AND o.last_update > s.last_successful) AS origins_with_pending_changes
FROM listed_origin AS o
LEFT JOIN origin_visit_stats AS s ON s.url = o.url AND s.visit_type = o.visit_type
WHERE :lister_id IS NULL OR o.lister_id = :lister_id
GROUP BY o.lister_id, o.visit_type
ORDER BY o.lister_id, o.visit_type;
