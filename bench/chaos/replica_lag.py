"""The replica's lag at the feed's rate: how far a streaming standby falls behind while visit statuses pour in.

In one run, the benchmark

1. starts a private PostgreSQL primary (``PostgresCluster``, fsync on, the WAL settings of ``bench/limits/limits.py``) and
   seeds a template database with N listed origins of one lister, as ``bench/scale/journal_group.py`` does (its
   ``seed``; ``bench/origins_data.Dataset``), then ``VACUUM (ANALYZE)``;
2. builds a streaming standby of it (``PostgresStandby``: ``pg_basebackup -R``, hot standby, on the same machine);
3. runs phases, each on a fresh clone of the template (``CREATE DATABASE … STRATEGY FILE_COPY``, which makes a
   checkpoint: each phase starts right after one, so its WAL carries a full-page image of every page it touches
   first, the dear end of a checkpoint cycle): W writer processes (``bench/chaos/replica_lag_writer.py``) each feed their
   share of the journal's first M statuses (split by origin, as a consumer group's partitions are) straight into
   the store's batch path, ``store.record_visit_statuses(batch, policy, now=…)`` in batches of 1,000, as the journal
   client does: **the writers drive the store directly, without Kafka** (``bench/scale/journal_client.py`` measures what
   the client adds). Phases: asynchronous replication with 1 writer, then with synchronous replication
   (``synchronous_standby_names = '*'``, ``synchronous_commit = on``) with 1 writer, then asynchronous with 2 and 4;
   ``--repeat R`` runs that sequence R times (the ratios below are then of the medians over the rounds);
4. while feeding, samples every 0.5 s on the primary ``pg_stat_replication`` (write, flush and replay lag, and
   the bytes between ``pg_current_wal_lsn()`` and the standby's ``replay_lsn``) and on the standby
   ``now() - pg_last_xact_replay_timestamp()`` and the read routing's own lag (``bench/chaos/replica_lag_sampling.py``);
   after the feed, waits until the standby has replayed the primary's last byte (the catch-up), and checks that
   both servers then hold the same visit stats.

It prints, per phase, the statuses per second, the WAL bytes per second (and per status), the replay lag's
median / p90 / max in seconds and bytes, whether the standby stayed within the default ``read_max_lag`` (read from
``ostinato.config.Settings``), the catch-up, and the CPU time of each server and of the standby's replay process
per status; then the ratios within the run (W writers against one, synchronous against asynchronous). The JSON
goes to ``bench/results/replica-lag-<date>-<commit>-<origins>.json``.

    .venv/bin/python bench/chaos/replica_lag.py                  # 10⁶ origins, 300,000 statuses a phase
    .venv/bin/python bench/chaos/replica_lag.py --repeat 3       # the same three times over, alternating
    .venv/bin/python bench/chaos/replica_lag.py --quick          # 20,000 origins and statuses
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg
from rich.console import Console
from rich.table import Table

from bench.chaos.replica_lag_sampling import LagSampler, quantiles, samples_json, summary, tree_cpu
from bench.common.report import RESULTS, code_version, console, result_header
from bench.limits.limits import WAL_SETTINGS
from bench.limits.origins_data import Dataset
from bench.scale.journal_group import seed
from ostinato.config import Settings
from test_servers.postgres import PostgresCluster, PostgresStandby

WRITER = Path(__file__).with_name("replica_lag_writer.py")
TEMPLATE = "template_lag"
CATCH_UP_TIMEOUT = 1800.0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, help="listed origins (default 1,000,000; --quick 20,000)")
    parser.add_argument("--statuses", type=int, help="statuses fed in each phase (default 300,000; --quick 20,000)")
    parser.add_argument("--quick", action="store_true", help="20,000 origins and statuses: a check that it works")
    parser.add_argument("--writers", default="1,2,4", help="writer processes of the asynchronous phases")
    parser.add_argument("--sync-writers", default="1", help="writer processes of the synchronous phases ('' for none)")
    parser.add_argument("--repeat", type=int, default=1, help="run the whole sequence of phases this many times")
    parser.add_argument("--batch-size", type=int, default=1000, help="statuses per record_visit_statuses call")
    parser.add_argument("--every", type=float, default=0.5, help="seconds between two samples of the lag")
    parser.add_argument("--shared-buffers", default="2GB", help="shared_buffers of each server (default 2GB)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args(argv)
    args.origins = args.origins or (20_000 if args.quick else 1_000_000)
    args.statuses = args.statuses or (20_000 if args.quick else 300_000)
    args.writers = [int(w) for w in args.writers.split(",") if w]
    args.sync_writers = [int(w) for w in args.sync_writers.split(",") if w]
    return args


def phases(args: argparse.Namespace) -> list[tuple[int, bool, int]]:
    """(writers, synchronous, round) in the order run: each synchronous phase right after the asynchronous one
    with as many writers (if any), so that the ratio between them is taken close in time on a shared machine; the
    whole sequence ``--repeat`` times."""
    order: list[tuple[int, bool]] = []
    for w in args.writers:
        order.append((w, False))
        if w in args.sync_writers:
            order.append((w, True))
    order += [(w, True) for w in args.sync_writers if w not in args.writers]
    return [(w, synchronous, r) for r in range(1, args.repeat + 1) for w, synchronous in order]


def set_synchronous(dsn: str, synchronous: bool) -> None:
    """Replication made synchronous (the standby, whatever its name, must flush each commit first) or not; waits
    until ``pg_stat_replication`` says so."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        if synchronous:
            conn.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
            conn.execute("ALTER SYSTEM SET synchronous_commit = 'on'")
        else:
            conn.execute("ALTER SYSTEM RESET synchronous_standby_names")
            conn.execute("ALTER SYSTEM RESET synchronous_commit")
        conn.execute("SELECT pg_reload_conf()")
        wanted = "sync" if synchronous else "async"
        deadline = time.monotonic() + 30
        while (conn.execute("SELECT sync_state FROM pg_stat_replication").fetchone() or (None,))[0] != wanted:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the standby is not {wanted} after 30 s")
            time.sleep(0.1)


def current_lsn(dsn: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]


def wait_replayed(standby_dsn: str, lsn: str, timeout: float = CATCH_UP_TIMEOUT) -> float:
    """Wait until the standby has replayed up to ``lsn``; the wall-clock time (``time.time()``) it had."""
    with psycopg.connect(standby_dsn, autocommit=True) as conn:
        deadline = time.monotonic() + timeout
        while not conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,)).fetchone()[0]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the standby did not replay up to {lsn} in {timeout:.0f} s")
            time.sleep(0.05)
        return time.time()


def lsn_bytes(dsn: str, end: str, start: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return int(conn.execute("SELECT pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)", (end, start)).fetchone()[0])


def fed_stats(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM origin_visit_stats WHERE last_status_date IS NOT NULL").fetchone()[0]


def run_phase(writers: int, synchronous: bool, round_: int, primary: PostgresCluster, standby: PostgresStandby,
              now: datetime, args: argparse.Namespace, max_lag: float) -> dict[str, Any]:
    name = f"run_{writers}_{'sync' if synchronous else 'async'}_{round_}"
    with psycopg.connect(primary.dsn("postgres"), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE} STRATEGY FILE_COPY")
    set_synchronous(primary.dsn(), synchronous)
    wait_replayed(standby.dsn(), current_lsn(primary.dsn()))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, str(WRITER), primary.dsn(name), str(args.origins), str(args.statuses),
                               str(writers), str(i), str(args.batch_size), now.isoformat()],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
             for i in range(writers)]
    try:
        for proc in procs:
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"writer {proc.pid} did not get ready")
        sampler = LagSampler(primary.dsn(), standby.dsn(), args.every)
        sampler.start()
        time.sleep(2 * args.every)  # a sample or two before the feed
        lsn_before, cpu_before = current_lsn(primary.dsn()), (tree_cpu(primary.data_dir), tree_cpu(standby.data_dir))
        go = time.time()
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        with ThreadPoolExecutor(len(procs)) as pool:
            outputs = [out for out, _ in pool.map(lambda p: p.communicate(timeout=CATCH_UP_TIMEOUT), procs)]
        if any(proc.returncode for proc in procs):
            raise RuntimeError(f"a writer failed: {[proc.returncode for proc in procs]}")
        lsn_after = current_lsn(primary.dsn())
        caught_up = wait_replayed(standby.dsn(), lsn_after)
        cpu_after = (tree_cpu(primary.data_dir), tree_cpu(standby.data_dir))
        time.sleep(2 * args.every)
        samples = sampler.stop()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    batches = [tuple(map(float, line.split()[1:])) for out in outputs for line in out.splitlines()
               if line.startswith("batch ")]
    writer_cpu = sum(float(line.split()[1]) for out in outputs for line in out.splitlines() if line.startswith("cpu "))
    first, last = min(b[0] for b in batches), max(b[1] for b in batches)
    n = int(sum(b[2] for b in batches))
    seconds = last - first
    wal = lsn_bytes(primary.dsn(), lsn_after, lsn_before)
    on_primary, on_standby = fed_stats(primary.dsn(name)), fed_stats(standby.dsn(name))
    primary_cpu = cpu_after[0]["total"] - cpu_before[0]["total"]
    standby_cpu = cpu_after[1]["total"] - cpu_before[1]["total"]
    replay_cpu = cpu_after[1]["startup"] - cpu_before[1]["startup"]
    with psycopg.connect(primary.dsn("postgres"), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
    return {
        "phase": name, "round": round_, "writers": writers, "replication": "synchronous" if synchronous else "asynchronous",
        "statuses": n, "seconds": seconds, "statuses_per_s": n / seconds,
        "store_share": sum(b[1] - b[0] for b in batches) / (writers * seconds),
        "batch_ms": quantiles([1000 * (b[1] - b[0]) for b in batches]),
        "wal_bytes": wal, "wal_bytes_per_s": wal / seconds, "wal_bytes_per_status": wal / n,
        "catch_up_s": max(0.0, caught_up - last), "replayed_bytes_per_s": wal / (caught_up - go),
        "lag": summary(samples, first, last, max_lag),
        "cpu_s": {"writers": writer_cpu, "primary": primary_cpu, "standby": standby_cpu, "standby_replay": replay_cpu},
        "cpu_us_per_status": {"writers": 1e6 * writer_cpu / n, "primary": 1e6 * primary_cpu / n,
                              "standby": 1e6 * standby_cpu / n, "standby_replay": 1e6 * replay_cpu / n},
        "replay_ceiling_statuses_per_s": n / replay_cpu if replay_cpu else None,
        "visit_stats_fed": {"primary": on_primary, "standby": on_standby},
        "sampler_failures": sampler.failures, "load_average_1min": os.getloadavg()[0],
        "samples": samples_json(samples, go),
    }


def fmt(value: float | None, scale: float = 1.0, digits: int = 2) -> str:
    return "–" if value is None else f"{value / scale:,.{digits}f}"


def report(results: list[dict[str, Any]], max_lag: float) -> None:
    table = Table(title=f"the standby's lag while feeding (default read_max_lag {max_lag:g} s)")
    for title in ("phase", "statuses/s", "WAL MB/s", "WAL B/status", "replay lag s, med / p90 / max",
                  "replay behind MB, med / p90 / max", "standby age s, max", f"≤ {max_lag:g} s", "catch-up s",
                  "CPU µs/status, primary / standby (replay)"):
        table.add_column(title, justify="left" if title == "phase" else "right")
    for r in results:
        lag, b, cpu = r["lag"]["replay_lag_s"], r["lag"]["replay_bytes"], r["cpu_us_per_status"]
        table.add_row(
            f"{r['writers']} writer{'s' if r['writers'] > 1 else ''}, {r['replication'][:5]} #{r['round']}",
            f"{r['statuses_per_s']:,.0f}", fmt(r["wal_bytes_per_s"], 1e6, 1), f"{r['wal_bytes_per_status']:,.0f}",
            f"{fmt(lag['median'])} / {fmt(lag['p90'])} / {fmt(lag['max'])}",
            f"{fmt(b['median'], 1e6)} / {fmt(b['p90'], 1e6)} / {fmt(b['max'], 1e6)}",
            fmt(r["lag"]["standby_replay_age_s"]["max"]), "yes" if r["lag"]["under_read_max_lag"] else "NO",
            fmt(r["catch_up_s"]), f"{cpu['primary']:,.0f} / {cpu['standby']:,.0f} ({cpu['standby_replay']:,.0f})")
    Console(stderr=True, width=max(console.width, 190)).print(table)  # wider than a log file's 80 columns


def ratios(results: list[dict[str, Any]]) -> dict[str, float]:
    """The run's figures as ratios, each of the medians over the rounds: W writers against one (asynchronous),
    synchronous against asynchronous at the same writers, and the standby's CPU against the primary's."""
    groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault((r["writers"], r["replication"]), []).append(r)

    def median(writers: int, replication: str, figure: str) -> float:
        return statistics.median(r[figure] for r in groups[(writers, replication)])

    out: dict[str, float] = {}
    for writers, replication in groups:
        if replication == "asynchronous" and writers != 1 and (1, replication) in groups:
            for figure, suffix in (("statuses_per_s", ""), ("wal_bytes_per_s", "_wal")):
                out[f"async_{writers}_writers_over_1{suffix}"] = (median(writers, replication, figure)
                                                                  / median(1, replication, figure))
        if replication == "synchronous" and (writers, "asynchronous") in groups:
            out[f"sync_over_async_{writers}_writers"] = (median(writers, replication, "statuses_per_s")
                                                         / median(writers, "asynchronous", "statuses_per_s"))
        out[f"{replication[:5]}_{writers}_standby_cpu_over_primary"] = statistics.median(
            r["cpu_s"]["standby"] / max(r["cpu_s"]["primary"], 1e-9) for r in groups[(writers, replication)])
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()
    now = datetime.now(UTC).replace(microsecond=0)
    max_lag = Settings().read_max_lag.total_seconds()
    data = Dataset(args.origins, 7, now)
    settings = {"shared_buffers": args.shared_buffers, **WAL_SETTINGS}
    results: list[dict[str, Any]] = []
    with PostgresCluster(durable=True, settings=settings) as primary:
        primary.create_database(TEMPLATE)
        seed(primary.dsn(TEMPLATE), data, now, 10_000, 0)
        with psycopg.connect(primary.dsn(TEMPLATE), autocommit=True) as conn:
            conn.execute("VACUUM (ANALYZE)")
            version = conn.execute("SHOW server_version").fetchone()[0]
        with PostgresStandby(primary) as standby:
            wait_replayed(standby.dsn(), current_lsn(primary.dsn()))
            console.print(f"{args.origins:,} origins on a primary (port {primary.port}) and its streaming standby "
                          f"(port {standby.port}); {args.statuses:,} statuses a phase, writers driving the store "
                          f"directly (no Kafka), batches of {args.batch_size:,}")
            for writers, synchronous, round_ in phases(args):
                r = run_phase(writers, synchronous, round_, primary, standby, now, args, max_lag)
                results.append(r)
                lag = r["lag"]
                console.print(
                    f"{r['phase']}: {r['statuses_per_s']:,.0f} statuses/s, WAL {r['wal_bytes_per_s'] / 1e6:.1f} MB/s "
                    f"({r['wal_bytes_per_status']:,.0f} B a status); replay lag median / p90 / max "
                    f"{fmt(lag['replay_lag_s']['median'])} / {fmt(lag['replay_lag_s']['p90'])} / "
                    f"{fmt(lag['replay_lag_s']['max'])} s, {fmt(lag['replay_bytes']['median'], 1e6)} / "
                    f"{fmt(lag['replay_bytes']['p90'], 1e6)} / {fmt(lag['replay_bytes']['max'], 1e6)} MB behind; "
                    f"within read_max_lag ({max_lag:g} s): {'yes' if lag['under_read_max_lag'] else 'NO'}; caught up "
                    f"{r['catch_up_s']:.2f} s after the feed; visit stats fed {r['visit_stats_fed']['primary']:,} on "
                    f"the primary, {r['visit_stats_fed']['standby']:,} on the standby")
            set_synchronous(primary.dsn(), False)
    report(results, max_lag)
    anomalies = [f"{r['phase']}: visit stats fed {r['visit_stats_fed']['primary']:,} on the primary, "
                 f"{r['visit_stats_fed']['standby']:,} on the standby" for r in results
                 if r["visit_stats_fed"]["primary"] != r["visit_stats_fed"]["standby"]]
    for anomaly in anomalies:
        console.print(f"[red]ANOMALY[/red] {anomaly}")
    within = ratios(results)
    for key, value in within.items():
        console.print(f"  {key}: {value:.2f}×")
    commit = (code["git_commit"] or "x")[:7]
    out = args.json_out or (RESULTS / f"replica-lag-{now:%Y-%m-%d}-{commit}-{args.origins}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        **result_header("bench/chaos/replica_lag.py", {"postgresql": {"version": version}}), "code": code,
        "parameters": vars(args) | {"json_out": str(out), "server_settings": settings, "read_max_lag_s": max_lag,
                                    "writers_drive": "the store directly from processes, no Kafka"},
        "results": results, "ratios": within, "anomalies": anomalies}, indent=2, default=str) + "\n")
    console.print(f"results written to {out}")
    return 1 if anomalies else 0


if __name__ == "__main__":
    raise SystemExit(main())
