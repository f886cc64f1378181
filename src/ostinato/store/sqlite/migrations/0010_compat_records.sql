-- 0010: what the compatibility faces keep beyond Ostinato's own model (see docs/reference/swh-compat.md).
--
-- A compat record is a JSON object under a namespace and a key, e.g. the
-- swh-scheduler face's queue positions per visit type, or its listers' UUIDs
-- and first-visit fields. Runs are also found by their executor's backend_id
-- (the swh protocol starts and ends runs by it), final runs included.

CREATE TABLE compat_record (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (namespace, key)
) STRICT;
CREATE INDEX task_run_backend_id_idx ON task_run (backend_id);
