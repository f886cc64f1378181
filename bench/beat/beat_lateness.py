"""How late sends leave behind their fire times: 10,000 beat entries, stock Celery beat against three
of Ostinato's beats, in one run (see docs/reference/performance.md#celery-beat).

Two workloads of ``bench/beat/beat_app.py``, each with N entries (10,000):

- ``spread``: hourly crontabs spread over the minutes of the hour (N/60 due at each minute);
- ``burst``: crontabs firing every minute (N due at the same second, each minute).

For each, each side runs on its own, in real time, over the same minutes, with a real Redis broker
and two Celery workers that record every message: stock ``celery beat`` (its default persistent
scheduler, with a header saying which fire time each send is for: ``beat_app.StampedScheduler``),
then three ``celery beat -S ostinato.integrations.celery.beat:OstinatoScheduler`` on PostgreSQL. A
send's lateness is when it was published (stamped by ``before_task_publish`` in the sending beat)
minus its fire time. Fire times of the measured minutes not sent by the time the beats stop (50 s
after the last one) are counted as not sent. Printed, and written as JSON under bench/results/.

    .venv/bin/python bench/beat/beat_lateness.py                      # 10,000 entries, both workloads
    .venv/bin/python bench/beat/beat_lateness.py --entries 1000 --minutes 2 --workloads spread
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.common.processes import work_folder
from test_servers.postgres import PostgresCluster
from test_servers.redis import RedisServer

UTC = UTC


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--minutes", type=int, default=3, help="minutes of fire times measured on each side")
    parser.add_argument("--beats", type=int, default=3, help="Ostinato beat processes")
    parser.add_argument("--workloads", default="spread,burst")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it (logs, receipts)")
    return parser.parse_args(argv)


class Bench:
    def __init__(self, args: argparse.Namespace, work: Path):
        self.args, self.work = args, work
        self.windows: dict[tuple[str, str], list[float]] = {}

    def env(self, workload: str, dsn: str) -> dict[str, str]:
        path = os.pathsep.join([str(ROOT / "src"), str(ROOT / "bench" / "beat"), str(ROOT)])
        return {**os.environ, "PYTHONPATH": path, "BEAT_BROKER": self.redis.url,
                "BEAT_RECEIPTS": str(self.receipts(workload)), "BEAT_SET": f"{_SETS[workload]}:{self.args.entries}",
                "OSTINATO_DB": dsn}

    def receipts(self, workload: str) -> Path:
        return self.work / f"receipts-{workload}.jsonl"

    def celery(self, args: list[str], log: str, env: dict[str, str]) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "celery", "-A", "beat_app", *args], env=env, cwd=self.work,
                                stdout=open(self.work / log, "ab"), stderr=subprocess.STDOUT, start_new_session=True)

    def main(self) -> int:
        results = {"entries": self.args.entries, "minutes": self.args.minutes, "ostinato_beats": self.args.beats,
                   "workloads": {}}
        with RedisServer(persistent=False) as self.redis, PostgresCluster() as cluster:
            for workload in self.args.workloads.split(","):
                cluster.create_database(f"beats_{workload}")
                dsn = cluster.dsn(f"beats_{workload}")
                from ostinato.store.postgresql import PostgresStore

                with PostgresStore(dsn) as store:
                    store.init_schema()
                results["workloads"][workload] = self.workload(workload, dsn)
        return self.report(results)

    def workload(self, workload: str, dsn: str) -> dict:
        env = self.env(workload, dsn)
        workers = [self.celery(["worker", "-P", "threads", "-c", "8", "-l", "warning", "-n", f"w{i}@%h",
                                "--without-heartbeat", "--without-gossip", "--without-mingle"],
                               f"{workload}-worker{i}.log", env) for i in range(2)]
        try:
            self.side(workload, "stock", [["beat", "-S", "beat_app:StampedScheduler", "-l", "warning", "--schedule",
                                           str(self.work / f"celerybeat-{workload}"), "--pidfile", ""]], env)
            self.side(workload, "ostinato", [["beat", "-S", "ostinato.integrations.celery.beat:OstinatoScheduler",
                                              "-l", "warning", "--pidfile", ""]] * self.args.beats, env)
            self.drain(workload)
        finally:
            for worker in workers:
                worker.kill()
                worker.wait(30)
        return self.figures(workload)

    def side(self, workload: str, name: str, commands: list[list[str]], env: dict[str, str]) -> None:
        """Run the beats of one side from mid-minute through ``minutes`` minutes of fire times."""
        wait_for_second(20)
        began = time.time()
        beats = [self.celery(command, f"{workload}-{name}{i}.log", env) for i, command in enumerate(commands)]
        first = (int(began // 60) + 1) * 60
        measured = [first + 60 * k for k in range(self.args.minutes)]
        time.sleep(max(0.0, measured[-1] + 50 - time.time()))
        for beat in beats:
            beat.send_signal(signal.SIGTERM)
        for beat in beats:
            try:
                beat.wait(60)
            except subprocess.TimeoutExpired:
                beat.kill()
        self.windows[(workload, name)] = measured
        say(f"{workload}, {name}: ran {time.time() - began:.0f} s, fire times {[_hm(t) for t in measured]}")

    def drain(self, workload: str) -> None:
        count, stable = -1, 0
        deadline = time.monotonic() + 600
        path = self.receipts(workload)
        while stable < 6 and time.monotonic() < deadline:
            time.sleep(1)
            now = sum(1 for _ in path.open()) if path.exists() else 0
            stable, count = (stable + 1, now) if now == count else (0, now)
        say(f"{workload}: the workers recorded {count} messages")

    def figures(self, workload: str) -> dict:
        per_minute = Counter(i % 60 for i in range(self.args.entries)) if workload == "spread" else None
        lateness: dict[str, list[float]] = {"stock": [], "ostinato": []}
        seen: dict[str, set] = {"stock": set(), "ostinato": set()}
        for line in self.receipts(workload).open():
            item = json.loads(line)
            side = "ostinato" if item["sender"] else "stock"
            fire = datetime.fromisoformat(item["fire_time"]).timestamp()
            if fire in self.windows[(workload, side)] and (item["key"], fire) not in seen[side]:
                seen[side].add((item["key"], fire))
                lateness[side].append(float(item["published_at"]) - fire)
        found = {}
        for side in ("stock", "ostinato"):
            minutes = self.windows[(workload, side)]
            expected = sum(per_minute[int(m // 60) % 60] for m in minutes) if per_minute else \
                self.args.entries * len(minutes)
            values = sorted(lateness[side])
            found[side] = {"due": expected, "sent": len(values), "not_sent": expected - len(values),
                           "median": statistics.median(values) if values else None,
                           "p99": values[int(0.99 * (len(values) - 1))] if values else None,
                           "max": values[-1] if values else None}
        return found

    def report(self, results: dict) -> int:
        print(f"{self.args.entries} entries; lateness of a send = published - fire time (seconds); "
              f"{self.args.minutes} minutes of fire times per side")
        print(f"{'workload':<9} {'side':<22} {'due':>7} {'sent':>7} {'not sent':>9} {'median':>8} {'p99':>8} {'max':>8}")
        for workload, sides in results["workloads"].items():
            for side, label in (("stock", "stock celery beat"), ("ostinato", f"Ostinato, {self.args.beats} beats")):
                f = sides[side]
                cells = " ".join(f"{f[k]:>8.3f}" if f[k] is not None else f"{'-':>8}" for k in ("median", "p99", "max"))
                print(f"{workload:<9} {label:<22} {f['due']:>7} {f['sent']:>7} {f['not_sent']:>9} {cells}")
        out = self.args.out or ROOT / "bench" / "results" / (
            f"beat-lateness-{datetime.now(UTC):%Y-%m-%d}-{self.args.entries}.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2) + "\n")
        print(f"written to {out}")
        ours_complete = all(w["ostinato"]["not_sent"] == 0 for w in results["workloads"].values())
        return 0 if ours_complete else 1


_SETS = {"spread": "spread", "burst": "bulk"}


def wait_for_second(second: int) -> None:
    """Sleep until the wall clock is at ``second`` past a minute (the next such moment)."""
    now = time.time()
    target = (now // 60) * 60 + second
    time.sleep((target - now) % 60)


def _hm(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M")


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with work_folder(args.keep, "ostinato-beat-lateness-") as work:
        return Bench(args, work).main()


if __name__ == "__main__":
    sys.exit(main())
