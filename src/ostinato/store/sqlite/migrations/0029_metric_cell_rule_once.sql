-- 0029: the rule of which metric cells a scheduling row counts in, written once.
--
-- 0012 wrote it four times: in the insert and delete triggers, twice in the update trigger (the row's
-- old cells and its new ones), and the full recount a fifth. It now stands in one view, the cells of
-- each scheduling row of an origin one lister lists, which the recount groups and the triggers read for
-- the one row they change: a row's cells are taken away before it changes or goes (the row still holds
-- its old values) and added after it is inserted or has changed.

DROP TRIGGER origin_visit_stats_metrics_insert;
DROP TRIGGER origin_visit_stats_metrics_delete;
DROP TRIGGER origin_visit_stats_metrics_update;

-- the cells each scheduling row counts in (origins one lister lists only): 1 known, 2 enabled, 3 never
-- visited, 4 never successful (cell 0); 5 with changes pending (cell: the hour at or after last_update);
-- 6 in flight (cell: the end of the grab's cooldown); 7 visited, 8 eventful, 9 uneventful (cell: the
-- minute at or after the visit)
CREATE VIEW origin_metric_cell_of_row AS
SELECT s.rowid AS row, s.lister_id AS lister_id, s.visit_type AS visit_type, k.column1 AS kind,
       CASE k.column1
           WHEN 5 THEN CASE WHEN substr(s.last_update, 15) = '00:00.000000+00:00' THEN s.last_update ELSE strftime('%Y-%m-%dT%H:00:00.000000+00:00', s.last_update, '+1 hour') END
           WHEN 6 THEN s.cooldown_until
           WHEN 7 THEN CASE WHEN substr(s.last_status_date, 18) = '00.000000+00:00' THEN s.last_status_date ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', s.last_status_date, '+1 minute') END
           WHEN 8 THEN CASE WHEN substr(s.last_eventful, 18) = '00.000000+00:00' THEN s.last_eventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', s.last_eventful, '+1 minute') END
           WHEN 9 THEN CASE WHEN substr(s.last_uneventful, 18) = '00.000000+00:00' THEN s.last_uneventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', s.last_uneventful, '+1 minute') END
           ELSE 0 END AS cell
FROM origin_visit_stats AS s CROSS JOIN (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS k  -- the row first: one lookup a trigger
WHERE s.listing_count = 1 AND CASE k.column1
          WHEN 1 THEN 1
          WHEN 2 THEN s.enabled
          WHEN 3 THEN s.enabled AND s.last_successful IS NULL AND s.last_status_date IS NULL
          WHEN 4 THEN s.enabled AND s.last_successful IS NULL AND s.last_status_date IS NOT NULL
          WHEN 5 THEN s.enabled AND s.last_update IS NOT NULL
                      AND (s.last_successful IS NULL OR s.last_update > s.last_successful)
          WHEN 6 THEN s.last_scheduled IS NOT NULL AND s.cooldown_until IS NOT NULL
                      AND (s.last_status_date IS NULL OR s.last_scheduled > s.last_status_date)
          WHEN 7 THEN s.last_status_date IS NOT NULL
          WHEN 8 THEN s.last_eventful IS NOT NULL
          WHEN 9 THEN s.last_uneventful IS NOT NULL END;

CREATE TRIGGER origin_visit_stats_metrics_insert AFTER INSERT ON origin_visit_stats WHEN NEW.listing_count = 1
BEGIN
    INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
    SELECT lister_id, visit_type, kind, cell, 1 FROM origin_metric_cell_of_row
    WHERE row = NEW.rowid
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = origins + excluded.origins;
END;
CREATE TRIGGER origin_visit_stats_metrics_delete BEFORE DELETE ON origin_visit_stats WHEN OLD.listing_count = 1
BEGIN
    INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
    SELECT lister_id, visit_type, kind, cell, -1 FROM origin_metric_cell_of_row
    WHERE row = OLD.rowid
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = origins + excluded.origins;
END;
CREATE TRIGGER origin_visit_stats_metrics_update_old BEFORE UPDATE ON origin_visit_stats
WHEN OLD.listing_count = 1 AND (
        OLD.listing_count IS NOT NEW.listing_count
     OR OLD.lister_id IS NOT NEW.lister_id
     OR OLD.visit_type IS NOT NEW.visit_type
     OR OLD.enabled IS NOT NEW.enabled
     OR OLD.last_update IS NOT NEW.last_update
     OR OLD.last_successful IS NOT NEW.last_successful
     OR OLD.last_status_date IS NOT NEW.last_status_date
     OR OLD.last_scheduled IS NOT NEW.last_scheduled
     OR OLD.cooldown_until IS NOT NEW.cooldown_until
     OR OLD.last_eventful IS NOT NEW.last_eventful
     OR OLD.last_uneventful IS NOT NEW.last_uneventful)
BEGIN
    INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
    SELECT lister_id, visit_type, kind, cell, -1 FROM origin_metric_cell_of_row
    WHERE row = OLD.rowid
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = origins + excluded.origins;
END;
CREATE TRIGGER origin_visit_stats_metrics_update_new AFTER UPDATE ON origin_visit_stats
WHEN NEW.listing_count = 1 AND (
        OLD.listing_count IS NOT NEW.listing_count
     OR OLD.lister_id IS NOT NEW.lister_id
     OR OLD.visit_type IS NOT NEW.visit_type
     OR OLD.enabled IS NOT NEW.enabled
     OR OLD.last_update IS NOT NEW.last_update
     OR OLD.last_successful IS NOT NEW.last_successful
     OR OLD.last_status_date IS NOT NEW.last_status_date
     OR OLD.last_scheduled IS NOT NEW.last_scheduled
     OR OLD.cooldown_until IS NOT NEW.cooldown_until
     OR OLD.last_eventful IS NOT NEW.last_eventful
     OR OLD.last_uneventful IS NOT NEW.last_uneventful)
BEGIN
    INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
    SELECT lister_id, visit_type, kind, cell, 1 FROM origin_metric_cell_of_row
    WHERE row = NEW.rowid
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = origins + excluded.origins;
END;
