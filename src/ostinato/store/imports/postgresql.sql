-- The imports role's named queries for PostgreSQL (see store/imports/flow.py); the same names as
-- sqlite.sql. Records written as given, keyed by their own identities (see
-- docs/reference/swh-import.md): each upsert writes a row only when a stored field differs, so
-- that its row count is what changed and a second import writes nothing. Batches travel as one
-- array per column (read with unnest) or as one JSON array of records (json_to_recordset).

-- name: import_task_type
INSERT INTO task_type AS t (type, description, backend_name, default_interval, min_interval, max_interval,
                            backoff_factor, max_queue_length, num_retries, retry_delay)
VALUES (%(type)s, %(description)s, %(backend_name)s, %(default_interval)s, %(min_interval)s, %(max_interval)s,
        %(backoff_factor)s, %(max_queue_length)s, %(num_retries)s, %(retry_delay)s)
ON CONFLICT (type) DO UPDATE SET
    description = excluded.description, backend_name = excluded.backend_name,
    default_interval = excluded.default_interval, min_interval = excluded.min_interval,
    max_interval = excluded.max_interval, backoff_factor = excluded.backoff_factor,
    max_queue_length = excluded.max_queue_length, num_retries = excluded.num_retries,
    retry_delay = excluded.retry_delay
WHERE (t.description, t.backend_name, t.default_interval, t.min_interval, t.max_interval, t.backoff_factor,
       t.max_queue_length, t.num_retries, t.retry_delay)
      IS DISTINCT FROM (excluded.description, excluded.backend_name, excluded.default_interval,
                        excluded.min_interval, excluded.max_interval, excluded.backoff_factor,
                        excluded.max_queue_length, excluded.num_retries, excluded.retry_delay);

-- name: known_task_types
SELECT type FROM task_type WHERE type = ANY(%(types)s::text[]);

-- name: import_task_conflict
-- a stored task with one of these ids that is another task (another type or other arguments):
-- one primary-key probe per id (LATERAL), never a walk of the table in id order, which the
-- planner would pick for an ORDER BY … LIMIT and repeat the array for every stored task
SELECT t.id, t.type FROM unnest(%(ids)b::bigint[], %(types)b::text[], %(digests)b::bytea[]) AS k(id, type, digest)
CROSS JOIN LATERAL (SELECT id, type, arguments_digest FROM task WHERE task.id = k.id) AS t
WHERE t.type <> k.type OR t.arguments_digest <> k.digest
LIMIT 1;

-- name: import_tasks
INSERT INTO task AS t (id, type, arguments, arguments_digest, next_run, current_interval, status, policy,
                       retries_left, priority)
SELECT id, type, arguments::jsonb, digest, next_run, current_interval, status, policy, retries_left, priority
FROM unnest(%(ids)b::bigint[], %(types)b::text[], %(arguments)b::text[], %(digests)b::bytea[],
            %(next_runs)b::timestamptz[], %(intervals)b::interval[], %(statuses)b::text[], %(policies)b::text[],
            %(retries)b::bigint[], %(priorities)b::text[])
    AS r(id, type, arguments, digest, next_run, current_interval, status, policy, retries_left, priority)
ON CONFLICT (id) DO UPDATE SET
    next_run = excluded.next_run, current_interval = excluded.current_interval, status = excluded.status,
    policy = excluded.policy, retries_left = excluded.retries_left, priority = excluded.priority
WHERE (t.next_run, t.current_interval, t.status, t.policy, t.retries_left, t.priority)
      IS DISTINCT FROM (excluded.next_run, excluded.current_interval, excluded.status, excluded.policy,
                        excluded.retries_left, excluded.priority);

-- name: raise_task_ids
-- ids written as given: the identity moves past them, so that created tasks never take one
SELECT setval(pg_get_serial_sequence('task', 'id'), %(top)s::bigint)
WHERE %(top)s::bigint > coalesce(pg_sequence_last_value(pg_get_serial_sequence('task', 'id')::regclass), 0);

-- name: import_run_conflict
-- a stored run with one of these ids that is a run of another task (one probe per id, as above)
SELECT r.id, r.task FROM unnest(%(ids)b::bigint[], %(tasks)b::bigint[]) AS k(id, task)
CROSS JOIN LATERAL (SELECT id, task FROM task_run WHERE task_run.id = k.id) AS r
WHERE r.task <> k.task
LIMIT 1;

-- name: import_task_runs
INSERT INTO task_run AS r (id, task, backend_id, scheduled, started, ended, metadata, status)
SELECT id, task, backend_id, scheduled, started, ended, metadata::jsonb, status
FROM unnest(%(ids)b::bigint[], %(tasks)b::bigint[], %(backend_ids)b::text[], %(scheduleds)b::timestamptz[],
            %(starteds)b::timestamptz[], %(endeds)b::timestamptz[], %(metadatas)b::text[], %(statuses)b::text[])
    AS k(id, task, backend_id, scheduled, started, ended, metadata, status)
ON CONFLICT (id) DO UPDATE SET
    backend_id = excluded.backend_id, scheduled = excluded.scheduled, started = excluded.started,
    ended = excluded.ended, metadata = excluded.metadata, status = excluded.status
WHERE (r.backend_id, r.scheduled, r.started, r.ended, r.metadata, r.status)
      IS DISTINCT FROM (excluded.backend_id, excluded.scheduled, excluded.started, excluded.ended,
                        excluded.metadata, excluded.status);

-- name: raise_task_run_ids
SELECT setval(pg_get_serial_sequence('task_run', 'id'), %(top)s::bigint)
WHERE %(top)s::bigint > coalesce(pg_sequence_last_value(pg_get_serial_sequence('task_run', 'id')::regclass), 0);

-- name: import_lister
INSERT INTO lister AS l (name, instance_name, current_state, last_listing_finished_at, updated)
VALUES (%(name)s, %(instance_name)s, %(current_state)s::jsonb, %(last_listing_finished_at)s, %(updated)s)
ON CONFLICT (name, instance_name) DO UPDATE SET
    current_state = excluded.current_state, last_listing_finished_at = excluded.last_listing_finished_at,
    updated = excluded.updated
WHERE (l.current_state, l.last_listing_finished_at, l.updated)
      IS DISTINCT FROM (excluded.current_state, excluded.last_listing_finished_at, excluded.updated);

-- name: lister_by_name
SELECT * FROM lister WHERE name = %(name)s AND instance_name = %(instance_name)s;

-- name: listers_known
SELECT id FROM lister WHERE id = ANY(%(ids)s::bigint[]);

-- name: import_listed_origins
-- rows: a JSON array of listings (one parameter, parsed by PostgreSQL in C); returns the
-- keys of the listings created or changed, whose scheduling rows are then made again
INSERT INTO listed_origin AS o (lister_id, url, visit_type, extra_loader_arguments, enabled, first_seen, last_seen,
                                last_update, is_fork, forked_from_url)
SELECT r.lister_id, r.url, r.visit_type, coalesce(r.extra_loader_arguments, '{}'), r.enabled, r.first_seen,
       r.last_seen, r.last_update, r.is_fork, r.forked_from_url
FROM json_to_recordset(%(rows)s::json) AS r(lister_id bigint, url text, visit_type text, extra_loader_arguments jsonb,
                                             enabled boolean, first_seen timestamptz, last_seen timestamptz,
                                             last_update timestamptz, is_fork boolean, forked_from_url text)
ON CONFLICT (lister_id, url, visit_type) DO UPDATE SET
    extra_loader_arguments = excluded.extra_loader_arguments, enabled = excluded.enabled,
    first_seen = excluded.first_seen, last_seen = excluded.last_seen, last_update = excluded.last_update,
    is_fork = excluded.is_fork, forked_from_url = excluded.forked_from_url
WHERE (o.extra_loader_arguments, o.enabled, o.first_seen, o.last_seen, o.last_update, o.is_fork, o.forked_from_url)
      IS DISTINCT FROM (excluded.extra_loader_arguments, excluded.enabled, excluded.first_seen, excluded.last_seen,
                        excluded.last_update, excluded.is_fork, excluded.forked_from_url)
RETURNING o.url, o.visit_type;

-- name: import_sync_visit_stats
-- what all the listings of these origins say, carried to their scheduling rows (as
-- record_listed_origins keeps them): enabled in any, earliest first_seen, newest
-- last_update, fork in any, the listing a loader gets (an enabled one, the most recently
-- seen, the lowest lister id on a tie) and how many listings, the oldest last_update and whether
-- one has none (the swh protocol's grabs walk by them); the visit fields untouched
INSERT INTO origin_visit_stats AS s (url, visit_type, enabled, first_seen, last_update, oldest_update, update_missing,
                                     is_fork, lister_id, extra_loader_arguments, listing_count)
SELECT k.url, k.visit_type, a.enabled, a.first_seen, a.last_update, a.oldest_update, a.update_missing, a.is_fork,
       a.lister_id, a.extra_loader_arguments, a.listing_count
FROM (SELECT DISTINCT url, visit_type FROM unnest(%(urls)b::text[], %(visit_types)b::text[]) AS u(url, visit_type)) AS k
CROSS JOIN LATERAL (
    SELECT bool_or(o.enabled) AS enabled, min(o.first_seen) AS first_seen, max(o.last_update) AS last_update,
           min(o.last_update) AS oldest_update, bool_or(o.last_update IS NULL) AS update_missing,
           coalesce(bool_or(o.is_fork), false) AS is_fork,
           (array_agg(o.lister_id ORDER BY o.enabled DESC, o.last_seen DESC, o.lister_id))[1] AS lister_id,
           (array_agg(o.extra_loader_arguments ORDER BY o.enabled DESC, o.last_seen DESC, o.lister_id))[1]
               AS extra_loader_arguments,
           count(*)::integer AS listing_count
    FROM listed_origin AS o WHERE o.url = k.url AND o.visit_type = k.visit_type
) AS a
ON CONFLICT (url, visit_type) DO UPDATE SET
    enabled = excluded.enabled, first_seen = excluded.first_seen, last_update = excluded.last_update,
    oldest_update = excluded.oldest_update, update_missing = excluded.update_missing,
    is_fork = excluded.is_fork, lister_id = excluded.lister_id, extra_loader_arguments = excluded.extra_loader_arguments,
    listing_count = excluded.listing_count
WHERE (s.enabled, s.first_seen, s.last_update, s.oldest_update, s.update_missing, s.is_fork, s.lister_id,
       s.extra_loader_arguments, s.listing_count)
      IS DISTINCT FROM (excluded.enabled, excluded.first_seen, excluded.last_update, excluded.oldest_update,
                        excluded.update_missing, excluded.is_fork, excluded.lister_id, excluded.extra_loader_arguments,
                        excluded.listing_count);

-- name: import_visit_stats
-- rows: a JSON array of visit stats (snapshots in hex), cooldowns over by `now` already
-- none; a stored cooldown over by `now` counts as none
INSERT INTO origin_visit_stats AS s (url, visit_type, last_visit, last_visit_status, last_successful, last_snapshot,
                                     last_eventful, last_uneventful, failure_count, last_scheduled, next_visit_target,
                                     last_status_date, successful_visits, cooldown_until, rate_changes, rate_days,
                                     next_optimal_visit, rate_evidence)
SELECT r.url, r.visit_type, r.last_visit, r.last_visit_status, r.last_successful, decode(r.last_snapshot, 'hex'),
       r.last_eventful, r.last_uneventful, r.failure_count, r.last_scheduled, r.next_visit_target,
       r.last_status_date, r.successful_visits, r.cooldown_until, r.rate_changes, r.rate_days, r.next_optimal_visit,
       r.rate_evidence
FROM json_to_recordset(%(rows)s::json) AS r(
    url text, visit_type text, last_visit timestamptz, last_visit_status text, last_successful timestamptz,
    last_snapshot text, last_eventful timestamptz, last_uneventful timestamptz, failure_count integer,
    last_scheduled timestamptz, next_visit_target timestamptz, last_status_date timestamptz,
    successful_visits integer, cooldown_until timestamptz, rate_changes double precision,
    rate_days double precision, next_optimal_visit timestamptz, rate_evidence real[])
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
       CASE WHEN s.cooldown_until > %(now)s THEN s.cooldown_until END, s.rate_changes, s.rate_days,
       s.next_optimal_visit, s.rate_evidence)
      IS DISTINCT FROM (excluded.last_visit, excluded.last_visit_status, excluded.last_successful,
                        excluded.last_snapshot, excluded.last_eventful, excluded.last_uneventful,
                        excluded.failure_count, excluded.last_scheduled, excluded.next_visit_target,
                        excluded.last_status_date, excluded.successful_visits, excluded.cooldown_until,
                        excluded.rate_changes, excluded.rate_days, excluded.next_optimal_visit,
                        excluded.rate_evidence);
