"""``ostinato simulate``: compare origin policies on a simulated world, or on a recorded history
(``--trace``), against uniform revisiting, the oracle and the hindsight bound (see ``ostinato.sim``);
``ostinato trace``: build a trace from this machine's Debian changelogs, and measure one.

The store policies run through the real store (a fresh in-memory SQLite database
per policy unless ``--db`` says otherwise: this command ignores ``ostinato --db``
and never touches the configured database), the real orchestrator and the real
feedback loop, with a simulated clock.

A trace file is read whole and checked before anything runs: bad lines fail it
with ``error: line N: field: expected …`` for each of the first 20 (exit status 2).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from .. import extras
from ..domain.durations import parse_iso_time
from ..domain.errors import ValidationError
from ..sim.workloads import WORKLOADS
from .app import cli, command_group
from .origins import read_json_lines
from .output import DurationType, NumberType, WholeNumberType, console, echo_json, key_values, print_table

CHANGE_COUNTS = {"auto": None, "yes": True, "no": False}


def _json_default(value: Any) -> Any:
    from datetime import timedelta

    return value.total_seconds() if isinstance(value, timedelta) else str(value)


def read_trace(path: str):
    """The trace in the file at ``path``, JSON lines or CSV (by its first character); every line checked
    (``BadLines`` for the first 20 bad ones, each located at its line)."""
    from ..sim.trace import build_trace, csv_decoder, parse_change, parse_changes

    try:
        stream = open(path, "rb")  # closed below
    except OSError as exc:
        raise ValidationError("trace", "a readable file of changes (JSON lines or CSV)", f"{path}: {exc.strerror}") from None
    with stream:
        head = stream.read(4096).lstrip()
        stream.seek(0)
        if not head or head.startswith(b"{"):
            changes = [change for line in read_json_lines(stream, parse_changes) for change in line]
        else:
            header = stream.readline()
            try:
                decode = csv_decoder(header)
            except ValidationError as exc:
                raise exc.at("line 1") from None
            changes = read_json_lines(stream, parse_change, decode=decode, first_line=2)
    return build_trace(changes, path)


def _world_options(trace: str | None, workload: str | None, sources: int | None, new_sources_per_day: float | None,
                   dead_share: float | None) -> dict[str, Any]:
    """The options that make the world: a trace's, or the workload's (with their defaults)."""
    if trace is None:
        return {"workload": workload or "git_lognormal", "sources": 10_000 if sources is None else sources,
                "new_sources_per_day": new_sources_per_day, "dead_share": 0.01 if dead_share is None else dead_share}
    for name, value in (("workload", workload), ("sources", sources), ("new_sources_per_day", new_sources_per_day),
                        ("dead_share", dead_share)):
        if value is not None:
            raise ValidationError(name, "no value with --trace (the trace says which origins there are, "
                                  "when they appear and when they go)", value)
    return {"trace": read_trace(trace)}


@cli.command("simulate")
@click.option("--workload", help=f"How sources change: {', '.join(WORKLOADS)} (default git_lognormal).")
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False),
              help="Replay this recorded history (JSON lines or CSV: origin, visit_type, changed_at; or JSON lines of origin, visit_type, changes) instead of a workload.")
@click.option("--trace-start", help="The trace's time at day 0, ISO 8601 with a zone (default: the run ends at its last change).")
@click.option("--trace-copies", type=WholeNumberType(1), default=1, show_default=True,
              help="Replay this many copies of each origin of the trace, each shifted by its own random time "
                   "below a year (from --seed) and cut at the trace's end.")
@click.option("--trace-deaths/--no-trace-deaths", default=True, show_default=True,
              help="A trace's origins die at their last recorded change (else they stay, quiet, to the end).")
@click.option("--sources", type=WholeNumberType(1), help="Sources at the start (N; default 10,000).")
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
@click.option("--dead-share", type=NumberType(),
              help="Share of initial sources that are gone (every visit: not found; default 0.01).")
@click.option("--max-gap", type=DurationType(), default="60d", show_default=True,
              help="The floor oracles visit every source at least this often.")
@click.option("--listing-period", type=DurationType(), default="1d", show_default=True, help="How often the listers run.")
@click.option("--full-listing-period", type=DurationType(), default="30d", show_default=True,
              help="How often the listers list every source again (re-enabling disabled ones).")
@click.option("--visit-duration", type=DurationType(), default="10m", show_default=True, help="Median visit duration.")
@click.option("--change-counts", type=click.Choice(list(CHANGE_COUNTS)), default="auto", show_default=True,
              help="Statuses carry the number of changes found (auto: as the workload's loader can).")
@click.option("--visit-information", type=click.Choice(["bits", "counts", "times"]),
              help="What a visit sees of the changes: bits (changed or not), counts, or times (the changes' times "
                   "and the newest change's, as a git fetch sees them). Default: counts where --change-counts says so.")
@click.option("--db", "db_url", default="sqlite:///:memory:", show_default=True,
              help="Store of the store policies: sqlite:///:memory:, sqlite:///PATH (one new file per policy) or "
                   "postgresql://… (one new schema per policy, dropped afterwards).")
@click.option("--setting", "setting_values", multiple=True, metavar="NAME=VALUE",
              help="A setting for the store policies, over the simulation's (repeatable).")
@click.option("--hosts", type=WholeNumberType(0), default=0, show_default=True,
              help="Spread the sources over this many hosts, a few holding most (Zipf; 0: the listers' two forges).")
@click.option("--host-skew", type=NumberType(), default=1.5, show_default=True,
              help="The Zipf exponent of --hosts: host k holds a share in 1/k^skew.")
@click.option("--max-per-host", type=WholeNumberType(1), help="Politeness: most visits in flight on one host.")
@click.option("--min-spacing-per-host", type=DurationType(allow_zero=True),
              help="Politeness: least time between two visit starts on one host.")
@click.option("--jobs", type=WholeNumberType(1), default=1, show_default=True, help="Policies simulated at once (processes).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Also write the JSON report to this file.")
@click.option("--plots", "plots_dir", type=click.Path(file_okay=False), help="Write freshness.png and age.png here.")
@click.option("--bound/--no-bound", default=True, show_default=True,
              help="Measure the hindsight bounds and the changes' burstiness.")
def simulate_command(workload, trace_file, trace_start, trace_deaths, trace_copies, sources, capacity, days, warmup, step, seed,
                     policy_names, share_last_update, new_sources_per_day, failure_rate, dead_share, max_gap,
                     listing_period, full_listing_period, visit_duration, change_counts, visit_information, db_url, setting_values, hosts,
                     host_skew, max_per_host, min_spacing_per_host, jobs, as_json, out_file, plots_dir, bound):
    """Simulate origin policies on a world of changing sources, or on a recorded history, and compare them.

    Store policies (the orchestrator's default mixes, oldest_scheduled_first, the ×2 / ÷2 feedback, and any newer
    store policy) run through the real store and orchestrator; uniform, the multiplicative rule
    and the oracles (free and with the --max-gap floor, for freshness and for age) are simulated
    directly. Reports freshness, age, change latency, staleness, wasted visits, never-visited
    sources and new sources' first-visit latency over the window after the warm-up, and each policy
    against the hindsight bound (with the change times known, C visits can keep fresh at most the C
    longest gaps between changes). With --max-per-host or --min-spacing-per-host, politeness per host
    (on a world of --hosts): store policies, uniform and multiplicative only.
    """
    extras.require("sim", "ostinato simulate")
    if plots_dir:
        extras.require("plots", "ostinato simulate --plots")
    from ..sim.engine import PolicyRun, SimulationConfig, run_simulation
    from ..sim.policies import TRACE_ONLY, policies_under_test
    from ..sim.report import (
        QUALITY_COLUMNS,
        VISIT_COLUMNS,
        command_line,
        header_lines,
        hindsight_lines,
        quality_rows,
        report_dict,
        visit_rows,
        write_plots,
    )

    if trace_file is None and (trace_start is not None or not trace_deaths or trace_copies != 1):
        name = "trace_start" if trace_start is not None else "trace_deaths" if not trace_deaths else "trace_copies"
        raise ValidationError(name, "a --trace to apply to", "")
    config = SimulationConfig(
        **_world_options(trace_file, workload, sources, new_sources_per_day, dead_share),
        trace_start=parse_iso_time(trace_start, "trace_start") if trace_start is not None else None,
        trace_deaths=trace_deaths, trace_copies=trace_copies, capacity=capacity, days=days, warmup=warmup, step=step, seed=seed,
        share_last_update=share_last_update, failure_rate=failure_rate, max_gap=max_gap, listing_period=listing_period,
        full_listing_period=full_listing_period, visit_duration=visit_duration,
        change_counts=CHANGE_COUNTS[change_counts], visit_information=visit_information, db=db_url, hosts=hosts, host_skew=host_skew,
        max_per_host=max_per_host, min_spacing_per_host=min_spacing_per_host, settings=key_values(setting_values, "setting", "NAME=VALUE (a setting of `ostinato.toml`, e.g. absolute_cooldown=2h)"),
    ).validated()
    known = policies_under_test()
    for name in policy_names:
        if name not in known:
            raise ValidationError("policy", f"one of {', '.join(known)}", name)
    chosen = [known[name] for name in dict.fromkeys(policy_names)] if policy_names else \
        [p for p in known.values() if config.trace is not None or p.name not in TRACE_ONLY]
    if config.polite:  # the oracles schedule by time, not by host: no politeness to apply to them
        timed = [p.name for p in chosen if getattr(p, "rule", None) == "oracle"]
        if timed and policy_names:
            raise ValidationError("policy", "with politeness per host, a store policy, uniform or multiplicative",
                                  timed[0])
        chosen = [p for p in chosen if p.name not in timed]
    err = console(stderr=True)

    def done(run: PolicyRun) -> None:
        err.print(f"simulated {run.name} in {run.seconds:.1f}s", highlight=False, markup=False)

    runs = run_simulation(config, chosen, jobs=jobs, done=done)
    hindsight = None
    if bound:
        from ..sim.hindsight import measure

        hindsight = measure(config)
    command = command_line(config, list(dict.fromkeys(policy_names)))
    report = report_dict(config, runs, command=command, hindsight=hindsight)
    if out_file:
        Path(out_file).parent.mkdir(parents=True, exist_ok=True)
        Path(out_file).write_text(json.dumps(report, indent=2, ensure_ascii=False, default=_json_default) + "\n",
                                  encoding="utf-8")
    if plots_dir:
        for path in write_plots(config, runs, plots_dir):
            err.print(f"wrote {path}", highlight=False, markup=False)
    if as_json:
        echo_json(report)
        return
    out = console()
    for line in header_lines(config) + (hindsight_lines(hindsight) if hindsight is not None else []):
        out.print(line, highlight=False, markup=False)
    print_table(quality_rows(runs, hindsight), QUALITY_COLUMNS, title="Freshness and age")
    print_table(visit_rows(runs), VISIT_COLUMNS, title="Visits and tails")
    out.print(f"command: {command}", highlight=False, soft_wrap=True, markup=False)
    sys.stdout.flush()


# -- ostinato trace ---------------------------------------------------------------
@command_group("trace", "Recorded change histories for `ostinato simulate --trace`: build one, measure one.")
def trace_group() -> None:
    pass


@trace_group.command("build")
@click.option("--debian-changelogs", "debian", is_flag=True, required=True,
              help="From the dated entries of the installed packages' Debian changelogs (the one source so far).")
@click.option("--doc-dir", type=click.Path(file_okay=False, exists=True), default="/usr/share/doc", show_default=True,
              help="Where the packages' documentation is (<doc-dir>/*/changelog.Debian.gz).")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), default="-", show_default=True,
              help="Write the trace (JSON lines) here; - for standard output.")
def trace_build(debian, doc_dir, out_file):
    """Build a trace from data on this machine: one origin per Debian source package (visit type deb),
    one change per dated changelog entry; undated and malformed entries are skipped and counted."""
    from ..sim.debian import debian_changes, distinct
    from ..sim.trace import trace_lines

    changes, counts = debian_changes(Path(doc_dir))
    if not changes:
        raise ValidationError("doc_dir", "a directory with dated */changelog.Debian.gz entries", doc_dir)
    changes = distinct(changes)
    if out_file == "-":
        click.echo("".join(trace_lines(changes)), nl=False)
    else:
        Path(out_file).parent.mkdir(parents=True, exist_ok=True)
        with open(out_file, "w", encoding="utf-8") as out:
            out.writelines(trace_lines(changes))
    found = counts.as_dict()
    console(stderr=True).print(
        f"{found['origins']:,} origins, {len(changes):,} changes from {found['files']:,} changelogs "
        f"({found['dated_entries']:,} dated entries; skipped: {found['undated_entries']:,} undated, "
        f"{found['bad_dates']:,} with a date that does not parse, {found['unreadable_files']:,} unreadable files)",
        highlight=False)


@trace_group.command("stats")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
def trace_stats(file, as_json):
    """How much a trace's changes differ from Poisson: the spread of each origin's gaps between changes,
    and how much more likely a change is soon after one (1 for Poisson)."""
    extras.require("sim", "ostinato trace stats")
    from ..sim import burstiness

    trace = read_trace(file)
    found = burstiness.measure(trace.source, trace.time / 86_400.0)
    data = {**trace.summary(), "burstiness": found.as_dict()}
    if as_json:
        echo_json(data)
        return
    rows = [{"measure": "origins", "value": f"{data['origins']:,}"},
            {"measure": "changes", "value": f"{data['changes']:,}"},
            {"measure": "from", "value": data["first_change"]}, {"measure": "to", "value": data["last_change"]},
            {"measure": "SHA-256 of its changes", "value": data["sha256"]},
            {"measure": f"gaps' spread (CV over each origin's mean; Poisson 1; {found.gap_cv_origins:,} origins)",
             "value": "–" if found.gap_cv is None else f"{found.gap_cv:.2f}"},
            {"measure": "a change within a day of a change, vs of a random moment (Poisson 1×)",
             "value": "–" if found.soon_after_1d is None else f"{found.soon_after_1d:.2f}×"},
            {"measure": "within a tenth of the origin's mean gap (Poisson 1×)",
             "value": "–" if found.soon_after_tenth is None else f"{found.soon_after_tenth:.2f}×"}]
    print_table(rows, [("measure", "measure"), ("value", "value")], title=f"Trace {file} (visit type {trace.visit_type})")
