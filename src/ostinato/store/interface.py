"""The storage interface, in domain verbs. One implementation per dialect.

Services talk to a :class:`Store` only. Every verb that depends on the time takes
``now`` from the caller (the clock is injected upstream), and every verb that
changes several rows does it in one transaction, in batches.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from datetime import datetime, timedelta
import threading
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..domain.change_rates import RateSample, RevisitThreshold
from ..domain.listing_grabs import ListingCounts, ListingGrab, VisitStatsUpdate
from ..domain.origins import ListedOrigin, Lister, StoredListedOrigin
from ..domain.origin_metrics import OriginMetrics
from ..domain.schedules import RunStatus, Schedule, ScheduleRun, ScheduleTiming
from ..domain.visit_policies import GrabOptions, GrabRequest, NextVisit
from ..domain.visits import FeedbackPolicy, VisitStats, VisitStatus
from ..domain.tasks import (
    NewTask,
    NewTaskRun,
    RunEvent,
    ScheduledRun,
    Task,
    TaskPolicy,
    TaskPriority,
    TaskRun,
    TaskRunStatus,
    TaskStatus,
    TaskType,
)


@dataclass(frozen=True, slots=True)
class SchemaState:
    current: int | None
    latest: int

    @property
    def up_to_date(self) -> bool:
        return self.current == self.latest


@dataclass(frozen=True, slots=True)
class ArchivedTask:
    task: Task
    runs: tuple[TaskRun, ...]


@dataclass(frozen=True, slots=True)
class TaskActivity:
    """What a glance at the tasks shows (see :meth:`Store.task_activity`), from bounded reads."""

    #: task type → tasks ready now (status next_run_not_scheduled, next_run past), counted up to ``count_cap``
    ready: Mapping[str, int]
    #: task type → runs dispatched and not final (scheduled or started), counted up to ``count_cap`` in all
    in_flight: Mapping[str, int]
    count_cap: int
    #: task type → runs failed, permfailed or lost among the newest ``runs_window`` runs (by id)
    failed: Mapping[str, int]
    runs_window: int
    #: the newest of those runs, newest first, each with its task type
    recent_failures: tuple[tuple[str, TaskRun], ...]


class Store(abc.ABC):
    """Everything Ostinato keeps, behind verbs that say what they do."""

    #: "sqlite" or "postgresql"
    dialect: str

    # -- schema -----------------------------------------------------------
    @abc.abstractmethod
    def schema_state(self) -> SchemaState: ...

    @abc.abstractmethod
    def init_schema(self) -> SchemaState:
        """Create the canonical schema in an empty database (error if one exists)."""

    @abc.abstractmethod
    def upgrade_schema(self) -> list[int]:
        """Apply pending migrations; return the versions applied."""

    def check_schema(self) -> None:
        """Raise SchemaError unless the schema is at the latest version."""
        from ..domain.errors import SchemaError

        state = self.schema_state()
        if state.current is None:
            raise SchemaError("the database has no Ostinato schema: run `ostinato db init`")
        if state.current < state.latest:
            raise SchemaError(f"schema version {state.current} is older than {state.latest}: run `ostinato db upgrade`")
        if state.current > state.latest:
            raise SchemaError(f"schema version {state.current} is newer than this Ostinato ({state.latest}): upgrade Ostinato")

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- task types -------------------------------------------------------
    @abc.abstractmethod
    def create_task_type(self, task_type: TaskType) -> TaskType:
        """Store a new task type; ConflictError if its name is taken."""

    @abc.abstractmethod
    def get_task_type(self, name: str) -> TaskType | None: ...

    @abc.abstractmethod
    def list_task_types(self) -> list[TaskType]: ...

    # -- tasks ------------------------------------------------------------
    @abc.abstractmethod
    def create_tasks(self, tasks: Sequence[NewTask], *, one_shot_by_next_run: bool = False) -> list[Task]:
        """Create tasks in one transaction; return them in input order.

        A task equal to a pending one (same type, arguments, policy and priority,
        status ``next_run_not_scheduled``) is not created again: the existing one
        is returned. With ``one_shot_by_next_run`` (the swh protocol's rule, see
        docs/reference/swh-compat.md), a one-shot task is equal to a pending one
        only if its ``next_run`` is the same too. Unknown task types or invalid
        tasks raise ValidationError and nothing is written.
        """

    @abc.abstractmethod
    def get_tasks(self, ids: Sequence[int]) -> list[Task]:
        """The tasks with these ids that exist, in id order."""

    @abc.abstractmethod
    def search_tasks(
        self,
        *,
        task_type: str | None = None,
        status: Sequence[TaskStatus] | None = None,
        policy: TaskPolicy | None = None,
        priority: Sequence[TaskPriority | None] | None = None,
        before: datetime | None = None,
        after_id: int = 0,
        limit: int = 100,
    ) -> list[Task]:
        """Tasks matching every filter given, by id, paged by ``after_id``."""

    @abc.abstractmethod
    def peek_ready_tasks(self, task_type: str, now: datetime, limit: int, *, priority: bool = False) -> list[Task]:
        """Tasks a runner would grab now, changing nothing."""

    @abc.abstractmethod
    def grab_ready_tasks(
        self,
        task_type: str,
        now: datetime,
        limit: int,
        *,
        priority: bool = False,
        backend_id: str | None = None,
    ) -> list[ScheduledRun]:
        """Take up to ``limit`` ready tasks and record a ``scheduled`` run for each.

        Ready: ``next_run <= now`` and status ``next_run_not_scheduled``. Without
        ``priority`` only tasks with no priority are taken, oldest ``next_run``
        first; with it only prioritised tasks, high before normal before low.
        Concurrent callers never take the same task.
        """

    @abc.abstractmethod
    def set_task_status(self, ids: Sequence[int], status: TaskStatus, *, next_run: datetime | None = None) -> int:
        """Disable or respawn tasks; respawning refills retries. Returns the count changed."""

    # -- task runs --------------------------------------------------------
    @abc.abstractmethod
    def record_run_events(self, events: Sequence[RunEvent]) -> int:
        """Record runs starting and ending, and move their tasks (see docs/design/tasks.md).

        Idempotent and order-tolerant: an event for a run already final changes
        nothing. Returns the number of runs that reached a final status.
        """

    @abc.abstractmethod
    def mark_lost_runs(self, now: datetime, timeout: timedelta, *, backend_ids: Sequence[str] | None = None) -> list[int]:
        """Runs ``scheduled`` or ``started`` with no sign of life for ``timeout`` become ``lost``.

        A lost run counts as a failure of its task. With ``backend_ids``, only
        runs of those executors are considered, whatever their age (for an
        executor known to be dead). Returns the ids of the runs marked.
        """

    @abc.abstractmethod
    def in_flight_backend_ids(self, prefix: str) -> list[str]:
        """Distinct ``backend_id`` values starting with ``prefix`` of runs not yet final."""

    @abc.abstractmethod
    def list_task_runs(
        self,
        *,
        task_id: int | None = None,
        status: Sequence[TaskRunStatus] | None = None,
        after_id: int = 0,
        limit: int = 100,
    ) -> list[TaskRun]: ...

    @abc.abstractmethod
    def count_tasks(self) -> dict[tuple[str, str], int]:
        """Number of tasks per (task type, status)."""

    def task_activity(self, now: datetime, *, count_cap: int = 10_000, runs_window: int = 10_000,
                      failures_limit: int = 20) -> TaskActivity:
        """Per task type, the tasks ready at ``now`` and the runs in flight (each counted up to
        ``count_cap``: index walks of at most that many entries), the failed, permfailed or lost runs
        among the newest ``runs_window`` runs (a walk of at most that many by id), and the newest
        ``failures_limit`` of those runs. ValidationError naming the bound that is not a positive
        whole number. Implemented by the SQL stores (another store raises NotImplementedError)."""
        raise NotImplementedError(f"{type(self).__name__} has no task_activity")

    # -- what the compatibility faces need (see docs/reference/swh-compat.md) ------
    @abc.abstractmethod
    def schedule_task_runs(self, runs: Sequence[NewTaskRun]) -> list[TaskRun]:
        """Record runs as scheduled by the executors that took them, in one transaction; returns them
        in input order. A task's run opened by a grab with no ``backend_id`` yet becomes the new one
        (a grab then a schedule is one run); otherwise a run is added, whatever the task's status.
        ValidationError naming the run if its task does not exist (nothing written)."""

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
    def grab_listed_origins(self, grab: ListingGrab, now: datetime, *, dry_run: bool = False) -> list[StoredListedOrigin]:
        """The swh protocol's grab (``domain.listing_grabs``): at most ``grab.count`` listings in the
        order of its policy, its cooldowns computed at ``now`` from the visit stats; the origins'
        ``last_scheduled`` moves up to ``now`` (never back) and, for origins without ``last_update``,
        the visit type's queue position up to the largest grabbed. One transaction; with ``dry_run``
        the same answer and nothing changed. A scan of the visit type's listings, as swh's own query:
        Ostinato's own grabs (:meth:`grab_next_visits`) are the index walks."""

    @abc.abstractmethod
    def merge_visit_stats(self, updates: Sequence[VisitStatsUpdate]) -> int:
        """Write these fields into the origins' visit stats as told, each one given over the stored one
        (the swh protocol's upsert), in order, in one transaction; ``last_status_date`` follows
        ``last_visit`` forward. An origin without stats gets them (disabled until a lister lists it).
        The other fields (failures, eventful dates, change rate, cooldown) stay. Returns how many."""

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

    # -- listers and listed origins ------------------------------------------
    @abc.abstractmethod
    def get_or_create_lister(self, name: str, instance_name: str, now: datetime) -> Lister: ...

    @abc.abstractmethod
    def list_listers(self) -> list[Lister]: ...

    @abc.abstractmethod
    def update_lister(self, lister: Lister, *, current_state: Mapping[str, Any] | None = None,
                      last_listing_finished_at: datetime | None = None, now: datetime) -> Lister:
        """Save a lister's state; ConflictError if it changed since ``lister`` was read."""

    @abc.abstractmethod
    def record_listed_origins(self, lister_id: int, origins: Sequence[ListedOrigin], now: datetime, *,
                              touch_last_seen: bool = True) -> int:
        """Insert or refresh listed origins in one transaction; returns how many were written.

        A re-listed origin gets ``last_seen = now`` (kept as it was with ``touch_last_seen=False``,
        the swh protocol's ``update_last_seen``: its journal client disabling an origin is no
        listing of it; a new origin gets ``now`` all the same) and the lister's view of its
        fields, ``enabled`` included: an origin the feedback loop disabled comes
        back ("disabled until the next run of the lister") with its failure count
        reset. Each lister re-enables its own listing of the origin.
        """

    @abc.abstractmethod
    def get_listed_origins(self, *, url: str | None = None, lister_id: int | None = None,
                           after: tuple[str, str, int] | None = None, limit: int = 1000) -> list[StoredListedOrigin]:
        """Listed origins ordered by (url, visit_type, lister_id), paged by ``after``, the last row's key."""

    # -- visit stats and the feedback loop ----------------------------------
    @abc.abstractmethod
    def record_visit_statuses(self, statuses: Sequence[VisitStatus], policy: FeedbackPolicy, *,
                              now: datetime | None = None) -> int:
        """Feed journal visit statuses back into the visit stats (see docs/design/origins.md).

        One transaction per batch; idempotent and order-tolerant (see
        ``domain.visits``). Origins that reach ``max_failures`` are disabled in
        every lister that lists them. Each visit sets the origin's cooldown
        (``policy``'s absolute, failed and not-found cooldowns); ``now``, the
        wall clock, lets a cooldown already over be stored as none. Returns how
        many statuses changed stats.
        """

    @abc.abstractmethod
    def get_visit_stats(self, keys: Sequence[tuple[str, str]]) -> list[VisitStats]:
        """Stats of these (url, visit_type), those that exist, in key order."""

    # -- scheduling policies ------------------------------------------------
    @abc.abstractmethod
    def grab_next_visits(self, visit_type: str, requests: Sequence[GrabRequest], now: datetime, *,
                         options: GrabOptions = GrabOptions(), dry_run: bool = False,
                         limit: int | None = None) -> list[NextVisit]:
        """Pick origins to visit, each request's policy in turn, and mark them scheduled.

        With ``limit``, at most that many in all: requests after the shares
        (see ``domain.orchestration.plan_grab_requests``) take the room earlier
        ones could not use.

        Only enabled origins whose cooldown is over are picked (those of
        ``options.lister_id`` only, when given); marking sets ``last_scheduled``
        and a cooldown of ``options.in_flight_timeout``, so no other grab takes
        them meanwhile, on PostgreSQL even concurrently. One transaction; with
        ``dry_run`` it is rolled back: the same answer, nothing changed.
        """

    @abc.abstractmethod
    def release_visits(self, keys: Sequence[tuple[str, str]]) -> int:
        """Hand back grabbed (url, visit_type) whose visits never started: free again at once."""

    # -- change_rate_optimal's threshold ----------------------------------------
    @abc.abstractmethod
    def get_revisit_thresholds(self) -> dict[str, RevisitThreshold]:
        """The steered threshold of each visit type that has one."""

    @abc.abstractmethod
    def set_revisit_threshold(self, threshold: RevisitThreshold) -> None:
        """Store a visit type's threshold: the feedback of its next visits uses it (ValidationError
        naming the field if it cannot be stored)."""

    @abc.abstractmethod
    def sample_change_rates(self, visit_type: str, size: int, *, seed: int = 0) -> RateSample:
        """At most ``size`` enabled origins of ``visit_type`` at random, with their change rates' beliefs,
        and the number of enabled origins (exact on a small table, else estimated from the sample).
        Reads about the sample, never the whole table, once the table is large."""

    # -- metrics ------------------------------------------------------------
    @abc.abstractmethod
    def update_origin_metrics(self, now: datetime) -> list[OriginMetrics]:
        """Recount every (lister, visit type) (a full pass) and store the result; returns all metrics."""

    @abc.abstractmethod
    def get_origin_metrics(self, *, lister_id: int | None = None, visit_type: str | None = None) -> list[OriginMetrics]:
        """The metrics last stored by :meth:`update_origin_metrics`."""

    # -- schedules (see docs/design/deadline-greedy.md) ---------------------------------
    @abc.abstractmethod
    def create_schedule(self, schedule: Schedule, now: datetime, timing: ScheduleTiming = ScheduleTiming()) -> Schedule:
        """Store a new schedule (validated) with its start times; ConflictError if the name exists."""

    @abc.abstractmethod
    def get_schedule(self, name: str) -> Schedule | None: ...

    @abc.abstractmethod
    def list_schedules(self, *, after: str = "", limit: int = 100) -> list[Schedule]:
        """Schedules by name, paged by ``after``, the last name of the previous page."""

    @abc.abstractmethod
    def save_schedule(self, schedule: Schedule, now: datetime, timing: ScheduleTiming = ScheduleTiming()) -> Schedule:
        """Write a changed schedule (definition or state) and its new start times; NotFoundError if missing."""

    @abc.abstractmethod
    def delete_schedule(self, name: str) -> bool:
        """Delete a schedule and its run history; False if there was none."""

    @abc.abstractmethod
    def pick_schedules(self, *, node: str, owner_name: str, tags: Sequence[str],
                       now: datetime) -> list[tuple[Schedule, ScheduleRun]]:
        """The deadline-greedy pick, as one index walk, for up to ``len(tags)`` schedules at once: among
        enabled schedules not running and not excluded on ``node``, with ``can_start_by`` past,
        the lowest ``should_start_by`` first; take their ownership (one tag each) and open their
        runs, in one transaction. Concurrent pickers never take the same schedule."""

    def pick_schedule(self, *, node: str, owner_name: str, tag: str, now: datetime) -> tuple[Schedule, ScheduleRun] | None:
        """One schedule: :meth:`pick_schedules` with one tag."""
        picked = self.pick_schedules(node=node, owner_name=owner_name, tags=[tag], now=now)
        return picked[0] if picked else None

    @abc.abstractmethod
    def ping_schedule(self, name: str, tag: str, now: datetime) -> bool:
        """The owner's ping (clears a steal mark); False when the schedule is no longer ours."""

    @abc.abstractmethod
    def end_schedule_run(self, name: str, tag: str, *, status: RunStatus, ended: datetime,
                         detail: Mapping[str, Any] | None = None, timing: ScheduleTiming = ScheduleTiming()) -> bool:
        """End our run: the schedule's state moves by the schedule rules and ownership is released.
        False (the run recorded as stolen) when the schedule was taken over meanwhile."""

    @abc.abstractmethod
    def steal_silent_schedules(self, now: datetime, timing: ScheduleTiming = ScheduleTiming(), *,
                               limit: int = 100) -> dict[str, list[str]]:
        """The two-step steal over owners silent for ``ping_timeout``: returns the names
        ``marked`` and those ``taken`` (their runs ended as lost, a failure, the schedule free)."""

    @abc.abstractmethod
    def release_owner_schedules(self, node: str, owner_name: str, now: datetime,
                                timing: ScheduleTiming = ScheduleTiming()) -> list[str]:
        """At start-up: runs left by an earlier process of this node and name end as lost."""

    def listen_schedule_changes(self, wake: Callable[[], None], stop: threading.Event) -> bool:
        """Call ``wake`` whenever a schedule is added or changed, until ``stop`` (blocking).
        Returns False at once where the store has no such hint (schedulers then poll)."""
        return False

    @abc.abstractmethod
    def next_can_start_by(self) -> datetime | None:
        """The earliest ``can_start_by`` of a schedule that could be picked (how long to sleep)."""

    @abc.abstractmethod
    def list_schedule_runs(self, name: str, *, limit: int = 100, before_id: int | None = None) -> list[ScheduleRun]:
        """A schedule's run history, newest first."""

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

    # -- archival ---------------------------------------------------------
    @abc.abstractmethod
    def archivable_tasks(self, before: datetime, *, after_id: int = 0, limit: int = 1000) -> list[ArchivedTask]:
        """Completed or disabled tasks whose last activity is older than ``before``, with their runs."""

    @abc.abstractmethod
    def delete_tasks(self, ids: Iterable[int]) -> int:
        """Delete tasks and their runs; returns the number of tasks deleted."""

    # -- tokens of the HTTP API (see docs/reference/api.md)---------------------------------
    # A token is returned as a dict: id, name, scope ("read" or "admin"), created_at,
    # revoked_at and last_used_at (None when never); its secret's hash is never read back.

    @abc.abstractmethod
    def create_api_token(self, name: str, scope: str, secret_hash: str, now: datetime) -> dict[str, Any]:
        """Store a token by the SHA-256 (hex) of its secret; ConflictError if the name is taken
        (revoked tokens keep theirs), ValidationError naming the field for a bad name, scope or hash."""

    @abc.abstractmethod
    def list_api_tokens(self) -> list[dict[str, Any]]:
        """Every token, revoked ones included, by name."""

    @abc.abstractmethod
    def revoke_api_token(self, name: str, now: datetime) -> dict[str, Any]:
        """Revoke a token (a second revocation keeps the first time); NotFoundError if there is none."""

    @abc.abstractmethod
    def find_api_token(self, secret_hash: str, *, now: datetime | None = None) -> dict[str, Any] | None:
        """The token with this secret hash, revoked or not (an index lookup); None if there is none.
        With ``now``, a live token's ``last_used_at`` is set to it, at most once a minute."""

    #: how stale ``last_used_at`` may get before :meth:`find_api_token` writes it again
    API_TOKEN_TOUCH_EVERY = timedelta(minutes=1)

    @staticmethod
    def _checked_api_token(name: Any, scope: Any, secret_hash: Any) -> None:
        """ValidationError naming the field of a token that cannot be stored."""
        from ..domain.errors import ValidationError, check_text

        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            raise ValidationError("name", "a non-empty token name of at most 200 characters", name)
        check_text(name, "name")
        if scope not in ("read", "admin"):
            raise ValidationError("scope", "read or admin", scope)
        if (not isinstance(secret_hash, str) or len(secret_hash) != 64
                or any(c not in "0123456789abcdef" for c in secret_hash)):
            raise ValidationError("secret_hash", "the SHA-256 of the secret, 64 lowercase hexadecimal digits", None)
