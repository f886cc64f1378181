-- The history role's named queries for PostgreSQL (see store/history/flow.py); the same names as sqlite.sql.

-- name: upsert_samples
-- a sample replaces the one of its series, resolution and start
INSERT INTO history_sample (series, resolution, at, sample)
SELECT * FROM unnest(%(series)s::text[], %(resolution)s::integer[], %(at)s::timestamptz[], %(sample)s::text[]::jsonb[])
ON CONFLICT (series, resolution, at) DO UPDATE SET sample = excluded.sample;

-- name: samples
-- every series at one resolution over a time range: a walk of history_sample_age_idx
SELECT series, resolution, at, sample FROM history_sample
WHERE resolution = %(resolution)s AND at >= %(since)s AND at < %(until)s
ORDER BY series, at;

-- name: series_samples
-- some series: walks of the primary key
SELECT series, resolution, at, sample FROM history_sample
WHERE series = ANY(%(series)s) AND resolution = %(resolution)s AND at >= %(since)s AND at < %(until)s
ORDER BY series, at;

-- name: prune_samples
DELETE FROM history_sample WHERE resolution = %(resolution)s AND at < %(before)s;

-- name: ended_schedule_runs
-- the newest runs by id (a backward walk of the primary key), those ended since
SELECT r.schedule AS name, r.status, r.started_at AS started, r.ended_at AS ended
FROM (SELECT schedule, status, started_at, ended_at FROM schedule_run ORDER BY id DESC LIMIT %(window)s) AS r
WHERE r.ended_at >= %(since)s;

-- name: ended_task_runs
-- the newest runs by id, those ended since, with their task's type (a primary key lookup each)
SELECT t.type AS name, r.status, r.started, r.ended
FROM (SELECT task, status, started, ended FROM task_run ORDER BY id DESC LIMIT %(window)s) AS r
JOIN task AS t ON t.id = r.task
WHERE r.ended >= %(since)s;
