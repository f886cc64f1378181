"""The forge of ``ostinato demo`` (the command: ``cli/demo.py``): the real scheduler keeping a simulated
forge fresh, in accelerated time.

A forge of a few thousand sources (:class:`~ostinato.sim.world.World`, a
standard workload) changes while the clock runs ``days_per_second`` simulated
days a second (:class:`AcceleratedClock`). Everything else is Ostinato's real
embedded path on a SQLite file: the lister records the sources (and re-lists
the forges that report ``last_update``), the orchestrator grabs by policy and
steers ``change_rate_optimal``'s threshold, the embedded workers run a loader
that looks at the forge (each visit takes a little real time, which is the
capacity), and the statuses feed the visit stats back. :class:`DemoForge`
keeps what is archived, so the figures shown live — freshness (the share of
sources whose archived copy is current) and mean age (time since the first
unarchived change) — are measured on the forge itself, not taken from
Ostinato's own view.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

from ..config import Settings
from ..domain.origins import ListedOrigin
from ..domain.tasks import TaskType
from ..execution.registry import OriginNotFound
from ..execution.registry import registry as default_registry
from ..services.embedded_scheduler import EmbeddedScheduler, prepare_embedded_schema
from ..store import Store
from .world import World, WorldConfig

START = datetime(2026, 1, 1, tzinfo=UTC)
LOADER_NAME = "ostinato-demo-forge"
VISIT_TYPE = "git"
_DAY = 86_400.0


class AcceleratedClock:
    """Simulated time running ``days_per_second`` days for every real second, from ``start``."""

    def __init__(self, days_per_second: float, start: datetime = START, monotonic=time.monotonic):
        self.speed = days_per_second * _DAY
        self.start = start
        self._monotonic = monotonic
        self._t0 = monotonic()

    def now(self) -> datetime:
        return self.start + timedelta(seconds=(self._monotonic() - self._t0) * self.speed)

    def days(self) -> float:
        return (self._monotonic() - self._t0) * self.speed / _DAY


@dataclass
class Figures:
    day: float
    sources: int
    freshness: float
    mean_age_days: float
    visits: int
    eventful: int
    never_visited: int


@dataclass
class DemoForge:
    """The forge's sources and what the archive holds of each."""

    world: World
    clock: AcceleratedClock
    visit_seconds: float
    #: the version archived by the last successful visit (-1: never)
    archived: np.ndarray = field(init=False)
    #: when the first change not yet archived happened (NaN: fresh)
    stale_since: np.ndarray = field(init=False)
    visits: int = 0
    eventful: int = 0
    _until: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.archived = np.full(self.world.size, -1, dtype=np.int64)
        self.stale_since = self.world.birth.copy()  # nothing archived yet: stale since its birth

    def advance(self) -> None:
        """Bring the forge's changes up to the clock."""
        with self._lock:
            now = self.clock.days()
            if now <= self._until:
                return
            changes = self.world.advance(self._until, now)
            self._until = now
            if changes.sources.size:
                fresh = np.isnan(self.stale_since[changes.sources])
                first = np.full(self.world.size, np.inf)
                np.minimum.at(first, changes.sources[fresh], changes.times[fresh])
                became = np.isfinite(first)
                self.stale_since[became] = first[became]

    def load(self, url: str, lister_name=None, lister_instance_name=None, **extra) -> dict:
        """The loader: a visit of one source, taking ``visit_seconds`` of real time."""
        time.sleep(self.visit_seconds)
        self.advance()
        index = int(url.rsplit("/", 1)[1])
        if self.world.dead[index]:
            raise OriginNotFound(url)
        with self._lock:
            version = int(self.world.version[index])
            before = int(self.archived[index])
            self.archived[index] = version
            self.stale_since[index] = np.nan
            self.visits += 1
            self.eventful += int(version != before)
        snapshot = hashlib.sha1(f"{index}:{version}".encode()).hexdigest()
        counted = version - max(before, 0) if self.world.counts_changes and before >= 0 else None
        return {"status": "full", "snapshot": snapshot, "changes": counted}

    def figures(self) -> Figures:
        self.advance()
        with self._lock:
            now = self._until
            born = self.world.born_by(now)
            live = ~self.world.dead[:born]
            stale = self.stale_since[:born][live]
            ages = np.where(np.isnan(stale), 0.0, now - stale)
            return Figures(now, int(live.sum()), float(np.mean(np.isnan(stale))) if stale.size else 1.0,
                           float(ages.mean()) if ages.size else 0.0, self.visits, self.eventful,
                           int(np.sum(self.archived[:born][live] < 0)))

    def listed(self, indexes: np.ndarray) -> list[ListedOrigin]:
        """The lister's view: forges that report it give the time of the newest change."""
        return [ListedOrigin(f"https://forge.example/{i}", VISIT_TYPE,
                             last_update=(START + timedelta(days=float(self.world.last_change[i]))
                                          if self.world.reports_last_update[i] else None))
                for i in indexes]


def prepare(store: Store, forge: DemoForge) -> DemoLister:
    """The demo's task type and loader, and its lister after the first listing, on a fresh store."""
    prepare_embedded_schema(store)
    default_registry.register(LOADER_NAME, forge.load)
    store.create_task_type(TaskType(f"load-{VISIT_TYPE}", "the demo forge's loader", LOADER_NAME,
                                    max_queue_length=200))
    lister = DemoLister(store, forge)
    lister.list()
    return lister


def demo_settings(db: str, *, policy: str, capacity_per_day: float, workers: int) -> Settings:
    ratios = ({VISIT_TYPE: {"change_rate_optimal": 1, "never_visited_oldest_update_first": 0,
                            "already_visited_order_by_lag": 0, "origins_without_last_update": 0}}
              if policy == "optimal" else {})
    return Settings().with_values({
        "db": db, "workers": workers, "poll_interval": "0.05s", "batch_size": 200, "orchestrator_threshold": 0.1,
        "policy_ratios": ratios, "absolute_cooldown": "1h", "minimum_interval": "1h", "failure_delay": "1d",
        "in_flight_timeout": "2d", "revisit_capacity": capacity_per_day, "revisit_steer_every": "1d",
    })


class DemoLister:
    """Lists the sources born since the last listing, and re-lists those of forges that report
    ``last_update`` whose newest change is newer than the last listing said."""

    def __init__(self, store: Store, forge: DemoForge):
        self.store = store
        self.forge = forge
        self.lister_id = store.get_or_create_lister("demo-forge", "forge.example", forge.clock.now()).id
        self.listed = 0
        self.said = np.zeros(forge.world.size)

    def list(self) -> int:
        world = self.forge.world
        born = world.born_by(self.forge.clock.days())
        changed = np.flatnonzero(world.reports_last_update[:self.listed]
                                 & (world.last_change[:self.listed] > self.said[:self.listed]))
        indexes = np.concatenate([changed, np.arange(self.listed, born)]).astype(np.int64)
        if indexes.size:
            self.store.record_listed_origins(self.lister_id, self.forge.listed(indexes), self.forge.clock.now())
            self.said[indexes] = world.last_change[indexes]
        self.listed = born
        return int(indexes.size)


def run_demo(store: Store, db: str, *, sources: int, seconds: float, days_per_second: float, policy: str, workload: str,
             workers: int, seed: int, on_figures=None, relist_every_days: float = 1.0) -> list[Figures]:
    """Run the demo for ``seconds`` of real time; ``on_figures`` sees the figures twice a second."""
    horizon = seconds * days_per_second
    world = World(WorldConfig(workload, sources, seed, horizon, new_sources_per_day=sources / 365,
                              dead_share=0.02, share_last_update=0.3))
    capacity = sources / 7  # visits a day: each visit takes workers / capacity simulated days of a worker
    clock = AcceleratedClock(days_per_second)
    forge = DemoForge(world, clock, visit_seconds=workers / (capacity * days_per_second))
    lister = prepare(store, forge)
    settings = demo_settings(db, policy=policy, capacity_per_day=capacity, workers=workers)
    scheduler = EmbeddedScheduler(store, settings, clock, normal=False, priority=False, orchestrate=True)
    scheduler.summary_every = 3600
    stop = threading.Event()
    scheduler.start()
    thread = threading.Thread(target=scheduler.run_until, args=(stop,), name="ostinato-demo", daemon=True)
    thread.start()
    history: list[Figures] = []
    next_listing = relist_every_days
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            time.sleep(0.5)
            if clock.days() >= next_listing:
                lister.list()
                next_listing += relist_every_days
            history.append(forge.figures())
            if on_figures is not None:
                on_figures(history[-1])
    finally:
        stop.set()
        thread.join(30)
        scheduler.stop(5)
    return history
