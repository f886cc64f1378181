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
