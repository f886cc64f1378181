"""Row readers of the tasks and origins roles that the compat and imports flows read rows with,
written once over the dialect's read conversions.

They belong to those roles (``store/tasks/``, ``store/origins/``): until their flows are written
once, the compat and imports flows borrow them from here; then this module goes, and its users
import the roles' own readers.
"""

from __future__ import annotations

from ..domain.origins import ListedOrigin, Lister, StoredListedOrigin
from .dialect import Dialect, Row


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
