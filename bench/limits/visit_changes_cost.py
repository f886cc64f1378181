"""What carrying change times costs the visit-stats write: plain statuses against the same statuses with times.

A visit status may say what its visit saw of the origin's changes (``newest_change_at``, ``change_times``:
see ``domain/visit_changes.py``). The store then also reads the newest change the last visit saw and
writes the side table ``origin_visit_changes``. This measures that cost on each store, in one run:

1. **seed**: N listed ``git`` origins of one lister, and a first successful visit of each (untimed). The
   origins are split in two interleaved halves (even and odd indexes). The *plain* half's first visits
   carry no change fields, as swh's face sends them. The *timed* half's carry change times, so that its
   side-table rows exist, as once loaders send times;
2. **rounds**: each round records ``--batch`` statuses of each half through
   ``Store.record_visit_statuses(batch, FeedbackPolicy(), now=...)``, one call per half, as the journal
   client does. The two calls take turns at going first. Every status is the next successful visit of a
   distinct origin, with a new snapshot. Both halves get the same statuses in shape: the timed ones only
   add 1 to 8 change times, spread between the origin's previous visit and this one, and
   ``newest_change_at``, the newest of them. A round walks on through each half in a random order. After
   the last origin of a half it starts again, one visit later.

A call's time is its wall time, including the checks of the statuses and the commit. PostgreSQL runs
durable (fsync on, as in production) unless ``--no-durable`` is given. SQLite uses the store's own
settings (WAL, ``synchronous=NORMAL``). Per store the script prints each half's median statuses per
second, and the ratio timed / plain: the median of the rounds' own ratios (each from two calls made
back to back), and the ratio of the summed times. The first ``--warm-up`` rounds are not counted. It
checks every answer: each call changes ``--batch`` stats, and the last times sent are what
``get_visit_changes`` reads back.

    .venv/bin/python bench/limits/visit_changes_cost.py                     # 100,000 origins, both stores
    .venv/bin/python bench/limits/visit_changes_cost.py --quick --db sqlite  # 10,000 origins, 10 rounds
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.common.report import RESULTS, code_version, console, progress, result_header
from bench.limits.tasks import fresh_store
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus
from ostinato.store.interface import Store

STORES = ("sqlite", "postgresql")
VISIT_TYPE = "git"
FEEDBACK = FeedbackPolicy()
SEED_BATCH = 10_000
#: the first visits are this long before the run; the rounds' visits then follow each other
FIRST_VISIT_AGO = timedelta(days=60)
MAX_TIMES = 8


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, help="listed origins N, half of them timed (default 100000; "
                        "10000 with --quick)")
    parser.add_argument("--batch", type=int, default=1_000, help="statuses per record_visit_statuses call "
                        "(default 1000, as the journal client)")
    parser.add_argument("--rounds", type=int, help="counted rounds, one call of each half (default 40; 10 with --quick)")
    parser.add_argument("--warm-up", type=int, default=2, help="rounds run first and not counted (default 2)")
    parser.add_argument("--db", default=",".join(STORES), help="comma-separated stores among sqlite,postgresql "
                        "(default both)")
    parser.add_argument("--quick", action="store_true", help="the short form: 10,000 origins, 10 rounds")
    parser.add_argument("--counted", action="store_true", help="every status also counts its changes (changes: the "
                        "number of times), so that the plain half too learns from counts: the times' own cost, "
                        "without the changed / unchanged evidence the plain half otherwise keeps")
    parser.add_argument("--no-durable", dest="durable", action="store_false", help="PostgreSQL with fsync off")
    parser.add_argument("--seed", type=int, default=7, help="of the random order, snapshots and change times")
    parser.add_argument("--json", nargs="?", type=Path, const=True, default=None, metavar="PATH",
                        help="write the results as JSON (default path bench/results/visit-changes-cost-<date>.json)")
    args = parser.parse_args(argv)
    args.origins = args.origins or (10_000 if args.quick else 100_000)
    args.rounds = args.rounds or (10 if args.quick else 40)
    args.db = [s.strip() for s in args.db.split(",") if s.strip()]
    if not args.db or set(args.db) - set(STORES):
        parser.error(f"--db: expected some of {', '.join(STORES)}, got {args.db}")
    if args.batch < 1 or args.rounds < 1 or args.warm_up < 0 or args.origins < 2 * args.batch:
        parser.error("--batch and --rounds at least 1, --warm-up at least 0, --origins at least twice --batch")
    if args.json is True:
        args.json = RESULTS / f"visit-changes-cost-{date.today().isoformat()}.json"
    return args


class Workload:
    """The origins and their statuses: each half's origins in a random order, visited in turn."""

    def __init__(self, n: int, batch: int, seed: int, now: datetime, counted: bool = False) -> None:
        self.n, self.batch, self.now, self.counted = n, batch, now, counted
        self.random = random.Random(seed)
        self.halves = {"plain": list(range(0, n, 2)), "timed": list(range(1, n, 2))}
        self.size = min(len(h) for h in self.halves.values())
        for half in self.halves.values():
            self.random.shuffle(half)
        self.last: dict[int, tuple[int, datetime]] = {}  # origin -> (its last visit's number, its date)
        self.first_date = now - FIRST_VISIT_AGO

    @staticmethod
    def url(i: int) -> str:
        return f"https://forge.example.org/user{i % 997}/project-{i}"

    def listed(self) -> list[list[ListedOrigin]]:
        return [[ListedOrigin(self.url(i), VISIT_TYPE) for i in range(start, min(start + SEED_BATCH, self.n))]
                for start in range(0, self.n, SEED_BATCH)]

    def _times(self, since: datetime, until: datetime) -> tuple[datetime, ...]:
        span = (until - since).total_seconds()
        return tuple(sorted(since + timedelta(seconds=int(span * self.random.random()) + 1)
                            for _ in range(self.random.randint(1, MAX_TIMES))))

    def status(self, i: int, when: datetime, timed: bool) -> VisitStatus:
        number, before = self.last.get(i, (0, when - timedelta(days=30)))
        self.last[i] = (number + 1, when)
        snapshot = hashlib.sha1(f"{i}/{number + 1}".encode()).digest()
        times = self._times(before, when)  # drawn for both halves, which thus get the same shapes
        changes = len(times) if self.counted else None
        if not timed:
            return VisitStatus(self.url(i), number + 1, VISIT_TYPE, JournalStatus.FULL, when, snapshot, changes)
        return VisitStatus(self.url(i), number + 1, VISIT_TYPE, JournalStatus.FULL, when, snapshot, changes,
                           newest_change_at=times[-1], change_times=times)

    def first_visits(self) -> list[list[VisitStatus]]:
        statuses = [self.status(i, self.first_date + timedelta(seconds=i % 86_400), i % 2 == 1) for i in range(self.n)]
        return [statuses[start:start + SEED_BATCH] for start in range(0, self.n, SEED_BATCH)]

    def round(self, number: int, total: int) -> dict[str, list[VisitStatus]]:
        """Round ``number`` of ``total``: a batch of each half, dated after every earlier visit of its origins."""
        per_cycle = self.size // self.batch
        cycle, offset = divmod(number, per_cycle)
        offset *= self.batch
        cycles = total // per_cycle + 1
        # cycle c's visits lie in the c-th of ``cycles`` equal slices of the last FIRST_VISIT_AGO (but a day),
        # in the order of the half
        slice_ = (FIRST_VISIT_AGO - timedelta(days=1)) / cycles
        base = self.first_date + timedelta(days=1) + slice_ * cycle
        return {name: [self.status(i, base + slice_ * ((offset + k) / self.size), name == "timed")
                       for k, i in enumerate(half[offset:offset + self.batch])]
                for name, half in self.halves.items()}


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes, from /proc (those gone count nothing)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return total


def server_cpu(store: Store) -> Callable[[], float]:
    """The CPU seconds the database server has used so far: PostgreSQL's postmaster and all its children (the
    backends, the WAL writer, the checkpointer, autovacuum); nothing for SQLite, which runs in this process."""
    if store.db.name != "postgresql":
        return lambda: 0.0
    with store.db.write() as conn:
        backend = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
    postmaster = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])

    def children() -> list[int]:
        found = [postmaster]
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                    found.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
        return found

    return lambda: cpu_seconds(children())


def run_store(name: str, store: Store, args: argparse.Namespace, now: datetime) -> dict[str, Any]:
    work = Workload(args.origins, args.batch, args.seed, now, args.counted)
    lister = store.get_or_create_lister("bench", "visit-changes-cost", now)
    with progress(f"{name}: seed", args.origins * 2) as advance:
        for listed in work.listed():
            store.record_listed_origins(lister.id, listed, now)
            advance(len(listed))
        for statuses in work.first_visits():
            store.record_visit_statuses(statuses, FEEDBACK, now=now)
            advance(len(statuses))
    seconds: dict[str, list[float]] = {"plain": [], "timed": []}
    cpu: dict[str, dict[str, float]] = {half: {"client": 0.0, "server": 0.0} for half in seconds}
    server = server_cpu(store)
    total = args.warm_up + args.rounds
    last_timed: list[VisitStatus] = []
    with progress(f"{name}: rounds", total) as advance:
        for number in range(total):
            batches = work.round(number, total)
            order = ("plain", "timed") if number % 2 == 0 else ("timed", "plain")
            for half in order:
                server_before, client_before = server(), time.process_time()
                started = time.perf_counter()
                changed = store.record_visit_statuses(batches[half], FEEDBACK, now=now)
                spent = time.perf_counter() - started
                client, server_after = time.process_time() - client_before, server()
                if changed != args.batch:
                    raise SystemExit(f"{name}: a {half} call changed {changed} stats, expected {args.batch}")
                if number >= args.warm_up:
                    seconds[half].append(spent)
                    cpu[half]["client"] += client
                    cpu[half]["server"] += server_after - server_before
            last_timed = batches["timed"]
            advance(1)
    check_kept(name, store, last_timed)
    rates = {half: args.batch / statistics.median(values) for half, values in seconds.items()}
    ratios = [p / t for p, t in zip(seconds["plain"], seconds["timed"], strict=True)]
    spent_cpu = {half: by["client"] + by["server"] for half, by in cpu.items()}
    return {"statuses_per_s": rates, "ratio_median": statistics.median(ratios),
            "ratio_of_sums": sum(seconds["plain"]) / sum(seconds["timed"]), "round_ratios": ratios,
            "cpu_ratio": spent_cpu["plain"] / spent_cpu["timed"],
            "cpu_ms_per_status": {half: {part: 1000 * v / (args.rounds * args.batch) for part, v in by.items()}
                                  for half, by in cpu.items()},
            "seconds": seconds}


def check_kept(name: str, store: Store, sent: list[VisitStatus]) -> None:
    """What the store reads back of the last timed batch is what it was sent."""
    kept = {(c.url, c.visit_type): c for c in store.get_visit_changes([(s.origin, s.type) for s in sent])}
    wrong = [s.origin for s in sent if (s.origin, s.type) not in kept
             or kept[(s.origin, s.type)].change_times != s.change_times
             or kept[(s.origin, s.type)].newest_change_at != s.newest_change_at
             or kept[(s.origin, s.type)].status_date != s.date]
    if wrong:
        raise SystemExit(f"{name}: {len(wrong)} origins read back other change times than sent, e.g. {wrong[0]}")


def report(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"{args.origins:,} origins (half timed); {args.batch:,} statuses a call{', counted' if args.counted else ''}; "
          f"{args.rounds} rounds after {args.warm_up} of warm-up; PostgreSQL {'durable' if args.durable else 'not durable'}")
    print(f"{'store':<11} {'plain/s':>9} {'timed/s':>9} {'timed ÷ plain':>14} {'(of sums)':>10} {'rounds ≥ 0.90':>14}"
          f" {'CPU µs/status plain':>20} {'timed':>13} {'CPU ratio':>10}")
    for name, r in results.items():
        rates, ratios, cpu = r["statuses_per_s"], r["round_ratios"], r["cpu_ms_per_status"]
        above = sum(1 for x in ratios if x >= 0.90)
        plain, timed = ({part: 1000 * v for part, v in cpu[half].items()} for half in ("plain", "timed"))
        print(f"{name:<11} {rates['plain']:>9,.0f} {rates['timed']:>9,.0f} {r['ratio_median']:>13.3f}× "
              f"{r['ratio_of_sums']:>9.3f}× {above:>8}/{len(ratios)} {plain['client']:>10.0f} + {plain['server']:>4.0f}"
              f" {timed['client']:>6.0f} + {timed['server']:>4.0f} {r['cpu_ratio']:>9.3f}×")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()
    now = datetime.now(UTC).replace(microsecond=0)
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="visit-changes-cost-") as workdir:
        for name in args.db:
            with fresh_store(name, Path(workdir), args.durable) as (store, version):
                results[name] = {"version": version, **run_store(name, store, args, now)}
    report(results, args)
    if args.json is not None:
        document = {**result_header("bench/limits/visit_changes_cost.py", results), "code": code,
                    "parameters": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
                    | {"now": now.isoformat()}, "results": results}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
        console.print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
