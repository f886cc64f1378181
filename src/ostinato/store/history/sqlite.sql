-- The history role's named queries for SQLite (see store/history/flow.py); the same names as postgresql.sql.

-- name: upsert_samples
-- rows: JSON array of [series, resolution, at, sample]; a sample replaces the one of its series,
-- resolution and start
INSERT INTO history_sample (series, resolution, at, sample)
SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM json_each(:rows) WHERE true
ON CONFLICT (series, resolution, at) DO UPDATE SET sample = excluded.sample;

-- name: samples
-- every series at one resolution over a time range: a walk of history_sample_age_idx
SELECT series, resolution, at, sample FROM history_sample
WHERE resolution = :resolution AND at >= :since AND at < :until
ORDER BY series, at;

-- name: series_samples
-- some series: walks of the primary key
SELECT series, resolution, at, sample FROM history_sample
WHERE series IN (SELECT value FROM json_each(:series)) AND resolution = :resolution AND at >= :since AND at < :until
ORDER BY series, at;

-- name: prune_samples
DELETE FROM history_sample WHERE resolution = :resolution AND at < :before;

-- name: ended_schedule_runs
-- the newest runs by id (a backward walk of the primary key), those ended since
SELECT r.schedule AS name, r.status, r.started_at AS started, r.ended_at AS ended
FROM (SELECT schedule, status, started_at, ended_at FROM schedule_run ORDER BY id DESC LIMIT :window) AS r
WHERE r.ended_at >= :since;

-- name: ended_task_runs
-- the newest runs by id, those ended since, with their task's type (a primary key lookup each)
SELECT t.type AS name, r.status, r.started, r.ended
FROM (SELECT task, status, started, ended FROM task_run ORDER BY id DESC LIMIT :window) AS r
JOIN task AS t ON t.id = r.task
WHERE r.ended >= :since;
