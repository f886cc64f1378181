"""A simulation's report: each policy's figures set against uniform revisiting and the oracle,
as a dict (for JSON), as rows for the command line's tables, and as PNG plots.

Relative figures:

- ``freshness_of_oracle`` = F / F(oracle_freshness_floor), ``age_of_oracle`` = A / A(oracle_age_floor)
  (the oracle with the same maximum-gap floor as the learned policy);
- ``freshness_gain`` = (F − F_uniform) / (F_oracle − F_uniform), and ``age_gain`` the same for
  age (1: as good as the oracle, 0: no better than uniform, negative: worse), against the
  floor oracle and, under ``…_free``, the free one;
- against the hindsight bounds (``hindsight``), when measured, each a share that is at most 1 (1: as
  good as knowing the change times): ``freshness_of_bound`` = F / F_bound and ``age_of_bound`` =
  A_bound / A (the bound's mean age over the policy's; 0 when the bound is 0, as it is whenever
  the window's visits could follow every change).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..domain.durations import format_duration
from .burstiness import MIN_GAPS
from .engine import PolicyRun, SimulationConfig, simulation_settings
from .workloads import WORKLOADS

if TYPE_CHECKING:
    from .hindsight import Hindsight

UNIFORM = "uniform"
ORACLES = {"freshness": ("oracle_freshness_floor", "oracle_freshness"), "age": ("oracle_age_floor", "oracle_age")}
#: the settings the simulation sets for store policies (shown with the report)
SHOWN_SETTINGS = ("absolute_cooldown", "minimum_interval", "orchestrator_threshold", "in_flight_timeout",
                  "failed_cooldown", "not_found_cooldown", "adjust_factor", "failure_delay", "max_failures",
                  "revisit_steer_every")


#: what the header says visits see, by level of information
_SEEN = {"bits": "whether the source changed", "counts": "how many changes", "times": "the changes' times"}


def command_line(config: SimulationConfig, policies: Sequence[str] | None = None) -> str:
    """The ``ostinato simulate`` command that runs this configuration again."""
    if config.trace is not None:
        assert config.trace_start is not None  # validated(): a trace's start is resolved
        world = ([f"--trace {config.trace.label}", f"--trace-start {config.trace_start.isoformat()}"]
                 + ([] if config.trace_copies == 1 else [f"--trace-copies {config.trace_copies}"])
                 + ([] if config.trace_deaths else ["--no-trace-deaths"]))
    else:
        world = [f"--workload {config.workload}", f"--sources {config.sources}"]
    parts = ["ostinato simulate", *world,
             *([f"--capacity {config.capacity:.12g}"] if config.capacity is not None else []),
             f"--days {config.days:g}", f"--warmup {config.warmup:g}",
             f"--step {format_duration(config.step)}", f"--seed {config.seed}",
             f"--share-last-update {config.share_last_update:g}",
             *([f"--new-sources-per-day {config.new_sources_per_day:.12g}"]
               if config.new_sources_per_day is not None and config.trace is None else []),
             f"--failure-rate {config.failure_rate:g}",
             *([f"--dead-share {config.dead_share:g}"] if config.trace is None else []),
             f"--max-gap {format_duration(config.max_gap)}"]
    if config.listing_period != timedelta(days=1):
        parts.append(f"--listing-period {format_duration(config.listing_period)}")
    if config.full_listing_period != timedelta(days=30):
        parts.append(f"--full-listing-period {format_duration(config.full_listing_period)}")
    if config.visit_duration != timedelta(minutes=10):
        parts.append(f"--visit-duration {format_duration(config.visit_duration)}")
    if config.change_counts is not None:
        parts.append(f"--change-counts {'yes' if config.change_counts else 'no'}")
    if config.visit_information is not None:
        parts.append(f"--visit-information {config.visit_information}")
    if config.hosts:
        parts.append(f"--hosts {config.hosts} --host-skew {config.host_skew:g}")
    if config.max_per_host is not None:
        parts.append(f"--max-per-host {config.max_per_host}")
    if config.min_spacing_per_host is not None:
        parts.append(f"--min-spacing-per-host {format_duration(config.min_spacing_per_host)}")
    if config.db != "sqlite:///:memory:":
        parts.append(f"--db {config.db}")
    parts.extend(f"--setting {key}={_setting_text(value)}" for key, value in config.settings.items())
    parts.extend(f"--policy {name}" for name in policies or ())
    return " ".join(parts)


def _setting_text(value: Any) -> str:
    return format_duration(value) if isinstance(value, timedelta) else str(value)


def _ratio(value: float | None, reference: float | None) -> float | None:
    if value is None or reference is None or reference == 0:
        return None
    return value / reference


def _gain(value: float, uniform: float | None, oracle: float | None) -> float | None:
    if uniform is None or oracle is None or oracle == uniform:
        return None
    return (value - uniform) / (oracle - uniform)


def relative(runs: Sequence[PolicyRun], hindsight: Hindsight | None = None) -> dict[str, dict[str, float | None]]:
    """Each run's figures relative to uniform, the oracles (those that ran) and the hindsight bounds."""
    by_name = {run.name: run.metrics for run in runs}
    uniform = by_name.get(UNIFORM)
    result = {}
    for run in runs:
        m = run.metrics
        entry: dict[str, float | None] = {}
        for measure, attr in (("freshness", "freshness"), ("age", "mean_age")):
            floor_oracle, free_oracle = (by_name.get(name) for name in ORACLES[measure])
            value = getattr(m, attr)
            u = getattr(uniform, attr) if uniform else None
            entry[f"{measure}_of_oracle"] = _ratio(value, getattr(floor_oracle, attr) if floor_oracle else None)
            entry[f"{measure}_gain"] = _gain(value, u, getattr(floor_oracle, attr) if floor_oracle else None)
            entry[f"{measure}_gain_free"] = _gain(value, u, getattr(free_oracle, attr) if free_oracle else None)
        if hindsight is not None:
            entry["freshness_of_bound"] = _ratio(m.freshness, hindsight.freshness)
            entry["age_of_bound"] = _ratio(hindsight.mean_age, m.mean_age)
        result[run.name] = entry
    return result


def report_dict(config: SimulationConfig, runs: Sequence[PolicyRun], *, command: str,
                hindsight: Hindsight | None = None) -> dict[str, Any]:
    settings = simulation_settings(config)
    rel = relative(runs, hindsight)
    every_day = max(1, int(round(1 / config.step_days)))
    config_dict = {f.name: getattr(config, f.name) for f in fields(config)}
    config_dict.update(capacity=config.visits_per_day, new_sources_per_day=config.new_per_day,
                       change_counts=config.counts_changes, visit_information=config.information.value,
                       settings=dict(config.settings),
                       trace=config.trace.label if config.trace is not None else None)
    for key, value in config_dict.items():
        config_dict[key] = _json_value(value)
    return {
        "command": command,
        "config": config_dict,
        "workload": world_description(config),
        **({"trace": config.trace.summary()} if config.trace is not None else {}),
        **({"hindsight": hindsight.as_dict()} if hindsight is not None else {}),
        "store_settings": {name: _json_value(getattr(settings, name)) for name in SHOWN_SETTINGS if hasattr(settings, name)},
        "measures": ("freshness and age are exact integrals over the measurement window of live sources "
                     "(source-days); times in days; freshness_over_time is sampled once a day"),
        "policies": [{
            "name": run.name,
            "kind": run.kind,
            "description": run.description,
            "seconds": run.seconds,
            **run.metrics.as_dict(),
            "relative": rel[run.name],
            "theory": run.theory,
            "notes": run.notes,
            "freshness_over_time": {"days": run.sample_times[every_day - 1::every_day].round(6).tolist(),
                                    "freshness": run.sample_freshness[every_day - 1::every_day].round(6).tolist()},
        } for run in runs],
    }


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value.total_seconds() if isinstance(value, timedelta) else value


def world_description(config: SimulationConfig) -> str:
    """The workload's description, or the trace's."""
    if config.trace is None:
        return WORKLOADS[config.workload].description
    return (f"the trace {config.trace.label} ({config.sources:,} origins of visit type {config.trace.visit_type} in "
            f"the run, from {config.trace_start:%Y-%m-%d %H:%M} UTC; births at the first recorded change, "
            + ("deaths at the last)" if config.trace_deaths else "no deaths)"))


# -- text ----------------------------------------------------------------------
def days_text(value: float | None) -> str:
    """A duration in days as people read it: ``42m``, ``5.3h``, ``2.10d``."""
    if value is None:
        return "–"
    if value < 1 / 24:
        return f"{value * 1440:.0f}m"
    if value < 1:
        return f"{value * 24:.1f}h"
    return f"{value:.2f}d"


def _pct(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value * 100:.{digits}f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _times(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def quality_rows(runs: Sequence[PolicyRun], hindsight: Hindsight | None = None) -> list[dict[str, str]]:
    rel = relative(runs, hindsight)
    return [{
        "policy": run.name,
        "freshness": _pct(run.metrics.freshness, 2),
        "of_oracle_f": _pct(rel[run.name]["freshness_of_oracle"]),
        "of_bound_f": _pct(rel[run.name].get("freshness_of_bound")),
        "gain_f": _num(rel[run.name]["freshness_gain"]),
        "age": days_text(run.metrics.mean_age),
        "of_oracle_a": _times(rel[run.name]["age_of_oracle"]),
        "of_bound_a": _pct(rel[run.name].get("age_of_bound")),
        "gain_a": _num(rel[run.name]["age_gain"]),
        "latency": days_text(run.metrics.change_latency),
        "seconds": f"{run.seconds:.1f}",
    } for run in runs]


QUALITY_COLUMNS = [("policy", "policy"), ("freshness", "freshness"), ("of_oracle_f", "of oracle F"),
                   ("of_bound_f", "of bound F"), ("gain_f", "gain F"), ("age", "mean age"),
                   ("of_oracle_a", "of oracle A"), ("of_bound_a", "bound / A"), ("gain_a", "gain A"),
                   ("latency", "change latency"), ("seconds", "run s")]


def visit_rows(runs: Sequence[PolicyRun]) -> list[dict[str, str]]:
    rows = []
    for run in runs:
        m = run.metrics
        first = m.first_visit_latency
        rows.append({
            "policy": run.name,
            "visits": f"{m.visits_per_day:,.0f}",
            "wasted": _pct(m.wasted / m.visits if m.visits else None),
            "failed": f"{m.failed:,}",
            "p99": days_text(m.staleness_p99),
            "max": days_text(m.staleness_max),
            "never": f"{m.never_visited:,}",
            "first": f"{days_text(first['p50'])} / {days_text(first['p90'])}" if m.new_sources else "–",
            "new_unvisited": f"{m.new_sources_not_visited:,} of {m.new_sources:,}" if m.new_sources else "–",
        })
    return rows


VISIT_COLUMNS = [("policy", "policy"), ("visits", "visits/day"), ("wasted", "wasted"), ("failed", "failed"),
                 ("p99", "staleness p99"), ("max", "staleness max"), ("never", "never visited"),
                 ("first", "new: first visit p50 / p90"), ("new_unvisited", "new, not visited")]


def header_lines(config: SimulationConfig) -> list[str]:
    settings = simulation_settings(config)
    shown = ", ".join(f"{name}={_setting_text(getattr(settings, name))}" for name in SHOWN_SETTINGS
                      if hasattr(settings, name))
    world = (f"{config.new_per_day:g} new sources/day, dead {config.dead_share:.1%}" if config.trace is None
             else "births and deaths from the trace")
    return [
        f"workload {config.workload} ({WORKLOADS[config.workload].description})" if config.trace is None
        else f"trace: {world_description(config)}",
        f"{config.sources:,} sources, capacity {config.visits_per_day:,.1f} visits/day, step {format_duration(config.step)}, "
        f"warm-up {config.warmup:g}d, window {config.days:g}d, seed {config.seed}",
        f"last_update from {config.share_last_update:.0%} of sources' forges, {world}, "
        f"failures {config.failure_rate:.1%}, oracle floor 1 visit/{format_duration(config.max_gap)}, "
        f"visits see {_SEEN[config.information.value]}, listings every "
        f"{format_duration(config.listing_period)} (all sources every {format_duration(config.full_listing_period)}), "
        f"store {config.db}",
        f"store policies' settings: {shown}",
        f"hosts: {config.hosts} (Zipf, skew {config.host_skew:g})" if config.hosts else "hosts: the listers' two forges",
        "politeness per host: " + (
            f"at most {config.max_per_host or 'any number of'} visits in flight, starts at least "
            f"{format_duration(config.min_spacing_per_host or timedelta(0))} apart" if config.polite else "off"),
        "freshness and age: exact integrals over the window; of oracle: vs the floor oracle; of bound F: "
        "F / the hindsight bound's; bound / A: its mean age over the policy's; gain: (policy − uniform) / "
        "(oracle − uniform)",
    ]


def hindsight_lines(hindsight: Hindsight) -> list[str]:
    """The bounds and the burstiness, as the command line prints them."""
    b = hindsight.burstiness
    age = ("0 (the window's visits could follow every change)" if hindsight.mean_age == 0
           else "under a minute (they could follow nearly every change)" if hindsight.mean_age < 1 / 1440
           else days_text(hindsight.mean_age))
    cv = "–" if b.gap_cv is None else f"{b.gap_cv:.2f}"
    return [
        f"hindsight bound, with the change times known and {hindsight.visits:,} visits in the window "
        f"({hindsight.gaps:,} gaps between changes): freshness at most {_pct(hindsight.freshness, 2)}, "
        f"mean age at least {age}",
        f"burstiness of the run's {b.changes:,} changes ({b.origins:,} origins; 1 for Poisson): gaps' spread "
        f"(CV over each origin's mean, {b.gap_cv_origins:,} origins with {MIN_GAPS}+ gaps) {cv}; a change is followed "
        f"by another within a day {_times(b.soon_after_1d)} as often as a random moment is, within a tenth of "
        f"the origin's mean gap {_times(b.soon_after_tenth)}",
    ]


# -- plots ---------------------------------------------------------------------
def write_plots(config: SimulationConfig, runs: Sequence[PolicyRun], directory: str | Path) -> list[Path]:
    """``freshness.png`` (freshness over time, per policy) and ``age.png`` (the distribution of
    per-source mean age in the window, per policy) in ``directory``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    name = config.workload if config.trace is None else Path(config.trace.label).name
    title = f"{name}, {config.sources:,} sources, {config.visits_per_day:,.0f} visits/day, seed {config.seed}"
    styles = {"store": "-", "baseline": "--"}

    fig, ax = plt.subplots(figsize=(10, 5.5))
    for run in runs:
        ax.plot(run.sample_times, run.sample_freshness, styles.get(run.kind, "-"), linewidth=1.1, label=run.name)
    ax.axvline(config.warmup, color="grey", linewidth=0.8)
    ax.axvspan(0, config.warmup, color="grey", alpha=0.07)
    ax.text(config.warmup, 0.96, " measurement window →", color="grey", transform=ax.get_xaxis_transform(), va="top")
    ax.text(0, 0.96, " warm-up", color="grey", transform=ax.get_xaxis_transform(), va="top")
    ax.set_xlabel("days")
    ax.set_ylabel("share of sources whose archived copy is current")
    ax.set_ylim(0, 1)
    ax.set_title(f"Freshness over time — {title}")
    ax.legend(fontsize=8, ncol=2, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    freshness_png = out / "freshness.png"
    fig.savefig(freshness_png, dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(10, 5.5))
    floor = 1 / 1440  # one minute: sources fresh all along sit at the left edge
    for run in runs:
        ages = np.sort(np.maximum(run.metrics.age_by_source, floor))
        if ages.size:
            ax.plot(ages, np.arange(1, ages.size + 1) / ages.size, styles.get(run.kind, "-"), linewidth=1.1,
                    label=f"{run.name} (mean {days_text(run.metrics.mean_age)})")
    ax.set_xscale("log")
    ax.set_xlabel("mean age of a source over the window, days (≤ 1 minute shown at 1 minute)")
    ax.set_ylabel("share of sources (cumulative)")
    ax.set_title(f"Age distribution — {title}")
    ax.legend(fontsize=8, ncol=2, loc="lower right")
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    age_png = out / "age.png"
    fig.savefig(age_png, dpi=110)
    plt.close(fig)
    return [freshness_png, age_png]


__all__ = ["command_line", "header_lines", "hindsight_lines", "quality_rows", "relative", "report_dict", "visit_rows",
           "world_description", "write_plots"]
