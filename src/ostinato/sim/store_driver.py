"""Store policies in the simulation: Ostinato's real store, orchestrator and feedback loop.

:class:`StoreScheduler` gives one :class:`~ostinato.sim.policies.StorePolicy` a
fresh store (in-memory SQLite by default; a new SQLite file per policy, or a new
PostgreSQL schema per policy, on request), a loader task type whose queue the
:class:`SimulatedExecutor` reports as having exactly the step's visit quota free,
two listers (a forge that reports ``last_update`` and one that does not), and the
real :class:`~ostinato.services.orchestrator.Orchestrator`, which grabs by ratio
(``plan_grab_requests``, one ``grab_next_visits`` per step). Statuses go back
through ``record_visit_statuses`` with the simulation's feedback settings.

Simulated here: only the clock (a ``ManualClock`` set to each step), the
executor (visits are "run" by the engine) and the listers' input.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Settings
from ..domain.clock import ManualClock
from ..domain.errors import ValidationError
from ..domain.orchestration import default_ratios
from ..domain.origins import ListedOrigin
from ..domain.tasks import ScheduledRun, TaskType
from ..domain.visit_policies import NextVisit, loader_task_type
from ..domain.visits import JournalStatus, VisitStatus
from ..services.orchestrator import Orchestrator
from ..store import Store, open_store, sqlite_path
from .archive_tracker import FAILED, NOT_FOUND, SUCCESS
from .hosts import host_name
from .policies import StorePolicy

VISIT_TYPE = "git"
LOADER_BACKEND = "ostinato.sim:simulated_visit"
#: (lister name, instance, URL host) of the forge that reports last_update, and of the one that does not
FORGE_WITH_LAST_UPDATE = ("sim-forge-a", "reports-last-update", "forge-a.example")
FORGE_WITHOUT_LAST_UPDATE = ("sim-forge-b", "no-last-update", "forge-b.example")
#: the random stream of the order the origins are named in
STREAM_NAMES = 8
_STATUS = {SUCCESS: JournalStatus.FULL, FAILED: JournalStatus.FAILED, NOT_FOUND: JournalStatus.NOT_FOUND}


class SimulatedExecutor:
    """The orchestrator's executor: its queue has ``free`` slots at each step; it keeps what it is given."""

    executor_id = "simulator"

    def __init__(self, queue_length: int):
        self.queue_length = queue_length
        self.free = 0
        self.visits: list[NextVisit] = []

    def waiting(self, task_type: TaskType, *, priority: bool | None = None) -> int:
        return 0 if priority else self.queue_length - self.free

    def submit(self, runs: Sequence[ScheduledRun], backend_name: str, *, priority: bool = False) -> None:
        if runs:  # the simulation creates no tasks
            raise RuntimeError("the simulator's executor runs no tasks")

    def submit_visits(self, visits: Sequence[NextVisit], backend_name: str, *, priority: bool = False) -> None:
        self.visits.extend(visits)

    def check_callable(self, backend_name: str) -> None:
        return None


def _steering(store: Store, settings: Settings) -> dict[str, Any]:
    """The orchestrator's threshold steering, built as ``ostinato run`` builds it, when this
    Ostinato has it (``change_rate_optimal``'s threshold follows the capacity it measures)."""
    try:
        from ..services.revisit_steering import ThresholdSteering
    except ImportError:
        return {}
    return {"steering": ThresholdSteering(store, settings.revisit_model(), capacity=settings.revisit_capacity,
                                          every=settings.revisit_steer_every)}


def snapshot_id(source: int, version: int) -> bytes:
    """The snapshot a visit archives: the same source at the same version gives the same snapshot."""
    return int(source).to_bytes(8, "big") + int(version).to_bytes(8, "big")


def name_order(size: int, seed: int) -> np.ndarray:
    """Each source's rank in the order its URL sorts in, a permutation drawn from the seed.

    Origins listed at once are first visited in the order of their URLs (``first_seen`` ties);
    numbered in source order, a run's first visits, and the phases they set, would be the same
    on every seed (docs/reference/simulator.md, "What it simulates")."""
    return np.random.default_rng([seed, STREAM_NAMES]).permutation(size)


class SourceNames:
    """How the simulator names its sources as origins: the forge's host (whether it reports
    ``last_update``), the source's rank in the seed's order of names, zero-padded, then its number
    (which :meth:`source_of` reads back). Every scheduler driven through one world names them so."""

    def __init__(self, reports_last_update: np.ndarray, seed: int):
        self.reports_last_update = reports_last_update
        self._hosts = {True: FORGE_WITH_LAST_UPDATE[2], False: FORGE_WITHOUT_LAST_UPDATE[2]}
        self._names = name_order(reports_last_update.size, seed)
        self._width = len(str(max(reports_last_update.size - 1, 0)))

    def url(self, source: int) -> str:
        host = self._hosts[bool(self.reports_last_update[source])]
        return f"https://{host}/source/{int(self._names[source]):0{self._width}d}-{source}"

    @staticmethod
    def source_of(url: str) -> int:
        return int(url.rpartition("-")[2])


def _policy_slug(name: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", name.lower())


class PolicyDatabase:
    """Where one policy's store lives: a fresh one, removed afterwards when it is not a file."""

    def __init__(self, url: str, policy: str):
        self.url = url
        self._schema: str | None = None
        path = sqlite_path(url)
        if path == ":memory:":
            self.store_url = "sqlite:///:memory:"
        elif path is not None:
            file = Path(path)
            target = file.with_name(f"{file.stem}.{_policy_slug(policy)}{file.suffix or '.db'}")
            if target.exists():
                raise ValidationError("db", f"a path where the simulation can create {target} (it exists: remove it)", url)
            self.store_url = str(target)
        else:
            import psycopg
            from psycopg.conninfo import make_conninfo

            self._schema = f"ostinato_sim_{_policy_slug(policy)}_{os.getpid()}"
            self._admin = url
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{self._schema}" CASCADE')
                conn.execute(f'CREATE SCHEMA "{self._schema}"')
            self.store_url = make_conninfo(url, options=f"-c search_path={self._schema}")

    def drop(self) -> None:
        if self._schema is not None:
            import psycopg

            with psycopg.connect(self._admin, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{self._schema}" CASCADE')


class StoreScheduler:
    def __init__(self, policy: StorePolicy, *, world_counts_changes: bool, counts_changes: bool, settings: Settings,
                 start: datetime, db_url: str, queue_length: int, reports_last_update: np.ndarray,
                 visit_type: str = VISIT_TYPE, hosts: np.ndarray | None = None,
                 politeness: tuple[int | None, timedelta | None] | None = None, seed: int = 0):
        self.policy = policy
        self.visit_type = visit_type
        self.start = start
        self.counts_changes = counts_changes and world_counts_changes
        self.settings = settings
        self.feedback = settings.feedback_policy()
        self.clock = ManualClock(start)
        self._db = PolicyDatabase(db_url, policy.name)
        self.store: Store = open_store(self._db.store_url)
        try:
            self.store.init_schema()
            self.store.create_task_type(TaskType(loader_task_type(visit_type), "Simulated visits", LOADER_BACKEND,
                                                 max_queue_length=queue_length))
            if politeness is not None:  # the store keeps the limits itself, as for any orchestrator
                self.store.set_visit_type_politeness(visit_type, max_concurrent_per_host=politeness[0],
                                                     min_spacing_per_host=politeness[1])
            self.listers = {
                True: self.store.get_or_create_lister(*FORGE_WITH_LAST_UPDATE[:2], start).id,
                False: self.store.get_or_create_lister(*FORGE_WITHOUT_LAST_UPDATE[:2], start).id,
            }
            self.executor = SimulatedExecutor(queue_length)
            ratios = {p: 0.0 for p in default_ratios(visit_type)} | dict(policy.ratios)
            self.orchestrator = Orchestrator(self.store, self.executor, self.clock, visit_types=[visit_type],
                                             ratios={visit_type: ratios}, threshold=0.0,
                                             grab_options=settings.grab_options(), batch_size=queue_length,
                                             **_steering(self.store, settings))
        except BaseException:
            self.close()
            raise
        self.reports_last_update = reports_last_update
        self.names = SourceNames(reports_last_update, seed)
        #: each source's host (given to the store as the lister's key), or None: the forge of its URL
        self.source_hosts = hosts
        #: visits taken by each store policy of the mix
        self.picked_by: dict[str, int] = {}

    # -- time and names ------------------------------------------------------------
    def when(self, t: float) -> datetime:
        return self.start + timedelta(days=float(t))

    def url(self, source: int) -> str:
        return self.names.url(source)

    source_of = staticmethod(SourceNames.source_of)

    # -- the scheduler protocol ----------------------------------------------------
    def listing(self, t: float, sources: np.ndarray, last_change: np.ndarray) -> None:
        """The listers run: ``sources`` new or changed since their last run, with the time of
        their newest change (reported as ``last_update`` by the forge that reports it)."""
        if sources.size == 0:
            return
        now = self.when(t)
        self.clock.set(now)
        for reports, lister_id in self.listers.items():
            mine = self.reports_last_update[sources] == reports
            origins = [ListedOrigin(self.url(int(s)), self.visit_type, last_update=self.when(c) if reports else None,
                                    host=None if self.source_hosts is None else host_name(self.source_hosts[s]))
                       for s, c in zip(sources[mine].tolist(), last_change[mine].tolist(), strict=True)]
            if origins:
                self.store.record_listed_origins(lister_id, origins, now)

    def feed(self, t: float, visits: Mapping[str, np.ndarray]) -> None:
        """The loaders' statuses of the visits that ended before ``t``, through the feedback loop."""
        self.clock.set(self.when(t))
        statuses = []
        seen = visits.get("times")
        for k, (source, end, outcome, version, changes, number) in enumerate(zip(
                visits["source"].tolist(), visits["end"].tolist(), visits["outcome"].tolist(),
                visits["version"].tolist(), visits["changes"].tolist(), visits["number"].tolist(), strict=True)):
            success = outcome == SUCCESS
            newest, times = None, None
            if success and seen is not None and changes >= 0:  # what a git fetch sees: when each change came
                times = tuple(self.when(t) for t in seen[k])
                newest = self.when(visits["newest"][k]) if np.isfinite(visits["newest"][k]) else None
            statuses.append(VisitStatus(
                self.url(source), number, self.visit_type, _STATUS[outcome], self.when(end),
                snapshot_id(source, version) if success else None,
                changes if success and self.counts_changes and changes >= 0 else None,
                newest_change_at=newest, change_times=times,
            ))
        if statuses:
            self.store.record_visit_statuses(statuses, self.feedback, now=self.clock.now())

    def pick(self, t: float, until: float, quota: int) -> tuple[np.ndarray, np.ndarray]:
        """One orchestrator pass at ``t`` with ``quota`` free slots: the sources it grabbed."""
        self.clock.set(self.when(t))
        self.executor.free = quota
        self.executor.visits = []
        if quota > 0:
            self.orchestrator.run_once()
        visits = self.executor.visits
        for visit in visits:
            self.picked_by[visit.policy.value] = self.picked_by.get(visit.policy.value, 0) + 1
        sources = np.fromiter((self.source_of(v.url) for v in visits), dtype=np.int64, count=len(visits))
        return sources, np.full(sources.size, t)

    def notes(self) -> dict[str, Any]:
        """The visits each store policy took, and of a sample of the enabled origins at the end, the
        share whose rate is learnt from changed / unchanged (``rate_evidence`` kept: a loader that
        cannot count, or an origin whose changes came in a burst)."""
        sample = self.store.sample_change_rates(self.visit_type, 2000, seed=0)
        kept = sum(evidence is not None for _, _, evidence in sample.beliefs)
        return {"picked_by_store_policy": dict(sorted(self.picked_by.items())),
                "share_learnt_from_bits": kept / len(sample.beliefs) if sample.beliefs else None}

    def close(self) -> None:
        try:
            store = getattr(self, "store", None)
            if store is not None:
                store.close()
        finally:
            self._db.drop()
