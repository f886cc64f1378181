"""``ostinato simulate``: compare origin policies on a simulated world, against uniform revisiting
and the oracle (see ``ostinato.sim``).

The store policies run through the real store (a fresh in-memory SQLite database
per policy unless ``--db`` says otherwise: this command ignores ``ostinato --db``
and never touches the configured database), the real orchestrator and the real
feedback loop, with a simulated clock.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from .. import extras
from ..domain.errors import ValidationError
from ..sim.workloads import WORKLOADS
from .app import cli
from .output import DurationType, NumberType, WholeNumberType, console, echo_json, key_values, print_table

CHANGE_COUNTS = {"auto": None, "yes": True, "no": False}


def _json_default(value: Any) -> Any:
    from datetime import timedelta

    return value.total_seconds() if isinstance(value, timedelta) else str(value)


@cli.command("simulate")
@click.option("--workload", default="git_lognormal", show_default=True,
              help=f"How sources change: {', '.join(WORKLOADS)}.")
@click.option("--sources", type=WholeNumberType(1), default=10_000, show_default=True, help="Sources at the start (N).")
@click.option("--capacity", type=NumberType(), help="Visits a day (default: sources / 7).")
@click.option("--days", type=NumberType(), default=60.0, show_default=True, help="Measurement window, days.")
@click.option("--warmup", type=NumberType(), default=182.0, show_default=True, help="Warm-up before it, days.")
@click.option("--step", type=DurationType(), default="1h", show_default=True, help="Time step of the simulation.")
@click.option("--seed", type=WholeNumberType(0), default=0, show_default=True, help="Seed of every random draw.")
@click.option("--policy", "policy_names", multiple=True, help="A policy to run (repeatable; default: all).")
@click.option("--share-last-update", type=NumberType(), default=0.0, show_default=True,
              help="Share of sources whose forge's lister reports last_update (0 to 1).")
@click.option("--new-sources-per-day", type=NumberType(), help="Sources born a day (default: sources × 0.0003).")
@click.option("--failure-rate", type=NumberType(), default=0.02, show_default=True, help="Share of visits that fail.")
@click.option("--dead-share", type=NumberType(), default=0.01, show_default=True,
              help="Share of initial sources that are gone (every visit: not found).")
@click.option("--max-gap", type=DurationType(), default="60d", show_default=True,
              help="The floor oracles visit every source at least this often.")
@click.option("--listing-period", type=DurationType(), default="1d", show_default=True, help="How often the listers run.")
@click.option("--full-listing-period", type=DurationType(), default="30d", show_default=True,
              help="How often the listers list every source again (re-enabling disabled ones).")
@click.option("--visit-duration", type=DurationType(), default="10m", show_default=True, help="Median visit duration.")
@click.option("--change-counts", type=click.Choice(list(CHANGE_COUNTS)), default="auto", show_default=True,
              help="Statuses carry the number of changes found (auto: as the workload's loader can).")
@click.option("--db", "db_url", default="sqlite:///:memory:", show_default=True,
              help="Store of the store policies: sqlite:///:memory:, sqlite:///PATH (one new file per policy) or "
                   "postgresql://… (one new schema per policy, dropped afterwards).")
@click.option("--setting", "setting_values", multiple=True, metavar="NAME=VALUE",
              help="A setting for the store policies, over the simulation's (repeatable).")
@click.option("--jobs", type=WholeNumberType(1), default=1, show_default=True, help="Policies simulated at once (processes).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Also write the JSON report to this file.")
@click.option("--plots", "plots_dir", type=click.Path(file_okay=False), help="Write freshness.png and age.png here.")
def simulate_command(workload, sources, capacity, days, warmup, step, seed, policy_names, share_last_update,
                     new_sources_per_day, failure_rate, dead_share, max_gap, listing_period, full_listing_period,
                     visit_duration, change_counts, db_url, setting_values, jobs, as_json, out_file, plots_dir):
    """Simulate origin policies on a world of changing sources and compare them.

    Store policies (the orchestrator's default mixes, oldest_scheduled_first, the ×2 / ÷2 feedback, and any newer
    store policy) run through the real store and orchestrator; uniform, the multiplicative rule
    and the oracles (free and with the --max-gap floor, for freshness and for age) are simulated
    directly. Reports freshness, age, change latency, staleness, wasted visits, never-visited
    sources and new sources' first-visit latency over the window after the warm-up.
    """
    extras.require("sim", "ostinato simulate")
    if plots_dir:
        extras.require("plots", "ostinato simulate --plots")
    from ..sim.engine import PolicyRun, SimulationConfig, run_simulation
    from ..sim.policies import policies_under_test
    from ..sim.report import (QUALITY_COLUMNS, VISIT_COLUMNS, command_line, header_lines, quality_rows, report_dict,
                              visit_rows, write_plots)

    settings = key_values(setting_values, "setting", "NAME=VALUE (a setting of `ostinato.toml`, e.g. absolute_cooldown=2h)")
    config = SimulationConfig(
        workload=workload, sources=sources, capacity=capacity, days=days, warmup=warmup, step=step, seed=seed,
        share_last_update=share_last_update, new_sources_per_day=new_sources_per_day, failure_rate=failure_rate,
        dead_share=dead_share, max_gap=max_gap, listing_period=listing_period, full_listing_period=full_listing_period,
        visit_duration=visit_duration,
        change_counts=CHANGE_COUNTS[change_counts], db=db_url, settings=settings,
    ).validated()
    known = policies_under_test()
    for name in policy_names:
        if name not in known:
            raise ValidationError("policy", f"one of {', '.join(known)}", name)
    chosen = [known[name] for name in dict.fromkeys(policy_names)] if policy_names else list(known.values())
    err = console(stderr=True)

    def done(run: "PolicyRun") -> None:
        err.print(f"simulated {run.name} in {run.seconds:.1f}s", highlight=False)

    runs = run_simulation(config, chosen, jobs=jobs, done=done)
    command = command_line(config, list(dict.fromkeys(policy_names)))
    report = report_dict(config, runs, command=command)
    if out_file:
        Path(out_file).parent.mkdir(parents=True, exist_ok=True)
        Path(out_file).write_text(json.dumps(report, indent=2, ensure_ascii=False, default=_json_default) + "\n",
                                  encoding="utf-8")
    if plots_dir:
        for path in write_plots(config, runs, plots_dir):
            err.print(f"wrote {path}", highlight=False)
    if as_json:
        echo_json(report)
        return
    out = console()
    for line in header_lines(config):
        out.print(line, highlight=False)
    print_table(quality_rows(runs), QUALITY_COLUMNS, title="Freshness and age")
    print_table(visit_rows(runs), VISIT_COLUMNS, title="Visits and tails")
    out.print(f"command: {command}", highlight=False, soft_wrap=True)
    sys.stdout.flush()
