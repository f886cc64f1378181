"""The imports role: records written as given, by their own identities, idempotently (see docs/reference/swh-import.md).

A narrow interface in domain verbs; :class:`~ostinato.store.interface.Store` is every role at once.
The flow that implements it for the SQL stores is ``flow.py`` beside this file.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from datetime import datetime

from ...domain.origin_metrics import OriginMetrics
from ...domain.origins import Lister, StoredListedOrigin
from ...domain.tasks import Task, TaskRun, TaskType
from ...domain.visits import VisitStats

#: The verbs a client may call through the HTTP API (``ostinato.remote``), each with the token scope
#: it needs (``domain.access``: read, worker or admin), and those it may not, with why: a verb added here is
#: reviewed for both.
#: None served: an import writes where the database is (docs/reference/swh-import.md).
REMOTE_SCOPES: dict[str, str] = {}
NOT_REMOTE: dict[str, str] = {
    name: "an import writes where the database is: `ostinato import swh-scheduler` with --db, on the server"
    for name in ("import_task_types", "import_tasks", "import_task_runs", "import_listers", "import_listed_origins",
                 "import_visit_stats", "import_origin_metrics")
}


class ImportStore(abc.ABC):
    """records written as given, by their own identities, idempotently (see docs/reference/swh-import.md)."""

    # -- imports: records written as given (see docs/reference/swh-import.md) -------------
    # Each verb upserts by the records' own identities, checks every record first (a bad one is
    # a ValidationError located at ``task N``, ``origin N``…, and nothing of the batch is written),
    # writes a row only when a stored field differs, in one transaction, and returns how many
    # rows it created or changed: a second import of the same records returns 0.

    @abc.abstractmethod
    def import_task_types(self, task_types: Sequence[TaskType]) -> int:
        """Create task types, or overwrite them by name, with every knob as given."""

    @abc.abstractmethod
    def import_tasks(self, tasks: Sequence[Task]) -> int:
        """Write tasks as given, ids, status and retries included. A stored task with the same id is
        overwritten when it is the same task (same type and arguments), else a ConflictError (nothing
        of the batch written); an unknown task type is a ValidationError. Later tasks created by
        :meth:`create_tasks` get ids above every id written here."""

    @abc.abstractmethod
    def import_task_runs(self, runs: Sequence[TaskRun]) -> int:
        """Write task runs as given, ids included; a stored run with the same id must belong to the
        same task (else a ConflictError). Later runs get ids above every id written here."""

    @abc.abstractmethod
    def import_listers(self, listers: Sequence[Lister]) -> tuple[list[Lister], int]:
        """Create or overwrite listers by (name, instance_name), with ``current_state``,
        ``last_listing_finished_at`` and ``updated`` as given (the ids given are ignored). Returns
        the stored listers, in input order, and how many were created or changed."""

    @abc.abstractmethod
    def import_listed_origins(self, origins: Sequence[StoredListedOrigin]) -> int:
        """Write listings as given, keyed by (lister_id, url, visit_type), ``first_seen`` and
        ``last_seen`` included; the scheduling row of each origin whose listings changed is made
        again from all its listings (as :meth:`record_listed_origins` keeps it), its visit fields
        untouched. NotFoundError for an unknown lister."""

    @abc.abstractmethod
    def import_visit_stats(self, stats: Sequence[VisitStats], now: datetime) -> int:
        """Write the visit fields of these (url, visit_type) as given (what the listings say is
        left as it is; a row no listing has yet is not enabled). A cooldown over by ``now`` is
        stored as none and counts as equal to none, so that importing again later changes
        nothing."""

    @abc.abstractmethod
    def import_origin_metrics(self, metrics: Sequence[OriginMetrics]) -> int:
        """Write metrics rows as given, by (lister_id, visit_type). NotFoundError for an unknown lister."""
