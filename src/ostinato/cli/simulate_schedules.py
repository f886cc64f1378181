"""``ostinato simulate-schedules``: compare the schedule pick's rules (greedy, FIFO, shortest period
first, lookahead, a clairvoyant lookahead) on fleets of simulated schedules
(docs/reference/fleet-simulator.md).

Every run drives the real store (a fresh in-memory SQLite database per fleet, seed and rule unless
``--db`` says otherwise: this command ignores ``ostinato --db`` and never touches the configured
database) and one real deadline scheduler per simulated node, on a simulated clock. Every option is
checked before anything runs: bad input fails with one line naming the option (exit status 2).
"""

from __future__ import annotations

import json
import shlex
import sys
from datetime import timedelta
from pathlib import Path

import click

from .. import extras
from ..domain.durations import format_duration
from ..domain.errors import ValidationError
from .app import cli
from .output import DurationType, NumberType, WholeNumberType, console, echo_json, print_table

DEFAULT_FLEET = "load-0.9"
DEFAULT_POLICIES = "greedy,fifo,spf,lookahead,clairvoyant"


@cli.command("simulate-schedules")
@click.option("--fleet", "fleet_names", multiple=True, metavar="NAME|FILE",
              help=f"A named fleet (light, load-0.9, load-1.2, lost-node, heavy-tail, constraints) or a JSON fleet "
                   f"file (repeatable; default {DEFAULT_FLEET}).")
@click.option("--seeds", type=WholeNumberType(1, maximum=1000), default=5, show_default=True,
              help="Seeds per fleet: the draws of durations, outcomes and starting phases.")
@click.option("--first-seed", type=WholeNumberType(0), default=0, show_default=True, help="The first seed.")
@click.option("--policies", default=DEFAULT_POLICIES, show_default=True, help="Pick rules to compare, comma-separated.")
@click.option("--days", type=NumberType(), help="Simulated days (default: the fleet's).")
@click.option("--load", type=NumberType(), help="Scale every run duration to this load (work over slots).")
@click.option("--max-step", type=DurationType(), default="5m", show_default=True,
              help="The longest step of the simulated clock between events.")
@click.option("--jobs", type=WholeNumberType(1, maximum=64), default=1, show_default=True,
              help="Simulations run at once (processes).")
@click.option("--db", "db_url", default="sqlite:///:memory:", show_default=True,
              help="Store of each run: sqlite:///:memory:, sqlite:///PATH (one new file per run) or postgresql://… "
                   "(one new schema per run, dropped afterwards).")
@click.option("--json", "json_file", type=click.Path(dir_okay=False), help="Write the report as JSON to this file (- for standard output).")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False),
              help="Write errors-<fleet>.png and error-share.png here.")
def simulate_schedules_command(fleet_names, seeds, first_seed, policies, days, load, max_step, jobs, db_url, json_file,
                               plot_dir):
    """Simulate fleets of schedules under several pick rules and compare their ERROR time.

    Each node is a real DeadlineScheduler on the real store; runs are drawn, not executed (the n-th run of
    a schedule lasts as long and ends the same way under every rule). Reports, per fleet and rule (mean ±
    standard error across seeds): the share of schedule-time in ERROR and in WARNING, the worst schedule's,
    deadline misses, lateness, the recovery after a lost node returns, and slot use.
    """
    extras.require("sim", "ostinato simulate-schedules")
    if plot_dir:
        extras.require("plots", "ostinato simulate-schedules --plot")
    from ..sim.fleet_engine import check_policies
    from ..sim.fleet_report import TABLE_COLUMNS, report_dict, run_all, summarize, table_rows, write_plots
    from ..sim.fleets import fleet_named

    chosen = check_policies([p.strip() for p in policies.split(",") if p.strip()])
    fleets = [fleet_named(name) for name in dict.fromkeys(fleet_names or [DEFAULT_FLEET])]
    if days is not None:
        fleets = [f.with_days(days) for f in fleets]
    if load is not None:
        fleets = [f.with_load(load) for f in fleets]
    if len({f.name for f in fleets}) != len(fleets):
        raise ValidationError("fleet", "fleets of different names", [f.name for f in fleets])
    if max_step < timedelta(seconds=1):
        raise ValidationError("max_step", "at least 1 second", format_duration(max_step))
    seed_list = list(range(first_seed, first_seed + seeds))
    err = console(stderr=True)

    def done(run) -> None:
        err.print(f"simulated {run.fleet} seed {run.seed} {run.policy} in {run.seconds:.1f}s", highlight=False,
                  markup=False)

    runs = run_all(fleets, seed_list, chosen, jobs=jobs, done=done, db=db_url, max_step=max_step)
    command = shlex.join(["ostinato", "simulate-schedules", *sys.argv[2:]]) if sys.argv[1:2] == ["simulate-schedules"] \
        else "ostinato simulate-schedules"
    report = report_dict(fleets, runs, command=command, seeds=seed_list, policies=chosen,
                         settings={"max_step_seconds": max_step.total_seconds(), "db": db_url,
                                   "ping_timeout_seconds": 30, "steal_grace_seconds": 30})
    if plot_dir:
        for path in write_plots(fleets, runs, report["summary"], plot_dir):
            err.print(f"wrote {path}", highlight=False, markup=False)
    if json_file == "-":
        echo_json(report)
        return
    if json_file:
        Path(json_file).parent.mkdir(parents=True, exist_ok=True)
        Path(json_file).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    out = console()
    for fleet in report["fleets"]:
        out.print(f"{fleet['name']}: {fleet['schedules']} schedules on {len(fleet['nodes'])} nodes × "
                  f"{fleet['slots'] // max(len(fleet['nodes']), 1)} slots, load {fleet['load']:.2f}, "
                  f"{fleet['days']:g} days (warm-up {fleet['warmup_hours']:g}h); {fleet['description']}",
                  highlight=False, markup=False)
    print_table(table_rows(summarize(fleets, runs)), TABLE_COLUMNS,
                title="Schedule-time in ERROR and WARNING, misses, lateness (run end − deadline), recovery, slot use")
    out.print(f"seeds {seed_list[0]}–{seed_list[-1]}; mean ± standard error across seeds; command: {command}",
              highlight=False, soft_wrap=True, markup=False)
