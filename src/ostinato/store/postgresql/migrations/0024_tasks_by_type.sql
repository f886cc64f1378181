-- 0024: a task type's tasks by id (the console's task type page, search_tasks by type).
--
-- search_tasks(task_type=…) walked the primary key from after_id and skipped the other types'
-- tasks one by one: a type with few tasks in a large table read most of the table for one page.
-- With (type, id) the walk starts at the type's first task after after_id and reads only its
-- tasks; other filters (status, policy, priority, next run) are checked along that walk. No
-- existing index serves: the others are partial (pending or final tasks only) or keyed by
-- next_run. The cost: one more index entry per task written (creation, and every update, which
-- is never a HOT update on this table: status is in the partial indexes' predicates).
--
-- The migrations run in one transaction, where CREATE INDEX CONCURRENTLY cannot run: this build
-- blocks task writes (not reads) until it ends. On a large table, build the index beforehand
-- while the services run (docs/how-to/deploy.md, "Upgrading"):
--     CREATE INDEX CONCURRENTLY IF NOT EXISTS task_by_type_idx ON task (type, id);
-- then this migration keeps it. A concurrent build that failed leaves an invalid index behind:
-- it is dropped and built here.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('task_by_type_idx') AND NOT indisvalid) THEN
        DROP INDEX task_by_type_idx;
    END IF;
END $$;
CREATE INDEX IF NOT EXISTS task_by_type_idx ON task (type, id);
