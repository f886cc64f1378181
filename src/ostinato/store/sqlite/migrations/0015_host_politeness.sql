-- 0015: politeness per host (see docs/reference/origins.md, "Politeness per host").
--
-- Each listing and scheduling row carries its host (the URL's host, or the key its lister gave), set
-- at listing time, and here for the scheduling rows already listed. A visit type may limit the visits
-- in flight per host and space the starts on one host; a host may override both. The grab counts a
-- host's visits in flight from the rows themselves (the in-flight index holds only those, a few per
-- host), keeps each host's last start in host_politeness, and holds a lock per host while it takes
-- its origins, so that any number of orchestrators never break the limits.

ALTER TABLE listed_origin ADD COLUMN host TEXT;
ALTER TABLE origin_visit_stats ADD COLUMN host TEXT;
-- ostinato_host: the store's function of domain.politeness.host_of
UPDATE origin_visit_stats SET host = ostinato_host(url);

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
