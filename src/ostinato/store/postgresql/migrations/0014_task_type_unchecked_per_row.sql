-- 0014: a task's type is checked once per batch, not once per row.
--
-- create_tasks (and the import) read the batch's task types in the transaction that
-- inserts the tasks and refuse a batch naming an unknown one; task types are never
-- deleted. The foreign key checked it again for every row: about a fifth of the
-- insert of a batch of 10,000 tasks into 1,000,000.

ALTER TABLE task DROP CONSTRAINT task_type_fkey;
