-- The imports role's named queries for SQLite (see store/imports/flow.py); the same names as
-- postgresql.sql. Records written as given, keyed by their own identities (see
-- docs/reference/swh-import.md): each upsert writes a row only when a stored field differs, so
-- that the changes it counts are what changed and a second import writes nothing. Batches
-- travel as one JSON array of rows read by position (the flow's columns, in their order) or of
-- records read by name; times as ISO 8601 text in UTC, durations in seconds, bytes in hex. (An
-- AUTOINCREMENT table's counter follows the largest id written, so ids given need nothing more.)

-- name: import_task_type
INSERT INTO task_type AS t (type, description, backend_name, default_interval, min_interval, max_interval,
                            backoff_factor, max_queue_length, num_retries, retry_delay)
VALUES (:type, :description, :backend_name, :default_interval, :min_interval, :max_interval,
        :backoff_factor, :max_queue_length, :num_retries, :retry_delay)
ON CONFLICT (type) DO UPDATE SET
    description = excluded.description, backend_name = excluded.backend_name,
    default_interval = excluded.default_interval, min_interval = excluded.min_interval,
    max_interval = excluded.max_interval, backoff_factor = excluded.backoff_factor,
    max_queue_length = excluded.max_queue_length, num_retries = excluded.num_retries,
    retry_delay = excluded.retry_delay
WHERE (t.description, t.backend_name, t.default_interval, t.min_interval, t.max_interval, t.backoff_factor,
       t.max_queue_length, t.num_retries, t.retry_delay)
      IS NOT (excluded.description, excluded.backend_name, excluded.default_interval,
              excluded.min_interval, excluded.max_interval, excluded.backoff_factor,
              excluded.max_queue_length, excluded.num_retries, excluded.retry_delay);

-- name: known_task_types
SELECT type FROM task_type WHERE type IN (SELECT value FROM json_each(:types));

-- name: import_task_conflict
-- a stored task with one of these ids that is another task (another type or other arguments);
-- rows: the tasks as import_tasks reads them (id, type and arguments first)
-- (CROSS JOIN: SQLite keeps this order, one primary-key probe per key)
SELECT t.id, t.type FROM json_each(:rows) AS k
CROSS JOIN task AS t ON t.id = k.value ->> 0
WHERE t.type <> k.value ->> 1 OR t.arguments <> k.value ->> 2
LIMIT 1;

-- name: import_tasks
-- rows: [id, type, arguments, arguments digest, next_run, current_interval, status, policy, retries_left,
-- priority]; the digest is PostgreSQL's (SQLite compares the arguments themselves)
INSERT INTO task AS t (id, type, arguments, next_run, current_interval, status, policy, retries_left, priority)
SELECT r.value ->> 0, r.value ->> 1, r.value ->> 2, r.value ->> 4, r.value ->> 5, r.value ->> 6, r.value ->> 7,
       r.value ->> 8, r.value ->> 9
FROM json_each(:rows) AS r WHERE true
ON CONFLICT (id) DO UPDATE SET
    next_run = excluded.next_run, current_interval = excluded.current_interval, status = excluded.status,
    policy = excluded.policy, retries_left = excluded.retries_left, priority = excluded.priority
WHERE (t.next_run, t.current_interval, t.status, t.policy, t.retries_left, t.priority)
      IS NOT (excluded.next_run, excluded.current_interval, excluded.status, excluded.policy,
              excluded.retries_left, excluded.priority);

-- name: raise_task_ids
-- nothing to do on SQLite (AUTOINCREMENT follows the largest id written); kept so that both
-- stores name the same steps
SELECT :top AS top;

-- name: import_run_conflict
-- a stored run with one of these ids that is a run of another task; rows: the runs as
-- import_task_runs reads them (id and task first)
SELECT r.id, r.task FROM json_each(:rows) AS k
CROSS JOIN task_run AS r ON r.id = k.value ->> 0
WHERE r.task <> k.value ->> 1
LIMIT 1;

-- name: import_task_runs
-- rows: [id, task, backend_id, scheduled, started, ended, metadata, status]
INSERT INTO task_run AS r (id, task, backend_id, scheduled, started, ended, metadata, status)
SELECT k.value ->> 0, k.value ->> 1, k.value ->> 2, k.value ->> 3, k.value ->> 4, k.value ->> 5, k.value ->> 6,
       k.value ->> 7
FROM json_each(:rows) AS k WHERE true
ON CONFLICT (id) DO UPDATE SET
    backend_id = excluded.backend_id, scheduled = excluded.scheduled, started = excluded.started,
    ended = excluded.ended, metadata = excluded.metadata, status = excluded.status
WHERE (r.backend_id, r.scheduled, r.started, r.ended, r.metadata, r.status)
      IS NOT (excluded.backend_id, excluded.scheduled, excluded.started, excluded.ended, excluded.metadata,
              excluded.status);

-- name: raise_task_run_ids
SELECT :top AS top;

-- name: import_lister
INSERT INTO lister AS l (name, instance_name, current_state, last_listing_finished_at, updated)
VALUES (:name, :instance_name, :current_state, :last_listing_finished_at, :updated)
ON CONFLICT (name, instance_name) DO UPDATE SET
    current_state = excluded.current_state, last_listing_finished_at = excluded.last_listing_finished_at,
    updated = excluded.updated
WHERE (l.current_state, l.last_listing_finished_at, l.updated)
      IS NOT (excluded.current_state, excluded.last_listing_finished_at, excluded.updated);

-- name: lister_by_name
SELECT * FROM lister WHERE name = :name AND instance_name = :instance_name;

-- name: listers_known
SELECT id FROM lister WHERE id IN (SELECT value FROM json_each(:ids));

-- name: import_listed_origins
-- rows: a JSON array of listings, read by name; returns the keys of the listings created or
-- changed, whose scheduling rows are then made again
INSERT INTO listed_origin AS o (lister_id, url, visit_type, extra_loader_arguments, enabled, first_seen, last_seen,
                                last_update, is_fork, forked_from_url)
SELECT r.value ->> '$.lister_id', r.value ->> '$.url', r.value ->> '$.visit_type',
       coalesce(json_extract(r.value, '$.extra_loader_arguments'), '{}'), r.value ->> '$.enabled',
       r.value ->> '$.first_seen', r.value ->> '$.last_seen', r.value ->> '$.last_update', r.value ->> '$.is_fork',
       r.value ->> '$.forked_from_url'
FROM json_each(:rows) AS r WHERE true
ON CONFLICT (lister_id, url, visit_type) DO UPDATE SET
    extra_loader_arguments = excluded.extra_loader_arguments, enabled = excluded.enabled,
    first_seen = excluded.first_seen, last_seen = excluded.last_seen, last_update = excluded.last_update,
    is_fork = excluded.is_fork, forked_from_url = excluded.forked_from_url
WHERE (o.extra_loader_arguments, o.enabled, o.first_seen, o.last_seen, o.last_update, o.is_fork, o.forked_from_url)
      IS NOT (excluded.extra_loader_arguments, excluded.enabled, excluded.first_seen, excluded.last_seen,
              excluded.last_update, excluded.is_fork, excluded.forked_from_url)
RETURNING url, visit_type;

-- name: import_sync_visit_stats
-- what all the listings of these origins say, carried to their scheduling rows (as
-- record_listed_origins keeps them): enabled in any, earliest first_seen, newest
-- last_update, fork in any, the listing a loader gets (an enabled one, the most recently
-- seen, the lowest lister id on a tie) and how many listings, the oldest last_update and whether
-- one has none (the swh protocol's grabs walk by them); the visit fields untouched.
-- rows: [url, visit_type] (columns urls, visit_types)
INSERT INTO origin_visit_stats AS s (url, visit_type, enabled, first_seen, last_update, oldest_update, update_missing,
                                     is_fork, lister_id, extra_loader_arguments, listing_count)
SELECT o.url, o.visit_type, max(o.enabled), min(o.first_seen), max(o.last_update), min(o.last_update),
       max(o.last_update IS NULL), coalesce(max(o.is_fork), 0),
       (SELECT b.lister_id FROM listed_origin AS b WHERE b.url = o.url AND b.visit_type = o.visit_type
        ORDER BY b.enabled DESC, b.last_seen DESC, b.lister_id LIMIT 1),
       (SELECT b.extra_loader_arguments FROM listed_origin AS b WHERE b.url = o.url AND b.visit_type = o.visit_type
        ORDER BY b.enabled DESC, b.last_seen DESC, b.lister_id LIMIT 1),
       count(*)
FROM (SELECT DISTINCT value ->> 0 AS url, value ->> 1 AS visit_type FROM json_each(:rows)) AS k
JOIN listed_origin AS o ON o.url = k.url AND o.visit_type = k.visit_type
WHERE true
GROUP BY o.url, o.visit_type
ON CONFLICT (url, visit_type) DO UPDATE SET
    enabled = excluded.enabled, first_seen = excluded.first_seen, last_update = excluded.last_update,
    oldest_update = excluded.oldest_update, update_missing = excluded.update_missing,
    is_fork = excluded.is_fork, lister_id = excluded.lister_id, extra_loader_arguments = excluded.extra_loader_arguments,
    listing_count = excluded.listing_count
WHERE (s.enabled, s.first_seen, s.last_update, s.oldest_update, s.update_missing, s.is_fork, s.lister_id,
       s.extra_loader_arguments, s.listing_count)
      IS NOT (excluded.enabled, excluded.first_seen, excluded.last_update, excluded.oldest_update,
              excluded.update_missing, excluded.is_fork, excluded.lister_id, excluded.extra_loader_arguments,
              excluded.listing_count);

-- name: import_visit_stats
-- rows: a JSON array of visit stats, read by name (snapshots in hex), cooldowns over by :now
-- already none; a stored cooldown over by :now counts as none
INSERT INTO origin_visit_stats AS s (url, visit_type, last_visit, last_visit_status, last_successful, last_snapshot,
                                     last_eventful, last_uneventful, failure_count, last_scheduled, next_visit_target,
                                     last_status_date, successful_visits, cooldown_until, rate_changes, rate_days,
                                     next_optimal_visit, rate_evidence)
SELECT r.value ->> '$.url', r.value ->> '$.visit_type', r.value ->> '$.last_visit', r.value ->> '$.last_visit_status',
       r.value ->> '$.last_successful', unhex(r.value ->> '$.last_snapshot'), r.value ->> '$.last_eventful',
       r.value ->> '$.last_uneventful', r.value ->> '$.failure_count', r.value ->> '$.last_scheduled',
       r.value ->> '$.next_visit_target', r.value ->> '$.last_status_date', r.value ->> '$.successful_visits',
       r.value ->> '$.cooldown_until', r.value ->> '$.rate_changes', r.value ->> '$.rate_days',
       r.value ->> '$.next_optimal_visit', json_extract(r.value, '$.rate_evidence')
FROM json_each(:rows) AS r WHERE true
ON CONFLICT (url, visit_type) DO UPDATE SET
    last_visit = excluded.last_visit, last_visit_status = excluded.last_visit_status,
    last_successful = excluded.last_successful, last_snapshot = excluded.last_snapshot,
    last_eventful = excluded.last_eventful, last_uneventful = excluded.last_uneventful,
    failure_count = excluded.failure_count, last_scheduled = excluded.last_scheduled,
    next_visit_target = excluded.next_visit_target, last_status_date = excluded.last_status_date,
    successful_visits = excluded.successful_visits, cooldown_until = excluded.cooldown_until,
    rate_changes = excluded.rate_changes, rate_days = excluded.rate_days,
    next_optimal_visit = excluded.next_optimal_visit, rate_evidence = excluded.rate_evidence
WHERE (s.last_visit, s.last_visit_status, s.last_successful, s.last_snapshot, s.last_eventful, s.last_uneventful,
       s.failure_count, s.last_scheduled, s.next_visit_target, s.last_status_date, s.successful_visits,
       CASE WHEN s.cooldown_until > :now THEN s.cooldown_until END, s.rate_changes, s.rate_days,
       s.next_optimal_visit, s.rate_evidence)
      IS NOT (excluded.last_visit, excluded.last_visit_status, excluded.last_successful, excluded.last_snapshot,
              excluded.last_eventful, excluded.last_uneventful, excluded.failure_count, excluded.last_scheduled,
              excluded.next_visit_target, excluded.last_status_date, excluded.successful_visits,
              excluded.cooldown_until, excluded.rate_changes, excluded.rate_days, excluded.next_optimal_visit,
              excluded.rate_evidence);
