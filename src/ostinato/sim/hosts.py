"""Hosts in the simulation: a world where a few hosts hold most sources, and politeness per host for
the policies simulated directly (see docs/reference/simulator.md, "Politeness per host").

``--hosts H`` puts each source on one of H hosts drawn from the seed with Zipf weights (host k
with weight 1 / k^skew): the first hosts hold most sources. Store policies get their host as a
lister's key and the store keeps the limits itself (``domain.politeness``); the quota baselines
(uniform, multiplicative) take their order's best candidates that their hosts' room allows
(:func:`polite_choice`), with the same rule.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np

#: the random stream of the hosts' draw
STREAM_HOSTS = 7


def host_assignment(size: int, hosts: int, skew: float, seed: int) -> np.ndarray:
    """Each source's host index (0 the largest), Zipf-distributed over ``hosts`` hosts."""
    weights = 1.0 / np.arange(1, hosts + 1, dtype=float) ** skew
    rng = np.random.default_rng([seed, STREAM_HOSTS])
    return rng.choice(hosts, size=size, p=weights / weights.sum()).astype(np.int64)


def host_name(index: int) -> str:
    return f"host{int(index)}.example"


def host_room(in_flight: np.ndarray, last_start: np.ndarray, t: float, max_per_host: int | None,
              min_spacing: timedelta | None) -> np.ndarray:
    """Visits each host may start at ``t`` (days): ``domain.politeness.room`` for every host at once."""
    room = np.full(in_flight.size, np.iinfo(np.int64).max, dtype=np.int64)
    if max_per_host is not None:
        room = np.maximum(0, max_per_host - in_flight)
    if min_spacing is not None and min_spacing > timedelta(0):
        spacing = min_spacing / timedelta(days=1)
        room = np.where(t < last_start + spacing, 0, np.minimum(room, 1))
    return room


def polite_choice(ordered: np.ndarray, quota: int, hosts: np.ndarray, room: np.ndarray) -> np.ndarray:
    """The first ``quota`` of ``ordered`` (candidates, best first) whose host still has room: each
    host's first ``room`` candidates, in order."""
    if ordered.size == 0 or quota <= 0:
        return ordered[:0]
    h = hosts[ordered]
    by_host = np.argsort(h, kind="stable")
    sorted_h = h[by_host]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_h)) + 1]
    rank_sorted = np.arange(sorted_h.size) - np.repeat(starts, np.diff(np.r_[starts, sorted_h.size]))
    rank = np.empty_like(rank_sorted)
    rank[by_host] = rank_sorted
    return ordered[rank < room[h]][:quota]
