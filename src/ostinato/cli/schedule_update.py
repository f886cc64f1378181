"""``ostinato schedule update``: change any field of a schedule, checked as ``schedule add`` checks it.

Only the options given change; ``--every`` turns a calendar schedule periodic and ``--calendar`` a
periodic one calendar (the other kind's fields cleared). ``--no-cooldown``, ``--no-blackout``,
``--any-node``, ``--default-retry-backoff`` and ``--no-max-expected`` / ``--no-max-allowed`` clear a
field. A schedule declared in code (Python or a Celery ``beat_schedule``) is changed there, not here:
its next start-up would undo the change; the command refuses it, saying where.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import click

from ..domain.blackouts import parse_blackout_periods
from ..domain.durations import parse_duration
from ..domain.errors import ValidationError
from ..domain.firings import CatchUp
from ..domain.schedule_records import schedule_to_dict
from ..domain.schedules import RunMode, ScheduleKind
from .app import AppContext, pass_app, readable
from .output import DurationType, echo_json
from .schedules import ADD_FLAGS, blackout_windows, json_option, schedule, schedule_named, show_schedule
from .tasks import build_arguments


@schedule.command("update")
@click.argument("name")
@click.option("--task-type", help="The task type it runs (a Celery task's name with --mode send).")
@click.option("--every", "period", type=DurationType("--every"), help="Periodic: scheduling_period (turns it periodic).")
@click.option("--cooldown", type=DurationType("--cooldown", allow_zero=True), help="Periodic: the wait after a good run.")
@click.option("--no-cooldown", is_flag=True, help="Periodic: no cooldown (once a period).")
@click.option("--calendar", "calendar_rule", help="Calendar: cron, systemd calendar event or RRULE (turns it calendar).")
@click.option("--max-duration", type=DurationType("--max-duration"), help="Calendar: cron_max_schedule_duration.")
@click.option("--tz", help="IANA zone of the calendar rule and blackout periods.")
@click.option("--mode", type=click.Choice([m.value for m in RunMode]), help="run, submit or send.")
@click.option("--catch-up", "catch_up", metavar="latest|skip|all:N", help="After an outage: the latest missed fire "
              "time, none, or up to N.")
@click.option("--retry-backoff", metavar="D[,D…]", help="Its retry backoff after failure 1, 2, 3 or more.")
@click.option("--default-retry-backoff", is_flag=True, help="The setting schedule_retry_backoff instead of its own.")
@click.option("--max-expected", type=DurationType("--max-expected"), help="max_expected_duration.")
@click.option("--no-max-expected", is_flag=True, help="No max_expected_duration.")
@click.option("--max-allowed", type=DurationType("--max-allowed"), help="max_allowed_duration.")
@click.option("--no-max-allowed", is_flag=True, help="No max_allowed_duration.")
@click.option("--expected-duration", type=DurationType("--expected-duration"),
              help="expected_duration: how long a run is expected to last, in place of the moving average.")
@click.option("--no-expected-duration", is_flag=True, help="No expected_duration: the moving average again.")
@click.option("--partial-failure-threshold", type=float, metavar="SHARE",
              help="partial_failure_threshold: the failed share of a good run's items (0 to 1) above which it warns.")
@click.option("--default-partial-failure-threshold", is_flag=True,
              help="The setting schedule_partial_failure_threshold instead of its own.")
@click.option("--blackout", multiple=True, metavar="HH:MM-HH:MM", help="Its daily blackout periods (repeatable: "
              "they replace the old ones).")
@click.option("--no-blackout", is_flag=True, help="No blackout period.")
@click.option("--dont-run-on", multiple=True, metavar="NODE", help="Nodes that must not run it (repeatable: replace).")
@click.option("--any-node", is_flag=True, help="Any node may run it.")
@click.option("--args-json", help="Positional arguments as a JSON array (replaces them).")
@click.option("--kwargs-json", help="Keyword arguments as a JSON object (replaces them).")
@json_option
@pass_app
def schedule_update(app: AppContext, name: str, as_json: bool, **given: Any) -> None:
    """Change schedule NAME: only the options given; the rest stays, and its run history too.

    Examples: ostinato schedule update count-notes --every 30m --cooldown 10m;
    ostinato schedule update nightly --calendar "Mon..Sat *-*-* 03:00" --tz Europe/Paris
    """
    store = app.store()
    found = schedule_named(app, name)
    if found.declared_by:
        raise ValidationError("schedule", f"a schedule not declared in code: {name} is declared by "
                              f"{found.declared_by}; change it there (its next start-up would undo this)", name)
    try:
        changes = _changes(found, given)
        if not changes:
            raise ValidationError("schedule update", "at least one option to change (see --help)", name)
        changes = {field: value for field, value in changes.items() if getattr(found, field) != value}
        if not changes:
            click.echo(f"Unchanged {name}: it already has these values")
            return
        task_type = changes.get("task_type", found.task_type)
        mode = changes.get("mode", found.mode)
        if "task_type" in changes and mode is not RunMode.SEND and store.get_task_type(task_type) is None:
            raise ValidationError("--task-type", "a known task type (see `ostinato task-type list`)", task_type)
        updated = store.update_schedule(dataclasses.replace(found, **changes), app.clock.now(),
                                        app.settings.schedule_timing(), fields=sorted(changes), actor=app.actor)
    except ValidationError as exc:
        raise readable(exc, ADD_FLAGS) from None
    if as_json:
        echo_json(schedule_to_dict(updated))
    else:
        click.echo(f"Updated {name}: {', '.join(sorted(changes))}")
        show_schedule(app, store.get_schedule(name) or updated)


def _flag(option: str) -> str:
    return {"period": "--every", "calendar_rule": "--calendar"}.get(option, "--" + option.replace("_", "-"))


def _changes(found: Any, given: dict[str, Any]) -> dict[str, Any]:
    """The schedule's fields the options change (each pair of set and clear options is exclusive)."""
    for set_, clear in (("cooldown", "no_cooldown"), ("retry_backoff", "default_retry_backoff"),
                        ("max_expected", "no_max_expected"), ("max_allowed", "no_max_allowed"),
                        ("expected_duration", "no_expected_duration"),
                        ("partial_failure_threshold", "default_partial_failure_threshold"),
                        ("blackout", "no_blackout"), ("dont_run_on", "any_node"), ("period", "calendar_rule")):
        if given[set_] not in (None, ()) and given[clear]:
            raise ValidationError(_flag(set_), f"not with {_flag(clear)}",
                                  given[set_] if not isinstance(given[set_], tuple) else list(given[set_]))
    changes: dict[str, Any] = {}
    if given["period"] is not None:
        changes.update(kind=ScheduleKind.PERIODIC, scheduling_period=given["period"], cron_schedule=None,
                       cron_max_schedule_duration=None)
    if given["calendar_rule"] is not None:
        changes.update(kind=ScheduleKind.CALENDAR, cron_schedule=given["calendar_rule"], scheduling_period=None,
                       cooldown_duration=None)
    simple = {"task_type": "task_type", "cooldown": "cooldown_duration", "max_duration": "cron_max_schedule_duration",
              "tz": "tz", "max_expected": "max_expected_duration", "max_allowed": "max_allowed_duration",
              "expected_duration": "expected_duration", "partial_failure_threshold": "partial_failure_threshold"}
    changes.update({field: given[option] for option, field in simple.items() if given[option] is not None})
    cleared = {"no_cooldown": "cooldown_duration", "default_retry_backoff": "retry_backoff",
               "no_max_expected": "max_expected_duration", "no_max_allowed": "max_allowed_duration",
               "no_expected_duration": "expected_duration",
               "default_partial_failure_threshold": "partial_failure_threshold"}
    changes.update({field: None for flag, field in cleared.items() if given[flag]})
    if given["mode"] is not None:
        changes["mode"] = RunMode(given["mode"])
    if given["catch_up"] is not None:
        changes["catch_up"] = CatchUp.parse(given["catch_up"])
    if given["retry_backoff"] is not None:
        changes["retry_backoff"] = tuple(parse_duration(v.strip(), f"--retry-backoff[{i}]", allow_zero=True)
                                         for i, v in enumerate(given["retry_backoff"].split(",")))
    if given["blackout"] or given["no_blackout"]:
        changes["blackout_periods"] = parse_blackout_periods(blackout_windows(given["blackout"]))
    if given["dont_run_on"] or given["any_node"]:
        changes["dont_run_on_nodes"] = tuple(given["dont_run_on"])
    if given["args_json"] is not None or given["kwargs_json"] is not None:
        arguments = build_arguments((), given["args_json"] or json.dumps(list(found.arguments.args)),
                                    given["kwargs_json"] or json.dumps(dict(found.arguments.kwargs)))
        changes["arguments"] = arguments
    return changes


__all__ = ["schedule_update"]
