"""The operator verbs, model-checked under real concurrency: random sequences of every schedule and task
verb (pause, resume, patch, run now, start, ping, end, steal; grab, end, disable, enable, retry) from
several threads, each with its own connection to one database, with a random yield before every
statement, so that one verb runs between another's read and its write. At the end of each round every
thread waits at a barrier and the store is checked against the small model of
``operator_model_world.py``: no run end lost, never two running copies, every action with its audit
event and every event with its action.

    python bench/sim/operator_model.py --operations 100000                  # SQLite and PostgreSQL
    python bench/sim/operator_model.py --operations 8000 --legacy pause,resume    # the verbs of before

``--legacy`` pauses, resumes, enables and retries (or only those named) as the console and the API did
before these were store verbs (read, then save the whole row, then record the event apart; an enable
blind to runs in flight): the model finds their lost run ends, second copies and events apart.
It prints one JSON line per store (operations by verb, violations, seconds) and exits 1 on any violation.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.sim.operator_model_world import LEGACY, VERBS, Jitter, Model, Verbs, check_round, jittery
from ostinato.domain.audit import target_of
from ostinato.domain.errors import ConflictError, NotFoundError
from ostinato.domain.schedules import RunStatus, Schedule, ScheduleKind, ScheduleTiming
from ostinato.domain.tasks import NewTask, RunEvent, TaskArguments, TaskPolicy, TaskRunStatus, TaskType

T0 = datetime(2026, 1, 5, tzinfo=UTC)
#: the clock moves this much at every operation, and each round starts a day after the one before
STEP, ROUND_SPAN = timedelta(seconds=5), timedelta(days=1)
TIMING = ScheduleTiming(ping_timeout=timedelta(seconds=60), steal_grace=timedelta(seconds=30),
                        backoff=(timedelta(seconds=10), timedelta(seconds=20), timedelta(seconds=40)))
PERIODS = (timedelta(minutes=2), timedelta(minutes=3))
#: how often each verb is drawn
WEIGHTS = {"start": 14, "ping": 8, "end": 14, "steal": 6, "pause": 6, "resume": 8, "patch": 4, "run_now": 5,
           "grab": 10, "task_end": 10, "disable": 5, "enable": 6, "retry": 4}
#: what a refusal may be: the answers of a verb asked what it cannot do (the model counts no event then)
REFUSALS = (ConflictError, NotFoundError)


class Clock:
    """The shared clock of a round: each operation takes the next step."""

    def __init__(self, start: datetime):
        self.start, self.ticks, self.lock = start, 0, threading.Lock()

    def now(self) -> datetime:
        with self.lock:
            self.ticks += 1
            return self.start + self.ticks * STEP


@dataclasses.dataclass
class Round:
    """One round's objects, clock and model, shared by its threads."""

    number: int
    task_type: str
    model: Model
    clock: Clock
    verbs: Verbs


def set_up(store: Any, number: int, verbs: Verbs) -> Round:
    start = T0 + number * ROUND_SPAN
    task_type = f"model-{number}"
    store.create_task_type(TaskType(task_type, "the operator model's tasks", "model", default_interval=timedelta(
        seconds=30), min_interval=timedelta(seconds=30), max_interval=timedelta(minutes=5), backoff_factor=2.0,
        num_retries=1, retry_delay=timedelta(seconds=20)))
    tasks = store.create_tasks([
        NewTask(task_type, start, TaskArguments((i,), {}), policy=TaskPolicy.RECURRING if i < 2 else TaskPolicy.ONESHOT)
        for i in range(4)])
    names = [f"r{number}-s{i}" for i in range(3)]
    for name in names:
        store.create_schedule(Schedule(name=name, kind=ScheduleKind.PERIODIC, task_type=task_type,
                                       created_at=start - timedelta(hours=1), scheduling_period=PERIODS[0],
                                       failure_count=0), start, TIMING)
    model = Model(schedules=names, tasks=[t.id for t in tasks])
    model.live = {n: set() for n in names}
    model.ending = {n: set() for n in names}
    model.in_flight = {t.id: set() for t in tasks}
    return Round(number, task_type, model, Clock(start), verbs)


def tear_down(store: Any, current: Round) -> None:
    """The round's schedules deleted (their runs with them) and its tasks disabled: the next round's
    picks and grabs see none of them."""
    now = current.clock.now()
    for name in current.model.schedules:
        store.delete_schedule(name, now, actor="model")
    store.disable_tasks(current.model.tasks, now, actor="model")


class Worker:
    """One thread's connection and its draws."""

    def __init__(self, index: int, store: Any, seed: int):
        self.index, self.store, self.random, self.count = index, store, random.Random(seed), 0
        self.verbs = list(WEIGHTS)
        self.weights = [WEIGHTS[v] for v in self.verbs]

    def step(self, current: Round) -> None:
        verb = self.random.choices(self.verbs, self.weights)[0]
        getattr(self, verb)(current, current.clock.now)  # each verb reads the clock once it has chosen its target
        with current.model.lock:
            current.model.operations[verb] += 1

    def _audited(self, current: Round, action: str, target: str, call: Callable[[], Any]) -> Any:
        try:
            answer = call()
        except REFUSALS:
            with current.model.lock:
                current.model.refused[action] += 1
            return None
        with current.model.lock:
            current.model.audited[(action, target)] += 1
        return answer

    # -- schedules --------------------------------------------------------------------------------------
    def _name(self, current: Round) -> str:
        return self.random.choice(current.model.schedules)

    def start(self, current: Round, clock: Callable[[], datetime]) -> None:
        self.count += 1
        tag = f"r{current.number}-w{self.index}-{self.count}"
        now = clock()
        picked = self.store.pick_schedule(node="n1", owner_name=f"w{self.index}", tag=tag, now=now)
        if picked is None:
            return
        name = picked[0].name
        model = current.model
        with model.lock:
            model.picked[tag] = name
            if not model.live[name]:
                model.live[name].add(tag)
                return
            # a run the model still holds: both running in the store at once is two copies; else one of them was
            # taken over before its picker told the model (a thread held up past the steal's grace)
            runs = {r.owner_tag: r for r in self.store.list_schedule_runs(name, limit=50)}
            if runs[tag].status is not RunStatus.RUNNING:
                return
            for other in sorted(model.live[name]):
                if other in runs and runs[other].status is RunStatus.RUNNING:
                    model.violations.append(f"{name}: {tag} picked at {now:%H:%M:%S} while {other} still runs (since "
                                            f"{runs[other].started_at:%H:%M:%S}): two running copies")
                else:
                    model.live[name].discard(other)
            model.live[name].add(tag)

    def _live(self, current: Round) -> tuple[str, str] | None:
        with current.model.lock:
            going = [(n, t) for n, tags in current.model.live.items() for t in sorted(tags)]
        return self.random.choice(going) if going else None

    def ping(self, current: Round, clock: Callable[[], datetime]) -> None:
        found = self._live(current)
        if found is not None:
            now = clock()
            self.store.ping_schedule(found[0], found[1], now)

    def end(self, current: Round, clock: Callable[[], datetime]) -> None:
        model = current.model
        with model.lock:
            going = [(n, t) for n, tags in model.live.items() for t in sorted(tags)]
            if not going:
                return
            name, tag = self.random.choice(going)
            model.live[name].discard(tag)
            model.ending[name].add(tag)
        told = self.random.choice((RunStatus.SUCCEEDED, RunStatus.FAILED))
        now = clock()
        kept = self.store.end_schedule_run(name, tag, status=told, ended=now, timing=TIMING)
        with model.lock:
            model.ending[name].discard(tag)
            if kept:
                model.ended[tag] = told
            else:
                model.refused_ends.add(tag)

    def steal(self, current: Round, clock: Callable[[], datetime]) -> None:
        model = current.model
        with model.lock:  # the model learns what was taken at once: no pick of it registers before
            now = clock()
            taken = self.store.steal_silent_schedules(now, TIMING)["taken"]
            for name in taken:
                if name in model.live:
                    model.live[name].clear()

    def pause(self, current: Round, clock: Callable[[], datetime]) -> None:
        name = self._name(current)
        now = clock()
        self._audited(current, "schedule.pause", target_of("schedule", name),
                      lambda: current.verbs.pause(self.store, name, now, f"w{self.index}"))

    def resume(self, current: Round, clock: Callable[[], datetime]) -> None:
        name = self._name(current)
        now = clock()
        self._audited(current, "schedule.resume", target_of("schedule", name),
                      lambda: current.verbs.resume(self.store, name, now, f"w{self.index}"))

    def patch(self, current: Round, clock: Callable[[], datetime]) -> None:
        name = self._name(current)
        seen = self.store.get_schedule(name)  # the form the operator edits: its definition only is applied
        if seen is None:
            return
        changed = dataclasses.replace(seen, scheduling_period=self.random.choice(PERIODS))
        now = clock()
        self._audited(current, "schedule.update", target_of("schedule", name),
                      lambda: self.store.update_schedule(changed, now, TIMING, actor=f"w{self.index}"))

    def run_now(self, current: Round, clock: Callable[[], datetime]) -> None:
        name = self._name(current)
        now = clock()
        self._audited(current, "schedule.run-now", target_of("schedule", name),
                      lambda: self.store.request_schedule_run(name, now, TIMING, actor=f"w{self.index}"))

    # -- tasks -------------------------------------------------------------------------------------------
    def grab(self, current: Round, clock: Callable[[], datetime]) -> None:
        now = clock()
        grabbed = self.store.grab_ready_tasks(current.task_type, now, 2, backend_id=f"w{self.index}")
        model = current.model
        with model.lock:
            for scheduled in grabbed:
                task, run = scheduled.task.id, scheduled.run.id
                model.grabbed[run] = task
                others = model.in_flight.setdefault(task, set())
                if others:
                    model.violations.append(f"task {task}: run {run} grabbed while {sorted(others)} in flight: "
                                            "two running copies")
                others.add(run)

    def task_end(self, current: Round, clock: Callable[[], datetime]) -> None:
        model = current.model
        with model.lock:
            going = [(t, r) for t, runs in model.in_flight.items() for r in sorted(runs)]
            if not going:
                return
            task, run = self.random.choice(going)
            model.in_flight[task].discard(run)
        told = self.random.choice((TaskRunStatus.EVENTFUL, TaskRunStatus.UNEVENTFUL, TaskRunStatus.FAILED,
                                   TaskRunStatus.PERMFAILED))
        now = clock()
        self.store.record_run_events([RunEvent(run, TaskRunStatus.STARTED, now),
                                      RunEvent(run, told, now + timedelta(seconds=1))])
        with model.lock:
            model.task_ends[run] = told

    def disable(self, current: Round, clock: Callable[[], datetime]) -> None:
        task = self.random.choice(current.model.tasks)
        now = clock()
        changed = self.store.disable_tasks([task], now, actor=f"w{self.index}")
        with current.model.lock:
            current.model.audited[("task.disable", target_of("task", task))] += len(changed)

    def enable(self, current: Round, clock: Callable[[], datetime]) -> None:
        task = self.random.choice(current.model.tasks)
        now = clock()
        changed = current.verbs.enable(self.store, task, now, f"w{self.index}")
        with current.model.lock:
            current.model.audited[("task.enable", target_of("task", task))] += len(changed)

    def retry(self, current: Round, clock: Callable[[], datetime]) -> None:
        with current.model.lock:
            ended = [run for run, told in current.model.task_ends.items()
                     if told in (TaskRunStatus.FAILED, TaskRunStatus.PERMFAILED)]
        if not ended:
            return
        run = self.random.choice(ended)
        task = current.model.grabbed[run]
        now = clock()
        self._audited(current, "task.retry", target_of("task", task),
                      lambda: current.verbs.retry(self.store, run, now, f"w{self.index}"))


#: each kind of violation, by the words its checks use
KINDS = {"run end lost": ("end lost",), "two running copies": ("two running copies", "two runs in flight"),
         "action and event apart": ("event", "events")}


def kind_of(violation: str) -> str:
    """The kind of a violation (see :data:`KINDS`), else ``other``."""
    return next((kind for kind, words in KINDS.items() if any(w in violation for w in words)), "other")


def run_store(open_store: Callable[[], Any], *, operations: int, threads: int, per_round: int, seed: int,
              verbs: Verbs, stop_at_first: bool = False) -> dict[str, Any]:
    """The model run on one database (``open_store`` opens a new connection to it): its figures."""
    stores = [jittery(open_store(), Jitter(seed * 100 + i)) for i in range(threads)]
    plain = open_store()
    workers = [Worker(i, store, seed * 1000 + i) for i, store in enumerate(stores)]
    totals: dict[str, int] = {}
    refused: dict[str, int] = {}
    audited: dict[str, int] = {}
    violations: list[str] = []
    started, done, number = time.monotonic(), 0, 0
    errors: list[BaseException] = []
    try:
        while done < operations and not (stop_at_first and violations):
            current = set_up(plain, number, verbs)
            share = max(1, min(per_round, operations - done) // threads)

            def work(worker: Worker, current: Round = current, share: int = share) -> None:
                try:
                    for _ in range(share):
                        worker.step(current)
                except BaseException as exc:
                    errors.append(exc)

            pool = [threading.Thread(target=work, args=(w,)) for w in workers]
            for thread in pool:
                thread.start()
            for thread in pool:
                thread.join()
            if errors:
                raise errors[0]
            found = current.model.violations + check_round(plain, current.model)
            violations += [f"round {number}: {text}" for text in found]
            for verb, count in current.model.operations.items():
                totals[verb] = totals.get(verb, 0) + count
            for action, count in current.model.refused.items():
                refused[action] = refused.get(action, 0) + count
            for (action, _), count in current.model.audited.items():
                audited[action] = audited.get(action, 0) + count
            done += share * threads
            tear_down(plain, current)
            number += 1
    finally:
        for store in [*stores, plain]:
            store.close()
    kinds: dict[str, int] = {}
    for violation in violations:
        kinds[kind_of(violation)] = kinds.get(kind_of(violation), 0) + 1
    return {"operations": done, "rounds": number, "threads": threads, "by_verb": dict(sorted(totals.items())),
            "violations_by_kind": kinds,
            "audited": dict(sorted(audited.items())), "refused": dict(sorted(refused.items())),
            "violations": len(violations), "first_violations": violations[:10],
            "seconds": round(time.monotonic() - started, 1)}


def opener(kind: str, where: str) -> Callable[[], Any]:
    if kind == "sqlite":
        from ostinato.store.sqlite import SQLiteStore
        return lambda: SQLiteStore(Path(where))
    from ostinato.store.postgresql import PostgresStore
    return lambda: PostgresStore(where)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--operations", type=int, default=100_000, help="operations per store")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--per-round", type=int, default=400, help="operations between two checks")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--store", action="append", choices=("sqlite", "postgresql"),
                        help="the stores to run on (both by default)")
    parser.add_argument("--legacy", nargs="?", const="pause,resume,enable,retry", default="", metavar="VERBS",
                        help="these verbs (all four by default: pause, resume, enable, retry) as before the store verbs")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    old = [v.strip() for v in args.legacy.split(",") if v.strip()]
    if unknown := sorted(set(old) - {f.name for f in dataclasses.fields(Verbs)}):
        raise SystemExit(f"--legacy: expected some of pause, resume, enable, retry, got {', '.join(unknown)}")
    verbs = dataclasses.replace(VERBS, **{v: getattr(LEGACY, v) for v in old})
    failed = False
    with tempfile.TemporaryDirectory(prefix="operator-model-") as work:
        for kind in args.store or ["sqlite", "postgresql"]:
            if kind == "sqlite":
                from ostinato.store.sqlite import SQLiteStore
                path = Path(work) / "model.db"
                SQLiteStore(path).init_schema()
                figures = run_store(opener("sqlite", str(path)), operations=args.operations, threads=args.threads,
                                    per_round=args.per_round, seed=args.seed, verbs=verbs)
            else:
                from test_servers.postgres import PostgresCluster
                with PostgresCluster() as cluster:
                    dsn = cluster.dsn("postgres")
                    from ostinato.store.postgresql import PostgresStore
                    store = PostgresStore(dsn)
                    store.init_schema()
                    store.close()
                    figures = run_store(opener("postgresql", dsn), operations=args.operations,
                                        threads=args.threads, per_round=args.per_round, seed=args.seed, verbs=verbs)
            failed = failed or figures["violations"] > 0
            print(json.dumps({"store": kind, "legacy": old, "seed": args.seed, **figures}), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
