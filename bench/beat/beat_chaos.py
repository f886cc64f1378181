"""Three of Ostinato's Celery beats under chaos: SIGKILL, SIGSTOP past the lease, and PostgreSQL
stopped for 20 s, with a real Redis broker and two Celery workers (see
docs/reference/harnesses.md#celery-beat-under-chaos).

The beats run ``bench/beat/beat_app.py``'s ``chaos`` set (intervals of 1 to 13 s, a minute crontab, one
entry whose catch-up rule is ``all:3``, one ``skip``) as ``celery beat -S
ostinato.integrations.celery.beat:OstinatoScheduler``. The harness kills a beat and starts it again
every few seconds, pauses one for longer than the lease, and stops PostgreSQL for 20 s. Then it
counts, **from what the workers received** (each message's fire time, the time it was sent, the
time it arrived) and never from Ostinato's tables:

- **duplicates**: a fire time of an entry received more than once;
- **missed**: a fire time of an entry's grid (or of the minute crontab) never received, unless the
  catch-up rule explains it: a run of missing fire times is explained when the send that followed
  it left more than ``schedule_catch_up_grace`` after the oldest of them (a backlog: ``latest``
  sends the last one, ``all:3`` the last three, ``skip`` none);
- the lateness of sends (arrival minus fire time), overall and after each fault.

The ledger's own count of skipped fire times is printed beside, as a cross-check. It exits 1 when a
duplicate or an unexplained missed fire time is found.

    .venv/bin/python bench/beat/beat_chaos.py --minutes 10
    .venv/bin/python bench/beat/beat_chaos.py --quick        # 45 s: the test suite's form
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.common.processes import work_folder
from test_servers.postgres import PostgresCluster, free_port
from test_servers.processes import die_with_parent
from test_servers.redis import RedisServer

UTC = UTC
BEATS = 3
#: the beats' lease (seconds), and how long a paused beat stays paused: past its lease
LEASE, QUICK_LEASE = 4.0, 2.0
PG_OUTAGE = 20.0
GRACE = 10.0
#: the entries of the chaos set: key -> (period in seconds, catch-up rule)
ENTRIES = {**{f"every-{s}s": (s, "latest") for s in (1, 2, 3, 5, 7, 11, 13)}, "cron-each-minute": (60, "latest"),
           "every-20s-all": (20, "all:3"), "every-30s-skip": (30, "skip")}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--quick", action="store_true", help="45 s: a kill, a pause, an outage, a kill during it")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, help="where the JSON goes (default bench/results/beat-chaos-<date>.json)")
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it (logs, receipts)")
    return parser.parse_args(argv)


class Harness:
    def __init__(self, args: argparse.Namespace, work: Path):
        self.args, self.work = args, work
        self.rng = random.Random(args.seed)
        self.receipts = work / "receipts.jsonl"
        self.events: list[tuple[float, str, str]] = []
        self.beats: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []
        self.exits: list[tuple[int, int | None]] = []
        self.lease = QUICK_LEASE if args.quick else LEASE
        self.paused_for = self.lease + 2.0

    def env(self) -> dict[str, str]:
        path = os.pathsep.join([str(ROOT / "src"), str(ROOT / "bench" / "beat"), str(ROOT)])
        return {**os.environ, "PYTHONPATH": path, "BEAT_BROKER": self.redis.url, "BEAT_RECEIPTS": str(self.receipts),
                "BEAT_SET": "chaos", "OSTINATO_DB": self.dsn, "OSTINATO_BEAT_LEASE": f"{self.lease}s",
                "OSTINATO_BEAT_POLL": "0.2s", "OSTINATO_SCHEDULE_CATCH_UP_GRACE": f"{GRACE}s"}

    def note(self, kind: str, detail: str = "") -> None:
        self.events.append((time.time(), kind, detail))
        print(f"{time.strftime('%H:%M:%S')} {kind} {detail}", file=sys.stderr, flush=True)

    def spawn(self, args: list[str], log: str) -> subprocess.Popen:
        # gone with the harness, however it ends
        return subprocess.Popen([sys.executable, "-m", "celery", "-A", "beat_app", *args], env=self.env(),
                                cwd=self.work, stdout=open(self.work / log, "ab"), stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=die_with_parent())

    def start_beat(self, index: int) -> None:
        self.beats[index] = self.spawn(["beat", "-S", "ostinato.integrations.celery.beat:OstinatoScheduler", "-l",
                                        "info", "--pidfile", ""], f"beat{index}.log")

    # -- the run ---------------------------------------------------------------------------
    def main(self) -> int:
        self.cluster = PostgresCluster(self.work / "pg", free_port())
        with RedisServer(persistent=False) as self.redis:
            self.dsn = ""  # the workers need no database: they start while PostgreSQL does
            self.workers = [self.spawn(["worker", "-P", "threads", "-c", "4", "-l", "info", "-n", f"w{i}@%h"],
                                       f"worker{i}.log") for i in range(2)]
            try:
                self.cluster.start()
                self.cluster.create_database("beats")
                self.dsn = self.cluster.dsn("beats")
                from ostinato.store.postgresql import PostgresStore

                with PostgresStore(self.dsn) as store:
                    store.init_schema()
                self.wait_ready()
                self.beats = [None] * BEATS  # type: ignore[list-item]  # a slot per beat, each filled by start_beat just below
                for index in range(BEATS):
                    self.start_beat(index)
                self.began = time.time()
                (self.quick if self.args.quick else self.long)()
                self.ended = time.time()
                self.stop_all()
                return self.report()
            finally:
                for worker in self.workers:
                    if worker.poll() is None:
                        worker.kill()
                        worker.wait(30)
                self.cluster.stop()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while not all(" ready." in (self.work / f"worker{i}.log").read_text(errors="replace") for i in range(2)):
            if time.monotonic() > deadline:
                raise SystemExit("the workers did not start: " + (self.work / "worker0.log").read_text()[-2000:])
            time.sleep(0.1)

    def kill(self, index: int) -> None:
        beat = self.beats[index]
        beat.send_signal(signal.SIGKILL)
        beat.wait(10)
        self.note("kill", f"beat {index} (pid {beat.pid})")
        self.start_beat(index)

    def pause(self, index: int) -> None:
        beat = self.beats[index]
        beat.send_signal(signal.SIGSTOP)
        self.note("pause", f"beat {index} for {self.paused_for:.0f}s")
        time.sleep(self.paused_for)
        beat.send_signal(signal.SIGCONT)
        self.note("resume", f"beat {index}")

    def outage(self, during=None) -> None:
        self.note("pg_stop", f"{PG_OUTAGE:.0f}s")
        self.cluster.stop()
        stopped = time.monotonic()
        if during is not None:
            time.sleep(PG_OUTAGE / 2)
            during()
        time.sleep(max(0.0, PG_OUTAGE - (time.monotonic() - stopped)))
        self.cluster.start()
        self.note("pg_start")

    def quick(self) -> None:
        time.sleep(3)
        self.kill(0)
        time.sleep(1)
        self.pause(1)
        time.sleep(1)
        self.outage(during=lambda: self.kill(2))
        time.sleep(7)

    def long(self) -> None:
        deadline = time.monotonic() + self.args.minutes * 60
        next_pause, next_outage = time.monotonic() + 60, time.monotonic() + 150
        while time.monotonic() < deadline - 15:
            time.sleep(self.rng.uniform(3, 8))
            if time.monotonic() > next_outage:
                self.outage(during=lambda: self.kill(self.rng.randrange(BEATS)))
                next_outage = time.monotonic() + 180
            elif time.monotonic() > next_pause:
                self.pause(self.rng.randrange(BEATS))
                next_pause = time.monotonic() + 60
            else:
                self.kill(self.rng.randrange(BEATS))
            for index, beat in enumerate(self.beats):
                if beat.poll() is not None:  # exited on its own: counted, started again
                    self.exits.append((index, beat.returncode))
                    self.note("exit", f"beat {index} ({beat.returncode})")
                    self.start_beat(index)
        time.sleep(15)

    def stop_all(self) -> None:
        self.note("stopping")
        codes = []
        for beat in self.beats:
            beat.send_signal(signal.SIGTERM)
        for beat in self.beats:
            try:
                codes.append(beat.wait(30))
            except subprocess.TimeoutExpired:
                beat.kill()
                codes.append(None)
        self.stop_codes = codes
        count, stable = -1, 0
        while stable < 4:  # the workers take what is left
            time.sleep(0.5)
            now = sum(1 for _ in self.receipts.open()) if self.receipts.exists() else 0
            stable, count = (stable + 1, now) if now == count else (0, now)
        self.note("drained")
        for worker in self.workers:  # everything received is recorded: no need for a warm shutdown
            worker.kill()
            worker.wait(30)

    # -- the check ---------------------------------------------------------------------------
    def report(self) -> int:
        self.note("report")
        received = [json.loads(line) for line in self.receipts.read_text().splitlines()]
        check_until = datetime.fromtimestamp(self.ended - self.lease - 1.0, UTC)
        found = check(received, check_until, datetime.fromtimestamp(self.began, UTC))
        ledger = self.ledger_skips()
        counts = Counter(kind for _, kind, _ in self.events)
        print(f"run: {self.ended - self.began:.0f} s, {BEATS} beats, 2 workers, lease {self.lease:.0f} s, "
              f"grace {GRACE:.0f} s")
        print(f"faults: {counts['kill']} kills, {counts['pause']} pauses (SIGSTOP {self.paused_for:.0f} s), "
              f"{counts['pg_stop']} PostgreSQL stops ({PG_OUTAGE:.0f} s), {len(self.exits)} exits on their own")
        print(f"received: {found['received']} messages, {found['fire_times']} fire times checked (through "
              f"{check_until:%H:%M:%S})")
        print(f"duplicates: {found['duplicates']}  (sends taken over and found already published, from the beats' "
              f"logs: {self.not_sent_again()})")
        print(f"missed: {found['unexplained']}  (explained by the catch-up rule: {found['explained']}; the ledger "
              f"records {ledger} skipped)")
        lateness = found["lateness"]
        print(f"lateness (arrival - fire time): median {lateness['median']:.3f} s, p99 {lateness['p99']:.3f} s, "
              f"max {lateness['max']:.3f} s")
        print(f"beats' exit codes at the end: {self.stop_codes}")
        for line in found["problems"][:20]:
            print(f"  {line}")
        ok = found["duplicates"] == 0 and found["unexplained"] == 0 and found["fire_times"] > 0
        print("all invariants hold" if ok else "INVARIANT BROKEN")
        out = self.args.out or ROOT / "bench" / "results" / (
            f"beat-chaos-{datetime.now(UTC):%Y-%m-%d}{'-quick' if self.args.quick else ''}.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({**{k: v for k, v in found.items() if k != "problems"}, "ledger_skipped": ledger,
                                   "not_sent_again": self.not_sent_again(), "faults": dict(counts), "exits": self.exits, "stop_codes": self.stop_codes,
                                   "seconds": self.ended - self.began}, indent=2) + "\n")
        return 0 if ok else 1

    def not_sent_again(self) -> int:
        """Sends a beat took over from a killed one and found already published on Redis (its log says so)."""
        return sum((self.work / f"beat{i}.log").read_text(errors="replace").count("was already published by another beat")
                   for i in range(BEATS) if (self.work / f"beat{i}.log").exists())

    def ledger_skips(self) -> int:
        from ostinato.domain.firings import FiringStatus
        from ostinato.store.postgresql import PostgresStore

        with PostgresStore(self.dsn) as store:
            return sum(f.firings or 0 for name in ENTRIES for f in store.list_firings(name, limit=10_000)
                       if f.status is FiringStatus.SKIPPED)


def check(received: list[dict], check_until: datetime, started: datetime) -> dict:
    """Duplicates, missed fire times (explained by the catch-up rule or not) and lateness, from the
    workers' receipts alone."""
    by_key: dict[str, dict[datetime, list[dict]]] = defaultdict(lambda: defaultdict(list))
    lateness = []
    for item in received:
        at = datetime.fromisoformat(item["fire_time"])
        by_key[item["key"]][at].append(item)
        lateness.append(item["received"] - at.timestamp())
    duplicates = sum(len(items) - 1 for times in by_key.values() for items in times.values() if len(items) > 1)
    explained = unexplained = checked = 0
    problems = []
    for key, (period, rule) in ENTRIES.items():
        times = by_key.get(key, {})
        if not times:
            if (check_until - started).total_seconds() > 2 * period:  # it had time to fire
                problems.append(f"{key}: nothing received")
                unexplained += 1
            continue
        first = min(times)
        steps = max(int((check_until - first).total_seconds() // period) + 1, 0)
        grid = [first + timedelta(seconds=period * k) for k in range(steps)]
        checked += len(grid)
        missing = [t for t in grid if t not in times]
        for run in _runs(missing, timedelta(seconds=period)):
            after = min((t for t in times if t > run[-1]), default=None)
            sent_at = datetime.fromisoformat(times[after][0]["sent_at"]) if after else None
            if sent_at is not None and (sent_at - run[0]).total_seconds() > GRACE:
                explained += len(run)
            else:
                unexplained += len(run)
                problems.append(f"{key}: {len(run)} fire times from {run[0]:%H:%M:%S} not received "
                                f"(next sent {sent_at:%H:%M:%S.%f} ({rule})" if sent_at else f"{key}: missing at the end")
    ordered = sorted(lateness)
    pick = (lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]) if ordered else (lambda q: 0.0)
    return {"received": len(received), "fire_times": checked, "duplicates": duplicates, "explained": explained,
            "unexplained": unexplained, "problems": problems,
            "lateness": {"median": pick(0.5), "p99": pick(0.99), "max": ordered[-1] if ordered else 0.0}}


def _runs(times: list[datetime], step: timedelta) -> list[list[datetime]]:
    runs: list[list[datetime]] = []
    for t in times:
        if runs and t - runs[-1][-1] == step:
            runs[-1].append(t)
        else:
            runs.append([t])
    return runs


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with work_folder(args.keep, "ostinato-beat-chaos-") as work:
        return Harness(args, work).main()


if __name__ == "__main__":
    sys.exit(main())
