"""Routes of the origin side: listers, listed origins recorded in
bulk, visit statuses fed back in bulk, grabbing the next visits, and origin metrics.

A bulk body is a JSON array (at most 10,000 items); every item is checked
before anything is written, and a bad one is answered with its ``index`` and
field. As on the command line, origins and statuses of a visit type nobody can
load (no task type ``load-<visit type>``) are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from fastapi import APIRouter, Body, Depends, Path, Query
from fastapi.responses import JSONResponse

from ..domain.durations import parse_duration
from ..domain.errors import NotFoundError, ValidationError
from ..domain.orchestration import plan_grab_requests, validate_ratios
from ..domain.origin_metrics import OriginMetrics
from ..domain.origins import Lister, parse_listed_origin
from ..domain.politeness import Politeness
from ..domain.visit_changes import VisitChanges
from ..domain.visit_policies import POLICY_NAMES, GrabOptions, GrabRequest, NextVisit, VisitPolicy, visit_type_of_task_type
from ..domain.visits import parse_visit_status
from .bodies import (
    MAX_ID,
    URL_MAX_BYTES,
    GrabBody,
    HostPolitenessBody,
    ListedOrigins,
    ListerBody,
    PolitenessBody,
    Strict,
    VisitStatuses,
)
from .request_handling import (
    ADMIN,
    DEFAULT_LIMIT,
    MAX_BULK,
    MAX_LIMIT,
    READ,
    ApiContext,
    check_object,
    context,
    in_range,
    int_cursor,
    iso,
    page,
    parse_items,
    seconds,
)

router = APIRouter(prefix="/api/v1", tags=["origins"])
T = TypeVar("T")


def lister_to_dict(item: Lister) -> dict[str, Any]:
    return {"id": item.id, "name": item.name, "instance_name": item.instance_name, "current_state": dict(item.current_state),
            "last_listing_finished_at": iso(item.last_listing_finished_at), "updated": iso(item.updated)}


def _lister(ctx: ApiContext, lister_id: int) -> Lister:
    for item in ctx.store.list_listers():
        if item.id == lister_id:
            return item
    raise NotFoundError("lister", lister_id)


def loader_visit_types(ctx: ApiContext) -> set[str]:
    """Visit types with a loader: a task type ``load-<visit type>``."""
    return {v for v in (visit_type_of_task_type(t.type) for t in ctx.store.list_task_types()) if v is not None}


def check_visit_type(visit_type: str, known: set[str], field: str) -> str:
    if visit_type not in known:
        raise ValidationError(field, f"a visit type with a loader, a task type load-<visit type> (known: "
                              f"{', '.join(sorted(known)) or 'none yet'})", visit_type)
    return visit_type


def parse_loadable_items(ctx: ApiContext, body: Sequence[Strict], parse: Callable[[Any], T], visit_type_field: str,
                         time_field: str) -> list[T]:
    """Every item of a bulk body read by ``parse``, checked: its visit type must have a loader
    and its time be in range. The parsed record's attributes bear the names of the fields they
    come from (``visit_type_field``, ``time_field``), which the errors name."""
    known = loader_visit_types(ctx)

    def checked(item: Any) -> T:
        parsed = parse(item)
        check_visit_type(getattr(parsed, visit_type_field), known, visit_type_field)
        in_range(getattr(parsed, time_field), time_field)
        return parsed

    return parse_items([item.fields() for item in body], checked)


# -- listers ------------------------------------------------------------------------
@router.get("/listers", dependencies=READ, summary="List listers, by id")
def list_listers(limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT), after: str | None = Query(None),
                 ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    start = int_cursor(after)
    found = sorted((item for item in ctx.store.list_listers() if item.id > start), key=lambda item: item.id)
    return page(found[:limit + 1], limit, lambda item: item.id, lister_to_dict)


@router.post("/listers", dependencies=ADMIN, status_code=201, summary="Declare a lister (an existing one is returned)",
             responses={200: {"description": "The lister existed: it is returned, created false"}})
def create_lister(body: ListerBody = Body(..., examples=[{"name": "gitlab", "instance_name": "gitlab.inria.fr"}]),
                  ctx: ApiContext = Depends(context)) -> Any:
    data = check_object(body.fields(), {"name", "instance_name"}, "a lister")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("name", "a non-empty name", name)
    instance = data.get("instance_name", name)
    if not isinstance(instance, str) or not instance.strip():
        raise ValidationError("instance_name", "a non-empty name", instance)
    for item in ctx.store.list_listers():
        if item.name == name and item.instance_name == instance:
            return JSONResponse({**lister_to_dict(item), "created": False}, status_code=200)
    created = ctx.store.get_or_create_lister(name, instance, ctx.clock.now())
    return JSONResponse({**lister_to_dict(created), "created": True}, status_code=201)


@router.post("/listers/{lister_id}/origins", dependencies=ADMIN, summary="Record listed origins in bulk")
def record_listed_origins(lister_id: int = Path(..., ge=1, le=MAX_ID), body: ListedOrigins = Body(..., description=f"A JSON array of at most {MAX_BULK} listed "
                          "origins: url, visit_type (required), extra_loader_arguments, last_update, enabled, is_fork, "
                          "forked_from_url", examples=[[{"url": "https://github.com/turtl/mobile", "visit_type": "git",
                                                         "last_update": "2026-01-02T03:04:05Z"}]]),
                          ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    found = _lister(ctx, lister_id)
    origins = parse_loadable_items(ctx, body, parse_listed_origin, "visit_type", "last_update")
    # the last item of a (url, visit_type) wins, as within one store batch
    unique = list({(o.url, o.visit_type): o for o in origins}.values())
    recorded = ctx.store.record_listed_origins(found.id, unique, ctx.clock.now()) if unique else 0
    return {"lister_id": found.id, "items": len(origins), "recorded": recorded, "merged": len(origins) - len(unique)}


# -- visit statuses -----------------------------------------------------------------
@router.post("/visit-statuses", dependencies=ADMIN, summary="Feed visit statuses back into the visit stats, in bulk")
def record_visit_statuses(body: VisitStatuses = Body(..., description=f"A JSON array of at most {MAX_BULK} journal messages: "
                          "origin, visit, type, status, date, snapshot (hex or null), changes, newest_change_at, "
                          "change_times (at most 64 times, none more than an hour after date)", examples=[[
                              {"origin": "https://github.com/turtl/mobile", "visit": 3, "type": "git", "status": "full",
                               "date": "2026-01-02T03:04:05Z", "snapshot": "9b92"}]]),
                          ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    statuses = sorted(parse_loadable_items(ctx, body, parse_visit_status, "type", "date"), key=lambda s: s.date)
    changed = ctx.store.record_visit_statuses(statuses, ctx.settings.feedback_policy(), now=ctx.clock.now()) if statuses else 0
    return {"statuses": len(statuses), "changed": changed, "ignored": len(statuses) - changed}


def visit_changes_to_dict(found: VisitChanges) -> dict[str, Any]:
    return {"url": found.url, "visit_type": found.visit_type, "status_date": iso(found.status_date),
            "newest_change_at": iso(found.newest_change_at),
            "change_times": None if found.change_times is None else [iso(t) for t in found.change_times]}


@router.get("/visit-changes", dependencies=READ, summary="What the last successful visit that said so saw of an origin's changes",
            description="The date of that visit's status, the newest change's time and the change times it found since "
                        "its previous visit (ascending, UTC); 404 when no status of the origin said so.")
def get_visit_changes(url: str = Query(..., min_length=1, max_length=URL_MAX_BYTES),
                      visit_type: str = Query(..., min_length=1, max_length=64),
                      ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    found = ctx.store.get_visit_changes([(url, visit_type)])
    if not found:
        raise NotFoundError("visit changes", f"{url} ({visit_type})")
    return visit_changes_to_dict(found[0])


# -- grabbing the next visits -------------------------------------------------------
def next_visit_to_dict(visit: NextVisit) -> dict[str, Any]:
    return {"url": visit.url, "visit_type": visit.visit_type, "policy": visit.policy.value, "lister_id": visit.lister_id,
            "lister": f"{visit.lister_name}/{visit.lister_instance_name}" if visit.lister_name else None,
            "extra_loader_arguments": dict(visit.extra_loader_arguments), "last_update": iso(visit.last_update)}


@router.post("/origins/grab-next", dependencies=ADMIN, summary="Pick the next origins to visit and mark them scheduled",
             description="With dry_run the same question is answered and nothing changes (still admin: a real grab "
                         "changes state, and the answer reveals what the next one would take).")
def grab_next_visits(body: GrabBody = Body(..., examples=[{"visit_type": "git", "count": 100, "dry_run": True,
                                                      "policies": {"never_visited_oldest_update_first": 1}}]),
                     ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    data = check_object(body.fields(), {"visit_type", "count", "policies", "lister_id", "dry_run"}, "a grab request")
    visit_type = data.get("visit_type")
    if not isinstance(visit_type, str) or not visit_type.strip():
        raise ValidationError("visit_type", "a visit type such as git", visit_type)
    count = data.get("count", 10)
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_BULK:
        raise ValidationError("count", f"a whole number from 0 to {MAX_BULK}", count)
    dry_run = data.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise ValidationError("dry_run", "true or false", dry_run)
    policies = data.get("policies")
    ratios = ctx.settings.ratios(visit_type) if policies is None else validate_ratios(policies, POLICY_NAMES, field="policies")
    check_visit_type(visit_type, loader_visit_types(ctx), "visit_type")
    options = ctx.settings.grab_options()
    lister_id = data.get("lister_id")
    if lister_id is not None:
        if isinstance(lister_id, bool) or not isinstance(lister_id, int):
            raise ValidationError("lister_id", "a lister's id", lister_id)
        options = GrabOptions(options.in_flight_timeout, _lister(ctx, lister_id).id, options.minimum_interval)
    requests = [GrabRequest(VisitPolicy(p), n) for p, n in plan_grab_requests(count, ratios)]
    visits = ctx.store.grab_next_visits(visit_type, requests, ctx.clock.now(), options=options, dry_run=dry_run, limit=count)
    return {"visit_type": visit_type, "dry_run": dry_run, "count": len(visits), "items": [next_visit_to_dict(v) for v in visits]}


# -- origin metrics -----------------------------------------------------------------
def metrics_to_dict(m: OriginMetrics) -> dict[str, Any]:
    return {"lister_id": m.lister_id, "lister": f"{m.lister_name}/{m.lister_instance_name}" if m.lister_name else None,
            "visit_type": m.visit_type, "computed_at": iso(m.computed_at), "origins_known": m.origins_known,
            "origins_enabled": m.origins_enabled, "origins_never_visited": m.origins_never_visited,
            "origins_never_successful": m.origins_never_successful,
            "origins_with_pending_changes": m.origins_with_pending_changes, "lag_histogram": dict(m.lag_histogram),
            "lag_max": seconds(m.lag_max)}


def _metrics_key(m: OriginMetrics) -> str:
    return f"{m.lister_id}:{m.visit_type}"


def _metrics_cursor(after: str | None) -> tuple[int, str] | None:
    if not after:
        return None
    lister_id, sep, visit_type = after.partition(":")
    if not sep or not lister_id.isdigit():
        raise ValidationError("after", "a cursor from a previous page's next", after)
    return int(lister_id), visit_type


@router.get("/origin-metrics", dependencies=READ, summary="Metrics per lister and visit type, as last counted")
def list_origin_metrics(lister_id: int | None = Query(None, ge=1, le=MAX_ID), visit_type: str | None = Query(None),
                        limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT), after: str | None = Query(None),
                        ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    start = _metrics_cursor(after)
    found = sorted(ctx.store.get_origin_metrics(lister_id=lister_id, visit_type=visit_type),
                   key=lambda m: (m.lister_id, m.visit_type))
    if start is not None:
        found = [m for m in found if (m.lister_id, m.visit_type) > start]
    return page(found[:limit + 1], limit, _metrics_key, metrics_to_dict)


@router.post("/origin-metrics/update", dependencies=ADMIN, summary="Recount every lister and visit type (a full pass)")
def update_origin_metrics(ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    now: datetime = ctx.clock.now()
    found = ctx.store.update_origin_metrics(now)
    return {"computed_at": iso(now), "updated": len(found)}


# -- politeness per host (docs/reference/origins.md, "Politeness per host") ---------------------
def politeness_to_dict(p: Politeness) -> dict[str, Any]:
    return {"visit_type": p.visit_type, "max_concurrent_per_host": p.max_concurrent_per_host,
            "min_spacing_per_host": seconds(p.min_spacing_per_host),
            "hosts": [{"host": h, "max_concurrent": limits.max_concurrent, "min_spacing": seconds(limits.min_spacing)}
                      for h, limits in sorted(p.hosts.items())]}


def _spacing(value: Any, field: str) -> timedelta | None:
    """Seconds, or written 90s, 1m; null: none."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            raise ValidationError(field, "a duration of 0 or more", value)
        return timedelta(seconds=value)
    return parse_duration(value, field, allow_zero=True)


@router.get("/visit-types/{visit_type}/politeness", dependencies=READ,
            summary="A visit type's limits per host, and the hosts with their own")
def get_politeness(visit_type: str = Path(..., min_length=1, max_length=64),
                   ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    return politeness_to_dict(ctx.store.get_politeness(visit_type))


@router.post("/visit-types/{visit_type}/politeness", dependencies=ADMIN,
            summary="Set a visit type's limits per host (null: no limit, no spacing)",
            description="Every grab of the visit type keeps them from then on: at most max_concurrent_per_host "
                        "visits in flight on a host, and min_spacing_per_host (seconds, or 2s, 1m) between two "
                        "starts on it.")
def set_politeness(visit_type: str = Path(..., min_length=1, max_length=64),
                   body: PolitenessBody = Body(..., examples=[{"max_concurrent_per_host": 4, "min_spacing_per_host": "2s"}]),
                   ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    data = body.fields()
    found = ctx.store.set_visit_type_politeness(
        visit_type, max_concurrent_per_host=data.get("max_concurrent_per_host"),
        min_spacing_per_host=_spacing(data.get("min_spacing_per_host"), "min_spacing_per_host"))
    return politeness_to_dict(found)


@router.post("/visit-types/{visit_type}/politeness/hosts/{host}", dependencies=ADMIN,
            summary="Set one host's own limits for a visit type (null: the visit type's)")
def set_host_politeness(visit_type: str = Path(..., min_length=1, max_length=64),
                        host: str = Path(..., min_length=1, max_length=255),
                        body: HostPolitenessBody = Body(..., examples=[{"max_concurrent": 32}]),
                        ctx: ApiContext = Depends(context)) -> dict[str, Any]:
    data = body.fields()
    found = ctx.store.set_host_politeness(visit_type, host, max_concurrent=data.get("max_concurrent"),
                                          min_spacing=_spacing(data.get("min_spacing"), "min_spacing"))
    return politeness_to_dict(found)
