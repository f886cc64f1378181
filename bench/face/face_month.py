"""Ostinato's learned policy through swh-scheduler's face, end to end, on a simulated month.

One simulated world (``ostinato.sim``: sources changing as Poisson processes with
heterogeneous rates, ``git_lognormal``; the same seed, so the same history, for every
scheduler) is run through several schedulers, and the engine measures freshness and
mean age exactly over the window that follows the warm-up:

``ostinato``
    Ostinato's own orchestrator with ``change_rate_optimal`` (the simulator's store
    policy of that name: the real store on PostgreSQL, the orchestrator and its
    threshold steering, the feedback loop).
``face+swh-journal``
    Ostinato's ``swh-rpc serve`` driven by swh's own client (``RemoteScheduler``, in the
    peer's environment, ``bench/face/face_month_client.py``): the listers record through it,
    each step grabs ``grab_next_visits("git", quota, policy="change_rate_optimal",
    timestamp=<simulated time>)``, and the visits that ended go, as journal
    ``origin_visit_status`` messages, to swh's own journal client function
    (``process_journal_objects``), which upserts the stats the face learns from.
``face+ostinato-journal``
    The same, except that the statuses go straight to the store behind the face with
    ``record_visit_statuses`` (what ``ostinato journal-client`` does with the journal).
``swh-default``, ``swh-dvcs``, ``swh-<policy>``
    swh-scheduler 3.6's own server (its Flask app under gunicorn, over a database made by
    ``swh db create`` / ``swh db init``), the same client, fed by swh's journal client;
    the grab is swh's own ``grab_next_visits_policy_weights`` with its DEFAULT_POLICY and
    DEFAULT_DVCS_POLICY (the ``tablesample`` mix of git is left out: at this scale a
    0.1 % page sample is empty), or one of its policies alone.

Optional (``--schedulers``): ``ostinato+counts``, the orchestrator with a loader that
counts changes (which the journal cannot carry); ``swh-default+our-cooldowns`` and
``swh-dvcs+our-cooldowns``, swh's mixes with the cooldowns the face runs with (swh's
defaults wait 12 h after a grab, 14 days after a failure, 31 after nothing found; the
face's runs 1 h, 1 day and 7 days); ``face+swh-journal+steer`` and
``face+ostinato-journal+steer``, which run, beside the face, the orchestrator's threshold
steering (``ThresholdSteering`` on the face's store, as ``ostinato run`` does), which the
face alone does not (its threshold stays the default one).

How the schedulers are driven: the engine's loop (``run_policy(...,
scheduler_for=...)``), hourly steps, C = N/7 visits a day (the simulator's default)
shared out step by step; a scheduler grabs each step's quota. swh's mixes are grabbed
as swh's runner grabs them, into a queue the loaders take from (oldest first): again
while the step's quota is not queued and grabs bring origins, each time what is missing
rounded up to the least count that swh's ``int(count × share)`` splits without loss (5
for DEFAULT_POLICY, 100 for DEFAULT_DVCS_POLICY: at a few visits an hour its 2 % share
would otherwise round to nothing), each batch shuffled as the runner shuffles it.
Half the sources live on a forge whose lister reports ``last_update``
(``--share-last-update``); the loaders count no changes (``--change-counts no``: the
journal carries none, so the orchestrator learns from what the face can learn from).
The face runs with the simulator's settings (``absolute_cooldown`` and
``minimum_interval`` of a step), as the orchestrator does.

Prints a table (freshness and mean age over the window, the visits made against the
capacity, each run's time; with several seeds, the mean and the spread), checks the
goals, and writes JSON under bench/results/ (``face-month-<date>-<commit>.json``).

Run from the repository root::

    .venv/bin/python bench/face/face_month.py                                    # 2,500 sources, 120 + 30 days, seed 1
    .venv/bin/python bench/face/face_month.py --seed 1 2 3 --jobs 2
    .venv/bin/python bench/face/face_month.py --sources 300 --days 2 --warmup 3  # the short form (the e2e test)
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack
from dataclasses import replace
from datetime import date
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg

from bench.common.peer import ensure_system_tools
from bench.common.processes import ostinato
from bench.common.report import code_version, console, result_header
from bench.face.face_month_run import SCHEDULERS, FaceScheduler, Peer, start_face_server
from bench.face.vs_swh_rpc import start_peer_server
from ostinato.sim.engine import SimulationConfig, make_world, run_policy
from ostinato.sim.policies import StorePolicy, policies_under_test
from test_servers import swh_peer
from test_servers.postgres import PostgresCluster
from test_servers.swh_peer import PEER_REQUIREMENT, peer_packages

REPO = Path(__file__).resolve().parents[2]
PEER_VENV = REPO / swh_peer.VENV_DIR
#: what the goals compare: the orchestrator, the two ways through the face
OURS, FACE = "ostinato", ("face+swh-journal", "face+ostinato-journal")
DEFAULT_SCHEDULERS = [name for name, spec in SCHEDULERS.items() if not spec.get("optional")]
#: the runs that take longest go first, so that the last ones to start are short (swh's mixes grab several times
#: a step; the learning through the face feeds two stores' worth of statements)
COST = {"swh-default": 0, "swh-dvcs": 0, "swh-default+our-cooldowns": 0, "swh-dvcs+our-cooldowns": 0,
        "face+swh-journal": 1, "face+swh-journal+steer": 1}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=int, default=2500, help="sources at the start (default 2500)")
    parser.add_argument("--days", type=float, default=30.0, help="the measured window, days (default 30)")
    parser.add_argument("--warmup", type=float, default=120.0,
                        help="the warm-up before it, days (default 120: the learned policy has learnt by then)")
    parser.add_argument("--seed", type=int, nargs="+", default=[1], help="one or more seeds of the world (default 1)")
    parser.add_argument("--capacity", type=float, help="visits a day (default: sources / 7, the simulator's)")
    parser.add_argument("--share-last-update", type=float, default=0.5,
                        help="share of sources whose forge reports last_update (default 0.5)")
    parser.add_argument("--change-counts", choices=("no", "yes"), default="no",
                        help="the orchestrator's loader counts changes (default no: the journal carries none, so "
                             "the face cannot learn from counts)")
    parser.add_argument("--schedulers", default=",".join(DEFAULT_SCHEDULERS),
                        help=f"comma-separated, among {', '.join(SCHEDULERS)} (default: all but the optional ones, "
                             "ostinato+counts, *+our-cooldowns and *+steer)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once, each in its own process (default 2)")
    parser.add_argument("--peer-venv", type=Path, default=PEER_VENV, help="the peer's virtual environment")
    parser.add_argument("--json-out", type=Path, help="default: bench/results/face-month-<date>-<commit>.json")
    args = parser.parse_args(argv)
    args.schedulers = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    unknown = [s for s in args.schedulers if s not in SCHEDULERS]
    if unknown or not args.schedulers:
        parser.error(f"--schedulers: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(SCHEDULERS)}")
    if args.jobs < 1:
        parser.error("--jobs: at least 1")
    return args


def simulation(args: argparse.Namespace, seed: int) -> SimulationConfig:
    return SimulationConfig(workload="git_lognormal", sources=args.sources, days=args.days, warmup=args.warmup,
                            seed=seed, capacity=args.capacity, share_last_update=args.share_last_update,
                            change_counts=args.change_counts == "yes").validated()


# -- one run, in a worker process -----------------------------------------------------


def fresh_database(cluster: PostgresCluster, name: str, template: str) -> str:
    """A copy of ``template`` (tried again while another copy of it is being made)."""
    for attempt in range(60):
        try:
            cluster.create_database(name, template=template)
            return cluster.dsn(name)
        except psycopg.errors.ObjectInUse:
            time.sleep(0.5 + attempt * 0.1)
    raise SystemExit(f"could not copy the database {template}")


def age_by_forge(config: SimulationConfig, age_by_source: np.ndarray) -> dict[str, float | None]:
    """The window's mean age on each forge: ``with_last_update`` (its lister reports it) and ``without``.

    The engine gives each measured source's mean age (``WindowMetrics.age_by_source``, the live sources
    that lived in the window, in source order); which sources those are, and for how long each lived in
    the window, follows from the world alone (the same seed gives the same births and deaths), as
    ``ArchiveTracker.finish`` computes it."""
    world = make_world(config)
    live = ~world.dead
    exposure = np.where(live, np.clip(np.minimum(config.horizon, world.death) - np.maximum(world.birth, config.warmup),
                                      0, None), 0.0)
    measured = exposure > 0
    if int(measured.sum()) != age_by_source.size:
        return {"with_last_update": None, "without": None}
    weight, reports = exposure[measured], world.reports_last_update[measured]
    found: dict[str, float | None] = {}
    for key, mine in (("with_last_update", reports), ("without", ~reports)):
        found[key] = float((age_by_source[mine] * weight[mine]).sum() / weight[mine].sum()) if mine.any() else None
    return found


def run_one(job: dict[str, Any]) -> dict[str, Any]:
    """One scheduler on one seed's world; returns its figures."""
    name, config, ctx = job["scheduler"], job["config"], job["ctx"]
    spec = SCHEDULERS[name]
    cluster: PostgresCluster = ctx["cluster"]
    python = Path(ctx["python"])
    tenth = [0]

    def progress(_: str, share: float) -> None:
        if share * 10 >= tenth[0] + 1:
            tenth[0] = int(share * 10)
            console.print(f"  {name}, seed {config.seed}: {tenth[0] * 10} %", markup=False, highlight=False)

    began = time.monotonic()
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="face-month-")))
        if spec["server"] == "ostinato-orchestrator":
            policy = replace(policies_under_test()["change_rate_optimal"], name=name)
            counted = replace(config, db=ctx["sim_dsn"], change_counts=bool(spec.get("counts")) or config.change_counts)
            run = run_policy(policy, counted, progress)
        else:
            db = f"run_{name.replace('+', '_').replace('-', '_')}_{config.seed}"
            stack.callback(cluster.drop_database, db, missing_ok=True)
            if spec["server"] == "face":
                dsn = fresh_database(cluster, db, ctx["face_template"])
                url, token = start_face_server(dsn, config, work, stack), ctx["token"]
            else:
                dsn = fresh_database(cluster, db, ctx["swh_template"])
                url, token = start_peer_server(python, dsn, work, stack), None
            peer = stack.enter_context(Peer(python))
            peer("init", url=url, token=token, seed=config.seed, visit_type=spec.get("visit_type", "git"),
                 listers=ctx["listers"])
            policy = StorePolicy(name, spec["description"], {})
            run = run_policy(policy, config, progress,
                             scheduler_for=lambda world, cfg: FaceScheduler(world, cfg, peer, spec, dsn))
    m = run.metrics
    return {"scheduler": name, "seed": config.seed, "description": spec["description"],
            "freshness": m.freshness, "mean_age_days": m.mean_age, "visits": m.visits,
            "mean_age_by_forge_days": age_by_forge(config, m.age_by_source),
            "capacity_in_window": config.visits_per_day * config.days, "eventful": m.eventful,
            "uneventful": m.uneventful, "failed": m.failed, "not_found": m.not_found, "never_visited": m.never_visited,
            "metrics": m.as_dict(), "notes": run.notes, "seconds": round(time.monotonic() - began, 1)}


# -- the report -------------------------------------------------------------------------


def summary(rows: list[dict[str, Any]], names: list[str], seeds: list[int]) -> dict[str, dict[str, Any]]:
    """Per scheduler: each seed's figures, their mean and spread."""
    found: dict[str, dict[str, Any]] = {}
    for name in names:
        mine = {r["seed"]: r for r in rows if r["scheduler"] == name}
        fresh = [mine[s]["freshness"] for s in seeds if s in mine]
        age = [mine[s]["mean_age_days"] for s in seeds if s in mine]
        used = [mine[s]["visits"] / mine[s]["capacity_in_window"] for s in seeds if s in mine]
        forge = {key: [mine[s]["mean_age_by_forge_days"][key] for s in seeds if s in mine]
                 for key in ("with_last_update", "without")}
        if not fresh:
            continue
        found[name] = {"freshness_by_seed": {s: mine[s]["freshness"] for s in seeds if s in mine},
                       "mean_age_by_seed": {s: mine[s]["mean_age_days"] for s in seeds if s in mine},
                       "freshness": statistics.fmean(fresh), "mean_age_days": statistics.fmean(age),
                       "freshness_sd": statistics.stdev(fresh) if len(fresh) > 1 else None,
                       "mean_age_by_forge_days": {key: statistics.fmean(v) if None not in v else None
                                                  for key, v in forge.items()},
                       "visits_of_capacity": statistics.fmean(used),
                       "seconds": sum(mine[s]["seconds"] for s in seeds if s in mine)}
    return found


def paired(rows: list[dict[str, Any]], a: str, b: str, seeds: list[int]) -> dict[str, Any] | None:
    """Freshness of ``a`` minus ``b``, seed by seed: the differences, their mean and standard error; and the
    ratio of their mean ages, seed by seed."""
    by = {(r["scheduler"], r["seed"]): r for r in rows}
    both = [s for s in seeds if (a, s) in by and (b, s) in by]
    diffs = [by[(a, s)]["freshness"] - by[(b, s)]["freshness"] for s in both]
    if not diffs:
        return None
    se = statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else None
    ages = [by[(a, s)]["mean_age_days"] / by[(b, s)]["mean_age_days"] if by[(b, s)]["mean_age_days"] else None
            for s in both]
    return {"by_seed": diffs, "mean": statistics.fmean(diffs), "standard_error": se, "mean_age_ratio_by_seed": ages}


def goals(rows: list[dict[str, Any]], table: dict[str, dict[str, Any]], seeds: list[int]) -> dict[str, Any]:
    """Through the face equals the orchestrator within noise; it beats swh's best policy on swh's server."""
    swh = [n for n in table if SCHEDULERS[n]["server"] == "swh"]
    best = max(swh, key=lambda n: table[n]["freshness"]) if swh else None
    found: dict[str, Any] = {"swh_best": best}
    for face in FACE:
        if face not in table:
            continue
        if OURS in table:
            d = paired(rows, face, OURS, seeds)
            assert d is not None
            # within noise: the mean difference within two standard errors of the paired differences (several
            # seeds), or, on one seed, within the orchestrator's own spread over seeds when known (else not judged)
            noise = 2 * d["standard_error"] if d["standard_error"] is not None else None
            found[f"{face} vs {OURS}"] = {**d, "within_noise": None if noise is None else abs(d["mean"]) <= noise}
        if best is not None:
            d = paired(rows, face, best, seeds)
            assert d is not None
            found[f"{face} vs {best}"] = {**d, "beats_on_every_seed": all(x > 0 for x in d["by_seed"])}
    return found


def print_table(table: dict[str, dict[str, Any]], seeds: list[int], config: SimulationConfig) -> None:
    from rich.console import Console
    from rich.table import Table

    title = (f"face-month: N={config.sources:,} sources, {config.workload}, warm-up {config.warmup:g} d + window "
             f"{config.days:g} d, hourly steps, C={config.visits_per_day:,.1f} visits/day, share_last_update="
             f"{config.share_last_update:g}, seeds {', '.join(map(str, seeds))}")
    out = Table(title=title, caption="freshness and mean age: the engine's exact window means (over seeds: the mean, ± "
                "the standard deviation); age, forge A / B: the mean age on the forge whose lister reports last_update "
                "/ on the other; visits: the window's visits over the capacity; run s: summed over seeds")
    out.add_column("scheduler")
    for seed in seeds if len(seeds) > 1 else []:
        out.add_column(f"fresh s{seed}", justify="right")
    for column in ("freshness", "mean age (d)", "age, forge A", "age, forge B", "visits", "run s"):
        out.add_column(column, justify="right")
    for name, row in table.items():
        sd = f" ± {row['freshness_sd'] * 100:.2f}" if row["freshness_sd"] is not None else ""
        per_seed = [f"{row['freshness_by_seed'][s] * 100:.2f} %" if s in row["freshness_by_seed"] else "-"
                    for s in (seeds if len(seeds) > 1 else [])]
        forge = [f"{v:.3f}" if v is not None else "-" for v in row["mean_age_by_forge_days"].values()]
        out.add_row(name, *per_seed, f"{row['freshness'] * 100:.2f} %{sd}", f"{row['mean_age_days']:.3f}", *forge,
                    f"{row['visits_of_capacity'] * 100:.1f} %", f"{row['seconds']:.0f}")
    Console(width=None if sys.stdout.isatty() else 200).print(out)


def feeding(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What feeding the learning cost each way through the face, summed over the runs: swh's journal client's
    calls through the client (stats read, upserted, learnt from), or the store's ``record_visit_statuses``."""
    found: dict[str, Any] = {}
    for row in rows:
        notes = row["notes"]
        if row["scheduler"].startswith("face+swh-journal"):
            seconds = notes["client"]["seconds"]["journal"]
        elif row["scheduler"].startswith("face+ostinato-journal"):
            seconds = notes["record_visit_statuses_seconds"]
        else:
            continue
        entry = found.setdefault(row["scheduler"], {"seconds": 0.0, "statuses": 0})
        entry["seconds"] += seconds
        entry["statuses"] += notes["statuses_fed"]
    for entry in found.values():
        entry["ms_per_1000_statuses"] = 1e6 * entry["seconds"] / max(1, entry["statuses"])
    return found


def print_goals(found: dict[str, Any]) -> None:
    console.print(f"swh's best policy on swh's server: {found.get('swh_best')}", markup=False, highlight=False)
    for key, value in found.items():
        if key == "swh_best":
            continue
        if key == "feeding":
            for name, entry in value.items():
                console.print(f"feeding {name}: {entry['seconds']:.1f} s for {entry['statuses']:,} statuses "
                              f"({entry['ms_per_1000_statuses']:.0f} ms per 1,000)", markup=False, highlight=False)
            continue
        by_seed = ", ".join(f"{x * 100:+.2f}" for x in value["by_seed"])
        se = f" (standard error {value['standard_error'] * 100:.2f})" if value["standard_error"] is not None else ""
        verdict = {k: v for k, v in value.items() if k in ("within_noise", "beats_on_every_seed")}
        ages = ", ".join("-" if r is None else f"{r:.2f}" for r in value["mean_age_ratio_by_seed"])
        console.print(f"{key}: freshness difference {value['mean'] * 100:+.2f} points{se}; by seed {by_seed}; "
                      f"mean age ratio by seed {ages}; {verdict}", markup=False, highlight=False)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()
    commit = (code["git_commit"] or "unknown")[:7]
    json_out = args.json_out or REPO / "bench" / "results" / f"face-month-{date.today().isoformat()}-{commit}.json"
    configs = {seed: simulation(args, seed) for seed in args.seed}
    ensure_system_tools()
    python = swh_peer.ensure_peer_venv(args.peer_venv, log=lambda line: console.print(line, markup=False))
    packages = peer_packages(python)
    started = time.monotonic()
    with ExitStack() as stack:
        cluster = stack.enter_context(PostgresCluster(durable=False))
        with psycopg.connect(cluster.dsn()) as conn:
            pg_version = conn.execute("SHOW server_version").fetchone()[0].split()[0]  # type: ignore[index]  # SHOW always returns a row
        ctx: dict[str, Any] = {"cluster": cluster, "python": str(python), "listers": []}
        from ostinato.sim.store_driver import FORGE_WITH_LAST_UPDATE, FORGE_WITHOUT_LAST_UPDATE

        ctx["listers"] = [list(FORGE_WITH_LAST_UPDATE[:2]), list(FORGE_WITHOUT_LAST_UPDATE[:2])]
        kinds = {SCHEDULERS[n]["server"] for n in args.schedulers}
        if "ostinato-orchestrator" in kinds:
            cluster.create_database("sim_store")
            ctx["sim_dsn"] = cluster.dsn("sim_store")
        if "face" in kinds:  # one database made by `ostinato db init` with an admin token, copied for each run
            cluster.create_database("face_template")
            ostinato(cluster.dsn("face_template"), "db", "init")
            ctx["token"] = json.loads(ostinato(cluster.dsn("face_template"), "token", "add", "face-month", "--scope",
                                               "admin", "--json"))["secret"]
            ctx["face_template"] = "face_template"
        if "swh" in kinds:  # swh's own tools make its database once; each run gets a copy
            swh_peer.create_peer_database(python, cluster.dsn("postgres"), "swh_template",
                                          log=lambda line: console.print(line, markup=False))
            ctx["swh_template"] = "swh_template"
        jobs = sorted(({"scheduler": name, "config": configs[seed], "ctx": ctx} for seed in args.seed
                       for name in args.schedulers), key=lambda job: COST.get(job["scheduler"], 2))
        console.print(f"{len(jobs)} runs, {args.jobs} at a time; PostgreSQL {pg_version}", markup=False)
        rows: list[dict[str, Any]] = []
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=get_context("fork")) as pool:
            for future in as_completed([pool.submit(run_one, job) for job in jobs]):
                row = future.result()
                rows.append(row)
                console.print(f"done: {row['scheduler']}, seed {row['seed']}: freshness {row['freshness'] * 100:.2f} %, "
                              f"mean age {row['mean_age_days']:.3f} d ({row['seconds']:.0f} s)", markup=False)
    elapsed = time.monotonic() - started

    table = summary(rows, args.schedulers, args.seed)
    found = goals(rows, table, args.seed)
    found["feeding"] = feeding(rows)
    print_table(table, args.seed, configs[args.seed[0]])
    print_goals(found)
    config = configs[args.seed[0]]
    document = {
        **result_header("bench/face/face_month.py", {"postgresql": {"version": pg_version}}),
        "code": code,
        "peer": {"requirement": PEER_REQUIREMENT, "packages": packages,
                 "server": "gunicorn, 1 sync worker, swh.scheduler.api.server:make_app_from_configfile()"},
        "ostinato_server": "ostinato swh-rpc serve (uvicorn, 1 process), admin token, the simulator's settings",
        "parameters": {"sources": args.sources, "days": args.days, "warmup": args.warmup, "seeds": args.seed,
                       "capacity_per_day": config.visits_per_day, "share_last_update": args.share_last_update,
                       "change_counts": args.change_counts, "workload": config.workload, "step_hours": 1,
                       "schedulers": args.schedulers, "jobs": args.jobs},
        "elapsed_seconds": round(elapsed, 1),
        "summary": table,
        "goals": found,
        "runs": rows,
    }
    json_out.parent.mkdir(parents=True, exist_ok=True)
    json_out.write_text(json.dumps(document, indent=2, default=str) + "\n", encoding="utf-8")
    console.print(f"results written to {json_out} ({elapsed / 60:.1f} min)", markup=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
