"""``ostinato schedule holds``: what lookahead keeps (docs/reference/schedules.md#lookahead): the live
schedulers by their heartbeats (slots, runs in flight and when they should end), and the free slots
held for a schedule due soon, with the schedules they hold back."""

from __future__ import annotations

from typing import Any

import click

from .app import AppContext, pass_app
from .output import echo_json, format_when, plural, print_table
from .schedules import json_option, schedule


@schedule.command("holds")
@json_option
@pass_app
def schedule_holds(app: AppContext, as_json: bool) -> None:
    """The live schedulers and the slots lookahead holds (setting schedule_lookahead)."""
    now = app.clock.now()
    store = app.read_store()
    nodes = store.list_schedulers(now)
    holds = store.list_holds(now)
    node_rows: list[dict[str, Any]] = [
        {"node": n.node, "instance": n.instance, "slots": n.slots, "running": len(n.ends),
         "next_end": min(n.ends).isoformat() if n.ends else None, "seen_at": n.seen_at.isoformat()} for n in nodes]
    hold_rows: list[dict[str, Any]] = [
        {"node": h.node, "instance": h.instance, "waits_for": h.waits_for, "due_at": h.due_at.isoformat(),
         "expires_at": h.expires_at.isoformat()} for h in holds]
    if as_json:
        echo_json({"schedulers": node_rows, "holds": hold_rows})
        return
    for row, n in zip(node_rows, nodes, strict=True):
        row["next_end"] = format_when(min(n.ends), now) if n.ends else ""
        row["seen_at"] = format_when(n.seen_at, now)
    print_table(node_rows, [("node", "node"), ("instance", "instance"), ("slots", "slots"), ("running", "running"),
                            ("next_end", "next run ends"), ("seen_at", "last heartbeat")],
                title=plural(len(nodes), "live scheduler"))
    for row, h in zip(hold_rows, holds, strict=True):
        row["due_at"], row["expires_at"] = format_when(h.due_at, now), format_when(h.expires_at, now)
    print_table(hold_rows, [("node", "node"), ("instance", "instance"), ("waits_for", "slot held for"),
                            ("due_at", "due"), ("expires_at", "hold expires")], title=plural(len(holds), "hold"))
    if not nodes:
        click.echo("No scheduler heartbeats: lookahead is off (setting schedule_lookahead), or no scheduler runs.")
