-- The audit role's named queries for PostgreSQL (see store/audit/flow.py); the same names as sqlite.sql.

-- name: insert_audit_event
INSERT INTO audit_event (at, actor, action, target, outcome)
VALUES (%(at)s, %(actor)s, %(action)s, %(target)s, %(outcome)s)
RETURNING id;

-- name: list_audit_events
SELECT id, at, actor, action, target, outcome FROM audit_event
WHERE id < %(before_id)s
ORDER BY id DESC LIMIT %(limit)s;

-- name: list_audit_events_of_target
-- an index walk of audit_event_target_idx, backwards
SELECT id, at, actor, action, target, outcome FROM audit_event
WHERE target = %(target)s AND id < %(before_id)s
ORDER BY id DESC LIMIT %(limit)s;
