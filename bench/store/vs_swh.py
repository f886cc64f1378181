"""Ostinato against swh-scheduler 3.6.0, the archive's production scheduler, side by side.

On this machine, the benchmark

1. makes (or reuses) a separate virtual environment for the peer,
   ``.bench-venvs/swh-scheduler-3.6.0`` (``pip install "swh-scheduler[journal]==3.6.0"``,
   plus psycopg's binary build, the same as Ostinato's), and starts a throwaway
   PostgreSQL cluster (``durable=True``, ``shared_buffers`` 2 GB);
2. creates the peer's database with its own tools (``swh db create``, then
   ``swh db init``) and Ostinato's (``PostgresStore.init_schema()``), two
   databases of that one cluster;
3. drives both through their public Python APIs with the same data
   (``bench/store/vs_swh_data.py``), alternating between them, and timing only each
   system's own calls: the peer runs in its own interpreter
   (``bench/store/vs_swh_peer.py``, JSON lines on a pipe), Ostinato in this one:

   - record N listed origins, per batch of ``--batch``;
   - feed N journal visit statuses, half eventful, per batch of ``--batch``;
   - ``ANALYZE`` both databases (not timed), then ``--rounds`` rounds of: for
     each scheduling policy both systems have, a dry-run grab of
     ``--grab-batch`` origins, then a real one;
   - ``--rounds`` metric updates;
   - create ``--tasks`` recurring tasks per batch of ``--batch``, ``ANALYZE``,
     then grab them all with their runs recorded, ``--task-grab-batch`` at a
     time;
   - (not timed) end a few of those runs, uneventful and eventful, to see what
     each system does to the task's interval;

4. prints, per operation, both medians and the ratio (above 1: Ostinato
   faster), and writes every sample as JSON under ``bench/results/``.

Run from the repository root::

    bench/store/vs-swh --origins 300000
    bench/store/vs-swh --origins 20000 --tasks 10000 --rounds 3     # a quick check
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg
from rich.console import Console
from rich.table import Table

from bench.common.peer import PEER_VENV, PeerProcess, create_peer_database, ensure_peer_venv, ensure_system_tools
from bench.common.report import RESULTS, code_version, console, progress, result_header
from bench.store.vs_swh_data import LISTER_INSTANCE, LISTER_NAME, TASK_TYPE, TASK_TYPE_FIELDS, VISIT_TYPE, Dataset, TaskData
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.tasks import NewTask, RunEvent, TaskArguments, TaskRunStatus, TaskType
from ostinato.domain.visit_policies import GrabRequest, VisitPolicy
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus
from ostinato.store.postgresql.store import PostgresStore
from test_servers.postgres import PostgresCluster
from test_servers.swh_peer import PEER_REQUIREMENT, PEER_VERSION, peer_packages

REPO = Path(__file__).resolve().parents[2]
PEER_DRIVER = Path(__file__).resolve().parent / "vs_swh_peer.py"
OSTINATO_DB = "ostinato"
BACKEND_ID = "bench"
FEEDBACK = FeedbackPolicy()
#: the policies both systems have: the seeds' (the peer also has first_visits_after_listing, which Ostinato has
#: not; Ostinato also has change_rate_optimal, which the peer has not)
POLICIES = [p.value for p in VisitPolicy if p is not VisitPolicy.CHANGE_RATE_OPTIMAL]
SIDES = ("peer", "ostinato")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, default=300_000, help="N: listed origins, and visit statuses (default 300000)")
    parser.add_argument("--tasks", type=int, default=100_000, help="generic tasks created and grabbed (default 100000)")
    parser.add_argument("--batch", type=int, default=10_000, help="origins, statuses or tasks per call (default 10000)")
    parser.add_argument("--grab-batch", type=int, default=1_000, help="origins asked of one grab (default 1000)")
    parser.add_argument("--task-grab-batch", type=int, default=1_000, help="tasks asked of one task grab (default 1000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of grabs (each policy, dry run then real) and of metrics (default 5)")
    parser.add_argument("--seed", type=int, default=42, help="seed of the generated data")
    parser.add_argument("--shared-buffers", default="2GB", help="PostgreSQL shared_buffers (default 2GB)")
    parser.add_argument("--no-durable", dest="durable", action="store_false", help="PostgreSQL with fsync off (not like production)")
    parser.add_argument("--peer-venv", type=Path, default=PEER_VENV, help=f"the peer's virtual environment (default {PEER_VENV.relative_to(REPO)})")
    parser.add_argument("--json-out", type=Path, help="where to write the results (default bench/results/vs-swh-<date>-<commit>-<N>.json)")
    args = parser.parse_args(argv)
    if min(args.origins, args.tasks, args.batch, args.grab_batch, args.task_grab_batch, args.rounds) < 1:
        parser.error("every count must be at least 1")
    return args


# -- the peer's environment and database -----------------------------------------


# -- Ostinato's side ----------------------------------------------------------


class Ours:
    """Ostinato's store, driven in-process; each method times only the store call."""

    def __init__(self, dsn: str, data: Dataset, tasks: TaskData) -> None:
        self.store = PostgresStore(dsn)
        self.store.init_schema()
        self.data, self.tasks, self.now = data, tasks, data.now
        self.lister = self.store.get_or_create_lister(LISTER_NAME, LISTER_INSTANCE, self.now)
        self.grabbed_runs: list[tuple[int, int]] = []  # (task id, run id) of the runs grabbed

    def record_listed(self, k: int, batch: int) -> dict[str, Any]:
        origins = [ListedOrigin(**record) for record in self.data.listed_batch(k, batch)]
        start = time.perf_counter()
        written = self.store.record_listed_origins(self.lister.id, origins, self.now)
        return {"seconds": time.perf_counter() - start, "count": len(origins), "written": written}

    def feed(self, k: int, batch: int) -> dict[str, Any]:
        statuses = [VisitStatus(m["origin"], m["visit"], m["type"], JournalStatus(m["status"]), m["date"], m["snapshot"])
                    for m in self.data.status_batch(k, batch)]
        start = time.perf_counter()
        changed = self.store.record_visit_statuses(statuses, FEEDBACK, now=self.now)
        return {"seconds": time.perf_counter() - start, "count": len(statuses), "changed": changed}

    def grab(self, policy: str, count: int, dry_run: bool) -> dict[str, Any]:
        requests = [GrabRequest(VisitPolicy(policy), count)]
        start = time.perf_counter()
        visits = self.store.grab_next_visits(VISIT_TYPE, requests, self.now, dry_run=dry_run)
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "count": len(visits), "urls": [v.url for v in visits]}

    def metrics(self) -> dict[str, Any]:
        start = time.perf_counter()
        rows = self.store.update_origin_metrics(self.now)
        seconds = time.perf_counter() - start
        mine = [m for m in rows if m.lister_id == self.lister.id and m.visit_type == VISIT_TYPE]
        row = {}
        if mine:
            m = mine[0]
            row = {"origins_known": m.origins_known, "origins_enabled": m.origins_enabled,
                   "origins_never_visited": m.origins_never_visited,
                   "origins_with_pending_changes": m.origins_with_pending_changes}
        return {"seconds": seconds, "count": len(rows), "row": row}

    def create_task_type(self) -> dict[str, Any]:
        self.store.create_task_type(TaskType(**TASK_TYPE_FIELDS))
        return {"count": 1}

    def create_tasks(self, k: int, batch: int) -> dict[str, Any]:
        tasks = [NewTask(t["type"], t["next_run"], TaskArguments(tuple(t["arguments"]["args"]), t["arguments"]["kwargs"]))
                 for t in self.tasks.batch(k, batch)]
        start = time.perf_counter()
        created = self.store.create_tasks(tasks)
        return {"seconds": time.perf_counter() - start, "count": len(created)}

    def grab_tasks(self, count: int) -> dict[str, Any]:
        start = time.perf_counter()
        grabbed = self.store.grab_ready_tasks(TASK_TYPE, self.now, count, backend_id=BACKEND_ID)
        seconds = time.perf_counter() - start
        self.grabbed_runs.extend((g.task.id, g.run.id) for g in grabbed)
        return {"seconds": seconds, "count": len(grabbed)}

    def end_runs(self, count: int, ended: str) -> dict[str, Any]:
        at = datetime.fromisoformat(ended)
        outcomes = (TaskRunStatus.UNEVENTFUL, TaskRunStatus.EVENTFUL)
        probe = self.grabbed_runs[:count]
        events = [RunEvent(run_id, outcomes[j % 2], at, BACKEND_ID) for j, (_, run_id) in enumerate(probe)]
        self.store.record_run_events(events)
        status_of_task = {task_id: outcomes[j % 2].value for j, (task_id, _) in enumerate(probe)}
        result: dict[str, dict[str, list[Any]]] = {"uneventful": {}, "eventful": {}}
        for task in self.store.get_tasks(list(status_of_task)):
            entry = result[status_of_task[task.id]]
            interval = task.current_interval or timedelta(0)
            entry.setdefault("interval_s", []).append(interval.total_seconds())
            entry.setdefault("next_run_after_end_s", []).append((task.next_run - at).total_seconds())
            entry.setdefault("status", []).append(task.status.value)
        return {"count": len(events), "tasks": result}

    def close(self) -> None:
        self.store.close()


# -- the comparison -------------------------------------------------------------


class Comparison:
    """Runs each operation on both sides, alternating who goes first, and keeps every sample."""

    def __init__(self, peer: PeerProcess, ours: Ours) -> None:
        self.sides: dict[str, Callable[..., dict[str, Any]]] = {
            "peer": peer,
            "ostinato": lambda op, **params: getattr(ours, op)(**params),
        }
        self.samples: dict[str, dict[str, list[float]]] = {}
        self.returned: dict[str, dict[str, list[int]]] = {}
        #: per key and side, each call's phases as its server told them (milliseconds), where it does
        self.timings: dict[str, dict[str, list[dict[str, float]]]] = {}
        self.anomalies: list[str] = []
        self.turn = 0
        #: with a connection to the cluster both sides write to: per key and side, the WAL each call wrote (bytes;
        #: the calls run one at a time, so the difference of the insert position is the call's)
        self.wal_conn: Any = None
        self.wal: dict[str, dict[str, list[int]]] = {}

    def warn(self, message: str) -> None:
        self.anomalies.append(message)
        console.print(f"[yellow]warning[/yellow]: {message}")

    def _wal_position(self) -> Any:
        if self.wal_conn is None:
            return None
        return self.wal_conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]

    def both(self, key: str, op: str, value: Callable[[dict[str, Any]], float], **params: Any) -> dict[str, dict[str, Any]]:
        """``op`` on both sides (the peer first on even turns), recording ``value(answer)`` under ``key``."""
        order = SIDES if self.turn % 2 == 0 else SIDES[::-1]
        self.turn += 1
        answers = {}
        for side in order:
            before = self._wal_position()
            answer = self.sides[side](op, **params)
            if before is not None:
                self.wal.setdefault(key, {s: [] for s in SIDES})[side].append(
                    int(self.wal_conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)",
                                              (before,)).fetchone()[0]))
            answers[side] = answer
            self.samples.setdefault(key, {s: [] for s in SIDES})[side].append(value(answer))
            self.returned.setdefault(key, {s: [] for s in SIDES})[side].append(answer.get("count", 0))
            if answer.get("timing"):
                self.timings.setdefault(key, {s: [] for s in SIDES})[side].append(
                    {**answer["timing"], "call": answer["seconds"] * 1000})
        return answers


def analyze(dsns: list[str]) -> None:
    """What autovacuum does on a live database, done now on both (not timed)."""
    for dsn in dsns:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("ANALYZE")


def per_second(answer: dict[str, Any]) -> float:
    return answer["count"] / answer["seconds"]


def milliseconds(answer: dict[str, Any]) -> float:
    return answer["seconds"] * 1000


def run_comparison(c: Comparison, args: argparse.Namespace, data: Dataset, tasks: TaskData, dsns: list[str]) -> dict[str, Any]:
    behaviour: dict[str, Any] = {}
    n, batch = args.origins, args.batch

    # 1. listed origins
    with progress("record_listed", n) as advance:
        for k in range(data.listed_batches(batch)):
            answers = c.both("record_listed_origins", "record_listed", per_second, k=k, batch=batch)
            advance(answers["peer"]["count"])

    # 2. visit statuses
    with progress("visit statuses", n) as advance:
        for k in range(data.status_batches(batch)):
            answers = c.both("visit_statuses", "feed", per_second, k=k, batch=batch)
            advance(answers["peer"]["count"])

    # 3. grabs: each policy, dry run then real, per round
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
                        if len(set(urls)) != len(urls):
                            c.warn(f"round {r + 1}, {key}: {side} returned an origin twice")
                        again = grabbed[side].intersection(urls)
                        if again:
                            c.warn(f"round {r + 1}, {key}: {side} returned {len(again):,} origins already grabbed (real) "
                                   f"in an earlier round, e.g. {sorted(again)[0]}")
                        if not dry_run:
                            grabbed[side].update(urls)
                        answer["urls"] = urls
                    if r == 0 and not dry_run:
                        peer_urls, our_urls = set(answers["peer"]["urls"]), set(answers["ostinato"]["urls"])
                        overlap[policy] = len(peer_urls & our_urls) / max(1, len(peer_urls | our_urls))
                    advance(1)
    behaviour["first_real_grab_same_origins"] = overlap

    # 4. metrics
    rows: dict[str, Any] = {}
    for _ in range(args.rounds):
        answers = c.both("update metrics", "metrics", milliseconds)
        rows = {side: answer["row"] for side, answer in answers.items()}
    behaviour["metrics"] = rows
    for side, row in rows.items():
        for field, want in (("origins_known", n), ("origins_enabled", n), ("origins_never_visited", n - data.visited)):
            if row.get(field) != want:
                c.warn(f"update metrics: {side} {field} = {row.get(field)}, expected {want:,}")

    # 5. generic tasks: create, then grab with runs recorded
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
    latency = "grab tasks + runs, latency"
    with progress("grab tasks + runs", args.tasks) as advance:
        while True:
            answers = c.both(latency, "grab_tasks", milliseconds, count=args.task_grab_batch)
            for side, answer in answers.items():
                total[side] += answer["count"]
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
    for side in SIDES:
        if total[side] != args.tasks:
            c.warn(f"grab tasks: {side} grabbed {total[side]:,} tasks, expected {args.tasks:,}")
    behaviour["tasks_grabbed"] = total

    # 6. (not timed) what ending a run does to the task's interval
    ended = (data.now + timedelta(minutes=5)).isoformat()
    probe = {side: c.sides[side]("end_runs", count=min(200, args.tasks), ended=ended) for side in SIDES}
    behaviour["task_interval_after_run"] = {side: summarize_intervals(answer["tasks"]) for side, answer in probe.items()}
    return behaviour


def summarize_intervals(tasks: dict[str, dict[str, list[Any]]]) -> dict[str, Any]:
    """Per outcome: the distinct intervals (hours) and next_run - end (hours) the tasks got."""
    out = {}
    for outcome, entry in tasks.items():
        out[outcome] = {
            "tasks": len(entry.get("interval_s", [])),
            "interval_hours": sorted({round(s / 3600, 3) for s in entry.get("interval_s", [])}),
            "next_run_after_end_hours": sorted({round(s / 3600, 3) for s in entry.get("next_run_after_end_s", [])}),
            "status": sorted(set(entry.get("status", []))),
        }
    return out


# -- the report -------------------------------------------------------------------

# (key, unit, higher is better)
def operations(args: argparse.Namespace) -> list[tuple[str, str, str, bool]]:
    rows = [
        ("record_listed_origins", "record listed origins", "origins/s", True),
        ("visit_statuses", "feed visit statuses", "statuses/s", True),
    ]
    for policy in POLICIES:
        rows.append((f"grab {policy}, dry run", f"grab {args.grab_batch:,} {policy}, dry run", "ms", False))
        rows.append((f"grab {policy}", f"grab {args.grab_batch:,} {policy}", "ms", False))
    rows += [
        ("update metrics", "update metrics", "ms", False),
        ("create tasks", "create tasks", "tasks/s", True),
        ("grab tasks + runs", "grab tasks + record runs", "tasks/s", True),
        ("grab tasks + runs, latency", f"grab {args.task_grab_batch:,} tasks + runs", "ms", False),
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
        results[key] = {
            "title": title, "unit": unit,
            "peer_median": medians["peer"], "ostinato_median": medians["ostinato"],
            "ratio_ostinato_faster": ratio,
            "peer_samples": samples["peer"], "ostinato_samples": samples["ostinato"],
            "peer_returned": c.returned.get(key, {}).get("peer", []),
            "ostinato_returned": c.returned.get(key, {}).get("ostinato", []),
        }
    return results


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if unit == "ms" else f"{value:,.0f}"


def print_table(results: dict[str, Any], args: argparse.Namespace, versions: dict[str, str]) -> None:
    title = (f"Ostinato vs swh-scheduler {versions.get('swh.scheduler', PEER_VERSION)}: N={args.origins:,} origins, "
             f"{args.tasks:,} tasks, rounds={args.rounds}, PostgreSQL durable={args.durable}")
    table = Table(title=title, caption="ratio: how many times faster Ostinato is (above 1: Ostinato faster)")
    table.add_column("operation")
    table.add_column("unit")
    table.add_column("swh-scheduler", justify="right")
    table.add_column("Ostinato", justify="right")
    table.add_column("ratio", justify="right")
    for entry in results.values():
        cells = []
        for side in SIDES:
            cell = fmt(entry[f"{side}_median"], entry["unit"])
            returned = entry[f"{side}_returned"]
            if entry["unit"] == "ms" and entry["title"].startswith("grab") and returned and min(returned) < args.grab_batch:
                cell += f" [{min(returned):,}]"
            cells.append(cell)
        ratio = entry["ratio_ostinato_faster"]
        table.add_row(entry["title"], entry["unit"], *cells, f"{ratio:,.1f}×" if ratio else "-")
    Console(width=None if sys.stdout.isatty() else 140).print(table)


def default_json_out(code: dict[str, Any], n: int) -> Path:
    commit = (code["git_commit"] or "unknown")[:7]
    return RESULTS / f"vs-swh-{date.today().isoformat()}-{commit}-{n}.json"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()  # before the run: the modules measured are the ones imported now
    console.print(f"ostinato in {code['package']}: commit {(code['git_commit'] or '?')[:12]}, store sha256 "
                  f"{code['store_sha256'][:12]}{' (store modified locally)' if code['store_changes'] else ''}")  # fmt: skip
    json_out = args.json_out or default_json_out(code, args.origins)
    ensure_system_tools()
    python = ensure_peer_venv(args.peer_venv)
    packages = peer_packages(python)
    console.print("peer packages: " + ", ".join(f"{k} {v}" for k, v in packages.items()))

    now = datetime.now(UTC).replace(microsecond=0)
    data = Dataset(args.origins, args.seed, now)
    tasks = TaskData(args.tasks, args.seed, now)
    console.print(f"data: {args.origins:,} origins and statuses, {args.tasks:,} tasks, seed {args.seed}, now {now.isoformat()}")

    started = time.monotonic()
    with PostgresCluster(durable=args.durable, settings={"shared_buffers": args.shared_buffers}) as cluster:
        with psycopg.connect(cluster.dsn()) as conn:
            pg_version = conn.execute("SHOW server_version").fetchone()[0].split()[0]  # type: ignore[index]  # SHOW always returns a row
        console.print(f"PostgreSQL {pg_version} on port {cluster.port}: the peer's database")
        peer_dsn = create_peer_database(cluster, python)
        console.print("Ostinato's database")
        cluster.create_database(OSTINATO_DB)
        ours = Ours(cluster.dsn(OSTINATO_DB), data, tasks)
        peer = PeerProcess(python)
        try:
            versions = peer("init", dsn=peer_dsn, n=args.origins, tasks=args.tasks, seed=args.seed, now=now.isoformat())["versions"]
            comparison = Comparison(peer, ours)
            behaviour = run_comparison(comparison, args, data, tasks, [peer_dsn, cluster.dsn(OSTINATO_DB)])
        finally:
            peer.close()
            ours.close()
    elapsed = time.monotonic() - started

    results = summarize(comparison, args)
    print_table(results, args, versions)
    document = {
        **result_header("bench/store/vs_swh.py", {"postgresql": {"version": pg_version}}),
        "code": code,
        "peer": {"requirement": PEER_REQUIREMENT, "packages": packages, "driver": versions, "venv": str(args.peer_venv)},
        "parameters": {"origins": args.origins, "tasks": args.tasks, "batch": args.batch, "grab_batch": args.grab_batch,
                       "task_grab_batch": args.task_grab_batch, "rounds": args.rounds, "seed": args.seed,
                       "durable": args.durable, "shared_buffers": args.shared_buffers, "now": now.isoformat()},
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
