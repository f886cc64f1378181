"""Grabs compared "up to ties", for the differential harness (``bench/face/swh_diff.py``).

swh-scheduler's grab queries order by the policy's key with no tie-breaker and a ``LIMIT`` (its
``grab_next_visits`` in ``swh/scheduler/backend.py``; ``swh_scheduler_peek_*``/``grab_*`` in its SQL
functions, by ``next_run``), so among rows of equal key its choice is arbitrary. Each answer is
therefore judged against the reference's state read just before the grab: every row returned must
pass the grab's filters (the policy's, the cooldowns', the lister's), and the sequence of the rows'
keys must be the reference's. The keys and filters below are restated from swh-scheduler's query
(not its code): a listing's left join with its visit stats, where a missing stats row passes every
``IS NULL OR …`` filter and fails every ``… IS NOT NULL`` one, and ``GREATEST`` ignores NULLs.

Runs in the peer's interpreter, on plain data (``swh_diff_compare.Side.plain``): instants are UTC
ISO strings of one width (their text order is their time order), stamped ones ``@<index>``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

Row = dict[str, Any]
Identity = tuple[str, str, str]  # (lister label, url, visit type)


def when(value: Any) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value["$dt"] if isinstance(value, dict) else value)


def span(value: Any) -> timedelta | None:
    return None if value is None else timedelta(seconds=value["$td"])


def stamp_order(value: str) -> int:
    """The order of a stamped instant: the index of the call that stamped it."""
    return int(value[1:]) if isinstance(value, str) and value.startswith("@") else -1


def identity(row: Row) -> Identity:
    return (row["lister_id"], row["url"], row["visit_type"])


def _lister_of(args: dict[str, Any], listers: dict[str, Row]) -> Row | None:
    if args.get("lister_uuid") is not None:
        return listers.get(args["lister_uuid"]["$lister_str"])
    if args.get("lister_name") is not None and args.get("lister_instance_name") is not None:
        return listers.get(f"{args['lister_name']}/{args['lister_instance_name']}")
    return None


def visit_filter(args: dict[str, Any], listers: dict[str, Row]):
    """The grab's WHERE, as a function of a (listing, stats) row; None when swh's grab must fail."""
    ts = when(args["timestamp"])
    policy = args["policy"]
    cooldowns = {k: span(args.get(k)) for k in ("absolute_cooldown", "scheduled_cooldown", "failed_cooldown",
                                                 "not_found_cooldown")}
    lister = None
    if policy == "first_visits_after_listing":
        lister = _lister_of(args, listers)
        if lister is None:
            return None
    finished = when(lister.get("last_listing_finished_at")) if lister else None

    def passes(row: Row) -> bool:
        stats = row.get("stats") or {}
        scheduled, visit = when(stats.get("last_scheduled")), when(stats.get("last_visit"))
        status = stats.get("last_visit_status")
        if row["enabled"] != args["enabled"] or row["visit_type"] != args["visit_type"]:
            return False
        if cooldowns["absolute_cooldown"] and scheduled is not None and not scheduled < ts - cooldowns["absolute_cooldown"]:
            return False
        if cooldowns["scheduled_cooldown"] and scheduled is not None:
            bound = ts - cooldowns["scheduled_cooldown"]
            if not scheduled < (max(bound, visit) if visit is not None else bound):
                return False
        for key, bad in (("failed_cooldown", "failed"), ("not_found_cooldown", "not_found")):
            if cooldowns[key] and status == bad and (visit is None or not visit < ts - cooldowns[key]):
                return False
        update, snapshot = when(row.get("last_update")), stats.get("last_snapshot")
        if policy == "stop_after_success" and status == "successful":
            return False
        if policy == "never_visited_oldest_update_first" and (snapshot is not None or update is None):
            return False
        if policy == "already_visited_order_by_lag":
            successful = when(stats.get("last_successful"))
            if snapshot is None or update is None or successful is None or not update > successful:
                return False
        if policy == "origins_without_last_update" and update is not None:
            return False
        if policy == "first_visits_after_listing":
            if not (scheduled is None or (finished is not None and scheduled < finished)):
                return False
        label = row["lister_id"]
        name, _, instance = label.partition("/")
        if args.get("lister_uuid") is not None and label != args["lister_uuid"]["$lister_str"]:
            return False
        if args.get("lister_name") is not None and name != args["lister_name"]:
            return False
        if args.get("lister_instance_name") and instance != args["lister_instance_name"]:
            return False
        return True

    return passes


def visit_key(row: Row, policy: str) -> tuple:
    """The policy's ORDER BY key of a (listing, stats) row, ascending."""
    stats = row.get("stats") or {}
    scheduled = stats.get("last_scheduled")
    update = row.get("last_update")
    first_seen = stamp_order(row.get("first_seen"))
    if policy in ("oldest_scheduled_first", "first_visits_after_listing"):
        return (scheduled is not None, scheduled or "")
    if policy == "stop_after_success":
        return (update is None, update or "", first_seen)
    if policy == "never_visited_oldest_update_first":
        return (update or "",)
    if policy == "already_visited_order_by_lag":
        lag = when(update) - when(stats["last_successful"])
        return (-(lag // timedelta(microseconds=1)),)
    position = stats.get("next_visit_queue_position")
    return (position is not None, position or 0, first_seen)


def state_rows(listings: list[Row], stats: list[Row]) -> dict[Identity, Row]:
    by_key = {(s["url"], s["visit_type"]): s for s in stats}
    return {identity(o): {**o, "stats": by_key.get((o["url"], o["visit_type"]))} for o in listings}


def judge(rows: dict[Any, Row], passes, key, answers: dict[str, Any], count: int | None,
          ident=identity) -> dict[str, Any]:
    """Each server's grab against the reference's state ``rows``.

    Returns ``expected`` (the keys the state gives), and per server ``keys``, ``ids`` and ``bad``
    (what is wrong with its answer on its own: a row unknown, failing the filters, twice)."""
    eligible = sorted(key(r) for r in rows.values() if passes(r))
    expected = eligible if count is None else eligible[:count]
    out: dict[str, Any] = {"expected": expected}
    for name, answer in answers.items():
        if not isinstance(answer, list):
            out[name] = {"keys": None, "ids": None, "bad": ["raised"]}
            continue
        bad, keys, ids = [], [], []
        for returned in answer:
            i = ident(returned)
            ids.append(i)
            row = rows.get(i)
            if row is None:
                bad.append(f"{i} is not in the reference's state")
                continue
            if not passes(row):
                bad.append(f"{i} fails the grab's filters")
                keys.append(("fails the filters",))  # its key may not even be defined (a lag without a visit)
                continue
            keys.append(key(row))
        if len(set(ids)) != len(ids):
            bad.append("a row returned twice")
        out[name] = {"keys": keys, "ids": ids, "bad": bad}
    return out


def task_filter(args: dict[str, Any], priority: bool):
    ts = when(args["timestamp"])

    def passes(task: Row) -> bool:
        return (task["type"] == args["task_type"] and task["status"] == "next_run_not_scheduled"
                and (task["priority"] is not None) == priority and when(task["next_run"]) <= ts)

    return passes


def task_key(task: Row) -> tuple:
    return (task["next_run"],)
