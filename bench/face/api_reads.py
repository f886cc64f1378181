"""The API's reads on a standby: how many requests a second one ``ostinato api serve`` answers, reading from a
PostgreSQL streaming standby (the ``read_db`` setting) against reading from the primary.

In one run, the benchmark

1. starts a private PostgreSQL primary (``PostgresCluster``, fsync on, ``shared_buffers`` 2GB and the WAL settings
   of ``bench/limits/limits.py``) and seeds one database (``bench/face/api_reads_seed.py``): N listed origins by
   ``bench/scale/journal_group.py``'s ``seed``, the journal's first N visit statuses fed into their visit stats, the origin
   metrics counted, 100,000 tasks of ``load-git`` (a tenth run, some failed), 1,000 schedules and a read token;
   then ``VACUUM (ANALYZE)``;
2. builds a streaming standby of it (``PostgresStandby``: ``pg_basebackup -R``, hot standby, same machine) and
   loads every table and index into each server's shared buffers (``pg_prewarm``), so both start warm;
3. starts ``ostinato api serve --no-history`` as a subprocess twice, one after the other, each on a free port:
   **primary**, ``OSTINATO_DB`` the primary only; **standby**, ``OSTINATO_DB`` the primary and
   ``OSTINATO_READ_DB`` the standby. ``--rounds R`` repeats the pair, alternating the order (primary first in odd
   rounds, standby first in even ones);
4. drives each server (``bench/face/api_reads_drive.py``) after a warm-up with C client threads (``httpx``, one
   kept-alive connection each, ``Authorization: Bearer`` the read token) sending GETs back to back for
   ``--seconds``: a weighted mix (a page of 100 schedules 30 %, one random seeded origin's dashboard page 40 %,
   the origin metrics 20 %, the Prometheus ``/metrics`` 5 %, the dashboard's ``/`` 5 %) at each C of
   ``--concurrency``; then each endpoint alone at the highest C.

It prints per cell the requests per second, p50 / p99 latency, the errors (any answer not 2xx, or no answer: the
run then exits 1), the share of answers with ``X-Ostinato-Read-From: standby``, and the CPU milliseconds a
request took in the API server process (``/proc/PID/stat``), in each PostgreSQL server (its processes, from
``/proc``) and in the clients; then, per cell, standby / primary of the requests per second, the p50 latency and
the CPU a request took in the API server and in the primary (of the medians over the rounds).
The JSON goes to ``bench/results/api-reads-<date>-<commit>-<origins>.json``.

    .venv/bin/python bench/face/api_reads.py                 # 10⁶ origins, C = 1, 4, 16, 10 s a cell
    .venv/bin/python bench/face/api_reads.py --rounds 4 --seconds 6   # both servers four times, alternating
    .venv/bin/python bench/face/api_reads.py --quick         # 20,000 origins, 3 s a cell: a check that it works
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg
from rich.console import Console
from rich.table import Table

from bench.chaos.replica_lag import current_lsn, wait_replayed
from bench.common.report import RESULTS, code_version, console, result_header
from bench.face.api_reads_drive import MIX, endpoints, free_port, run_cell, serve, stop
from bench.face.api_reads_seed import prewarm, seed
from bench.limits.limits import WAL_SETTINGS
from bench.limits.origins_data import Dataset
from ostinato.config import Settings
from test_servers.postgres import PostgresCluster, PostgresStandby

DATABASE = "ostinato"
MODES = ("primary", "standby")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, help="listed origins (default 1,000,000; --quick 20,000)")
    parser.add_argument("--statuses", type=int, help="visit statuses fed (default: as many as origins)")
    parser.add_argument("--tasks", type=int, help="tasks of load-git (default 100,000; --quick 2,000)")
    parser.add_argument("--schedules", type=int, default=1000, help="schedules (default 1,000)")
    parser.add_argument("--quick", action="store_true", help="20,000 origins, 3 s a cell: a check that it works")
    parser.add_argument("--concurrency", default="1,4,16", help="client threads of the mix's cells, comma separated")
    parser.add_argument("--seconds", type=float, help="seconds a cell (default 10; --quick 3)")
    parser.add_argument("--warmup", type=float, help="seconds of the mix before a server's cells (default 5; --quick 1)")
    parser.add_argument("--rounds", type=int, default=1, help="run both servers this many times, alternating")
    parser.add_argument("--no-alone", dest="alone", action="store_false", help="skip the cells of one endpoint alone")
    parser.add_argument("--shared-buffers", default="2GB", help="shared_buffers of each server (default 2GB)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args(argv)
    args.origins = args.origins or (20_000 if args.quick else 1_000_000)
    args.statuses = args.statuses if args.statuses is not None else args.origins
    args.tasks = args.tasks if args.tasks is not None else (2_000 if args.quick else 100_000)
    args.seconds = args.seconds or (3.0 if args.quick else 10.0)
    args.warmup = args.warmup if args.warmup is not None else (1.0 if args.quick else 5.0)
    args.concurrency = [int(c) for c in args.concurrency.split(",") if c]
    return args


def cells(args: argparse.Namespace) -> list[tuple[str, int]]:
    """(workload, clients) in the order run: the mix at each concurrency, then each endpoint alone at the most."""
    order = [("mix", c) for c in args.concurrency]
    if args.alone:
        order += [(name, max(args.concurrency)) for name in MIX]
    return order


def run_server(mode: str, round_: int, args: argparse.Namespace, primary: PostgresCluster, standby: PostgresStandby,
               routes: dict, secret: str) -> list[dict[str, Any]]:
    """One server's cells (mode ``primary`` or ``standby``), after a warm-up of the mix."""
    port = free_port()
    server = serve(port, primary.dsn(DATABASE), standby.dsn(DATABASE) if mode == "standby" else None)
    data_dirs = {"primary": primary.data_dir, "standby": standby.data_dir}
    results = []
    try:
        run_cell(port, secret, routes, MIX, max(args.concurrency), args.warmup, 0, server.pid, data_dirs)
        for i, (workload, clients) in enumerate(cells(args), 1):
            weights = MIX if workload == "mix" else {workload: 1}
            r = run_cell(port, secret, routes, weights, clients, args.seconds, round_ * 100 + i, server.pid, data_dirs)
            r = {"mode": mode, "round": round_, "workload": workload, **r}
            results.append(r)
            cpu = r["cpu_ms_per_request"]
            console.print(
                f"  {mode:<7} #{round_} {workload:<14} C={clients:<3} {r['requests_per_s']:8,.1f} req/s  p50 "
                f"{r['latency_ms']['p50']:7.1f} ms  p99 {r['latency_ms']['p99']:7.1f} ms  errors {r['errors']}  "
                f"standby {100 * r['standby_share']:5.1f} %  CPU ms/req: API {cpu['api_server']:.2f}, primary "
                f"{cpu['primary']:.2f}, standby {cpu['standby']:.2f}, clients {cpu['client']:.2f}", soft_wrap=True)
    finally:
        stop(server)
    return results


def ratios(results: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per cell, standby / primary: requests per second (and p50 latency), of the medians over the rounds."""
    out: dict[str, dict[str, float]] = {}
    keys = sorted({(r["workload"], r["clients"]) for r in results}, key=lambda k: (k[0] != "mix", k[0], k[1]))
    for workload, clients in keys:
        def median(mode: str, figure: Any, cell: tuple[Any, Any] = (workload, clients)) -> float:
            return statistics.median(figure(r) for r in results
                                     if (r["mode"], r["workload"], r["clients"]) == (mode, *cell))

        rate = {m: median(m, lambda r: r["requests_per_s"]) for m in MODES}
        p50 = {m: median(m, lambda r: r["latency_ms"]["p50"]) for m in MODES}
        api = {m: median(m, lambda r: r["cpu_ms_per_request"]["api_server"]) for m in MODES}
        on_primary = {m: median(m, lambda r: r["cpu_ms_per_request"]["primary"]) for m in MODES}
        out[f"{workload}@{clients}"] = {"primary_requests_per_s": rate["primary"],
                                        "standby_requests_per_s": rate["standby"],
                                        "requests_per_s": rate["standby"] / rate["primary"],
                                        "p50_latency": p50["standby"] / p50["primary"],
                                        "api_cpu_per_request": api["standby"] / api["primary"],
                                        "primary_cpu_per_request": on_primary["standby"] / on_primary["primary"]}
    return out


def report(results: list[dict[str, Any]], within: dict[str, dict[str, float]]) -> None:
    table = Table(title="one ostinato api serve, reads from the primary or from a standby")
    for title in ("server", "workload", "C", "req/s", "p50 ms", "p99 ms", "errors", "standby %",
                  "CPU ms/req: API / primary / standby / clients"):
        table.add_column(title, justify="left" if title in ("server", "workload") else "right")
    for r in results:
        cpu = r["cpu_ms_per_request"]
        table.add_row(f"{r['mode']} #{r['round']}", r["workload"], str(r["clients"]), f"{r['requests_per_s']:,.1f}",
                      f"{r['latency_ms']['p50']:.1f}", f"{r['latency_ms']['p99']:.1f}", str(r["errors"]),
                      f"{100 * r['standby_share']:.1f}", f"{cpu['api_server']:.2f} / {cpu['primary']:.2f} / "
                      f"{cpu['standby']:.2f} / {cpu['client']:.2f}")
    Console(stderr=True, width=max(console.width, 150)).print(table)
    for cell, r in within.items():
        console.print(f"  {cell:<18} standby / primary: {r['requests_per_s']:.2f}× requests/s "
                      f"({r['standby_requests_per_s']:,.1f} / {r['primary_requests_per_s']:,.1f}), "
                      f"{r['p50_latency']:.2f}× p50 latency, {r['api_cpu_per_request']:.2f}× the API server's CPU a "
                      f"request, {r['primary_cpu_per_request']:.2f}× the primary's", soft_wrap=True)


def anomalies_of(results: list[dict[str, Any]]) -> list[str]:
    found = [f"{r['mode']} #{r['round']} {r['workload']} C={r['clients']}: {r['errors']} errors {r['error_kinds']}"
             for r in results if r["errors"]]
    found += [f"standby #{r['round']} {r['workload']} C={r['clients']}: only {100 * r['standby_share']:.1f} % "
              f"of the answers read from the standby ({r['read_from']})"
              for r in results if r["mode"] == "standby" and r["standby_share"] < 0.95]
    found += [f"primary #{r['round']} {r['workload']} C={r['clients']}: answers said a standby ({r['read_from']})"
              for r in results if r["mode"] == "primary" and r["read_from"].get("standby")]
    return found


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()
    now = datetime.now(UTC).replace(microsecond=0)
    data = Dataset(args.origins, 7, now)
    settings = {"shared_buffers": args.shared_buffers, **WAL_SETTINGS}
    results: list[dict[str, Any]] = []
    with PostgresCluster(durable=True, settings=settings) as primary:
        primary.create_database(DATABASE)
        seeded = seed(primary.dsn(DATABASE), data, now, args.statuses, args.tasks, args.schedules)
        with psycopg.connect(primary.dsn(DATABASE), autocommit=True) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
        started = time.monotonic()
        with PostgresStandby(primary) as standby:
            wait_replayed(standby.dsn(), current_lsn(primary.dsn()))
            seeded["timings"]["standby_s"] = time.monotonic() - started
            warmed = {"primary": prewarm(primary.dsn(DATABASE)), "standby": prewarm(standby.dsn(DATABASE))}
            console.print(f"primary (port {primary.port}) and its streaming standby (port {standby.port}) ready in "
                          f"{seeded['timings']['standby_s']:.0f} s; {warmed['standby'] * 8192 / 1e6:,.0f} MB prewarmed on each; "
                          f"cells of {args.seconds:g} s, C = {', '.join(map(str, args.concurrency))}", soft_wrap=True)
            routes = endpoints(data, args.schedules)
            for round_ in range(1, args.rounds + 1):
                for mode in MODES if round_ % 2 else MODES[::-1]:
                    results += run_server(mode, round_, args, primary, standby, routes, seeded["secret"])
    within = ratios(results)
    report(results, within)
    anomalies = anomalies_of(results)
    for anomaly in anomalies:
        console.print(f"[red]ANOMALY[/red] {anomaly}")
    commit = (code["git_commit"] or "x")[:7]
    out = args.json_out or (RESULTS / f"api-reads-{now:%Y-%m-%d}-{commit}-{args.origins}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    seeded.pop("secret")
    out.write_text(json.dumps({
        **result_header("bench/face/api_reads.py", {"postgresql": {"version": version}}), "code": code,
        "parameters": vars(args) | {"json_out": str(out), "server_settings": settings, "mix": MIX,
                                    "read_max_lag_s": Settings().read_max_lag.total_seconds()},
        "seeded": seeded, "results": results, "ratios_standby_over_primary": within, "anomalies": anomalies},
        indent=2, default=str) + "\n")
    console.print(f"results written to {out}")
    return 1 if anomalies else 0


if __name__ == "__main__":
    raise SystemExit(main())
