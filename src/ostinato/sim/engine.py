"""The simulation loop: one world, one policy, a simulated clock moving step by step.

Each step [t, t + step):

1. the listers run (every ``listing_period``): sources born since the last
   listing, and sources of the forge that reports ``last_update`` that changed
   since, with the time of their newest change; every ``full_listing_period``
   they list every source (which re-enables those the feedback disabled);
2. the statuses of the visits that ended before t are fed back;
3. the policy picks the step's visits: C × step of them (whole numbers that add
   up to C a day), through the orchestrator for a store policy;
4. each visit gets a duration (log-normal around ``visit_duration``, 1 minute to
   6 hours) and an outcome: not found for a dead source, failed with probability
   ``failure_rate``, else successful;
5. the world's changes in the step are drawn, and applied together with the
   visits that end in the step, in time order: a successful visit archives the
   version its source has at its end; its snapshot is derived from that version,
   so an unchanged source gives the same snapshot again;
6. freshness is sampled at the step's end (for the plot; the reported means are
   exact integrals, see ``archive_tracker``).

The world's history depends only on the seed (or on the recorded history a
``trace`` replays, ``trace_world``): every policy sees the same births, changes and
deaths. Time in the loop is days since :data:`START` as floats; the store sees
datetimes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from multiprocessing import get_context
from typing import Any

import numpy as np

from ..config import Settings
from ..domain.errors import ValidationError
from ..domain.politeness import check_max_concurrent, check_min_spacing
from ..store import DB_URL_FORMS, sqlite_path
from .archive_tracker import FAILED, NOT_FOUND, SUCCESS, ArchiveTracker, WindowMetrics
from .baselines import MultiplicativeScheduler, OracleScheduler, UniformScheduler
from .hosts import host_assignment
from .oracle import allocate, expected_age, expected_freshness
from .policies import Baseline, PolicyUnderTest, StorePolicy
from .sight import ChangeSight, Information
from .trace import Trace
from .workloads import WORKLOADS
from .world import World, WorldConfig

START = datetime(2026, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)
#: random streams of the visits' durations and outcomes, and of the oracle's phases
STREAM_VISITS, STREAM_PHASES = 5, 6
LONGEST_VISIT = timedelta(hours=6)
SHORTEST_VISIT = timedelta(minutes=1)
VISIT_DURATION_SIGMA = 1.0
#: new sources a day per source, when not given
DEFAULT_NEW_SOURCE_SHARE = 0.0003


@dataclass(frozen=True)
class SimulationConfig:
    workload: str = "git_lognormal"
    sources: int = 10_000
    #: visits a day (None: sources / 7)
    capacity: float | None = None
    #: the measurement window, days
    days: float = 60.0
    #: the warm-up before it, days
    warmup: float = 182.0
    step: timedelta = timedelta(hours=1)
    seed: int = 0
    #: share of sources whose forge's lister reports last_update
    share_last_update: float = 0.0
    #: new sources a day (None: sources × DEFAULT_NEW_SOURCE_SHARE)
    new_sources_per_day: float | None = None
    failure_rate: float = 0.02
    dead_share: float = 0.01
    #: the oracle's floor: every source visited at least once per max_gap
    max_gap: timedelta = timedelta(days=60)
    listing_period: timedelta = timedelta(days=1)
    #: every this often the listers list every source again (re-enabling what the feedback disabled)
    full_listing_period: timedelta = timedelta(days=30)
    #: median visit duration
    visit_duration: timedelta = timedelta(minutes=10)
    #: statuses carry the number of changes (None: as the workload's loader can)
    change_counts: bool | None = None
    #: what a visit sees of the changes: bits, counts or times (None: counts where the loader counts,
    #: as ``change_counts`` says, else bits)
    visit_information: str | None = None
    db: str = "sqlite:///:memory:"
    #: settings over the simulation's, for every store policy
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: a recorded history replayed instead of the workload's world (``trace_world``): births, changes
    #: and deaths follow it, and ``sources`` is its number of origins in the run
    trace: Trace | None = field(default=None, compare=False, repr=False)
    #: the trace's time at day 0 (None, until validated: the run ends at the trace's last change)
    trace_start: datetime | None = None
    #: the trace's origins die at their last recorded change (else they stay, quiet, to the end)
    trace_deaths: bool = True
    #: replicas of each origin of the trace, each shifted by its own random time (``trace.replicate``)
    trace_copies: int = 1
    #: sources spread over this many hosts, Zipf-distributed with ``host_skew`` (0: the listers' two forges)
    hosts: int = 0
    host_skew: float = 1.5
    #: politeness per host (``domain.politeness``): visits in flight on a host, and least time between its starts
    max_per_host: int | None = None
    min_spacing_per_host: timedelta | None = None

    @property
    def polite(self) -> bool:
        return self.max_per_host is not None or (self.min_spacing_per_host or timedelta(0)) > timedelta(0)

    @property
    def visits_per_day(self) -> float:
        return self.capacity if self.capacity is not None else self.sources / 7

    @property
    def new_per_day(self) -> float:
        return self.new_sources_per_day if self.new_sources_per_day is not None else self.sources * DEFAULT_NEW_SOURCE_SHARE

    @property
    def step_days(self) -> float:
        return self.step / DAY

    @property
    def horizon(self) -> float:
        return self.warmup + self.days

    @property
    def counts_changes(self) -> bool:
        """Statuses carry the number of changes; a trace's loader finds each recorded change."""
        if self.visit_information is not None:
            return self.visit_information != Information.BITS.value
        if self.change_counts is not None:
            return self.change_counts
        return True if self.trace is not None else WORKLOADS[self.workload].counts_changes

    @property
    def information(self) -> Information:
        """What a visit sees of the changes (``sight``)."""
        if self.visit_information is not None:
            return Information(self.visit_information)
        return Information.COUNTS if self.counts_changes else Information.BITS

    def validated(self) -> SimulationConfig:
        """Self (with a trace: its start and number of origins resolved), or ValidationError naming the
        option at fault."""
        if self.trace is not None:
            return self._resolved_trace(self.trace)._validated()
        return self._validated()

    def _resolved_trace(self, trace: Trace) -> SimulationConfig:
        from .trace import replicate
        from .trace_world import trace_population

        _check_number("trace_copies", self.trace_copies, minimum=1, maximum=10_000, whole=True)
        if trace.copies != self.trace_copies:
            if trace.copies != 1:
                raise ValidationError("trace_copies", f"the copies of the trace given ({trace.copies})", self.trace_copies)
            trace = replicate(trace, self.trace_copies, self.seed)
        _check_number("days", self.days, minimum=0, above=True)
        _check_number("warmup", self.warmup, minimum=0)
        start = self.trace_start
        if start is None:
            start = datetime.fromtimestamp(trace.end, UTC) - timedelta(days=self.horizon)
        elif not isinstance(start, datetime) or start.tzinfo is None:
            raise ValidationError("trace_start", "a time with a zone", start)
        population = trace_population(trace, start.timestamp(), self.horizon, self.trace_deaths)
        return replace(self, trace=trace, trace_start=start, sources=int(population.origins.size), dead_share=0.0,
                       new_sources_per_day=0.0)

    def _validated(self) -> SimulationConfig:
        if self.visit_information is not None:
            if self.visit_information not in {i.value for i in Information}:
                raise ValidationError("visit_information", "bits, counts or times", self.visit_information)
            if self.change_counts is not None:
                raise ValidationError("change_counts", "no value with visit_information (which says it)",
                                      self.change_counts)
        if self.workload not in WORKLOADS:
            raise ValidationError("workload", f"one of {', '.join(WORKLOADS)}", self.workload)
        _check_number("sources", self.sources, minimum=1, whole=True)
        _check_number("capacity", self.visits_per_day, minimum=0, above=True)
        _check_number("days", self.days, minimum=0, above=True)
        _check_number("warmup", self.warmup, minimum=0)
        _check_number("seed", self.seed, minimum=0, whole=True)
        _check_number("share_last_update", self.share_last_update, minimum=0, maximum=1)
        _check_number("new_sources_per_day", self.new_per_day, minimum=0)
        _check_number("failure_rate", self.failure_rate, minimum=0, maximum=1, below=True)
        _check_number("dead_share", self.dead_share, minimum=0, maximum=1, below=True)
        for name in ("step", "max_gap", "listing_period", "full_listing_period", "visit_duration"):
            value = getattr(self, name)
            if not isinstance(value, timedelta) or value <= timedelta(0):
                raise ValidationError(name, "a positive duration", value)
        if self.step > DAY:
            raise ValidationError("step", "a duration of at most 1d", self.step)
        if self.days / self.step_days > 1e6 or self.warmup / self.step_days > 1e6:
            raise ValidationError("step", "a step that makes at most 1,000,000 steps", self.step)
        if self.listing_period < self.step:
            raise ValidationError("listing_period", f"at least the step ({self.step})", self.listing_period)
        if self.full_listing_period < self.listing_period:
            raise ValidationError("full_listing_period", f"at least the listing period ({self.listing_period})",
                                  self.full_listing_period)
        floor = DAY / self.max_gap
        if floor * self.sources > self.visits_per_day:
            raise ValidationError("max_gap", f"a gap long enough for the capacity ({self.sources} sources once per "
                                  f"{self.max_gap.days}d need more than {self.visits_per_day:g} visits a day)", self.max_gap)
        if not isinstance(self.db, str) or (sqlite_path(self.db.strip()) is None
                                            and not self.db.strip().startswith(("postgresql://", "postgres://"))
                                            and "=" not in self.db):  # a libpq "host=… dbname=…" string
            raise ValidationError("db", DB_URL_FORMS, self.db)
        _check_number("hosts", self.hosts, minimum=0, maximum=1_000_000, whole=True)
        _check_number("host_skew", self.host_skew, minimum=0, maximum=10)
        check_max_concurrent(self.max_per_host, "max_per_host")
        check_min_spacing(self.min_spacing_per_host, "min_spacing_per_host")
        simulation_settings(self)
        return self


def _check_number(name: str, value: Any, *, minimum: float | None = None, maximum: float | None = None,
                  whole: bool = False, above: bool = False, below: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (not whole or float(value).is_integer())
    ok = ok and (minimum is None or (value > minimum if above else value >= minimum))
    ok = ok and (maximum is None or (value < maximum if below else value <= maximum))
    if not ok:
        kind = "a whole number" if whole else "a number"
        bounds = []
        if minimum is not None:
            bounds.append(f"{'above' if above else 'at least'} {minimum:g}")
        if maximum is not None:
            bounds.append(f"{'below' if below else 'at most'} {maximum:g}")
        raise ValidationError(name, kind + (" " + " and ".join(bounds) if bounds else ""), value)


def simulation_settings(config: SimulationConfig, overrides: Mapping[str, Any] | None = None) -> Settings:
    """The settings store policies run with: the defaults, with cooldowns short enough not to throttle
    any policy (``absolute_cooldown`` and ``minimum_interval`` = the step; the orchestrator fills
    its queue whatever its level), then ``config.settings``, then a policy's own ``overrides``."""
    values: dict[str, Any] = {"absolute_cooldown": config.step, "minimum_interval": config.step,
                              "orchestrator_threshold": 0.0,
                              # change_rate_optimal's threshold once a simulated day: its steering reads a
                              # sample of the table and solves; every 10 minutes it cost most of the run
                              "revisit_steer_every": "1d"}
    values.update(config.settings)
    values.update(overrides or {})
    return Settings().with_values(values)


@dataclass
class PolicyRun:
    """What one policy did in one simulation."""

    name: str
    kind: str
    description: str
    metrics: WindowMetrics
    #: sampled at the end of each step: time (days) and freshness
    sample_times: np.ndarray
    sample_freshness: np.ndarray
    seconds: float
    notes: dict[str, Any] = field(default_factory=dict)
    #: closed-form expectations for the initial population (baselines only)
    theory: dict[str, float] | None = None


def make_world(config: SimulationConfig, share_last_update: float | None = None) -> World:
    """The world of a validated configuration: the workload's, or the trace's (``trace_world``)."""
    share = config.share_last_update if share_last_update is None else share_last_update
    if config.trace is not None:
        from .trace_world import TraceWorld

        assert config.trace_start is not None  # validated(): a trace's start is resolved
        # a TraceWorld has every attribute and method of a World that the engine reads, without being one
        return TraceWorld(config.trace, start=config.trace_start.timestamp(),  # type: ignore[return-value]  # a World by its shape
                          horizon=config.horizon, deaths=config.trace_deaths, share_last_update=share, seed=config.seed)
    return World(WorldConfig(config.workload, config.sources, config.seed, config.horizon, config.new_per_day,
                             config.dead_share, share))


def world_hosts(config: SimulationConfig, world: World) -> np.ndarray:
    """Each source's host: the Zipf draw of ``hosts``, else its lister's forge (0 or 1)."""
    if config.hosts:
        return host_assignment(world.size, config.hosts, config.host_skew, config.seed)
    return world.reports_last_update.astype(np.int64)


def _make_scheduler(policy: PolicyUnderTest, world: World, config: SimulationConfig):
    settings = simulation_settings(config, getattr(policy, "settings", None))
    hosts = world_hosts(config, world)
    if isinstance(policy, StorePolicy):
        from .store_driver import VISIT_TYPE, StoreScheduler

        queue = math.ceil(config.visits_per_day * config.step_days) + 1
        return StoreScheduler(policy, world_counts_changes=True, counts_changes=config.counts_changes, settings=settings,
                              start=START, db_url=config.db, queue_length=queue,
                              reports_last_update=world.reports_last_update,
                              visit_type=config.trace.visit_type if config.trace is not None else VISIT_TYPE,
                              hosts=hosts if config.hosts else None,
                              politeness=(config.max_per_host, config.min_spacing_per_host) if config.polite else None,
                              seed=config.seed)
    assert isinstance(policy, Baseline)
    polite = (hosts, config.max_per_host, config.min_spacing_per_host) if config.polite else None
    if policy.rule == "uniform":
        return UniformScheduler(world.size, settings.feedback_policy(), polite=polite)
    if policy.rule == "multiplicative":
        return MultiplicativeScheduler(world.size, settings.feedback_policy(), polite=polite)
    if policy.rule == "model_oracle":
        if config.trace is None:
            raise ValidationError("policy", "a --trace to fit each origin's burst model on", policy.name)
        from .model_oracle import ModelOracleScheduler

        return ModelOracleScheduler(world.size, settings.feedback_policy(), polite=polite,
                                    changes=world.recorded(0.0, config.horizon),  # type: ignore[attr-defined]  # a TraceWorld's
                                    horizon=config.horizon, capacity=config.visits_per_day, shortest=config.step_days)
    if config.polite:
        raise ValidationError("policy", "with politeness per host, a store policy, uniform or multiplicative (the "
                              "oracles schedule by time, not by host)", policy.name)
    if policy.rule == "oracle":
        floor = DAY / config.max_gap if policy.floor else 0.0
        return OracleScheduler(world.rates, world.dead, config.visits_per_day, objective=policy.objective or "freshness",
                               floor=floor, rng=np.random.default_rng([config.seed, STREAM_PHASES]),
                               first_visit_within=config.listing_period / DAY, death=world.death)
    raise ValueError(f"unknown baseline rule {policy.rule!r}")


def _theory(policy: PolicyUnderTest, world: World, config: SimulationConfig) -> dict[str, float] | None:
    """The closed forms for the initial live sources, for a baseline that has them (in a Poisson world)."""
    if not isinstance(policy, Baseline) or policy.rule == "multiplicative" or not world.poisson:
        return None
    rates = world.rates[: config.sources][~world.dead[: config.sources]]
    if policy.rule == "uniform":
        freqs = np.full(rates.size, config.visits_per_day / config.sources)
    else:
        floor = DAY / config.max_gap if policy.floor else 0.0
        freqs = allocate(rates, config.visits_per_day, objective=policy.objective or "freshness", floor=floor).freqs
    return {"freshness": float(expected_freshness(rates, freqs).mean()), "mean_age_days": float(expected_age(rates, freqs).mean())}


class _Visits:
    """Visits in flight, as parallel arrays."""

    KEYS = ("source", "start", "end", "outcome", "number")

    def __init__(self):
        self.arrays = {"source": np.empty(0, np.int64), "start": np.empty(0), "end": np.empty(0),
                       "outcome": np.empty(0, np.int64), "number": np.empty(0, np.int64)}

    def add(self, **arrays: np.ndarray) -> None:
        for key in self.KEYS:
            self.arrays[key] = np.concatenate([self.arrays[key], arrays[key]])

    def take_ending_before(self, until: float) -> dict[str, np.ndarray]:
        done = self.arrays["end"] < until
        taken = {key: value[done] for key, value in self.arrays.items()}
        self.arrays = {key: value[~done] for key, value in self.arrays.items()}
        return taken


def _apply_step(tracker: ArchiveTracker, changes_src: np.ndarray, changes_t: np.ndarray,
                visits: dict[str, np.ndarray], capture_at: np.ndarray, sight: ChangeSight | None = None) -> None:
    """Apply a step's changes and the visits ending in it, in time order; adds each visit's
    ``eventful``, ``changes`` and ``version`` to ``visits`` (and with ``sight``, what it saw:
    ``newest``, the newest change's time, and ``times``, those of the changes it archived).
    ``capture_at`` is a scratch array of +inf, one per source, left as it was found."""
    n = visits["source"].size
    eventful = np.zeros(n, dtype=bool)
    counted = np.full(n, -1, dtype=np.int64)
    version = np.full(n, -1, dtype=np.int64)
    newest = np.full(n, -np.inf)
    seen_times: list[tuple[float, ...] | None] = [None] * n
    success = np.flatnonzero(visits["outcome"] == SUCCESS)
    pending = np.ones(changes_src.size, dtype=bool)
    if success.size:
        order = success[np.lexsort((visits["end"][success], visits["source"][success]))]
        src_sorted = visits["source"][order]
        # rank of each visit among its source's visits of this step: 0, 1, … (several only for the oracle)
        starts = np.r_[0, np.flatnonzero(np.diff(src_sorted)) + 1]
        rank = np.arange(order.size) - np.repeat(starts, np.diff(np.r_[starts, order.size]))
        for r in range(int(rank.max()) + 1):
            these = order[rank == r]
            src, end = visits["source"][these], visits["end"][these]
            capture_at[src] = end
            before = pending & (changes_t <= capture_at[changes_src])
            tracker.apply_changes(changes_src[before], changes_t[before])
            pending &= ~before
            eventful[these], counted[these], version[these] = tracker.capture(src, end)
            if sight is not None:
                sight.apply_changes(changes_src[before], changes_t[before])
                for visit, (newest_time, times) in zip(these.tolist(), sight.capture(src), strict=True):
                    newest[visit], seen_times[visit] = newest_time, times
            capture_at[src] = np.inf
    tracker.apply_changes(changes_src[pending], changes_t[pending])
    if sight is not None:
        sight.apply_changes(changes_src[pending], changes_t[pending])
    tracker.count_outcomes(visits["end"], visits["outcome"], eventful)
    visits.update(eventful=eventful, changes=counted, version=version)
    if sight is not None:
        times_array = np.empty(n, dtype=object)
        times_array[:] = seen_times
        visits.update(newest=newest, times=times_array)


def run_policy(policy: PolicyUnderTest, config: SimulationConfig,
               progress: Callable[[str, float], None] | None = None,
               scheduler_for: Callable[[World, SimulationConfig], Any] | None = None) -> PolicyRun:
    """Simulate ``policy`` on the configured world; returns its figures. ``scheduler_for`` makes the
    scheduler instead of the policy's own (anything with ``listing``, ``feed``, ``pick``, ``notes`` and
    ``close``, as ``store_driver.StoreScheduler``): a benchmark drives another scheduler through the same
    world (bench/face/face_month.py, through the swh protocol's client)."""
    began = time.perf_counter()
    world = make_world(config, policy.world.get("share_last_update"))
    tracker = ArchiveTracker(world.birth, world.dead, config.warmup, config.horizon, world.death)
    sight = ChangeSight(world.last_change) if config.information is Information.TIMES else None
    hosts = world_hosts(config, world)
    visits_by_host = np.zeros(int(hosts.max(initial=0)) + 1, dtype=np.int64)
    scheduler = scheduler_for(world, config) if scheduler_for is not None else _make_scheduler(policy, world, config)
    try:
        rng = np.random.default_rng([config.seed, STREAM_VISITS])
        dt = config.step_days
        steps = int(round(config.horizon / dt))
        per_step = config.visits_per_day * dt
        listing_every = max(1, int(round(config.listing_period / config.step)))
        full_listing_every = max(1, int(round(config.full_listing_period / config.step)))
        median = config.visit_duration / DAY
        shortest, longest = SHORTEST_VISIT / DAY, LONGEST_VISIT / DAY
        listed_upto = 0
        listed_change = world.birth.copy()
        visit_numbers = np.zeros(world.size, dtype=np.int64)
        capture_at = np.full(world.size, np.inf)
        in_flight = _Visits()
        ended: dict[str, np.ndarray] | None = None
        spent = dict.fromkeys(("listing", "feedback", "pick", "world_and_measures"), 0.0)
        clock = time.perf_counter
        for k in range(steps):
            t, until = k * dt, (k + 1) * dt
            if k % listing_every == 0 or k % full_listing_every == 0:
                began_part = clock()
                born = world.born_by(t)
                if k % full_listing_every == 0:
                    sources = np.arange(born)
                else:
                    old = np.flatnonzero(world.reports_last_update[:listed_upto]
                                         & (world.last_change[:listed_upto] > listed_change[:listed_upto]))
                    sources = np.concatenate([old, np.arange(listed_upto, born)])
                sources = sources[world.listed_until[sources] > t]  # a forge no longer lists what is gone
                listed_change[sources] = world.last_change[sources]
                listed_upto = born
                scheduler.listing(t, sources, world.last_change[sources])
                spent["listing"] += clock() - began_part
            began_part = clock()
            if ended is not None and ended["source"].size:
                scheduler.feed(t, ended)
            spent["feedback"] += clock() - began_part
            began_part = clock()
            quota = int(math.floor(per_step * (k + 1) + 1e-9) - math.floor(per_step * k + 1e-9))
            sources, starts = scheduler.pick(t, until, quota)
            spent["pick"] += clock() - began_part
            began_part = clock()
            if sources.size:
                if t >= config.warmup:
                    np.add.at(visits_by_host, hosts[sources], 1)
                durations = np.clip(median * np.exp(VISIT_DURATION_SIGMA * rng.standard_normal(sources.size)),
                                    shortest, longest)
                outcome = np.where(world.dead[sources] | (world.death[sources] <= starts), NOT_FOUND,
                                   np.where(rng.random(sources.size) < config.failure_rate, FAILED, SUCCESS))
                np.add.at(visit_numbers, sources, 1)
                in_flight.add(source=sources, start=starts, end=starts + durations, outcome=outcome,
                              number=visit_numbers[sources])
            changes = world.advance(t, until)
            ended = in_flight.take_ending_before(until)
            _apply_step(tracker, changes.sources, changes.times, ended, capture_at, sight)
            tracker.sample(until)
            spent["world_and_measures"] += clock() - began_part
            if progress is not None and (k % 24 == 0 or k == steps - 1):
                progress(policy.name, (k + 1) / steps)
        notes = scheduler.notes()
        notes["hosts"] = host_notes(config, hosts, visits_by_host)
        notes["seconds_by_part"] = {part: round(value, 3) for part, value in spent.items()}
    finally:
        scheduler.close()
    return PolicyRun(policy.name, policy.kind, policy.description, tracker.finish(), np.array(tracker.samples_t),
                     np.array(tracker.samples_fresh), time.perf_counter() - began, notes, _theory(policy, world, config))


def host_notes(config: SimulationConfig, hosts: np.ndarray, visits: np.ndarray) -> dict[str, Any]:
    """Where the window's visits went: the largest host's share of the sources and of the visits, and the
    visits against the capacity (the room a busy host cannot use spent on the others)."""
    sources = np.bincount(hosts, minlength=visits.size)
    top = int(np.argmax(sources))
    total = int(visits.sum())
    return {"hosts": int(np.count_nonzero(sources)), "largest_host_share_of_sources": float(sources[top] / sources.sum()),
            "largest_host_share_of_visits": float(visits[top] / total) if total else None,
            "visits_in_window": total, "capacity_in_window": float(config.visits_per_day * config.days)}


def _run_one(args: tuple[PolicyUnderTest, SimulationConfig]) -> PolicyRun:
    return run_policy(*args)


def run_simulation(config: SimulationConfig, policies: Sequence[PolicyUnderTest], *, jobs: int = 1,
                   progress: Callable[[str, float], None] | None = None,
                   done: Callable[[PolicyRun], None] | None = None) -> list[PolicyRun]:
    """Every policy on the same world, in order; ``jobs`` > 1 runs policies in that many processes."""
    config = config.validated()
    if jobs <= 1 or len(policies) <= 1:
        runs = []
        for policy in policies:
            runs.append(run_policy(policy, config, progress))
            if done is not None:
                done(runs[-1])
        return runs
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
        futures = [pool.submit(_run_one, (policy, config)) for policy in policies]
        runs = []
        for future in futures:
            runs.append(future.result())
            if done is not None:
                done(runs[-1])
        return runs


def with_defaults(config: SimulationConfig, **changes: Any) -> SimulationConfig:
    return replace(config, **{k: v for k, v in changes.items() if v is not None})
