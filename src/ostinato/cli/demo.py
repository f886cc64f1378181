"""``ostinato demo``: a simulated forge kept fresh by the real scheduler, live in the terminal."""

from __future__ import annotations

import logging
from pathlib import Path

import click
from rich.console import Console
from rich.live import Live
from rich.table import Table

from .. import extras
from .app import AppContext, cli, pass_app


def _title(figures, policy: str, sources: int) -> str:
    """The table's title: the forge grows (new sources appear, a few die), so the title says how many
    there were at the start and how many live now, the number the table shows."""
    now = f", {figures.sources:,} live on day {figures.day:.0f}" if figures is not None else ""
    return f"ostinato demo — {sources:,} sources at the start{now}, policy {policy}"


def _table(figures, policy: str, sources: int) -> Table:
    table = Table(title=_title(figures, policy, sources), show_header=True)
    for name in ("simulated day", "live sources", "fresh", "mean age", "visits", "eventful", "never visited"):
        table.add_column(name, justify="right")
    if figures is not None:
        table.add_row(f"{figures.day:.1f}", f"{figures.sources:,}", f"{figures.freshness:.1%}",
                      f"{figures.mean_age_days:.2f} d", f"{figures.visits:,}",
                      f"{figures.eventful / figures.visits:.0%}" if figures.visits else "–", f"{figures.never_visited:,}")
    return table


@cli.command("demo")
@click.option("--sources", type=click.IntRange(min=100, max=200_000), default=3000, show_default=True,
              help="Sources on the simulated forge at the start (about as many more appear over a simulated year).")
@click.option("--seconds", type=click.FloatRange(min=5), default=60.0, show_default=True, help="How long to run (real time).")
@click.option("--days-per-second", type=click.FloatRange(min=0.01, max=30), default=3.0, show_default=True,
              help="Simulated days per real second.")
@click.option("--policy", type=click.Choice(["optimal", "seed"]), default="optimal", show_default=True,
              help="change_rate_optimal, or the orchestrator's default mix of policies.")
@click.option("--workload", type=click.Choice(["git_lognormal", "web_cho2000", "git_mixture"]), default="git_lognormal",
              show_default=True, help="How the forge's sources change.")
@click.option("--workers", type=click.IntRange(min=1, max=32), default=4, show_default=True, help="Embedded workers.")
@click.option("--seed", type=int, default=1, show_default=True, help="The forge's random seed.")
@click.option("--demo-db", type=click.Path(dir_okay=False), default=".ostinato/demo.db", show_default=True,
              help="The demo's own SQLite file (replaced at each run).")
@pass_app
def demo_command(app: AppContext, sources, seconds, days_per_second, policy, workload, workers, seed, demo_db):
    """Watch the real scheduler keep a simulated forge fresh, in accelerated time.

    A forge of SOURCES sources changes (the workload's rates), new ones appear,
    some are dead; the embedded scheduler on its own SQLite file lists them,
    grabs by policy, visits them with a capacity of a seventh of them a day,
    and learns from what it finds. Freshness and mean age are measured on the
    forge itself. Ends with a summary; compare with --policy seed.
    """
    extras.require("sim", "ostinato demo")
    from ..sim.demo_forge import run_demo
    from ..store import open_store

    logging.basicConfig(level=logging.WARNING, force=True)
    path = Path(demo_db)
    if path.name != "demo.db" and path.exists():
        raise click.UsageError(f"--demo-db {demo_db}: the demo replaces its file; give a new path or one named demo.db")
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        stale.unlink(missing_ok=True)
    console = Console()
    url = f"sqlite:///{path.resolve()}"
    with open_store(url) as store, Live(_table(None, policy, sources), console=console, refresh_per_second=4) as live:
        history = run_demo(store, url, sources=sources, seconds=seconds, days_per_second=days_per_second, policy=policy,
                           workload=workload, workers=workers, seed=seed,
                           on_figures=lambda f: live.update(_table(f, policy, sources)))
    half = history[len(history) // 2:] or history
    freshness = sum(f.freshness for f in half) / len(half)
    age = sum(f.mean_age_days for f in half) / len(half)
    last = history[-1]
    console.print(
        f"\n[bold]Summary[/bold] ({policy}, {workload}, {last.day:.0f} simulated days, {sources:,} sources at the start and "
        f"{last.sources:,} live by the end; means over the second half): "
        f"{freshness:.1%} of sources fresh, mean age {age:.2f} days, {last.visits:,} visits "
        f"({last.eventful / max(last.visits, 1):.0%} found a change), {last.never_visited:,} sources never visited.\n"
        + ("Compare: ostinato demo --policy seed" if policy == "optimal" else "Compare: ostinato demo --policy optimal"))
