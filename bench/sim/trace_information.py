"""What a schedule could know at each visit, and what it is worth, on a recorded trace.

The simulator compares the learned policy with the rate oracle, which knows each
origin's mean rate over the whole trace, later years included. This benchmark asks
the question beside it, offline and without the store: at the same capacity, what
freshness does a schedule reach when, at each visit, it knows

- ``trace mean rate``: the rate oracle's knowledge;
- ``measured year's rate``: each origin's rate over the measured window itself
  (clairvoyant: what a perfect estimate of the present pace would know);
- ``rate before the window``: the rate of the changes before the measured window;
- ``past N days``: the changes of the N days before the visit (365, 730, 3650),
  as a loader that reads the whole history at each visit (a changelog, a Git
  log) could count them;
- ``… + time since the last change``: one of the rates, and the date of the newest
  change before the visit, planned with the shape of the gaps between changes
  (all the trace's gaps, each scaled by its origin's mean rate: clairvoyant too).

Each visit plans the next one: the interval I that maximises the fresh time the
visit buys per day, net of a price per visit, (∫₀ᴵ P(no change by s) ds − μ) / I.
With a Poisson rate λ that is Cho and Garcia-Molina's freshness optimum; with the
time since the last change A it uses the gaps' survival, S(A + s) / S(A). The price
is found by bisection, seed by seed, so that the visits started in the window
are the capacity.
A visit makes its origin fresh until the next change; a second visit in the same
gap adds nothing. Origins are born at their first change and stay, quiet, after
their last (``--deaths``: gone at it), and no interval is longer than ``--max-gap``,
as in the Debian runs of the README. The first visit of each origin falls at a
random point of its first interval (the seed).

    python bench/sim/trace_information.py --trace /tmp/debian-changelogs.jsonl --start 2021-01-01 --capacity 2

The trace comes from ``ostinato trace build --debian-changelogs --out FILE``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from ostinato.cli.simulate import read_trace
from ostinato.domain.durations import parse_iso_time
from ostinato.sim.workloads import RATE_MIN

DAY = 86400.0
#: the learned policy's prior: one change in 60 days, the weight of one observed change
PRIOR_CHANGES, PRIOR_DAYS = 1.0, 60.0
#: the intervals considered (days), up to the longest allowed (``--max-gap``)
STEPS = np.linspace(0.0, 365.0, 1461)


@dataclass(frozen=True)
class Origin:
    times: np.ndarray  # its changes, days from the run's start; the first is its birth
    death: float  # its last change with deaths, else never
    mean_rate: float  # changes a day over the whole trace (the rate oracle's)

    @property
    def birth(self) -> float:
        return float(self.times[0])


def origins_of(trace, run_start: float, window: tuple[float, float], deaths: bool) -> list[Origin]:
    """The trace's origins alive in ``window`` (days from ``run_start``, seconds since the epoch)."""
    first, last, count = trace.bounds()
    out = []
    for index in range(len(trace.origins)):
        times = (trace.time[trace.source == index] - run_start) / DAY
        death = float(times[-1]) if deaths else math.inf
        if times[0] >= window[1] or death <= max(window[0], times[0]):
            continue
        span = (last[index] - first[index]) / DAY
        out.append(Origin(times, death, max((count[index] - 1) / span if span > 0 else 0.0, RATE_MIN)))
    return out


class GapShape:
    """The survival of the gaps between changes, each gap scaled by its origin's mean rate."""

    def __init__(self, origins: list[Origin]):
        self.gaps = np.sort(np.concatenate([np.diff(o.times) * o.mean_rate for o in origins if o.times.size > 1]))

    def log_survival(self, x: np.ndarray) -> np.ndarray:
        """log P(gap > x); past the longest gap, an exponential tail from half an observation."""
        n = self.gaps.size
        beyond = 1.0 - np.searchsorted(self.gaps, x, side="right") / n
        tail = math.log(0.5 / n) - np.clip(x - self.gaps[-1], 0.0, None)
        return np.maximum(np.log(np.maximum(beyond, 1e-300)), tail)

    def coefficient_of_variation(self) -> float:
        return float(self.gaps.std() / self.gaps.mean())


def best_interval(still_fresh: np.ndarray, price: float) -> float:
    """The interval maximising (fresh time bought − price) per day, given P(no change by each step)."""
    bought = np.concatenate([[0.0], np.cumsum((still_fresh[1:] + still_fresh[:-1]) / 2 * np.diff(STEPS))])
    gain = (bought[1:] - price) / STEPS[1:]
    return float(STEPS[1 + int(np.argmax(gain))])


def poisson_interval(rate: float, price: float, cache: dict) -> float:
    key = (round(math.log(max(rate, 1e-9)), 3), price)
    if key not in cache:
        cache[key] = best_interval(np.exp(-rate * STEPS), price)
    return cache[key]


class Knowledge:
    """What the schedule knows at a visit at ``t`` (days) of an origin: its rate and, maybe, its shape."""

    def __init__(self, name: str, window: tuple[float, float], shape: GapShape | None):
        self.name, self.window, self.shape = name, window, shape
        self.cache: dict = {}

    def rate(self, origin: Origin, t: float) -> float:
        name, (start, end) = self.name.split(" + ")[0], self.window
        times = origin.times
        if name == "trace mean rate":
            return origin.mean_rate
        if name == "measured year's rate":
            inside = int(((times > max(start, origin.birth)) & (times < end)).sum())
            alive = min(origin.death, end) - max(origin.birth, start)
            return (inside + PRIOR_CHANGES) / (max(alive, 0.0) + PRIOR_DAYS)
        if name == "rate before the window":
            before = int(((times > origin.birth) & (times < start)).sum())
            return (before + PRIOR_CHANGES) / (max(start - origin.birth, 0.0) + PRIOR_DAYS)
        days = float(name.split()[1])
        seen = int(((times > max(t - days, origin.birth)) & (times <= t)).sum())
        return (seen + PRIOR_CHANGES) / (min(days, t - origin.birth) + PRIOR_DAYS)

    def interval(self, origin: Origin, t: float, price: float) -> float:
        rate = self.rate(origin, t)
        if self.shape is None:
            return poisson_interval(rate, price, self.cache)
        newest = origin.times[np.searchsorted(origin.times, t, side="right") - 1]
        since = (t - newest) * rate
        still = np.exp(self.shape.log_survival(since + STEPS * rate) - self.shape.log_survival(np.array([since]))[0])
        return best_interval(still, price)


def replay(origins: list[Origin], knowledge: Knowledge, price: float, seed: int) -> tuple[float, int]:
    """Freshness over the window, and the visits started in it."""
    rng = random.Random(seed)
    start, end = knowledge.window
    fresh = alive = 0.0
    visits = 0
    for origin in origins:
        t = max(origin.birth, 0.0)
        t += rng.random() * knowledge.interval(origin, t, price)
        covered = None  # the end of the gap the last visit made fresh
        while t < min(origin.death, end):
            after = np.searchsorted(origin.times, t, side="right")
            gap_end = min(origin.times[after] if after < origin.times.size else math.inf, origin.death)
            if gap_end != covered:
                fresh += max(0.0, min(gap_end, end) - max(t, start))
                covered = gap_end
            visits += start <= t < end
            t += knowledge.interval(origin, t, price)
        alive += max(0.0, min(origin.death, end) - max(origin.birth, start))
    return fresh / alive, visits


def price_for(origins: list[Origin], knowledge: Knowledge, target: float, seed: int) -> float:
    """The price per visit at which the seed's visits in the window meet ``target`` (bisection on its log)."""
    low, high = math.log(1e-3), math.log(1e4)
    for _ in range(28):
        middle = (low + high) / 2
        _, visits = replay(origins, knowledge, math.exp(middle), seed)
        low, high = (middle, high) if visits > target else (low, middle)
    return math.exp((low + high) / 2)


KNOWLEDGE = ("trace mean rate", "measured year's rate", "rate before the window", "past 365 days",
             "past 730 days", "past 3650 days", "trace mean rate + time since the last change",
             "measured year's rate + time since the last change")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", required=True, help="a trace file (JSON lines or CSV)")
    parser.add_argument("--start", default="2021-01-01", help="the measured window's start (ISO date, UTC)")
    parser.add_argument("--days", type=float, default=365.0, help="the measured window's length")
    parser.add_argument("--warm-up", type=float, default=365.0, help="days run before the window")
    parser.add_argument("--capacity", type=float, default=2.0, help="visits a day")
    parser.add_argument("--seeds", type=int, default=5, help="first-visit phases drawn from seeds 0..N-1")
    parser.add_argument("--max-gap", type=float, default=365.0, help="the longest interval between visits (days)")
    parser.add_argument("--deaths", action="store_true",
                        help="an origin is gone at its last change (the simulator's --trace-deaths)")
    parser.add_argument("--json-out", help="write the figures here")
    args = parser.parse_args()
    trace = read_trace(args.trace)
    window_start = parse_iso_time(args.start + ("T00:00:00+00:00" if len(args.start) == 10 else ""), "start")
    run_start = window_start.timestamp() - args.warm_up * DAY
    window = (args.warm_up, args.warm_up + args.days)
    global STEPS
    STEPS = np.linspace(0.0, args.max_gap, int(args.max_gap * 4) + 1)
    origins = origins_of(trace, run_start, window, args.deaths)
    shape = GapShape(origins)
    target = args.capacity * args.days
    print(f"{trace.label}: {len(origins)} origins alive in the window, {shape.gaps.size} gaps "
          f"(coefficient of variation {shape.coefficient_of_variation():.2f}); {args.capacity:g} visits a day")
    rows = []
    for name in KNOWLEDGE:
        knowledge = Knowledge(name, window, shape if "time since" in name else None)
        prices = [price_for(origins, knowledge, target, seed) for seed in range(args.seeds)]
        runs = [replay(origins, knowledge, price, seed) for seed, price in enumerate(prices)]
        fresh = [100 * f for f, _ in runs]
        rows.append({"knowledge": name, "prices": prices, "freshness": fresh, "visits": [v for _, v in runs],
                     "mean": float(np.mean(fresh))})
        print(f"  {name:<52} {rows[-1]['mean']:6.2f} %  ({min(fresh):.2f} – {max(fresh):.2f}), "
              f"{int(np.mean([v for _, v in runs]))} visits, {rows[-1]['mean'] - rows[0]['mean']:+.2f} "
              "against the trace mean rate")
    if args.json_out:
        with open(args.json_out, "w") as out:
            json.dump({"trace": trace.summary(), "window_start": args.start, "days": args.days,
                       "warm_up": args.warm_up, "capacity": args.capacity, "seeds": args.seeds,
                       "max_gap": args.max_gap, "deaths": args.deaths,
                       "origins": len(origins), "gap_cv": shape.coefficient_of_variation(),
                       "measured_at": datetime.now(UTC).isoformat(), "rows": rows}, out, indent=1)


if __name__ == "__main__":
    main()
