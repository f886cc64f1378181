-- 0013: cheaper metric cells, and pending changes a week old kept by the day.
--
-- A listing batch over years of last_update touched an hour cell per distinct hour; a
-- last_update a week before the writer's horizon now goes in a day cell (kind 10), and the
-- reader counts an hour cell a week old with its day cell, so the cells 0012 wrote stay
-- right. The statement trigger reads its rows once per family of cells (one query for its
-- three events), a grab that counts what it puts in flight itself is left alone
-- (ostinato.metrics_by_statement), the cells are applied in bytewise key order, and the
-- cell table leaves room on its pages for HOT updates.

ALTER TABLE origin_metric_cell SET (fillfactor = 50);
ALTER TABLE origin_metric_delta ALTER COLUMN origins TYPE integer[];

-- the cell of a row's pending changes: by the hour of its last_update, or by the day (kind 10) when
-- that is a week before the writer's horizon (its lag is then counted in days by every later pass)
CREATE FUNCTION origin_metric_pending_kind(last_update timestamptz, horizon timestamptz) RETURNS smallint
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN last_update <= horizon - interval '168 hours' THEN 10::smallint ELSE 5::smallint END
$$;
CREATE FUNCTION origin_metric_pending_cell(last_update timestamptz, horizon timestamptz) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN last_update <= horizon - interval '168 hours' THEN ceil(date_part('epoch', last_update) / 86400)
                ELSE ceil(date_part('epoch', last_update) / 3600) END::bigint
$$;

-- the cells of one scheduling row. Activity at or before `horizon` (the writer's clock, to
-- the minute, less the activity window: see domain/origin_metrics.py) is over for every
-- later count and left out; without a horizon every cell is kept.
CREATE OR REPLACE FUNCTION origin_metric_cells(enabled boolean, last_update timestamptz, last_successful timestamptz,
                                    last_status_date timestamptz, last_scheduled timestamptz,
                                    cooldown_until timestamptz, last_eventful timestamptz,
                                    last_uneventful timestamptz, horizon timestamptz)
RETURNS TABLE (kind smallint, cell bigint) LANGUAGE sql STABLE AS $$
    SELECT 1::smallint, 0::bigint
    UNION ALL SELECT 2::smallint, 0::bigint WHERE enabled
    UNION ALL SELECT 3::smallint, 0::bigint WHERE enabled AND last_successful IS NULL AND last_status_date IS NULL
    UNION ALL SELECT 4::smallint, 0::bigint WHERE enabled AND last_successful IS NULL AND last_status_date IS NOT NULL
    UNION ALL SELECT origin_metric_pending_kind(last_update, horizon), origin_metric_pending_cell(last_update, horizon)
        WHERE enabled AND last_update IS NOT NULL AND (last_successful IS NULL OR last_update > last_successful)
    UNION ALL SELECT 6::smallint, round(date_part('epoch', cooldown_until) * 1000000)::bigint
        WHERE last_scheduled IS NOT NULL AND cooldown_until IS NOT NULL
          AND (last_status_date IS NULL OR last_scheduled > last_status_date)
          AND (horizon IS NULL OR cooldown_until > horizon)
    UNION ALL SELECT 7::smallint, ceil(date_part('epoch', last_status_date) / 60)::bigint
        WHERE last_status_date > coalesce(horizon, '-infinity')
    UNION ALL SELECT 8::smallint, ceil(date_part('epoch', last_eventful) / 60)::bigint
        WHERE last_eventful > coalesce(horizon, '-infinity')
    UNION ALL SELECT 9::smallint, ceil(date_part('epoch', last_uneventful) / 60)::bigint
        WHERE last_uneventful > coalesce(horizon, '-infinity')
$$;

-- a statement's changes of the cells: what its new rows make up, less what its old rows made up
-- (origins one lister lists only), one pass per family of cells over the statement's rows (one query
-- for the three events: its rows come from the transition tables the event has); the writer's horizon
-- comes in ostinato.metrics_horizon. A transaction whose statements say what they change themselves
-- (ostinato.metrics_by_statement: the grab) is left alone.
CREATE OR REPLACE FUNCTION origin_visit_stats_metric_changes() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    columns text := 'lister_id, visit_type, enabled, last_update, last_successful, last_status_date, last_scheduled, '
                    'cooldown_until, last_eventful, last_uneventful';
    source text;
BEGIN
    IF current_setting('ostinato.metrics_by_statement', true) = 'on' THEN
        RETURN NULL;
    END IF;
    source := CASE TG_OP
        WHEN 'INSERT' THEN format('SELECT 1 AS sign, %s FROM new_rows WHERE listing_count = 1', columns)
        WHEN 'DELETE' THEN format('SELECT -1 AS sign, %s FROM old_rows WHERE listing_count = 1', columns)
        ELSE format('SELECT 1 AS sign, %1$s FROM new_rows WHERE listing_count = 1
                     UNION ALL SELECT -1, %1$s FROM old_rows WHERE listing_count = 1', columns) END;
    EXECUTE format($q$
        WITH s AS MATERIALIZED (%s),
        c AS (
            SELECT g.lister_id, g.visit_type, k.kind, 0::bigint AS cell, k.n
            FROM (SELECT lister_id, visit_type, sum(sign) AS known, sum(sign) FILTER (WHERE enabled) AS enabled,
                         sum(sign) FILTER (WHERE enabled AND last_successful IS NULL AND last_status_date IS NULL) AS never,
                         sum(sign) FILTER (WHERE enabled AND last_successful IS NULL AND last_status_date IS NOT NULL)
                             AS never_successful
                  FROM s GROUP BY 1, 2) AS g,
                 LATERAL (VALUES (1::smallint, g.known), (2::smallint, g.enabled), (3::smallint, g.never),
                                 (4::smallint, g.never_successful)) AS k(kind, n)
            UNION ALL
            SELECT lister_id, visit_type, origin_metric_pending_kind(last_update, $1),
                   origin_metric_pending_cell(last_update, $1), sign
            FROM s
            WHERE enabled AND last_update IS NOT NULL AND (last_successful IS NULL OR last_update > last_successful)
            UNION ALL
            SELECT lister_id, visit_type, 6::smallint, round(date_part('epoch', cooldown_until) * 1000000)::bigint, sign
            FROM s
            WHERE last_scheduled IS NOT NULL AND cooldown_until IS NOT NULL
              AND (last_status_date IS NULL OR last_scheduled > last_status_date)
              AND ($1 IS NULL OR cooldown_until > $1)
            UNION ALL
            SELECT lister_id, visit_type, 7::smallint, ceil(date_part('epoch', last_status_date) / 60)::bigint, sign
            FROM s WHERE last_status_date > coalesce($1, '-infinity')
            UNION ALL
            SELECT lister_id, visit_type, 8::smallint, ceil(date_part('epoch', last_eventful) / 60)::bigint, sign
            FROM s WHERE last_eventful > coalesce($1, '-infinity')
            UNION ALL
            SELECT lister_id, visit_type, 9::smallint, ceil(date_part('epoch', last_uneventful) / 60)::bigint, sign
            FROM s WHERE last_uneventful > coalesce($1, '-infinity'))
        INSERT INTO origin_metric_delta AS d (xid, lister_ids, visit_types, kinds, cells, origins)
        SELECT pg_current_xact_id(), array_agg(t.lister_id), array_agg(t.visit_type), array_agg(t.kind),
               array_agg(t.cell), array_agg(t.origins)
        FROM (SELECT lister_id, visit_type, kind, cell, sum(n)::integer AS origins FROM c WHERE n <> 0
              GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0) AS t
        HAVING count(*) > 0
        ON CONFLICT (xid) DO UPDATE SET lister_ids = d.lister_ids || excluded.lister_ids,
            visit_types = d.visit_types || excluded.visit_types, kinds = d.kinds || excluded.kinds,
            cells = d.cells || excluded.cells, origins = d.origins || excluded.origins
    $q$, source) USING nullif(current_setting('ostinato.metrics_horizon', true), '')::timestamptz;
    RETURN NULL;
END
$fn$;

-- at commit: the transaction's changes, summed by cell, applied in key order
CREATE OR REPLACE FUNCTION origin_metric_delta_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO origin_metric_cell AS c (lister_id, visit_type, kind, cell, origins)
    SELECT u.lister_id, u.visit_type, u.kind, u.cell, sum(u.origins)
    FROM origin_metric_delta AS d,
         unnest(d.lister_ids, d.visit_types, d.kinds, d.cells, d.origins) AS u(lister_id, visit_type, kind, cell, origins)
    WHERE d.xid = NEW.xid
    GROUP BY 1, 2, 3, 4 HAVING sum(u.origins) <> 0
    ORDER BY u.lister_id, u.visit_type COLLATE "C", u.kind, u.cell
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = c.origins + excluded.origins;
    DELETE FROM origin_metric_delta WHERE xid = NEW.xid;
    RETURN NULL;
END
$$;
