-- The tasks role's named queries for SQLite (see store/tasks/flow.py); the same names as postgresql.sql.
-- Parameters are :named; lists are JSON text read with json_each, a batch of parallel columns one
-- JSON array of rows (:rows, a row's values by position). `now` always comes from the caller.

-- name: insert_task_type
INSERT INTO task_type (type, description, backend_name, default_interval, min_interval, max_interval,
                       backoff_factor, max_queue_length, num_retries, retry_delay)
VALUES (:type, :description, :backend_name, :default_interval, :min_interval, :max_interval,
        :backoff_factor, :max_queue_length, :num_retries, :retry_delay);

-- name: get_task_type
SELECT * FROM task_type WHERE type = :type;

-- name: task_type_for_update
SELECT * FROM task_type WHERE type = :type;

-- name: update_task_type
UPDATE task_type SET description = :description, backend_name = :backend_name,
       default_interval = :default_interval, min_interval = :min_interval, max_interval = :max_interval,
       backoff_factor = :backoff_factor, max_queue_length = :max_queue_length, num_retries = :num_retries,
       retry_delay = :retry_delay
WHERE type = :type;

-- name: tasks_of_type
-- a few of a type's tasks, to name them: any few (no order), an index walk on task_dedup_idx (keyed by type first)
SELECT id FROM task WHERE type = :type LIMIT :limit;

-- name: schedules_of_type
SELECT name FROM schedule WHERE task_type = :type ORDER BY name LIMIT :limit;

-- name: delete_task_type
DELETE FROM task_type WHERE type = :type;

-- name: list_task_types
SELECT * FROM task_type ORDER BY type;

-- name: task_types_in
SELECT * FROM task_type WHERE type IN (SELECT value FROM json_each(:types));

-- name: find_pending_duplicates
-- rows: insert_tasks's rows; apart: whether a one-shot task's next_run keeps it apart from the ones with
-- another. Only pending tasks are deduplicated: one created in another status (the swh protocol lets a
-- caller create one disabled) is always new. The dedup index (task_dedup_idx) holds the arguments
-- themselves, which are their own digest here. The columns of grab_ready_tasks's RETURNING list, then the
-- digest, read by position
SELECT t.id, t.type, t.arguments, t.next_run, t.current_interval, t.policy, t.status, t.retries_left, t.priority,
       t.arguments AS arguments_digest
FROM json_each(:rows) AS k
JOIN task AS t
  ON t.type = k.value ->> 0
 AND t.arguments = k.value ->> 1
 AND t.status = 'next_run_not_scheduled' AND k.value ->> 8 = 'next_run_not_scheduled'
 AND t.policy = k.value ->> 5
 AND t.priority IS k.value ->> 7
 AND (NOT :apart OR k.value ->> 5 <> 'oneshot' OR t.next_run = k.value ->> 3);

-- name: insert_tasks
-- rows: [type, arguments, digest (unused: the arguments are their own digest), next_run, current_interval,
-- policy, retries_left, priority, status]; a task with a duplicate (find_pending_duplicates) is skipped;
-- RETURNING the key find_pending_duplicates gives too, read by position
INSERT INTO task (type, arguments, next_run, current_interval, status, policy, retries_left, priority)
SELECT r.value ->> 0, r.value ->> 1, r.value ->> 3, r.value ->> 4, r.value ->> 8,
       r.value ->> 5, r.value ->> 6, r.value ->> 7
FROM json_each(:rows) AS r
WHERE NOT EXISTS (
    SELECT 1 FROM task AS t
    WHERE t.type = r.value ->> 0
      AND t.arguments = r.value ->> 1
      AND t.status = 'next_run_not_scheduled' AND r.value ->> 8 = 'next_run_not_scheduled'
      AND t.policy = r.value ->> 5
      AND t.priority IS r.value ->> 7
      AND (NOT :apart OR r.value ->> 5 <> 'oneshot' OR t.next_run = r.value ->> 3))
ORDER BY r.key
RETURNING id, type, arguments AS arguments_digest, policy, priority, status, next_run;

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
-- the RETURNING list is read by position
UPDATE task SET status = 'next_run_scheduled'
WHERE id IN (
    SELECT id FROM task
    WHERE type = :type AND status = 'next_run_not_scheduled' AND priority IS NULL AND next_run <= :now
    ORDER BY next_run LIMIT :limit)
RETURNING id, type, arguments, next_run, current_interval, policy, status, retries_left, priority;

-- name: grab_ready_priority_tasks
UPDATE task SET status = 'next_run_scheduled'
WHERE id IN (
    SELECT id FROM task
    WHERE type = :type AND status = 'next_run_not_scheduled' AND priority = :priority AND next_run <= :now
    ORDER BY next_run LIMIT :limit)
RETURNING id, type, arguments, next_run, current_interval, policy, status, retries_left, priority;

-- name: grab_tasks_by_id
-- these tasks, if still pending
UPDATE task SET status = 'next_run_scheduled'
WHERE id IN (SELECT value FROM json_each(:ids)) AND status = 'next_run_not_scheduled'
RETURNING id, type, arguments, next_run, current_interval, policy, status, retries_left, priority;

-- name: insert_scheduled_runs
-- in the grab's transaction: one run per grabbed task
INSERT INTO task_run (task, backend_id, scheduled, status, metadata)
SELECT value, :backend_id, :now, 'scheduled', '{}' FROM json_each(:ids) ORDER BY key
RETURNING id, task;

-- name: disable_tasks
UPDATE task SET status = 'disabled'
WHERE id IN (SELECT value FROM json_each(:ids)) AND status <> 'disabled'
RETURNING id;

-- name: respawn_tasks
-- back to pending; retries refilled from the task type
UPDATE task SET status = 'next_run_not_scheduled',
                next_run = coalesce(:next_run, next_run),
                retries_left = coalesce((SELECT num_retries FROM task_type tt WHERE tt.type = task.type), 0)
WHERE id IN (SELECT value FROM json_each(:ids)) AND status IN ('completed', 'disabled')
RETURNING id, next_run;

-- name: respawn_idle_tasks
-- an operator's respawn: back to pending, retries refilled, only a task with no run in flight (one disabled
-- while it ran waits for that run's end: never a second copy beside it)
UPDATE task SET status = 'next_run_not_scheduled',
                next_run = coalesce(:next_run, next_run),
                retries_left = coalesce((SELECT num_retries FROM task_type tt WHERE tt.type = task.type), 0)
WHERE id IN (SELECT value FROM json_each(:ids)) AND status IN ('completed', 'disabled')
  AND NOT EXISTS (SELECT 1 FROM task_run r WHERE r.task = task.id AND r.status IN ('scheduled', 'started'))
RETURNING id, next_run;

-- name: run_with_task_for_update
-- in the write transaction (SQLite's only writer): one run and its task, as runs_with_tasks_for_update
SELECT r.id AS run_id, r.task AS run_task, r.backend_id, r.scheduled, r.started, r.ended, r.metadata,
       r.status AS run_status, t.id, t.type, t.next_run, t.current_interval, t.policy, t.status, t.retries_left, t.priority
FROM task_run AS r JOIN task AS t ON t.id = r.task
WHERE r.id = :id;

-- name: runs_with_tasks_for_update
-- in the write transaction (SQLite's only writer); the task without its arguments: the outcome
-- rules never read them
SELECT r.id AS run_id, r.task AS run_task, r.backend_id, r.scheduled, r.started, r.ended, r.metadata,
       r.status AS run_status, t.id, t.type, t.next_run, t.current_interval, t.policy, t.status, t.retries_left, t.priority
FROM task_run AS r JOIN task AS t ON t.id = r.task
WHERE r.id IN (SELECT value FROM json_each(:ids));

-- name: update_runs
-- rows: [id, status, backend_id, started, ended, metadata]; as_told: a final run too (fold_run_events)
UPDATE task_run AS r
SET status = u.value ->> 1, backend_id = u.value ->> 2, started = u.value ->> 3, ended = u.value ->> 4,
    metadata = u.value ->> 5
FROM json_each(:rows) AS u
WHERE r.id = u.value ->> 0 AND (:as_told OR r.status IN ('scheduled', 'started'));

-- name: update_tasks_after_runs
-- rows: [id, status, next_run, current_interval, retries_left]
UPDATE task AS t
SET status = u.value ->> 1, next_run = u.value ->> 2, current_interval = u.value ->> 3, retries_left = u.value ->> 4
FROM json_each(:rows) AS u
WHERE t.id = u.value ->> 0 AND t.status = 'next_run_scheduled';

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

-- name: count_ready_tasks
-- the dashboard: tasks of one type a runner could take now, counted up to :cap per index
-- (task_ready_idx, task_ready_priority_idx): bounded whatever the table's size
SELECT (SELECT count(*) FROM (SELECT 1 FROM task WHERE type = :type AND status = 'next_run_not_scheduled'
                              AND priority IS NULL AND next_run <= :now LIMIT :cap))
     + (SELECT count(*) FROM (SELECT 1 FROM task WHERE type = :type AND status = 'next_run_not_scheduled'
                              AND priority IS NOT NULL AND next_run <= :now LIMIT :cap)) AS ready;

-- name: in_flight_runs_by_type
-- runs dispatched and not final, counted up to cap in all (task_run_in_flight_idx), by their task's type
SELECT t.type, count(*) AS in_flight
FROM (SELECT task FROM task_run WHERE status IN ('scheduled', 'started') LIMIT :cap) AS r
JOIN task AS t ON t.id = r.task
GROUP BY t.type;

-- name: recent_failed_runs_by_type
-- failed runs among the newest :window runs (a walk of the primary key from its end)
SELECT t.type, count(*) AS failed
FROM task_run AS r JOIN task AS t ON t.id = r.task
WHERE r.id > (SELECT coalesce(max(id), 0) FROM task_run) - :window
  AND r.status IN ('failed', 'permfailed', 'lost')
GROUP BY t.type;

-- name: recent_failed_runs
SELECT r.*, t.type AS task_type
FROM task_run AS r JOIN task AS t ON t.id = r.task
WHERE r.id > (SELECT coalesce(max(id), 0) FROM task_run) - :window
  AND r.status IN ('failed', 'permfailed', 'lost')
ORDER BY r.id DESC LIMIT :limit;

-- name: recent_runs_of_type
-- one type's newest runs among the newest window runs: a backward walk of the primary key, each run's
-- task a primary key lookup, stopping at limit
SELECT r.* FROM task_run AS r JOIN task AS t ON t.id = r.task
WHERE r.id > (SELECT coalesce(max(id), 0) FROM task_run) - :window AND t.type = :type
ORDER BY r.id DESC LIMIT :limit;

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
-- every filter is optional (NULL: no filter); lists are JSON arrays. Without a type: a walk by id
SELECT * FROM task
WHERE id > :after_id
  AND (:statuses IS NULL OR status IN (SELECT value FROM json_each(:statuses)))
  AND (:policy IS NULL OR policy = :policy)
  AND (:priorities IS NULL OR coalesce(priority, 'none') IN (SELECT value FROM json_each(:priorities)))
  AND (:before IS NULL OR next_run <= :before)
ORDER BY id LIMIT :limit;

-- name: search_tasks_of_type
-- one type's tasks (the console's task type page): a walk of task_by_type_idx from after_id, which
-- reads the type's tasks only; the other filters, optional as in search_tasks, are checked along it
SELECT * FROM task
WHERE type = :type AND id > :after_id
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

-- name: task_runs_of_task
-- one task's runs: a walk of task_run_task_idx, not of every run by id
SELECT * FROM task_run
WHERE task = :task AND id > :after_id
  AND (:statuses IS NULL OR status IN (SELECT value FROM json_each(:statuses)))
ORDER BY id LIMIT :limit;
