-- 0018: the console's history (see docs/reference/api.md, "History").
--
-- Samples of what the dashboard shows, per series (a visit type, a schedule, a task type), taken
-- by the history pass (ostinato history sample; the API server's own loop) every five minutes and
-- rolled up to the hour and to six hours: a sample per series and interval (its start, `at`), its
-- figures as a small JSON object. Each resolution is kept for a bounded time (a day, a week, a
-- month), so the table holds at most 288 + 168 + 120 rows per series, whatever the origins.

CREATE TABLE history_sample (
    -- 'visit_type:git', 'schedule:bills', 'task_type:load-git'
    series text NOT NULL,
    -- seconds per sample: 300, 3600 or 21600
    resolution integer NOT NULL CHECK (resolution > 0),
    -- the start of its interval
    at timestamptz NOT NULL,
    sample jsonb NOT NULL,
    PRIMARY KEY (series, resolution, at)
);
-- the pruning: a resolution's samples older than its span
CREATE INDEX history_sample_age_idx ON history_sample (resolution, at);
