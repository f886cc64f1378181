-- 0021: lister hints weighed by change_rate_optimal (see docs/design/bursty.md, "Lister hints").
--
-- hint_wait_days: the days after a change its lister reports (last_update) until change_rate_optimal
-- visits the origin, set by each successful visit from its learnt change rate at the visit type's
-- threshold (domain.change_rates.hint_wait_days); a listing that reports a change newer than the last
-- successful visit moves next_optimal_visit to last_update plus this, if sooner. NULL: not yet known,
-- or a reported change is worth no visit of its own. A nullable column with no default: adding it
-- rewrites no row, and rows keep NULL until their next successful visit.
ALTER TABLE origin_visit_stats ADD COLUMN hint_wait_days double precision;
