-- 0022: Tokens of the worker scope (domain.access): what the machines do (schedulers, runners, beats, the
-- orchestrator, listers, the journal client), and no operator action. SQLite changes a CHECK by
-- rebuilding the table: the tokens are copied as they are, ids included.

ALTER TABLE api_token RENAME TO api_token_before_0022;
DROP INDEX api_token_secret_hash_idx;

CREATE TABLE api_token (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    scope TEXT NOT NULL CHECK (scope IN ('read', 'worker', 'admin')),
    secret_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    last_used_at TEXT
) STRICT;

INSERT INTO api_token (id, name, scope, secret_hash, created_at, revoked_at, last_used_at)
SELECT id, name, scope, secret_hash, created_at, revoked_at, last_used_at FROM api_token_before_0022;

DROP TABLE api_token_before_0022;
CREATE UNIQUE INDEX api_token_secret_hash_idx ON api_token (secret_hash);
