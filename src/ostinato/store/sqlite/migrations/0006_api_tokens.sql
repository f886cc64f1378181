-- 0006: tokens of the HTTP API (see docs/reference/api.md).
--
-- A token has a unique name, a scope (read: GET requests; admin: everything)
-- and the SHA-256 of its secret, never the secret itself; the API finds a
-- token by that hash. Revoked tokens stay, with the time they were revoked.

CREATE TABLE api_token (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    scope TEXT NOT NULL CHECK (scope IN ('read', 'admin')),
    secret_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    last_used_at TEXT
) STRICT;
CREATE UNIQUE INDEX api_token_secret_hash_idx ON api_token (secret_hash);
