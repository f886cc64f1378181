-- 0009: the origin metrics tell "never visited" from "visited, never successfully".
--
-- origins_never_visited counted every enabled origin without a successful visit,
-- failed and not-found ones included. From this version it counts the origins
-- with no final visit status at all, and origins_never_successful those whose
-- every visit so far failed or found nothing. Rows stored before the upgrade keep
-- the old count (and 0 here) until the next `ostinato metrics update`.

ALTER TABLE origin_metrics ADD COLUMN origins_never_successful bigint NOT NULL DEFAULT 0;
