"""``ostinato db``: create the schema, apply migrations, show the schema version."""

from __future__ import annotations

import click

from ..domain.errors import ConflictError
from .app import AppContext, command_group, pass_app
from .output import echo_json


@command_group("db", "Create and upgrade the database schema.")
def db() -> None:
    pass


@db.command("init")
@pass_app
def init(app: AppContext) -> None:
    """Create the schema in an empty database."""
    store = app.store(check_schema=False, create=True)
    state = store.schema_state()
    if state.current is not None:
        hint = "nothing to do" if state.up_to_date else "run `ostinato db upgrade`"
        raise ConflictError(f"the database already has an Ostinato schema (version {state.current}): {hint}")
    state = store.init_schema()
    click.echo(f"Created the schema, version {state.current}.")


@db.command("upgrade")
@pass_app
def upgrade(app: AppContext) -> None:
    """Apply the pending migrations and say which."""
    store = app.store(check_schema=False, create=True)
    before = store.schema_state()
    if before.current is not None and before.current > before.latest:
        store.check_schema()  # raises SchemaError: this Ostinato is older than the database
    applied = store.upgrade_schema()
    state = store.schema_state()
    if applied:
        click.echo(f"Applied migration{'s' if len(applied) > 1 else ''} {', '.join(str(v) for v in applied)}; schema at version {state.current}.")
    else:
        click.echo(f"Nothing to apply: schema at version {state.current}.")


@db.command("version")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@pass_app
def version(app: AppContext, as_json: bool) -> None:
    """Show the schema version of the database and the latest this Ostinato knows."""
    state = app.store(check_schema=False).schema_state()
    if as_json:
        echo_json({"current": state.current, "latest": state.latest, "up_to_date": state.up_to_date})
        return
    current = "none (run `ostinato db init`)" if state.current is None else str(state.current)
    click.echo(f"current: {current}")
    click.echo(f"latest: {state.latest}")
    if state.current is not None and not state.up_to_date:
        click.echo("run `ostinato db upgrade`" if state.current < state.latest else "this Ostinato is older than the database")
