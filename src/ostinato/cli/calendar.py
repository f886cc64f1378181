"""``ostinato calendar next``: preview the next firings of any calendar rule
(cron, systemd calendar event, RRULE) in a zone, daylight-saving notes included."""

from __future__ import annotations

from datetime import UTC

import click

from ..domain.calendars import HORIZON_YEARS, MAX_PREVIEW, CalendarRule, RuleKind
from ..domain.durations import parse_time
from ..domain.errors import ValidationError
from .app import AppContext, command_group, pass_app, readable
from .output import WholeNumberType, echo_json


@command_group("calendar", "Preview calendar rules: cron, systemd calendar events and RRULE.")
def calendar() -> None:
    pass


@calendar.command("next")
@click.argument("expression")
@click.option("--tz", default="UTC", show_default=True, help="IANA time zone the rule is read in.")
@click.option("--after", metavar="TIME",
              help="Start after this time (default: now): now, +2h, -1d or an ISO 8601 time. A time without a zone "
                   "(2026-11-27 or 2026-11-27T09:00) is read in the rule's zone: --tz, or the zone ending a "
                   "systemd event; UTC when neither is given.")
@click.option("--count", "-n", type=WholeNumberType(1, field="--count", maximum=MAX_PREVIEW), default=5,
              show_default=True, help=f"How many firings (at most {MAX_PREVIEW:,}).")
@click.option("--kind", type=click.Choice([k.value for k in RuleKind]), help="Force the kind (default: read from the text).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@pass_app
def calendar_next(app: AppContext, expression: str, tz: str, after: str | None, count: int, kind: str | None,
                  as_json: bool) -> None:
    """Print the next COUNT firings of EXPRESSION after --after, in --tz.

    Examples: ostinato calendar next "0 2 * * *" --tz Europe/Paris;
    ostinato calendar next "Mon..Fri *-*-* 02:00"; ostinato calendar next "FREQ=WEEKLY;BYDAY=MO;BYHOUR=6"
    """
    try:
        rule = CalendarRule.parse(expression, tz, kind=kind)
    except ValidationError as exc:
        raise readable(exc) from None
    now = app.clock.now()
    start = now if after is None else parse_time(after, now, "after", zone=rule.zone)
    firings = rule.next_fire_times(start, count)
    if as_json:
        echo_json({"expression": rule.expression, "kind": rule.kind.value, "tz": rule.tz, "after": start,
                   "next": [{"at": f.at, "utc": f.at.astimezone(UTC), "note": f.note, "moved": f.moved}
                            for f in firings]})
        return
    click.echo(f"{rule.kind.value} rule {rule.expression!r} in {rule.zone_name}, after {start.astimezone(rule.zone).isoformat()}:")
    for firing in firings:
        line = f"  {firing.at:%a %Y-%m-%d %H:%M:%S %Z} ({firing.at.isoformat()})"
        click.echo(line + (f"  note: {firing.note}" if firing.note else ""))
    if len(firings) < count:
        click.echo(f"  (no more firings within the {HORIZON_YEARS} years searched after {start:%Y-%m-%d}: "
                   f"{len(firings)} found)")
