-- The schema role's named queries for PostgreSQL (see store/schema/flow.py); the same names as sqlite.sql.

-- name: create_schema_version
CREATE TABLE IF NOT EXISTS schema_version (
    version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: has_schema_version
SELECT to_regclass('schema_version') IS NOT NULL AS found;

-- name: current_version
SELECT max(version) AS version FROM schema_version;

-- name: count_tables
SELECT count(*) AS tables FROM pg_tables WHERE schemaname = current_schema();

-- name: record_version
INSERT INTO schema_version (version, description, applied_at) VALUES (%(version)s, %(description)s, %(applied_at)s);
