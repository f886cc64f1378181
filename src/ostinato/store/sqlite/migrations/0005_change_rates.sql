-- 0005: the change_rate_optimal policy (see docs/design/beyond.md).
--
-- Each origin keeps its change rate's belief (changes seen over days observed;
-- NULL: the prior) and the time its optimal revisit falls due; the policy walks
-- never-visited origins by first_seen, then the others by that time. One
-- threshold per visit type, steered to the visit capacity, spaces the revisits.
-- The table is rebuilt (SQLite's way of changing a table) so that it reads
-- exactly as schema_origins.sql; its indexes with it.

CREATE TABLE origin_visit_stats_0004 AS SELECT * FROM origin_visit_stats;
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
    -- change_rate_optimal: the change rate's belief (changes seen over days observed; NULL: the prior)
    rate_changes REAL,
    rate_days REAL,
    -- when change_rate_optimal visits it next
    next_optimal_visit TEXT,
    PRIMARY KEY (url, visit_type)
) STRICT;

INSERT INTO origin_visit_stats (url, visit_type, last_visit, last_visit_status, last_successful, last_snapshot, last_eventful, last_uneventful, failure_count, last_scheduled, next_visit_target, last_status_date, successful_visits, cooldown_until, enabled, first_seen, last_update, is_fork, lister_id, extra_loader_arguments, listing_count, next_optimal_visit)
SELECT url, visit_type, last_visit, last_visit_status, last_successful, last_snapshot, last_eventful, last_uneventful, failure_count, last_scheduled, next_visit_target, last_status_date, successful_visits, cooldown_until, enabled, first_seen, last_update, is_fork, lister_id, extra_loader_arguments, listing_count, last_successful
FROM origin_visit_stats_0004;
DROP TABLE origin_visit_stats_0004;

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
CREATE INDEX visit_optimal_never_visited_idx ON origin_visit_stats (visit_type, first_seen)
    WHERE enabled AND cooldown_until IS NULL AND last_successful IS NULL;
CREATE INDEX visit_optimal_due_idx ON origin_visit_stats (visit_type, next_optimal_visit)
    WHERE enabled AND cooldown_until IS NULL AND last_successful IS NOT NULL;

CREATE TABLE revisit_threshold (
    visit_type TEXT PRIMARY KEY,
    -- the Lagrange multiplier that spaces revisits (see ostinato.domain.change_rates)
    threshold REAL NOT NULL CHECK (threshold > 0),
    -- what it was steered to: visits a day, over this many enabled origins
    visits_per_day REAL NOT NULL,
    origins INTEGER NOT NULL,
    computed_at TEXT NOT NULL
) STRICT;
