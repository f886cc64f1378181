"""``ostinato audit list``: the trail of what admin tokens did from the dashboard (pause, resume, run
now a schedule; disable, enable, retry a task), newest first: who, when, what, how it went."""

from __future__ import annotations

import dataclasses

import click

from .app import AppContext, command_group, pass_app
from .output import plural, print_rows


@command_group("audit", "The trail of the dashboard's actions: who did what, when, and how it went.")
def audit() -> None:
    pass


@audit.command("list")
@click.option("--target", metavar="KIND:KEY", help="Only the events of this target: schedule:NAME or task:ID.")
@click.option("--limit", type=click.IntRange(min=1, max=10_000), default=50, show_default=True,
              help="At most this many events, the newest.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@pass_app
def audit_list(app: AppContext, target: str | None, limit: int, as_json: bool) -> None:
    """The newest events first, of every target or of --target.

    Example: ostinato audit list --target schedule:nightly
    """
    rows = [dataclasses.asdict(e) for e in app.read_store().list_audit(target=target, limit=limit)]
    columns = [("at", "at"), ("actor", "who"), ("action", "action"), ("target", "target"), ("outcome", "outcome")]
    print_rows(rows, as_json, columns, title=None if as_json else plural(len(rows), "event"))


__all__ = ["audit"]
