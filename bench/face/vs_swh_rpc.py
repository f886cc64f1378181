"""swh-scheduler 3.6's own RPC server against Ostinato's ``swh-rpc serve``, through the same client.

On this machine, the benchmark

1. makes (or reuses) the peer's virtual environment (``.bench-venvs/swh-scheduler-3.6.0``,
   ``test_servers.swh_peer``) and starts one throwaway PostgreSQL cluster
   (``durable=True``, ``shared_buffers`` 2 GB);
2. makes the peer's database with its own tools (``swh db create``, ``swh db init``)
   and serves it with swh-scheduler's own Flask app
   (``swh.scheduler.api.server:make_app_from_configfile()``) under gunicorn, one sync
   worker, as swh deploys it; makes Ostinato's database (``ostinato db init``, an
   admin token) and serves it with ``ostinato swh-rpc serve`` (uvicorn, one process);
3. drives both with swh-scheduler's own client, ``RemoteScheduler``, running in the
   peer's interpreter (``bench/face/vs_swh_rpc_client.py``, one process per server, JSON
   lines on a pipe), with the same data (``bench/store/vs_swh_data.py``), alternating
   which server goes first, and timing each client call:

   - record N listed origins, per batch of ``--batch``;
   - upsert the visit stats of a first (successful) visit of half of them, per batch
     of ``--batch`` (``origin_visit_stats_upsert``, what swh's journal client calls);
   - ``ANALYZE`` both databases (not timed), then ``--rounds`` rounds of: for each
     scheduling policy, a dry-run grab of ``--grab-batch`` origins, then a real one;
   - record the lister's next run of the N origins (a re-listing: 10 % changed since),
     per batch of ``--batch``;
   - create ``--tasks`` recurring tasks per batch of ``--batch``, ``ANALYZE``, then grab
     them all, ``--task-grab-batch`` at a time (``grab_ready_tasks`` then
     ``mass_schedule_task_runs``, what swh's runner does);

4. prints, per operation, both medians and the ratio (above 1: Ostinato faster) on two
   clocks: the client's (the whole call) and the server's as the client sees it (the
   exchange: from the request sent to the answer's headers read, without the client's
   own encoding and decoding, which cost the same whichever server answers); where a
   call's time goes in Ostinato's server; and the WAL each server's call wrote (the
   cluster's insert position before and after it), per call and per row written. It
   writes every sample as JSON under ``bench/results/``.

The cluster's checkpoints are spaced as the deploy guide sets them
(:data:`DEPLOY_CHECKPOINTS`; ``--pg-setting`` overrides them).

Both servers run on the same machine as the client and the database; a figure is a
whole RPC call: the client's encoding, HTTP on loopback, the server's work and
commit, the answer decoded. Ostinato's server checks a token on every call (as it is
deployed); swh's has no authentication.

Run from the repository root::

    .venv/bin/python bench/face/vs_swh_rpc.py --origins 20000 --tasks 5000 --rounds 3     # a quick check
    .venv/bin/python bench/face/vs_swh_rpc.py --origins 100000 --tasks 20000
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import ExitStack
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg
from rich.console import Console
from rich.table import Table

from bench.common.peer import PeerProcess, create_peer_database, ensure_system_tools
from bench.common.processes import free_port, ostinato
from bench.common.report import RESULTS, code_version, console, progress, result_header
from bench.store.vs_swh import POLICIES, SIDES, Comparison, analyze, milliseconds, per_second
from bench.store.vs_swh_data import Dataset, TaskData
from test_servers import swh_peer
from test_servers.postgres import PostgresCluster
from test_servers.swh_peer import PEER_REQUIREMENT, peer_packages

REPO = Path(__file__).resolve().parents[2]
PEER_VENV = REPO / swh_peer.VENV_DIR
CLIENT = Path(__file__).resolve().parent / "vs_swh_rpc_client.py"
OSTINATO_DB = "ostinato"
OSTINATO_CLI = Path(sys.executable).parent / "ostinato"
#: the checkpoint spacing docs/how-to/deploy-at-scale.md sets ("Space the checkpoints")
DEPLOY_CHECKPOINTS = {"max_wal_size": "16GB", "checkpoint_timeout": "30min"}
#: the operations that write rows, and what a row is (the WAL table's "per row" column)
ROW_WRITES = {"record listed origins": "origin", "re-list origins": "origin", "visit stats upsert": "status",
              "create tasks": "task"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, default=100_000, help="N: listed origins (default 100000)")
    parser.add_argument("--tasks", type=int, default=20_000, help="tasks created and grabbed (default 20000)")
    parser.add_argument("--batch", type=int, default=1_000, help="origins, stats or tasks per call (default 1000)")
    parser.add_argument("--grab-batch", type=int, default=1_000, help="origins asked of one grab (default 1000)")
    parser.add_argument("--task-grab-batch", type=int, default=1_000, help="tasks asked of one task grab (default 1000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of grabs: each policy, dry run then real (default 5)")
    parser.add_argument("--seed", type=int, default=42, help="seed of the generated data")
    parser.add_argument("--shared-buffers", default="2GB", help="PostgreSQL shared_buffers (default 2GB)")
    parser.add_argument("--no-durable", dest="durable", action="store_false", help="PostgreSQL with fsync off (not like production)")
    parser.add_argument("--pg-setting", dest="pg_settings", action="append", default=[], metavar="KEY=VALUE",
                        help="another PostgreSQL setting for the one cluster both servers share (repeatable), e.g. "
                             "max_wal_size=16GB")
    parser.add_argument("--peer-venv", type=Path, default=PEER_VENV, help=f"the peer's virtual environment (default {PEER_VENV.relative_to(REPO)})")
    parser.add_argument("--json-out", type=Path, help="default: bench/results/vs-swh-rpc-<date>-<commit>-<N>.json")
    args = parser.parse_args(argv)
    if min(args.origins, args.tasks, args.batch, args.grab_batch, args.task_grab_batch, args.rounds) < 1:
        parser.error("every count must be at least 1")
    return args


def _log(line: str) -> None:
    console.print(line, markup=False, highlight=False)


def wait_for(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server of {url} exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not answer within 60 s")


def start(command: list[str], env: dict[str, str] | None, log: Path, stack: ExitStack) -> subprocess.Popen[bytes]:
    out = log.open("w")
    process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)

    def stop() -> None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        out.close()

    stack.callback(stop)
    return process


def start_peer_server(python: Path, dsn: str, work: Path, stack: ExitStack, name: str = "peer") -> str:
    """swh-scheduler's own RPC app on ``dsn``, under gunicorn (one sync worker); returns its URL. ``name``
    tells the files of several such servers apart."""
    config = work / ("scheduler.yml" if name == "peer" else f"scheduler-{name}.yml")
    config.write_text(json.dumps({"scheduler": {"cls": "postgresql", "db": dsn}}))  # JSON is YAML
    port = free_port()
    env = swh_peer.peer_env(SWH_CONFIG_FILENAME=str(config))
    log = work / f"{name}-server.log"
    process = start([str(python), "-m", "gunicorn", "--workers", "1", "--bind", f"127.0.0.1:{port}", "--timeout", "600",
                     "swh.scheduler.api.server:make_app_from_configfile()"], env, log, stack)
    url = f"http://127.0.0.1:{port}/"
    wait_for(url, process, log)
    return url


def start_ostinato_server(dsn: str, work: Path, stack: ExitStack) -> tuple[str, str]:
    """``ostinato swh-rpc serve`` on ``dsn`` (initialised here, with an admin token); returns (url, token)."""
    ostinato(dsn, "db", "init")
    token = json.loads(ostinato(dsn, "token", "add", "vs-swh-rpc", "--scope", "admin", "--json"))["secret"]
    port = free_port()
    log = work / "ostinato-server.log"
    process = start([str(OSTINATO_CLI), "--db", dsn, "swh-rpc", "serve", "--host", "127.0.0.1", "--port", str(port)],
                    None, log, stack)
    url = f"http://127.0.0.1:{port}/"
    wait_for(url, process, log)
    return url, token


class Client(PeerProcess):
    """``bench/face/vs_swh_rpc_client.py`` in the peer's interpreter, for one server."""

    def __init__(self, python: Path) -> None:
        self.process = subprocess.Popen([str(python), str(CLIENT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, bufsize=1, cwd=REPO, env=swh_peer.peer_env())


def record_listing(c: Comparison, data: Dataset, batch: int, key: str, again: bool) -> None:
    """The N listings on both sides, ``batch`` a call, under ``key``: the first listing, or ``again`` the lister's
    next run (``Dataset.relisted_batch``); each side must answer every origin it was sent."""
    with progress(key, data.n) as advance:
        for k in range(data.listed_batches(batch)):
            answers = c.both(key, "record_listed", per_second, k=k, batch=batch, again=again)
            for side, answer in answers.items():
                if answer["written"] != answer["count"]:
                    c.warn(f"{key}, batch {k}: {side} answered {answer['written']} of {answer['count']}")
            advance(answers["peer"]["count"])


def run_comparison(c: Comparison, args: argparse.Namespace, data: Dataset, tasks: TaskData, dsns: list[str]) -> dict[str, Any]:
    behaviour: dict[str, Any] = {}
    batch = args.batch

    record_listing(c, data, batch, "record listed origins", again=False)

    with progress("visit_stats_upsert", data.visited) as advance:
        for k in range(-(-data.visited // batch)):
            answers = c.both("visit stats upsert", "visit_stats", per_second, k=k, batch=batch)
            advance(answers["peer"]["count"])

    analyze(dsns)
    grabbed: dict[str, set[str]] = {s: set() for s in SIDES}
    overlap: dict[str, float] = {}
    with progress("grab_next_visits", args.rounds * len(POLICIES) * 2) as advance:
        for r in range(args.rounds):
            for policy in POLICIES:
                for dry_run in (True, False):
                    key = f"grab {policy}{', dry run' if dry_run else ''}"
                    answers = c.both(key, "grab", milliseconds, policy=policy, count=args.grab_batch, dry_run=dry_run)
                    for side, answer in answers.items():
                        urls = answer.pop("urls")
                        if answer["count"] < args.grab_batch:
                            c.warn(f"round {r + 1}, {key}: {side} returned {answer['count']:,} of {args.grab_batch:,}")
                        if not dry_run:
                            grabbed[side].update(urls)
                        answer["urls"] = urls
                    if r == 0 and not dry_run:
                        peer_urls, our_urls = set(answers["peer"]["urls"]), set(answers["ostinato"]["urls"])
                        overlap[policy] = len(peer_urls & our_urls) / max(1, len(peer_urls | our_urls))
                    advance(1)
    behaviour["first_real_grab_same_origins"] = overlap

    record_listing(c, data, batch, "re-list origins", again=True)

    for side in SIDES:
        c.sides[side]("create_task_type")
    with progress("create_tasks", args.tasks) as advance:
        for k in range(tasks.batches(batch)):
            answers = c.both("create tasks", "create_tasks", per_second, k=k, batch=batch)
            want = min(batch, args.tasks - k * batch)
            for side, answer in answers.items():
                if answer["count"] != want:
                    c.warn(f"create tasks, batch {k}: {side} created {answer['count']:,} tasks of {want:,}")
            advance(want)
    analyze(dsns)
    total = {s: 0 for s in SIDES}
    ids: dict[str, set[int]] = {s: set() for s in SIDES}
    split: dict[str, list[tuple[float, float, int]]] = {s: [] for s in SIDES}  # (grab s, schedule s, tasks)
    split_timings: dict[str, list[dict[str, dict[str, float]]]] = {s: [] for s in SIDES}
    latency = "grab tasks + runs, latency"
    with progress("grab tasks + runs", args.tasks) as advance:
        while True:
            answers = c.both(latency, "grab_tasks", milliseconds, count=args.task_grab_batch)
            for side, answer in answers.items():
                total[side] += answer["count"]
                ids[side].update(answer.pop("ids"))
                split[side].append((answer["grab_seconds"], answer["runs_seconds"], answer["count"]))
                split_timings[side].append({
                    "grab": {**answer.get("grab_timing", {}), "call": answer["grab_seconds"] * 1000} if answer.get("grab_timing") else {},
                    "runs": {**answer.get("runs_timing", {}), "call": answer["runs_seconds"] * 1000} if answer.get("runs_timing") else {}})
            advance(max(a["count"] for a in answers.values()))
            if all(a["count"] == 0 for a in answers.values()):
                break
    # only the calls that returned a full batch (not the last, short or empty, ones)
    c.samples["grab tasks + runs"], c.returned["grab tasks + runs"] = {}, {}
    for side in SIDES:
        full = [(ms, got) for ms, got in zip(c.samples[latency][side], c.returned[latency][side], strict=True) if got == args.task_grab_batch]
        c.samples[latency][side] = [ms for ms, _ in full]
        c.returned[latency][side] = [got for _, got in full]
        c.samples["grab tasks + runs"][side] = [got / ms * 1000 for ms, got in full]
        c.returned["grab tasks + runs"][side] = [got for _, got in full]
        parts = [(g, r, got) for g, r, got in split[side] if got == args.task_grab_batch]
        for key, index in (("grab_ready_tasks, latency", 0), ("mass_schedule_task_runs, latency", 1)):
            c.samples.setdefault(key, {})[side] = [p[index] * 1000 for p in parts]
            c.returned.setdefault(key, {})[side] = [p[2] for p in parts]
        full_timings = [t for t, got in zip(split_timings[side], [p[2] for p in split[side]], strict=True) if got == args.task_grab_batch]
        for key, which in (("grab_ready_tasks, latency", "grab"), ("mass_schedule_task_runs, latency", "runs")):
            c.timings.setdefault(key, {s: [] for s in SIDES})[side] = [t[which] for t in full_timings if t[which]]
        if total[side] != args.tasks or len(ids[side]) != args.tasks:
            c.warn(f"grab tasks: {side} grabbed {total[side]:,} tasks ({len(ids[side]):,} distinct), expected {args.tasks:,}")
    behaviour["tasks_grabbed"] = total
    return behaviour


def operations(args: argparse.Namespace) -> list[tuple[str, str, str, bool]]:
    """(key, title, unit, higher is better)"""
    rows = [
        ("record listed origins", f"record listed origins ({args.batch:,}/call)", "origins/s", True),
        ("visit stats upsert", f"visit stats upsert ({args.batch:,}/call)", "stats/s", True),
        ("re-list origins", f"re-list origins, 10 % changed ({args.batch:,}/call)", "origins/s", True),
    ]
    for policy in POLICIES:
        rows.append((f"grab {policy}, dry run", f"grab {args.grab_batch:,} {policy}, dry run", "ms", False))
        rows.append((f"grab {policy}", f"grab {args.grab_batch:,} {policy}", "ms", False))
    rows += [
        ("create tasks", f"create tasks ({args.batch:,}/call)", "tasks/s", True),
        ("grab tasks + runs", "grab tasks + schedule runs", "tasks/s", True),
        ("grab tasks + runs, latency", f"grab {args.task_grab_batch:,} tasks + schedule runs", "ms", False),
        ("grab_ready_tasks, latency", f"  of which grab_ready_tasks ({args.task_grab_batch:,})", "ms", False),
        ("mass_schedule_task_runs, latency", f"  of which mass_schedule_task_runs ({args.task_grab_batch:,})", "ms", False),
    ]
    return rows


def summarize(c: Comparison, args: argparse.Namespace) -> dict[str, Any]:
    results = {}
    for key, title, unit, higher_better in operations(args):
        samples = c.samples.get(key, {s: [] for s in SIDES})
        medians = {s: statistics.median(samples[s]) if samples[s] else None for s in SIDES}
        ratio = None
        if medians["peer"] and medians["ostinato"]:
            ratio = medians["ostinato"] / medians["peer"] if higher_better else medians["peer"] / medians["ostinato"]
        phases = {}
        for timing in c.timings.get(key, {}).get("ostinato", []):
            for phase, ms in timing.items():
                phases.setdefault(phase, []).append(ms)
        exchange = {s: [t["exchange"] for t in c.timings.get(key, {}).get(s, []) if "exchange" in t] for s in SIDES}
        exchange_medians = {s: statistics.median(exchange[s]) if exchange[s] else None for s in SIDES}
        server_ratio = None
        if exchange_medians["peer"] and exchange_medians["ostinato"]:
            server_ratio = exchange_medians["peer"] / exchange_medians["ostinato"]
        results[key] = {
            "title": title, "unit": unit,
            "ostinato_phases_ms": {phase: statistics.median(values) for phase, values in phases.items()},
            "peer_median": medians["peer"], "ostinato_median": medians["ostinato"],
            "ratio_ostinato_faster": ratio,
            "exchange_ms_median": exchange_medians, "ratio_on_servers_clock": server_ratio,
            "peer_exchange_ms": exchange["peer"], "ostinato_exchange_ms": exchange["ostinato"],
            "peer_samples": samples["peer"], "ostinato_samples": samples["ostinato"],
            "peer_returned": c.returned.get(key, {}).get("peer", []),
            "ostinato_returned": c.returned.get(key, {}).get("ostinato", []),
        }
        wal = c.wal.get(key)
        if wal and all(wal[s] for s in SIDES):
            results[key]["wal_bytes_median"] = {s: statistics.median(wal[s]) for s in SIDES}
            if key in ROW_WRITES:
                rows = {s: sum(c.returned[key][s]) for s in SIDES}
                results[key]["wal_bytes_per_row"] = {s: sum(wal[s]) / rows[s] if rows[s] else None for s in SIDES}
    return results


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if unit == "ms" else f"{value:,.0f}"


def print_table(results: dict[str, Any], args: argparse.Namespace, versions: dict[str, str]) -> None:
    title = (f"RPC: swh-scheduler {versions.get('swh.scheduler', '?')}'s server vs Ostinato's swh-rpc serve, "
             f"client RemoteScheduler: N={args.origins:,} origins, {args.tasks:,} tasks, rounds={args.rounds}, "
             f"PostgreSQL durable={args.durable}")
    table = Table(title=title, caption="ratio: how many times faster Ostinato is (above 1: Ostinato faster), on the "
                                       "client's clock (the whole call); the server's clock: the exchange, from the "
                                       "request sent to the answer's headers read, medians per call")
    for name, justify in (("operation", "left"), ("unit", "left"), ("swh-scheduler", "right"), ("Ostinato", "right"),
                          ("ratio", "right"), ("swh-scheduler, server ms", "right"), ("Ostinato, server ms", "right"),
                          ("ratio, server's clock", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]  # rich's justify is a Literal of these values
    for entry in results.values():
        ratio, server_ratio = entry["ratio_ostinato_faster"], entry["ratio_on_servers_clock"]
        table.add_row(entry["title"], entry["unit"], fmt(entry["peer_median"], entry["unit"]),
                      fmt(entry["ostinato_median"], entry["unit"]), f"{ratio:,.2f}×" if ratio else "-",
                      fmt(entry["exchange_ms_median"]["peer"], "ms"), fmt(entry["exchange_ms_median"]["ostinato"], "ms"),
                      f"{server_ratio:,.2f}×" if server_ratio else "-")
    Console(width=None if sys.stdout.isatty() else 160).print(table)


def print_wal(results: dict[str, Any]) -> None:
    """The WAL each server's call wrote: what a write costs the database (and its standbys) on each side."""
    table = Table(title="WAL written per call (medians, kB) and per row written (all calls, bytes)",
                  caption="the cluster's WAL insert position before and after each call (calls run one at a time); "
                          "ratio: Ostinato's WAL per row over swh-scheduler's (at most 1: no more than swh)")
    for name, justify in (("operation", "left"), ("swh-scheduler", "right"), ("Ostinato", "right"),
                          ("swh-scheduler, per row", "right"), ("Ostinato, per row", "right"), ("ratio", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]  # rich's justify is a Literal of these values
    for entry in results.values():
        wal = entry.get("wal_bytes_median")
        if wal:
            per_row = entry.get("wal_bytes_per_row") or {}
            cells = [f"{per_row[s]:,.0f}" if per_row.get(s) else "-" for s in SIDES]
            ratio = per_row["ostinato"] / per_row["peer"] if per_row.get("peer") and per_row.get("ostinato") else None
            table.add_row(entry["title"], f"{wal['peer'] / 1024:,.1f}", f"{wal['ostinato'] / 1024:,.1f}", *cells,
                          f"{ratio:,.2f}" if ratio else "-")
    Console(width=None if sys.stdout.isatty() else 160).print(table)


PHASES = ("decode", "check", "store", "encode")


def print_phases(results: dict[str, Any]) -> None:
    """Where a call's time goes on Ostinato's server (its Server-Timing header), and what is left: the
    client's encoding and decoding, HTTP on loopback, the server's framework."""
    table = Table(title="Ostinato's server: where a call's time goes (medians, ms per call)",
                  caption="decode: the body read; check: the arguments checked; store: the store's verbs; encode: "
                          "the rest of the operation and the answer encoded; outside: the call less these")
    table.add_column("operation")
    for name in ("call", *PHASES, "outside"):
        table.add_column(name, justify="right")
    for entry in results.values():
        phases = entry.get("ostinato_phases_ms") or {}
        if "call" not in phases:
            continue
        outside = phases["call"] - sum(phases.get(p, 0.0) for p in PHASES)
        table.add_row(entry["title"], *(f"{phases.get(p, 0.0):,.1f}" for p in ("call", *PHASES)), f"{outside:,.1f}")
    Console(width=None if sys.stdout.isatty() else 160).print(table)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()
    console.print(f"ostinato in {code['package']}: commit {(code['git_commit'] or '?')[:12]}")
    commit = (code["git_commit"] or "unknown")[:7]
    json_out = args.json_out or RESULTS / f"vs-swh-rpc-{date.today().isoformat()}-{commit}-{args.origins}.json"
    ensure_system_tools()
    python = swh_peer.ensure_peer_venv(args.peer_venv, log=_log)
    packages = peer_packages(python)
    console.print("peer packages: " + ", ".join(f"{k} {v}" for k, v in packages.items()))

    now = datetime.now(UTC).replace(microsecond=0)
    data = Dataset(args.origins, args.seed, now)
    tasks = TaskData(args.tasks, args.seed, now)
    extra = {**DEPLOY_CHECKPOINTS, **dict(item.split("=", 1) for item in args.pg_settings)}
    started = time.monotonic()
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vs-swh-rpc-")))
        cluster = stack.enter_context(PostgresCluster(durable=args.durable,
                                                      settings={"shared_buffers": args.shared_buffers, **extra}))
        with psycopg.connect(cluster.dsn()) as conn:
            pg_version = conn.execute("SHOW server_version").fetchone()[0].split()[0]  # type: ignore[index]  # SHOW always returns a row
        console.print(f"PostgreSQL {pg_version} on port {cluster.port}")
        peer_dsn = create_peer_database(cluster, python)
        cluster.create_database(OSTINATO_DB)
        our_dsn = cluster.dsn(OSTINATO_DB)
        peer_url = start_peer_server(python, peer_dsn, work, stack)
        our_url, token = start_ostinato_server(our_dsn, work, stack)
        console.print(f"swh-scheduler's server: {peer_url}; Ostinato's: {our_url}")
        clients = {side: Client(python) for side in SIDES}
        for client in clients.values():
            stack.callback(client.close)
        init = {"n": args.origins, "tasks": args.tasks, "seed": args.seed, "now": now.isoformat()}
        versions = clients["peer"]("init", url=peer_url, token=None, **init)["versions"]
        clients["ostinato"]("init", url=our_url, token=token, **init)
        comparison = Comparison(clients["peer"], None)  # type: ignore[arg-type]  # both sides are RPC clients, set on the next line
        comparison.sides = dict(clients)  # both sides are the same client, each on its server
        comparison.wal_conn = stack.enter_context(psycopg.connect(cluster.dsn(), autocommit=True))
        behaviour = run_comparison(comparison, args, data, tasks, [peer_dsn, our_dsn])
    elapsed = time.monotonic() - started

    results = summarize(comparison, args)
    print_table(results, args, versions)
    print_phases(results)
    print_wal(results)
    document = {
        **result_header("bench/face/vs_swh_rpc.py", {"postgresql": {"version": pg_version}}),
        "code": code,
        "peer": {"requirement": PEER_REQUIREMENT, "packages": packages, "client": versions, "venv": str(args.peer_venv),
                 "server": "gunicorn, 1 sync worker, swh.scheduler.api.server:make_app_from_configfile()"},
        "ostinato_server": "ostinato swh-rpc serve (uvicorn, 1 process), admin token",
        "parameters": {"origins": args.origins, "tasks": args.tasks, "batch": args.batch, "grab_batch": args.grab_batch,
                       "task_grab_batch": args.task_grab_batch, "rounds": args.rounds, "seed": args.seed,
                       "durable": args.durable, "shared_buffers": args.shared_buffers, "pg_settings": extra,
                       "now": now.isoformat()},
        "elapsed_seconds": elapsed,
        "results": results,
        "behaviour": behaviour,
        "anomalies": comparison.anomalies,
    }
    json_out.parent.mkdir(parents=True, exist_ok=True)
    json_out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    console.print(f"results written to {json_out} ({elapsed / 60:.1f} min)")
    if comparison.anomalies:
        console.print(f"[yellow]{len(comparison.anomalies)} warning(s)[/yellow]: see `anomalies` in the JSON")
    return 0


if __name__ == "__main__":
    sys.exit(main())
