"""The load benchmark's view of the services' Prometheus metrics (``--metrics-port``), and of CPU use.

:func:`scrape` reads one process's ``/metrics`` into a :class:`Snapshot`; the
difference of two snapshots of one process (:func:`period`) gives, per loop,
what happened between them: passes and picks (counts, mean, and quantiles
estimated from the histogram buckets, as Prometheus's ``histogram_quantile``
does: linear within the bucket), dispatches and stored outcomes.

:func:`cpu_times` and :func:`process_cpu` read ``/proc``: the machine's busy share, and the CPU
seconds each of a set of processes (and PostgreSQL's backends, children of its postmaster) has used.
"""

from __future__ import annotations

import math
import os
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

HISTOGRAMS = {"ostinato_loop_seconds": "loop", "ostinato_pick_seconds": "pick"}


@dataclass
class Histogram:
    """One histogram series: cumulative counts by upper bound (``le``, +inf last), sum and count."""

    buckets: dict[float, float] = field(default_factory=dict)
    total: float = 0.0
    count: float = 0.0

    def minus(self, earlier: Histogram | None) -> Histogram:
        if earlier is None:
            return Histogram(dict(self.buckets), self.total, self.count)
        return Histogram({le: n - earlier.buckets.get(le, 0.0) for le, n in self.buckets.items()},
                         self.total - earlier.total, self.count - earlier.count)

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def quantile(self, q: float) -> float | None:
        """The q-quantile estimated from the buckets (None without observations; the highest finite
        bound when it falls in the +inf bucket)."""
        if not self.count:
            return None
        rank = q * self.count
        lower, below = 0.0, 0.0
        bounds = sorted(self.buckets)
        for le in bounds:
            cumulative = self.buckets[le]
            if cumulative >= rank:
                if math.isinf(le):
                    return lower
                inside = cumulative - below
                return lower + (le - lower) * ((rank - below) / inside if inside else 1.0)
            lower, below = le, cumulative
        return lower


@dataclass
class Snapshot:
    at: float  # time.monotonic() of the scrape
    histograms: dict[tuple[str, str], Histogram]  # (loop|pick, loop label) -> histogram
    counters: dict[tuple[str, tuple[tuple[str, str], ...]], float]  # (name, labels) -> value


def scrape(port: int, timeout: float = 10.0) -> Snapshot:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as response:
        text = response.read().decode()
    at = time.monotonic()
    histograms: dict[tuple[str, str], Histogram] = {}
    counters: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        kind = HISTOGRAMS.get(family.name)
        for sample in family.samples:
            if kind is not None:
                labels = dict(sample.labels)
                series = histograms.setdefault((kind, labels.get("loop", "")), Histogram())
                if sample.name.endswith("_bucket"):
                    series.buckets[float(labels["le"])] = sample.value
                elif sample.name.endswith("_sum"):
                    series.total = sample.value
                elif sample.name.endswith("_count"):
                    series.count = sample.value
            elif sample.name.endswith("_total"):
                counters[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return Snapshot(at, histograms, counters)


def wait_for_metrics(port: int, deadline_s: float = 60.0) -> Snapshot:
    """Scrape until the process answers (it is starting)."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return scrape(port, timeout=2.0)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.25)


def counter_sum(snapshot: Snapshot, name: str, **match: str) -> float:
    return sum(value for (n, labels), value in snapshot.counters.items()
               if n == name and all(dict(labels).get(k) == v for k, v in match.items()))


def period(start: Snapshot, end: Snapshot) -> dict[str, Any]:
    """What one process did between two of its snapshots, per loop: passes and picks (per second,
    mean, p50, p99, in ms), dispatches and outcomes."""
    seconds = end.at - start.at
    loops: dict[str, dict[str, Any]] = {}
    for (kind, loop), series in sorted(end.histograms.items()):
        delta = series.minus(start.histograms.get((kind, loop)))
        figures = loops.setdefault(loop, {})
        figures[kind] = {
            "count": int(delta.count),
            "per_s": delta.count / seconds if seconds > 0 else 0.0,
            "mean_ms": _ms(delta.mean),
            "p50_ms": _ms(delta.quantile(0.5)),
            "p99_ms": _ms(delta.quantile(0.99)),
        }
    for loop, figures in loops.items():
        dispatched = (counter_sum(end, "ostinato_dispatches_total", loop=loop)
                      - counter_sum(start, "ostinato_dispatches_total", loop=loop))
        figures["dispatches"] = int(dispatched)
        figures["dispatches_per_s"] = dispatched / seconds if seconds > 0 else 0.0
    outcomes = {kind: int(counter_sum(end, "ostinato_outcomes_total", kind=kind)
                          - counter_sum(start, "ostinato_outcomes_total", kind=kind)) for kind in ("run", "visit")}
    return {"seconds": seconds, "loops": loops, "outcomes": outcomes}


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of every core since boot, from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as stat:
        values = [float(v) for v in stat.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)  # idle + iowait
    return sum(values) - idle, sum(values)


def cpu_busy(before: tuple[float, float], after: tuple[float, float]) -> float:
    """The share of the machine's CPU time spent busy between two readings of :func:`cpu_times`."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0


def process_cpu(pids: list[int], parents: list[int] = ()) -> dict[int, float]:
    """CPU seconds (user + system) used so far by each of ``pids`` and of the children of ``parents``
    that are alive, by pid."""
    tick = os.sysconf("SC_CLK_TCK")
    wanted, children_of = set(pids), set(parents)
    found: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone
        if int(entry) in wanted or int(fields[1]) in children_of:
            found[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    return found
