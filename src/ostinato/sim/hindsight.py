"""The hindsight bounds: the best any schedule could do with the change times known in advance.

Over the measurement window [s, e), with V visits started in it (the capacity C
a day, as the engine hands out its whole visits per step) and W in the warm-up
before it. A source lives in the window from a = max(birth, s) to
b = min(death, e); its **events** are a and each change in (a, b), and the
**gaps** the intervals between consecutive events, the last one closed by b.

**Freshness.** A visit keeps a source fresh only from the visit to its next
change, so a visit adds at most the gap it falls in, and two in the same gap add
no more than one. The gap that starts at s (a source alive before the window) can
be covered by a warm-up visit after the source's last earlier change; every other
gap needs one of the V. So no schedule keeps more source-time fresh than the W
longest of those first gaps plus the V longest of all the others — the bound
(:func:`freshness_bound`), as a share of the window's live source-days. It is 1
when V is at least the number of gaps: knowing the change times, a visit can
follow every change.

**Age.** Age is the time since the first change not archived, 0 while fresh.
With the change times known, the best visit times are just after an event
(moving a visit back to the latest event before it archives the same and ends
the stale time sooner). Visiting just after events j₁ < j₂ < …, a source is
stale from the event after each visit to the next visit, and its age integral is
Σ (length of each stale run)² / 2. Every source is taken as fresh at s when it is
alive before the window (as if the warm-up had left it so: optimistic, so still
a bound), and stale from a when born in it. Minimising the total over sources with
at most V visits is a knapsack of non-convex per-source costs; its Lagrangian
relaxation, Σᵢ minⱼ (costᵢ(visits) + λ · visits) − λV, is below the minimum for
every price λ ≥ 0 (weak duality), so the largest value found over λ is a sound
lower bound on the window's total age (:func:`age_bound`). Each source's
minimum at a price is a dynamic programme over its events, made linear by a
convex-hull trick (the stale run's cost is quadratic in its end).

Both ignore visit durations and failures, which only make a real schedule worse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import burstiness
from .burstiness import Burstiness
from .engine import SimulationConfig, make_world

#: the age bound's search over the price of a visit: bisection steps on log λ
PRICE_STEPS = 40


@dataclass(frozen=True)
class WindowHistory:
    """What the bounds need of one run's history: each live source's window and events."""

    start: float
    end: float
    #: window visits (started in it) and warm-up visits
    visits: int
    warmup_visits: int
    #: per live source in the window: a, b, and alive before the window (its first gap may be a warm-up's)
    since: np.ndarray
    until: np.ndarray
    before: np.ndarray
    #: changes in (a, b): source (index into the arrays above) and time, by source then time
    change_source: np.ndarray
    change_time: np.ndarray

    @property
    def source_days(self) -> float:
        return float((self.until - self.since).sum())

    def gaps(self) -> tuple[np.ndarray, np.ndarray]:
        """Every gap's length and whether it is a first gap a warm-up visit may cover."""
        count = self.since.size
        points = np.concatenate([self.since, self.change_time, self.until])
        owner = np.concatenate([np.arange(count), self.change_source, np.arange(count)])
        kind = np.concatenate([np.zeros(count), np.ones(self.change_time.size), np.full(count, 2)])
        order = np.lexsort((kind, points, owner))
        points, owner = points[order], owner[order]
        lengths = np.diff(points)
        same = owner[1:] == owner[:-1]
        first = np.r_[True, owner[1:] != owner[:-1]][:-1]
        gap_owner = owner[:-1][same]
        return lengths[same], (first[same] & self.before[gap_owner])


def freshness_bound(history: WindowHistory) -> float:
    """The largest share of the window's live source-days any schedule keeps fresh (see the module)."""
    total = history.source_days
    if total <= 0:
        return 1.0
    lengths, warm = history.gaps()
    warm_gaps = np.sort(lengths[warm])[::-1]
    free = warm_gaps[: history.warmup_visits]
    pool = np.sort(np.concatenate([warm_gaps[history.warmup_visits:], lengths[~warm]]))[::-1]
    return float(min(1.0, (free.sum() + pool[: history.visits].sum()) / total))


def _source_cost(events: list[float], end: float, price: float, fresh_first: bool) -> tuple[float, int]:
    """The least age integral plus ``price`` per visit of one source, and its visits.

    ``events`` e₀ < e₁ < … (e₀ = a); stale runs start at an event and end at a visit (just after
    an event) or at ``end``. F(j), the best future once captured just after eⱼ, is
    min((end − eⱼ₊₁)²/2, min over j' > j of (eⱼ' − eⱼ₊₁)²/2 + price + F(j')); each j' is a line
    in x = eⱼ₊₁ (after x²/2 is taken out), added by decreasing e (increasing slope −eⱼ') and
    queried at decreasing x, so a pointer walks a lower hull once.
    """
    last = len(events) - 1
    slopes: list[float] = []
    heights: list[float] = []
    counts: list[int] = []
    pointer = 0
    best, visits = 0.0, 0  # F(last): captured after the last event, fresh to the end
    stop = 0 if fresh_first else -1
    for j in range(last - 1, stop - 1, -1):
        # the line of j' = j + 1, whose F was computed last
        e = events[j + 1]
        slope, height = -e, e * e / 2 + price + best
        while len(slopes) >= 2:
            (m1, c1), (m2, c2) = (slopes[-2], heights[-2]), (slopes[-1], heights[-1])
            if (height - c2) * (m1 - m2) >= (c2 - c1) * (m2 - slope):  # the middle line is nowhere lowest
                slopes.pop(), heights.pop(), counts.pop()
            else:
                break
        slopes.append(slope)
        heights.append(height)
        counts.append(visits + 1)
        pointer = min(pointer, len(slopes) - 1)
        x = events[j + 1]
        while pointer + 1 < len(slopes) and slopes[pointer + 1] * x + heights[pointer + 1] <= slopes[pointer] * x + heights[pointer]:
            pointer += 1
        revisit = x * x / 2 + slopes[pointer] * x + heights[pointer]
        never = (end - x) ** 2 / 2
        best, visits = (revisit, counts[pointer]) if revisit < never else (never, 0)
    return best, visits


def _priced(groups: list[tuple[list[float], float, bool]], price: float) -> tuple[float, int]:
    total, visits = 0.0, 0
    for events, end, fresh_first in groups:
        cost, count = _source_cost(events, end, price, fresh_first)
        total += cost
        visits += count
    return total, visits


def age_bound(history: WindowHistory) -> float:
    """A lower bound on the mean age over the window's live source-days (days; see the module)."""
    total_days = history.source_days
    if total_days <= 0:
        return 0.0
    starts = np.searchsorted(history.change_source, np.arange(history.since.size + 1))
    groups = []
    for i in range(history.since.size):
        changes = history.change_time[starts[i]:starts[i + 1]].tolist()
        if history.before[i] and not changes:
            continue  # fresh all along at no cost
        groups.append(([float(history.since[i])] + changes, float(history.until[i]), bool(history.before[i])))
    needed = sum(len(events) - (1 if fresh else 0) for events, _, fresh in groups)
    if needed <= history.visits:
        return 0.0
    low, high = 1e-9, max(((end - events[0]) ** 2 for events, end, _ in groups), default=1.0) + 1.0
    best = 0.0
    for _ in range(PRICE_STEPS):
        price = math.sqrt(low * high)
        cost, visits = _priced(groups, price)
        best = max(best, cost - price * history.visits)
        if visits > history.visits:
            low = price
        else:
            high = price
    return best / total_days


# -- one run's history -------------------------------------------------------------
@dataclass(frozen=True)
class Hindsight:
    """The bounds of one configuration's window, and the burstiness of its run's changes."""

    freshness: float
    mean_age: float
    visits: int
    gaps: int
    burstiness: Burstiness

    def as_dict(self) -> dict:
        return {"freshness": self.freshness, "mean_age_days": self.mean_age, "window_visits": self.visits,
                "window_gaps": self.gaps, "burstiness": self.burstiness.as_dict()}


def _budget(config: SimulationConfig) -> tuple[int, int]:
    """Visits the engine hands out in the warm-up and in the window (its whole visits per step)."""
    dt = config.step_days
    per_step = config.visits_per_day * dt
    steps = int(round(config.horizon / dt))
    first = min(steps, math.ceil(config.warmup / dt - 1e-9))
    handed = lambda k: math.floor(per_step * k + 1e-9)
    return handed(first), handed(steps) - handed(first)


def run_changes(config: SimulationConfig) -> tuple[np.ndarray, np.ndarray]:
    """Every change of the run (source, time in days), as the engine's steps draw them: a world's
    history depends on the seed and on the steps it is advanced by. A trace's recorded changes in the
    run include each origin's first and last (its birth and death), which the world does not replay."""
    world = make_world(config)
    if config.trace is not None:
        from .trace_world import TraceWorld

        assert isinstance(world, TraceWorld)  # make_world: a trace's world
        return world.recorded(0.0, config.horizon)
    dt = config.step_days
    found = [world.advance(k * dt, (k + 1) * dt) for k in range(int(round(config.horizon / dt)))]
    return (np.concatenate([c.sources for c in found]) if found else np.empty(0, np.int64),
            np.concatenate([c.times for c in found]) if found else np.empty(0))


def window_history(config: SimulationConfig) -> WindowHistory:
    """The window's live sources and their changes, for the bounds."""
    world = make_world(config)
    sources, times = run_changes(config) if config.trace is None else _replayed(world, config)
    start, end = config.warmup, config.horizon
    since = np.maximum(world.birth, start)
    until = np.minimum(world.death, end)
    live = np.flatnonzero(~world.dead & (until > since))
    number = np.full(world.size, -1)
    number[live] = np.arange(live.size)
    inside = (number[sources] >= 0) & (times > since[sources]) & (times < until[sources])
    order = np.lexsort((times[inside], number[sources[inside]]))
    warmup_visits, visits = _budget(config)
    return WindowHistory(start, end, visits, warmup_visits, since[live], until[live], world.birth[live] < start,
                         number[sources[inside]][order], times[inside][order])


def _replayed(world, config: SimulationConfig) -> tuple[np.ndarray, np.ndarray]:
    """A trace world's changes over the run, as it replays them (births and deaths are not changes)."""
    found = world.advance(0.0, config.horizon)
    return found.sources, found.times


def measure(config: SimulationConfig) -> Hindsight:
    """The hindsight bounds of a validated configuration's window, and its changes' burstiness."""
    history = window_history(config)
    lengths, _ = history.gaps()
    sources, times = run_changes(config)
    return Hindsight(freshness_bound(history), age_bound(history), history.visits, int(lengths.size),
                     burstiness.measure(sources, times))
