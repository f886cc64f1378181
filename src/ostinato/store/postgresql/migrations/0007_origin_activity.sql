-- 0007: each visit type's activity in the origin metrics (for the dashboard).
--
-- Counted by the same full pass as the rest (`ostinato metrics update`): visits
-- handed out and not yet reported (in flight), and visits, eventful and
-- uneventful, within the hour before the pass.

ALTER TABLE origin_metrics
    ADD COLUMN visits_in_flight bigint NOT NULL DEFAULT 0,
    ADD COLUMN visits_last_hour bigint NOT NULL DEFAULT 0,
    ADD COLUMN eventful_visits_last_hour bigint NOT NULL DEFAULT 0,
    ADD COLUMN uneventful_visits_last_hour bigint NOT NULL DEFAULT 0;
