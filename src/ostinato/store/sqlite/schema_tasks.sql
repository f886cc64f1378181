-- Canonical SQLite schema of Ostinato, its tasks: task types, tasks and their runs.
-- `ostinato db init` applies schema_tasks.sql, schema_schedules.sql, schema_origins.sql and
-- schema_api.sql, in this order (SCHEMA_FILES in store/migrations.py); together they must equal the
-- result of applying every file in migrations/ (a test checks).
-- Times are ISO 8601 text in UTC with microseconds (fixed width, so they sort);
-- durations are REAL seconds; JSON is canonical text.

CREATE TABLE task_type (
    type TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    backend_name TEXT NOT NULL,
    default_interval REAL,
    min_interval REAL,
    max_interval REAL,
    backoff_factor REAL,
    max_queue_length INTEGER,
    num_retries INTEGER,
    retry_delay REAL
) STRICT;

CREATE TABLE task (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL REFERENCES task_type (type),
    arguments TEXT NOT NULL,
    next_run TEXT NOT NULL,
    current_interval REAL,
    status TEXT NOT NULL CHECK (status IN ('next_run_not_scheduled', 'next_run_scheduled', 'completed', 'disabled')),
    policy TEXT NOT NULL CHECK (policy IN ('recurring', 'oneshot')),
    retries_left INTEGER NOT NULL DEFAULT 0,
    priority TEXT CHECK (priority IN ('high', 'normal', 'low'))
) STRICT;

-- the runner's grab: an index walk per task type, oldest next_run first
CREATE INDEX task_ready_idx ON task (type, next_run)
    WHERE status = 'next_run_not_scheduled' AND priority IS NULL;
CREATE INDEX task_ready_priority_idx ON task (type, priority, next_run)
    WHERE status = 'next_run_not_scheduled' AND priority IS NOT NULL;
-- "a task that already exists is not created again"
CREATE INDEX task_dedup_idx ON task (type, arguments)
    WHERE status = 'next_run_not_scheduled';
-- archival walks final tasks only
CREATE INDEX task_final_idx ON task (id)
    WHERE status IN ('completed', 'disabled');
-- one type's tasks by id: the console's task type page, search_tasks by type (0024); its
-- entries carry the rowid, which is id, so (type) is (type, id)
CREATE INDEX task_by_type_idx ON task (type);

CREATE TABLE task_run (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    -- no foreign key (as on PostgreSQL, where its per-row check slowed every grab);
    -- runs are deleted with their task by delete_tasks
    task INTEGER NOT NULL,
    backend_id TEXT,
    scheduled TEXT,
    started TEXT,
    ended TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL CHECK (status IN ('scheduled', 'started', 'eventful', 'uneventful', 'failed', 'permfailed', 'lost'))
) STRICT;

CREATE INDEX task_run_task_idx ON task_run (task);
-- runs not yet final: lost-run detection and executor recovery walk only these
CREATE INDEX task_run_in_flight_idx ON task_run (scheduled)
    WHERE status IN ('scheduled', 'started');
CREATE INDEX task_run_in_flight_backend_idx ON task_run (backend_id)
    WHERE status IN ('scheduled', 'started');
-- runs found by their executor's backend_id, final runs included (the swh protocol's start and end)
CREATE INDEX task_run_backend_id_idx ON task_run (backend_id);
