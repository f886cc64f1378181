-- 0008: change_rate_optimal learns from changed / unchanged bits with a posterior (see docs/design/beyond.md).
--
-- Where the loader does not count changes, each origin keeps the faded
-- log-likelihood of its changed / unchanged history at the 16 rates of
-- ostinato.domain.rate_posterior.RATE_GRID (NULL until such a visit).
-- 16 reals per origin: constant space.

ALTER TABLE origin_visit_stats ADD COLUMN rate_evidence real[];
