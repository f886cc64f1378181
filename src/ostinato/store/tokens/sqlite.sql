-- The tokens role's named queries for SQLite (see store/tokens/flow.py); the same names as postgresql.sql.

-- name: insert_api_token
INSERT INTO api_token (name, scope, secret_hash, created_at)
VALUES (:name, :scope, :secret_hash, :now)
RETURNING id, name, scope, created_at, revoked_at, last_used_at;

-- name: list_api_tokens
SELECT id, name, scope, created_at, revoked_at, last_used_at FROM api_token ORDER BY name;

-- name: revoke_api_token
-- an already revoked token keeps the time it was revoked
UPDATE api_token SET revoked_at = coalesce(revoked_at, :now)
WHERE name = :name
RETURNING id, name, scope, created_at, revoked_at, last_used_at;

-- name: find_api_token
SELECT id, name, scope, created_at, revoked_at, last_used_at FROM api_token WHERE secret_hash = :secret_hash;

-- name: touch_api_token
UPDATE api_token SET last_used_at = :now WHERE id = :id AND (last_used_at IS NULL OR last_used_at < :now);

-- name: close_token_sessions
-- a revoked token's console sessions
DELETE FROM console_session WHERE token_id = :id;

-- name: prune_console_sessions
-- the sessions that ended (idle_until is never past expires_at)
DELETE FROM console_session WHERE idle_until <= :now;

-- name: insert_console_session
INSERT INTO console_session (session_hash, token_id, created_at, idle_until, expires_at)
SELECT :session_hash, id, :now, :idle_until, :expires_at FROM api_token
WHERE id = :token_id AND revoked_at IS NULL
RETURNING id, created_at, idle_until, expires_at;

-- name: find_console_session
SELECT s.id AS session_id, s.created_at AS session_created_at, s.idle_until, s.expires_at,
       t.id, t.name, t.scope, t.created_at, t.revoked_at, t.last_used_at
FROM console_session s JOIN api_token t ON t.id = s.token_id
WHERE s.session_hash = :session_hash;

-- name: touch_console_session
-- not a session that ended meanwhile
UPDATE console_session SET idle_until = :idle_until WHERE id = :id AND idle_until > :now;

-- name: close_console_session
DELETE FROM console_session WHERE session_hash = :session_hash RETURNING id;
