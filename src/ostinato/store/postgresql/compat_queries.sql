-- Named queries of the PostgreSQL store's verbs for the compatibility faces (see compat.py).

-- name: adopt_grabbed_run
-- the run a grab recorded for the task, with no executor yet, takes this one's id
UPDATE task_run SET backend_id = %(backend_id)s, scheduled = %(scheduled)s, metadata = %(metadata)s
WHERE id = (SELECT id FROM task_run
            WHERE task = %(task)s AND status = 'scheduled' AND backend_id IS NULL ORDER BY id LIMIT 1
            FOR UPDATE SKIP LOCKED)
RETURNING *;

-- name: insert_run
INSERT INTO task_run (task, backend_id, scheduled, status, metadata)
VALUES (%(task)s, %(backend_id)s, %(scheduled)s, 'scheduled', %(metadata)s)
RETURNING *;

-- name: task_exists
SELECT 1 FROM task WHERE id = %(task)s;

-- name: runs_by_backend_id
SELECT * FROM task_run WHERE backend_id = ANY(%(backend_ids)s::text[]) ORDER BY id;

-- name: overwrite_task_status
UPDATE task SET status = %(status)s, next_run = coalesce(%(next_run)s, next_run)
WHERE id = ANY(%(ids)s::bigint[])
  AND (%(except_completed_before)s::timestamptz IS NULL
       OR (status <> 'completed' AND next_run < %(except_completed_before)s::timestamptz));

-- name: get_compat_records
SELECT key, value FROM compat_record WHERE namespace = %(namespace)s AND key = ANY(%(keys)s::text[]);

-- name: list_compat_records
SELECT key, value FROM compat_record WHERE namespace = %(namespace)s AND key > %(after)s ORDER BY key LIMIT %(limit)s;

-- name: put_compat_record
INSERT INTO compat_record (namespace, key, value) VALUES (%(namespace)s, %(key)s, %(value)s)
ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value;

-- name: delete_compat_record
DELETE FROM compat_record WHERE namespace = %(namespace)s AND key = %(key)s;

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
