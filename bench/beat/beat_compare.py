"""Stock Celery beat against three of Ostinato's beats, on the same ``beat_schedule`` and the same
simulated window, through a real Redis broker and a real Celery worker (see
docs/reference/distributed.md#against-celerys-own-beat).

- **Stock**: Celery's own ``celery.beat.Scheduler``, unchanged, in this process. It reads the time
  only through the app's ``now()``, which returns the simulated time (``beat_app.SimulatedCelery``);
  the driver moves that time to each instant ``tick()`` asks for (rounded up to the second: every
  fire time of the set is on a second), so each message leaves at its fire time. A
  ``before_task_publish`` handler stamps the simulated time on the message (``sim_sent_at``).
- **Ostinato**: three ``OstinatoScheduler`` processes (``bench/beat/beat_sim_peer.py``) on PostgreSQL,
  reading the simulated time from a file; the driver moves it in steps and has the three tick
  together, racing for the claims. Their messages carry their fire time.

The worker records what it received; the two sets of (entry, fire time) are compared entry by
entry. The window holds the night Europe/Paris and Europe/London move to summer time (29 March
2026, 01:00 UTC). Every difference is listed with its local time; the run fails on a fire time
Ostinato sent twice, or on a difference that is not one of the daylight-saving choices
docs/reference/distributed.md documents (:func:`explained`).

    .venv/bin/python bench/beat/beat_compare.py              # 6 hours, 22:00 to 04:00 UTC
    .venv/bin/python bench/beat/beat_compare.py --quick      # 45 minutes around the change (the test suite's)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[2]

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from test_servers.postgres import PostgresCluster
from test_servers.redis import RedisServer

UTC = UTC
PEERS = 3


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--start", default="2026-03-28T22:00:00+00:00", help="the window's start (UTC)")
    parser.add_argument("--hours", type=float, default=6.0, help="the window's length")
    parser.add_argument("--step", type=float, default=5.0, help="seconds the Ostinato beats' clock moves per tick")
    parser.add_argument("--quick", action="store_true", help="45 minutes around the change: 00:50 to 01:35 UTC")
    parser.add_argument("--out", type=Path, help="where the JSON goes (default bench/results/beat-compare-<date>.json)")
    args = parser.parse_args(argv)
    if args.quick:
        args.start, args.hours, args.step = "2026-03-29T00:50:00+00:00", 0.75, 8.0
    return args


class Run:
    def __init__(self, args: argparse.Namespace, work: Path):
        self.args = args
        self.work = work
        self.start = datetime.fromisoformat(args.start).astimezone(UTC)
        self.end = self.start + timedelta(hours=args.hours)
        self.receipts = work / "receipts.jsonl"

    def env(self, **extra: str) -> dict[str, str]:
        path = os.pathsep.join([str(ROOT / "src"), str(ROOT / "bench" / "beat"), str(ROOT)])
        return {**os.environ, "PYTHONPATH": path, "BEAT_BROKER": self.redis.url, "BEAT_RECEIPTS": str(self.receipts),
                "BEAT_SET": "compare", **extra}

    def main(self) -> int:
        with RedisServer(persistent=False) as self.redis, PostgresCluster() as cluster:
            cluster.create_database("beats")
            self.dsn = cluster.dsn("beats")
            os.environ.update({"BEAT_BROKER": self.redis.url, "BEAT_RECEIPTS": str(self.receipts)})
            from ostinato.store.postgresql import PostgresStore

            with PostgresStore(self.dsn) as store:
                store.init_schema()
            worker = self.start_worker()
            try:
                began = time.monotonic()
                stock_sends = self.run_stock()
                stock_seconds = time.monotonic() - began
                began = time.monotonic()
                ours_sends = self.run_ostinato()
                ours_seconds = time.monotonic() - began
                self.drain(stock_sends + ours_sends)
            finally:
                worker.terminate()
                worker.wait(30)
        return self.report(stock_sends, ours_sends, stock_seconds, ours_seconds)

    def start_worker(self) -> subprocess.Popen:
        log = self.work / "worker.log"
        proc = subprocess.Popen([sys.executable, "-m", "celery", "-A", "beat_app", "worker", "-P", "threads", "-c", "8",
                                 "-l", "warning", "--without-heartbeat", "--without-gossip", "--without-mingle"],
                                env=self.env(), cwd=self.work, stdout=open(log, "ab"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while "ready" not in log.read_text(errors="replace") and "celery@" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the worker did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        time.sleep(1.0)
        return proc

    # -- stock Celery beat --------------------------------------------------------------
    def run_stock(self) -> int:
        from celery.beat import Scheduler
        from celery.signals import before_task_publish

        from bench.beat.beat_app import app

        def stamp(headers=None, **_):
            if headers is not None and app.sim_now is not None:
                headers["sim_sent_at"] = app.sim_now.astimezone(UTC).isoformat()

        before_task_publish.connect(stamp, weak=False)
        app.sim_now = self.start
        scheduler = Scheduler(app)
        sends = 0
        original = scheduler.apply_entry

        def counted(entry, producer=None):
            nonlocal sends
            sends += 1
            return original(entry, producer=producer)

        scheduler.apply_entry = counted
        while app.sim_now < self.end:
            delay = scheduler.tick()
            if delay > 0:
                app.sim_now = datetime.fromtimestamp(math.ceil((app.sim_now.timestamp() + delay) - 1e-6), UTC)
        scheduler.close()
        before_task_publish.disconnect(stamp)
        app.sim_now = None
        say(f"stock beat: {sends} sends")
        return sends

    # -- three Ostinato beats -------------------------------------------------------------
    def run_ostinato(self) -> int:
        clock = self.work / "clock"
        self.set_clock(clock, self.start)
        env = self.env(BEAT_CLOCK=str(clock), OSTINATO_DB=self.dsn,
                       BEAT_OSTINATO_SETTINGS=json.dumps({"beat_lease": "60s", "beat_batch": 200}))
        peers = [subprocess.Popen([sys.executable, str(ROOT / "bench" / "beat" / "beat_sim_peer.py")], env=env, cwd=self.work,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(self.work / f"peer{i}.log", "ab"),
                                  text=True, bufsize=1) for i in range(PEERS)]
        for peer in peers:
            if peer.stdout.readline().strip() != "ready":
                raise SystemExit(f"a beat did not start: {(self.work / 'peer0.log').read_text()[-3000:]}")
        step, now, sent = timedelta(seconds=self.args.step), self.start, [0] * PEERS
        while now < self.end:
            now = min(now + step, self.end)
            self.set_clock(clock, now)
            for peer in peers:
                peer.stdin.write("tick\n")
            for index, peer in enumerate(peers):
                answer = peer.stdout.readline().split()
                if not answer or answer[0] != "done":
                    raise SystemExit(f"beat {index} stopped: {(self.work / f'peer{index}.log').read_text()[-3000:]}")
                sent[index] = int(answer[1])
        for peer in peers:
            peer.stdin.write("stop\n")
            peer.stdin.flush()
            peer.wait(60)
        say(f"Ostinato's beats: {sum(sent)} sends ({', '.join(map(str, sent))})")
        return sum(sent)

    @staticmethod
    def set_clock(path: Path, at: datetime) -> None:
        temporary = path.with_suffix(".new")
        temporary.write_text(at.isoformat())
        temporary.replace(path)

    def drain(self, expected: int) -> None:
        deadline = time.monotonic() + max(120, expected / 200)
        while time.monotonic() < deadline:
            if self.received_count() >= expected:
                return
            time.sleep(0.5)
        say(f"the worker received {self.received_count()} of {expected} messages")

    def received_count(self) -> int:
        return sum(1 for _ in self.receipts.open()) if self.receipts.exists() else 0

    # -- the comparison ------------------------------------------------------------------
    def report(self, stock_sends: int, ours_sends: int, stock_seconds: float, ours_seconds: float) -> int:
        received = [json.loads(line) for line in self.receipts.read_text().splitlines()]
        stock, ours = Counter(), Counter()
        for item in received:
            at = datetime.fromisoformat(item["fire_time"]).astimezone(UTC)
            if self.start <= at < self.end:
                (ours if item["sender"] else stock)[(item["key"], at)] += 1
        duplicates = sorted(k for k, n in ours.items() if n > 1)
        differences = comparison(set(stock), set(ours))
        unexplained = [d for d in differences if not d["explained"]]
        entries = sorted({key for key, _ in stock} | {key for key, _ in ours} | set(_entries()))
        rows = [{"entry": key, "stock": sum(1 for k, _ in stock if k == key), "ostinato": sum(1 for k, _ in ours if k == key)}
                for key in entries]
        print(f"window {self.start.isoformat()} to {self.end.isoformat()} ({self.args.hours:g} h), {len(entries)} entries")
        print(f"{'entry':<28} {'stock':>7} {'ostinato':>9}")
        for row in rows:
            print(f"{row['entry']:<28} {row['stock']:>7} {row['ostinato']:>9}")
        print(f"received: stock {sum(stock.values())} of {stock_sends} sent, Ostinato {sum(ours.values())} of {ours_sends}"
              f" sent (in the window); driven in {stock_seconds:.1f} s and {ours_seconds:.1f} s")
        print(f"fire times Ostinato sent twice: {len(duplicates)}")
        print(f"differences: {len(differences)} ({len(unexplained)} not a documented daylight-saving choice)")
        for item in differences:
            print(f"  {item['side']:<14} {item['entry']:<26} {item['local']}  {item['why']}")
        result = {"window": [self.start.isoformat(), self.end.isoformat()], "entries": rows, "duplicates": len(duplicates),
                  "differences": differences, "stock_sends": stock_sends, "ostinato_sends": ours_sends,
                  "stock_received": sum(stock.values()), "ostinato_received": sum(ours.values())}
        out = self.args.out or ROOT / "bench" / "results" / f"beat-compare-{datetime.now(UTC):%Y-%m-%d}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"written to {out}")
        ok = not duplicates and not unexplained and sum(ours.values()) > 0
        print("same fire times, except the documented daylight-saving choices" if ok else "MISMATCH")
        return 0 if ok else 1


def _entries() -> list[str]:
    from bench.beat.beat_app import compare_set

    return list(compare_set())


#: the zone each crontab entry is read in (the app's, or its own)
def _zone_of(entry: str) -> ZoneInfo:
    from bench.beat.beat_app import TIMEZONE, compare_set

    schedule = compare_set()[entry]["schedule"]
    return schedule.__dict__.get("tz") or ZoneInfo(TIMEZONE)


def comparison(stock: set, ours: set) -> list[dict]:
    """Each (entry, fire time) only one side sent, with its local time and whether it is one of
    the documented daylight-saving choices."""
    found = []
    for side, only in (("stock only", stock - ours), ("Ostinato only", ours - stock)):
        for entry, at in sorted(only):
            zone = _zone_of(entry) if entry.startswith("cron") else UTC
            local = at.astimezone(zone)
            why = explained(entry, at, side, zone)
            found.append({"side": side, "entry": entry, "fire_time": at.isoformat(),
                          "local": f"{local:%Y-%m-%d %H:%M:%S %Z}", "why": why or "NOT EXPLAINED",
                          "explained": why is not None})
    return found


def explained(entry: str, at: datetime, side: str, zone) -> str | None:
    """Why the two beats differ on this fire time, when it is a documented daylight-saving choice:

    - Ostinato only, at the very instant the clock jumps forward: a fixed time of the day that the
      spring gap removed runs once, at the gap's end (docs/reference/schedules.md);
    - stock only, one hour after a wall time the gap removed: Celery's beat computes the skipped
      wall time (02:30) and the clock reads it an hour later (03:30); Ostinato ran a fixed time at
      the gap's end instead, and skips the times of a rule that repeats through the hours."""
    if not entry.startswith("cron"):
        return None
    if side == "Ostinato only":
        before, after = (at - timedelta(seconds=1)).astimezone(zone).utcoffset(), at.astimezone(zone).utcoffset()
        if after > before:
            return "fixed time in the spring gap: Ostinato runs it once at the gap's end"
        return None
    wall = at.astimezone(zone).replace(tzinfo=None) - timedelta(hours=1)
    if wall.replace(tzinfo=zone).astimezone(UTC).astimezone(zone).replace(tzinfo=None) != wall:
        return f"Celery's beat runs {wall:%H:%M}, removed by the spring gap, an hour late"
    return None


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ostinato-beat-compare-") as work:
        return Run(args, Path(work)).main()


if __name__ == "__main__":
    sys.exit(main())
