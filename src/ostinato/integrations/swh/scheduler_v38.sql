-- What the importer reads of an swh-scheduler 3.6 database (schema version 38, as
-- `swh db init` makes it), written from the tables observed there (`\d` in psql); see
-- docs/reference/swh-import.md. Read-only: every query is a SELECT, run in one
-- repeatable-read, read-only transaction. Enumerations are read as text. Each listing
-- query walks the table's primary key in order, through a server-side cursor.

-- name: has_dbversion
SELECT to_regclass('dbversion') IS NOT NULL AS present;

-- name: dbversion
SELECT max(version) AS version FROM dbversion;

-- name: count_task_type
SELECT count(*) AS n FROM task_type;

-- name: count_task
SELECT count(*) AS n FROM task;

-- name: count_task_run
SELECT count(*) AS n FROM task_run;

-- name: count_listers
SELECT count(*) AS n FROM listers;

-- name: count_listed_origins
SELECT count(*) AS n FROM listed_origins;

-- name: count_origin_visit_stats
SELECT count(*) AS n FROM origin_visit_stats;

-- name: count_scheduler_metrics
SELECT count(*) AS n FROM scheduler_metrics;

-- name: task_type
SELECT type, description, backend_name, default_interval, min_interval, max_interval, backoff_factor,
       max_queue_length, num_retries, retry_delay
FROM task_type ORDER BY type;

-- name: task
SELECT id, type, arguments, next_run, current_interval, status::text, policy::text, retries_left, priority::text
FROM task ORDER BY id;

-- name: task_run
SELECT id, task, backend_id, scheduled, started, ended, metadata, status::text
FROM task_run ORDER BY id;

-- name: listers
SELECT id, name, instance_name, current_state, last_listing_finished_at, updated
FROM listers ORDER BY name, instance_name;

-- name: listed_origins
SELECT lister_id, url, visit_type, extra_loader_arguments, enabled, first_seen, last_seen, last_update, is_fork,
       forked_from_url
FROM listed_origins ORDER BY lister_id, url, visit_type;

-- name: queue_positions
-- the head of each visit type's queue: where origins_without_last_update last took origins
SELECT visit_type, position FROM visit_scheduler_queue_position;

-- name: queue_anchors
-- the last sign of activity of each visit type (a grab or a visit): when its queue stood at its head
SELECT visit_type, greatest(max(last_scheduled), max(last_visit)) AS anchor
FROM origin_visit_stats GROUP BY visit_type;

-- name: origin_visit_stats
SELECT url, visit_type, last_successful, last_visit, last_visit_status::text, last_scheduled, last_snapshot,
       next_visit_queue_position, next_position_offset, successive_visits
FROM origin_visit_stats ORDER BY url, visit_type;

-- name: scheduler_metrics
SELECT lister_id, visit_type, last_update, origins_known, origins_enabled, origins_never_visited,
       origins_with_pending_changes
FROM scheduler_metrics ORDER BY lister_id, visit_type;

-- Lookups of the check after an import (db_verify.py): the source rows of target rows.

-- name: listed_origins_at
SELECT l.lister_id, l.url, l.visit_type, l.extra_loader_arguments, l.enabled, l.first_seen, l.last_seen,
       l.last_update, l.is_fork, l.forked_from_url
FROM unnest(%(urls)s::text[], %(visit_types)s::text[]) AS k(url, visit_type)
JOIN listed_origins AS l ON l.url = k.url AND l.visit_type = k.visit_type;
