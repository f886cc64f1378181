-- 0005: the change_rate_optimal policy (see docs/design/beyond.md).
--
-- Each origin keeps its change rate's belief (changes seen over days observed;
-- NULL: the prior) and the time its optimal revisit falls due; the policy walks
-- never-visited origins by first_seen, then the others by that time. One
-- threshold per visit type, steered to the visit capacity, spaces the revisits.

ALTER TABLE origin_visit_stats
    ADD COLUMN rate_changes double precision,
    ADD COLUMN rate_days double precision,
    ADD COLUMN next_optimal_visit timestamptz;

-- origins visited before: due now, in the order of their last success
UPDATE origin_visit_stats SET next_optimal_visit = last_successful WHERE last_successful IS NOT NULL;

CREATE INDEX visit_optimal_never_visited_idx ON origin_visit_stats (visit_type, first_seen)
    WHERE enabled AND cooldown_until IS NULL AND last_successful IS NULL;
CREATE INDEX visit_optimal_due_idx ON origin_visit_stats (visit_type, next_optimal_visit)
    WHERE enabled AND cooldown_until IS NULL AND last_successful IS NOT NULL;

CREATE TABLE revisit_threshold (
    visit_type text PRIMARY KEY,
    -- the Lagrange multiplier that spaces revisits (see ostinato.domain.change_rates)
    threshold double precision NOT NULL CHECK (threshold > 0),
    -- what it was steered to: visits a day, over this many enabled origins
    visits_per_day double precision NOT NULL,
    origins bigint NOT NULL,
    computed_at timestamptz NOT NULL
);
