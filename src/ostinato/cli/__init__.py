"""The ``ostinato`` command line: thin commands over the services and the store.

``app`` holds the root group and the context every command gets (settings, clock, the store opened on first use);
each other module adds one command or group, named after it (``tasks``: ``ostinato task``,
``example_install``: ``ostinato example install``, ``services``: ``run``, ``runner``, ``orchestrator``…),
and ``output`` holds what they share: tables, JSON, formats of durations and times, parameter types.
"""

from __future__ import annotations

# Each module adds its commands to `cli` when imported (none is used by name here).
from . import (  # noqa: F401 - imported for the commands they register
    api,
    audit,
    calendar,
    db,
    demo,
    example_install,
    history,
    imports,
    journal,
    origins,
    politeness,
    schedule_end_run,
    schedule_holds,
    schedule_update,
    schedules,
    services,
    simulate,
    simulate_schedules,
    swh_rpc,
    task_runs,
    task_types,
    tasks,
    tokens,
    visits,
    workers,
)
from .app import AppContext, cli


def main() -> None:
    cli(prog_name="ostinato")


__all__ = ["AppContext", "cli", "main"]
