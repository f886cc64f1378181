"""``ostinato origin grab-next`` (which origins the policies pick next) and
``ostinato metrics update|show`` (per lister and visit type)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import click

from ..domain.durations import format_duration
from ..domain.errors import ValidationError
from ..domain.orchestration import plan_grab_requests, validate_ratios
from ..domain.origin_metrics import OriginMetrics
from ..domain.visit_policies import POLICY_NAMES, GrabOptions, GrabRequest, NextVisit, VisitPolicy
from .app import AppContext, command_group, pass_app, readable
from .origins import check_visit_type, json_option, loader_visit_types, origin, resolve_lister
from .output import DurationType, WholeNumberType, echo_json, format_time, plural, print_rows


def parse_policy_option(values: tuple[str, ...], visit_type: str, settings) -> dict[str, float]:
    """``--policy P`` or ``--policy P=RATIO``, repeatable; none: the configured ratios of the
    visit type (the default table unless ``policy_ratios`` says otherwise)."""
    if not values:
        return settings.ratios(visit_type)
    ratios: dict[str, Any] = {}
    for value in values:
        name, _, weight = value.partition("=")
        if weight:
            try:
                ratios[name] = float(weight)
            except ValueError:
                raise ValidationError(f"policy.{name}", "a number after =", weight) from None
        else:
            ratios[name] = 1.0
    for name in ratios:
        if name not in POLICY_NAMES:
            raise ValidationError("policy", f"one of {', '.join(sorted(POLICY_NAMES))}", name)
    return validate_ratios(ratios, POLICY_NAMES, field="policy")


@origin.command("grab-next")
@click.argument("visit_type")
@click.option("--count", "-n", type=WholeNumberType(0), default=10, show_default=True, help="Most origins to pick.")
@click.option("--policy", "-p", "policies", multiple=True, metavar="POLICY[=RATIO]",
              help=f"Scheduling policy (repeatable, split by ratio; default: the ratio table). One of {', '.join(sorted(POLICY_NAMES))}.")
@click.option("--lister", "lister_name", metavar="NAME[/INSTANCE]", help="Only origins this lister lists (NAME alone: the one lister of that name).")
@click.option("--in-flight-timeout", type=DurationType(), help="Grabbed origins are not picked again for this long unless their visit reports (default: the setting, 1d).")
@click.option("--dry-run", is_flag=True, help="Show what would be picked; change nothing.")
@json_option
@pass_app
def origin_grab_next(app: AppContext, visit_type: str, count: int, policies: tuple[str, ...], lister_name: str | None,
                     in_flight_timeout: timedelta | None, dry_run: bool, as_json: bool) -> None:
    """Pick the next COUNT origins of VISIT_TYPE to visit and mark them scheduled.

    Enabled origins whose cooldown is over, by the policies' order; each policy
    asks for its share of COUNT and the room one cannot use goes to the others.
    With --dry-run the same question is answered and nothing changes.

    Example: ostinato origin grab-next git --count 100 --policy never_visited_oldest_update_first --dry-run
    """
    try:
        ratios = parse_policy_option(policies, visit_type, app.settings)
    except ValidationError as exc:
        raise readable(exc) from None
    store = app.store()
    try:
        check_visit_type(visit_type, loader_visit_types(store))
    except ValidationError as exc:
        raise readable(exc) from None
    options = _grab_options(app, in_flight_timeout)
    if lister_name is not None:
        options = GrabOptions(options.in_flight_timeout, _lister_id(store, lister_name), options.minimum_interval)
    requests = [GrabRequest(VisitPolicy(p), n) for p, n in plan_grab_requests(count, ratios)]
    visits = store.grab_next_visits(visit_type, requests, app.clock.now(), options=options, dry_run=dry_run, limit=count)
    rows = [next_visit_to_dict(v) for v in visits]
    if as_json:
        echo_json({"visit_type": visit_type, "dry_run": dry_run, "count": len(rows), "visits": rows})
        return
    verb = "Would grab" if dry_run else "Grabbed"
    print_rows(rows, False, [("url", "url"), ("policy", "policy"), ("lister", "lister"), ("last_update", "last update")],
               title=f"{verb} {len(rows)} {visit_type} origin{'' if len(rows) == 1 else 's'}")


def _grab_options(app: AppContext, in_flight_timeout: timedelta | None) -> GrabOptions:
    options = app.settings.grab_options()
    if in_flight_timeout is not None:
        options = GrabOptions(in_flight_timeout, options.lister_id, options.minimum_interval)
    try:
        return options.validated()
    except ValidationError as exc:
        raise readable(exc) from None


def _lister_id(store, spec: str) -> int:
    return resolve_lister(store, spec)[0].id


def next_visit_to_dict(visit: NextVisit) -> dict[str, Any]:
    return {
        "url": visit.url,
        "visit_type": visit.visit_type,
        "policy": visit.policy.value,
        "lister": f"{visit.lister_name}/{visit.lister_instance_name}" if visit.lister_name else None,
        "lister_id": visit.lister_id,
        "extra_loader_arguments": dict(visit.extra_loader_arguments),
        "last_update": visit.last_update,
    }


# -- metrics --------------------------------------------------------------------
@command_group("metrics", "Per lister and visit type: origins known, enabled, never visited, visited but never "
               "successfully, pending, and their lag.")
def metrics() -> None:
    pass


_COLUMNS = [("lister", "lister"), ("visit_type", "visit type"), ("origins_known", "known"), ("origins_enabled", "enabled"),
            ("origins_never_visited", "never visited"), ("origins_never_successful", "never successful"),
            ("origins_with_pending_changes", "pending"),
            ("lag_histogram", "lag of pending (at least)"), ("lag_max", "max lag")]


@metrics.command("update")
@click.option("--recount", is_flag=True,
              help="Read every origin again (a full pass) and make what the writes keep up to date again from them.")
@json_option
@pass_app
def metrics_update(app: AppContext, recount: bool, as_json: bool) -> None:
    """Count every lister and visit type now and store the result (the writes keep the counts up to date:
    a pass reads them, whatever the number of origins)."""
    found = app.store().update_origin_metrics(app.clock.now(), recount=recount)
    _print_metrics(found, as_json)


@metrics.command("show")
@click.option("--lister", "lister_name", metavar="NAME[/INSTANCE]", help="Only this lister (NAME alone: the one lister of that name).")
@click.option("--visit-type", help="Only this visit type.")
@json_option
@pass_app
def metrics_show(app: AppContext, lister_name: str | None, visit_type: str | None, as_json: bool) -> None:
    """Show the metrics stored by the last `ostinato metrics update`."""
    store = app.read_store()
    lister_id = _lister_id(store, lister_name) if lister_name else None
    _print_metrics(store.get_origin_metrics(lister_id=lister_id, visit_type=visit_type), as_json)


def metrics_to_dict(m: OriginMetrics) -> dict[str, Any]:
    return {
        "lister": f"{m.lister_name}/{m.lister_instance_name}", "lister_id": m.lister_id, "visit_type": m.visit_type,
        "computed_at": m.computed_at, "origins_known": m.origins_known, "origins_enabled": m.origins_enabled,
        "origins_never_visited": m.origins_never_visited, "origins_never_successful": m.origins_never_successful,
        "origins_with_pending_changes": m.origins_with_pending_changes,
        "lag_histogram": dict(m.lag_histogram), "lag_max": m.lag_max,
    }


def _print_metrics(found: list[OriginMetrics], as_json: bool) -> None:
    rows = [metrics_to_dict(m) for m in found]
    if not as_json:
        for row in rows:
            row["lag_histogram"] = " ".join(f"{k}:{v}" for k, v in row["lag_histogram"].items()) or "-"
            lag = row["lag_max"]
            row["lag_max"] = format_duration(timedelta(seconds=round(lag.total_seconds()))) if lag is not None else ""
    title = None
    if not as_json:
        when = max((m.computed_at for m in found), default=None)
        title = (f"{plural(len(rows), 'lister and visit type pair')}, computed {format_time(when)}"
                 if rows else "no metrics yet: run `ostinato metrics update`")
    print_rows(rows, as_json, _COLUMNS, title=title)
