"""The fluid bound of a schedule fleet: the least share of schedule-time in ERROR that any pick rule
can reach, when slot-time is shared as a divisible quantity (docs/reference/fleet-simulator.md#the-fluid-bound).

A periodic schedule of period ``P`` whose good runs last ``r`` on average, run ``N`` times over a
window ``W``, is in ERROR from each deadline (the last good start + ``P``) until the next good run
ends: at least ``start_i + r_i - start_{i-1} - P`` per run, so at least ``1 - N (P - r) / W`` of the
window, for ``N r / W`` slots of capacity. Each slot it is given keeps it out of ERROR for a share
``(P - r) / r``, its *worth*. A calendar schedule misses a firing's deadline when that firing has no
run: ``1 - f`` of the time for a share ``f`` of its firings run, at ``f r / gap`` slots: worth
``gap / r`` (none when a run cannot end within ``cron_max``).

Minimizing the mean of ``max(0, 1 - worth × slots)`` under the slots there are is a fractional
knapsack: the schedules worth most are kept out of ERROR first. With a cap on the worst schedule's
share (no schedule starved to win the average), each is first given what keeps it at the cap.

Failed runs, cooldowns, blackouts and runs that cannot be split are left out, and each of them only
adds ERROR: no rule does better than the bound, except by the window's edges (the state it starts
from) and by the luck of its draws (their mean against the distribution's).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from .fleets import START, Fleet, ScheduleSpec


@dataclass(frozen=True, slots=True)
class FluidBound:
    #: the least mean share of schedule-time in ERROR, and the worst schedule's share at that point
    error_share: float
    worst_error_share: float
    #: the slot-time every schedule needs to stay out of ERROR, over the slot-time there is
    demand: float
    #: the cap the worst schedule was held to (None: none)
    cap: float | None = None


def worth(spec: ScheduleSpec) -> float:
    """How long one slot keeps the schedule out of ERROR, as a share of the time (module docstring)."""
    run = spec.durations.mean.total_seconds()
    if spec.period is not None:
        return max(spec.period.total_seconds() - run, 0.0) / run
    if spec.cron_max is not None and run > spec.cron_max.total_seconds():
        return 0.0
    return spec.gap.total_seconds() / run


def capacity(fleet: Fleet) -> float:
    """The slots there are over the measured window, on average (a lost node's are not)."""
    begin, end = START + fleet.warmup, fleet.end
    window = (end - begin).total_seconds()
    lost = 0.0
    for outage in fleet.outages:
        down = min(START + outage.at + outage.lasting, end) - max(START + outage.at, begin)
        lost += fleet.nodes[outage.node] * max(down, timedelta(0)).total_seconds()
    return fleet.slots - lost / window


def fluid_bound(fleet: Fleet, *, cap: float | None = None) -> FluidBound | None:
    """The fleet's fluid bound, the worst schedule's share held to ``cap`` when given (None when no
    sharing of the slots meets the cap)."""
    worths = [worth(s) for s in fleet.schedules]
    needs = [1.0 / w if w > 0 else 0.0 for w in worths]  # slots that keep it out of ERROR
    slots = capacity(fleet)
    given = [0.0] * len(worths)
    if cap is not None:
        for i, w in enumerate(worths):
            if w == 0 and cap < 1:
                return None
            given[i] = min(needs[i], (1.0 - cap) / w) if w > 0 else 0.0
    left = slots - sum(given)
    if left < -1e-9:
        return None
    for i in sorted(range(len(worths)), key=lambda i: -worths[i]):
        more = min(needs[i] - given[i], max(left, 0.0))
        given[i] += more
        left -= more
    errors = [max(0.0, 1.0 - w * g) if w > 0 else 1.0 for w, g in zip(worths, given, strict=True)]
    return FluidBound(sum(errors) / len(errors), max(errors), sum(needs) / slots, cap)


__all__ = ["FluidBound", "capacity", "fluid_bound", "worth"]
