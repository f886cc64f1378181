"""``ostinato history sample``: the console's history pass (``services.history``), once or every D.

``ostinato api serve`` runs the same pass every minute by itself (``--no-history`` turns it
off); this command is for a deployment whose dashboard is served elsewhere, or from a timer.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import click

from ..domain.durations import format_duration
from ..services.history import HistoryPass, run_history
from .app import AppContext, command_group, pass_app, stop_on_signals
from .output import DurationType, plural


@command_group("history", "The console's history: samples per visit type, schedule and task type.")
def history() -> None:
    pass


@history.command("sample")
@click.option("--every", type=DurationType(field="every"), default=None,
              help="Take a sample every D until stopped (1m: the one-minute samples; default: once).")
@pass_app
def history_sample(app: AppContext, every: timedelta | None) -> None:
    """Sample every visit type, schedule and task type once (or every D), roll the samples up and prune
    those past their span. Several at once are harmless: each sample replaces the one of its interval."""
    timing = app.settings.schedule_timing()
    if every is None:
        outcome = HistoryPass(app.store(), app.clock, timing=timing).run_once()
        click.echo(f"Sampled {plural(outcome.series, 'series', 'series')}: {plural(outcome.written, 'sample')} "
                   f"written, {outcome.pruned} pruned")
        return
    stop = threading.Event()
    click.echo(f"ostinato history sample: every {format_duration(every)}, on the database of the settings (Ctrl-C stops)", err=True)
    with stop_on_signals(stop, "stopping the history pass"):
        run_history(app.store(), app.clock, stop, every=every, timing=timing)


__all__ = ["history"]
