-- 0003: what the scheduling policies walk (see docs/design/origins.md).
--
-- origin_visit_stats carries, per (url, visit_type), what its listings say
-- (enabled in any, earliest first_seen, newest last_update, fork) next to the
-- visit stats, so that every policy is one index walk over one table. An
-- origin that was grabbed or just visited has a cooldown_until and leaves the
-- policy indexes until the grab releases it, so walks never wade through
-- origins cooling down.

ALTER TABLE origin_visit_stats
    ADD COLUMN successful_visits integer NOT NULL DEFAULT 0,
    ADD COLUMN cooldown_until timestamptz,
    ADD COLUMN enabled boolean NOT NULL DEFAULT false,
    ADD COLUMN first_seen timestamptz,
    ADD COLUMN last_update timestamptz,
    ADD COLUMN is_fork boolean NOT NULL DEFAULT false,
    ADD COLUMN lister_id bigint,
    ADD COLUMN extra_loader_arguments jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN listing_count integer NOT NULL DEFAULT 0;

-- a per-row foreign key check cost a sixth of recording listed origins; the
-- store checks the lister once per batch instead
ALTER TABLE listed_origin DROP CONSTRAINT listed_origin_lister_id_fkey;

INSERT INTO origin_visit_stats (url, visit_type)
SELECT DISTINCT url, visit_type FROM listed_origin
ON CONFLICT (url, visit_type) DO NOTHING;

UPDATE origin_visit_stats AS s
SET enabled = a.enabled, first_seen = a.first_seen, last_update = a.last_update, is_fork = a.is_fork,
    lister_id = a.listings[1], extra_loader_arguments = a.extras[1], listing_count = a.listing_count,
    successful_visits = CASE WHEN s.last_successful IS NULL THEN 0 ELSE 1 END
FROM (SELECT url, visit_type, bool_or(enabled) AS enabled, min(first_seen) AS first_seen,
             max(last_update) AS last_update, coalesce(bool_or(is_fork), false) AS is_fork,
             array_agg(lister_id ORDER BY enabled DESC, last_seen DESC) AS listings,
             array_agg(extra_loader_arguments ORDER BY enabled DESC, last_seen DESC) AS extras,
             count(*) AS listing_count
      FROM listed_origin GROUP BY url, visit_type) AS a
WHERE s.url = a.url AND s.visit_type = a.visit_type;

CREATE TABLE origin_metrics (
    lister_id bigint NOT NULL REFERENCES lister (id),
    visit_type text NOT NULL,
    computed_at timestamptz NOT NULL,
    origins_known bigint NOT NULL,
    origins_enabled bigint NOT NULL,
    origins_never_visited bigint NOT NULL,
    origins_with_pending_changes bigint NOT NULL,
    -- lag (now - last_update) of origins with pending changes: {"upper bound in seconds": count}
    lag_histogram jsonb NOT NULL,
    lag_max interval,
    PRIMARY KEY (lister_id, visit_type)
);

CREATE INDEX visit_cooldown_idx ON origin_visit_stats (visit_type, cooldown_until)
    WHERE cooldown_until IS NOT NULL;
CREATE INDEX visit_never_visited_idx ON origin_visit_stats (visit_type, is_fork, last_update)
    WHERE enabled AND cooldown_until IS NULL AND last_successful IS NULL AND last_update IS NOT NULL;
CREATE INDEX visit_by_lag_idx ON origin_visit_stats (visit_type, (last_update - last_successful) DESC)
    WHERE enabled AND cooldown_until IS NULL AND last_update > last_successful;
CREATE INDEX visit_without_update_never_loaded_idx ON origin_visit_stats (visit_type, first_seen)
    WHERE enabled AND cooldown_until IS NULL AND last_update IS NULL AND last_successful IS NULL;
CREATE INDEX visit_without_update_loaded_once_idx ON origin_visit_stats (visit_type, last_visit)
    WHERE enabled AND cooldown_until IS NULL AND last_update IS NULL AND successful_visits = 1;
CREATE INDEX visit_without_update_loaded_more_idx ON origin_visit_stats (visit_type, next_visit_target)
    WHERE enabled AND cooldown_until IS NULL AND last_update IS NULL AND successful_visits > 1;
CREATE INDEX visit_oldest_scheduled_idx ON origin_visit_stats (visit_type, last_scheduled NULLS FIRST)
    WHERE enabled AND cooldown_until IS NULL;
CREATE INDEX visit_stop_after_success_idx ON origin_visit_stats (visit_type, last_scheduled NULLS FIRST)
    WHERE enabled AND cooldown_until IS NULL AND last_successful IS NULL;
-- metrics join listed_origin only for the origins several listers list
CREATE INDEX visit_stats_multi_listed_idx ON origin_visit_stats (visit_type)
    WHERE listing_count > 1;
