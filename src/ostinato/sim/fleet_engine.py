"""The schedule-fleet simulation: one fleet, one seed, one pick rule, through the real store and the
real deadline scheduler on a simulated clock (docs/reference/fleet-simulator.md).

Each node of the fleet is one :class:`~ostinato.services.deadline_scheduler.DeadlineScheduler`
(capacity: the node's slots) whose ``remote`` is the node itself (:class:`SimulatedNode`): a run
it is sent is in flight until the end drawn for it (:class:`~ostinato.sim.fleets.Draws`). A
discrete-event loop moves the :class:`~ostinato.domain.clock.ManualClock` to the next event: a
run's end, the next ``can_start_by`` after now, a node lost or back, a blackout beginning or
``max_allowed_duration`` reached under a running schedule, or at most ``max_step`` (one ping
interval while runs of a lost node still await their steal, a minute while a schedule could start
on a free slot but was not started). At each event it ends the runs due, pings the live nodes' runs
the way a worker does (``run_verdict``: a run inside a blackout or past ``max_allowed_duration`` is
stopped), then lets each live node's scheduler pass (steal silent owners, catch up, pick, send).

A lost node stops: its scheduler no longer passes, its runs are neither pinged nor ended; the live
schedulers' steal ends them as lost (after the ping timeout and the steal grace). It comes back as
a new process (a new scheduler on that node).

Between two events the store does not change, so each schedule's condition (the real rule,
``get_schedule_condition``) is a step function of time whose steps are known: its deadline, its
deadline less its expected run, and a silent owner's ping timeout. The engine integrates it
exactly over each interval (a live owner pings all along; a lost one's last ping is the stored one).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

from ..domain.clock import ManualClock
from ..domain.errors import ValidationError
from ..domain.lookahead import Lookahead, PickOrder, PickRule
from ..domain.schedules import (
    RunStatus,
    Schedule,
    ScheduleKind,
    ScheduleRun,
    ScheduleTiming,
    State,
    deadline,
    expected_run,
    get_schedule_condition,
    last_sign_of_life,
    stored_start_times,
)
from ..domain.tasks import TaskType
from ..services.deadline_scheduler import DeadlineScheduler, run_verdict
from ..store import Store, open_store
from .fleet_bound import capacity
from .fleets import START, Draws, Fleet, ScheduleSpec, phase
from .store_driver import PolicyDatabase

TASK_TYPE = "simulated-run"
#: a schedule that could start on a free slot but was not started is looked at again this soon
HELD_STEP = timedelta(minutes=1)
DEFAULT_MAX_STEP = timedelta(minutes=5)
#: under lookahead, the longest step: the scheduler loop's longest sleep (its heartbeat's pace)
LOOKAHEAD_STEP = timedelta(seconds=60)
_QUIET = ("ostinato.services.deadline_scheduler",)


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    description: str
    rule: PickRule
    #: each schedule's next run's true duration is its expected_duration (:meth:`FleetSimulation._told`)
    clairvoyant: bool = False


POLICIES: dict[str, Policy] = {p.name: p for p in (
    Policy("greedy", "the proposal's pick: of the schedules that can start, the lowest should_start_by", PickRule()),
    Policy("fifo", "first due, first run: the lowest can_start_by (Celery beat, APScheduler)",
           PickRule(order=PickOrder.DUE)),
    Policy("spf", "shortest period first: a static priority (Airflow's priority_weight set by period)",
           PickRule(order=PickOrder.PERIOD)),
    Policy("lookahead", "plans the next hour: holds a slot for a more urgent schedule due soon, leaves to "
           "another node what it can run", PickRule(lookahead=Lookahead())),
    Policy("clairvoyant", "lookahead told each next run's true duration: a reference, not a bound",
           PickRule(lookahead=Lookahead()), clairvoyant=True),
)}


def check_policies(names: list[str]) -> list[str]:
    for name in names:
        if name not in POLICIES:
            raise ValidationError("policies", f"names among {', '.join(POLICIES)}", name)
    if not names:
        raise ValidationError("policies", f"names among {', '.join(POLICIES)}", "")
    return list(dict.fromkeys(names))


@dataclass
class Flight:
    """A run in flight on a node."""

    name: str
    node: str
    tag: str
    started: datetime
    ends: datetime
    ok: bool
    #: the deadline the run works for (the schedule's when it started)
    deadline: datetime | None
    schedule: Schedule


@dataclass
class FleetRun:
    """One (fleet, seed, policy) simulated: its measures over the window (after the warm-up)."""

    fleet: str
    seed: int
    policy: str
    seconds: float = 0.0
    #: schedule-time in ERROR and in WARNING over all schedule-time of the window
    error_share: float = 0.0
    warning_share: float = 0.0
    #: the schedule longest in ERROR (and its share), and the longest in WARNING
    worst_error_share: float = 0.0
    worst_error: str | None = None
    worst_warning_share: float = 0.0
    #: ERROR episodes begun in the window (each a deadline missed)
    misses: int = 0
    #: good runs ended in the window: their end − the deadline they worked for, seconds
    lateness: list[float] = field(default_factory=list)
    started: int = 0
    succeeded: int = 0
    failed: int = 0
    stopped: int = 0
    lost: int = 0
    #: for each outage: seconds from the node's return until the ERROR count is back to its level
    #: before the loss (None: not within the window)
    recovery: list[float | None] = field(default_factory=list)
    #: from a loss to the steal that ended each of its runs, seconds
    steal_delays: list[float] = field(default_factory=list)
    #: busy slot-time over available slot-time (live nodes) in the window
    slot_use: float = 0.0
    #: the ERROR count over time: hours from the start, and the count from then on
    error_times: list[float] = field(default_factory=list)
    error_counts: list[int] = field(default_factory=list)
    events: int = 0

    def error_count_at(self, hours: float) -> int:
        count = 0
        for t, c in zip(self.error_times, self.error_counts, strict=True):
            if t > hours:
                break
            count = c
        return count


class SimulatedNode:
    """A node's runs: where its scheduler sends them (``RemoteRuns``)."""

    def __init__(self, sim: FleetSimulation, name: str):
        self.sim = sim
        self.name = name

    def send_schedule_run(self, schedule: Schedule, run: ScheduleRun, backend_name: str) -> None:
        self.sim.sent(self.name, schedule, run)


@contextmanager
def _quiet() -> Iterator[None]:
    """The schedulers' logs (steals, failures) are the simulation's events, not the user's: kept quiet."""
    loggers = [logging.getLogger(name) for name in _QUIET]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def initial_schedule(spec: ScheduleSpec, seed: int) -> Schedule:
    """The schedule as the simulation finds it: settled, its last good run at a drawn point of its period."""
    mean = spec.durations.mean
    created = START - timedelta(days=14)
    common: dict[str, Any] = dict(task_type=TASK_TYPE, created_at=created, tz=spec.tz,
                                  blackout_periods=spec.blackouts, dont_run_on_nodes=spec.dont_run_on,
                                  average_good_duration=mean, failure_count=0)
    p = phase(seed, spec)
    if spec.period is not None:
        began = min(START - spec.period * (0.9 * p), START - mean - timedelta(seconds=1))
        ended = began + mean
        return Schedule(spec.name, ScheduleKind.PERIODIC, scheduling_period=spec.period,
                        cooldown_duration=spec.cooldown, last_good_start_at=began, last_good_end_at=ended,
                        last_start_at=began, last_end_at=ended, **common).validated()
    probe = Schedule(spec.name, ScheduleKind.CALENDAR, cron_schedule=spec.cron, cron_max_schedule_duration=spec.cron_max,
                     **common)
    fired, at = None, created
    while (nxt := probe.rule.next_fire_time(at)) is not None and nxt < START:
        fired, at = nxt, nxt
    if fired is None:
        return probe.validated()
    assert spec.cron_max is not None
    began = fired + min(spec.cron_max, START - fired) * (0.5 * p)
    ended = min(began + mean, START)
    return replace(probe, last_good_start_at=began, last_good_end_at=ended, last_start_at=began, last_end_at=ended,
                   fired_through=fired).validated()


def next_blackout_start(schedule: Schedule, after: datetime) -> datetime | None:
    """The next moment after ``after`` when one of the schedule's blackout periods begins."""
    if not schedule.blackout_periods:
        return None
    from ..domain.calendars import parse_zone

    zone = parse_zone(schedule.tz)
    local = after.astimezone(zone)
    found = []
    for period in schedule.blackout_periods:
        for days in (0, 1):
            at = datetime.combine(local.date() + timedelta(days=days), period.start, tzinfo=zone)
            if at > after:
                found.append(at)
                break
    return min(found) if found else None


class _Seen:
    """A schedule as last read from the store, and what follows from it until it changes."""

    __slots__ = ("schedule", "limit", "warn_at", "can_start_by", "states")

    def __init__(self, schedule: Schedule, timing: ScheduleTiming, now: datetime):
        self.schedule = schedule
        self.limit = deadline(schedule)
        self.warn_at = None if self.limit is None else self.limit - expected_run(schedule)
        times = None if schedule.running else stored_start_times(schedule, now, timing)
        self.can_start_by = None if times is None else times.can_start_by
        self.states: dict[tuple[bool, bool, bool, bool], State] = {}


class FleetSimulation:
    def __init__(self, fleet: Fleet, seed: int, policy: str, *, db: str = "sqlite:///:memory:",
                 max_step: timedelta = DEFAULT_MAX_STEP, timing: ScheduleTiming = ScheduleTiming(),
                 verify: bool = False):
        self.fleet = fleet
        self.seed = seed
        self.policy = POLICIES[policy]
        self.max_step = max_step
        self.timing = timing.validated()
        self.clock = ManualClock(START)
        self.draws = Draws(fleet, seed)
        self.window_start = START + fleet.warmup
        self.end = fleet.end
        self.result = FleetRun(fleet.name, seed, policy)
        #: each schedule as last read; the names to read again (what this simulation or a pass changed)
        self.seen: dict[str, _Seen] = {}
        self._dirty: set[str] = set()
        #: read every schedule at every event and check the ones kept (tests)
        self.verify = verify
        self.flights: dict[str, Flight] = {}
        #: runs of lost nodes not yet taken over: (flight, when its node was lost)
        self.orphans: list[tuple[Flight, datetime]] = []
        self.live = {node: True for node in fleet.nodes}
        self.schedulers: dict[str, DeadlineScheduler] = {}
        self._busy = 0.0
        self._state: dict[str, State] = {}
        self._error_time: dict[str, float] = {s.name: 0.0 for s in fleet.schedules}
        self._warning_time: dict[str, float] = {s.name: 0.0 for s in fleet.schedules}
        self._changes = sorted([(START + o.at, o.node, False) for o in fleet.outages]
                               + [(START + o.at + o.lasting, o.node, True) for o in fleet.outages])
        self._db = PolicyDatabase(db, f"fleet_{fleet.name}_{seed}_{policy}")
        self.store: Store = open_store(self._db.store_url)

    # -- the nodes ------------------------------------------------------------------
    def _scheduler(self, node: str) -> DeadlineScheduler:
        scheduler = DeadlineScheduler(self.store, self.clock, node=node, instance="sim", timing=self.timing,
                                      capacity=self.fleet.nodes[node], remote=SimulatedNode(self, node),
                                      rule=self.policy.rule)
        scheduler.start()
        return scheduler

    def sent(self, node: str, schedule: Schedule, run: ScheduleRun) -> None:
        now = self.clock.now()
        duration, ok = self.draws.take(schedule.name)
        self._dirty.add(schedule.name)
        self.flights[schedule.name] = Flight(schedule.name, node, run.owner_tag, now, now + duration, ok,
                                             deadline(schedule), schedule)
        if now >= self.window_start:
            self.result.started += 1

    def _count_busy(self, flight: Flight, until: datetime) -> None:
        a, b = max(flight.started, self.window_start), min(until, self.end)
        if b > a:
            self._busy += (b - a).total_seconds()

    def _change_capacity(self, now: datetime) -> None:
        while self._changes and self._changes[0][0] <= now:
            at, node, up = self._changes.pop(0)
            self.live[node] = up
            if up:
                self.schedulers[node] = self._scheduler(node)
                continue
            for flight in [f for f in self.flights.values() if f.node == node]:
                del self.flights[flight.name]
                self._count_busy(flight, at)
                self.orphans.append((flight, at))

    # -- one event ------------------------------------------------------------------------
    def _end_runs(self, now: datetime) -> None:
        for flight in sorted((f for f in self.flights.values() if f.ends <= now), key=lambda f: (f.ends, f.name)):
            del self.flights[flight.name]
            self._dirty.add(flight.name)
            self._count_busy(flight, flight.ends)
            status = RunStatus.SUCCEEDED if flight.ok else RunStatus.FAILED
            recorded = self.store.end_schedule_run(flight.name, flight.tag, status=status, ended=flight.ends,
                                                   timing=self.timing)
            if not recorded or flight.ends < self.window_start:
                continue
            if flight.ok:
                self.result.succeeded += 1
                if flight.deadline is not None:
                    self.result.lateness.append((flight.ends - flight.deadline).total_seconds())
            else:
                self.result.failed += 1

    def _ping(self, now: datetime) -> None:
        """Each live run pinged, and stopped inside a blackout or past max_allowed_duration (a worker's rule)."""
        for flight in sorted(self.flights.values(), key=lambda f: f.name):
            verdict = run_verdict(self.store, flight.schedule, flight.tag, now)
            if verdict.status is None:
                continue
            del self.flights[flight.name]
            self._dirty.add(flight.name)
            self._count_busy(flight, now)
            if verdict.status is RunStatus.STOPPED:
                self.store.end_schedule_run(flight.name, flight.tag, status=RunStatus.STOPPED, ended=now,
                                            detail={"reason": verdict.reason}, timing=self.timing)
                if now >= self.window_start:
                    self.result.stopped += 1

    def _pass(self, index: int) -> None:
        """Each live node's scheduler passes, in turn from a node that changes at every event. A node
        with no free slot is skipped while no run awaits a steal: its pass would pick nothing, and
        the catch-up it would do is done by the first pass that picks."""
        nodes = [n for n in self.fleet.nodes if self.live[n]]
        if not nodes:
            return
        shift = index % len(nodes)
        for node in nodes[shift:] + nodes[:shift]:
            busy = sum(f.node == node for f in self.flights.values())
            if busy < self.fleet.nodes[node] or self.orphans:
                self.schedulers[node].run_once()

    def _refresh(self, now: datetime, due: list[str]) -> None:
        """Read again the schedules that may have changed: those sent, ended or stopped, the runs of
        lost nodes (the steal marks and takes them), and the calendar schedules that were due
        (``due``: the pass may have skipped their piled-up fire times)."""
        names = self._dirty | {flight.name for flight, _ in self.orphans} | set(due)
        self._dirty = set()
        for name in names:
            schedule = self.store.get_schedule(name)
            assert schedule is not None, f"schedule {name!r} vanished from the simulation's store"
            self.seen[name] = _Seen(self._told(schedule, now), self.timing, now)
        if self.verify:
            for schedule in self.store.list_schedules(limit=100_000):
                kept = self.seen[schedule.name].schedule
                assert replace(kept, owner_last_ping_at=None) == replace(schedule, owner_last_ping_at=None), \
                    f"{schedule.name}: kept {kept}, stored {schedule}"
        for flight, lost_at in list(self.orphans):
            if self.seen[flight.name].schedule.owner_tag != flight.tag:
                self.orphans.remove((flight, lost_at))
                self.result.steal_delays.append((now - lost_at).total_seconds())
                if lost_at >= self.window_start:
                    self.result.lost += 1

    def _told(self, schedule: Schedule, now: datetime) -> Schedule:
        """Clairvoyant: the schedule as saved with its next run's true duration as its expected_duration
        (the override the pick, the start times and the conditions read); as it is otherwise, or while
        it runs."""
        if not self.policy.clairvoyant or schedule.running:
            return schedule
        duration = self.draws.peek(schedule.name)
        if schedule.expected_duration == duration:
            return schedule
        return self.store.update_schedule(replace(schedule, expected_duration=duration), now, self.timing,
                                          fields=["expected_duration"], actor="simulator:clairvoyant")

    def _due_calendars(self, now: datetime) -> list[str]:
        return [name for name, seen in self.seen.items() if seen.can_start_by is not None
                and seen.can_start_by <= now and seen.schedule.kind is ScheduleKind.CALENDAR]

    def _next_event(self, now: datetime) -> datetime:
        step = self.max_step
        if self.orphans:
            step = min(step, self.timing.ping_interval)
        candidates = [now + step, self.end]
        if self.policy.rule.lookahead is not None:
            # a node with a free slot passes (and tells its heartbeat) at least this often, as its loop does
            candidates.append(now + LOOKAHEAD_STEP)
            for hold in self.store.list_holds(now):
                candidates.extend(t for t in (hold.due_at, hold.expires_at) if t > now)
        candidates.extend(f.ends for f in self.flights.values())
        if self._changes:
            candidates.append(self._changes[0][0])
        free = {n: self.fleet.nodes[n] - sum(f.node == n for f in self.flights.values())
                for n in self.fleet.nodes if self.live[n]}
        for flight in self.flights.values():
            schedule = flight.schedule
            blackout = next_blackout_start(schedule, now)
            if blackout is not None:
                candidates.append(blackout)
            if schedule.max_allowed_duration is not None:
                candidates.append(flight.started + schedule.max_allowed_duration + timedelta(microseconds=1))
        for seen in self.seen.values():
            if seen.can_start_by is None:
                continue
            if seen.can_start_by > now:
                candidates.append(seen.can_start_by)
            elif any(room > 0 and n not in seen.schedule.dont_run_on_nodes for n, room in free.items()):
                candidates.append(now + HELD_STEP)  # could start on a free slot, was not started
        return max(min(candidates), now + timedelta(microseconds=1))

    # -- the conditions -----------------------------------------------------------------
    def _condition(self, seen: _Seen, at: datetime, pinging: bool) -> State:
        """The real rule's state at ``at`` (memoized on what it reads of ``at``: past the deadline, past
        the deadline less the expected run, the owner silent)."""
        schedule, timeout = seen.schedule, self.timing.ping_timeout
        silent = not pinging and schedule.running and (
            (last := last_sign_of_life(schedule)) is None or at - last > timeout)
        key = (pinging, seen.limit is not None and at > seen.limit,
               seen.warn_at is not None and at > seen.warn_at, silent)
        state = seen.states.get(key)
        if state is None:
            shown = replace(schedule, owner_last_ping_at=at) if pinging else schedule
            state = seen.states[key] = get_schedule_condition(shown, at, ping_timeout=timeout).state
        return state

    def _integrate(self, a: datetime, b: datetime) -> None:
        """Each schedule's condition over (a, b), exactly (module docstring); the ERROR count over time."""
        edges: list[tuple[datetime, int]] = []
        timeout = self.timing.ping_timeout
        for name, seen in self.seen.items():
            schedule = seen.schedule
            flight = self.flights.get(name)
            pinging = flight is not None and schedule.running and flight.tag == schedule.owner_tag
            cuts = {a, b}
            if seen.limit is not None and seen.warn_at is not None:
                cuts.update((seen.limit, seen.warn_at))
            if schedule.running and not pinging:
                last = last_sign_of_life(schedule)
                if last is not None:
                    cuts.add(last + timeout)
            points = sorted(c for c in cuts if a <= c <= b)
            for x, y in pairwise(points):
                state = self._condition(seen, x + (y - x) / 2, pinging)
                if state is State.ERROR:
                    edges.extend(((x, 1), (y, -1)))
                    if self._state.get(name) is not State.ERROR and x >= self.window_start:
                        self.result.misses += 1
                lo = max(x, self.window_start)
                if y > lo:
                    span = (y - lo).total_seconds()
                    if state is State.ERROR:
                        self._error_time[name] += span
                    elif state is State.WARNING:
                        self._warning_time[name] += span
                self._state[name] = state
        self._count_errors([(at, d) for at, d in edges if at < b], a)

    def _count_errors(self, edges: list[tuple[datetime, int]], a: datetime) -> None:
        """The ERROR count over [a, b) from its changes (those at b are the next interval's)."""
        r = self.result
        count = r.error_counts[-1] if r.error_counts else 0
        if not edges and count == 0 and r.error_counts:
            return
        level = 0
        changes: dict[datetime, int] = {}
        for at, delta in sorted(edges):
            changes[at] = changes.get(at, 0) + delta
        if a not in changes:
            changes[a] = 0
        for at in sorted(changes):
            level += changes[at]
            if not r.error_counts or r.error_counts[-1] != level:
                r.error_times.append((at - START).total_seconds() / 3600)
                r.error_counts.append(level)

    # -- the run ---------------------------------------------------------------------------
    def setup(self) -> None:
        self.store.init_schema()
        self.store.create_task_type(TaskType(TASK_TYPE, "A simulated schedule's runs (drawn, not executed)",
                                             "ostinato.sim.fleets:not_executed"))
        for spec in self.fleet.schedules:
            schedule = initial_schedule(spec, self.seed)
            if self.policy.clairvoyant:
                schedule = replace(schedule, expected_duration=self.draws.peek(spec.name))
            self.store.create_schedule(schedule, START, self.timing)
        for node in self.fleet.nodes:
            self.schedulers[node] = self._scheduler(node)
        self.seen = {s.name: _Seen(s, self.timing, START) for s in self.store.list_schedules(limit=100_000)}

    def run(self) -> FleetRun:
        began = time.perf_counter()
        try:
            with _quiet():
                self.setup()
                now, index = START, 0
                while now < self.end:
                    self.clock.set(now)
                    self._change_capacity(now)
                    self._end_runs(now)
                    self._ping(now)
                    due = self._due_calendars(now)
                    self._pass(index)
                    self._refresh(now, due)
                    nxt = min(self._next_event(now), self.end)
                    self._integrate(now, nxt)
                    now, index = nxt, index + 1
                for flight in self.flights.values():
                    self._count_busy(flight, self.end)
                self._finish(index)
        finally:
            self.close()
        self.result.seconds = time.perf_counter() - began
        return self.result

    def _finish(self, events: int) -> None:
        r, fleet = self.result, self.fleet
        window = (self.end - self.window_start).total_seconds()
        n = len(fleet.schedules)
        r.events = events
        r.error_share = sum(self._error_time.values()) / (window * n)
        r.warning_share = sum(self._warning_time.values()) / (window * n)
        worst = max(self._error_time, key=lambda k: (self._error_time[k], k))
        r.worst_error, r.worst_error_share = worst, self._error_time[worst] / window
        r.worst_warning_share = max(self._warning_time.values()) / window
        available = capacity(fleet) * window  # the live nodes' slot-time
        r.slot_use = self._busy / available if available else 0.0
        for outage in fleet.outages:  # an outage the run does not reach (fewer days) is not measured
            if START + outage.at < self.end:
                r.recovery.append(recovery_time(r, START + outage.at, START + outage.at + outage.lasting, self.end))

    def close(self) -> None:
        try:
            self.store.close()
        finally:
            self._db.drop()


def recovery_time(run: FleetRun, lost: datetime, back: datetime, end: datetime) -> float | None:
    """Seconds from ``back`` until the ERROR count is at most its level just before ``lost``
    (None when it is not by ``end``)."""
    hours = lambda t: (t - START).total_seconds() / 3600
    before = 0
    for t, c in zip(run.error_times, run.error_counts, strict=True):
        if t >= hours(lost):
            break
        before = c
    current = run.error_count_at(hours(back))
    if current <= before:
        return 0.0
    for t, c in zip(run.error_times, run.error_counts, strict=True):
        if t > hours(back) and c <= before and t <= hours(end):
            return (t - hours(back)) * 3600
    return None


def simulate(fleet: Fleet, seed: int, policy: str, **options: Any) -> FleetRun:
    """One (fleet, seed, policy)."""
    return FleetSimulation(fleet, seed, policy, **options).run()


__all__ = ["DEFAULT_MAX_STEP", "POLICIES", "FleetRun", "FleetSimulation", "Policy", "SimulatedNode",
           "check_policies", "initial_schedule", "recovery_time", "simulate"]
