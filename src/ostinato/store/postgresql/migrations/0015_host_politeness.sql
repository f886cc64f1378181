-- 0015: politeness per host (see docs/reference/origins.md, "Politeness per host").
--
-- Each listing and scheduling row carries its host (the URL's host, or the key its lister gave), set
-- at listing time, and here for the scheduling rows already listed. A visit type may limit the visits
-- in flight per host and space the starts on one host; a host may override both. The grab counts a
-- host's visits in flight from the rows themselves (the in-flight index holds only those, a few per
-- host), keeps each host's last start in host_politeness, and holds a lock per host while it takes
-- its origins, so that any number of orchestrators never break the limits.

ALTER TABLE listed_origin ADD COLUMN host text;
ALTER TABLE origin_visit_stats ADD COLUMN host text;
-- the host counts in no metric: the metric cells' trigger is left out of this one pass over every row
ALTER TABLE origin_visit_stats DISABLE TRIGGER origin_visit_stats_metrics_update;
UPDATE origin_visit_stats
SET host = lower(substring(url FROM '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?([^/:?#\[\]]+|\[[^]/]*\])'))
WHERE url ~ '^[A-Za-z][A-Za-z0-9+.-]*://';
ALTER TABLE origin_visit_stats ENABLE TRIGGER origin_visit_stats_metrics_update;

-- the visits in flight (as in the metrics: grabbed, no status since, cooldown not freed), by host
CREATE INDEX visit_in_flight_by_host_idx ON origin_visit_stats (visit_type, host)
    WHERE cooldown_until IS NOT NULL AND last_scheduled IS NOT NULL
      AND (last_status_date IS NULL OR last_scheduled > last_status_date);

CREATE TABLE visit_type_politeness (
    visit_type text PRIMARY KEY,
    -- NULL: no limit; else at least 1
    max_concurrent_per_host integer CHECK (max_concurrent_per_host IS NULL OR max_concurrent_per_host >= 1),
    -- seconds between two visit starts on one host; NULL: none
    min_spacing_per_host double precision CHECK (min_spacing_per_host IS NULL OR min_spacing_per_host >= 0)
);

CREATE TABLE host_politeness (
    visit_type text NOT NULL,
    host text NOT NULL,
    -- the host's own limits over its visit type's; NULL: the visit type's
    max_concurrent integer CHECK (max_concurrent IS NULL OR max_concurrent >= 1),
    min_spacing double precision CHECK (min_spacing IS NULL OR min_spacing >= 0),
    -- when a grab last started a visit on this host
    last_start timestamptz,
    PRIMARY KEY (visit_type, host)
);
CREATE INDEX host_politeness_last_start_idx ON host_politeness (visit_type, last_start)
    WHERE last_start IS NOT NULL;
