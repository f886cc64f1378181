#!/usr/bin/env python3
"""Load benchmark (docs/reference/harnesses.md): the services' loop times, quiet and while the journal client ingests.

``bench/scale/load.py`` starts a private PostgreSQL cluster (fsync on, as in
production) and a Tansu broker, and

1. seeds the store in bulk (``load_data.seed``): 1,000,000 listed origins over
   four visit types (git, hg, svn, pypi), 10,000 periodic schedules (periods of
   1 to 60 minutes, trivial jobs of ``load_jobs.py``), 10,000 recurring tasks,
   then ``ANALYZE`` (a live database has the statistics autovacuum gathers);
2. produces 1,000,000 visit statuses of those origins to the journal topic (the
   producer of ``bench/scale/journal_client.py``), before anything is measured, so that
   the journal client later reads at full speed;
3. starts the services as real processes: two ``ostinato scheduler`` (nodes
   load-n1 and load-n2), ``ostinato runner --with-priority`` and ``ostinato
   orchestrator``, each with ``--metrics-port``; after a warm-up, scrapes their
   ``/metrics`` at the start and the end of a quiet period of ``--seconds``;
4. starts ``ostinato journal-client --once`` and scrapes the services again when
   it has read the whole topic and exits: the period under ingest;
5. prints, per service loop, the pass time quiet and under ingest (mean and a
   p99 estimated from the histogram buckets) and their ratio, picks and
   dispatches per second, and the journal client's ingest rate; ``--out`` writes
   the figures as JSON (default ``bench/results/load-<date>.json``).

Run from the repository root::

    .venv/bin/python bench/scale/load.py --quick          # 100,000 origins, 1,000 schedules, 100,000 statuses, 30 s
    .venv/bin/python bench/scale/load.py --out            # 1,000,000 origins, 10,000 schedules, 1,000,000 statuses, 60 s
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg
from rich.console import Console
from rich.table import Table

from bench.common.processes import stop_processes
from bench.common.report import RESULTS, code_version, result_header
from bench.scale.journal_client import TOPIC, produce
from bench.scale.load_data import Workload, journal_statuses, seed
from bench.scale.load_metrics import Snapshot, cpu_busy, cpu_times, period, process_cpu, scrape, wait_for_metrics
from ostinato.store.postgresql import PostgresStore
from test_servers.kafka import TansuBroker
from test_servers.postgres import PostgresCluster, free_port

FULL = {"origins": 1_000_000, "schedules": 10_000, "tasks": 10_000, "statuses": 1_000_000, "seconds": 60.0,
        "warmup": 30.0}
QUICK = {"origins": 100_000, "schedules": 1_000, "tasks": 1_000, "statuses": 100_000, "seconds": 30.0,
         "warmup": 15.0}
PARTITIONS = 4
SCHEDULER_CAPACITY = 16
WORKERS = 8


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the small variant (a few minutes)")
    for name, help_text in (("origins", "listed origins"), ("schedules", "periodic schedules"),
                            ("tasks", "recurring tasks"), ("statuses", "visit statuses in the journal")):
        parser.add_argument(f"--{name}", type=int, help=f"{help_text} (default {FULL[name]:,}; --quick {QUICK[name]:,})")
    parser.add_argument("--seconds", type=float, help="the quiet period (default 60; --quick 30)")
    parser.add_argument("--warmup", type=float, help="seconds the services run before the quiet period "
                                                     "(default 30; --quick 15)")
    parser.add_argument("--visit-seconds", type=float, default=0.05,
                        help=f"how long one simulated visit takes (default 0.05: with {WORKERS:d} workers, "
                             f"at most {int(WORKERS / 0.05):d} visits/s)")
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--no-durable", dest="durable", action="store_false", help="PostgreSQL with fsync off")
    parser.add_argument("--out", nargs="?", type=Path, const=RESULTS / f"load-{date.today().isoformat()}.json",
                        help="write the figures as JSON (default path bench/results/load-<date>.json)")
    parser.add_argument("--keep", action="store_true", help="keep the run directory (the services' logs)")
    args = parser.parse_args(argv)
    defaults = QUICK if args.quick else FULL
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    for name in ("origins", "statuses"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: expected at least 1, got {getattr(args, name)}")
    if min(args.schedules, args.tasks) < 0 or args.seconds <= 0 or args.warmup < 0:
        parser.error("--schedules and --tasks must be 0 or more, --seconds above 0, --warmup 0 or more")
    return args


@dataclass
class Service:
    name: str
    argv: list[str]
    env: dict[str, str]
    port: int
    proc: subprocess.Popen | None = None
    snapshots: list[Snapshot] = field(default_factory=list)


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.workload = Workload(args.origins, args.schedules, args.tasks, args.statuses, args.seed)
        self.run_dir = Path(tempfile.mkdtemp(prefix="ostinato-load-", dir="/tmp"))
        self.run_dir.chmod(0o755)
        self.logs = self.run_dir / "logs"
        self.logs.mkdir()
        self.console = Console(width=None if sys.stdout.isatty() else 160)
        self.results: dict[str, Any] = {}
        self.services: list[Service] = []
        self.cpu_seen: dict[str, dict[int, float]] = {"services": {}, "postgresql": {}}

    def say(self, text: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)

    # -- the run -------------------------------------------------------------------------
    def run(self) -> int:
        cluster = PostgresCluster(durable=self.args.durable, settings={"shared_buffers": "2GB", "max_connections": "200"})
        cluster.start()
        try:
            with TansuBroker({TOPIC: PARTITIONS}) as broker:
                return self._run(cluster, broker)
        finally:
            self.stop_services()
            cluster.stop()
            if self.args.keep:
                print(f"run directory kept: {self.run_dir}")
            else:
                shutil.rmtree(self.run_dir, ignore_errors=True)

    def _run(self, cluster: PostgresCluster, broker: TansuBroker) -> int:
        cluster.create_database("load")
        dsn = cluster.dsn("load")
        with psycopg.connect(dsn) as conn:
            self.results["postgresql"] = {"version": conn.execute("SHOW server_version").fetchone()[0].split()[0]}
        store = PostgresStore(dsn)
        store.init_schema()
        now = datetime.now(UTC)
        w = self.workload
        self.say(f"seeding PostgreSQL {dsn}: {w.origins:,} origins, {w.schedules:,} schedules, {w.tasks:,} tasks")
        self.results["seed"] = seed(store, w, now, self.say)
        began = time.monotonic()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("ANALYZE")
        self.results["seed"]["analyze_s"] = time.monotonic() - began
        store.close()

        self.say(f"producing {w.statuses:,} visit statuses to {TOPIC} ({PARTITIONS} partitions) on Tansu "
                 f"{broker.bootstrap_servers}")
        statuses = journal_statuses(w, now)
        self.results["produce"] = produce(broker, statuses, "msgpack")
        del statuses

        self.pg_pid = int((cluster.data_dir / "postmaster.pid").read_text().split()[0])
        self.start_services(dsn)
        self.say(f"services started; warm-up {self.args.warmup:.0f}s")
        self.watch(self.args.warmup)
        quiet = self.measure_quiet()
        ingest = self.measure_ingest(dsn, broker)
        self.results["periods"] = {"quiet": quiet, "ingest": ingest}
        codes = self.stop_services()
        self.results["exit_codes"] = codes
        self.report()
        self.write()
        broken = [name for name, code in codes.items() if code != 0]
        if broken:
            print(f"services that did not stop cleanly: {', '.join(broken)} (logs in {self.logs})")
            return 1
        return 0

    # -- services ------------------------------------------------------------------------
    def start_services(self, dsn: str) -> None:
        base = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
                "OSTINATO_DB": dsn, "OSTINATO_IMPORTS": "load_jobs",
                "LOAD_BENCH_VISIT_SECONDS": str(self.args.visit_seconds)}
        python = [sys.executable, "-m", "ostinato"]
        specs = [(f"scheduler-{i}", ["scheduler", "--node", f"load-n{i}", "--capacity", str(SCHEDULER_CAPACITY)])
                 for i in (1, 2)]
        specs += [("runner", ["runner", "--with-priority", "--workers", str(WORKERS)]),
                  ("orchestrator", ["orchestrator", "--workers", str(WORKERS)])]
        for name, argv in specs:
            port = free_port()
            service = Service(name, [*python, *argv, "--metrics-port", str(port)],
                              {**base, "OSTINATO_NODE": f"load-{name}"}, port)
            self.start(service)
            self.services.append(service)
        for service in self.services:
            wait_for_metrics(service.port)

    def start(self, service: Service) -> None:
        with open(self.logs / f"{service.name}.log", "ab") as out:
            service.proc = subprocess.Popen(service.argv, env=service.env, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, cwd=self.run_dir)

    def watch(self, seconds: float) -> None:
        """Sleep, checking that every service lives."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.check_alive()
            self.cpu_use()
            time.sleep(min(1.0, max(deadline - time.monotonic(), 0.0)))

    def check_alive(self) -> None:
        for service in self.services:
            if service.proc is not None and service.proc.poll() is not None:
                tail = (self.logs / f"{service.name}.log").read_text(errors="replace").splitlines()[-30:]
                raise RuntimeError(f"{service.name} exited with {service.proc.returncode}:\n" + "\n".join(tail))

    def cpu_use(self) -> dict[str, float]:
        """CPU seconds used so far by the services and by PostgreSQL (postmaster and backends). Called
        every second during the periods: a backend that ended (its client closed the connection)
        counts with its last reading."""
        self.cpu_seen["services"].update(process_cpu([s.proc.pid for s in self.services if s.proc is not None]))
        self.cpu_seen["postgresql"].update(process_cpu([self.pg_pid], [self.pg_pid]))
        return {name: sum(by_pid.values()) for name, by_pid in self.cpu_seen.items()}

    def scrape_all(self) -> dict[str, Snapshot]:
        return {service.name: scrape(service.port) for service in self.services}

    def stop_services(self, grace: float = 60.0) -> dict[str, int | None]:
        return stop_processes({service.name: service.proc for service in self.services}, grace)[0]

    # -- the two periods ------------------------------------------------------------------
    def measure_quiet(self) -> dict[str, Any]:
        self.say(f"quiet period: {self.args.seconds:.0f}s")
        load_before, cpu_before, ours_before = os.getloadavg()[0], cpu_times(), self.cpu_use()
        start = self.scrape_all()
        self.watch(self.args.seconds)
        end = self.scrape_all()
        ours = {k: (v - ours_before[k]) / (end[self.services[0].name].at - start[self.services[0].name].at)
                for k, v in self.cpu_use().items()}
        return {"load_average_1m": [load_before, os.getloadavg()[0]], "cpu_busy": cpu_busy(cpu_before, cpu_times()),
                "cpu_cores": ours,
                "services": {name: period(start[name], end[name]) for name in start}}

    def measure_ingest(self, dsn: str, broker: TansuBroker) -> dict[str, Any]:
        port = free_port()
        argv = [sys.executable, "-m", "ostinato", "journal-client", "--brokers", broker.bootstrap_servers,
                "--group-id", "load-bench", "--topic", TOPIC, "--once", "--json", "--metrics-port", str(port)]
        env = {**self.services[0].env, "OSTINATO_NODE": "load-journal"}
        self.say(f"ingest period: ostinato journal-client reads {self.workload.statuses:,} statuses")
        load_before, cpu_before, ours_before = os.getloadavg()[0], cpu_times(), self.cpu_use()
        start = self.scrape_all()
        began = time.monotonic()
        log = open(self.logs / "journal-client.log", "wb")
        client = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
                                  cwd=self.run_dir)
        progress: list[tuple[float, float]] = []  # (seconds since the start, statuses stored)
        timeout = max(600.0, self.workload.statuses / 500)
        client_cpu = 0.0
        try:
            while client.poll() is None:
                self.check_alive()
                self.cpu_use()
                client_cpu = process_cpu([client.pid]).get(client.pid, client_cpu)  # the last reading before it exits
                try:
                    stored = sum(v for (n, labels), v in scrape(port, timeout=2.0).counters.items()
                                 if n == "ostinato_outcomes_total" and dict(labels).get("kind") == "visit")
                    progress.append((time.monotonic() - began, stored))
                except OSError:
                    pass  # starting, or gone
                if time.monotonic() - began > timeout:
                    client.kill()
                    raise RuntimeError(f"the journal client did not finish in {timeout:.0f}s")
                time.sleep(1.0)
            end = self.scrape_all()
            wall = time.monotonic() - began
            cpu_after, ours_after = cpu_times(), self.cpu_use()
        finally:
            log.close()
        output = client.stdout.read().decode() if client.stdout else ""
        if client.returncode != 0:
            raise RuntimeError(f"ostinato journal-client exited with {client.returncode}: {output}\n"
                               + (self.logs / "journal-client.log").read_text(errors="replace")[-3000:])
        counters = json.loads(output)
        n = self.workload.statuses
        if counters.get("recorded") != n or counters.get("rejected"):
            raise RuntimeError(f"the journal client recorded {counters} of {n:,} statuses")
        # the steady rate: from the first scrape with statuses stored to the last
        seen = [(t, s) for t, s in progress if s > 0]
        steady = (seen[-1][1] - seen[0][1]) / (seen[-1][0] - seen[0][0]) if len(seen) >= 2 and seen[-1][0] > seen[0][0] else None
        ours = {k: (v - ours_before[k]) / wall for k, v in ours_after.items()}
        return {"load_average_1m": [load_before, os.getloadavg()[0]], "cpu_busy": cpu_busy(cpu_before, cpu_after),
                "cpu_cores": {**ours, "journal_client": client_cpu / wall},
                "services": {name: period(start[name], end[name]) for name in start},
                "journal": {"statuses": n, "wall_s": wall, "statuses_per_s_wall": n / wall,
                            "client_s": counters.get("seconds"),
                            "statuses_per_s_client": n / counters["seconds"] if counters.get("seconds") else None,
                            "statuses_per_s_steady": steady, "counters": counters}}

    # -- output ---------------------------------------------------------------------------
    def report(self) -> None:
        quiet, ingest = self.results["periods"]["quiet"], self.results["periods"]["ingest"]
        w = self.workload
        table = Table(title=f"Ostinato under load: {w.origins:,} origins, {w.schedules:,} schedules, {w.tasks:,} "
                            f"tasks; quiet {quiet['services'][self.services[0].name]['seconds']:.0f}s vs "
                            f"ingest of {w.statuses:,} statuses ({ingest['journal']['wall_s']:.0f}s)")
        table.caption = "each cell: quiet → under ingest; × = under ingest ÷ quiet; p99 estimated from the buckets"
        columns = ("loop", "passes/s", "pass mean ms", "×", "pass p99 ms", "×", "picks/s", "pick mean ms", "×",
                   "dispatched/s")
        for column in columns:
            table.add_column(column, justify="left" if column == "loop" else "right")
        for name in quiet["services"]:
            q_loops, i_loops = quiet["services"][name]["loops"], ingest["services"][name]["loops"]
            for loop in sorted(set(q_loops) | set(i_loops)):
                q, i = q_loops.get(loop, {}), i_loops.get(loop, {})
                if not (q.get("loop", {}).get("count") or i.get("loop", {}).get("count")):
                    continue
                table.add_row(name if name.startswith(loop) else f"{name}: {loop}",
                              _pair(q, i, "loop", "per_s", "{:.1f}"),
                              _pair(q, i, "loop", "mean_ms", "{:.1f}"), _ratio(q, i, "loop", "mean_ms"),
                              _pair(q, i, "loop", "p99_ms", "{:.0f}"), _ratio(q, i, "loop", "p99_ms"),
                              _pair(q, i, "pick", "per_s", "{:.1f}"),
                              _pair(q, i, "pick", "mean_ms", "{:.1f}"), _ratio(q, i, "pick", "mean_ms"),
                              f"{q.get('dispatches_per_s', 0):.1f} → {i.get('dispatches_per_s', 0):.1f}")
        self.console.print(table)
        journal = ingest["journal"]
        steady = journal["statuses_per_s_steady"]
        print(f"journal client: {journal['statuses']:,} statuses in {journal['wall_s']:.1f}s from launch to exit = "
              f"{journal['statuses_per_s_wall']:,.0f}/s; {journal['statuses_per_s_client'] or 0:,.0f}/s by its own "
              f"clock ({journal['client_s']}s); steady {steady or 0:,.0f}/s; "
              f"{journal['counters'].get('changed', 0):,} changed the visit stats")
        outcomes = {period_name: {name: figures["outcomes"] for name, figures in p["services"].items()}
                    for period_name, p in (("quiet", quiet), ("ingest", ingest))}
        print(f"outcomes stored by the services (runs, visits): quiet {_outcomes(outcomes['quiet'])}; "
              f"ingest {_outcomes(outcomes['ingest'])}")
        print("CPU used, in cores: " + "; ".join(
            f"{label} " + ", ".join(f"{k} {v:.2f}" for k, v in p["cpu_cores"].items())
            for label, p in (("quiet", quiet), ("ingest", ingest))))
        print(f"machine CPU busy: quiet {quiet['cpu_busy']:.0%}, ingest {ingest['cpu_busy']:.0%} of {os.cpu_count()} "
              f"cores (every process, other users' too); load average (1 min) at start/end: quiet "
              f"{_loads(quiet)}, ingest {_loads(ingest)}")
        print(f"seeding: {', '.join(f'{k} {v:.1f}' for k, v in self.results['seed'].items())}; "
              f"produce {self.results['produce']['messages_per_s']:,.0f} messages/s")

    def write(self) -> None:
        if self.args.out is None:
            return
        document = {**result_header("bench/scale/load.py", self.results), "code": code_version(),
                    "parameters": {"origins": self.workload.origins, "schedules": self.workload.schedules,
                                   "tasks": self.workload.tasks, "statuses": self.workload.statuses,
                                   "seconds": self.args.seconds, "warmup": self.args.warmup, "seed": self.args.seed,
                                   "durable": self.args.durable, "partitions": PARTITIONS,
                                   "visit_seconds": self.args.visit_seconds,
                                   "scheduler_capacity": SCHEDULER_CAPACITY, "workers": WORKERS},
                    "results": self.results}
        self.args.out.parent.mkdir(parents=True, exist_ok=True)
        self.args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        print(f"results written to {self.args.out}")


def _loads(figures: dict[str, Any]) -> str:
    return " → ".join(f"{v:.1f}" for v in figures["load_average_1m"])


def _figure(figures: dict[str, Any], kind: str, key: str) -> float | None:
    return figures.get(kind, {}).get(key)


def _pair(q: dict[str, Any], i: dict[str, Any], kind: str, key: str, fmt: str) -> str:
    a, b = _figure(q, kind, key), _figure(i, kind, key)
    return f"{'-' if a is None else fmt.format(a)} → {'-' if b is None else fmt.format(b)}"


def _ratio(q: dict[str, Any], i: dict[str, Any], kind: str, key: str) -> str:
    a, b = _figure(q, kind, key), _figure(i, kind, key)
    return f"{b / a:.2f}" if a and b is not None else "-"


def _outcomes(by_service: dict[str, dict[str, int]]) -> str:
    return ", ".join(f"{name} {o['run']}/{o['visit']}" for name, o in by_service.items())


def main(argv: list[str] | None = None) -> int:
    return Bench(parse_args(argv)).run()


if __name__ == "__main__":
    sys.exit(main())
