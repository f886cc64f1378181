"""The schedule pick's rules: the order it takes schedules in, and lookahead past the greedy rule
(docs/design/deadline-greedy.md#lookahead). Pure: a store reads a small snapshot (the K most urgent
schedules that can start, the K due within the horizon, the live schedulers and their holds) and
:func:`choose` says which to start on this scheduler now, and which of its free slots to hold.

The greedy pick (the proposal's) starts, on each free slot, the schedule that can start and should
start first. Lookahead plans the horizon instead, as a backfilling planner would:

- every schedule in the snapshot, most urgent first, is given the earliest start at which some live
  scheduler that may run it (not in its ``dont_run_on_nodes``) has a slot free for its expected
  duration, without moving the starts already given: its *reservation*;
- a schedule whose reservation is now, on one of this scheduler's free slots, starts now; one whose
  reservation is on another scheduler's slot is left to it (node-aware: at equal times, the slot of
  the scheduler fewer schedules depend on is given first, so that what only one scheduler can run
  finds it free; then the slot left idle least before the start (best fit); then by name, so that every scheduler draws the same plan and none leaves a schedule
  to another that leaves it back);
- a free slot of this scheduler that starts nothing now, because a more urgent schedule due later
  would not find it free if a long run took it, is *held*: a stored, expiring record naming the
  schedule it waits for (never a lease: a scheduler that dies holding it frees it when it expires).

When capacity is ample every schedule that can start finds a slot now, and nothing is held.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from .errors import ValidationError
from .limits import MAX_DURATION
from .schedules import Schedule, expected_run, next_cron_time

#: the largest K a pick may look at (each of the two lists)
MAX_K = 1000
#: a scheduler counts as live while its last heartbeat is younger than this (by default)
NODE_TTL = timedelta(seconds=90)


class PickOrder(str, enum.Enum):
    """Which schedule that can start goes first."""

    #: the lowest ``should_start_by``: the one closest to an error (the proposal's greedy rule)
    DEADLINE = "deadline"
    #: the lowest ``can_start_by``: first due, first run (Celery beat, APScheduler)
    DUE = "due"
    #: the shortest period first: a static priority order (Airflow's ``priority_weight`` set by period)
    PERIOD = "period"


@dataclass(frozen=True, slots=True)
class Lookahead:
    """Lookahead's bounds (the settings ``schedule_lookahead_*``)."""

    #: how far ahead the plan looks: schedules due later are not waited for
    horizon: timedelta = timedelta(hours=1)
    #: how many schedules it looks at: the K most urgent that can start, and the K next due
    k: int = 32
    #: a hold lapses this long after the moment its schedule was due, if no one started it
    hold_grace: timedelta = timedelta(minutes=2)
    #: a scheduler counts as live while its last heartbeat is younger than this
    node_ttl: timedelta = NODE_TTL

    def validated(self) -> Lookahead:
        for name in ("horizon", "hold_grace", "node_ttl"):
            value = getattr(self, name)
            if not isinstance(value, timedelta) or not timedelta(0) < value <= MAX_DURATION:
                raise ValidationError(f"lookahead_{name}", f"a positive duration of at most {MAX_DURATION.days} days",
                                      value)
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k <= MAX_K:
            raise ValidationError("lookahead_k", f"a whole number from 1 to {MAX_K}", self.k)
        return self


@dataclass(frozen=True, slots=True)
class PickRule:
    """How a scheduler picks: an order, and lookahead or not (None: greedy, one slot at a time)."""

    order: PickOrder = PickOrder.DEADLINE
    lookahead: Lookahead | None = None

    @property
    def plain(self) -> bool:
        """The store's own indexed pick answers this rule: the deadline order, no lookahead."""
        return self.order is PickOrder.DEADLINE and self.lookahead is None

    def validated(self) -> PickRule:
        order = PickOrder(self.order)
        return replace(self, order=order, lookahead=None if self.lookahead is None else self.lookahead.validated())


@dataclass(frozen=True, slots=True)
class Candidate:
    """A schedule as the pick sees it."""

    name: str
    can_start_by: datetime
    should_start_by: datetime
    #: how long its run is expected to last (the override, or the moving average and its spread)
    expected: timedelta
    #: how often it must run (the scheduling period, or a calendar rule's gap between fire times)
    period: timedelta
    #: schedulers' node names it must not run on
    excluded: frozenset[str] = frozenset()

    @property
    def deadline(self) -> datetime:
        return self.should_start_by + self.expected


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """A live scheduler, by its last heartbeat: its slots and the expected ends of its runs in flight."""

    node: str
    instance: str
    slots: int
    ends: tuple[datetime, ...]
    seen_at: datetime

    @property
    def key(self) -> tuple[str, str]:
        return (self.node, self.instance)


@dataclass(frozen=True, slots=True)
class Hold:
    """A free slot a scheduler keeps for a schedule due soon, until ``expires_at``."""

    node: str
    instance: str
    waits_for: str
    due_at: datetime
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class Choice:
    """What a pick does: start ``take`` (in order), hold ``holds``; ``left`` are the schedules that
    could start here now but that the plan leaves to another scheduler's free slot."""

    take: tuple[str, ...]
    holds: tuple[Hold, ...] = ()
    left: tuple[str, ...] = ()


def order_key(rule: PickRule, candidate: Candidate) -> tuple:
    """Most urgent first, by the rule's order (then by name, so that every scheduler agrees)."""
    if rule.order is PickOrder.DUE:
        return (candidate.can_start_by, candidate.should_start_by, candidate.name)
    if rule.order is PickOrder.PERIOD:
        return (candidate.period, candidate.should_start_by, candidate.name)
    return (candidate.should_start_by, candidate.name)


def candidate_of(schedule: Schedule, can_start_by: datetime, should_start_by: datetime, rule: PickRule) -> Candidate:
    """A schedule as the pick sees it, with the start times stored beside it. Its period is read only
    for the period order (a calendar rule's gap between its next two fire times)."""
    period = timedelta(0)
    if rule.order is PickOrder.PERIOD:
        period = schedule.scheduling_period or _calendar_gap(schedule, can_start_by)
    return Candidate(schedule.name, can_start_by, should_start_by, expected_run(schedule), period,
                     frozenset(schedule.dont_run_on_nodes))


def _calendar_gap(schedule: Schedule, at: datetime) -> timedelta:
    first = next_cron_time(schedule, at)
    second = None if first is None else next_cron_time(schedule, first)
    return second - first if first is not None and second is not None else MAX_DURATION


@dataclass
class _Slot:
    owner: tuple[str, str]
    node: str
    #: reservations (start, end, schedule), sorted; a run in flight is one that began before now ("")
    busy: list[tuple[datetime, datetime, str]]

    def earliest_fit(self, ready: datetime, length: timedelta) -> datetime:
        """The first start at or after ``ready`` where ``length`` fits between reservations."""
        start = ready
        for begin, end, _ in self.busy:
            if start + length <= begin and start < begin:
                return start
            start = max(start, end)
        return start

    def idle_before(self, start: datetime, now: datetime) -> timedelta:
        """How long the slot would stand idle just before ``start``."""
        return start - max([now, *(end for _, end, _ in self.busy if end <= start)])

    def reserve(self, start: datetime, end: datetime, name: str) -> None:
        self.busy.append((start, end, name))
        self.busy.sort()

    def free_now(self, now: datetime) -> bool:
        return not any(begin <= now < end or begin == end == now for begin, end, _ in self.busy)


def choose(*, node: str, instance: str, room: int, startable: Sequence[Candidate], upcoming: Sequence[Candidate],
           nodes: Sequence[NodeLoad], holds: Sequence[Hold], now: datetime, rule: PickRule) -> Choice:
    """Which of ``startable`` (schedules that can start now, on any node: those ``node`` must not run are
    planned on the others) this scheduler starts on its ``room`` free slots, and which of those slots it
    holds (module docstring). ``upcoming`` are the schedules due within the horizon; ``nodes`` the live
    schedulers (this one among them, or not yet registered), ``holds`` the holds in force."""
    if room <= 0:
        return Choice(())
    ordered = sorted(startable, key=lambda c: order_key(rule, c))
    look = rule.lookahead
    if look is None:
        return Choice(tuple(c.name for c in ordered if node not in c.excluded)[:room])
    me = (node, instance)
    horizon_end = now + look.horizon
    slots = _slots(me, node, room, nodes, now, look)
    by_name = {c.name: c for c in [*upcoming, *startable]}
    held = _reserve_holds(slots, holds, me, by_name, now)
    jobs = sorted((c for c in by_name.values() if c.name not in held and c.can_start_by <= horizon_end),
                  key=lambda c: order_key(rule, c))
    demand = _exclusive_demand(jobs, {s.node for s in slots})
    startable_names = {c.name for c in startable}
    take: list[str] = []
    left: list[str] = []
    for job in jobs:
        best: tuple[tuple, _Slot, datetime] | None = None
        for slot in slots:
            if slot.node in job.excluded:
                continue
            start = slot.earliest_fit(max(now, job.can_start_by), job.expected)
            # the earliest start; then the slot fewer schedules depend on, the one left idle least before it
            # (best fit), and the name: the same order on every scheduler
            key = (start, demand.get(slot.node, 0), slot.idle_before(start, now), slot.owner)
            if best is None or key < best[0]:
                best = (key, slot, start)
        if best is None:
            continue
        _, slot, start = best
        if start > horizon_end:
            continue
        # a slot starts one run now, and only if free now: not one whose run in flight overran its
        # expected end (it ends "now" in the plan), nor one that just took a run expected to last no time
        free = slot.free_now(now)
        slot.reserve(start, start + job.expected, job.name)
        if job.name in startable_names and start <= now and free:
            (take if slot.owner == me else left).append(job.name)
    waiting = {c.name for c in startable if node not in c.excluded} - set(take) - set(left)  # held back
    return Choice(tuple(take), _my_holds(slots, me, now, look) if waiting else (), tuple(left))


def _slots(me: tuple[str, str], node: str, room: int, nodes: Sequence[NodeLoad], now: datetime,
           look: Lookahead) -> list[_Slot]:
    """Every live scheduler's slots within the horizon: this one's ``room`` free now (and its runs
    in flight, as its heartbeat told them), the others' by their heartbeats."""
    slots = [_Slot(me, node, []) for _ in range(room)]
    horizon_end = now + look.horizon
    for load in nodes:
        if load.key != me and now - load.seen_at > look.node_ttl:
            continue
        ends = sorted(max(end, now) for end in load.ends)
        if load.key == me:
            ends, free = ends[:max(load.slots - room, 0)], 0
        else:
            ends, free = ends[:load.slots], max(load.slots - len(ends), 0)
        slots.extend(_Slot(load.key, load.node, []) for _ in range(free))
        slots.extend(_Slot(load.key, load.node, [(now, end, "")]) for end in ends if end < horizon_end)
    return slots


def _reserve_holds(slots: list[_Slot], holds: Sequence[Hold], me: tuple[str, str], by_name: dict[str, Candidate],
                   now: datetime) -> set[str]:
    """Another live scheduler's hold keeps one of its free slots for the schedule it waits for: the
    names so kept (planned there, not again)."""
    kept = set()
    for hold in holds:
        if (hold.node, hold.instance) == me or hold.expires_at <= now:
            continue
        waited = by_name.get(hold.waits_for)
        length = waited.expected if waited is not None else timedelta(0)
        for slot in slots:
            if slot.owner == (hold.node, hold.instance) and not slot.busy:
                slot.reserve(max(hold.due_at, now), max(hold.due_at, now) + length, hold.waits_for)
                kept.add(hold.waits_for)
                break
    return kept


def _exclusive_demand(jobs: Sequence[Candidate], nodes: set[str]) -> dict[str, int]:
    """How many of ``jobs`` only one live node may run, per node."""
    demand: dict[str, int] = {}
    for job in jobs:
        allowed = nodes - job.excluded
        if len(allowed) == 1:
            only = next(iter(allowed))
            demand[only] = demand.get(only, 0) + 1
    return demand


def _my_holds(slots: list[_Slot], me: tuple[str, str], now: datetime, look: Lookahead) -> tuple[Hold, ...]:
    """This scheduler's slots free now that start nothing now (while a schedule that could start waits):
    each held for the schedule reserved on it next, until a little after that one is due."""
    holds = []
    for slot in slots:
        if slot.owner != me or any(begin <= now for begin, _, _ in slot.busy) or not slot.busy:
            continue
        begin, _, name = slot.busy[0]
        holds.append(Hold(me[0], me[1], name, begin, begin + look.hold_grace))
    return tuple(holds)
