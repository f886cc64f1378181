"""The protocol's lister and origin operations (``lister/*``, ``listers/*``, ``origins/*``) on the store's
origin verbs and, for what Ostinato's model has not, its compat records (see
docs/reference/swh-compat.md, "Origins", "Grabs").

- A lister's UUID is its Ostinato id in the low 64 bits under a fixed prefix (:func:`lister_uuid`);
  its ``created``, ``first_visits_queue_prefix`` and ``first_visits_scheduled_at`` are a compat record.
- Grabs follow swh's semantics (``domain.listing_grabs``): listings, each grab's cooldowns
  computed from its own arguments and the visit stats the protocol's journal client wrote
  (``visits.py``), ``tablesample`` as a random share of the listings.
- Queue positions of the recurrent visit scheduler are a compat record per visit type.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any
from uuid import UUID

from ...domain.errors import ConflictError, NotFoundError, ValidationError
from ...domain.listing_grabs import ListingGrab, ListingOrder
from ...domain.origins import ListedOrigin, Lister, StoredListedOrigin
from . import models, policies
from .operations import (
    Context,
    Param,
    StaleData,
    UnknownPolicy,
    arg,
    model_arg,
    models_arg,
    now_or,
    operation,
    time_arg,
    uuid_arg,
)
from .wire import Model, Page

_UUID_PREFIX = 0x05715A70_0A11_4000 << 64
_LOW64 = (1 << 64) - 1
LISTERS = "swh.lister"
QUEUE_POSITIONS = "swh.queue_position"
#: the policies of the protocol, with swh's semantics (domain/listing_grabs.py)
ORDERS = {order.value: order for order in ListingOrder}


@lru_cache(maxsize=4096)
def lister_uuid(lister_id: int) -> UUID:
    return UUID(int=_UUID_PREFIX | lister_id)


def lister_id_of(value: UUID | str | None) -> int | None:
    """Ostinato's id of a lister UUID, None for a UUID no lister here has."""
    if value is None:
        return None
    try:
        number = (value if isinstance(value, UUID) else UUID(str(value))).int
    except ValueError:
        return None
    return number & _LOW64 if number & ~_LOW64 == _UUID_PREFIX else None


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _lister_model(lister: Lister, extra: dict[str, Any]) -> Any:
    return models.make(
        "Lister", name=lister.name, instance_name=lister.instance_name, id=lister_uuid(lister.id),
        current_state=dict(lister.current_state), created=_time(extra.get("created")) or lister.updated,
        updated=lister.updated, last_listing_finished_at=lister.last_listing_finished_at,
        first_visits_queue_prefix=extra.get("first_visits_queue_prefix"),
        first_visits_scheduled_at=_time(extra.get("first_visits_scheduled_at")))


def _listers(ctx: Context, listers: list[Lister]) -> list[Any]:
    extras = ctx.compat.get_compat_records(LISTERS, [str(lister.id) for lister in listers])
    return [_lister_model(lister, extras.get(str(lister.id), {})) for lister in listers]


def _find_lister(ctx: Context, name: str, instance_name: str) -> Lister | None:
    return next((item for item in ctx.origins.list_listers() if (item.name, item.instance_name) == (name, instance_name)), None)


@operation("lister/get", "read", name=arg(models.TEXT), instance_name=arg(models.nullable(models.TEXT), None))
def get_lister(ctx: Context, name: str, instance_name: str | None) -> Any:
    lister = _find_lister(ctx, name, instance_name or "")
    return None if lister is None else _listers(ctx, [lister])[0]


@operation("lister/get_or_create", name=arg(models.TEXT), instance_name=arg(models.nullable(models.TEXT), None),
           first_visits_queue_prefix=arg(models.nullable(models.TEXT), None))
def get_or_create_lister(ctx: Context, name: str, instance_name: str | None, first_visits_queue_prefix: str | None) -> Any:
    now = ctx.clock.now()
    lister = ctx.origins.get_or_create_lister(name, instance_name or "", now)
    key = str(lister.id)
    if key not in ctx.compat.get_compat_records(LISTERS, [key]):
        ctx.compat.put_compat_records(LISTERS, {key: {"created": _iso(lister.updated),
                                                     "first_visits_queue_prefix": first_visits_queue_prefix,
                                                     "first_visits_scheduled_at": None}})
    return _listers(ctx, [lister])[0]


@operation("lister/update", lister=model_arg("Lister"))
def update_lister(ctx: Context, lister: dict[str, Any]) -> Any:
    lister_id = lister_id_of(lister["id"])
    stored = next((item for item in ctx.origins.list_listers() if item.id == lister_id), None)
    if stored is None or lister["updated"] is None or stored.updated != lister["updated"]:
        raise StaleData("Stale data; Lister state not updated")
    try:
        saved = ctx.origins.update_lister(stored, current_state=lister["current_state"],
                                        last_listing_finished_at=lister["last_listing_finished_at"], now=ctx.clock.now())
    except ConflictError:
        raise StaleData("Stale data; Lister state not updated") from None
    key = str(saved.id)
    extra = ctx.compat.get_compat_records(LISTERS, [key]).get(key, {"created": _iso(stored.updated)})
    extra.update(first_visits_queue_prefix=lister["first_visits_queue_prefix"],
                 first_visits_scheduled_at=_iso(lister["first_visits_scheduled_at"]))
    ctx.compat.put_compat_records(LISTERS, {key: extra})
    return _lister_model(saved, extra)


@operation("listers/get", "read", with_first_visits_to_schedule=arg(models.BOOL, False))
def get_listers(ctx: Context, with_first_visits_to_schedule: bool) -> list[Any]:
    found = _listers(ctx, sorted(ctx.origins.list_listers(), key=lambda lister: lister.id))
    if with_first_visits_to_schedule:
        found = [m for m in found if m.fields["last_listing_finished_at"] is not None
                 and m.fields["first_visits_queue_prefix"] is not None and m.fields["first_visits_scheduled_at"] is None]
    return found


def _lister_ids(value: Any, name: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValidationError(name, "a list of lister UUIDs", value)
    return value


@operation("listers/get_by_id", "read", lister_ids=Param(_lister_ids))
def get_listers_by_id(ctx: Context, lister_ids: list[Any]) -> list[Any]:
    wanted = {lister_id_of(v) for v in lister_ids} - {None}
    return _listers(ctx, sorted((item for item in ctx.origins.list_listers() if item.id in wanted), key=lambda item: item.id))


# -- listed origins ---------------------------------------------------------------------------
def _origin_model(stored: StoredListedOrigin) -> Any:
    # every field given, in the client's order (models.make's checks cost a sixth of a grab's encoding)
    origin = stored.origin
    return Model("ListedOrigin", {
        "lister_id": lister_uuid(stored.lister_id), "url": origin.url, "visit_type": origin.visit_type,
        "extra_loader_arguments": dict(origin.extra_loader_arguments), "last_update": origin.last_update,
        "is_fork": origin.is_fork, "forked_from_url": origin.forked_from_url, "enabled": origin.enabled,
        "first_seen": stored.first_seen, "last_seen": stored.last_seen})


@operation("origins/record", listed_origins=models_arg("ListedOrigin"), update_last_seen=arg(models.BOOL, True))
def record_listed_origins(ctx: Context, listed_origins: list[dict[str, Any]], update_last_seen: bool) -> list[Any]:
    by_lister: dict[int, dict[tuple[str, str], ListedOrigin]] = {}
    for index, origin in enumerate(listed_origins):
        if not update_last_seen and origin["last_seen"] is None:
            # the protocol's store then writes the last_seen sent: without one, its batch fails; here a 400
            raise ValidationError(f"listed_origins[{index}].last_seen", "a time: with update_last_seen false, the "
                                  "listing's last sighting is the one sent (the one read back)", None)
        lister_id = lister_id_of(origin["lister_id"])
        if lister_id is None:
            raise ValidationError(f"listed_origins[{index}].lister_id", "the UUID of a lister of this scheduler",
                                  str(origin["lister_id"]))
        by_lister.setdefault(lister_id, {})[(origin["url"], origin["visit_type"])] = ListedOrigin(
            origin["url"], origin["visit_type"], origin["extra_loader_arguments"], origin["last_update"],
            origin["enabled"], origin["is_fork"], origin["forked_from_url"])
    if len(by_lister) > 1:  # every lister known before any is written (one lister: the write's own check)
        known = {lister.id for lister in ctx.origins.list_listers()}
        for lister_id in by_lister:
            if lister_id not in known:
                raise _unknown_lister(lister_id)
    now = ctx.clock.now()
    stored: dict[tuple[int, str, str], StoredListedOrigin] = {}
    for lister_id, origins in by_lister.items():
        try:
            listings = ctx.origins.record_listings(lister_id, list(origins.values()), now,
                                                   touch_last_seen=update_last_seen)
        except NotFoundError as exc:
            if exc.kind != "lister":
                raise
            raise _unknown_lister(lister_id) from None
        for s in listings:
            stored[(s.lister_id, s.origin.url, s.origin.visit_type)] = s
    # in the order given, each listing once (its last version), as the protocol answers
    order = dict.fromkeys((lister_id_of(o["lister_id"]), o["url"], o["visit_type"]) for o in listed_origins)
    return [_origin_model(stored[key]) for key in order if key in stored]


def _unknown_lister(lister_id: int) -> ValidationError:
    return ValidationError("listed_origins.lister_id", "the UUID of a lister of this scheduler",
                           str(lister_uuid(lister_id)))


def _page_token(value: Any, name: str) -> tuple[str, str] | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return (value[0], value[1])
    raise ValidationError(name, "a token from a previous page: [lister UUID, url]", value)


def _texts(value: Any, name: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, list):
        return [models.TEXT(v, f"{name}[{i}]") for i, v in enumerate(value)]
    raise ValidationError(name, "a list of URLs", value)


@operation("origins/get", "read", lister_id=uuid_arg(), url=arg(models.nullable(models.TEXT), None),
           urls=Param(_texts, None), enabled=arg(models.nullable(models.BOOL), True), limit=arg(models.WHOLE, 1000),
           page_token=Param(_page_token, None))
def get_listed_origins(ctx: Context, lister_id: UUID | None, url: str | None, urls: list[str] | None,
                       enabled: bool | None, limit: int, page_token: tuple[str, str] | None) -> Any:
    ours = lister_id_of(lister_id) if lister_id is not None else None
    if lister_id is not None and ours is None:
        return Page([], None)
    after = (0, "")
    if page_token is not None:
        token_lister = lister_id_of(page_token[0])
        if token_lister is None:  # a UUID no lister here has: ours sort by their ids, under one prefix
            token_lister = 0 if str(page_token[0]) < str(lister_uuid(0)) else 1 << 63
        after = (token_lister, page_token[1])
    wanted_urls = [url] if url is not None else urls
    if wanted_urls is not None and not wanted_urls:
        wanted_urls = None  # no URL asked: the protocol's store filters on none
    # by (lister, url), as the protocol's pages: our UUIDs sort as our ids (one prefix, the id below it)
    shown = ctx.compat.list_listings(lister_id=ours, urls=wanted_urls, enabled=enabled, after=after, limit=limit)
    token = None
    if limit and len(shown) == limit:
        token = [str(lister_uuid(shown[-1].lister_id)), shown[-1].origin.url]
    return Page([_origin_model(s) for s in shown], token)


@operation("lister/visit_types", "read", lister=model_arg("Lister"))
def get_visit_types_for_listed_origins(ctx: Context, lister: dict[str, Any]) -> list[str]:
    ours = lister_id_of(lister["id"])
    return [] if ours is None else ctx.compat.lister_visit_types(ours)


_COOLDOWN = models.nullable(models.DURATION)


def _grab_listers(ctx: Context, lister_uuid: str | None, lister_name: str | None,
                  lister_instance_name: str | None) -> list[Lister] | None:
    """The listers a grab's lister arguments name, each one a filter as in the protocol (the UUID, the
    name, the instance name: any of them, all applying); None when none is given."""
    if not (lister_uuid or lister_name or lister_instance_name):
        return None
    wanted = lister_id_of(lister_uuid) if lister_uuid else None
    return [item for item in ctx.origins.list_listers()
            if (not lister_uuid or item.id == wanted) and (not lister_name or item.name == lister_name)
            and (not lister_instance_name or item.instance_name == lister_instance_name)]


def _named_lister(ctx: Context, lister_uuid: str | None, lister_name: str | None,
                  lister_instance_name: str | None) -> Lister | None:
    """The one lister first_visits_after_listing is about: by its UUID, else by name and instance name."""
    if lister_uuid is not None:
        wanted = lister_id_of(lister_uuid)
        return next((item for item in ctx.origins.list_listers() if item.id == wanted), None)
    if lister_name is not None and lister_instance_name is not None:
        return _find_lister(ctx, lister_name, lister_instance_name)
    return None


@operation("origins/grab_next", visit_type=arg(models.TEXT), count=arg(models.WHOLE), policy=arg(models.TEXT),
           enabled=arg(models.BOOL, True), lister_uuid=arg(models.nullable(models.TEXT), None),
           lister_name=arg(models.nullable(models.TEXT), None),
           lister_instance_name=arg(models.nullable(models.TEXT), None), timestamp=time_arg(),
           absolute_cooldown=arg(_COOLDOWN, timedelta(hours=12)), scheduled_cooldown=arg(_COOLDOWN, timedelta(days=7)),
           failed_cooldown=arg(_COOLDOWN, timedelta(days=14)), not_found_cooldown=arg(_COOLDOWN, timedelta(days=31)),
           tablesample=arg(models.nullable(models.NUMBER), None), dry_run=arg(models.BOOL, False))
def grab_next_visits(ctx: Context, visit_type: str, count: int, policy: str, enabled: bool, lister_uuid: str | None,
                     lister_name: str | None, lister_instance_name: str | None, timestamp: datetime | None,
                     absolute_cooldown: timedelta | None, scheduled_cooldown: timedelta | None,
                     failed_cooldown: timedelta | None, not_found_cooldown: timedelta | None,
                     tablesample: float | None, dry_run: bool) -> list[Any]:
    # swh's semantics, not Ostinato's own grab: listings, cooldowns computed now from these arguments
    # (domain/listing_grabs.py; docs/reference/swh-compat.md, "Grabs")
    order = ORDERS.get(policy)
    ours = policies.ostinato_policy(policy) if order is None else None
    if order is None and ours is None:
        raise UnknownPolicy("policy", "a scheduling policy of the protocol, change_rate_optimal, or ostinato.<policy>",
                            policy)
    listers = _grab_listers(ctx, lister_uuid, lister_name, lister_instance_name)
    if ours is not None:
        return [_origin_model(row) for row in policies.grab_with(ctx, ours, policy, visit_type, count, enabled, listers,
                                                                 now_or(ctx, timestamp), dry_run)]
    assert order is not None
    lister = None
    if order is ListingOrder.FIRST_VISITS_AFTER_LISTING:
        lister = _named_lister(ctx, lister_uuid, lister_name, lister_instance_name)
        if lister is None:
            raise ValidationError("lister_uuid", "a lister of this scheduler (its UUID, or its name and instance "
                                  "name) for this policy", lister_uuid or lister_name)
    if listers is not None and not listers:
        return []
    sample = None if not tablesample else min(float(tablesample), 100.0)
    if sample is not None and sample <= 0:
        raise ValidationError("tablesample", "a percentage above 0", tablesample)
    grab = ListingGrab(visit_type, count, order, enabled=enabled,
                       lister_ids=None if listers is None else tuple(item.id for item in listers),
                       absolute_cooldown=absolute_cooldown, scheduled_cooldown=scheduled_cooldown,
                       failed_cooldown=failed_cooldown, not_found_cooldown=not_found_cooldown,
                       scheduled_before=lister.last_listing_finished_at if lister else None, sample_percent=sample,
                       queue_records=QUEUE_POSITIONS)
    return [_origin_model(row) for row in ctx.compat.grab_listed_origins(grab, now_or(ctx, timestamp), dry_run=dry_run)]
