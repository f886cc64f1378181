"""The ``ostinato`` command line: thin commands over the services and the store."""

from __future__ import annotations

from .app import AppContext, cli

# Each module adds its commands to `cli` when imported.
from . import api, calendar, db, demo, examples, imports, journal, origins, schedules, services, simulate, swh_rpc, task_runs, task_types, tasks, tokens, visits, workers  # noqa: E402,F401


def main() -> None:
    cli(prog_name="ostinato")


__all__ = ["AppContext", "cli", "main"]
