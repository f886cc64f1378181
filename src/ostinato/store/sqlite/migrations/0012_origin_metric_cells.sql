-- 0012: origin metrics kept up to date by the writes themselves, not recounted.
--
-- Each scheduling row (origin_visit_stats) of an origin one lister lists makes up part of its
-- lister's counts: cells of origin_metric_cell, by kind. Triggers add what a changed row makes up
-- and take away what it made up (SQLite has one writer: each row's change goes straight to the
-- cells). `ostinato metrics update` reads the cells (and counts the few origins several listers
-- list, which count once per listing), whatever the number of origins. Times are this store's
-- ISO 8601 text in UTC: a cell is the time it stands for, as text (see the PostgreSQL migration).

CREATE TABLE origin_metric_cell (
    lister_id INTEGER NOT NULL,
    visit_type TEXT NOT NULL,
    -- 1 known, 2 enabled, 3 never visited, 4 never successful (cell 0); 5 with changes pending
    -- (cell: the hour at or after last_update); 6 in flight (cell: the end of the grab's
    -- cooldown); 7 visited, 8 eventful, 9 uneventful (cell: the minute at or after the visit)
    kind INTEGER NOT NULL,
    cell NOT NULL,
    origins INTEGER NOT NULL,
    PRIMARY KEY (lister_id, visit_type, kind, cell)
);

CREATE TRIGGER origin_visit_stats_metrics_insert AFTER INSERT ON origin_visit_stats WHEN NEW.listing_count = 1
BEGIN
    INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
    SELECT NEW.lister_id AS lister_id, NEW.visit_type AS visit_type, k.column1 AS kind,
           CASE k.column1
               WHEN 5 THEN CASE WHEN substr(NEW.last_update, 15) = '00:00.000000+00:00' THEN NEW.last_update ELSE strftime('%Y-%m-%dT%H:00:00.000000+00:00', NEW.last_update, '+1 hour') END
               WHEN 6 THEN NEW.cooldown_until
               WHEN 7 THEN CASE WHEN substr(NEW.last_status_date, 18) = '00.000000+00:00' THEN NEW.last_status_date ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', NEW.last_status_date, '+1 minute') END
               WHEN 8 THEN CASE WHEN substr(NEW.last_eventful, 18) = '00.000000+00:00' THEN NEW.last_eventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', NEW.last_eventful, '+1 minute') END
               WHEN 9 THEN CASE WHEN substr(NEW.last_uneventful, 18) = '00.000000+00:00' THEN NEW.last_uneventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', NEW.last_uneventful, '+1 minute') END
               ELSE 0 END AS cell,
           1 AS origins
    FROM (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS k
    WHERE NEW.listing_count = 1 AND CASE k.column1
              WHEN 1 THEN 1
              WHEN 2 THEN NEW.enabled
              WHEN 3 THEN NEW.enabled AND NEW.last_successful IS NULL AND NEW.last_status_date IS NULL
              WHEN 4 THEN NEW.enabled AND NEW.last_successful IS NULL AND NEW.last_status_date IS NOT NULL
              WHEN 5 THEN NEW.enabled AND NEW.last_update IS NOT NULL
                          AND (NEW.last_successful IS NULL OR NEW.last_update > NEW.last_successful)
              WHEN 6 THEN NEW.last_scheduled IS NOT NULL AND NEW.cooldown_until IS NOT NULL
                          AND (NEW.last_status_date IS NULL OR NEW.last_scheduled > NEW.last_status_date)
              WHEN 7 THEN NEW.last_status_date IS NOT NULL
              WHEN 8 THEN NEW.last_eventful IS NOT NULL
              WHEN 9 THEN NEW.last_uneventful IS NOT NULL END
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = origins + excluded.origins;
END;
CREATE TRIGGER origin_visit_stats_metrics_delete AFTER DELETE ON origin_visit_stats WHEN OLD.listing_count = 1
BEGIN
    INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
    SELECT OLD.lister_id AS lister_id, OLD.visit_type AS visit_type, k.column1 AS kind,
           CASE k.column1
               WHEN 5 THEN CASE WHEN substr(OLD.last_update, 15) = '00:00.000000+00:00' THEN OLD.last_update ELSE strftime('%Y-%m-%dT%H:00:00.000000+00:00', OLD.last_update, '+1 hour') END
               WHEN 6 THEN OLD.cooldown_until
               WHEN 7 THEN CASE WHEN substr(OLD.last_status_date, 18) = '00.000000+00:00' THEN OLD.last_status_date ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', OLD.last_status_date, '+1 minute') END
               WHEN 8 THEN CASE WHEN substr(OLD.last_eventful, 18) = '00.000000+00:00' THEN OLD.last_eventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', OLD.last_eventful, '+1 minute') END
               WHEN 9 THEN CASE WHEN substr(OLD.last_uneventful, 18) = '00.000000+00:00' THEN OLD.last_uneventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', OLD.last_uneventful, '+1 minute') END
               ELSE 0 END AS cell,
           -1 AS origins
    FROM (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS k
    WHERE OLD.listing_count = 1 AND CASE k.column1
              WHEN 1 THEN 1
              WHEN 2 THEN OLD.enabled
              WHEN 3 THEN OLD.enabled AND OLD.last_successful IS NULL AND OLD.last_status_date IS NULL
              WHEN 4 THEN OLD.enabled AND OLD.last_successful IS NULL AND OLD.last_status_date IS NOT NULL
              WHEN 5 THEN OLD.enabled AND OLD.last_update IS NOT NULL
                          AND (OLD.last_successful IS NULL OR OLD.last_update > OLD.last_successful)
              WHEN 6 THEN OLD.last_scheduled IS NOT NULL AND OLD.cooldown_until IS NOT NULL
                          AND (OLD.last_status_date IS NULL OR OLD.last_scheduled > OLD.last_status_date)
              WHEN 7 THEN OLD.last_status_date IS NOT NULL
              WHEN 8 THEN OLD.last_eventful IS NOT NULL
              WHEN 9 THEN OLD.last_uneventful IS NOT NULL END
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = origins + excluded.origins;
END;
CREATE TRIGGER origin_visit_stats_metrics_update AFTER UPDATE ON origin_visit_stats
WHEN (OLD.listing_count = 1 OR NEW.listing_count = 1) AND (
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
    SELECT lister_id, visit_type, kind, cell, sum(origins) FROM (
        SELECT OLD.lister_id AS lister_id, OLD.visit_type AS visit_type, k.column1 AS kind,
               CASE k.column1
                   WHEN 5 THEN CASE WHEN substr(OLD.last_update, 15) = '00:00.000000+00:00' THEN OLD.last_update ELSE strftime('%Y-%m-%dT%H:00:00.000000+00:00', OLD.last_update, '+1 hour') END
                   WHEN 6 THEN OLD.cooldown_until
                   WHEN 7 THEN CASE WHEN substr(OLD.last_status_date, 18) = '00.000000+00:00' THEN OLD.last_status_date ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', OLD.last_status_date, '+1 minute') END
                   WHEN 8 THEN CASE WHEN substr(OLD.last_eventful, 18) = '00.000000+00:00' THEN OLD.last_eventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', OLD.last_eventful, '+1 minute') END
                   WHEN 9 THEN CASE WHEN substr(OLD.last_uneventful, 18) = '00.000000+00:00' THEN OLD.last_uneventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', OLD.last_uneventful, '+1 minute') END
                   ELSE 0 END AS cell,
               -1 AS origins
        FROM (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS k
        WHERE OLD.listing_count = 1 AND CASE k.column1
                  WHEN 1 THEN 1
                  WHEN 2 THEN OLD.enabled
                  WHEN 3 THEN OLD.enabled AND OLD.last_successful IS NULL AND OLD.last_status_date IS NULL
                  WHEN 4 THEN OLD.enabled AND OLD.last_successful IS NULL AND OLD.last_status_date IS NOT NULL
                  WHEN 5 THEN OLD.enabled AND OLD.last_update IS NOT NULL
                              AND (OLD.last_successful IS NULL OR OLD.last_update > OLD.last_successful)
                  WHEN 6 THEN OLD.last_scheduled IS NOT NULL AND OLD.cooldown_until IS NOT NULL
                              AND (OLD.last_status_date IS NULL OR OLD.last_scheduled > OLD.last_status_date)
                  WHEN 7 THEN OLD.last_status_date IS NOT NULL
                  WHEN 8 THEN OLD.last_eventful IS NOT NULL
                  WHEN 9 THEN OLD.last_uneventful IS NOT NULL END
        UNION ALL
        SELECT NEW.lister_id AS lister_id, NEW.visit_type AS visit_type, k.column1 AS kind,
               CASE k.column1
                   WHEN 5 THEN CASE WHEN substr(NEW.last_update, 15) = '00:00.000000+00:00' THEN NEW.last_update ELSE strftime('%Y-%m-%dT%H:00:00.000000+00:00', NEW.last_update, '+1 hour') END
                   WHEN 6 THEN NEW.cooldown_until
                   WHEN 7 THEN CASE WHEN substr(NEW.last_status_date, 18) = '00.000000+00:00' THEN NEW.last_status_date ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', NEW.last_status_date, '+1 minute') END
                   WHEN 8 THEN CASE WHEN substr(NEW.last_eventful, 18) = '00.000000+00:00' THEN NEW.last_eventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', NEW.last_eventful, '+1 minute') END
                   WHEN 9 THEN CASE WHEN substr(NEW.last_uneventful, 18) = '00.000000+00:00' THEN NEW.last_uneventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', NEW.last_uneventful, '+1 minute') END
                   ELSE 0 END AS cell,
               1 AS origins
        FROM (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS k
        WHERE NEW.listing_count = 1 AND CASE k.column1
                  WHEN 1 THEN 1
                  WHEN 2 THEN NEW.enabled
                  WHEN 3 THEN NEW.enabled AND NEW.last_successful IS NULL AND NEW.last_status_date IS NULL
                  WHEN 4 THEN NEW.enabled AND NEW.last_successful IS NULL AND NEW.last_status_date IS NOT NULL
                  WHEN 5 THEN NEW.enabled AND NEW.last_update IS NOT NULL
                              AND (NEW.last_successful IS NULL OR NEW.last_update > NEW.last_successful)
                  WHEN 6 THEN NEW.last_scheduled IS NOT NULL AND NEW.cooldown_until IS NOT NULL
                              AND (NEW.last_status_date IS NULL OR NEW.last_scheduled > NEW.last_status_date)
                  WHEN 7 THEN NEW.last_status_date IS NOT NULL
                  WHEN 8 THEN NEW.last_eventful IS NOT NULL
                  WHEN 9 THEN NEW.last_uneventful IS NOT NULL END)
    GROUP BY lister_id, visit_type, kind, cell HAVING sum(origins) <> 0
    ON CONFLICT (lister_id, visit_type, kind, cell) DO UPDATE SET origins = origins + excluded.origins;
END;

-- the cells of the origins already there
INSERT INTO origin_metric_cell (lister_id, visit_type, kind, cell, origins)
SELECT s.lister_id, s.visit_type, k.column1,
       CASE k.column1
           WHEN 5 THEN CASE WHEN substr(s.last_update, 15) = '00:00.000000+00:00' THEN s.last_update ELSE strftime('%Y-%m-%dT%H:00:00.000000+00:00', s.last_update, '+1 hour') END
           WHEN 6 THEN s.cooldown_until
           WHEN 7 THEN CASE WHEN substr(s.last_status_date, 18) = '00.000000+00:00' THEN s.last_status_date ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', s.last_status_date, '+1 minute') END
           WHEN 8 THEN CASE WHEN substr(s.last_eventful, 18) = '00.000000+00:00' THEN s.last_eventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', s.last_eventful, '+1 minute') END
           WHEN 9 THEN CASE WHEN substr(s.last_uneventful, 18) = '00.000000+00:00' THEN s.last_uneventful ELSE strftime('%Y-%m-%dT%H:%M:00.000000+00:00', s.last_uneventful, '+1 minute') END
           ELSE 0 END,
       count(*)
FROM origin_visit_stats AS s, (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9)) AS k
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
          WHEN 9 THEN s.last_uneventful IS NOT NULL END
GROUP BY 1, 2, 3, 4
;
