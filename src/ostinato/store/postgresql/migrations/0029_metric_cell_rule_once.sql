-- 0029: the rule of which metric cells a scheduling row counts in, written once.
--
-- 0012 and 0013 wrote it twice: in origin_metric_cells, row by row, which the full recount used, and
-- in the statement trigger, one pass per family of cells over the statement's rows. Both now take the
-- trigger's query from origin_metric_cell_query: the trigger over its transition tables, the recount
-- (origin_metric_cells_recount) over the whole table. The writes run the same query as before; the
-- row-by-row function is dropped.

-- the cells the rows of `plus` add and those of `minus` take away (relations with the columns of
-- origin_visit_stats; either NULL for none), origins one lister lists only, summed by cell: one pass per
-- family of cells over the rows; the writer's horizon is the query's $1 (see origin_metric_pending_kind:
-- activity at or before it is over for every later count and left out; without a horizon every cell counts)
CREATE FUNCTION origin_metric_cell_query(plus text, minus text) RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
    SELECT format($q$
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
        SELECT lister_id, visit_type, kind, cell, sum(n)::integer AS origins FROM c WHERE n <> 0
        GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0
    $q$, replace(concat_ws(' UNION ALL ', 'SELECT 1 AS sign, {columns} FROM ' || plus || ' WHERE listing_count = 1',
                           'SELECT -1 AS sign, {columns} FROM ' || minus || ' WHERE listing_count = 1'),
                 '{columns}', 'lister_id, visit_type, enabled, last_update, last_successful, last_status_date, '
                              'last_scheduled, cooldown_until, last_eventful, last_uneventful'))
$fn$;

-- a statement's changes of the cells: what its new rows make up, less what its old rows made up (the
-- transition tables the event has); the writer's horizon comes in ostinato.metrics_horizon. A
-- transaction whose statements say what they change themselves (ostinato.metrics_by_statement: the
-- grab) is left alone.
CREATE OR REPLACE FUNCTION origin_visit_stats_metric_changes() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF current_setting('ostinato.metrics_by_statement', true) = 'on' THEN
        RETURN NULL;
    END IF;
    EXECUTE format($q$
        INSERT INTO origin_metric_delta AS d (xid, lister_ids, visit_types, kinds, cells, origins)
        SELECT pg_current_xact_id(), array_agg(t.lister_id), array_agg(t.visit_type), array_agg(t.kind),
               array_agg(t.cell), array_agg(t.origins)
        FROM (%s) AS t
        HAVING count(*) > 0
        ON CONFLICT (xid) DO UPDATE SET lister_ids = d.lister_ids || excluded.lister_ids,
            visit_types = d.visit_types || excluded.visit_types, kinds = d.kinds || excluded.kinds,
            cells = d.cells || excluded.cells, origins = d.origins || excluded.origins
    $q$, origin_metric_cell_query(CASE WHEN TG_OP <> 'DELETE' THEN 'new_rows' END,
                                  CASE WHEN TG_OP <> 'INSERT' THEN 'old_rows' END))
    USING nullif(current_setting('ostinato.metrics_horizon', true), '')::timestamptz;
    RETURN NULL;
END
$fn$;

-- every cell counted again from the scheduling rows, as the writes at `horizon` count them (the
-- cell table emptied first by the caller)
CREATE FUNCTION origin_metric_cells_recount(horizon timestamptz) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
    EXECUTE format('INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins) %s',
                   origin_metric_cell_query('origin_visit_stats', NULL))
    USING horizon;
END
$fn$;

DROP FUNCTION origin_metric_cells(boolean, timestamptz, timestamptz, timestamptz, timestamptz, timestamptz,
                                  timestamptz, timestamptz, timestamptz);
