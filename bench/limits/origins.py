"""Throughput of the origin-visit side of each store: record listed origins, feed visit statuses back, grab, metrics.

For each store (SQLite in a temporary file, PostgreSQL in a throwaway
``PostgresCluster``) on a fresh database, with one lister and N ``git``
origins, the benchmark

1. records the N listed origins with ``Store.record_listed_origins`` in batches
   of ``--batch`` (80 % with a ``last_update`` over the past 5 years, 20 %
   without; 10 % forks; 10 % with extra loader arguments);
2. feeds N journal visit statuses back with ``Store.record_visit_statuses`` in
   batches of ``--batch``: a first visit of 60 % of the origins, then a second
   visit of two thirds of those (same snapshot: uneventful), with 3 % ``failed``
   and 1 % ``not_found``; visit dates lie over the past 2 years;
3. for each scheduling policy, times ``Store.grab_next_visits("git",
   [GrabRequest(policy, --grab-batch)], now, dry_run=True)`` ``--rounds`` times,
   then as many real grabs (each takes new origins: grabbed ones cool down);
4. times ``Store.update_origin_metrics(now)`` once;

then prints a table (origins/s, statuses/s, grab latency, PostgreSQL/SQLite
ratio, the issue's aims) and writes the figures and the machine description as
JSON. The data is a pure function of ``--seed`` and the index of each origin,
generated batch by batch (nothing of size N is held), and the benchmark checks
what the store answers against what the data allows: how many origins each
grab can return, that they fit the policy, and the metrics' counts.

Run from the repository root::

    .venv/bin/python bench/limits/origins.py                       # 1,000,000 origins, both stores
    .venv/bin/python bench/limits/origins.py --origins 20000 --stores postgresql --no-durable

PostgreSQL runs with fsync on (``durable=True``, as in production) unless
``--no-durable`` is given, and the benchmark runs ``ANALYZE`` on it before the
grabs (a live database has the statistics autovacuum gathers) unless
``--no-analyze`` is given. SQLite uses the store's own settings (WAL,
``synchronous=NORMAL``) and, like the store, never runs ``ANALYZE``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg
from rich.console import Console
from rich.table import Table

from bench.common.report import RESULTS, code_version, console, progress, result_header
from bench.limits.origins_data import FEEDBACK, POLICIES, VISIT_TYPE, Checker, Dataset, Expected
from bench.limits.tasks import fresh_store, timed_batches
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.visit_policies import GrabRequest, VisitPolicy
from ostinato.domain.visits import VisitStatus
from ostinato.store.interface import Store

LISTER = ("bench-forge", "forge.example.org")
STORES = ("sqlite", "postgresql")

# The aims for PostgreSQL at N = 1,000,000: (comparison, value)
AIMS: dict[str, tuple[str, float]] = {
    "listed_origins_per_s": ("≥", 80_000),
    "statuses_per_s": ("≥", 40_000),
    **{f"grab_{p.value}_real_median_ms": ("≤", 15) for p in POLICIES},
}
AIM_N = 1_000_000


def figures() -> list[tuple[str, str, str]]:
    """(key in the results, row title, unit) of each row of the table."""
    rows = [
        ("listed_origins_per_s", "record_listed_origins", "origins/s"),
        ("statuses_per_s", "record_visit_statuses", "statuses/s"),
    ]
    for p in POLICIES:
        rows.append((f"grab_{p.value}_dry_run_median_ms", f"grab {p.value}, dry run", "ms"))
        rows.append((f"grab_{p.value}_real_median_ms", f"grab {p.value}", "ms"))
    rows.append(("metrics_ms", "update_origin_metrics", "ms"))
    return rows


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, default=1_000_000, help="number of origins N, and of visit statuses (default 1000000)")
    parser.add_argument("--batch", type=int, default=10_000, help="origins per record_listed_origins call, statuses per record_visit_statuses call")
    parser.add_argument("--grab-batch", type=int, default=1_000, help="count of the GrabRequest of one grab_next_visits call")
    parser.add_argument("--rounds", type=int, default=5, help="dry-run grabs, then real grabs, per policy (the median is reported)")
    parser.add_argument("--stores", default=",".join(STORES), help="comma-separated stores among sqlite,postgresql")
    parser.add_argument("--seed", type=int, default=42, help="seed of the generated data")
    parser.add_argument("--no-durable", dest="durable", action="store_false", help="PostgreSQL with fsync off (not like production)")
    parser.add_argument("--shared-buffers", default="2GB", help="PostgreSQL shared_buffers (default 2GB)")
    parser.add_argument("--no-analyze", dest="analyze", action="store_false",
                        help="do not ANALYZE the PostgreSQL database before the grabs: plan with whatever autovacuum gathered")
    parser.add_argument("--json-out", type=Path,
                        help="where to write the results (default bench/results/origins-<date>-<commit>[-no-durable][-no-analyze].json)")
    args = parser.parse_args(argv)
    args.stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = sorted(set(args.stores) - set(STORES))
    if unknown or not args.stores:
        parser.error(f"--stores: expected some of {', '.join(STORES)}, got {args.stores}")
    if min(args.origins, args.batch, args.grab_batch, args.rounds) < 1:
        parser.error("--origins, --batch, --grab-batch and --rounds must be at least 1")
    return args


def default_json_out(code: dict[str, Any], durable: bool, analyze: bool) -> Path:
    commit = (code["git_commit"] or "unknown")[:7]
    suffix = ("" if durable else "-no-durable") + ("" if analyze else "-no-analyze")
    return RESULTS / f"origins-{date.today().isoformat()}-{commit}{suffix}.json"


# -- the runs (the data and the checks are in origins_data.py) ---------------------
@contextlib.contextmanager
def wal_meter(store: Store) -> Iterator[Callable[[], int] | None]:
    """On PostgreSQL, a reader of the WAL position (bytes), on its own connection, for the WAL a grab
    writes: read before and after the timed call, never inside it. None on another store."""
    dsn = getattr(store, "dsn", None)
    if dsn is None:
        yield None
        return
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield lambda: int(conn.execute("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn").fetchone()[0])


def run_grabs(store: Store, data: Dataset, checker: Checker, count: int, rounds: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with progress("grab_next_visits", len(POLICIES) * rounds * 2) as advance, wal_meter(store) as wal:
        for policy in POLICIES:
            entry: dict[str, Any] = {"dry_run_ms": [], "dry_run_returned": [], "real_ms": [], "real_returned": [],
                                     "allowed_dry_run": [], "allowed_real": [], "dry_run_wal_bytes": [],
                                     "real_wal_bytes": []}
            results[policy.value] = entry
            dry_urls: list[str] | None = None
            for dry_run in (True, False):
                kind = "dry_run" if dry_run else "real"
                for r in range(rounds):
                    label = f"{'dry-run' if dry_run else 'real'} grab {r + 1} of {policy.value}"
                    wal_before = wal() if wal else 0
                    start = time.perf_counter()
                    try:
                        visits = store.grab_next_visits(VISIT_TYPE, [GrabRequest(policy, count)], data.now, dry_run=dry_run)
                    except Exception as exc:  # new store code: report, and go on with the next policy
                        checker.warn(f"{label} raised {type(exc).__name__}: {exc}")
                        entry["error"] = f"{type(exc).__name__}: {exc}"
                        break
                    entry[f"{kind}_ms"].append((time.perf_counter() - start) * 1000)
                    if wal:
                        entry[f"{kind}_wal_bytes"].append(wal() - wal_before)
                    entry[f"{kind}_returned"].append(len(visits))
                    urls = [v.url for v in visits]
                    # only where the policy's order has no ties: otherwise another plan may pick other equals
                    strict = policy in (VisitPolicy.NEVER_VISITED_OLDEST_UPDATE_FIRST, VisitPolicy.ALREADY_VISITED_ORDER_BY_LAG)
                    if strict and dry_run and dry_urls is not None and urls != dry_urls:
                        checker.warn(f"{label} differs from the first dry run (a dry run changed something)")
                    if strict and not dry_run and r == 0 and dry_urls is not None and urls != dry_urls:
                        checker.warn(f"{label} differs from the dry runs before it")
                    if dry_run and dry_urls is None:
                        dry_urls = urls
                    entry[f"allowed_{kind}"].append(checker.check(policy, visits, count, dry_run, label))
                    advance(1)
                if "error" in entry:
                    break
            for kind in ("dry_run", "real"):
                times, wal_bytes = entry[f"{kind}_ms"], entry[f"{kind}_wal_bytes"]
                entry[f"{kind}_median_ms"] = statistics.median(times) if times else None
                entry[f"{kind}_wal_median_bytes"] = statistics.median(wal_bytes) if wal_bytes else None
    return results


def planner_statistics(store_name: str, store: Store, db_path: Path, analyze: bool) -> dict[str, Any]:
    """Say which statistics the planner has for the origin tables; on PostgreSQL, ANALYZE first if asked.

    A live PostgreSQL database has statistics: autovacuum analyzes a table soon after many rows
    change, but not necessarily between the feeding and the grabs of this benchmark, so by default
    it runs ANALYZE itself. The SQLite store never runs ANALYZE, so neither does the benchmark.
    """
    tables = ("listed_origin", "origin_visit_stats")
    if store_name == "sqlite":
        with contextlib.closing(sqlite3.connect(db_path)) as conn:
            has_stat = conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone()[0]
            analyzed = {t: bool(has_stat and conn.execute("SELECT count(*) FROM sqlite_stat1 WHERE tbl = ?", (t,)).fetchone()[0])
                        for t in tables}
        return {"analyze": False, "analyzed": analyzed}
    with psycopg.connect(store.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]  # not SQLite: a PostgresStore, which has a dsn
        if analyze:
            conn.execute("ANALYZE")
        rows = conn.execute("SELECT relname, last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL, n_mod_since_analyze "
                            "FROM pg_stat_user_tables WHERE relname = ANY(%s)", (list(tables),)).fetchall()
    return {"analyze": analyze, "analyzed": {r[0]: r[1] for r in rows}, "rows_changed_since_analyze": {r[0]: r[2] for r in rows}}


def check_metrics(checker: Checker, metrics: list, lister_id: int, n: int, expected: Expected, *,
                  called: bool = True) -> dict[str, Any]:
    """The benchmark lister's metrics as JSON, each count checked against the data's."""
    mine = [m for m in metrics if m.lister_id == lister_id and m.visit_type == VISIT_TYPE]
    if called and len(mine) != 1:
        checker.warn(f"update_origin_metrics returned {len(mine)} rows for the lister, expected 1")
    if not mine:
        return {}
    m = mine[0]
    row = {"origins_known": m.origins_known, "origins_enabled": m.origins_enabled,
           "origins_never_visited": m.origins_never_visited,
           "origins_with_pending_changes": m.origins_with_pending_changes,
           "lag_histogram": dict(m.lag_histogram),
           "lag_max_s": m.lag_max.total_seconds() if m.lag_max is not None else None}
    row["origins_never_successful"] = m.origins_never_successful
    want = {"origins_known": n, "origins_enabled": n, "origins_never_visited": expected.counts["origins_never_visited"],
            "origins_never_successful": expected.counts["origins_never_successful"],
            "origins_with_pending_changes": expected.counts["origins_with_pending_changes"]}
    for key, value in want.items():
        if row[key] != value:
            checker.warn(f"update_origin_metrics: {key} = {row[key]:,}, expected {value:,}")
    if sum(m.lag_histogram.values()) != m.origins_with_pending_changes:
        checker.warn(f"update_origin_metrics: the lag histogram counts {sum(m.lag_histogram.values()):,} origins, "
                     f"pending changes {m.origins_with_pending_changes:,}")
    return row


def run_store(store: Store, data: Dataset, expected: Expected, store_name: str, batch: int, count: int,
              rounds: int, db_path: Path, analyze: bool) -> dict[str, Any]:
    now, n = data.now, data.n
    lister = store.get_or_create_lister(*LISTER, now)

    # 1. record listed origins
    recorded: list[int] = []

    def record(origins: list[ListedOrigin]) -> int:
        recorded.append(store.record_listed_origins(lister.id, origins, now))
        return len(origins)

    listed_s = timed_batches("record_listed", n, data.listed_batches(batch), record)
    if sum(recorded) != n:
        raise SystemExit(f"record_listed_origins wrote {sum(recorded)} origins, expected {n}")

    # 2. feed visit statuses back
    changed: list[int] = []

    def feed(statuses: list[VisitStatus]) -> int:
        changed.append(store.record_visit_statuses(statuses, FEEDBACK, now=now))
        return len(statuses)

    feed_s = timed_batches("record_statuses", n, data.status_batches(batch), feed)
    checker = Checker(data, expected, store_name)
    if sum(changed) != n:
        checker.warn(f"record_visit_statuses changed {sum(changed):,} stats for {n:,} statuses, expected {n:,}")

    # 3. grab, each policy in turn
    statistics_ = planner_statistics(store_name, store, db_path, analyze)
    console.print(f"  planner statistics before the grabs: {statistics_['analyzed']}")
    grabs = run_grabs(store, data, checker, count, rounds)
    statistics_ = {"before_grabs": statistics_, "after_grabs": planner_statistics(store_name, store, db_path, False)}

    # 4. metrics
    metrics_ms = None
    start = time.perf_counter()
    try:
        metrics = store.update_origin_metrics(now)
        metrics_ms = (time.perf_counter() - start) * 1000
    except Exception as exc:
        checker.warn(f"update_origin_metrics raised {type(exc).__name__}: {exc}")
        metrics = []
    metrics_row = check_metrics(checker, metrics, lister.id, n, expected, called=metrics_ms is not None)

    result: dict[str, Any] = {
        "listed_seconds": listed_s,
        "listed_origins_per_s": n / listed_s,
        "statuses_seconds": feed_s,
        "statuses_per_s": n / feed_s,
        "statuses_changed": sum(changed),
    }
    for policy, entry in grabs.items():
        result[f"grab_{policy}_dry_run_median_ms"] = entry["dry_run_median_ms"]
        result[f"grab_{policy}_real_median_ms"] = entry["real_median_ms"]
    result.update(metrics_ms=metrics_ms, planner_statistics=statistics_, grabs=grabs, metrics=metrics_row, anomalies=checker.anomalies)
    return result


# -- the report ----------------------------------------------------------------


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "error"
    return f"{value:,.1f}" if unit == "ms" else f"{value:,.0f}"


def short_grab(result: dict[str, Any], key: str, count: int) -> int | None:
    """The fewest origins a grab row's calls returned, when fewer than asked."""
    for policy in POLICIES:
        for kind in ("dry_run", "real"):
            if key == f"grab_{policy.value}_{kind}_median_ms":
                returned = result["grabs"][policy.value][f"{kind}_returned"]
                return min(returned) if returned and min(returned) < count else None
    return None


def aim_text(key: str, value: float | None) -> str:
    if key not in AIMS:
        return ""
    sign, target = AIMS[key]
    shown = f"{sign} {target:,.0f}"
    if value is None:
        return shown
    met = value >= target if sign == "≥" else value <= target
    return f"{shown}: {'met' if met else 'missed'}"


def report(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> tuple[dict[str, float], dict[str, str]]:
    """Print the table; return the PostgreSQL/SQLite ratio of each figure (when both ran) and the aims' verdicts."""
    rows = figures()
    ratios: dict[str, float] = {}
    if "sqlite" in results and "postgresql" in results:
        for key, *_ in rows:
            pg, lite = results["postgresql"].get(key), results["sqlite"].get(key)
            if pg is not None and lite:
                ratios[key] = pg / lite
    aims = {key: aim_text(key, results["postgresql"].get(key)) for key in AIMS} if "postgresql" in results else {}
    title = (f"Ostinato origins benchmark: N={args.origins:,}, batch={args.batch:,}, grab batch={args.grab_batch:,}, "
             f"rounds={args.rounds}")
    if "postgresql" in results:
        title += f", PostgreSQL durable={args.durable}"
    table = Table(title=title, caption=None if args.origins == AIM_N else f"the aims are stated for N={AIM_N:,}")
    table.add_column("figure")
    table.add_column("unit")
    for name in results:
        table.add_column(f"{name} {results[name]['version']}", justify="right")
    if ratios:
        table.add_column("PostgreSQL / SQLite", justify="right")
    if aims:
        table.add_column("aim (PostgreSQL)", justify="right")
    for key, row_title, unit in rows:
        cells = [row_title, unit]
        for name in results:
            cell = fmt(results[name].get(key), unit)
            short = short_grab(results[name], key, args.grab_batch)
            cells.append(cell + (f" [{short:,}]" if short is not None else ""))
        if ratios:
            cells.append(f"{ratios[key]:.2f}×" if key in ratios else "")
        if aims:
            cells.append(aims.get(key, ""))
        table.add_row(*cells)
    Console(width=None if sys.stdout.isatty() else 160).print(table)
    if any(short_grab(results[name], key, args.grab_batch) is not None for name in results for key, *_ in rows):
        print(f"[n]: the fewest origins one of the row's grabs returned, when fewer than {args.grab_batch:,}")
    return ratios, aims


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()  # before the run: the modules measured are the ones imported now
    console.print(f"ostinato in {code['package']}: commit {(code['git_commit'] or '?')[:12]}, store sha256 "
                  f"{code['store_sha256'][:12]}{' (store modified locally)' if code['store_changes'] else ''}")  # fmt: skip
    json_out = args.json_out or default_json_out(code, args.durable, args.analyze)
    now = datetime.now(UTC).replace(microsecond=0)
    data = Dataset(args.origins, args.seed, now)
    console.print(f"data: {args.origins:,} origins and statuses, seed {args.seed}, now {now.isoformat()}")
    expected = data.expected()
    console.print("  " + ", ".join(f"{p.value} {c:,}" for p, c in expected.candidates.items()) + " origins grabbable")
    results: dict[str, dict[str, Any]] = {}
    for name in args.stores:
        console.print(f"[bold]{name}[/bold]: {args.origins:,} origins")
        with tempfile.TemporaryDirectory(prefix="ostinato-bench-") as workdir:
            with fresh_store(name, Path(workdir), args.durable, args.shared_buffers) as (store, version):
                figures_ = run_store(store, data, expected, name, args.batch, args.grab_batch, args.rounds,
                                     Path(workdir) / "bench.db", args.analyze)
        results[name] = {"version": version, **figures_}
        real = [figures_[f"grab_{p.value}_real_median_ms"] for p in POLICIES]
        console.print(
            f"  recorded {figures_['listed_origins_per_s']:,.0f} origins/s, fed {figures_['statuses_per_s']:,.0f} statuses/s, "
            f"grab median {', '.join(fmt(ms, 'ms') for ms in real)} ms, metrics {fmt(figures_['metrics_ms'], 'ms')} ms"
        )
    ratios, aims = report(results, args)
    document = {
        **result_header("bench/limits/origins.py", results),
        "code": code,
        "parameters": {"origins": args.origins, "batch": args.batch, "grab_batch": args.grab_batch, "rounds": args.rounds,
                       "seed": args.seed, "durable": args.durable, "analyze": args.analyze, "now": now.isoformat(),
                       "shared_buffers": args.shared_buffers},
        "data": {"grabbable": {p.value: c for p, c in expected.candidates.items()}, **expected.counts},
        "results": results,
        "ratio_postgresql_over_sqlite": ratios,
        "aims_postgresql": {key: text for key, text in aims.items()} | ({"stated_for_origins": AIM_N} if aims else {}),
    }
    json_out.parent.mkdir(parents=True, exist_ok=True)
    json_out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    console.print(f"results written to {json_out}")
    anomalies = sum(len(r["anomalies"]) for r in results.values())
    if anomalies:
        console.print(f"[yellow]{anomalies} warning(s)[/yellow]: see `anomalies` in the JSON")
    return 0


if __name__ == "__main__":
    sys.exit(main())
