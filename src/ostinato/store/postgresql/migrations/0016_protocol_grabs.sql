-- 0016: the swh protocol's face served by the store's own paths (see docs/reference/swh-compat.md).
--
-- The three fields of the protocol's visit stats that Ostinato's own have not (an origin's queue
-- position, its position offset and its successive visits) become columns of the scheduling rows:
-- they were compat records, written one statement per origin. What the listings say gets two more
-- aggregates, for the protocol's grabs: the oldest last_update of the origin's listings (the newest
-- is last_update) and whether one of them has none. The protocol's policies walk indexes keyed by
-- their orders (these aggregates bound each listing's own key), not a scan and a sort.

ALTER TABLE origin_visit_stats ADD COLUMN queue_position bigint;
ALTER TABLE origin_visit_stats ADD COLUMN position_offset integer;
ALTER TABLE origin_visit_stats ADD COLUMN successive_visits integer;
ALTER TABLE origin_visit_stats ADD COLUMN oldest_update timestamptz;
ALTER TABLE origin_visit_stats ADD COLUMN update_missing boolean NOT NULL DEFAULT false;

-- these count in no metric: the metric cells' trigger is left out of these passes over the rows
ALTER TABLE origin_visit_stats DISABLE TRIGGER origin_visit_stats_metrics_update;
UPDATE origin_visit_stats AS s SET oldest_update = o.oldest, update_missing = o.missing
FROM (SELECT url, visit_type, min(last_update) AS oldest, bool_or(last_update IS NULL) AS missing
      FROM listed_origin GROUP BY url, visit_type) AS o
WHERE s.url = o.url AND s.visit_type = o.visit_type;
UPDATE origin_visit_stats AS s
SET queue_position = (c.value ->> 'next_visit_queue_position')::bigint,
    position_offset = (c.value ->> 'next_position_offset')::integer,
    successive_visits = (c.value ->> 'successive_visits')::integer
FROM compat_record AS c
WHERE c.namespace = 'swh.visit_stats' AND c.key = s.visit_type || ' ' || s.url;
ALTER TABLE origin_visit_stats ENABLE TRIGGER origin_visit_stats_metrics_update;
DELETE FROM compat_record WHERE namespace = 'swh.visit_stats';

-- the protocol's policies not served by an index of Ostinato's own (oldest_scheduled_first and
-- first_visits_after_listing walk visit_oldest_scheduled_idx, already_visited_order_by_lag walks
-- visit_by_lag_idx)
CREATE INDEX protocol_stop_after_success_idx ON origin_visit_stats (visit_type, oldest_update NULLS LAST, first_seen)
    WHERE enabled AND cooldown_until IS NULL AND last_visit_status IS DISTINCT FROM 'successful';
CREATE INDEX protocol_never_visited_idx ON origin_visit_stats (visit_type, oldest_update)
    WHERE enabled AND cooldown_until IS NULL AND last_snapshot IS NULL AND oldest_update IS NOT NULL;
CREATE INDEX protocol_without_update_idx ON origin_visit_stats (visit_type, queue_position NULLS FIRST, first_seen)
    WHERE enabled AND cooldown_until IS NULL AND update_missing;
