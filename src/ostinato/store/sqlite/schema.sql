-- Canonical SQLite schema of Ostinato: what `ostinato db init` creates.
-- Must equal the result of applying every file in migrations/ (a test checks).
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

-- listers, listed origins and visit stats (see docs/design/origins.md)

CREATE TABLE lister (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    instance_name TEXT NOT NULL,
    current_state TEXT NOT NULL DEFAULT '{}',
    last_listing_finished_at TEXT,
    -- optimistic concurrency token: an update from a stale copy is refused
    updated TEXT NOT NULL,
    UNIQUE (name, instance_name)
) STRICT;

CREATE TABLE listed_origin (
    lister_id INTEGER NOT NULL REFERENCES lister (id),
    url TEXT NOT NULL,
    visit_type TEXT NOT NULL,
    extra_loader_arguments TEXT NOT NULL DEFAULT '{}',
    enabled INTEGER NOT NULL DEFAULT 1,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL,
    last_update TEXT,
    is_fork INTEGER,
    forked_from_url TEXT,
    -- (0015) the key politeness counts it under (see docs/reference/origins.md)
    host TEXT,
    PRIMARY KEY (lister_id, url, visit_type)
) STRICT;
-- the feedback loop disables an origin in every lister that lists it
CREATE INDEX listed_origin_url_idx ON listed_origin (url, visit_type);

CREATE TABLE origin_visit_stats (
    url TEXT NOT NULL,
    visit_type TEXT NOT NULL,
    last_visit TEXT,
    last_visit_status TEXT CHECK (last_visit_status IN ('successful', 'failed', 'not_found')),
    last_successful TEXT,
    last_snapshot BLOB,
    last_eventful TEXT,
    last_uneventful TEXT,
    failure_count INTEGER NOT NULL DEFAULT 0,
    last_scheduled TEXT,
    next_visit_target TEXT,
    -- date of the newest final status applied: older or equal ones change nothing
    last_status_date TEXT,
    -- successful visits so far: the policies tell "loaded once" from "more than once"
    successful_visits INTEGER NOT NULL DEFAULT 0,
    -- not grabbed again before this; NULL: free (see domain/visit_policies.py)
    cooldown_until TEXT,
    -- what the listings say: enabled in any, earliest first_seen, newest last_update, fork
    enabled INTEGER NOT NULL DEFAULT 0,
    first_seen TEXT,
    last_update TEXT,
    is_fork INTEGER NOT NULL DEFAULT 0,
    -- the listing a loader gets: an enabled one, the most recently seen
    lister_id INTEGER,
    extra_loader_arguments TEXT NOT NULL DEFAULT '{}',
    -- how many listers list it: metrics read single-listed origins without a join
    listing_count INTEGER NOT NULL DEFAULT 0,
    -- change_rate_optimal: the change rate's belief (changes seen over days observed; NULL: the prior)
    rate_changes REAL,
    rate_days REAL,
    -- when change_rate_optimal visits it next
    next_optimal_visit TEXT,
    rate_evidence TEXT CHECK (rate_evidence IS NULL OR json_valid(rate_evidence)),
    host TEXT, queue_position INTEGER, position_offset INTEGER, successive_visits INTEGER, oldest_update TEXT, update_missing INTEGER NOT NULL DEFAULT 0,
    hint_wait_days REAL,
    PRIMARY KEY (url, visit_type)
) STRICT;

-- scheduling policies: one index walk each, over origins not cooling down

CREATE TABLE origin_metrics (
    lister_id INTEGER NOT NULL REFERENCES lister (id),
    visit_type TEXT NOT NULL,
    computed_at TEXT NOT NULL,
    origins_known INTEGER NOT NULL,
    origins_enabled INTEGER NOT NULL,
    origins_never_visited INTEGER NOT NULL,
    origins_with_pending_changes INTEGER NOT NULL,
    -- lag (now - last_update) of origins with pending changes: {"upper bound in seconds": count}
    lag_histogram TEXT NOT NULL,
    lag_max REAL,
    visits_in_flight INTEGER NOT NULL DEFAULT 0,
    visits_last_hour INTEGER NOT NULL DEFAULT 0,
    eventful_visits_last_hour INTEGER NOT NULL DEFAULT 0,
    uneventful_visits_last_hour INTEGER NOT NULL DEFAULT 0,
    origins_never_successful INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (lister_id, visit_type)
) STRICT;

CREATE INDEX visit_cooldown_idx ON origin_visit_stats (visit_type, cooldown_until)
    WHERE cooldown_until IS NOT NULL;
CREATE INDEX visit_never_visited_idx ON origin_visit_stats (visit_type, is_fork, last_update)
    WHERE enabled AND cooldown_until IS NULL AND last_successful IS NULL AND last_update IS NOT NULL;
CREATE INDEX visit_by_lag_idx ON origin_visit_stats (visit_type, (julianday(last_update) - julianday(last_successful)) DESC)
    WHERE enabled AND cooldown_until IS NULL AND last_update > last_successful;
CREATE INDEX visit_without_update_never_loaded_idx ON origin_visit_stats (visit_type, first_seen)
    WHERE enabled AND cooldown_until IS NULL AND last_update IS NULL AND last_successful IS NULL;
CREATE INDEX visit_without_update_loaded_once_idx ON origin_visit_stats (visit_type, last_visit)
    WHERE enabled AND cooldown_until IS NULL AND last_update IS NULL AND successful_visits = 1;
CREATE INDEX visit_without_update_loaded_more_idx ON origin_visit_stats (visit_type, next_visit_target)
    WHERE enabled AND cooldown_until IS NULL AND last_update IS NULL AND successful_visits > 1;
CREATE INDEX visit_oldest_scheduled_idx ON origin_visit_stats (visit_type, last_scheduled)
    WHERE enabled AND cooldown_until IS NULL;
CREATE INDEX visit_stop_after_success_idx ON origin_visit_stats (visit_type, last_scheduled)
    WHERE enabled AND cooldown_until IS NULL AND last_successful IS NULL;
CREATE INDEX visit_optimal_never_visited_idx ON origin_visit_stats (visit_type, first_seen)
    WHERE enabled AND cooldown_until IS NULL AND last_successful IS NULL;
CREATE INDEX visit_optimal_due_idx ON origin_visit_stats (visit_type, next_optimal_visit)
    WHERE enabled AND cooldown_until IS NULL AND last_successful IS NOT NULL;

-- the swh protocol's policies not served by an index above (0016, see docs/reference/swh-compat.md);
-- "oldest_update IS NULL" puts nulls last
CREATE INDEX protocol_stop_after_success_idx
    ON origin_visit_stats (visit_type, oldest_update IS NULL, oldest_update, first_seen)
    WHERE enabled AND cooldown_until IS NULL AND last_visit_status IS NOT 'successful';
CREATE INDEX protocol_never_visited_idx ON origin_visit_stats (visit_type, oldest_update)
    WHERE enabled AND cooldown_until IS NULL AND last_snapshot IS NULL AND oldest_update IS NOT NULL;
CREATE INDEX protocol_without_update_idx ON origin_visit_stats (visit_type, queue_position, first_seen)
    WHERE enabled AND cooldown_until IS NULL AND update_missing;

-- politeness per host (0015, see docs/reference/origins.md)
-- the visits in flight (as in the metrics: grabbed, no status since, cooldown not freed), by host
CREATE INDEX visit_in_flight_by_host_idx ON origin_visit_stats (visit_type, host)
    WHERE cooldown_until IS NOT NULL AND last_scheduled IS NOT NULL
      AND (last_status_date IS NULL OR last_scheduled > last_status_date);

CREATE TABLE visit_type_politeness (
    visit_type TEXT PRIMARY KEY,
    -- NULL: no limit; else at least 1
    max_concurrent_per_host INTEGER CHECK (max_concurrent_per_host IS NULL OR max_concurrent_per_host >= 1),
    -- seconds between two visit starts on one host; NULL: none
    min_spacing_per_host REAL CHECK (min_spacing_per_host IS NULL OR min_spacing_per_host >= 0)
) STRICT;

CREATE TABLE host_politeness (
    visit_type TEXT NOT NULL,
    host TEXT NOT NULL,
    -- the host's own limits over its visit type's; NULL: the visit type's
    max_concurrent INTEGER CHECK (max_concurrent IS NULL OR max_concurrent >= 1),
    min_spacing REAL CHECK (min_spacing IS NULL OR min_spacing >= 0),
    -- when a grab last started a visit on this host
    last_start TEXT,
    PRIMARY KEY (visit_type, host)
) STRICT;
CREATE INDEX host_politeness_last_start_idx ON host_politeness (visit_type, last_start)
    WHERE last_start IS NOT NULL;

CREATE TABLE revisit_threshold (
    visit_type TEXT PRIMARY KEY,
    -- the Lagrange multiplier that spaces revisits (see ostinato.domain.change_rates)
    threshold REAL NOT NULL CHECK (threshold > 0),
    -- what it was steered to: visits a day, over this many enabled origins
    visits_per_day REAL NOT NULL,
    origins INTEGER NOT NULL,
    computed_at TEXT NOT NULL
) STRICT;

-- schedules (see docs/design/deadline-greedy.md) and their run history

CREATE TABLE schedule (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('periodic', 'calendar')),
    task_type TEXT NOT NULL,
    arguments TEXT NOT NULL DEFAULT '{"args":[],"kwargs":{}}',
    mode TEXT NOT NULL CHECK (mode IN ('run', 'submit', 'send')),
    scheduling_period REAL,
    cooldown_duration REAL,
    cron_schedule TEXT,
    cron_max_schedule_duration REAL,
    tz TEXT NOT NULL,
    enabled INTEGER NOT NULL,
    max_expected_duration REAL,
    max_allowed_duration REAL,
    blackout_periods TEXT NOT NULL DEFAULT '[]',
    dont_run_on_nodes TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    last_good_start_at TEXT,
    last_good_end_at TEXT,
    last_start_at TEXT,
    last_end_at TEXT,
    failure_count INTEGER,
    average_good_duration REAL,
    owner_started_at TEXT,
    owner_node TEXT,
    owner_name TEXT,
    owner_tag TEXT,
    owner_last_ping_at TEXT,
    steal_start_at TEXT,
    -- get_schedule_start_times(), stored whenever the schedule changes, so that a
    -- pick is an index walk instead of a fetch of every schedule
    can_start_by TEXT,
    should_start_by TEXT,
    -- what happens to the fire times an outage made it miss (domain/firings.py)
    catch_up TEXT NOT NULL DEFAULT 'latest' CHECK (catch_up IN ('latest', 'all', 'skip')),
    catch_up_budget INTEGER,
    -- seconds after failure 1, 2, 3 or more; NULL: the setting schedule_retry_backoff
    retry_backoff TEXT,
    -- mode 'send': Celery's options of the send
    options TEXT NOT NULL DEFAULT '{}',
    -- declared in code: by whom, with which fingerprint (domain/declarations.py)
    declared_by TEXT,
    declaration TEXT,
    -- the last fire time handled (run, sent or skipped)
    fired_through TEXT,
    -- mode 'send': the next fire time to send, stored so that a beat's claim is an index walk;
    -- run_requested_at (0017): a run asked for now (schedule run-now), pending until a run starts at or after it
    next_fire_at TEXT
, run_requested_at TEXT) STRICT;

-- the pick: among schedules not running, lowest should_start_by first
CREATE INDEX schedule_pick_idx ON schedule (should_start_by)
    WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL;
-- how long the scheduler may sleep: the next can_start_by
CREATE INDEX schedule_wake_idx ON schedule (can_start_by)
    WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL;
-- the steal protocol walks running schedules by their last sign of life
CREATE INDEX schedule_running_idx ON schedule (owner_last_ping_at)
    WHERE owner_tag IS NOT NULL;
CREATE INDEX schedule_owner_node_idx ON schedule (owner_node)
    WHERE owner_tag IS NOT NULL;
-- the catch-up pass: calendar schedules whose next fire time is overdue
CREATE INDEX schedule_backlog_idx ON schedule (can_start_by)
    WHERE enabled AND owner_tag IS NULL AND can_start_by IS NOT NULL AND kind = 'calendar';
-- the beats' claim: schedules they send, by their next fire time
CREATE INDEX schedule_fire_idx ON schedule (next_fire_at)
    WHERE enabled AND next_fire_at IS NOT NULL;
-- the schedules one source declares in code
CREATE INDEX schedule_declared_by_idx ON schedule (declared_by)
    WHERE declared_by IS NOT NULL;

-- each set of declarations a source made, and when it was first seen: the newest wins
CREATE TABLE schedule_declaration (
    source TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    first_seen_at TEXT NOT NULL,
    schedules INTEGER NOT NULL,
    PRIMARY KEY (source, fingerprint)
) STRICT;

-- the ledger of fire times: claimed (a beat sends it, until lease_until), sent (the broker
-- took it) or skipped (by the catch-up rule: a run of consecutive fire times, through
-- last_at, firings of them, NULL when too many to count)
CREATE TABLE schedule_firing (
    schedule TEXT NOT NULL,
    nominal_at TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('claimed', 'sent', 'skipped')),
    last_at TEXT,
    firings INTEGER,
    claimed_by TEXT,
    lease_until TEXT,
    sender TEXT,
    handled_at TEXT NOT NULL,
    sent_at TEXT,
    PRIMARY KEY (schedule, nominal_at)
) STRICT;
-- claims whose beat went silent, by the end of their lease
CREATE INDEX schedule_firing_lease_idx ON schedule_firing (lease_until)
    WHERE status = 'claimed';

CREATE TABLE schedule_run (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    schedule TEXT NOT NULL,
    owner_tag TEXT NOT NULL,
    owner_node TEXT NOT NULL,
    owner_name TEXT NOT NULL,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'stopped', 'stolen', 'lost', 'submitted')),
    detail TEXT NOT NULL DEFAULT '{}'
) STRICT;
CREATE INDEX schedule_run_schedule_idx ON schedule_run (schedule, started_at);
CREATE UNIQUE INDEX schedule_run_tag_idx ON schedule_run (owner_tag);
-- metrics join listed_origin only for the origins several listers list
CREATE INDEX visit_stats_multi_listed_idx ON origin_visit_stats (visit_type)
    WHERE listing_count > 1;

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
-- runs found by their executor's backend_id, final runs included (the swh protocol's start and end)
CREATE INDEX task_run_backend_id_idx ON task_run (backend_id);

-- origin metrics kept up to date by the writes (0011): each origin one lister lists makes up
-- cells of its lister's counts, changed with it (see migrations/0011_origin_metric_cells.sql)
CREATE TABLE origin_metric_cell (
    lister_id INTEGER NOT NULL,
    visit_type TEXT NOT NULL,
    -- 1 known, 2 enabled, 3 never visited, 4 never successful (cell 0); 5 with changes pending
    -- (cell: the hour at or after last_update); 6 in flight (cell: the end of the grab's
    -- cooldown); 7 visited, 8 eventful, 9 uneventful (cell: the minute at or after the visit)
    kind INTEGER NOT NULL,
    cell NOT NULL,
    origins INTEGER NOT NULL,
    PRIMARY KEY (lister_id, visit_type, kind, cell)
);

CREATE TRIGGER origin_visit_stats_metrics_insert AFTER INSERT ON origin_visit_stats WHEN NEW.listing_count = 1
BEGIN
    INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
    SELECT NEW.lister_id AS lister_id, NEW.visit_type AS visit_type, k.column1 AS kind,
           CASE k.column1
               WHEN 5 THEN CASE WHEN substr(NEW.last_update, 15) = '00:00.000000+00:00' THEN NEW.last_update ELSE strftime('%Y-%m-%dT%H:00:00.000000+00:00', NEW.last_update, '+1 hour') END
               WHEN 6 THEN NEW.cooldown_until
               WHEN 7 THEN CASE WHEN substr(NEW.last_status_date, 18) = '00.000000+00:00' THEN NEW.last_status_date ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', NEW.last_status_date, '+1 minute') END
               WHEN 8 THEN CASE WHEN substr(NEW.last_eventful, 18) = '00.000000+00:00' THEN NEW.last_eventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', NEW.last_eventful, '+1 minute') END
               WHEN 9 THEN CASE WHEN substr(NEW.last_uneventful, 18) = '00.000000+00:00' THEN NEW.last_uneventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', NEW.last_uneventful, '+1 minute') END
               ELSE 0 END AS cell,
           1 AS origins
    FROM (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS k
    WHERE NEW.listing_count = 1 AND CASE k.column1
              WHEN 1 THEN 1
              WHEN 2 THEN NEW.enabled
              WHEN 3 THEN NEW.enabled AND NEW.last_successful IS NULL AND NEW.last_status_date IS NULL
              WHEN 4 THEN NEW.enabled AND NEW.last_successful IS NULL AND NEW.last_status_date IS NOT NULL
              WHEN 5 THEN NEW.enabled AND NEW.last_update IS NOT NULL
                          AND (NEW.last_successful IS NULL OR NEW.last_update > NEW.last_successful)
              WHEN 6 THEN NEW.last_scheduled IS NOT NULL AND NEW.cooldown_until IS NOT NULL
                          AND (NEW.last_status_date IS NULL OR NEW.last_scheduled > NEW.last_status_date)
              WHEN 7 THEN NEW.last_status_date IS NOT NULL
              WHEN 8 THEN NEW.last_eventful IS NOT NULL
              WHEN 9 THEN NEW.last_uneventful IS NOT NULL END
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = origins + excluded.origins;
END;
CREATE TRIGGER origin_visit_stats_metrics_delete AFTER DELETE ON origin_visit_stats WHEN OLD.listing_count = 1
BEGIN
    INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
    SELECT OLD.lister_id AS lister_id, OLD.visit_type AS visit_type, k.column1 AS kind,
           CASE k.column1
               WHEN 5 THEN CASE WHEN substr(OLD.last_update, 15) = '00:00.000000+00:00' THEN OLD.last_update ELSE strftime('%Y-%m-%dT%H:00:00.000000+00:00', OLD.last_update, '+1 hour') END
               WHEN 6 THEN OLD.cooldown_until
               WHEN 7 THEN CASE WHEN substr(OLD.last_status_date, 18) = '00.000000+00:00' THEN OLD.last_status_date ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', OLD.last_status_date, '+1 minute') END
               WHEN 8 THEN CASE WHEN substr(OLD.last_eventful, 18) = '00.000000+00:00' THEN OLD.last_eventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', OLD.last_eventful, '+1 minute') END
               WHEN 9 THEN CASE WHEN substr(OLD.last_uneventful, 18) = '00.000000+00:00' THEN OLD.last_uneventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', OLD.last_uneventful, '+1 minute') END
               ELSE 0 END AS cell,
           -1 AS origins
    FROM (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS k
    WHERE OLD.listing_count = 1 AND CASE k.column1
              WHEN 1 THEN 1
              WHEN 2 THEN OLD.enabled
              WHEN 3 THEN OLD.enabled AND OLD.last_successful IS NULL AND OLD.last_status_date IS NULL
              WHEN 4 THEN OLD.enabled AND OLD.last_successful IS NULL AND OLD.last_status_date IS NOT NULL
              WHEN 5 THEN OLD.enabled AND OLD.last_update IS NOT NULL
                          AND (OLD.last_successful IS NULL OR OLD.last_update > OLD.last_successful)
              WHEN 6 THEN OLD.last_scheduled IS NOT NULL AND OLD.cooldown_until IS NOT NULL
                          AND (OLD.last_status_date IS NULL OR OLD.last_scheduled > OLD.last_status_date)
              WHEN 7 THEN OLD.last_status_date IS NOT NULL
              WHEN 8 THEN OLD.last_eventful IS NOT NULL
              WHEN 9 THEN OLD.last_uneventful IS NOT NULL END
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = origins + excluded.origins;
END;
CREATE TRIGGER origin_visit_stats_metrics_update AFTER UPDATE ON origin_visit_stats
WHEN (OLD.listing_count = 1 OR NEW.listing_count = 1) AND (
        OLD.listing_count IS NOT NEW.listing_count
     OR OLD.lister_id IS NOT NEW.lister_id
     OR OLD.visit_type IS NOT NEW.visit_type
     OR OLD.enabled IS NOT NEW.enabled
     OR OLD.last_update IS NOT NEW.last_update
     OR OLD.last_successful IS NOT NEW.last_successful
     OR OLD.last_status_date IS NOT NEW.last_status_date
     OR OLD.last_scheduled IS NOT NEW.last_scheduled
     OR OLD.cooldown_until IS NOT NEW.cooldown_until
     OR OLD.last_eventful IS NOT NEW.last_eventful
     OR OLD.last_uneventful IS NOT NEW.last_uneventful)
BEGIN
    INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
    SELECT lister_id, visit_type, kind, cell, sum(origins) FROM (
        SELECT OLD.lister_id AS lister_id, OLD.visit_type AS visit_type, k.column1 AS kind,
               CASE k.column1
                   WHEN 5 THEN CASE WHEN substr(OLD.last_update, 15) = '00:00.000000+00:00' THEN OLD.last_update ELSE strftime('%Y-%m-%dT%H:00:00.000000+00:00', OLD.last_update, '+1 hour') END
                   WHEN 6 THEN OLD.cooldown_until
                   WHEN 7 THEN CASE WHEN substr(OLD.last_status_date, 18) = '00.000000+00:00' THEN OLD.last_status_date ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', OLD.last_status_date, '+1 minute') END
                   WHEN 8 THEN CASE WHEN substr(OLD.last_eventful, 18) = '00.000000+00:00' THEN OLD.last_eventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', OLD.last_eventful, '+1 minute') END
                   WHEN 9 THEN CASE WHEN substr(OLD.last_uneventful, 18) = '00.000000+00:00' THEN OLD.last_uneventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', OLD.last_uneventful, '+1 minute') END
                   ELSE 0 END AS cell,
               -1 AS origins
        FROM (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS k
        WHERE OLD.listing_count = 1 AND CASE k.column1
                  WHEN 1 THEN 1
                  WHEN 2 THEN OLD.enabled
                  WHEN 3 THEN OLD.enabled AND OLD.last_successful IS NULL AND OLD.last_status_date IS NULL
                  WHEN 4 THEN OLD.enabled AND OLD.last_successful IS NULL AND OLD.last_status_date IS NOT NULL
                  WHEN 5 THEN OLD.enabled AND OLD.last_update IS NOT NULL
                              AND (OLD.last_successful IS NULL OR OLD.last_update > OLD.last_successful)
                  WHEN 6 THEN OLD.last_scheduled IS NOT NULL AND OLD.cooldown_until IS NOT NULL
                              AND (OLD.last_status_date IS NULL OR OLD.last_scheduled > OLD.last_status_date)
                  WHEN 7 THEN OLD.last_status_date IS NOT NULL
                  WHEN 8 THEN OLD.last_eventful IS NOT NULL
                  WHEN 9 THEN OLD.last_uneventful IS NOT NULL END
        UNION ALL
        SELECT NEW.lister_id AS lister_id, NEW.visit_type AS visit_type, k.column1 AS kind,
               CASE k.column1
                   WHEN 5 THEN CASE WHEN substr(NEW.last_update, 15) = '00:00.000000+00:00' THEN NEW.last_update ELSE strftime('%Y-%m-%dT%H:00:00.000000+00:00', NEW.last_update, '+1 hour') END
                   WHEN 6 THEN NEW.cooldown_until
                   WHEN 7 THEN CASE WHEN substr(NEW.last_status_date, 18) = '00.000000+00:00' THEN NEW.last_status_date ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', NEW.last_status_date, '+1 minute') END
                   WHEN 8 THEN CASE WHEN substr(NEW.last_eventful, 18) = '00.000000+00:00' THEN NEW.last_eventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', NEW.last_eventful, '+1 minute') END
                   WHEN 9 THEN CASE WHEN substr(NEW.last_uneventful, 18) = '00.000000+00:00' THEN NEW.last_uneventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', NEW.last_uneventful, '+1 minute') END
                   ELSE 0 END AS cell,
               1 AS origins
        FROM (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS k
        WHERE NEW.listing_count = 1 AND CASE k.column1
                  WHEN 1 THEN 1
                  WHEN 2 THEN NEW.enabled
                  WHEN 3 THEN NEW.enabled AND NEW.last_successful IS NULL AND NEW.last_status_date IS NULL
                  WHEN 4 THEN NEW.enabled AND NEW.last_successful IS NULL AND NEW.last_status_date IS NOT NULL
                  WHEN 5 THEN NEW.enabled AND NEW.last_update IS NOT NULL
                              AND (NEW.last_successful IS NULL OR NEW.last_update > NEW.last_successful)
                  WHEN 6 THEN NEW.last_scheduled IS NOT NULL AND NEW.cooldown_until IS NOT NULL
                              AND (NEW.last_status_date IS NULL OR NEW.last_scheduled > NEW.last_status_date)
                  WHEN 7 THEN NEW.last_status_date IS NOT NULL
                  WHEN 8 THEN NEW.last_eventful IS NOT NULL
                  WHEN 9 THEN NEW.last_uneventful IS NOT NULL END)
    GROUP BY lister_id, visit_type, kind, cell HAVING sum(origins) <> 0
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = origins + excluded.origins;
END;

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

-- what a visit saw of its changes (0020): the latest successful status's that carried them, per origin;
-- change_times packed as big-endian int64 microseconds since the epoch, ascending
CREATE TABLE origin_visit_changes (
    url TEXT NOT NULL,
    visit_type TEXT NOT NULL,
    -- the date of the status whose values these are
    status_date TEXT NOT NULL,
    newest_change TEXT,
    change_times BLOB CHECK (change_times IS NULL OR length(change_times) % 8 = 0),
    PRIMARY KEY (url, visit_type)
) STRICT;

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

-- lookahead in the schedule pick (0025): the live schedulers by heartbeat, and the slots they hold
CREATE TABLE scheduler_node (
    node TEXT NOT NULL,
    instance TEXT NOT NULL,
    slots INTEGER NOT NULL CHECK (slots >= 1),
    run_ends TEXT NOT NULL DEFAULT '[]',
    seen_at TEXT NOT NULL,
    PRIMARY KEY (node, instance)
) STRICT;
CREATE TABLE schedule_hold (
    node TEXT NOT NULL,
    instance TEXT NOT NULL,
    waits_for TEXT NOT NULL,
    due_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    held_at TEXT NOT NULL,
    PRIMARY KEY (node, instance, waits_for)
) STRICT;
CREATE INDEX schedule_hold_waits_idx ON schedule_hold (waits_for);
