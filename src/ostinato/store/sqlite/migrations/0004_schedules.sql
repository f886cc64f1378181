-- 0004: schedules (deadline-greedy scheduling, periodic
-- tasks) and their run history.

CREATE TABLE schedule (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('periodic', 'calendar')),
    task_type TEXT NOT NULL,
    arguments TEXT NOT NULL DEFAULT '{"args":[],"kwargs":{}}',
    mode TEXT NOT NULL CHECK (mode IN ('run', 'submit')),
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
    should_start_by TEXT
) STRICT;

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
