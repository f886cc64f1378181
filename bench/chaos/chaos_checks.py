"""The chaos harness's history checks.

- :func:`job_intervals` and :func:`overlaps`: the schedules' own record
  (``schedule_runs.log``, written by the jobs) read into work intervals, and
  the pairs of runs of one schedule that worked at the same time;
- :class:`ConditionWatch`: samples every schedule's condition and keeps the
  episodes during which it was not OK;
- :func:`run_history`: Ostinato's own run table: runs by status, steals,
  lost runs and how long each took to recover, and every fault that touched
  each schedule (a run failed, a run lost with its owner, the database away);
- :func:`recoveries`: for each not-OK episode, how long the schedule took to
  get back to OK after the last fault that touched it;
- :func:`stuck_task_runs`: task runs still ``scheduled`` or ``started``;
- :func:`replay_journal`: the visit statuses the loaders wrote, fed twice
  through ``record_visit_statuses``; the second time must change nothing.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.chaos.chaos_journal import stats_rows
from bench.chaos.chaos_supervisor import Event
from ostinato.domain.schedules import RunStatus, State, get_schedule_condition
from ostinato.domain.tasks import TaskRunStatus
from ostinato.domain.visits import FeedbackPolicy, parse_visit_status
from ostinato.store.postgresql import PostgresStore


# -- the jobs' own record -------------------------------------------------------------------
@dataclass(frozen=True)
class JobRun:
    name: str
    token: str
    pid: int
    first: float
    last: float
    #: how the end is known: "record" (the job wrote it), "progress" (it died, and its progress file
    #: says when it last found itself free to work), "killed" (it died before its first step), "unknown"
    end: str


def job_intervals(record_dir: Path, killed: dict[int, float]) -> list[JobRun]:
    starts: dict[str, tuple[str, int, float]] = {}
    ends: dict[str, tuple[float, float]] = {}
    path = record_dir / "schedule_runs.log"
    for line in path.read_text().splitlines() if path.exists() else []:
        parts = line.split()
        if parts[0] == "start" and len(parts) == 5:
            starts[parts[2]] = (parts[1], int(parts[3]), float(parts[4]))
        elif parts[0] == "end" and len(parts) == 7:
            ends[parts[2]] = (float(parts[4]), float(parts[5]))
    runs = []
    for token, (name, pid, first) in starts.items():
        if token in ends:
            runs.append(JobRun(name, token, pid, first, ends[token][1], "record"))
        elif pid in killed:
            progress = record_dir / "progress" / token
            text = progress.read_text().strip() if progress.exists() else ""
            if text:
                runs.append(JobRun(name, token, pid, first, min(float(text), killed[pid]), "progress"))
            else:
                runs.append(JobRun(name, token, pid, first, first, "killed"))
        else:
            runs.append(JobRun(name, token, pid, first, math.inf, "unknown"))
    return runs


def overlaps(runs: list[JobRun]) -> list[tuple[JobRun, JobRun]]:
    """Pairs of runs of one schedule that both worked at some moment."""
    by_name: dict[str, list[JobRun]] = defaultdict(list)
    for run in runs:
        by_name[run.name].append(run)
    found = []
    for intervals in by_name.values():
        intervals.sort(key=lambda r: r.first)
        latest = intervals[0]
        for run in intervals[1:]:
            if run.first < latest.last:
                found.append((latest, run))
            if run.last > latest.last:
                latest = run
    return found


# -- conditions over time -------------------------------------------------------------------
@dataclass
class ConditionWatch:
    """Every schedule's condition, sampled; the episodes (start, end, worst state) when it was not OK."""

    ping_timeout: timedelta
    open: dict[str, tuple[float, State]] = field(default_factory=dict)
    episodes: list[tuple[str, float, float, State]] = field(default_factory=list)
    samples: int = 0
    last_states: Counter = field(default_factory=Counter)
    #: (schedule, episode start) -> the reasons its samples gave, counted
    reasons: dict[tuple[str, float], Counter] = field(default_factory=dict)
    #: the longest time between two samples taken (the watch is blind in between)
    longest_gap: float = 0.0
    last_sample: float | None = None

    def sample(self, store: PostgresStore, at: float) -> None:
        now = datetime.fromtimestamp(at, UTC)
        conditions = []
        after = ""
        while batch := store.list_schedules(after=after, limit=1000):
            conditions += [(s.name, get_schedule_condition(s, now, ping_timeout=self.ping_timeout)) for s in batch]
            after = batch[-1].name
        states: Counter = Counter()
        for name, condition in conditions:  # seen only once the whole sample is read
            states[condition.state.value] += 1
            self._see(name, condition.state, at)
            if name in self.open:
                self.reasons.setdefault((name, self.open[name][0]), Counter())[
                    f"{condition.state.value} {condition.reason.value if condition.reason else ''}".strip()] += 1
        if self.last_sample is not None:
            self.longest_gap = max(self.longest_gap, at - self.last_sample)
        self.last_sample = at
        self.samples += 1
        self.last_states = states

    def _see(self, name: str, state: State, at: float) -> None:
        if state is State.OK:
            if name in self.open:
                began, worst = self.open.pop(name)
                self.episodes.append((name, began, at, worst))
        elif name in self.open:
            began, worst = self.open[name]
            self.open[name] = (began, state if state.rank < worst.rank else worst)
        else:
            self.open[name] = (at, state)

    def longest(self, at: float) -> tuple[str, float, State] | None:
        """The longest not-OK episode, those still open counting until ``at``."""
        spans = [(end - began, name, worst) for name, began, end, worst in self.episodes]
        spans += [(at - began, name, worst) for name, (began, worst) in self.open.items()]
        if not spans:
            return None
        seconds, name, worst = max(spans)
        return name, seconds, worst


# -- Ostinato's run table ---------------------------------------------------------------------
@dataclass
class RunHistory:
    by_status: Counter
    steals: int  # taken over by the steal protocol (owner silent)
    released: int  # ended as lost when their node's scheduler restarted
    lost_recovered: int
    lost_unrecovered: list[str]
    longest_recovery: float
    longest_recovery_of: str
    #: schedule -> the moments faults touched it: a run's failure, the death of a lost run's owner
    faults: dict[str, list[float]] = field(default_factory=dict)


def run_history(store: PostgresStore, names: list[str], events: list[Event]) -> RunHistory:
    """Runs by status; each lost run recovered when a later run of its schedule started, the
    recovery lasting from its owner's last fault (kill, pause, database stop) to that start."""
    faults = [e for e in events if e.kind in ("kill", "exit", "pause", "pg_stop")]
    by_status: Counter = Counter()
    steals = released = recovered = 0
    unrecovered: list[str] = []
    longest, longest_of = 0.0, ""
    touched: dict[str, list[float]] = defaultdict(list)
    for name in names:
        runs = []
        before = None
        while batch := store.list_schedule_runs(name, limit=1000, before_id=before):
            runs += batch
            before = batch[-1].id
        runs.sort(key=lambda r: r.id)
        for index, run in enumerate(runs):
            by_status[run.status.value] += 1
            if run.status is RunStatus.FAILED and run.ended_at is not None:
                touched[name].append(run.ended_at.timestamp())
            if run.status is not RunStatus.LOST:
                continue
            reason = str(run.detail.get("reason", ""))
            steals += reason.startswith("no ping")
            released += reason.endswith("restarted")
            later = next((r for r in runs[index + 1:]), None)
            if later is None:
                unrecovered.append(name)
                continue
            recovered += 1
            started, ended = run.started_at.timestamp(), run.ended_at.timestamp() if run.ended_at else None
            cause = [e.at for e in faults if started <= e.at <= (ended or e.at)
                     and (e.kind == "pg_stop" or e.process == run.owner_node or e.process == "")]
            death = max(cause) if cause else started
            touched[name].append(death)
            took = later.started_at.timestamp() - death
            if took > longest:
                longest, longest_of = took, name
    return RunHistory(by_status, steals, released, recovered, unrecovered, longest, longest_of, dict(touched))


@dataclass(frozen=True)
class Recovery:
    name: str
    began: float
    ended: float
    faults: int  # faults that touched the schedule from shortly before the episode to its end
    seconds: float  # from the last of them to OK (the whole episode when none touched it)


def recoveries(watch: ConditionWatch, at: float, faults: dict[str, list[float]], everyone: list[float],
               reach: float) -> list[Recovery]:
    """Each not-OK episode (open ones until ``at``) with the time from its last fault to its end. A fault counts
    from ``reach`` seconds before the episode began (a run lost then makes the schedule stale up to a period
    later: ``reach`` is the longest period); an episode no fault reached counts whole;
    ``everyone`` holds the faults that touch every schedule (the database back after an outage, a standby
    promoted)."""
    spans = [(name, began, end) for name, began, end, _ in watch.episodes]
    spans += [(name, began, at) for name, (began, _) in watch.open.items()]
    found = []
    for name, began, end in spans:
        hits = [t for t in faults.get(name, []) + everyone if began - reach <= t <= end]
        found.append(Recovery(name, began, end, len(hits), end - max(hits) if hits else end - began))
    return found


# -- task runs ----------------------------------------------------------------------------------
def task_runs(store: PostgresStore, statuses: list[TaskRunStatus]) -> list[Any]:
    runs, after = [], 0
    while batch := store.list_task_runs(status=statuses, after_id=after, limit=1000):
        runs += batch
        after = batch[-1].id
    return runs


def stuck_task_runs(store: PostgresStore, older_than: datetime | None = None) -> list[Any]:
    """Task runs still scheduled or started (scheduled before ``older_than`` when given)."""
    runs = task_runs(store, [TaskRunStatus.SCHEDULED, TaskRunStatus.STARTED])
    if older_than is not None:
        runs = [r for r in runs if r.scheduled is not None and r.scheduled < older_than]
    return runs


# -- the journal, replayed ------------------------------------------------------------------------
@dataclass
class Replay:
    statuses: int
    changed_first: int  # rows the first replay changed: statuses whose feedback had been lost
    changed_second: int  # rows the second replay changed: must be 0
    rows_differ: int  # rows that differ after the second replay from after the first: must be 0


def replay_journal(store: PostgresStore, record_dir: Path, policy: FeedbackPolicy) -> Replay:
    path = record_dir / "journal.jsonl"
    statuses = [parse_visit_status(json.loads(line)) for line in path.read_text().splitlines()] if path.exists() else []
    keys = sorted({(s.origin, s.type) for s in statuses})
    before = stats_rows(store, keys)
    first = store.record_visit_statuses(statuses, policy, now=datetime.now(UTC))
    middle = stats_rows(store, keys)
    second = store.record_visit_statuses(statuses, policy, now=datetime.now(UTC))
    after = stats_rows(store, keys)
    changed_first = sum(1 for k in keys if before.get(k) != middle.get(k))
    differ = sum(1 for k in keys if middle.get(k) != after.get(k))
    del first
    return Replay(len(statuses), changed_first, second, differ)
