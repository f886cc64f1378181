"""The schedule pick's rules: the order it takes schedules in, and lookahead past the greedy rule
(docs/reference/schedules.md#lookahead). Pure: a store reads a small snapshot (the K most urgent
schedules that can start, the K due within the horizon, the live schedulers and their holds) and
:func:`choose` says which to start on this scheduler now, and which of its free slots to hold.

The greedy pick (the proposal's) starts, on each free slot, the schedule that can start and should
start first. Lookahead plans the horizon instead, as a backfilling planner would:

- every schedule in the snapshot, most urgent first (:func:`plan_key`: the late ones by how late they
  are for the length of their run, then the others by ``should_start_by``), is given the earliest
  start at which some live scheduler that may run it (not in its ``dont_run_on_nodes``) has a slot free
  for its expected run, without moving the starts already given: its *reservation*;
- a schedule whose reservation is now, on one of this scheduler's free slots, starts now; one whose
  reservation is on another scheduler's slot is left to it (node-aware: at equal times, the slot of
  the scheduler fewer schedules depend on is given first, so that what only one scheduler can run
  finds it free; then the slot left idle least before the start (best fit); then by name, so that
  every scheduler draws the same plan and none leaves a schedule to another that leaves it back);
- a free slot of this scheduler that starts nothing now, because a more urgent schedule due later
  would not find it free if a long run took it, is *held*: a stored, expiring record naming the
  schedule it waits for (never a lease: a scheduler that dies holding it frees it when it expires).

When capacity is ample every schedule that can start finds a slot now, and nothing is held.
"""

from __future__ import annotations

import bisect
import enum
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from .calendars import CalendarRule
from .durations import format_duration
from .errors import ValidationError
from .limits import MAX_DURATION
from .schedules import Schedule, StartTimes

#: the largest K a pick may look at (each of the two lists)
MAX_K = 1000
#: a scheduler counts as live while its last heartbeat is younger than this (by default)
NODE_TTL = timedelta(seconds=90)
#: lookahead's sense of "soon" (:func:`plan_key`): a schedule that must start within this counts nearly as
#: much as one already late
URGENCY_SCALE = 600.0
#: the shortest run the plan reserves a slot for (a schedule never run, expected to take no time, still
#: takes its slot when it starts)
SHORTEST_RUN = timedelta(seconds=1)


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


def plan_key(rule: PickRule, candidate: Candidate, now: datetime) -> tuple:
    """The order lookahead plans in (the rule's own for the due and period orders). For the deadline
    order, the highest *worth* first: what a run buys for the slot-time it takes, as an
    apparent-tardiness-cost rule would weigh it:

    - ``period / run``: how long a good run keeps its schedule out of ERROR, per second of slot;
    - times ``(late + run) / run`` once its ``should_start_by`` has passed: the longer late for the
      length of its run, the more it is worth (a highest-response-ratio rule: a long run's turn comes
      as its lateness grows, none is starved by shorter ones for ever);
    - times ``exp(-slack / URGENCY_SCALE)`` while it is not late yet: a run that must start soon counts
      nearly in full, one with hours to spare hardly, so that the slots go first to what would be
      late, and then to what will be.

    Ties (and schedules that never ran, of no known period) go by ``should_start_by``."""
    if rule.order is not PickOrder.DEADLINE:
        return order_key(rule, candidate)
    late = (now - candidate.should_start_by).total_seconds()
    run = max(candidate.expected, SHORTEST_RUN).total_seconds()
    period = max(candidate.period.total_seconds(), run)
    worth = period / run * ((late + run) / run if late > 0 else math.exp(late / URGENCY_SCALE))
    return (-worth, candidate.should_start_by, candidate.name)


def period_of(scheduling_period: timedelta | None, cron_schedule: str | None, tz: str, at: datetime) -> timedelta:
    """How often a schedule must run: its scheduling period, or its calendar rule's gap between the two
    fire times after ``at`` (the longest duration kept when it fires no more)."""
    if scheduling_period is not None:
        return scheduling_period
    rule = _rule(cron_schedule or "", tz)
    first = rule.next_fire_time(at)
    second = None if first is None else rule.next_fire_time(first)
    return second - first if first is not None and second is not None else MAX_DURATION


@functools.lru_cache(maxsize=4096)
def _rule(text: str, tz: str) -> CalendarRule:
    return CalendarRule.parse(text, tz, field="cron_schedule")


@dataclass
class _Slot:
    """One slot of a live scheduler in the plan. Times are seconds from now (floats: the plan's arithmetic
    is the pick's hot path)."""

    owner: tuple[str, str]
    node: str
    #: reservations (start, end, schedule), sorted; a run in flight is one from 0 ("")
    busy: list[tuple[float, float, str]]

    def idle_before(self, start: float) -> float:
        """How long the slot would stand idle just before ``start``."""
        last = 0.0
        for _, end, _ in self.busy:
            if last < end <= start:
                last = end
        return start - last

    def reserve(self, start: float, end: float, name: str) -> None:
        self.busy.append((start, end, name))
        self.busy.sort()


#: a slot's rank for a schedule: start, exclusive demand, idle before, scheduler, kind (0 planned, 1 idle,
#: 2 freeing) and its place (the planned slot's index, or the freeing slot's end)
_Key = tuple[float, int, float, tuple[str, str], int, float]


def choose(*, node: str, instance: str, room: int, startable: Sequence[Candidate], upcoming: Sequence[Candidate],
           nodes: Sequence[NodeLoad], holds: Sequence[Hold], now: datetime, rule: PickRule) -> Choice:
    """Which of ``startable`` (schedules that can start now, on any node: those ``node`` must not run are
    planned on the others) this scheduler starts on its ``room`` free slots, and which of those slots it
    holds (module docstring). ``upcoming`` are the schedules due within the horizon; ``nodes`` the live
    schedulers (this one among them, or not yet registered), ``holds`` the holds in force."""
    if room <= 0:
        return Choice(())
    look = rule.lookahead
    if look is None:
        ordered = sorted(startable, key=lambda c: order_key(rule, c))
        return Choice(tuple(c.name for c in ordered if node not in c.excluded)[:room])
    me = (node, instance)
    horizon = look.horizon.total_seconds()
    slots: list[_Slot] = []
    idle, freeing = _slots(me, room, nodes, now, look)
    by_name = {c.name: c for c in [*upcoming, *startable]}
    held = _reserve_holds(slots, idle, holds, me, by_name, now)
    jobs = sorted((c for c in by_name.values() if c.name not in held and c.can_start_by <= now + look.horizon),
                  key=lambda c: plan_key(rule, c, now))
    nodes_in_plan = {s.node for s in slots} | {o[0] for o, n in idle.items() if n} | {o[0] for o, e in freeing.items() if e}
    demand = _exclusive_demand(jobs, nodes_in_plan)
    startable_names = {c.name for c in startable}
    shortest = SHORTEST_RUN.total_seconds()
    take: list[str] = []
    left: list[str] = []
    for job in jobs:
        ready = max((job.can_start_by - now).total_seconds(), 0.0)
        length = max(job.expected.total_seconds(), shortest)
        # the earliest start; then the slot fewer schedules depend on, the one left idle least before it
        # (best fit), and the scheduler's name: the same order on every scheduler
        best: _Key | None = None
        key: _Key
        for owner, count in idle.items():  # an idle slot: each of one scheduler's is as good as another
            if count and owner[0] not in job.excluded:
                key = (ready, demand.get(owner[0], 0), ready, owner, 1, 0.0)
                if best is None or key < best:
                    best = key
        for owner, ends in freeing.items():  # a slot with only its run in flight: the best of them by bisection
            if ends and owner[0] not in job.excluded:
                at = bisect.bisect_right(ends, ready)
                end = ends[at - 1] if at else ends[0]
                start = max(ready, end)
                key = (start, demand.get(owner[0], 0), start - end, owner, 2, end)
                if best is None or key < best:
                    best = key
        excluded = job.excluded
        for index, slot in enumerate(slots):
            if excluded and slot.node in excluded:
                continue
            start = ready  # the first start from ready where the run fits between the slot's reservations
            for begin, end, _ in slot.busy:
                if start + length <= begin and start < begin:
                    break
                if end > start:
                    start = end
            if best is not None and start > best[0]:  # a later start never ranks first: skip the rest of its key
                continue
            key = (start, demand.get(slot.node, 0), slot.idle_before(start), slot.owner, 0, index)
            if best is None or key < best:
                best = key
        if best is None or best[0] > horizon:
            continue
        start, owner = best[0], best[3]
        if best[4] == 1:  # an idle slot, taken into the plan
            idle[owner] -= 1
            slot = _Slot(owner, owner[0], [])
            slots.append(slot)
        elif best[4] == 2:  # a slot freeing when its run in flight ends
            freeing[owner].remove(best[5])
            slot = _Slot(owner, owner[0], [(0.0, best[5], "")])
            slots.append(slot)
        else:
            slot = slots[int(best[5])]
        slot.reserve(start, start + length, job.name)
        if job.name in startable_names and start <= 0:
            if owner != me:
                left.append(job.name)
            elif len(take) < room:  # one start per free slot, whatever the plan's arithmetic
                take.append(job.name)
    waiting = {c.name for c in startable if node not in c.excluded} - set(take) - set(left)  # held back
    return Choice(tuple(take), _my_holds(slots, me, now, look) if waiting else (), tuple(left))


def _slots(me: tuple[str, str], room: int, nodes: Sequence[NodeLoad], now: datetime,
           look: Lookahead) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], list[float]]]:
    """Every live scheduler's slots within the horizon, as the plan starts: this one's ``room`` free now
    (and its runs in flight, as its heartbeat told them), the others' by their heartbeats. The number of
    idle slots per scheduler, and the ends of the runs in flight on the others (sorted seconds)."""
    idle = {me: room}
    freeing: dict[tuple[str, str], list[float]] = {}
    horizon, shortest = look.horizon.total_seconds(), SHORTEST_RUN.total_seconds()
    for load in sorted(nodes, key=lambda n: n.key):
        if load.key != me and now - load.seen_at > look.node_ttl:
            continue
        # a run past its expected end still runs: its slot frees a moment from now, never now
        ends = sorted(max((end - now).total_seconds(), shortest) for end in load.ends)
        if load.key == me:
            ends = ends[:max(load.slots - room, 0)]
        else:
            ends, idle[load.key] = ends[:load.slots], max(load.slots - len(ends), 0)
        freeing[load.key] = [end for end in ends if end < horizon]
    return idle, freeing


def _reserve_holds(slots: list[_Slot], idle: dict[tuple[str, str], int], holds: Sequence[Hold],
                   me: tuple[str, str], by_name: dict[str, Candidate], now: datetime) -> set[str]:
    """Another live scheduler's hold keeps one of its idle slots for the schedule it waits for: the
    names so kept (planned there, not again)."""
    kept = set()
    for hold in holds:
        owner = (hold.node, hold.instance)
        if owner == me or hold.expires_at <= now or not idle.get(owner):
            continue
        waited = by_name.get(hold.waits_for)
        length = max(waited.expected if waited is not None else timedelta(0), SHORTEST_RUN).total_seconds()
        due = max((hold.due_at - now).total_seconds(), 0.0)
        idle[owner] -= 1
        slots.append(_Slot(owner, hold.node, [(due, due + length, hold.waits_for)]))
        kept.add(hold.waits_for)
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
        if slot.owner != me or not slot.busy or slot.busy[0][0] <= 0:
            continue
        begin, _, name = slot.busy[0]
        due = now + timedelta(seconds=begin)
        holds.append(Hold(me[0], me[1], name, due, due + look.hold_grace))
    return tuple(holds)



def holds_said(schedule: Schedule, start_times: StartTimes | None, *, holds: Sequence[Hold],
               now: datetime) -> str | None:
    """Why a schedule is held back, or that a slot is kept for it, in words (``schedule show``, the API,
    the console), from its assessed ``start_times``: held back when it could start now and is not running.
    None when no hold concerns it."""
    name = schedule.name
    waiting = start_times is not None and start_times.can_start_by <= now and not schedule.running

    def due(hold: Hold) -> str:
        left = hold.due_at - now
        return "due now" if left <= timedelta(0) else f"due in {format_duration(left, resolution=timedelta(seconds=1))}"

    kept = [h for h in holds if h.waits_for == name and h.expires_at > now]
    if kept:
        return "a slot is kept for it: " + "; ".join(f"by {h.node}/{h.instance}, {due(h)}" for h in kept[:3])
    others = sorted((h for h in holds if h.waits_for != name and h.expires_at > now), key=lambda h: h.due_at)
    if not waiting or not others:
        return None
    shown = "; ".join(f"held for {h.waits_for}, {due(h)}" for h in others[:3])
    more = f" (and {len(others) - 3} more)" if len(others) > 3 else ""
    return f"held back: {shown}{more}"
