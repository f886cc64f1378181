"""The operator model's world: the store verbs it calls, with random yields at every statement, and the
small model that checks what the store kept.

- :class:`Jitter` and :func:`jittery` wrap a store's database so that each statement (and each read) may
  first yield the thread for a random moment: another connection's verb then runs between one verb's read
  and its write, as it can in production, where Hypothesis' stateful rules would run each verb atomically.
- :class:`Model` records what each verb answered (runs picked, ended, stolen; tasks grabbed, ended; audited
  actions) and :func:`check_round` compares the store with it when every thread waits at a barrier.
- :data:`LEGACY` holds the read-then-save pause and resume, the check-then-set retry and the enable that
  ignored runs in flight, as the console and the API had them before these became store verbs: the model
  finds their lost run ends, their events apart from their actions, and their second running copies.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from ostinato.domain.audit import AuditEvent, target_of
from ostinato.domain.errors import ConflictError, NotFoundError
from ostinato.domain.schedules import RunStatus, Schedule
from ostinato.domain.task_actions import retry_refusal
from ostinato.domain.tasks import TaskRunStatus, TaskStatus

#: a run of a task still going
IN_FLIGHT_RUNS = frozenset({TaskRunStatus.SCHEDULED, TaskRunStatus.STARTED})
#: the statuses of a schedule's run that moved the schedule (a late end of a stolen run does not)
MOVING_ENDS = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.STOPPED, RunStatus.LOST})


class Jitter:
    """A random yield before a statement: mostly none, sometimes a sleep of up to ``longest`` seconds."""

    def __init__(self, seed: int, *, share: float = 0.3, longest: float = 0.002):
        self.random, self.share, self.longest = random.Random(seed), share, longest
        self.lock = threading.Lock()

    def pause(self) -> None:
        with self.lock:
            draw, length = self.random.random(), self.random.random() * self.longest
        time.sleep(length if draw < self.share else 0)


class _Conn:
    """A connection whose statements each yield first."""

    def __init__(self, conn: Any, jitter: Jitter):
        self._conn, self._jitter = conn, jitter

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        self._jitter.pause()
        return self._conn.execute(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _real(value: Any) -> Any:
    return value._conn if isinstance(value, _Conn) else value


class _Dialect:
    """The store's dialect, its transactions' statements and its reads each yielding first."""

    def __init__(self, db: Any, jitter: Jitter):
        self._db, self._jitter = db, jitter

    @contextmanager
    def write(self, **kwargs: Any) -> Iterator[_Conn]:
        self._jitter.pause()
        with self._db.write(**kwargs) as conn:
            yield _Conn(conn, self._jitter)

    def read(self, *args: Any, **kwargs: Any) -> Any:
        self._jitter.pause()
        return self._db.read(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._db, name)
        if not callable(value):
            return value

        def unwrapped(*args: Any, **kwargs: Any) -> Any:  # the dialect's own methods get its own connection
            return value(*(_real(a) for a in args), **{k: _real(v) for k, v in kwargs.items()})
        return unwrapped


def jittery(store: Any, jitter: Jitter) -> Any:
    """``store`` with a yield before each of its statements (it keeps its own connection)."""
    store.db = _Dialect(store.db, jitter)
    return store


# -- the verbs as the operator paths called them before they were store verbs ---------------------------------
def legacy_set_enabled(store: Any, name: str, enabled: bool, now: datetime, actor: str) -> None:
    """Read the schedule, then save the whole row with ``enabled`` changed, then record the audit event."""
    found = store.get_schedule(name)
    if found is None:
        raise NotFoundError("schedule", name)
    done = "done: resumed" if enabled else "done: paused"
    if found.enabled == enabled:
        done = "done: unchanged, it was not paused" if enabled else "done: unchanged, it was already paused"
    else:
        store.save_schedule(replace(found, enabled=enabled), now)
    store.record_audit(AuditEvent(now, actor, "schedule.resume" if enabled else "schedule.pause",
                                  target_of("schedule", name), done))


def legacy_retry(store: Any, run_id: int, now: datetime, actor: str) -> None:
    """Check the run and its task, then set the task pending, then record the audit event."""
    runs = store.list_task_runs(after_id=run_id - 1, limit=1)
    if not runs or runs[0].id != run_id:
        raise NotFoundError("task run", run_id)
    [task] = store.get_tasks([runs[0].task])
    refusal = retry_refusal(runs[0], task)
    if refusal is not None:
        raise ConflictError(refusal)
    if not store.set_task_status([task.id], TaskStatus.NEXT_RUN_NOT_SCHEDULED, next_run=now):
        raise ConflictError("changed meanwhile")
    store.record_audit(AuditEvent(now, actor, "task.retry", target_of("task", task.id), "done"))


def legacy_enable(store: Any, task: int, now: datetime, actor: str) -> list[int]:
    """Set the task pending whatever runs it has in flight, then record the audit event."""
    if not store.set_task_status([task], TaskStatus.NEXT_RUN_NOT_SCHEDULED, next_run=now):
        return []
    store.record_audit(AuditEvent(now, actor, "task.enable", target_of("task", task), "done"))
    return [task]


@dataclass(frozen=True)
class Verbs:
    """How the harness pauses, resumes, enables and retries: the store's verbs, or the paths of before."""

    pause: Callable[[Any, str, datetime, str], Any]
    resume: Callable[[Any, str, datetime, str], Any]
    enable: Callable[[Any, int, datetime, str], list[int]]
    retry: Callable[[Any, int, datetime, str], Any]


VERBS = Verbs(pause=lambda store, name, now, actor: store.pause_schedule(name, now, actor=actor),
              resume=lambda store, name, now, actor: store.resume_schedule(name, now, actor=actor),
              enable=lambda store, task, now, actor: store.respawn_tasks([task], now, next_run=now, actor=actor),
              retry=lambda store, run, now, actor: store.retry_task_run(run, now, actor=actor))
LEGACY = Verbs(pause=lambda store, name, now, actor: legacy_set_enabled(store, name, False, now, actor),
               resume=lambda store, name, now, actor: legacy_set_enabled(store, name, True, now, actor),
               enable=legacy_enable, retry=legacy_retry)


@dataclass
class Model:
    """What the verbs answered in one round, kept under :attr:`lock` (see the module docstring)."""

    schedules: list[str]
    tasks: list[int]
    lock: threading.RLock = field(default_factory=threading.RLock)
    #: per schedule, the tags of its runs picked and not yet asked to end, and those being ended
    live: dict[str, set[str]] = field(default_factory=dict)
    ending: dict[str, set[str]] = field(default_factory=dict)
    #: every tag picked, to its schedule
    picked: dict[str, str] = field(default_factory=dict)
    #: tags whose end the store accepted, with the status told; tags whose end it refused (taken over)
    ended: dict[str, RunStatus] = field(default_factory=dict)
    refused_ends: set[str] = field(default_factory=set)
    #: per task, its runs grabbed and not yet asked to end; every run grabbed to its task; runs ended, as told
    in_flight: dict[int, set[int]] = field(default_factory=dict)
    grabbed: dict[int, int] = field(default_factory=dict)
    task_ends: dict[int, TaskRunStatus] = field(default_factory=dict)
    #: audited actions answered without an error, by (action, target)
    audited: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: audited actions refused (a ConflictError or NotFoundError: nothing changed, no event), by action
    refused: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    operations: Counter[str] = field(default_factory=Counter)

    def violation(self, text: str) -> None:
        with self.lock:
            self.violations.append(text)


def _schedule_runs(store: Any, name: str) -> list[Any]:
    runs, before = [], None
    while True:
        page = store.list_schedule_runs(name, limit=500, before_id=before)
        runs += page
        if len(page) < 500:
            return runs
        before = page[-1].id


def _events(store: Any, target: str) -> list[AuditEvent]:
    events, before = [], None
    while True:
        page = store.list_audit(target=target, limit=500, before_id=before)
        events += page
        if len(page) < 500:
            return list(reversed(events))
        before = page[-1].id


def check_schedule(store: Any, model: Model, name: str) -> list[str]:
    """Never two running copies; no run end lost; each pause and resume event true, and all there."""
    problems: list[str] = []
    schedule: Schedule | None = store.get_schedule(name)
    assert schedule is not None, name
    runs = _schedule_runs(store, name)
    tags = {run.owner_tag: run for run in runs}
    running = [run.owner_tag for run in runs if run.status is RunStatus.RUNNING]
    picked = {tag for tag, of in model.picked.items() if of == name}
    if set(tags) != picked:
        problems.append(f"{name}: runs kept {sorted(set(tags) - picked)} never picked, "
                        f"picked {sorted(picked - set(tags))} not kept")
    if len(running) > 1:
        problems.append(f"{name}: two running copies at once: {running}")
    if schedule.owner_tag != (running[0] if running else None):
        problems.append(f"{name}: owned by {schedule.owner_tag!r} while its running run is {running or None} "
                        "(a run's end lost)")
    for tag, told in model.ended.items():
        if tag in tags and tags[tag].status is not told:
            problems.append(f"{name}: run {tag} ended {told.value}, kept as {tags[tag].status.value} (its end lost)")
    moved = [run.ended_at for run in runs if run.status in MOVING_ENDS and run.ended_at is not None]
    if schedule.last_end_at != (max(moved) if moved else None):
        problems.append(f"{name}: last_end_at {schedule.last_end_at} but its runs last ended "
                        f"{max(moved) if moved else None} (a run's end lost)")
    enabled = True
    for event in _events(store, target_of("schedule", name)):
        if event.action not in ("schedule.pause", "schedule.resume"):
            continue
        wanted = event.action == "schedule.resume"
        changed = not event.outcome.startswith("done: unchanged")
        if changed == (enabled == wanted):
            problems.append(f"{name}: event {event.id} says {event.outcome!r} while it was "
                            f"{'running' if enabled else 'paused'} (an event apart from its action)")
        enabled = wanted
    if enabled != schedule.enabled:
        problems.append(f"{name}: its events leave it {'enabled' if enabled else 'paused'}, the store says "
                        f"{'enabled' if schedule.enabled else 'paused'} (an action without its event)")
    return problems


def check_task(store: Any, model: Model, task_id: int) -> list[str]:
    """Never two runs of one task in flight; each run kept as grabbed and ended as told."""
    problems: list[str] = []
    runs = store.list_task_runs(task_id=task_id, limit=100_000)
    kept = {run.id: run for run in runs}
    grabbed = {run for run, task in model.grabbed.items() if task == task_id}
    if set(kept) != grabbed:
        problems.append(f"task {task_id}: runs kept {sorted(set(kept) - grabbed)} never grabbed, "
                        f"grabbed {sorted(grabbed - set(kept))} not kept")
    flying = sorted(run.id for run in runs if run.status in IN_FLIGHT_RUNS)
    if len(flying) > 1:
        problems.append(f"task {task_id}: two runs in flight at once: {flying}")
    for run_id, told in model.task_ends.items():
        if run_id in kept and kept[run_id].status is not told:
            problems.append(f"task {task_id}: run {run_id} ended {told.value}, kept as {kept[run_id].status.value}")
    return problems


def check_audit(store: Any, model: Model) -> list[str]:
    """Each audited action answered has its one event, and each event its action."""
    kept: Counter[tuple[str, str]] = Counter()
    for target in [target_of("schedule", n) for n in model.schedules] + [target_of("task", t) for t in model.tasks]:
        kept.update((event.action, event.target) for event in _events(store, target))
    return [f"{action} on {target}: {model.audited[(action, target)]} answered, {kept[(action, target)]} events"
            for action, target in sorted(set(kept) | set(model.audited))
            if kept[(action, target)] != model.audited[(action, target)]]


def check_round(store: Any, model: Model) -> list[str]:
    """Every check of the round, on the store as the threads left it (they all wait)."""
    problems = [p for name in model.schedules for p in check_schedule(store, model, name)]
    problems += [p for task in model.tasks for p in check_task(store, model, task)]
    return problems + check_audit(store, model)


__all__ = ["LEGACY", "VERBS", "Jitter", "Model", "Verbs", "check_round", "jittery"]
