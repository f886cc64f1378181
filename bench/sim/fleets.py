"""The schedule pick's rules on the named schedule fleets (docs/reference/fleet-simulator.md): every
fleet × seed × rule through ``ostinato.sim.fleet_report.run_all`` (the real store and deadline
scheduler on a simulated clock), the table of ERROR time with each rule's ratio to the greedy pick's,
and the JSON under bench/results/.

    .venv/bin/python bench/sim/fleets.py                                   # 6 fleets × 5 seeds × 5 rules, 2 days
    .venv/bin/python bench/sim/fleets.py --fleets light,lost-node --seeds 3 --policies greedy,lookahead --jobs 2
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.common.report import code_version, console, result_header
from ostinato.cli.output import print_table
from ostinato.sim.fleet_engine import POLICIES, check_policies
from ostinato.sim.fleet_report import TABLE_COLUMNS, report_dict, run_all, table_rows, write_plots
from ostinato.sim.fleets import FLEETS, fleet_named


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fleets", default=",".join(FLEETS))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--days", type=float, default=2.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--plots", type=Path, help="also write the plots here")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.jobs < 1:
        parser.error("--seeds and --jobs: at least 1")
    policies = check_policies(args.policies.split(","))
    fleets = [fleet_named(name).with_days(args.days) for name in args.fleets.split(",")]
    seeds = list(range(args.seeds))
    code = code_version()

    def done(run) -> None:
        console.print(f"{run.fleet} seed {run.seed} {run.policy}: ERROR {run.error_share:.1%} ({run.seconds:.0f}s)",
                      highlight=False)

    runs = run_all(fleets, seeds, policies, jobs=args.jobs, done=done)
    report = report_dict(fleets, runs, command=" ".join(sys.argv), seeds=seeds, policies=policies,
                         settings={"days": args.days, "db": "sqlite:///:memory:", "max_step_seconds": 300,
                                   "ping_timeout_seconds": 30, "steal_grace_seconds": 30})
    print_table(table_rows(report["summary"]), TABLE_COLUMNS, title="Schedule fleets: the pick's rules")
    out = args.json_out or Path("bench/results") / (
        f"fleets-{datetime.now(UTC):%Y-%m-%d}-{(code.get('git_commit') or 'unknown')[:7]}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    document = {**result_header("bench/sim/fleets.py", {}), "code": code,
                "parameters": {"fleets": [f.name for f in fleets], "seeds": seeds, "policies": policies,
                               "days": args.days}, **report}
    out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    if args.plots:
        for path in write_plots(fleets, runs, report["summary"], args.plots):
            console.print(f"wrote {path}")
    console.print(f"results written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
