-- Named queries of the SQLite store's verbs for the compatibility faces (see compat.py).

-- name: adopt_grabbed_run
-- the run a grab recorded for the task, with no executor yet, takes this one's id
UPDATE task_run SET backend_id = :backend_id, scheduled = :scheduled, metadata = :metadata
WHERE id = (SELECT id FROM task_run
            WHERE task = :task AND status = 'scheduled' AND backend_id IS NULL ORDER BY id LIMIT 1)
RETURNING *;

-- name: insert_run
INSERT INTO task_run (task, backend_id, scheduled, status, metadata)
VALUES (:task, :backend_id, :scheduled, 'scheduled', :metadata)
RETURNING *;

-- name: task_exists
SELECT 1 FROM task WHERE id = :task;

-- name: runs_by_backend_id
SELECT * FROM task_run WHERE backend_id IN (SELECT value FROM json_each(:backend_ids)) ORDER BY id;

-- name: overwrite_task_status
UPDATE task SET status = :status, next_run = coalesce(:next_run, next_run)
WHERE id IN (SELECT value FROM json_each(:ids))
  AND (:except_completed_before IS NULL OR (status <> 'completed' AND next_run < :except_completed_before));

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
ORDER BY r.task, r.id LIMIT :limit;
