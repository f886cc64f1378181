#!/usr/bin/env python3
"""The chaos harness (docs/reference/harnesses.md): Ostinato on PostgreSQL while things break on purpose.

``bench/chaos/chaos.py --minutes 10`` starts a private PostgreSQL cluster, sets up
500 schedules, task types and tasks, and 100,000 origins with a simulated
loader (``chaos_fixtures``), runs four ``ostinato scheduler`` processes, an
``ostinato runner`` and an ``ostinato orchestrator`` (``chaos_supervisor``),
and for the given minutes kills a random one every few seconds (and starts
it again), pauses one scheduler (SIGSTOP) for longer than the steal timeout,
and stops PostgreSQL for 20 s. The processes are expected to live through
the database's absence on their own: the harness restarts only what it
killed, and counts any process that exits by itself. Then it lets the
services settle, stops them, and checks the history (``chaos_checks``):
no overlapping runs of one schedule in the jobs' own record, every schedule
back to OK within a printed bound, no task run left scheduled or started,
the journal's visit statuses replayed twice with nothing changed the second
time. It prints the figures and exits 1 if an invariant is broken.

``--quick`` sets up fewer schedules, tasks and origins, for CI.

``--failover`` runs PostgreSQL as a primary and a streaming standby instead, the services on a
multi-host URL (``target_session_attrs=read-write``): instead of the 20 s stop, the primary is killed
with SIGKILL (the machine's death: no shutdown), the standby promoted, a new standby built from the new
primary (``pg_basebackup``) where the dead one was, and the cycle repeated every ``--failover-every``
seconds. Replication is synchronous (``--async`` for asynchronous): a commit the services were told of
is on the standby before the answer. It prints the longest gap in service (from the kill to the first
write the new primary takes).

The loaders publish their visit statuses to a Kafka-protocol broker (Tansu) the harness starts, and two
``ostinato journal-client`` processes of one consumer group feed them back, killed like the others
(``chaos_journal``; ``--no-journal`` leaves them out). At the end the orchestrator stops first and the
clients catch up with its last statuses; then no acknowledged status may be left unconsumed, every origin's visit stats
must show its newest published status, and no origin may have been handed out twice (visited again
within the grab's in-flight timeout). With ``--async``, a commit the primary took and never sent is
lost with it: the overlaps, lost statuses and second hand-outs that causes are printed as the
asynchronous loss window's measure rather than as broken invariants.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg

from bench.chaos.chaos_checks import (
    ConditionWatch,
    job_intervals,
    overlaps,
    recoveries,
    replay_journal,
    run_history,
    stuck_task_runs,
    task_runs,
)
from bench.chaos.chaos_fixtures import Workload, set_up
from bench.chaos.chaos_journal import (
    PARTITIONS,
    TOPIC,
    committed_offsets,
    handed_out_twice,
    published,
    revisited,
    statuses_lost,
    unconsumed,
    visit_record,
    wait_consumed,
)
from bench.chaos.chaos_supervisor import Event, Supervisor
from ostinato.config import Settings
from ostinato.domain.tasks import TaskRunStatus
from ostinato.store.postgresql import PostgresStore
from test_servers.kafka import TansuBroker
from test_servers.postgres import PostgresCluster, PostgresStandby, free_port

PING_INTERVAL, PING_TIMEOUT, STEAL_GRACE = 1.0, 3.0, 2.0
RETRY_BACKOFF = (1.0, 2.0, 4.0)
LOST_RUN_TIMEOUT = 20.0
REAP_EVERY = 60.0  # the runner's reap of lost task runs (TaskRunner.reap_every)
IN_FLIGHT_TIMEOUT = 60.0
PG_OUTAGE = 20.0
PAUSE = 2 * (PING_TIMEOUT + STEAL_GRACE) + 2.0
SETTINGS = {
    "OSTINATO_SCHEDULE_PING_INTERVAL": f"{PING_INTERVAL}s", "OSTINATO_SCHEDULE_PING_TIMEOUT": f"{PING_TIMEOUT}s",
    "OSTINATO_SCHEDULE_STEAL_GRACE": f"{STEAL_GRACE}s",
    "OSTINATO_SCHEDULE_RETRY_BACKOFF": ",".join(f"{b}s" for b in RETRY_BACKOFF),
    "OSTINATO_LOST_RUN_TIMEOUT": f"{LOST_RUN_TIMEOUT}s", "OSTINATO_IN_FLIGHT_TIMEOUT": f"{IN_FLIGHT_TIMEOUT:.0f}s",
    "OSTINATO_POLL_INTERVAL": "0.5s",
}


SAMPLE_EVERY = 2.0  # the conditions' sampling period


def recovery_bound(workload: Workload) -> float:
    """How long a schedule may stay not OK after the last fault that touched it: a steal (its owner silent),
    a retry's backoff, a longest run, a longest period to get back within it, and the sampling's resolution.
    Faults in a row (its owner killed again during the rerun, a random failure, the database away) each
    start the count again: an episode may last longer than this, a recovery may not."""
    return PING_TIMEOUT + STEAL_GRACE + max(RETRY_BACKOFF) + workload.max_run + workload.max_period + SAMPLE_EVERY


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long the faults go on (default 10)")
    parser.add_argument("--quick", action="store_true", help="fewer schedules, tasks and origins (for CI)")
    parser.add_argument("--schedules", type=int, help="schedules (default 500; --quick 150)")
    parser.add_argument("--origins", type=int, help="origins (default 100,000; --quick 10,000)")
    parser.add_argument("--tasks", type=int, help="recurring tasks (default 300; --quick 100)")
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--settle", type=float, help="seconds the services run after the faults (default 90; "
                                                     "--quick 45)")
    parser.add_argument("--kill-every", type=float, nargs=2, default=(3.0, 8.0), metavar=("MIN", "MAX"),
                        help="seconds between two kills, drawn between MIN and MAX")
    parser.add_argument("--keep", action="store_true", help="keep the run directory (logs, records)")
    parser.add_argument("--failover", action="store_true",
                        help="a primary and a standby: kill the primary, promote the standby, rebuild (see above)")
    parser.add_argument("--failover-every", type=float, default=60.0, help="seconds between two failovers")
    parser.add_argument("--async", dest="synchronous", action="store_false",
                        help="with --failover, asynchronous replication (a commit may be lost with the primary)")
    parser.add_argument("--lookahead", action="store_true",
                        help="the schedulers pick with lookahead (the setting schedule_lookahead): holds, heartbeats")
    parser.add_argument("--no-journal", dest="journal", action="store_false",
                        help="no broker and no journal clients (the orchestrator's own feedback only)")
    return parser.parse_args(argv)


class Harness:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.workload = Workload(
            schedules=args.schedules or (150 if args.quick else 500),
            origins=args.origins if args.origins is not None else (10_000 if args.quick else 100_000),
            tasks=args.tasks if args.tasks is not None else (100 if args.quick else 300), seed=args.seed)
        self.settle = args.settle if args.settle is not None else (45.0 if args.quick else 90.0)
        self.rng = random.Random(args.seed)
        self.run_dir = Path(tempfile.mkdtemp(prefix="ostinato-chaos-", dir="/tmp"))
        self.run_dir.chmod(0o755)
        self.record_dir = self.run_dir / "records"
        self.record_dir.mkdir()
        self.record_dir.chmod(0o777)
        settings = {"max_connections": "400"}
        if args.failover and args.synchronous:  # every commit answered is flushed on the standby first
            settings.update(synchronous_standby_names="*", synchronous_commit="on")
        self.cluster = PostgresCluster(self.run_dir / "pg", free_port(), settings=settings)
        self.standby: PostgresCluster | None = None
        self.broker: TansuBroker | None = None
        self.gaps: list[float] = []
        self.watch = ConditionWatch(timedelta(seconds=PING_TIMEOUT))
        self.exits = 0
        self.checked_at = 0.0
        self.sample_failures = 0

    def say(self, text: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)

    def sample(self, store: PostgresStore) -> None:
        try:
            self.watch.sample(store, time.time())
        except Exception:  # the database is away: no sample this time
            self.sample_failures += 1

    def run(self) -> int:
        self.cluster.start()
        try:
            if self.args.journal:
                self.broker = TansuBroker({TOPIC: PARTITIONS})
                self.broker.start()
            if self.args.failover:
                self.standby = PostgresStandby(self.cluster, base_dir=self.run_dir / "pg-b", port=free_port())
                self.standby.start()
            return self._run()
        finally:
            if self.standby is not None:
                self.standby.stop()
            if self.broker is not None:
                self.broker.stop()
            self.cluster.stop()
            if not self.args.keep:
                shutil.rmtree(self.run_dir, ignore_errors=True)
            else:
                print(f"run directory kept: {self.run_dir}")

    def dsn(self) -> str:
        """The services' URL: the one server, or (failover) both, the one taking writes chosen by libpq."""
        if self.standby is None:
            return self.cluster.dsn()
        return (f"postgresql://postgres@127.0.0.1:{self.cluster.port},127.0.0.1:{self.standby.port}/postgres"
                "?target_session_attrs=read-write&connect_timeout=3")

    def failover(self, supervisor: Supervisor) -> None:
        """Kill the primary, promote the standby, rebuild a standby where the primary was; the gap in service
        is from the kill to the first write the new primary takes."""
        assert self.standby is not None
        dead, promoted = self.cluster, self.standby
        killed_at = time.monotonic()
        supervisor.events.append(Event(time.time(), "pg_kill", detail=f"port {dead.port}"))
        dead.kill()
        promoted.promote()
        base, port = dead.base_dir, dead.port
        dead.stop()
        shutil.rmtree(base / "data")
        self.cluster, self.standby = promoted, PostgresStandby(promoted, base_dir=base, port=port)
        self.standby.start()
        supervisor.cluster = self.cluster
        while True:
            try:
                with psycopg.connect(self.dsn(), autocommit=True) as conn:
                    conn.execute("UPDATE chaos_probe SET at = now()")
                break
            except psycopg.Error:
                time.sleep(0.1)
        self.gaps.append(time.monotonic() - killed_at)
        supervisor.events.append(Event(time.time(), "pg_promoted", detail=f"port {promoted.port}"))

    def _run(self) -> int:
        dsn = self.dsn()
        store = PostgresStore(dsn)
        store.init_schema()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE chaos_probe (at timestamptz); INSERT INTO chaos_probe VALUES (now())")
        started = time.monotonic()
        specs = set_up(store, self.workload, self.record_dir, datetime.now(UTC))
        self.say(f"set up {len(specs)} schedules, {self.workload.tasks} tasks, {self.workload.origins:,} origins "
                 f"in {time.monotonic() - started:.1f}s (PostgreSQL {dsn}, records in {self.record_dir})")
        brokers = self.broker.bootstrap_servers if self.broker is not None else None
        settings = {**SETTINGS, **({"OSTINATO_SCHEDULE_LOOKAHEAD": "true"} if self.args.lookahead else {})}
        supervisor = Supervisor(self.cluster, dsn, self.run_dir, HERE, settings, self.rng, brokers)
        supervisor.start_all()
        self.chaos(supervisor, store)
        self.say(f"faults over; the services settle for {self.settle:.0f}s")
        deadline = time.monotonic() + self.settle
        while time.monotonic() < deadline:
            time.sleep(2.0)
            self.exits += len(supervisor.restart_dead())
            self.sample(store)
        self.sample(store)
        self.checked_at = time.time()
        check_at = datetime.now(UTC)
        old_stuck = stuck_task_runs(store, check_at - timedelta(seconds=LOST_RUN_TIMEOUT + REAP_EVERY + 15))
        codes = {}
        if brokers:  # the loaders stop first (their last statuses published), then the clients catch up
            self.say("stopping the orchestrator (SIGTERM); the journal clients catch up")
            codes = supervisor.stop_all(only=["orchestrator"])
            wait_consumed(brokers, published(self.record_dir), timeout=90.0)
        self.say("stopping the services (SIGTERM)")
        codes = {**supervisor.stop_all(only=[n for n in supervisor.services if n not in codes]), **codes}
        # a runner started again notices the runs its dead predecessors left (then nothing may remain)
        subprocess.run([sys.executable, "-m", "ostinato", "runner", "--once"],
                       env=supervisor.services["runner"].env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=300, check=False)
        left = stuck_task_runs(store)
        return self.report(store, supervisor, specs, old_stuck, left, codes)

    def chaos(self, supervisor: Supervisor, store: PostgresStore) -> None:
        length = self.args.minutes * 60
        begin = time.monotonic()
        pause_at, pg_at = begin + 0.3 * length, begin + 0.6 * length
        paused, paused_since = None, 0.0
        pg_down_since: float | None = None
        next_kill = begin + self.rng.uniform(*self.args.kill_every)
        next_sample = begin
        next_failover = begin + 0.25 * length if self.args.failover else float("inf")
        while (now := time.monotonic()) < begin + length or paused is not None or pg_down_since is not None:
            if now >= next_failover and now < begin + length:
                self.say(f"failover: SIGKILL the primary (port {self.cluster.port}), promote the standby "
                         f"(port {self.standby.port}), rebuild a standby")
                self.failover(supervisor)
                self.say(f"failover done: {self.gaps[-1]:.1f}s without a primary taking writes")
                next_failover = time.monotonic() + self.args.failover_every
                continue
            if paused is None and pause_at and now >= pause_at:
                name = self.rng.choice([n for n in supervisor.services if n.startswith("chaos-n")])
                paused, paused_since = supervisor.pause(name), now
                pause_at = 0.0
                self.say(f"SIGSTOP {name} for {PAUSE:.0f}s (steal timeout {PING_TIMEOUT + STEAL_GRACE:.0f}s)")
            elif paused is not None and now - paused_since >= PAUSE:
                supervisor.resume(paused)
                self.say(f"SIGCONT {paused.name}")
                paused = None
            if pg_down_since is None and pg_at and now >= pg_at and not self.args.failover:
                self.say(f"stopping PostgreSQL for {PG_OUTAGE:.0f}s")
                supervisor.stop_postgres()
                pg_down_since, pg_at = now, 0.0
            elif pg_down_since is not None and now - pg_down_since >= PG_OUTAGE:
                supervisor.start_postgres()
                self.say("PostgreSQL started again")
                pg_down_since = None
            if pg_down_since is None and now >= next_kill and now < begin + length:
                killed = supervisor.kill_random()
                next_kill = now + self.rng.uniform(*self.args.kill_every)
                self.say(f"SIGKILL {killed.name} (pid {killed.pids[-2]}), started again as {killed.pids[-1]}")
            self.exits += len(supervisor.restart_dead())
            if pg_down_since is None and now >= next_sample:
                self.sample(store)
                next_sample = now + SAMPLE_EVERY
            time.sleep(0.2)

    def report(self, store, supervisor, specs, old_stuck, left, codes) -> int:
        end = self.checked_at  # the conditions as the services left them, before they were stopped
        killed = supervisor.kill_times()
        runs = job_intervals(self.record_dir, killed)
        overlapping = overlaps(runs)
        unknown_end = [r for r in runs if r.end == "unknown"]
        names = [s.name for s in specs]
        history = run_history(store, names, supervisor.events)
        longest = self.watch.longest(end)
        bound = recovery_bound(self.workload)
        everyone = [e.at for e in supervisor.events if e.kind in ("pg_start", "pg_promoted")]
        spells = recoveries(self.watch, end, history.faults, everyone, reach=self.workload.max_period)
        slowest = max(spells, key=lambda r: r.seconds, default=None)
        widest = max(spells, key=lambda r: r.ended - r.began, default=None)
        policy = Settings.load(environ=SETTINGS).feedback_policy()
        statuses = published(self.record_dir)
        if self.broker is not None:  # before the replay, which would bring back what was lost
            left_unconsumed = unconsumed(statuses, committed_offsets(self.broker.bootstrap_servers))
            lost_statuses = statuses_lost(store, statuses)
        visits = visit_record(self.record_dir)
        twice = handed_out_twice(visits, IN_FLIGHT_TIMEOUT)
        replay = replay_journal(store, self.record_dir, policy)
        never_ran = sorted(set(names) - {r.name for r in runs})

        print()
        print("chaos figures")
        print(f"  runs:                 {len(runs)} schedule runs recorded by the jobs "
              f"({sum(history.by_status.values())} in Ostinato's run table: "
              + ", ".join(f"{n} {s}" for s, n in sorted(history.by_status.items())) + ")")
        print(f"  kills:                {supervisor.count('kill')} (SIGKILL, each restarted); "
              f"{self.exits} exits on their own (restarted)")
        print(f"  pauses:               {supervisor.count('pause')} (SIGSTOP {PAUSE:.0f}s); PostgreSQL stops: "
              f"{supervisor.count('pg_stop')} ({PG_OUTAGE:.0f}s)")
        if self.args.failover:
            print(f"  failovers:            {len(self.gaps)} ({'synchronous' if self.args.synchronous else 'asynchronous'}"
                  f" replication); longest gap in service {max(self.gaps, default=0):.1f}s (each: "
                  + ", ".join(f"{g:.1f}s" for g in self.gaps) + ")")
        print(f"  steals:               {history.steals} (owner silent) + {history.released} (owner restarted); "
              f"{history.by_status.get('stolen', 0)} runs whose owner found them stolen")
        print(f"  overlaps:             {len(overlapping)}")
        for a, b in overlapping[:10]:
            print(f"    {a.name}: pid {a.pid} worked {a.first:.3f}..{a.last:.3f} ({a.end}), "
                  f"pid {b.pid} from {b.first:.3f}")
        print(f"  lost runs recovered:  {history.lost_recovered} (unrecovered: {len(history.lost_unrecovered)})")
        print(f"  longest recovery:     {history.longest_recovery:.1f}s ({history.longest_recovery_of or '-'}), "
              "from the owner's fault to the next start")
        if longest is not None and widest is not None and slowest is not None:
            print(f"  longest not OK:       {longest[1]:.1f}s ({longest[0]}, worst {longest[2].value}; "
                  f"{widest.faults} faults touched it); {len(spells)} episodes")
            print(f"  slowest recovery:     {slowest.seconds:.1f}s from the last fault to OK ({slowest.name}, "
                  f"{slowest.faults} faults in its episode; its samples: "
                  + ", ".join(f"{n} {r}" for r, n in self.watch.reasons.get((slowest.name, slowest.began), {}).items())
                  + f"); bound {bound:.0f}s")
        print(f"  condition samples:    {self.watch.samples} ({self.sample_failures} failed); longest time between "
              f"two: {self.watch.longest_gap:.1f}s")
        print(f"  conditions at the end: {dict(self.watch.last_states)}")
        lost_tasks = task_runs(store, [TaskRunStatus.LOST])
        print(f"  task runs lost:       {len(lost_tasks)} marked lost by the runner (dead executor or no report)")
        print(f"  task runs left:       {len(old_stuck)} older than {LOST_RUN_TIMEOUT + REAP_EVERY + 15:.0f}s while "
              f"running; {len(left)} after the stop and a restart")
        print(f"  journal replay:       {replay.statuses} visit statuses; the first replay changed {replay.changed_first}"
              f" rows (feedback lost to kills), the second {replay.changed_second} ({replay.rows_differ} rows differ)")
        if self.broker is not None:
            print(f"  journal:              {len(statuses)} visit statuses the broker acknowledged; "
                  f"{len(left_unconsumed)} not consumed by the group at the end; {len(lost_statuses)} origins "
                  f"whose visit stats miss their newest status (statuses lost)")
        print(f"  grabs handed out twice: {len(twice)} (an origin visited again within the {IN_FLIGHT_TIMEOUT:.0f}s "
              f"in-flight timeout); {len(visits)} visits, {revisited(visits)} origins visited more than once")
        for a, b in twice[:5]:
            print(f"    {a.url}: visits from {a.start:.3f} (pid {a.pid}) and {b.start:.3f} (pid {b.pid})")
        print(f"  exit codes at stop:   {codes}")

        broken, window = [], []
        # asynchronous replication: a commit the primary took and never sent dies with it (the loss window)
        windowed = window if self.args.failover and not self.args.synchronous else broken
        if overlapping:
            windowed.append(f"{len(overlapping)} overlapping runs")
        if twice:
            windowed.append(f"{len(twice)} grabs handed out twice")
        if self.broker is not None and lost_statuses:
            windowed.append(f"{len(lost_statuses)} statuses lost ({', '.join(lost_statuses[:3])})")
        if self.broker is not None and left_unconsumed:
            broken.append(f"{len(left_unconsumed)} acknowledged statuses never consumed")
        if unknown_end:
            broken.append(f"{len(unknown_end)} runs whose end is unknown")
        if never_ran:
            broken.append(f"{len(never_ran)} schedules never ran ({', '.join(never_ran[:5])})")
        if slowest is not None and slowest.seconds > bound:
            broken.append(f"{slowest.name} back to OK {slowest.seconds:.0f}s after its last fault, over the bound "
                          f"{bound:.0f}s")
        if history.lost_unrecovered:
            broken.append(f"lost runs never followed by another: {', '.join(history.lost_unrecovered[:5])}")
        if old_stuck or left:
            broken.append(f"task runs left scheduled/started: {len(old_stuck)} old while running, {len(left)} at "
                          f"the end ({', '.join(str(r.id) for r in (old_stuck or left)[:5])})")
        if replay.changed_second or replay.rows_differ:
            broken.append("the journal's second replay changed the visit stats")
        print()
        if window:
            print("asynchronous loss window (commits lost with the primary): " + "; ".join(window))
        if broken:
            print("INVARIANTS BROKEN: " + "; ".join(broken))
            return 1
        print("all invariants hold")
        return 0


def main(argv: list[str] | None = None) -> int:
    return Harness(parse_args(argv)).run()


if __name__ == "__main__":
    sys.exit(main())
