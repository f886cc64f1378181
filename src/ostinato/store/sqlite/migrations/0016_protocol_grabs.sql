-- 0016: the swh protocol's face served by the store's own paths (see docs/reference/swh-compat.md).
--
-- The three fields of the protocol's visit stats that Ostinato's own have not (an origin's queue
-- position, its position offset and its successive visits) become columns of the scheduling rows:
-- they were compat records, written one statement per origin. What the listings say gets two more
-- aggregates, for the protocol's grabs: the oldest last_update of the origin's listings (the newest
-- is last_update) and whether one of them has none. The protocol's policies walk indexes keyed by
-- their orders (these aggregates bound each listing's own key), not a scan and a sort.

ALTER TABLE origin_visit_stats ADD COLUMN queue_position INTEGER;
ALTER TABLE origin_visit_stats ADD COLUMN position_offset INTEGER;
ALTER TABLE origin_visit_stats ADD COLUMN successive_visits INTEGER;
ALTER TABLE origin_visit_stats ADD COLUMN oldest_update TEXT;
ALTER TABLE origin_visit_stats ADD COLUMN update_missing INTEGER NOT NULL DEFAULT 0;

-- (the metric cells' trigger looks at none of these columns)
UPDATE origin_visit_stats AS s
SET oldest_update = (SELECT min(o.last_update) FROM listed_origin AS o WHERE o.url = s.url AND o.visit_type = s.visit_type),
    update_missing = coalesce((SELECT max(o.last_update IS NULL) FROM listed_origin AS o
                               WHERE o.url = s.url AND o.visit_type = s.visit_type), 0);
UPDATE origin_visit_stats AS s
SET queue_position = c.value ->> '$.next_visit_queue_position',
    position_offset = c.value ->> '$.next_position_offset',
    successive_visits = c.value ->> '$.successive_visits'
FROM compat_record AS c
WHERE c.namespace = 'swh.visit_stats' AND c.key = s.visit_type || ' ' || s.url;
DELETE FROM compat_record WHERE namespace = 'swh.visit_stats';

-- the protocol's policies not served by an index of Ostinato's own (oldest_scheduled_first and
-- first_visits_after_listing walk visit_oldest_scheduled_idx, already_visited_order_by_lag walks
-- visit_by_lag_idx); an index of SQLite keeps nulls first: "oldest_update IS NULL" puts them last
CREATE INDEX protocol_stop_after_success_idx
    ON origin_visit_stats (visit_type, oldest_update IS NULL, oldest_update, first_seen)
    WHERE enabled AND cooldown_until IS NULL AND last_visit_status IS NOT 'successful';
CREATE INDEX protocol_never_visited_idx ON origin_visit_stats (visit_type, oldest_update)
    WHERE enabled AND cooldown_until IS NULL AND last_snapshot IS NULL AND oldest_update IS NOT NULL;
CREATE INDEX protocol_without_update_idx ON origin_visit_stats (visit_type, queue_position, first_seen)
    WHERE enabled AND cooldown_until IS NULL AND update_missing;
