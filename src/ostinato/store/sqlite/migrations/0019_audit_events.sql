-- 0019: the audit trail of the dashboard's actions (see docs/reference/api.md, "Dashboard").
--
-- One row per action a person took through the dashboard (pause, resume or run now a schedule;
-- disable, enable or retry a task): who (the API token's name), when (the server's clock), what
-- (the action and its target, 'schedule:NAME' or 'task:ID') and how it went. Rows are only added;
-- the pages read the newest, of one target or of all.

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
