-- 0020: what a visit saw of its changes (see docs/reference/origins.md, "What a visit saw").
--
-- A visit status may carry the newest change's time its loader found and the change times it
-- found since its previous visit (at most 64: domain.limits.MAX_CHANGE_TIMES). Each (url, visit
-- type) keeps those of its latest successful status that carried them, in a table of their own:
-- off origin_visit_stats, which every status rewrites, while most statuses carry no times. The
-- statuses that carry them write it in their own transaction; a status not newer than the one
-- kept changes nothing (replays and late messages, as for the stats).
--
-- change_times: the times packed as big-endian signed 64-bit microseconds since 1970-01-01 UTC,
-- ascending, in a BLOB. 8 bytes a time where a JSON array of this store's times would take about
-- 35, 512 bytes at most; the same encoding in both stores, read whole (store/origins/rows.py);
-- microseconds, so that the times come back exactly as given (a git committer date is whole
-- seconds, other loaders' times need not be). NULL: the status gave only newest_change. The two
-- single times are this store's own time text, compared (the newer-status guard) and read like
-- every other time.
CREATE TABLE origin_visit_changes (
    url TEXT NOT NULL,
    visit_type TEXT NOT NULL,
    -- the date of the status whose values these are
    status_date TEXT NOT NULL,
    newest_change TEXT,
    change_times BLOB CHECK (change_times IS NULL OR length(change_times) % 8 = 0),
    PRIMARY KEY (url, visit_type)
) STRICT;
