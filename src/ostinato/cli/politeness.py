"""``ostinato politeness show|set``: a visit type's limits per host and the hosts that override them
(see docs/reference/origins.md, "Politeness per host")."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import click

from ..domain.durations import format_duration, parse_duration
from ..domain.errors import ValidationError
from ..domain.politeness import Politeness
from .app import AppContext, command_group, pass_app, readable
from .origins import check_visit_type, json_option, loader_visit_types
from .output import echo_json, print_rows

#: what clears a limit
NONE_WORDS = ("none", "unlimited", "")


@command_group("politeness", "Limits per host on visits in flight and on the spacing of their starts.")
def politeness() -> None:
    pass


def _limit(value: str | None, field: str) -> tuple[bool, int | None]:
    """(given, value): ``none`` clears, else a whole number of at least 1."""
    if value is None:
        return False, None
    if value.strip().lower() in NONE_WORDS:
        return True, None
    try:
        number = int(value.strip(), 10)
    except ValueError:
        raise ValidationError(field, "a whole number of at least 1, or none for no limit", value) from None
    if number < 1:
        raise ValidationError(field, "a whole number of at least 1, or none for no limit", value)
    return True, number


def _spacing(value: str | None, field: str) -> tuple[bool, timedelta | None]:
    if value is None:
        return False, None
    if value.strip().lower() in NONE_WORDS:
        return True, None
    return True, parse_duration(value.strip(), field, allow_zero=True)


def politeness_to_dict(p: Politeness) -> dict[str, Any]:
    return {
        "visit_type": p.visit_type,
        "max_concurrent_per_host": p.max_concurrent_per_host,
        "min_spacing_per_host": format_duration(p.min_spacing_per_host) if p.min_spacing_per_host is not None else None,
        "hosts": [{"host": host, "max_concurrent": limits.max_concurrent,
                   "min_spacing": format_duration(limits.min_spacing) if limits.min_spacing is not None else None}
                  for host, limits in sorted(p.hosts.items())],
    }


def _print(p: Politeness, as_json: bool) -> None:
    data = politeness_to_dict(p)
    if as_json:
        echo_json(data)
        return
    limit = data["max_concurrent_per_host"]
    spacing = data["min_spacing_per_host"]
    click.echo(f"Visit type {p.visit_type}: " + (f"at most {limit} visits in flight per host" if limit else
                                                 "no limit on visits in flight per host")
               + ", " + (f"starts on a host at least {spacing} apart" if spacing else "no spacing of starts"))
    if data["hosts"]:
        print_rows(data["hosts"], False, [("host", "host"), ("max_concurrent", "max in flight"),
                                          ("min_spacing", "min spacing")], title="Hosts with their own limits")


@politeness.command("show")
@click.argument("visit_type")
@json_option
@pass_app
def politeness_show(app: AppContext, visit_type: str, as_json: bool) -> None:
    """Show VISIT_TYPE's limits per host and the hosts that override them."""
    _print(app.read_store().get_politeness(visit_type), as_json)


@politeness.command("set")
@click.argument("visit_type")
@click.option("--host", help="Set this host's own limits (default: the visit type's, for every host).")
@click.option("--max-concurrent", metavar="N|none", help="Most visits in flight on a host (none: no limit).")
@click.option("--min-spacing", metavar="DURATION|none", help="Least time between two visit starts on a host (30s, 1m; none: no spacing).")
@json_option
@pass_app
def politeness_set(app: AppContext, visit_type: str, host: str | None, max_concurrent: str | None,
                   min_spacing: str | None, as_json: bool) -> None:
    """Set VISIT_TYPE's limits per host, or one host's own (--host); an option not given keeps its value.

    Example: ostinato politeness set git --max-concurrent 4 --min-spacing 2s
             ostinato politeness set git --host github.com --max-concurrent 32
    """
    prefix = "" if host is None else "host."
    try:
        given_limit, limit = _limit(max_concurrent, "max_concurrent" if host else "max_concurrent_per_host")
        given_spacing, spacing = _spacing(min_spacing, "min_spacing" if host else "min_spacing_per_host")
        if not (given_limit or given_spacing):
            raise ValidationError(prefix + "max_concurrent", "--max-concurrent or --min-spacing", None)
        store = app.store()
        check_visit_type(visit_type, loader_visit_types(store))
        current = store.get_politeness(visit_type)
        if host is None:
            found = store.set_visit_type_politeness(
                visit_type,
                max_concurrent_per_host=limit if given_limit else current.max_concurrent_per_host,
                min_spacing_per_host=spacing if given_spacing else current.min_spacing_per_host)
        else:
            own = current.hosts.get(host)
            found = store.set_host_politeness(
                visit_type, host,
                max_concurrent=limit if given_limit else (own.max_concurrent if own else None),
                min_spacing=spacing if given_spacing else (own.min_spacing if own else None))
    except ValidationError as exc:
        raise readable(exc) from None
    _print(found, as_json)
