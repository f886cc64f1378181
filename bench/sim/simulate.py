"""How long ``ostinato simulate`` takes, and where the time goes.

For each number of sources, runs each chosen policy once on the same world
(``ostinato.sim.run_policy``; default: one store policy, ``oldest_scheduled_first``,
through in-memory SQLite, and the ``uniform`` baseline for the simulator's own
cost) and records its wall time split into the parts of the step loop: the
listers (``record_listed_origins``), the feedback (``record_visit_statuses``), the
pick (the orchestrator's grab, or a baseline's numpy choice) and the world and
measures (numpy). Prints a table and writes the figures, the machine and the
commit as JSON.

Run from the repository root::

    .venv/bin/python bench/sim/simulate.py                                  # 10,000 and 100,000 sources
    .venv/bin/python bench/sim/simulate.py --sources 10000 --policy seed003_vcs_mix --workload web_cho2000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from ostinato.sim.engine import SimulationConfig, run_policy
from ostinato.sim.policies import policies_under_test


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--workload", default="git_lognormal")
    parser.add_argument("--policy", action="append", help="default: oldest_scheduled_first and uniform")
    parser.add_argument("--warmup", type=float, default=182.0)
    parser.add_argument("--days", type=float, default=60.0)
    parser.add_argument("--step-hours", type=float, default=1.0)
    parser.add_argument("--share-last-update", type=float, default=0.0)
    parser.add_argument("--db", default="sqlite:///:memory:")
    parser.add_argument("--out", help="JSON file (default bench/results/sim-DATE-COMMIT-WORKLOAD.json)")
    args = parser.parse_args()
    known = policies_under_test()
    names = args.policy or ["oldest_scheduled_first", "uniform"]
    rows = []
    for sources in args.sources:
        config = SimulationConfig(workload=args.workload, sources=sources, warmup=args.warmup, days=args.days,
                                  step=timedelta(hours=args.step_hours), share_last_update=args.share_last_update,
                                  db=args.db).validated()
        for name in names:
            run = run_policy(known[name], config)
            row = {"sources": sources, "policy": name, "seconds": round(run.seconds, 2),
                   "steps": int(round(config.horizon / config.step_days)),
                   "visits_per_day": round(config.visits_per_day, 1),
                   "visits_simulated": int(round(config.visits_per_day * config.horizon)),
                   "seconds_by_part": run.notes.get("seconds_by_part"),
                   "freshness": round(run.metrics.freshness, 5), "mean_age_days": round(run.metrics.mean_age, 5)}
            rows.append(row)
            parts = ", ".join(f"{k} {v:.1f}s" for k, v in (row["seconds_by_part"] or {}).items())
            print(f"{sources:>9,} {name:<24} {run.seconds:8.1f}s  ({parts})", flush=True)
    result = {"date": date.today().isoformat(), "commit": commit(), "workload": args.workload, "warmup": args.warmup,
              "days": args.days, "step_hours": args.step_hours, "share_last_update": args.share_last_update, "db": args.db,
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
              "runs": rows}
    out = Path(args.out) if args.out else ROOT / "bench" / "results" / f"sim-{result['date']}-{result['commit']}-{args.workload}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
