-- 0020: what a visit saw of its changes (see docs/reference/origins.md, "What a visit saw").
--
-- A visit status may carry the newest change's time its loader found and the change times it
-- found since its previous visit (at most 64: domain.limits.MAX_CHANGE_TIMES). Each (url, visit
-- type) keeps those of its latest successful status that carried them, in a table of their own:
-- off origin_visit_stats, which every status rewrites, while most statuses carry no times. The
-- statuses that carry them write it in their own transaction, a batch in one statement; a status
-- not newer than the one kept changes nothing (replays and late messages, as for the stats).
--
-- change_times: the times packed as big-endian signed 64-bit microseconds since 1970-01-01 UTC,
-- ascending. 8 bytes a time and no header per time (a bigint[] or timestamptz[] adds about 20
-- bytes a row), 512 bytes at most, so kept inline; the same encoding in both stores, read whole
-- (store/origins/rows.py); microseconds, so that the times come back exactly as given (a git
-- committer date is whole seconds, other loaders' times need not be). NULL: the status gave only
-- newest_change. The two single times are the store's own timestamptz, compared (the newer-status
-- guard) and read like every other time.
CREATE TABLE origin_visit_changes (
    url text NOT NULL,
    visit_type text NOT NULL,
    -- the date of the status whose values these are
    status_date timestamptz NOT NULL,
    newest_change timestamptz,
    change_times bytea CHECK (octet_length(change_times) % 8 = 0),
    PRIMARY KEY (url, visit_type)
);
