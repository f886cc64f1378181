"""Row readers of the tasks and origins roles that the compat and imports flows read rows with,
written once over the dialect's read conversions.

They belong to those roles (``store/tasks/``, ``store/origins/``): until their flows are written
once, the compat and imports flows borrow them from here; then this module goes, and its users
import the roles' own readers.
"""

from __future__ import annotations

from ..domain.origins import ListedOrigin, Lister, StoredListedOrigin
from ..domain.tasks import POLICY_OF, PRIORITY_OF, RUN_STATUS_OF, STATUS_OF, Task, TaskArguments, TaskRun
from .dialect import Dialect, Row


def row_to_task(db: Dialect, row: Row) -> Task:
    arguments = db.read_json(row["arguments"])
    return Task(row["id"], row["type"], TaskArguments(tuple(arguments["args"]), arguments["kwargs"]),
                db.read_time(row["next_run"]), db.read_interval(row["current_interval"]), POLICY_OF[row["policy"]],
                STATUS_OF[row["status"]], row["retries_left"], PRIORITY_OF[row["priority"]])


def row_to_run(db: Dialect, row: Row, prefix: str = "") -> TaskRun:
    """A task run; ``prefix`` names the columns a join renamed (``run_id``, ``run_task``, ``run_status``)."""
    read_time = db.read_time
    return TaskRun(row[f"{prefix}id"], row[f"{prefix}task"], row["backend_id"], read_time(row["scheduled"]),
                   read_time(row["started"]), read_time(row["ended"]), db.read_json(row["metadata"]),
                   RUN_STATUS_OF[row[f"{prefix}status"]])


def row_to_lister(db: Dialect, row: Row) -> Lister:
    return Lister(row["id"], row["name"], row["instance_name"], db.read_json(row["current_state"]),
                  db.read_time(row["last_listing_finished_at"]), db.read_time(row["updated"]))


def row_to_listed_origin(db: Dialect, row: Row) -> StoredListedOrigin:
    read_time = db.read_time
    is_fork = row["is_fork"]
    origin = ListedOrigin(row["url"], row["visit_type"], db.read_json(row["extra_loader_arguments"]),
                          read_time(row["last_update"]), bool(row["enabled"]), None if is_fork is None else bool(is_fork),
                          row["forked_from_url"])
    return StoredListedOrigin(row["lister_id"], origin, read_time(row["first_seen"]), read_time(row["last_seen"]))
