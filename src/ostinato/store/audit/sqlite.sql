-- The audit role's named queries for SQLite (see store/audit/flow.py); the same names as postgresql.sql.

-- name: insert_audit_event
INSERT INTO audit_event (at, actor, action, target, outcome)
VALUES (:at, :actor, :action, :target, :outcome)
RETURNING id;

-- name: list_audit_events
SELECT id, at, actor, action, target, outcome FROM audit_event
WHERE id < :before_id
ORDER BY id DESC LIMIT :limit;

-- name: list_audit_events_of_target
-- an index walk of audit_event_target_idx, backwards
SELECT id, at, actor, action, target, outcome FROM audit_event
WHERE target = :target AND id < :before_id
ORDER BY id DESC LIMIT :limit;
