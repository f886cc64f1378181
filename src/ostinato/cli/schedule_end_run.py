"""``ostinato schedule end-run``: a program that ends its own runs reports one's end from a shell, with
the items it did and failed (docs/reference/schedules.md#partial-failures): the store's own
``end_schedule_run``, as the Python and HTTP faces call it."""

from __future__ import annotations

import click

from ..domain.errors import ValidationError
from ..domain.run_items import ItemCounts
from ..domain.schedules import RunStatus
from .app import AppContext, pass_app
from .output import DomainChoice, WholeNumberType
from .schedules import schedule, schedule_named

#: the ends a program may report (a steal or a stop is the schedulers' and workers' own)
REPORTED = {"succeeded": RunStatus.SUCCEEDED, "failed": RunStatus.FAILED}


def reported(value: object) -> RunStatus:
    if isinstance(value, RunStatus) and value in REPORTED.values():
        return value
    if isinstance(value, str) and value in REPORTED:
        return REPORTED[value]
    raise ValidationError("--status", " or ".join(REPORTED), value)


@schedule.command("end-run")
@click.argument("name")
@click.option("--tag", required=True, help="The run's owner tag: the one it was sent with.")
@click.option("--status", type=DomainChoice(reported, list(REPORTED)), default="succeeded", show_default=True,
              help="How the run ended.")
@click.option("--items-done", type=WholeNumberType(0, field="--items-done"), help="Items the run did.")
@click.option("--items-failed", type=WholeNumberType(0, field="--items-failed"), help="Items the run failed.")
@pass_app
def schedule_end_run(app: AppContext, name: str, tag: str, status: RunStatus, items_done: int | None,
                     items_failed: int | None) -> None:
    """End NAME's run TAG now, as it ended: succeeded or failed, with the items it did and failed.

    A good run that failed more than the schedule's partial_failure_threshold of its items is still a
    good run for the deadlines; the schedule reads WARNING partial_failure. A tag that is not the
    schedule's current run (ended already, or taken over by a steal) records no end: exit status 1."""
    schedule_named(app, name)  # an unknown name is answered with the closest ones
    items = None
    if items_done is not None or items_failed is not None:
        items = ItemCounts(items_done or 0, items_failed or 0)
    ended = app.store().end_schedule_run(name, tag, status=status, ended=app.clock.now(), items=items,
                                        timing=app.settings.schedule_timing())
    counted = "" if items is None else f" ({items.items_done} done, {items.items_failed} failed)"
    if not ended:
        raise click.ClickException(f"{tag} is not {name}'s current run (it ended, or a steal took it over): "
                                   "no end recorded")
    click.echo(f"Ended {name}'s run {tag}: {status.value}{counted}")
