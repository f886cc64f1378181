-- The tasks role's named queries for PostgreSQL (see store/tasks/flow.py); the same names as sqlite.sql.
-- Parameters are %(named)s; lists and batches of parallel columns are arrays read with unnest / ANY
-- (bulk arrays as %(named)b: binary, so that psycopg does not escape each element as text). `now`
-- always comes from the caller. The batch verbs run in the dialect's batch transactions (joins
-- planned as index-driven nested loops).

-- name: insert_task_type
INSERT INTO task_type (type, description, backend_name, default_interval, min_interval, max_interval,
                       backoff_factor, max_queue_length, num_retries, retry_delay)
VALUES (%(type)s, %(description)s, %(backend_name)s, %(default_interval)s, %(min_interval)s, %(max_interval)s,
        %(backoff_factor)s, %(max_queue_length)s, %(num_retries)s, %(retry_delay)s);

-- name: get_task_type
SELECT * FROM task_type WHERE type = %(type)s;

-- name: task_type_for_update
SELECT * FROM task_type WHERE type = %(type)s
FOR UPDATE;

-- name: update_task_type
UPDATE task_type SET description = %(description)s, backend_name = %(backend_name)s,
       default_interval = %(default_interval)s, min_interval = %(min_interval)s, max_interval = %(max_interval)s,
       backoff_factor = %(backoff_factor)s, max_queue_length = %(max_queue_length)s, num_retries = %(num_retries)s,
       retry_delay = %(retry_delay)s
WHERE type = %(type)s;

-- name: tasks_of_type
-- a few of a type's tasks, to name them: any few (no order), an index walk on task_dedup_idx (keyed by type first)
SELECT id FROM task WHERE type = %(type)s LIMIT %(limit)s;

-- name: schedules_of_type
SELECT name FROM schedule WHERE task_type = %(type)s ORDER BY name LIMIT %(limit)s;

-- name: delete_task_type
DELETE FROM task_type WHERE type = %(type)s;

-- name: list_task_types
SELECT * FROM task_type ORDER BY type;

-- name: task_types_in
SELECT * FROM task_type WHERE type = ANY(%(types)s::text[]);

-- name: find_pending_duplicates
-- rows: a JSON array of tasks (insert_tasks's rows; digest in hex), apart: whether a one-shot task's next_run
-- keeps it apart from the pending ones with another. Only pending tasks are deduplicated: one created in
-- another status (the swh protocol lets a caller create one disabled) is always new. One index probe per key (LATERAL ... LIMIT 1): never a
-- scan of the pending tasks, whatever the planner's estimates; arguments are compared only on a digest hit
-- (the digest: the md5 of the canonical arguments, computed by the dialect). The columns of
-- grab_ready_tasks's RETURNING list, then the digest, read by position
SELECT t.id, t.type, t.arguments, t.next_run, t.current_interval, t.policy, t.status, t.retries_left, t.priority,
       t.arguments_digest
FROM json_to_recordset(%(rows)s::json)
    AS k(type text, arguments text, digest text, next_run timestamptz, policy text, priority text, status text)
CROSS JOIN LATERAL (
    SELECT * FROM task AS t
    WHERE t.type = k.type
      AND t.arguments_digest = decode(k.digest, 'hex')
      AND t.status = 'next_run_not_scheduled' AND k.status = 'next_run_not_scheduled'
      AND t.arguments = k.arguments::jsonb
      AND t.policy = k.policy
      AND t.priority IS NOT DISTINCT FROM k.priority
      AND (NOT %(apart)s OR k.policy <> 'oneshot' OR t.next_run = k.next_run)
    LIMIT 1
) AS t;

-- name: insert_tasks
-- rows: a JSON array of tasks (one parameter, parsed in C: a column per field costs more to build in
-- the client than to apply), inserted in the order given, so that the tasks of one batch get ids in that
-- order; a task with a pending duplicate (find_pending_duplicates's probe, sent in the same batch) is
-- skipped, so that both statements go together without waiting for each other; RETURNING read by position
INSERT INTO task (type, arguments, arguments_digest, next_run, current_interval, status, policy, retries_left, priority)
SELECT r.type, r.arguments::jsonb, decode(r.digest, 'hex'), r.next_run, r.current_interval, r.status,
       r.policy, r.retries_left, r.priority
FROM ROWS FROM (json_to_recordset(%(rows)s::json) AS (type text, arguments text, digest text, next_run timestamptz,
                                                     current_interval interval, policy text, retries_left bigint,
                                                     priority text, status text))
     WITH ORDINALITY AS r(type, arguments, digest, next_run, current_interval, policy, retries_left, priority, status,
                          ord)
LEFT JOIN LATERAL (  -- LIMIT 1: one index probe per task, as find_pending_duplicates (never an anti-join)
    SELECT true AS found FROM task AS t
    WHERE t.type = r.type
      AND t.arguments_digest = decode(r.digest, 'hex')
      AND t.status = 'next_run_not_scheduled' AND r.status = 'next_run_not_scheduled'
      AND t.arguments = r.arguments::jsonb
      AND t.policy = r.policy
      AND t.priority IS NOT DISTINCT FROM r.priority
      AND (NOT %(apart)s OR r.policy <> 'oneshot' OR t.next_run = r.next_run)
    LIMIT 1
) AS d ON true
WHERE d.found IS NULL
ORDER BY r.ord
RETURNING id, type, arguments_digest, policy, priority, status, next_run;

-- name: tasks_in
SELECT * FROM task WHERE id = ANY(%(ids)s::bigint[]) ORDER BY id;

-- name: peek_ready_tasks
SELECT * FROM task
WHERE type = %(type)s AND status = 'next_run_not_scheduled' AND priority IS NULL AND next_run <= %(now)s
ORDER BY next_run LIMIT %(limit)s;

-- name: peek_ready_priority_tasks
SELECT * FROM task
WHERE type = %(type)s AND status = 'next_run_not_scheduled' AND priority = %(priority)s AND next_run <= %(now)s
ORDER BY next_run LIMIT %(limit)s;

-- name: grab_ready_tasks
-- lease the rows (SKIP LOCKED: concurrent runners take disjoint sets) and mark them
-- scheduled; `id = ANY(ARRAY(...))` is a primary-key probe whatever the statistics say;
-- the RETURNING list is read by position
UPDATE task SET status = 'next_run_scheduled'
WHERE id = ANY(ARRAY(
    SELECT id FROM task
    WHERE type = %(type)s AND status = 'next_run_not_scheduled' AND priority IS NULL AND next_run <= %(now)s
    ORDER BY next_run LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED))
RETURNING id, type, arguments, next_run, current_interval, policy, status, retries_left, priority;

-- name: grab_ready_priority_tasks
UPDATE task SET status = 'next_run_scheduled'
WHERE id = ANY(ARRAY(
    SELECT id FROM task
    WHERE type = %(type)s AND status = 'next_run_not_scheduled' AND priority = %(priority)s AND next_run <= %(now)s
    ORDER BY next_run LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED))
RETURNING id, type, arguments, next_run, current_interval, policy, status, retries_left, priority;

-- name: grab_tasks_by_id
-- these tasks, if still pending (a concurrent runner that took one first keeps it)
UPDATE task SET status = 'next_run_scheduled'
WHERE id = ANY(%(ids)s::bigint[]) AND status = 'next_run_not_scheduled'
RETURNING id, type, arguments, next_run, current_interval, policy, status, retries_left, priority;

-- name: insert_scheduled_runs
-- in the grab's transaction: one run per grabbed task
INSERT INTO task_run (task, backend_id, scheduled, status)
SELECT task, %(backend_id)s, %(now)s, 'scheduled' FROM unnest(%(ids)b::bigint[]) AS task
RETURNING id, task;

-- name: disable_tasks
UPDATE task SET status = 'disabled'
WHERE id = ANY(%(ids)s::bigint[]) AND status <> 'disabled'
RETURNING id;

-- name: respawn_tasks
-- back to pending; retries refilled from the task type
UPDATE task SET status = 'next_run_not_scheduled',
                next_run = coalesce(%(next_run)s::timestamptz, next_run),
                retries_left = coalesce((SELECT num_retries FROM task_type tt WHERE tt.type = task.type), 0)
WHERE id = ANY(%(ids)s::bigint[]) AND status IN ('completed', 'disabled')
RETURNING id, next_run;

-- name: respawn_idle_tasks
-- an operator's respawn: back to pending, retries refilled, only a task with no run in flight (one disabled
-- while it ran waits for that run's end: never a second copy beside it)
UPDATE task SET status = 'next_run_not_scheduled',
                next_run = coalesce(%(next_run)s::timestamptz, next_run),
                retries_left = coalesce((SELECT num_retries FROM task_type tt WHERE tt.type = task.type), 0)
WHERE id = ANY(%(ids)s::bigint[]) AND status IN ('completed', 'disabled')
  AND NOT EXISTS (SELECT 1 FROM task_run r WHERE r.task = task.id AND r.status IN ('scheduled', 'started'))
RETURNING id, next_run;

-- name: run_with_task_for_update
-- one run and its task, both locked, as runs_with_tasks_for_update
SELECT r.id AS run_id, r.task AS run_task, r.backend_id, r.scheduled, r.started, r.ended, r.metadata,
       r.status AS run_status, t.id, t.type, t.next_run, t.current_interval, t.policy, t.status, t.retries_left, t.priority
FROM task_run AS r JOIN task AS t ON t.id = r.task
WHERE r.id = %(id)s
FOR UPDATE OF r, t;

-- name: runs_with_tasks_for_update
-- the task without its arguments: the outcome rules never read them
SELECT r.id AS run_id, r.task AS run_task, r.backend_id, r.scheduled, r.started, r.ended, r.metadata,
       r.status AS run_status, t.id, t.type, t.next_run, t.current_interval, t.policy, t.status, t.retries_left, t.priority
FROM unnest(%(ids)b::bigint[]) AS i(id)
JOIN task_run AS r ON r.id = i.id
JOIN task AS t ON t.id = r.task
ORDER BY r.id
FOR UPDATE OF r, t;

-- name: update_runs
-- as_told: a final run too (fold_run_events)
UPDATE task_run AS r
SET status = u.status, backend_id = u.backend_id, started = u.started, ended = u.ended, metadata = u.metadata
FROM unnest(%(ids)b::bigint[], %(statuses)b::text[], %(backend_ids)b::text[], %(starteds)b::timestamptz[],
            %(endeds)b::timestamptz[], %(metadatas)b::jsonb[])
    AS u(id, status, backend_id, started, ended, metadata)
WHERE r.id = u.id AND (%(as_told)s OR r.status IN ('scheduled', 'started'));

-- name: update_tasks_after_runs
UPDATE task AS t
SET status = u.status, next_run = u.next_run, current_interval = u.current_interval, retries_left = u.retries_left
FROM unnest(%(ids)b::bigint[], %(statuses)b::text[], %(next_runs)b::timestamptz[], %(intervals)b::interval[],
            %(retries)b::bigint[])
    AS u(id, status, next_run, current_interval, retries_left)
WHERE t.id = u.id AND t.status = 'next_run_scheduled';

-- name: stale_in_flight_runs
SELECT id FROM task_run
WHERE status IN ('scheduled', 'started') AND scheduled < %(cutoff)s AND coalesce(started, scheduled) < %(cutoff)s
ORDER BY scheduled LIMIT %(limit)s;

-- name: in_flight_runs_of
SELECT id FROM task_run
WHERE status IN ('scheduled', 'started') AND backend_id = ANY(%(backend_ids)s::text[]);

-- name: in_flight_backend_ids
SELECT DISTINCT backend_id FROM task_run
WHERE status IN ('scheduled', 'started') AND backend_id >= %(prefix)s AND left(backend_id, length(%(prefix)s)) = %(prefix)s;

-- name: count_tasks
SELECT type, status, count(*) AS n FROM task GROUP BY type, status;

-- name: count_ready_tasks
-- the dashboard: tasks of one type a runner could take now, counted up to cap per index
-- (task_ready_idx, task_ready_priority_idx): bounded whatever the table's size
SELECT (SELECT count(*) FROM (SELECT 1 FROM task WHERE type = %(type)s AND status = 'next_run_not_scheduled'
                              AND priority IS NULL AND next_run <= %(now)s LIMIT %(cap)s) AS plain)
     + (SELECT count(*) FROM (SELECT 1 FROM task WHERE type = %(type)s AND status = 'next_run_not_scheduled'
                              AND priority IS NOT NULL AND next_run <= %(now)s LIMIT %(cap)s) AS prioritised) AS ready;

-- name: in_flight_runs_by_type
-- runs dispatched and not final, counted up to cap in all (task_run_in_flight_idx), by their task's type
SELECT t.type, count(*) AS in_flight
FROM (SELECT task FROM task_run WHERE status IN ('scheduled', 'started') LIMIT %(cap)s) AS r
JOIN task AS t ON t.id = r.task
GROUP BY t.type;

-- name: recent_failed_runs_by_type
-- failed runs among the newest window runs (a walk of the primary key from its end)
SELECT t.type, count(*) AS failed
FROM task_run AS r JOIN task AS t ON t.id = r.task
WHERE r.id > (SELECT coalesce(max(id), 0) FROM task_run) - %(window)s
  AND r.status IN ('failed', 'permfailed', 'lost')
GROUP BY t.type;

-- name: recent_failed_runs
SELECT r.*, t.type AS task_type
FROM task_run AS r JOIN task AS t ON t.id = r.task
WHERE r.id > (SELECT coalesce(max(id), 0) FROM task_run) - %(window)s
  AND r.status IN ('failed', 'permfailed', 'lost')
ORDER BY r.id DESC LIMIT %(limit)s;

-- name: recent_runs_of_type
-- one type's newest runs among the newest window runs: a backward walk of the primary key, each run's
-- task a primary key lookup, stopping at limit
SELECT r.* FROM task_run AS r JOIN task AS t ON t.id = r.task
WHERE r.id > (SELECT coalesce(max(id), 0) FROM task_run) - %(window)s AND t.type = %(type)s
ORDER BY r.id DESC LIMIT %(limit)s;

-- name: archivable_tasks
SELECT t.* FROM task AS t
WHERE t.status IN ('completed', 'disabled') AND t.id > %(after_id)s AND t.next_run < %(before)s
  AND NOT EXISTS (
      SELECT 1 FROM task_run AS r
      WHERE r.task = t.id AND (r.ended >= %(before)s OR r.status IN ('scheduled', 'started')))
ORDER BY t.id LIMIT %(limit)s;

-- name: runs_of_tasks
SELECT * FROM task_run WHERE task = ANY(%(ids)s::bigint[]) ORDER BY task, id;

-- name: delete_runs_of_tasks
DELETE FROM task_run WHERE task = ANY(%(ids)s::bigint[]);

-- name: delete_tasks
DELETE FROM task WHERE id = ANY(%(ids)s::bigint[]);

-- name: search_tasks
-- every filter is optional (NULL: no filter). Without a type: a walk of the primary key
SELECT * FROM task
WHERE id > %(after_id)s
  AND (%(statuses)s::text[] IS NULL OR status = ANY(%(statuses)s::text[]))
  AND (%(policy)s::text IS NULL OR policy = %(policy)s::text)
  AND (%(priorities)s::text[] IS NULL OR coalesce(priority, 'none') = ANY(%(priorities)s::text[]))
  AND (%(before)s::timestamptz IS NULL OR next_run <= %(before)s::timestamptz)
ORDER BY id LIMIT %(limit)s;

-- name: search_tasks_of_type
-- one type's tasks (the console's task type page): a walk of task_by_type_idx from after_id, which
-- reads the type's tasks only; the other filters, optional as in search_tasks, are checked along it
SELECT * FROM task
WHERE type = %(type)s AND id > %(after_id)s
  AND (%(statuses)s::text[] IS NULL OR status = ANY(%(statuses)s::text[]))
  AND (%(policy)s::text IS NULL OR policy = %(policy)s::text)
  AND (%(priorities)s::text[] IS NULL OR coalesce(priority, 'none') = ANY(%(priorities)s::text[]))
  AND (%(before)s::timestamptz IS NULL OR next_run <= %(before)s::timestamptz)
ORDER BY id LIMIT %(limit)s;

-- name: search_task_runs
SELECT * FROM task_run
WHERE id > %(after_id)s
  AND (%(task)s::bigint IS NULL OR task = %(task)s::bigint)
  AND (%(statuses)s::text[] IS NULL OR status = ANY(%(statuses)s::text[]))
ORDER BY id LIMIT %(limit)s;

-- name: task_runs_of_task
-- one task's runs: a walk of task_run_task_idx, not of every run by id
SELECT * FROM task_run
WHERE task = %(task)s AND id > %(after_id)s
  AND (%(statuses)s::text[] IS NULL OR status = ANY(%(statuses)s::text[]))
ORDER BY id LIMIT %(limit)s;
