-- 0003: what the scheduling policies walk (see docs/design/origins.md).
--
-- origin_visit_stats carries, per (url, visit_type), what its listings say
-- (enabled in any, earliest first_seen, newest last_update, fork) next to the
-- visit stats, so that every policy is one index walk over one table. An
-- origin that was grabbed or just visited has a cooldown_until and leaves the
-- policy indexes until the grab releases it. The table is rebuilt (SQLite's
-- way of changing a table) so that it reads exactly as schema_origins.sql.

CREATE TABLE origin_visit_stats_0002 AS SELECT * FROM origin_visit_stats;
DROP TABLE origin_visit_stats;

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
    PRIMARY KEY (url, visit_type)
) STRICT;

INSERT INTO origin_visit_stats (url, visit_type, last_visit, last_visit_status, last_successful, last_snapshot,
                                last_eventful, last_uneventful, failure_count, last_scheduled, next_visit_target,
                                last_status_date, successful_visits)
SELECT url, visit_type, last_visit, last_visit_status, last_successful, last_snapshot, last_eventful,
       last_uneventful, failure_count, last_scheduled, next_visit_target, last_status_date,
       CASE WHEN last_successful IS NULL THEN 0 ELSE 1 END
FROM origin_visit_stats_0002;
DROP TABLE origin_visit_stats_0002;

INSERT INTO origin_visit_stats (url, visit_type)
SELECT DISTINCT url, visit_type FROM listed_origin WHERE true
ON CONFLICT (url, visit_type) DO NOTHING;

UPDATE origin_visit_stats
SET enabled = a.enabled, first_seen = a.first_seen, last_update = a.last_update, is_fork = a.is_fork,
    lister_id = (SELECT o.lister_id FROM listed_origin AS o WHERE o.url = a.url AND o.visit_type = a.visit_type
                 ORDER BY o.enabled DESC, o.last_seen DESC LIMIT 1),
    extra_loader_arguments = (SELECT o.extra_loader_arguments FROM listed_origin AS o
                              WHERE o.url = a.url AND o.visit_type = a.visit_type
                              ORDER BY o.enabled DESC, o.last_seen DESC LIMIT 1),
    listing_count = a.listing_count
FROM (SELECT url, visit_type, max(enabled) AS enabled, min(first_seen) AS first_seen,
             max(last_update) AS last_update, coalesce(max(is_fork), 0) AS is_fork, count(*) AS listing_count
      FROM listed_origin GROUP BY url, visit_type) AS a
WHERE origin_visit_stats.url = a.url AND origin_visit_stats.visit_type = a.visit_type;

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
-- metrics join listed_origin only for the origins several listers list
CREATE INDEX visit_stats_multi_listed_idx ON origin_visit_stats (visit_type)
    WHERE listing_count > 1;
