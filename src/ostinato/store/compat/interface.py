"""The compatibility role: what the swh-scheduler protocol's face needs beyond Ostinato's own verbs (see docs/reference/swh-compat.md).

A narrow interface in domain verbs; :class:`~ostinato.store.interface.Store` is every role at once.
The flow that implements it for the SQL stores is ``flow.py`` beside this file.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ...domain.listing_grabs import ListingCounts, ListingGrab, ProtocolVisitStats
from ...domain.origins import StoredListedOrigin
from ...domain.tasks import NewTaskRun, Task, TaskRun, TaskStatus

#: The verbs a client may call through the HTTP API (``ostinato.remote``), each with the token scope
#: it needs (``domain.access``: read, worker or admin), and those it may not, with why: a verb added here is
#: reviewed for both.
#: The swh-scheduler protocol's face (docs/reference/swh-compat.md): every verb is served.
REMOTE_SCOPES: dict[str, str] = {
    "count_listed_origins": "read", "get_compat_records": "read", "get_protocol_visit_stats": "read",
    "list_listings": "read", "lister_visit_types": "read", "delete_archived_runs": "worker",
    "get_task_runs_by_backend_id": "read",
    "grab_listed_origins": "worker", "list_compat_records": "read", "list_runs_to_archive": "read",
    "merge_visit_stats": "worker", "overwrite_task_status": "worker", "put_compat_records": "worker",
    "schedule_task_runs": "worker",
}
NOT_REMOTE: dict[str, str] = {}


class CompatStore(abc.ABC):
    """what the swh-scheduler protocol's face needs beyond Ostinato's own verbs (see docs/reference/swh-compat.md)."""

    # -- what the compatibility faces need (see docs/reference/swh-compat.md) ------
    @abc.abstractmethod
    def schedule_task_runs(self, runs: Sequence[NewTaskRun], *, answer: bool = True) -> list[TaskRun]:
        """Record runs as scheduled by the executors that took them, in one transaction; returns them
        in input order (with ``answer=False``, none: the runs are written, not read back). A task's run
        opened by a grab with no ``backend_id`` yet becomes the new one (a grab then a schedule is one
        run); otherwise a run is added, whatever the task's status. ValidationError naming the run if its
        task does not exist (nothing written)."""

    @abc.abstractmethod
    def get_task_runs_by_backend_id(self, backend_ids: Sequence[str]) -> list[TaskRun]:
        """The runs of these executor ids, final ones included, by id (an index lookup each)."""

    @abc.abstractmethod
    def overwrite_task_status(self, ids: Sequence[int], status: TaskStatus, *, next_run: datetime | None = None,
                              except_completed_before: datetime | None = None) -> int:
        """Set the tasks' status (and ``next_run`` if given) as it is told, nothing else: no retry
        refilled, any status. With ``except_completed_before``, only tasks not completed whose
        ``next_run`` is earlier. Returns the count changed."""

    @abc.abstractmethod
    def list_runs_to_archive(self, after: datetime, before: datetime, *, after_run: tuple[int, int] = (0, 0),
                             limit: int = 1000) -> list[tuple[Task, TaskRun]]:
        """Runs dated in ``[after, before)`` (their start, or if never started their scheduling) of the
        tasks that are over by the protocol's rule — one-shot tasks completed or disabled, recurring
        tasks disabled — each with its task, ordered by (task id, run id) and paged by ``after_run``,
        that pair of the previous page's last row (so a task's runs never straddle a page unseen)."""

    @abc.abstractmethod
    def delete_archived_runs(self, task_ids: Sequence[int], run_ids: Sequence[int]) -> int:
        """The swh protocol's clean-up after an archive: delete these runs, then those of these tasks no run is
        left of (a task keeps until its last run is archived); returns how many tasks went."""

    @abc.abstractmethod
    def grab_listed_origins(self, grab: ListingGrab, now: datetime, *, dry_run: bool = False) -> list[StoredListedOrigin]:
        """The swh protocol's grab (``domain.listing_grabs``): at most ``grab.count`` listings in the
        order of its policy (ties by URL, then lister), its cooldowns computed at ``now`` from the visit
        stats; the origins' ``last_scheduled`` moves up to ``now`` (never back) and, for origins without
        ``last_update``, the visit type's queue position up to the largest grabbed. One transaction;
        with ``dry_run`` the same answer, nothing changed and no row locked. Enabled listings: a walk of the policy's
        index, whose cost follows the batch (an origin Ostinato's own grab holds is left out);
        disabled ones: a scan, as swh's own query."""

    @abc.abstractmethod
    def merge_visit_stats(self, updates: Sequence[ProtocolVisitStats], *, now: datetime | None = None) -> int:
        """Write these fields into the origins' visit stats as told, each one given over the stored one
        (the swh protocol's upsert), in order, in one transaction (a statement per batch);
        ``last_status_date`` follows ``last_visit`` forward. An origin without stats gets them
        (disabled until a lister lists it). The other fields (failures, eventful dates, change rate,
        cooldown) stay. ``now``, the wall clock, keeps the metrics' activity older than their window
        out of the cells (as ``record_visit_statuses``). Returns how many."""

    @abc.abstractmethod
    def get_protocol_visit_stats(self, keys: Sequence[tuple[str, str]]) -> list[ProtocolVisitStats]:
        """The protocol's visit stats of these (url, visit type), those with a row, in no set order."""

    @abc.abstractmethod
    def list_listings(self, *, lister_id: int | None = None, urls: Sequence[str] | None = None,
                      enabled: bool | None = True, after: tuple[int, str] = (0, ""),
                      limit: int = 1000) -> list[StoredListedOrigin]:
        """The swh protocol's pages of listings: those of ``lister_id`` (any, for None), of ``urls`` (any, for
        None), ``enabled`` or not (either, for None), ordered by (lister, url) after ``after``, the previous
        page's last (lister id, url)."""

    @abc.abstractmethod
    def lister_visit_types(self, lister_id: int) -> list[str]:
        """The visit types of a lister's listings, in order."""

    @abc.abstractmethod
    def count_listed_origins(self, *, lister_id: int | None = None) -> list[ListingCounts]:
        """The swh protocol's metrics per (lister, visit type) over the listings, in that order."""

    @abc.abstractmethod
    def get_compat_records(self, namespace: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The JSON objects stored under ``namespace`` for these keys, those that exist."""

    @abc.abstractmethod
    def list_compat_records(self, namespace: str, *, after: str = "", limit: int = 1000) -> dict[str, dict[str, Any]]:
        """The records of ``namespace`` by key, paged by ``after``, the last key of the previous page."""

    @abc.abstractmethod
    def put_compat_records(self, namespace: str, records: Mapping[str, Mapping[str, Any] | None]) -> int:
        """Store (or, for None, delete) records of ``namespace`` in one transaction; returns how many."""
