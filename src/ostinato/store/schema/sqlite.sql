-- The schema role's named queries for SQLite (see store/schema/flow.py); the same names as postgresql.sql.

-- name: create_schema_version
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL
) STRICT;

-- name: has_schema_version
SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version') AS found;

-- name: current_version
SELECT max(version) AS version FROM schema_version;

-- name: count_tables
SELECT count(*) AS tables FROM sqlite_master WHERE type = 'table';

-- name: record_version
INSERT INTO schema_version (version, description, applied_at) VALUES (:version, :description, :applied_at);
