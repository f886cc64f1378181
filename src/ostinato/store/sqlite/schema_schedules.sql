-- Canonical SQLite schema of Ostinato, its schedules (see docs/design/deadline-greedy.md): schedules,
-- their declarations, fire times and runs, and the live schedulers and the slots they hold.
-- `ostinato db init` applies schema_tasks.sql, schema_schedules.sql, schema_origins.sql and
-- schema_api.sql, in this order (SCHEMA_FILES in store/migrations.py); together they must equal the
-- result of applying every file in migrations/ (a test checks).
-- Times are ISO 8601 text in UTC with microseconds (fixed width, so they sort);
-- durations are REAL seconds; JSON is canonical text.

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
, run_requested_at TEXT, expected_duration REAL, partial_failure_threshold REAL, duration_spread REAL,
last_items_done INTEGER, last_items_failed INTEGER) STRICT;
-- 0026: expected_duration (seconds, in place of the moving average; NULL: the average),
-- partial_failure_threshold (a share; NULL: the setting), duration_spread (seconds: the standard
-- deviation of good durations), last_items_done and last_items_failed (the last good run's items)

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
