"""The schedule-fleet simulations run and reported: every (fleet, seed, policy) run (in processes on
request), each measure's mean and standard error across seeds per fleet and policy, its ratio to the
greedy pick's, the fleet's fluid bound beside them (``fleet_bound``), as a dict (for JSON), as rows for
the terminal's table, and as PNG plots (docs/reference/fleet-simulator.md)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from .fleet_bound import FluidBound, fluid_bound
from .fleet_engine import POLICIES, FleetRun, simulate
from .fleets import Fleet

#: the measures summarized across seeds: key, how the table shows it, lower is better
MEASURES: tuple[tuple[str, str], ...] = (
    ("error_share", "ERROR"), ("warning_share", "WARNING"), ("worst_error_share", "worst ERROR"),
    ("misses_per_day", "misses/day"), ("late_p50_min", "late p50"), ("late_p90_min", "late p90"),
    ("late_p99_min", "late p99"), ("recovery_min", "recovery"), ("slot_use", "slot use"),
)
#: every measure a summary row holds: the table's, and two more the JSON keeps
ROW_KEYS = (*(k for k, _ in MEASURES), "worst_warning_share", "late_share")


def _one(task: tuple[Fleet, int, str, dict[str, Any]]) -> FleetRun:
    fleet, seed, policy, options = task
    return simulate(fleet, seed, policy, **options)


def run_all(fleets: Sequence[Fleet], seeds: Sequence[int], policies: Sequence[str], *, jobs: int = 1,
            done: Callable[[FleetRun], None] | None = None, **options: Any) -> list[FleetRun]:
    """Every (fleet, seed, policy), in that order; ``jobs`` > 1 runs that many at once (processes)."""
    tasks = [(fleet, seed, policy, options) for fleet in fleets for seed in seeds for policy in policies]
    runs: list[FleetRun] = []
    if jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            runs.append(_one(task))
            if done is not None:
                done(runs[-1])
        return runs
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
        for run in pool.map(_one, tasks):
            runs.append(run)
            if done is not None:
                done(run)
    return runs


def run_measures(run: FleetRun, fleet: Fleet) -> dict[str, float | None]:
    """One run's summarized measures (lateness in minutes, the recovery's mean over outages)."""
    window_days = (fleet.days * 86_400 - fleet.warmup.total_seconds()) / 86_400
    late = np.array(run.lateness) / 60 if run.lateness else None
    recoveries = [r for r in run.recovery if r is not None]
    return {
        "error_share": run.error_share, "warning_share": run.warning_share,
        "worst_error_share": run.worst_error_share, "worst_warning_share": run.worst_warning_share,
        "misses_per_day": run.misses / window_days,
        "late_p50_min": None if late is None else float(np.percentile(late, 50)),
        "late_p90_min": None if late is None else float(np.percentile(late, 90)),
        "late_p99_min": None if late is None else float(np.percentile(late, 99)),
        "late_share": None if late is None else float(np.mean(late > 0)),
        "recovery_min": (sum(recoveries) / len(recoveries) / 60 if recoveries and len(recoveries) == len(run.recovery)
                         else None),
        "slot_use": run.slot_use,
    }


def mean_se(values: Sequence[float | None]) -> dict[str, float | int | None]:
    """Mean and standard error of the values that are not None (``n`` of them)."""
    found = [v for v in values if v is not None]
    if not found:
        return {"mean": None, "se": None, "n": 0}
    mean = sum(found) / len(found)
    se = math.sqrt(sum((v - mean) ** 2 for v in found) / (len(found) - 1) / len(found)) if len(found) > 1 else None
    return {"mean": mean, "se": se, "n": len(found)}


#: the rows of a fleet's fluid bound: without a cap, and with the worst schedule held to greedy's worst
BOUND, BOUND_CAPPED = "bound", "bound, worst ≤ greedy"


def summarize(fleets: Sequence[Fleet], runs: Sequence[FleetRun]) -> list[dict[str, Any]]:
    """Per fleet and policy: each measure's mean ± standard error across seeds, and the mean's ratio to
    greedy's (when greedy ran); then per fleet its fluid bound, and the bound with no schedule worse than
    greedy's worst (when greedy ran): rows whose only measures are the two ERROR shares."""
    by_fleet = {f.name: f for f in fleets}
    groups: dict[tuple[str, str], list[dict[str, float | None]]] = {}
    for run in runs:
        groups.setdefault((run.fleet, run.policy), []).append(run_measures(run, by_fleet[run.fleet]))
    rows = []
    for (fleet, policy), measured in groups.items():
        row: dict[str, Any] = {"fleet": fleet, "policy": policy, "seeds": len(measured)}
        for key in ROW_KEYS:
            row[key] = mean_se([m[key] for m in measured])
        rows.append(row)
    greedy = {r["fleet"]: r for r in rows if r["policy"] == "greedy"}
    measured_rows, rows = rows, []
    for shown in fleets:  # each fleet's policies, then its bounds
        mine = [r for r in measured_rows if r["fleet"] == shown.name]
        if not mine:
            continue
        rows.extend([*mine, _bound_row(shown.name, BOUND, fluid_bound(shown))])
        worst = greedy[shown.name]["worst_error_share"]["mean"] if shown.name in greedy else None
        if worst is not None:
            rows.append(_bound_row(shown.name, BOUND_CAPPED, fluid_bound(shown, cap=worst)))
    for row in rows:
        base = greedy.get(row["fleet"])
        row["vs_greedy"] = {key: _ratio(row[key]["mean"], base[key]["mean"]) if base else None
                            for key in ("error_share", "warning_share", "worst_error_share", "misses_per_day")}
    return rows


def _bound_row(fleet: str, name: str, bound: FluidBound | None) -> dict[str, Any]:
    row: dict[str, Any] = {"fleet": fleet, "policy": name, "seeds": 0}
    for key in ROW_KEYS:
        row[key] = {"mean": None, "se": None, "n": 0}
    if bound is not None:
        row["error_share"] = {"mean": bound.error_share, "se": None, "n": 0}
        row["worst_error_share"] = {"mean": bound.worst_error_share, "se": None, "n": 0}
    return row


def _ratio(value: float | None, base: float | None) -> float | None:
    if value is None or base is None or base == 0:
        return None
    return value / base


def fleet_dict(fleet: Fleet) -> dict[str, Any]:
    return {"name": fleet.name, "description": fleet.description, "nodes": dict(fleet.nodes), "slots": fleet.slots,
            "schedules": len(fleet.schedules), "load": round(fleet.load, 4), "days": fleet.days,
            "demand": round(bound.demand, 4) if (bound := fluid_bound(fleet)) is not None else None,
            "warmup_hours": fleet.warmup.total_seconds() / 3600,
            "outages": [{"node": o.node, "at_hours": o.at.total_seconds() / 3600,
                         "lasting_hours": o.lasting.total_seconds() / 3600} for o in fleet.outages]}


def report_dict(fleets: Sequence[Fleet], runs: Sequence[FleetRun], *, command: str, seeds: Sequence[int],
                policies: Sequence[str], settings: dict[str, Any]) -> dict[str, Any]:
    by_fleet = {f.name: f for f in fleets}
    return {
        "command": command,
        "settings": settings,
        "measures": ("shares of schedule-time over the window after the warm-up (the real condition rule, "
                     "integrated exactly); lateness: a good run's end − the deadline it worked for, minutes "
                     "(negative: early); recovery: minutes from a lost node's return until the ERROR count is "
                     "back to its level before the loss (mean over outages; None when not within the window); "
                     "slot use: busy slot-time over live slot-time; mean ± standard error across seeds; the fluid "
                     "bound: the least ERROR share any rule can reach with slot-time shared as a divisible quantity "
                     "(ostinato.sim.fleet_bound), and with no schedule worse than greedy's worst; demand: the "
                     "slot-time every schedule needs to stay out of ERROR over the slot-time there is"),
        "fleets": [fleet_dict(f) for f in fleets],
        "policies": {name: POLICIES[name].description for name in policies},
        "seeds": list(seeds),
        "summary": summarize(fleets, runs),
        "runs": [{**{k: v for k, v in asdict(run).items() if k not in ("lateness", "error_times", "error_counts")},
                  **run_measures(run, by_fleet[run.fleet]),
                  "error_count": {"hours": [round(t, 4) for t in run.error_times], "count": run.error_counts}}
                 for run in runs],
    }


# -- the terminal -----------------------------------------------------------------------
def _share(cell: dict[str, Any]) -> str:
    if cell["mean"] is None:
        return "–"
    se = f" ± {cell['se'] * 100:.1f}" if cell["se"] is not None else ""
    return f"{cell['mean'] * 100:.1f}{se}%"


def _minutes(cell: dict[str, Any]) -> str:
    if cell["mean"] is None:
        return "–"
    value = cell["mean"]
    text = f"{value:+.0f}m" if abs(value) < 120 else f"{value / 60:+.1f}h"
    return text


def _number(cell: dict[str, Any]) -> str:
    if cell["mean"] is None:
        return "–"
    se = f" ± {cell['se']:.1f}" if cell["se"] is not None else ""
    return f"{cell['mean']:.1f}{se}"


def _times(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def table_rows(summary: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    rows = []
    for row in summary:
        recovery = row["recovery_min"]
        rows.append({
            "fleet": row["fleet"], "policy": row["policy"], "seeds": str(row["seeds"] or "–"),
            "error": _share(row["error_share"]), "vs": _times(row["vs_greedy"]["error_share"]),
            "warning": _share(row["warning_share"]), "worst": _share(row["worst_error_share"]),
            "misses": _number(row["misses_per_day"]),
            "late": " / ".join(_minutes(row[k]) for k in ("late_p50_min", "late_p90_min", "late_p99_min")),
            "recovery": "–" if recovery["n"] == 0 else _minutes(recovery).lstrip("+"),
            "slots": _share(row["slot_use"]),
        })
    return rows


TABLE_COLUMNS = [("fleet", "fleet"), ("policy", "policy"), ("seeds", "seeds"), ("error", "ERROR"),
                 ("vs", "vs greedy"), ("warning", "WARNING"), ("worst", "worst ERROR"), ("misses", "misses/day"),
                 ("late", "late p50 / p90 / p99"), ("recovery", "recovery"), ("slots", "slot use")]


# -- plots ----------------------------------------------------------------------------------
def write_plots(fleets: Sequence[Fleet], runs: Sequence[FleetRun], summary: Sequence[dict[str, Any]],
                directory: str | Path) -> list[Path]:
    """Per fleet, ``errors-<fleet>.png``: the ERROR count over time per policy (the first seed); and
    ``error-share.png``: the share of schedule-time in ERROR per fleet and policy (mean ± standard error)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for fleet in fleets:
        mine = [r for r in runs if r.fleet == fleet.name]
        if not mine:
            continue
        seed = mine[0].seed
        fig, ax = plt.subplots(figsize=(10, 5.5))
        for run in (r for r in mine if r.seed == seed):
            if run.error_times:
                ax.step(run.error_times + [fleet.days * 24], run.error_counts + run.error_counts[-1:], where="post",
                        linewidth=1.1, label=run.policy)
        warm = fleet.warmup.total_seconds() / 3600
        ax.axvspan(0, warm, color="grey", alpha=0.07)
        ax.text(0, 0.96, " warm-up", color="grey", transform=ax.get_xaxis_transform(), va="top")
        for outage in fleet.outages:
            lost = outage.at.total_seconds() / 3600
            ax.axvspan(lost, lost + outage.lasting.total_seconds() / 3600, color="red", alpha=0.1)
            ax.text(lost, 0.90, f" {outage.node} lost", color="red", transform=ax.get_xaxis_transform(), va="top")
        ax.set_xlabel("hours")
        ax.set_ylabel("schedules in ERROR")
        ax.set_title(f"Schedules in ERROR — {fleet.name}, {len(fleet.schedules)} schedules, {fleet.slots} slots, "
                     f"load {fleet.load:.2f}, seed {seed}")
        ax.legend(fontsize=8, ncol=2, loc="upper right")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        path = out / f"errors-{fleet.name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    names = [f.name for f in fleets]
    policies = list(dict.fromkeys(r["policy"] for r in summary))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(names) + 2), 5.5))
    width = 0.8 / max(len(policies), 1)
    cells = {(r["fleet"], r["policy"]): r["error_share"] for r in summary}
    for i, policy in enumerate(policies):
        means = [(cells.get((n, policy)) or {}).get("mean") or 0.0 for n in names]
        errs = [(cells.get((n, policy)) or {}).get("se") or 0.0 for n in names]
        ax.bar(np.arange(len(names)) + (i - (len(policies) - 1) / 2) * width, [m * 100 for m in means], width,
               yerr=[e * 100 for e in errs], capsize=2, label=policy)
    ax.set_xticks(np.arange(len(names)), names)
    ax.set_ylabel("share of schedule-time in ERROR, %")
    ax.set_title("Schedule-time in ERROR per fleet and pick rule (mean ± standard error across seeds)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    path = out / "error-share.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written


__all__ = ["BOUND", "BOUND_CAPPED", "MEASURES", "TABLE_COLUMNS", "fleet_dict", "mean_se", "report_dict", "run_all", "run_measures",
           "summarize", "table_rows", "write_plots"]
