"""The politeness per host table of the README and docs/reference/simulator.md, from the simulator's JSON
reports (bench/results/sim-2026-11-25-polite-*-{off,on}.json): per workload, each policy's freshness
and mean age with politeness off and on, each with its share of the hindsight bound, and where the
window's visits went (the largest host's share of the sources and of the visits, the visits against
the capacity).

    python bench/sim/politeness_table.py [Path(__file__).resolve().parents[1] / "results"_DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

WORKLOADS = [("debian-4", "Debian changelogs, 4 visits/day"), ("debian-2", "Debian changelogs, 2 visits/day"),
             ("git_bursty", "git_bursty"),
             ("git_lognormal", "git_lognormal")]


def _load(results: Path, workload: str, mode: str) -> dict:
    return json.loads((results / f"sim-2026-11-25-polite-{workload}-{mode}.json").read_text(encoding="utf-8"))


def _cells(run: dict | None, bound: dict) -> list[str]:
    if run is None:
        return ["", ""]
    fresh, age = run["freshness"], run["mean_age_days"]
    share_f = fresh / bound["freshness"] if bound["freshness"] else None
    share_a = bound["mean_age_days"] / age if age else None
    return [f"{fresh:.2%}" + (f" ({share_f:.1%})" if share_f is not None else ""),
            f"{age:.3g}" + (f" ({share_a:.1%})" if share_a is not None else "")]


def table(results: Path) -> str:
    lines = ["| workload | policy | off: fresh (of bound) | off: age, d (bound / age) | on: fresh (of bound) "
             "| on: age, d (bound / age) | on: largest host's share of visits (of sources) | on: visits / capacity |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for key, label in WORKLOADS:
        off, on = _load(results, key, "off"), _load(results, key, "on")
        bound = off["hindsight"]
        lines.append(f"| {label} | hindsight bound | {bound['freshness']:.2%} | {bound['mean_age_days']:.3g} "
                     f"| {bound['freshness']:.2%} | {bound['mean_age_days']:.3g} | | |")
        on_runs = {p["name"]: p for p in on["policies"]}
        for run in off["policies"]:
            polite = on_runs.get(run["name"])
            hosts = polite["notes"]["hosts"] if polite else None
            where = (f"{hosts['largest_host_share_of_visits']:.1%} ({hosts['largest_host_share_of_sources']:.1%})"
                     if hosts else "")
            used = f"{hosts['visits_in_window'] / hosts['capacity_in_window']:.1%}" if hosts else ""
            lines.append(f"| | {run['name']} | " + " | ".join(_cells(run, bound) + _cells(polite, bound))
                         + f" | {where} | {used} |")
    return "\n".join(lines)


def commands(results: Path) -> str:
    """The command of each run, from its report."""
    return "\n".join(f"{_load(results, key, mode)['command']}   # {key}, politeness {mode}"
                      for key, _ in WORKLOADS for mode in ("off", "on"))


if __name__ == "__main__":
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "results")
    print(table(folder))
    print()
    print(commands(folder))
