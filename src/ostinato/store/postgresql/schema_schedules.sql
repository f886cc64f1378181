-- Canonical PostgreSQL schema of Ostinato, its schedules (see docs/design/deadline-greedy.md): schedules,
-- their declarations, fire times and runs, and the live schedulers and the slots they hold.
-- `ostinato db init` applies schema_tasks.sql, schema_schedules.sql, schema_origins.sql and
-- schema_api.sql, in this order (SCHEMA_FILES in store/migrations.py); together they must equal the
-- result of applying every file in migrations/ (a test checks).

-- schedules (see docs/design/deadline-greedy.md) and their run history

CREATE TABLE schedule (
    name text PRIMARY KEY,
    kind text NOT NULL CHECK (kind IN ('periodic', 'calendar')),
    task_type text NOT NULL,
    arguments jsonb NOT NULL DEFAULT '{"args": [], "kwargs": {}}',
    mode text NOT NULL CHECK (mode IN ('run', 'submit', 'send')),
    scheduling_period interval,
    cooldown_duration interval,
    cron_schedule text,
    cron_max_schedule_duration interval,
    tz text NOT NULL,
    enabled boolean NOT NULL,
    max_expected_duration interval,
    max_allowed_duration interval,
    blackout_periods jsonb NOT NULL DEFAULT '[]',
    dont_run_on_nodes text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL,
    last_good_start_at timestamptz,
    last_good_end_at timestamptz,
    last_start_at timestamptz,
    last_end_at timestamptz,
    failure_count integer,
    average_good_duration interval,
    owner_started_at timestamptz,
    owner_node text,
    owner_name text,
    owner_tag text,
    owner_last_ping_at timestamptz,
    steal_start_at timestamptz,
    -- get_schedule_start_times(), stored whenever the schedule changes, so that a
    -- pick is an index walk instead of a fetch of every schedule
    can_start_by timestamptz,
    should_start_by timestamptz,
    -- what happens to the fire times an outage made it miss (domain/firings.py)
    catch_up text NOT NULL DEFAULT 'latest' CHECK (catch_up IN ('latest', 'all', 'skip')),
    catch_up_budget integer,
    -- seconds after failure 1, 2, 3 or more; NULL: the setting schedule_retry_backoff
    retry_backoff jsonb,
    -- mode 'send': Celery's options of the send
    options jsonb NOT NULL DEFAULT '{}',
    -- declared in code: by whom, with which fingerprint (domain/declarations.py)
    declared_by text,
    declaration text,
    -- the last fire time handled (run, sent or skipped)
    fired_through timestamptz,
    -- mode 'send': the next fire time to send, stored so that a beat's claim is an index walk
    next_fire_at timestamptz,
    -- a run asked for now (schedule run-now): pending until a run starts at or after it
    run_requested_at timestamptz,
    -- how long a run is expected to last, in place of the moving average (NULL: the average)
    expected_duration interval,
    -- the failed share of a good run's items above which it reads partial_failure (NULL: the setting)
    partial_failure_threshold double precision,
    -- the exponentially weighted standard deviation of good durations, beside average_good_duration
    duration_spread interval,
    -- the items the last good run reported (NULL: none)
    last_items_done bigint,
    last_items_failed bigint
);

-- the pick: among schedules not running, lowest should_start_by first (the walk
-- skips the few whose can_start_by is still ahead: retried or blacked out)
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
    source text NOT NULL,
    fingerprint text NOT NULL,
    first_seen_at timestamptz NOT NULL,
    schedules integer NOT NULL,
    PRIMARY KEY (source, fingerprint)
);

-- the ledger of fire times: claimed (a beat sends it, until lease_until), sent (the broker
-- took it) or skipped (by the catch-up rule: a run of consecutive fire times, through
-- last_at, firings of them, NULL when too many to count)
CREATE TABLE schedule_firing (
    schedule text NOT NULL,
    nominal_at timestamptz NOT NULL,
    status text NOT NULL CHECK (status IN ('claimed', 'sent', 'skipped')),
    last_at timestamptz,
    firings integer,
    claimed_by text,
    lease_until timestamptz,
    sender text,
    handled_at timestamptz NOT NULL,
    sent_at timestamptz,
    PRIMARY KEY (schedule, nominal_at)
);
-- claims whose beat went silent, by the end of their lease
CREATE INDEX schedule_firing_lease_idx ON schedule_firing (lease_until)
    WHERE status = 'claimed';

CREATE TABLE schedule_run (
    id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    schedule text NOT NULL,
    owner_tag text NOT NULL,
    owner_node text NOT NULL,
    owner_name text NOT NULL,
    started_at timestamptz NOT NULL,
    ended_at timestamptz,
    status text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'stopped', 'stolen', 'lost', 'submitted')),
    detail jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX schedule_run_schedule_idx ON schedule_run (schedule, started_at);
CREATE UNIQUE INDEX schedule_run_tag_idx ON schedule_run (owner_tag);

-- lookahead in the schedule pick (0025): the live schedulers by heartbeat, and the slots they hold
CREATE TABLE scheduler_node (
    node text NOT NULL,
    instance text NOT NULL,
    slots integer NOT NULL CHECK (slots >= 1),
    run_ends timestamptz[] NOT NULL DEFAULT '{}',
    seen_at timestamptz NOT NULL,
    PRIMARY KEY (node, instance)
);
CREATE TABLE schedule_hold (
    node text NOT NULL,
    instance text NOT NULL,
    waits_for text NOT NULL,
    due_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    held_at timestamptz NOT NULL,
    PRIMARY KEY (node, instance, waits_for)
);
CREATE INDEX schedule_hold_waits_idx ON schedule_hold (waits_for);
