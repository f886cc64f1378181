-- 0027: room on each page of the two tables the hot writes rewrite (docs/reference/performance.md, "Room
-- for updates").
--
-- A row's new version goes on its own page when there is room there: the update then writes no lock
-- record of the old version and dirties no second page, and when no indexed column changes (a re-listing
-- that only says when the origin was last seen) it adds no index entry (HOT). With every page full, each
-- update of the visit stats (a visit status, a grab, a listing that changes them) went to another page.
--
-- Pages written from now on keep a fifth free; pages already full stay so until their rows move (each
-- update moves a row to a page with room) or the table is rewritten (VACUUM FULL, or pg_repack without
-- stopping the writers: docs/how-to/deploy-at-scale.md). Setting it rewrites nothing.

ALTER TABLE origin_visit_stats SET (fillfactor = 80);
ALTER TABLE listed_origin SET (fillfactor = 80);
