-- The tokens role's named queries for PostgreSQL (see store/tokens/flow.py); the same names as sqlite.sql.

-- name: insert_api_token
INSERT INTO api_token (name, scope, secret_hash, created_at)
VALUES (%(name)s, %(scope)s, %(secret_hash)s, %(now)s)
RETURNING id, name, scope, created_at, revoked_at, last_used_at;

-- name: list_api_tokens
SELECT id, name, scope, created_at, revoked_at, last_used_at FROM api_token ORDER BY name;

-- name: revoke_api_token
-- an already revoked token keeps the time it was revoked
UPDATE api_token SET revoked_at = coalesce(revoked_at, %(now)s)
WHERE name = %(name)s
RETURNING id, name, scope, created_at, revoked_at, last_used_at;

-- name: find_api_token
SELECT id, name, scope, created_at, revoked_at, last_used_at FROM api_token WHERE secret_hash = %(secret_hash)s;

-- name: touch_api_token
UPDATE api_token SET last_used_at = %(now)s WHERE id = %(id)s AND (last_used_at IS NULL OR last_used_at < %(now)s);
