"""Schedule fleets for ``ostinato simulate-schedules``: what the schedules are, how long their runs
last, which nodes run them and when capacity is lost (docs/reference/fleet-simulator.md).

A fleet is written as a JSON object (the named fleets below are written the same way, so that a
fleet file can say anything they say): its nodes and their slots, its schedules (groups of
``count`` alike, periodic or calendar, each with a distribution of run durations and a failure
probability), outages (a node lost at a moment for a while, then back), the simulated days and
the warm-up before the measurement window, and optionally a load target. The load is the work the
schedules must do, over the slots: the sum of each schedule's mean run length over its period (a
calendar rule's mean gap between fire times). With a load target, every duration is scaled by the
one factor that meets it, so that one mix of schedules gives fleets of any load.

Runs are drawn, not executed: :class:`Draws` gives the n-th run of each schedule the same duration
and outcome under every pick rule (common random numbers: each schedule draws from its own stream
of the seed), so that rules are compared on the same work.
"""

from __future__ import annotations

import functools
import json
import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from ..domain.blackouts import BlackoutPeriod, parse_blackout_periods
from ..domain.calendars import CalendarRule
from ..domain.durations import parse_duration
from ..domain.errors import ValidationError

#: the simulated clock's start (a Monday), the same for every fleet and seed
START = datetime(2026, 1, 5, tzinfo=UTC)
DISTRIBUTIONS = ("fixed", "lognormal", "pareto")
#: most nodes, schedules and days a fleet may have (a simulation of seconds, not hours)
MAX_NODES, MAX_SCHEDULES, MAX_DAYS = 64, 2000, 60
_CHUNK = 64


@dataclass(frozen=True, slots=True)
class Durations:
    """A distribution of run durations: ``fixed`` (``scale``), ``lognormal`` (median ``scale``,
    log-spread ``sigma``) or ``pareto`` (minimum ``scale``, tail index ``alpha``); at most ``cap``."""

    dist: str
    scale: timedelta
    sigma: float = 0.5
    alpha: float = 1.5
    cap: timedelta | None = None

    @property
    def mean(self) -> timedelta:
        """The mean run length (cut at ``cap`` for the Pareto tail)."""
        s = self.scale.total_seconds()
        if self.dist == "fixed":
            value = s
        elif self.dist == "lognormal":
            value = s * math.exp(self.sigma ** 2 / 2)
        else:
            a = self.alpha
            c = self.cap.total_seconds() if self.cap is not None else math.inf
            value = s * a / (a - 1) - (0 if c == math.inf else s ** a * c ** (1 - a) / (a - 1))
        if self.cap is not None and self.dist != "pareto":
            value = min(value, self.cap.total_seconds())
        return timedelta(seconds=value)

    def scaled(self, factor: float) -> Durations:
        return replace(self, scale=self.scale * factor, cap=None if self.cap is None else self.cap * factor)

    def draw(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` durations in seconds."""
        s = self.scale.total_seconds()
        if self.dist == "fixed":
            values = np.full(size, s)
        elif self.dist == "lognormal":
            values = s * np.exp(self.sigma * rng.standard_normal(size))
        else:
            values = s * (1.0 - rng.random(size)) ** (-1.0 / self.alpha)
        if self.cap is not None:
            values = np.minimum(values, self.cap.total_seconds())
        return np.maximum(values, 1.0)


@dataclass(frozen=True, slots=True)
class ScheduleSpec:
    """One simulated schedule."""

    name: str
    #: periodic: ``period`` (and ``cooldown``); calendar: ``cron`` and ``cron_max``
    period: timedelta | None
    cooldown: timedelta | None
    cron: str | None
    cron_max: timedelta | None
    durations: Durations
    failure: float = 0.0
    dont_run_on: tuple[str, ...] = ()
    blackouts: tuple[BlackoutPeriod, ...] = ()
    tz: str = "UTC"
    #: where in its period it starts (0 to 1; None: drawn from the seed, :func:`phase`)
    phase: float | None = None

    @property
    def gap(self) -> timedelta:
        """How often it must run: its period, or its rule's mean gap between fire times over a week."""
        if self.period is not None:
            return self.period
        return _mean_gap(self.cron or "", self.tz)


@dataclass(frozen=True, slots=True)
class Outage:
    """A node lost at ``at`` (from the start) for ``lasting``, then back."""

    node: str
    at: timedelta
    lasting: timedelta


@dataclass(frozen=True, slots=True)
class Fleet:
    name: str
    description: str
    #: node name -> slots
    nodes: Mapping[str, int]
    schedules: tuple[ScheduleSpec, ...]
    outages: tuple[Outage, ...] = ()
    days: float = 3.0
    #: not measured: the fleet settles from its drawn starting state
    warmup: timedelta = timedelta(hours=6)

    @property
    def slots(self) -> int:
        return sum(self.nodes.values())

    @property
    def load(self) -> float:
        """The work the schedules must do over the slots (module docstring)."""
        return sum(s.durations.mean / s.gap for s in self.schedules) / self.slots

    @property
    def end(self) -> datetime:
        return START + timedelta(days=self.days)

    def with_days(self, days: float | None) -> Fleet:
        if days is None:
            return self
        fleet = replace(self, days=_positive(days, "days", MAX_DAYS))
        if fleet.warmup >= timedelta(days=fleet.days):
            raise ValidationError("days", f"more than the fleet's warm-up ({fleet.warmup})", days)
        return fleet

    def with_load(self, load: float | None) -> Fleet:
        """Every duration scaled to meet ``load`` (None: as it is)."""
        if load is None:
            return self
        target = _positive(load, "load", 10.0)
        factor = target / self.load
        return replace(self, schedules=tuple(replace(s, durations=s.durations.scaled(factor)) for s in self.schedules))


@functools.lru_cache(maxsize=256)
def _mean_gap(rule: str, tz: str) -> timedelta:
    parsed = CalendarRule.parse(rule, tz, field="cron")
    fires: list[datetime] = []
    at = START
    while len(fires) < 200 and at < START + timedelta(days=28):
        nxt = parsed.next_fire_time(at)
        if nxt is None:
            break
        fires.append(nxt)
        at = nxt
    if len(fires) < 2:
        raise ValidationError("cron", "a rule that fires at least twice in four weeks", rule)
    return (fires[-1] - fires[0]) / (len(fires) - 1)


def _positive(value: Any, field: str, most: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= most \
            or not math.isfinite(value):
        raise ValidationError(field, f"a number above 0 and at most {most:g}", value)
    return float(value)


# -- fleets as JSON ---------------------------------------------------------------
def _duration(value: Any, field: str, *, zero: bool = False) -> timedelta:
    return parse_duration(value, field, allow_zero=zero)


def _durations(value: Any, field: str) -> Durations:
    if not isinstance(value, Mapping):
        raise ValidationError(field, 'an object {"dist": "fixed|lognormal|pareto", "scale": "10m", …}', value)
    unknown = set(value) - {"dist", "scale", "sigma", "alpha", "cap"}
    if unknown:
        raise ValidationError(f"{field}.{sorted(unknown)[0]}", "dist, scale, sigma, alpha or cap", None)
    dist = value.get("dist")
    if dist not in DISTRIBUTIONS:
        raise ValidationError(f"{field}.dist", f"one of {', '.join(DISTRIBUTIONS)}", dist)
    scale = _duration(value.get("scale"), f"{field}.scale")
    sigma = _positive(value.get("sigma", 0.5), f"{field}.sigma", 5.0)
    alpha = value.get("alpha", 1.5)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 1 < alpha <= 20:
        raise ValidationError(f"{field}.alpha", "a tail index above 1 and at most 20 (a finite mean)", alpha)
    cap = None if value.get("cap") is None else _duration(value["cap"], f"{field}.cap")
    if cap is not None and cap < scale:
        raise ValidationError(f"{field}.cap", f"at least the scale ({value.get('scale')})", value.get("cap"))
    return Durations(dist, scale, sigma, float(alpha), cap)


def _names(value: Any, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValidationError(field, "a list of node names", value)
    return tuple(value)


def _group(item: Any, field: str, nodes: Mapping[str, int]) -> list[ScheduleSpec]:
    """A group of ``count`` alike schedules, named ``<name>-<i>``."""
    if not isinstance(item, Mapping):
        raise ValidationError(field, "an object (a group of schedules)", item)
    known = {"name", "count", "period", "cooldown", "cron", "cron_max", "durations", "failure", "dont_run_on",
             "blackouts", "tz", "phase"}
    if unknown := sorted(set(item) - known):
        raise ValidationError(f"{field}.{unknown[0]}", f"one of {', '.join(sorted(known))}", None)
    name = item.get("name")
    if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
        raise ValidationError(f"{field}.name", "letters, digits, - and _", name)
    count = item.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_SCHEDULES:
        raise ValidationError(f"{field}.count", f"a whole number from 1 to {MAX_SCHEDULES}", count)
    periodic = item.get("period") is not None
    if periodic == (item.get("cron") is not None):
        raise ValidationError(f"{field}.period", "a period (periodic) or a cron rule with cron_max (calendar), "
                              "not both", item.get("period"))
    period = _duration(item["period"], f"{field}.period") if periodic else None
    cooldown = None
    if periodic and item.get("cooldown") is not None:
        cooldown = _duration(item["cooldown"], f"{field}.cooldown", zero=True)
        if period is not None and cooldown > period:
            raise ValidationError(f"{field}.cooldown", f"at most the period ({item['period']})", item["cooldown"])
    cron = cron_max = None
    tz = item.get("tz", "UTC")
    if not periodic:
        cron = item["cron"]
        if not isinstance(cron, str):
            raise ValidationError(f"{field}.cron", "a cron, OnCalendar or RRULE text", cron)
        try:
            _mean_gap(cron, tz)
        except ValidationError as exc:
            raise ValidationError(f"{field}.cron", exc.expected, cron) from None
        cron_max = _duration(item.get("cron_max"), f"{field}.cron_max")
    failure = item.get("failure", 0.0)
    if isinstance(failure, bool) or not isinstance(failure, (int, float)) or not 0 <= failure < 1:
        raise ValidationError(f"{field}.failure", "a probability from 0 to below 1", failure)
    durations = _durations(item.get("durations"), f"{field}.durations")
    dont = _names(item.get("dont_run_on"), f"{field}.dont_run_on")
    if missing := [n for n in dont if n not in nodes]:
        raise ValidationError(f"{field}.dont_run_on", f"names of the fleet's nodes ({', '.join(nodes)})", missing[0])
    if len(set(dont)) >= len(nodes):
        raise ValidationError(f"{field}.dont_run_on", "at most all nodes but one", dont)
    try:
        blackouts = parse_blackout_periods(item.get("blackouts"))
    except ValidationError as exc:
        raise exc.at(field) from None
    start = item.get("phase")
    if start is not None and (isinstance(start, bool) or not isinstance(start, (int, float)) or not 0 <= start <= 1):
        raise ValidationError(f"{field}.phase", "a number from 0 to 1 (where in its period it starts)", start)
    width = len(str(count - 1))
    return [ScheduleSpec(name if count == 1 else f"{name}-{i:0{width}d}", period, cooldown, cron, cron_max, durations,
                         float(failure), dont, blackouts, tz, None if start is None else float(start))
            for i in range(count)]


def parse_fleet(data: Any, name: str = "custom") -> Fleet:
    """A fleet from its JSON form (module docstring); a ValidationError names the first field at fault."""
    if not isinstance(data, Mapping):
        raise ValidationError("fleet", "a JSON object with nodes and schedules", type(data).__name__)
    known = {"name", "description", "nodes", "schedules", "outages", "days", "warmup", "load"}
    if unknown := sorted(set(data) - known):
        raise ValidationError(f"fleet.{unknown[0]}", f"one of {', '.join(sorted(known))}", None)
    nodes_data = data.get("nodes")
    if not isinstance(nodes_data, Mapping) or not 1 <= len(nodes_data) <= MAX_NODES:
        raise ValidationError("fleet.nodes", f'an object of 1 to {MAX_NODES} nodes, {{"node-1": 4, …}} (slots each)',
                              nodes_data)
    nodes: dict[str, int] = {}
    for node, slots in nodes_data.items():
        if isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= 256:
            raise ValidationError(f"fleet.nodes.{node}", "a whole number of slots from 1 to 256", slots)
        nodes[str(node)] = slots
    groups = data.get("schedules")
    if not isinstance(groups, list) or not groups:
        raise ValidationError("fleet.schedules", "a non-empty list of groups of schedules", groups)
    schedules = [s for i, g in enumerate(groups) for s in _group(g, f"fleet.schedules[{i}]", nodes)]
    if len(schedules) > MAX_SCHEDULES:
        raise ValidationError("fleet.schedules", f"at most {MAX_SCHEDULES} schedules in all", len(schedules))
    if len({s.name for s in schedules}) != len(schedules):
        raise ValidationError("fleet.schedules", "groups of different names", sorted(s.name for s in schedules))
    outages = []
    for i, item in enumerate(data.get("outages") or []):
        field = f"fleet.outages[{i}]"
        if not isinstance(item, Mapping) or item.get("node") not in nodes:
            raise ValidationError(f"{field}.node", f"one of the fleet's nodes ({', '.join(nodes)})",
                                  item.get("node") if isinstance(item, Mapping) else item)
        outages.append(Outage(item["node"], _duration(item.get("at"), f"{field}.at"),
                              _duration(item.get("lasting"), f"{field}.lasting")))
    fleet = Fleet(str(data.get("name", name)), str(data.get("description", "")), nodes, tuple(schedules),
                  tuple(outages), warmup=_duration(data.get("warmup", "6h"), "fleet.warmup", zero=True))
    fleet = fleet.with_days(data.get("days", 3.0)) if "days" in data else fleet
    if "load" in data:
        fleet = fleet.with_load(data["load"]) if data["load"] is not None else fleet
    return fleet


def read_fleet(path: str) -> Fleet:
    """A fleet file (JSON)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError("fleet", "a fleet name or a readable JSON file", f"{path}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError("fleet", "a JSON object", f"{path}: line {exc.lineno}: {exc.msg}") from None
    return parse_fleet(data, Path(path).stem)


# -- the named fleets ---------------------------------------------------------------
def _mix(*, heavy: bool = False) -> list[dict[str, Any]]:
    """The one mix every named fleet starts from: 100 schedules on 3 nodes × 4 slots, load about 0.65
    before scaling. Hourly short jobs and six-hourly medium ones that may run again a while after the
    last (a cooldown), daily medium ones once a day (out of a night blackout), weekly long ones (hours)
    that may run again three days after the last, calendar nightly reports all due at 01:00, and an
    hourly calendar export with a tight deadline."""
    def body(median: str, sigma: float) -> dict[str, Any]:
        if heavy:  # the same mean, a Pareto tail of index 1.5, cut at 40× its minimum
            mean = parse_duration(median).total_seconds() * math.exp(sigma ** 2 / 2)
            return {"dist": "pareto", "scale": f"{mean / 3:.0f}s", "alpha": 1.5, "cap": f"{mean / 3 * 40:.0f}s"}
        return {"dist": "lognormal", "scale": median, "sigma": sigma}

    return [
        {"name": "hourly", "count": 40, "period": "1h", "cooldown": "40m", "durations": body("4m", 0.5),
         "failure": 0.02},
        {"name": "six-hourly", "count": 12, "period": "6h", "cooldown": "4h", "durations": body("30m", 0.5),
         "failure": 0.02},
        {"name": "daily", "count": 16, "period": "1d", "durations": body("2h", 0.6), "failure": 0.03,
         "blackouts": [{"start": "00:00", "end": "02:00"}]},
        {"name": "flaky-daily", "count": 4, "period": "1d", "durations": body("1h", 0.6), "failure": 0.25},
        {"name": "weekly", "count": 4, "period": "7d", "cooldown": "3d", "durations": body("10h", 0.3),
         "failure": 0.02},
        {"name": "nightly-report", "count": 12, "cron": "0 1 * * *", "cron_max": "5h",
         "durations": body("45m", 0.5), "failure": 0.02},
        {"name": "hourly-export", "count": 12, "cron": "30 * * * *", "cron_max": "20m",
         "durations": {"dist": "fixed", "scale": "5m"}, "failure": 0.01},
    ]


NODES = {"node-1": 4, "node-2": 4, "node-3": 4}


def _named(name: str, description: str, load: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "description": description, "nodes": NODES, "schedules": _mix(heavy=extra.pop("heavy", False)),
            "days": 3, "warmup": "6h", "load": load, **extra}


def _constraints() -> dict[str, Any]:
    """A third of the schedules excluded from node-1, a sixth from node-2 and node-3 (only node-1
    may run them): what only one node can run competes with what any can."""
    data = _named("constraints", "", 0.9)
    groups = []
    for group in data["schedules"]:
        count = group["count"]
        third, sixth = count // 3, count // 6
        groups.append({**group, "name": f"{group['name']}-any", "count": count - third - sixth})
        groups.append({**group, "name": f"{group['name']}-not1", "count": third, "dont_run_on": ["node-1"]})
        if sixth:
            groups.append({**group, "name": f"{group['name']}-only1", "count": sixth,
                           "dont_run_on": ["node-2", "node-3"]})
    return {**data, "schedules": [g for g in groups if g["count"]],
            "description": "load 0.9; a third of the schedules may not run on node-1, a sixth only on node-1"}


FLEETS: dict[str, Any] = {
    "light": lambda: _named("light", "load 0.5: capacity to spare", 0.5),
    "load-0.9": lambda: _named("load-0.9", "load 0.9: busy", 0.9),
    "load-1.2": lambda: _named("load-1.2", "load 1.2: more work than slots, some schedule must be late", 1.2),
    "lost-node": lambda: _named("lost-node", "load 0.8; node-2 lost for an hour at 36h, then back", 0.8,
                                outages=[{"node": "node-2", "at": "36h", "lasting": "1h"}]),
    "heavy-tail": lambda: _named("heavy-tail", "load 0.9; durations Pareto (index 1.5, cut at 40× the minimum)",
                                 0.9, heavy=True),
    "constraints": _constraints,
}


def fleet_named(name_or_path: str) -> Fleet:
    """A named fleet, or the fleet in a JSON file."""
    if name_or_path in FLEETS:
        return parse_fleet(FLEETS[name_or_path](), name_or_path)
    if name_or_path.endswith(".json") or Path(name_or_path).exists():
        return read_fleet(name_or_path)
    raise ValidationError("fleet", f"one of {', '.join(FLEETS)}, or a JSON fleet file", name_or_path)


# -- common random numbers ------------------------------------------------------------
class Draws:
    """Each schedule's runs, drawn in order from the schedule's own stream of the seed: the n-th run
    of a schedule lasts as long and ends the same way whatever ran before it, under any pick rule."""

    def __init__(self, fleet: Fleet, seed: int):
        self.seed = seed
        self._specs = {s.name: s for s in fleet.schedules}
        self._rngs: dict[str, np.random.Generator] = {}
        self._durations: dict[str, list[float]] = {}
        self._ok: dict[str, list[bool]] = {}
        self.taken: dict[str, int] = {}

    def _fill(self, name: str, upto: int) -> None:
        if name not in self._rngs:
            self._rngs[name] = np.random.default_rng([self.seed, zlib.crc32(name.encode())])
            self._durations[name], self._ok[name] = [], []
        spec, rng = self._specs[name], self._rngs[name]
        while len(self._durations[name]) <= upto:
            self._durations[name].extend(spec.durations.draw(rng, _CHUNK).tolist())
            self._ok[name].extend((rng.random(_CHUNK) >= spec.failure).tolist())

    def run(self, name: str, n: int) -> tuple[timedelta, bool]:
        """The n-th run's (from 0) duration and outcome (True: succeeded)."""
        self._fill(name, n)
        return timedelta(seconds=self._durations[name][n]), self._ok[name][n]

    def peek(self, name: str) -> timedelta:
        """The true duration of the schedule's next run (a clairvoyant pick's oracle)."""
        return self.run(name, self.taken.get(name, 0))[0]

    def take(self, name: str) -> tuple[timedelta, bool]:
        n = self.taken.get(name, 0)
        self.taken[name] = n + 1
        return self.run(name, n)


def phase(seed: int, spec: ScheduleSpec) -> float:
    """Where in its period a schedule starts (0 to 1): its own, or drawn from the seed (fleets begin settled)."""
    if spec.phase is not None:
        return spec.phase
    return float(np.random.default_rng([seed, zlib.crc32(spec.name.encode()), 1]).random())


__all__ = ["DISTRIBUTIONS", "FLEETS", "START", "Draws", "Durations", "Fleet", "Outage", "ScheduleSpec", "fleet_named",
           "parse_fleet", "phase", "read_fleet"]
