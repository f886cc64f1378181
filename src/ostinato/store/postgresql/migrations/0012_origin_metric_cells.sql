-- 0011: origin metrics kept up to date by the writes themselves, not recounted.
--
-- Each scheduling row (origin_visit_stats) of an origin one lister lists makes up part of its
-- lister's counts: cells of origin_metric_cell, by kind (see origin_metric_cells below). Every
-- statement that changes such rows gathers what they take away and add (a statement trigger
-- over its transition tables, grouped by cell); the transaction applies the sum once, as it
-- commits (a deferred trigger), in key order: writers never wait on each other before their
-- commit and never deadlock. `ostinato metrics update` reads the cells (and counts the few
-- origins several listers list, which count once per listing), whatever the number of origins.

CREATE TABLE origin_metric_cell (
    lister_id bigint NOT NULL,
    visit_type text NOT NULL,
    -- 1 known, 2 enabled, 3 never visited, 4 never successful (cell 0); 5 with changes pending
    -- (cell: the hour at or after last_update, in hours since 1970); 6 in flight (cell: the end
    -- of the grab's cooldown, in microseconds since 1970); 7 visited, 8 eventful, 9 uneventful
    -- (cell: the minute at or after the visit, in minutes since 1970)
    kind smallint NOT NULL,
    cell bigint NOT NULL,
    origins bigint NOT NULL,
    PRIMARY KEY (lister_id, visit_type, kind, cell)
);

-- what a transaction's statements changed, until it commits (one row per transaction)
CREATE TABLE origin_metric_delta (
    xid xid8 PRIMARY KEY,
    lister_ids bigint[] NOT NULL,
    visit_types text[] NOT NULL,
    kinds smallint[] NOT NULL,
    cells bigint[] NOT NULL,
    origins bigint[] NOT NULL
);

-- the cells of one scheduling row. Activity at or before `horizon` (the writer's clock, to
-- the minute, less the activity window: see domain/origin_metrics.py) is over for every
-- later count and left out; without a horizon every cell is kept.
CREATE FUNCTION origin_metric_cells(enabled boolean, last_update timestamptz, last_successful timestamptz,
                                    last_status_date timestamptz, last_scheduled timestamptz,
                                    cooldown_until timestamptz, last_eventful timestamptz,
                                    last_uneventful timestamptz, horizon timestamptz)
RETURNS TABLE (kind smallint, cell bigint) LANGUAGE sql IMMUTABLE AS $$
    SELECT 1::smallint, 0::bigint
    UNION ALL SELECT 2::smallint, 0::bigint WHERE enabled
    UNION ALL SELECT 3::smallint, 0::bigint WHERE enabled AND last_successful IS NULL AND last_status_date IS NULL
    UNION ALL SELECT 4::smallint, 0::bigint WHERE enabled AND last_successful IS NULL AND last_status_date IS NOT NULL
    UNION ALL SELECT 5::smallint, ceil(extract(epoch FROM last_update) / 3600)::bigint
        WHERE enabled AND last_update IS NOT NULL AND (last_successful IS NULL OR last_update > last_successful)
    UNION ALL SELECT 6::smallint, (extract(epoch FROM cooldown_until) * 1000000)::bigint
        WHERE last_scheduled IS NOT NULL AND cooldown_until IS NOT NULL
          AND (last_status_date IS NULL OR last_scheduled > last_status_date)
          AND (horizon IS NULL OR cooldown_until > horizon)
    UNION ALL SELECT 7::smallint, ceil(extract(epoch FROM last_status_date) / 60)::bigint
        WHERE last_status_date IS NOT NULL AND (horizon IS NULL OR last_status_date > horizon)
    UNION ALL SELECT 8::smallint, ceil(extract(epoch FROM last_eventful) / 60)::bigint
        WHERE last_eventful IS NOT NULL AND (horizon IS NULL OR last_eventful > horizon)
    UNION ALL SELECT 9::smallint, ceil(extract(epoch FROM last_uneventful) / 60)::bigint
        WHERE last_uneventful IS NOT NULL AND (horizon IS NULL OR last_uneventful > horizon)
$$;

-- a statement's changes of the cells: what its new rows add, less what its old rows made up
-- (origins one lister lists only); the writer's horizon comes in ostinato.metrics_horizon
CREATE FUNCTION origin_visit_stats_metric_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    horizon timestamptz := nullif(current_setting('ostinato.metrics_horizon', true), '')::timestamptz;
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO origin_metric_delta AS d (xid, lister_ids, visit_types, kinds, cells, origins)
        SELECT pg_current_xact_id(), array_agg(t.lister_id), array_agg(t.visit_type), array_agg(t.kind),
               array_agg(t.cell), array_agg(t.origins)
        FROM (SELECT s.lister_id, s.visit_type, c.kind, c.cell, count(*) AS origins
              FROM new_rows AS s
              CROSS JOIN LATERAL origin_metric_cells(s.enabled, s.last_update, s.last_successful, s.last_status_date,
                                                     s.last_scheduled, s.cooldown_until, s.last_eventful,
                                                     s.last_uneventful, horizon) AS c
              WHERE s.listing_count = 1
              GROUP BY 1, 2, 3, 4) AS t
        HAVING count(*) > 0
        ON CONFLICT (xid) DO UPDATE SET lister_ids = d.lister_ids || excluded.lister_ids,
            visit_types = d.visit_types || excluded.visit_types, kinds = d.kinds || excluded.kinds,
            cells = d.cells || excluded.cells, origins = d.origins || excluded.origins;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO origin_metric_delta AS d (xid, lister_ids, visit_types, kinds, cells, origins)
        SELECT pg_current_xact_id(), array_agg(t.lister_id), array_agg(t.visit_type), array_agg(t.kind),
               array_agg(t.cell), array_agg(t.origins)
        FROM (SELECT s.lister_id, s.visit_type, c.kind, c.cell, sum(s.sign) AS origins
              FROM (SELECT 1 AS sign, * FROM new_rows UNION ALL SELECT -1, * FROM old_rows) AS s
              CROSS JOIN LATERAL origin_metric_cells(s.enabled, s.last_update, s.last_successful, s.last_status_date,
                                                     s.last_scheduled, s.cooldown_until, s.last_eventful,
                                                     s.last_uneventful, horizon) AS c
              WHERE s.listing_count = 1
              GROUP BY 1, 2, 3, 4 HAVING sum(s.sign) <> 0) AS t
        HAVING count(*) > 0
        ON CONFLICT (xid) DO UPDATE SET lister_ids = d.lister_ids || excluded.lister_ids,
            visit_types = d.visit_types || excluded.visit_types, kinds = d.kinds || excluded.kinds,
            cells = d.cells || excluded.cells, origins = d.origins || excluded.origins;
    ELSE
        INSERT INTO origin_metric_delta AS d (xid, lister_ids, visit_types, kinds, cells, origins)
        SELECT pg_current_xact_id(), array_agg(t.lister_id), array_agg(t.visit_type), array_agg(t.kind),
               array_agg(t.cell), array_agg(t.origins)
        FROM (SELECT s.lister_id, s.visit_type, c.kind, c.cell, -count(*) AS origins
              FROM old_rows AS s
              CROSS JOIN LATERAL origin_metric_cells(s.enabled, s.last_update, s.last_successful, s.last_status_date,
                                                     s.last_scheduled, s.cooldown_until, s.last_eventful,
                                                     s.last_uneventful, horizon) AS c
              WHERE s.listing_count = 1
              GROUP BY 1, 2, 3, 4) AS t
        HAVING count(*) > 0
        ON CONFLICT (xid) DO UPDATE SET lister_ids = d.lister_ids || excluded.lister_ids,
            visit_types = d.visit_types || excluded.visit_types, kinds = d.kinds || excluded.kinds,
            cells = d.cells || excluded.cells, origins = d.origins || excluded.origins;
    END IF;
    RETURN NULL;
END
$$;

-- at commit: the transaction's changes, summed by cell, applied in key order
CREATE FUNCTION origin_metric_delta_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO origin_metric_cell AS c (lister_id, visit_type, kind, cell, origins)
    SELECT u.lister_id, u.visit_type, u.kind, u.cell, sum(u.origins)
    FROM origin_metric_delta AS d,
         unnest(d.lister_ids, d.visit_types, d.kinds, d.cells, d.origins) AS u(lister_id, visit_type, kind, cell, origins)
    WHERE d.xid = NEW.xid
    GROUP BY 1, 2, 3, 4 HAVING sum(u.origins) <> 0
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = c.origins + excluded.origins;
    DELETE FROM origin_metric_delta WHERE xid = NEW.xid;
    RETURN NULL;
END
$$;

CREATE TRIGGER origin_visit_stats_metrics_insert AFTER INSERT ON origin_visit_stats
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION origin_visit_stats_metric_changes();
CREATE TRIGGER origin_visit_stats_metrics_update AFTER UPDATE ON origin_visit_stats
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION origin_visit_stats_metric_changes();
CREATE TRIGGER origin_visit_stats_metrics_delete AFTER DELETE ON origin_visit_stats
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION origin_visit_stats_metric_changes();
CREATE CONSTRAINT TRIGGER origin_metric_delta_at_commit AFTER INSERT ON origin_metric_delta
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION origin_metric_delta_apply();

-- the cells of the origins already there
INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
SELECT s.lister_id, s.visit_type, c.kind, c.cell, count(*)
FROM origin_visit_stats AS s
CROSS JOIN LATERAL origin_metric_cells(s.enabled, s.last_update, s.last_successful, s.last_status_date,
                                       s.last_scheduled, s.cooldown_until, s.last_eventful, s.last_uneventful,
                                       NULL) AS c
WHERE s.listing_count = 1
GROUP BY 1, 2, 3, 4;
