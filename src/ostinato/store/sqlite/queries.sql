-- Named queries of the SQLite store. Parameters are :named; arrays are passed
-- as JSON text and read with json_each. `now` always comes from the caller.

-- name: insert_task_type
INSERT INTO task_type (type, description, backend_name, default_interval, min_interval, max_interval,
                       backoff_factor, max_queue_length, num_retries, retry_delay)
VALUES (:type, :description, :backend_name, :default_interval, :min_interval, :max_interval,
        :backoff_factor, :max_queue_length, :num_retries, :retry_delay);

-- name: get_task_type
SELECT * FROM task_type WHERE type = :type;

-- name: list_task_types
SELECT * FROM task_type ORDER BY type;

-- name: task_types_in
SELECT * FROM task_type WHERE type IN (SELECT value FROM json_each(:types));

-- name: find_pending_duplicates
-- keys: JSON array of [type, arguments, policy, priority]
SELECT t.* FROM json_each(:keys) AS k
JOIN task AS t
  ON t.type = k.value ->> 0
 AND t.arguments = k.value ->> 1
 AND t.status = 'next_run_not_scheduled'
 AND t.policy = k.value ->> 2
 AND t.priority IS k.value ->> 3;

-- name: insert_tasks
-- rows: JSON array of [type, arguments, next_run, current_interval, policy, retries_left, priority]
INSERT INTO task (type, arguments, next_run, current_interval, status, policy, retries_left, priority)
SELECT r.value ->> 0, r.value ->> 1, r.value ->> 2, r.value ->> 3, 'next_run_not_scheduled',
       r.value ->> 4, r.value ->> 5, r.value ->> 6
FROM json_each(:rows) AS r
ORDER BY r.key
RETURNING *;

-- name: tasks_in
SELECT * FROM task WHERE id IN (SELECT value FROM json_each(:ids)) ORDER BY id;

-- name: peek_ready_tasks
SELECT * FROM task
WHERE type = :type AND status = 'next_run_not_scheduled' AND priority IS NULL AND next_run <= :now
ORDER BY next_run LIMIT :limit;

-- name: peek_ready_priority_tasks
SELECT * FROM task
WHERE type = :type AND status = 'next_run_not_scheduled' AND priority = :priority AND next_run <= :now
ORDER BY next_run LIMIT :limit;

-- name: grab_ready_tasks
UPDATE task SET status = 'next_run_scheduled'
WHERE id IN (
    SELECT id FROM task
    WHERE type = :type AND status = 'next_run_not_scheduled' AND priority IS NULL AND next_run <= :now
    ORDER BY next_run LIMIT :limit)
RETURNING *;

-- name: grab_ready_priority_tasks
UPDATE task SET status = 'next_run_scheduled'
WHERE id IN (
    SELECT id FROM task
    WHERE type = :type AND status = 'next_run_not_scheduled' AND priority = :priority AND next_run <= :now
    ORDER BY next_run LIMIT :limit)
RETURNING *;

-- name: insert_scheduled_runs
INSERT INTO task_run (task, backend_id, scheduled, status, metadata)
SELECT value, :backend_id, :now, 'scheduled', '{}' FROM json_each(:ids) ORDER BY key
RETURNING *;

-- name: disable_tasks
UPDATE task SET status = 'disabled'
WHERE id IN (SELECT value FROM json_each(:ids)) AND status <> 'disabled';

-- name: respawn_tasks
-- back to pending; retries refilled from the task type
UPDATE task SET status = 'next_run_not_scheduled',
                next_run = coalesce(:next_run, next_run),
                retries_left = coalesce((SELECT num_retries FROM task_type tt WHERE tt.type = task.type), 0)
WHERE id IN (SELECT value FROM json_each(:ids)) AND status IN ('completed', 'disabled');

-- name: runs_with_tasks
SELECT r.id AS run_id, r.task AS run_task, r.backend_id, r.scheduled, r.started, r.ended, r.metadata,
       r.status AS run_status, t.*
FROM task_run AS r JOIN task AS t ON t.id = r.task
WHERE r.id IN (SELECT value FROM json_each(:ids));

-- name: update_run
UPDATE task_run SET status = :status, backend_id = :backend_id, started = :started, ended = :ended,
                    metadata = :metadata
WHERE id = :id AND status IN ('scheduled', 'started');

-- name: update_task_after_run
UPDATE task SET status = :status, next_run = :next_run, current_interval = :current_interval,
                retries_left = :retries_left
WHERE id = :id AND status = 'next_run_scheduled';

-- name: stale_in_flight_runs
SELECT id FROM task_run
WHERE status IN ('scheduled', 'started') AND scheduled < :cutoff AND coalesce(started, scheduled) < :cutoff
ORDER BY scheduled LIMIT :limit;

-- name: in_flight_runs_of
SELECT id FROM task_run
WHERE status IN ('scheduled', 'started') AND backend_id IN (SELECT value FROM json_each(:backend_ids));

-- name: in_flight_backend_ids
SELECT DISTINCT backend_id FROM task_run
WHERE status IN ('scheduled', 'started') AND backend_id >= :prefix AND substr(backend_id, 1, length(:prefix)) = :prefix;

-- name: count_tasks
SELECT type, status, count(*) AS n FROM task GROUP BY type, status;

-- name: archivable_tasks
SELECT t.* FROM task AS t
WHERE t.status IN ('completed', 'disabled') AND t.id > :after_id AND t.next_run < :before
  AND NOT EXISTS (
      SELECT 1 FROM task_run AS r
      WHERE r.task = t.id AND (r.ended >= :before OR r.status IN ('scheduled', 'started')))
ORDER BY t.id LIMIT :limit;

-- name: runs_of_tasks
SELECT * FROM task_run WHERE task IN (SELECT value FROM json_each(:ids)) ORDER BY task, id;

-- name: delete_runs_of_tasks
DELETE FROM task_run WHERE task IN (SELECT value FROM json_each(:ids));

-- name: delete_tasks
DELETE FROM task WHERE id IN (SELECT value FROM json_each(:ids));

-- name: search_tasks
-- every filter is optional (NULL: no filter); lists are JSON arrays
SELECT * FROM task
WHERE id > :after_id
  AND (:type IS NULL OR type = :type)
  AND (:statuses IS NULL OR status IN (SELECT value FROM json_each(:statuses)))
  AND (:policy IS NULL OR policy = :policy)
  AND (:priorities IS NULL OR coalesce(priority, 'none') IN (SELECT value FROM json_each(:priorities)))
  AND (:before IS NULL OR next_run <= :before)
ORDER BY id LIMIT :limit;

-- name: search_task_runs
SELECT * FROM task_run
WHERE id > :after_id
  AND (:task IS NULL OR task = :task)
  AND (:statuses IS NULL OR status IN (SELECT value FROM json_each(:statuses)))
ORDER BY id LIMIT :limit;

-- name: get_lister
SELECT * FROM lister WHERE name = :name AND instance_name = :instance_name;

-- name: insert_lister
INSERT INTO lister (name, instance_name, current_state, updated)
VALUES (:name, :instance_name, '{}', :now)
ON CONFLICT (name, instance_name) DO NOTHING;

-- name: list_listers
SELECT * FROM lister ORDER BY name, instance_name;

-- name: update_lister
-- optimistic: only if nobody changed it since it was read
UPDATE lister SET current_state = :current_state, last_listing_finished_at = :last_listing_finished_at, updated = :now
WHERE id = :id AND updated = :expected_updated
RETURNING *;

-- name: upsert_listed_origins
-- rows: JSON array of [url, visit_type, extra_loader_arguments, enabled, last_update, is_fork, forked_from_url]
INSERT INTO listed_origin (lister_id, url, visit_type, extra_loader_arguments, enabled, first_seen, last_seen,
                           last_update, is_fork, forked_from_url)
SELECT :lister_id, r.value ->> 0, r.value ->> 1, r.value ->> 2, r.value ->> 3, :now, :now,
       r.value ->> 4, r.value ->> 5, r.value ->> 6
FROM json_each(:rows) AS r WHERE true
ON CONFLICT (lister_id, url, visit_type) DO UPDATE SET
    extra_loader_arguments = excluded.extra_loader_arguments,
    enabled = excluded.enabled,
    last_seen = excluded.last_seen,
    last_update = excluded.last_update,
    is_fork = excluded.is_fork,
    forked_from_url = excluded.forked_from_url;

-- name: reset_failures_of_relisted
-- "disabled until the next run of the lister": an origin this lister had disabled and
-- lists again, enabled, starts over with no failures
-- keys: JSON array of [url, visit_type, enabled]
UPDATE origin_visit_stats SET failure_count = 0
WHERE failure_count > 0 AND (url, visit_type) IN (
    SELECT o.url, o.visit_type FROM json_each(:keys) AS k
    JOIN listed_origin AS o ON o.lister_id = :lister_id AND o.url = k.value ->> 0 AND o.visit_type = k.value ->> 1
    WHERE NOT o.enabled AND k.value ->> 2);

-- name: search_listed_origins
SELECT * FROM listed_origin
WHERE (:url IS NULL OR url = :url)
  AND (:lister_id IS NULL OR lister_id = :lister_id)
  AND (url, visit_type, lister_id) > (:after_url, :after_type, :after_lister)
ORDER BY url, visit_type, lister_id LIMIT :limit;

-- name: visit_stats_in
SELECT s.* FROM json_each(:keys) AS k
JOIN origin_visit_stats AS s ON s.url = k.value ->> 0 AND s.visit_type = k.value ->> 1
ORDER BY k.key;

-- name: upsert_visit_stats
INSERT INTO origin_visit_stats (url, visit_type, last_visit, last_visit_status, last_successful, last_snapshot,
                                last_eventful, last_uneventful, failure_count, last_scheduled, next_visit_target,
                                last_status_date)
VALUES (:url, :visit_type, :last_visit, :last_visit_status, :last_successful, :last_snapshot,
        :last_eventful, :last_uneventful, :failure_count, :last_scheduled, :next_visit_target, :last_status_date)
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
    last_status_date = excluded.last_status_date;

-- name: disable_listed_origins
UPDATE listed_origin SET enabled = 0
WHERE enabled AND (url, visit_type) IN (SELECT value ->> 0, value ->> 1 FROM json_each(:keys));
