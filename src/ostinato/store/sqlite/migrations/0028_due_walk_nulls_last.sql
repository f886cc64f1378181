-- 0028: change_rate_optimal's due walk takes the origins with no optimal revisit time last, as on
-- PostgreSQL (where NULLs sort last). SQLite sorts NULLs first, so a successful visit written through the
-- swh protocol, which computes no revisit time, came before every origin that is due. The index orders by
-- whether the time is missing first, so that the walk stays in the index's order.

DROP INDEX visit_optimal_due_idx;
CREATE INDEX visit_optimal_due_idx ON origin_visit_stats (visit_type, next_optimal_visit IS NULL, next_optimal_visit)
    WHERE enabled AND cooldown_until IS NULL AND last_successful IS NOT NULL;
