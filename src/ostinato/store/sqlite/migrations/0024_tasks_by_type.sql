-- 0024: a task type's tasks by id (the console's task type page, search_tasks by type).
--
-- search_tasks(task_type=…) walked the table by id from after_id and skipped the other types'
-- tasks one by one: a type with few tasks in a large table read most of the table for one page.
-- An index on type walks only the type's tasks, in id order: its entries carry the rowid, which
-- is id, so (type) is (type, id) at no extra width. Other filters are checked along the walk.
-- Its key never changes, so updates of a task do not touch it: creation and deletion do.
CREATE INDEX task_by_type_idx ON task (type);
