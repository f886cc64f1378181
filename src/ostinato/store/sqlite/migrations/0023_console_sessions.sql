-- 0023: the console's sign-in sessions (see docs/reference/security.md, "Console").
--
-- Signing in to the console with an API token's secret opens a session: the browser's cookie holds a
-- random session id, the store only its SHA-256 (session_hash) with the token it belongs to. A session
-- ends at idle_until, which its requests move forward but never past expires_at (at most 7 days after
-- sign-in). Signing out deletes its row; revoking the token deletes the token's rows, and every request
-- checks the token's row all the same. Ended rows are deleted by the next sign-in.
CREATE TABLE console_session (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_hash TEXT NOT NULL,
    token_id INTEGER NOT NULL REFERENCES api_token (id),
    created_at TEXT NOT NULL,
    idle_until TEXT NOT NULL,
    expires_at TEXT NOT NULL
) STRICT;
CREATE UNIQUE INDEX console_session_hash_idx ON console_session (session_hash);
-- a revoked token's sessions
CREATE INDEX console_session_token_idx ON console_session (token_id);
-- the ended ones
CREATE INDEX console_session_idle_idx ON console_session (idle_until);
