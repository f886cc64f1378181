-- Canonical SQLite schema of Ostinato, its origins (see docs/design/origins.md): listers, listed origins,
-- visit stats and changes, politeness per host, change_rate_optimal's threshold, and the origin metrics
-- and their cells.
-- `ostinato db init` applies schema_tasks.sql, schema_schedules.sql, schema_origins.sql and
-- schema_api.sql, in this order (SCHEMA_FILES in store/migrations.py); together they must equal the
-- result of applying every file in migrations/ (a test checks).
-- Times are ISO 8601 text in UTC with microseconds (fixed width, so they sort);
-- durations are REAL seconds; JSON is canonical text.

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
-- (0028) an origin with no optimal revisit time last, as PostgreSQL sorts a NULL
CREATE INDEX visit_optimal_due_idx ON origin_visit_stats (visit_type, next_optimal_visit IS NULL, next_optimal_visit)
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
-- metrics join listed_origin only for the origins several listers list
CREATE INDEX visit_stats_multi_listed_idx ON origin_visit_stats (visit_type)
    WHERE listing_count > 1;

-- origin metrics kept up to date by the writes (0012): each origin one lister lists makes up
-- cells of its lister's counts, changed with it (see migrations/0012_origin_metric_cells.sql)
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

-- (0029) the rule, written once (the triggers below and the full recount read it): the cells each
-- scheduling row counts in (origins one lister lists only), the kinds of origin_metric_cell above; a
-- row's cells are taken away before it changes or goes and added after it is inserted or has changed
CREATE VIEW origin_metric_cell_of_row AS
SELECT s.rowid AS row, s.lister_id AS lister_id, s.visit_type AS visit_type, k.column1 AS kind,
       CASE k.column1
           WHEN 5 THEN CASE WHEN substr(s.last_update, 15) = '00:00.000000+00:00' THEN s.last_update ELSE strftime('%Y-%m-%dT%H:00:00.000000+00:00', s.last_update, '+1 hour') END
           WHEN 6 THEN s.cooldown_until
           WHEN 7 THEN CASE WHEN substr(s.last_status_date, 18) = '00.000000+00:00' THEN s.last_status_date ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', s.last_status_date, '+1 minute') END
           WHEN 8 THEN CASE WHEN substr(s.last_eventful, 18) = '00.000000+00:00' THEN s.last_eventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', s.last_eventful, '+1 minute') END
           WHEN 9 THEN CASE WHEN substr(s.last_uneventful, 18) = '00.000000+00:00' THEN s.last_uneventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', s.last_uneventful, '+1 minute') END
           ELSE 0 END AS cell
FROM origin_visit_stats AS s CROSS JOIN (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS k  -- the row first: one lookup a trigger
WHERE s.listing_count = 1 AND CASE k.column1
          WHEN 1 THEN 1
          WHEN 2 THEN s.enabled
          WHEN 3 THEN s.enabled AND s.last_successful IS NULL AND s.last_status_date IS NULL
          WHEN 4 THEN s.enabled AND s.last_successful IS NULL AND s.last_status_date IS NOT NULL
          WHEN 5 THEN s.enabled AND s.last_update IS NOT NULL
                      AND (s.last_successful IS NULL OR s.last_update > s.last_successful)
          WHEN 6 THEN s.last_scheduled IS NOT NULL AND s.cooldown_until IS NOT NULL
                      AND (s.last_status_date IS NULL OR s.last_scheduled > s.last_status_date)
          WHEN 7 THEN s.last_status_date IS NOT NULL
          WHEN 8 THEN s.last_eventful IS NOT NULL
          WHEN 9 THEN s.last_uneventful IS NOT NULL END;

CREATE TRIGGER origin_visit_stats_metrics_insert AFTER INSERT ON origin_visit_stats WHEN NEW.listing_count = 1
BEGIN
    INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
    SELECT lister_id, visit_type, kind, cell, 1 FROM origin_metric_cell_of_row
    WHERE row = NEW.rowid
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = origins + excluded.origins;
END;
CREATE TRIGGER origin_visit_stats_metrics_delete BEFORE DELETE ON origin_visit_stats WHEN OLD.listing_count = 1
BEGIN
    INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
    SELECT lister_id, visit_type, kind, cell, -1 FROM origin_metric_cell_of_row
    WHERE row = OLD.rowid
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = origins + excluded.origins;
END;
CREATE TRIGGER origin_visit_stats_metrics_update_old BEFORE UPDATE ON origin_visit_stats
WHEN OLD.listing_count = 1 AND (
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
    SELECT lister_id, visit_type, kind, cell, -1 FROM origin_metric_cell_of_row
    WHERE row = OLD.rowid
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = origins + excluded.origins;
END;
CREATE TRIGGER origin_visit_stats_metrics_update_new AFTER UPDATE ON origin_visit_stats
WHEN NEW.listing_count = 1 AND (
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
    SELECT lister_id, visit_type, kind, cell, 1 FROM origin_metric_cell_of_row
    WHERE row = NEW.rowid
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = origins + excluded.origins;
END;

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
