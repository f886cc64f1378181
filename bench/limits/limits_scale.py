"""How bench/limits/limits.py's figures grow with the number of origins, and what they say about 100,000,000.

Reads two or more result files of ``bench/limits/limits.py`` (PostgreSQL part) and prints:

1. **the figures side by side**: each rate or time at each size, and the growth from the next-largest
   size that has it to the largest (rates: small over large; times: large over small, so above 1 is
   always worse),
   with the goal "within 1.5×" met or missed;
2. **bytes on disk per row**: the heap (with TOAST) and each index of every table that holds
   rows, divided by the rows the run wrote into it (origins for the origin tables, tasks for the
   task tables), and that size carried to ``--extrapolate`` rows from the largest run;
3. **time to list and to feed** ``--extrapolate`` origins at the largest run's rates.

``bench/limits/limits.py`` calls :func:`print_sizes` at the end of each run; this script compares runs::

    .venv/bin/python bench/limits/limits_scale.py bench/results/limits-…-1000000.json bench/results/limits-…-10000000.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

#: tables whose rows are origins (one per listed origin) or tasks; the rest are left out
ORIGIN_TABLES = ("listed_origin", "origin_visit_stats", "limit_listed_origin", "limit_visit_status")
TASK_TABLES = ("task", "task_run", "limit_task", "limit_task_run")
#: (key, title, unit): the figures compared across sizes (bench/limits/limits.py's FIGURES, without their goals)
RATES = ("listed_per_s", "listed_limit_per_s", "statuses_per_s", "statuses_limit_per_s", "tasks_created_per_s",
         "tasks_limit_per_s", "tasks_grabbed_per_s", "runs_limit_per_s")
GROWTH_GOAL = 1.5


def _out() -> Console:
    return Console(width=None if sys.stdout.isatty() else 200)


def rows_of(table: str, parameters: dict[str, Any], result: dict[str, Any]) -> int | None:
    """How many rows the run wrote into ``table``: N for the origin tables, M (or those grabbed) for the task ones."""
    if table in ORIGIN_TABLES:
        return parameters["origins"] if "listed_per_s" in result else None
    if table in TASK_TABLES and "tasks_created_per_s" in result:
        return parameters["tasks"]
    return None


def per_row_sizes(document: dict[str, Any]) -> dict[str, dict[str, float]]:
    """table -> {"heap": bytes per row, index name: bytes per row} for the tables the run filled."""
    result = document["results"]["postgresql"]
    sizes = result.get("sizes") or {}
    out: dict[str, dict[str, float]] = {}
    for table, entry in sizes.items():
        rows = rows_of(table, document["parameters"], result)
        if not rows:
            continue
        out[table] = {"heap": entry["heap_bytes"] / rows,
                      **{name: size / rows for name, size in entry["indexes"].items() if size > 8192 * 4}}
    return out


def print_sizes(document: dict[str, Any], extrapolate: int = 100_000_000) -> None:
    """The bytes per row of every filled table and index of one run, and the disk they would take at ``extrapolate``."""
    table = Table(title=f"bytes on disk per row at {document['parameters']['origins']:,} origins, "
                        f"and carried to {extrapolate:,} rows")
    for column in ("table", "relation", "bytes/row", f"GB at {extrapolate:,}"):
        table.add_column(column, justify="left" if column in ("table", "relation") else "right")
    for name, relations in per_row_sizes(document).items():
        for relation, size in relations.items():
            table.add_row(name, relation, f"{size:,.1f}", f"{size * extrapolate / 1e9:,.1f}")
        total = sum(relations.values())
        table.add_row(name, "[bold]total[/bold]", f"{total:,.1f}", f"{total * extrapolate / 1e9:,.1f}")
    _out().print(table)


def growth(key: str, small: float | None, large: float | None) -> float | None:
    """Above 1 is worse at the larger size: a rate's fall or a time's rise."""
    if not small or not large:
        return None
    return small / large if key.endswith("_per_s") else large / small


def figure_keys(documents: list[dict[str, Any]]) -> list[str]:
    keys: list[str] = []
    for document in documents:
        for key, value in document["results"]["postgresql"].items():
            if isinstance(value, (int, float)) and (key.endswith("_per_s") or key.endswith("_ms")) and key not in keys:
                keys.append(key)
    return keys


def print_figures(documents: list[dict[str, Any]]) -> None:
    table = Table(title="each figure by size (PostgreSQL), and its growth from the next-largest size that has it to the largest")
    table.add_column("figure")
    for document in documents:
        table.add_column(f"{document['parameters']['origins']:,}", justify="right")
    table.add_column("growth", justify="right")
    table.add_column(f"within {GROWTH_GOAL}×")
    results = [d["results"]["postgresql"] for d in documents]
    for key in figure_keys(documents):
        values = [r.get(key) for r in results]
        cells = ["" if v is None else f"{v:,.2f}" if key.endswith("_ms") else f"{v:,.0f}" for v in values]
        present = [v for v in values if v]
        ratio = growth(key, present[-2], present[-1]) if len(present) >= 2 else None
        verdict = "" if ratio is None or key in RATES[1::2] else ("met" if ratio <= GROWTH_GOAL else "missed")
        table.add_row(key, *cells, f"{ratio:.2f}" if ratio else "", verdict)
    _out().print(table)


def print_projection(document: dict[str, Any], target: int) -> None:
    """Hours to list and feed ``target`` origins at the run's rates (its own and its COPY limit's)."""
    result = document["results"]["postgresql"]
    table = Table(title=f"{target:,} origins at the rates of the {document['parameters']['origins']:,} run")
    for column in ("operation", "rate/s", "hours", "COPY limit/s", "hours at the limit"):
        table.add_column(column, justify="left" if column == "operation" else "right")
    for title, key, limit in (("record listed origins", "listed_per_s", "listed_limit_per_s"),
                              ("feed visit statuses", "statuses_per_s", "statuses_limit_per_s")):
        rate, bound = result.get(key), result.get(limit)
        if rate and bound:
            table.add_row(title, f"{rate:,.0f}", f"{target / rate / 3600:,.2f}", f"{bound:,.0f}",
                          f"{target / bound / 3600:,.2f}")
    _out().print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="bench/limits/limits.py JSON files (any order)")
    parser.add_argument("--extrapolate", type=int, default=100_000_000, help="the size to carry the figures to")
    args = parser.parse_args(argv)
    loaded = [(p, json.loads(p.read_text(encoding="utf-8"))) for p in args.results]
    missing = [str(p) for p, d in loaded if "postgresql" not in d.get("results", {})]
    if missing:
        parser.error(f"results: expected bench/limits/limits.py files with a postgresql part, got none in {missing}")
    documents = sorted((d for _, d in loaded), key=lambda d: d["parameters"]["origins"])
    print_figures(documents)
    for document in documents:
        print_sizes(document, args.extrapolate)
    print_projection(documents[-1], args.extrapolate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
