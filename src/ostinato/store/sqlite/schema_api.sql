-- Canonical SQLite schema of Ostinato, what the HTTP API, its console and the compatibility faces keep:
-- tokens, the console's sign-in sessions, its history and audit trail, and the compatibility records.
-- `ostinato db init` applies schema_tasks.sql, schema_schedules.sql, schema_origins.sql and
-- schema_api.sql, in this order (SCHEMA_FILES in store/migrations.py); together they must equal the
-- result of applying every file in migrations/ (a test checks).
-- Times are ISO 8601 text in UTC with microseconds (fixed width, so they sort);
-- durations are REAL seconds; JSON is canonical text.

-- tokens of the HTTP API: a unique name, a scope, the SHA-256 of the secret (never the secret)
CREATE TABLE api_token (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    scope TEXT NOT NULL CHECK (scope IN ('read', 'worker', 'admin')),
    secret_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    last_used_at TEXT
) STRICT;
CREATE UNIQUE INDEX api_token_secret_hash_idx ON api_token (secret_hash);

-- what the compatibility faces keep beyond Ostinato's model: JSON objects by namespace and key
CREATE TABLE compat_record (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (namespace, key)
) STRICT;

-- the console's history (0018): samples per series, rolled up, each resolution kept a bounded time
CREATE TABLE history_sample (
    -- 'visit_type:git', 'schedule:bills', 'task_type:load-git'
    series TEXT NOT NULL,
    -- seconds per sample: 300, 3600 or 21600
    resolution INTEGER NOT NULL CHECK (resolution > 0),
    -- the start of its interval
    at TEXT NOT NULL,
    sample TEXT NOT NULL CHECK (json_valid(sample)),
    PRIMARY KEY (series, resolution, at)
) STRICT;
-- the pruning: a resolution's samples older than its span
CREATE INDEX history_sample_age_idx ON history_sample (resolution, at);

-- the audit trail of the dashboard's actions (0019): who did what to which target, when, and how it went
CREATE TABLE audit_event (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    -- the name of the API token that asked
    actor TEXT NOT NULL,
    -- 'schedule.pause', 'task.retry', …
    action TEXT NOT NULL,
    -- 'schedule:bills', 'task:12'
    target TEXT NOT NULL,
    -- 'done', with what changed, or 'refused: why'
    outcome TEXT NOT NULL
) STRICT;
-- a target's newest events
CREATE INDEX audit_event_target_idx ON audit_event (target, id);

-- the console's sign-in sessions (0023): a session id's SHA-256, its token, when it ends (idle, or at the latest)
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
