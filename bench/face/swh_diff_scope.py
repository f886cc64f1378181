"""What an operation of the differential harness reads or writes, to tell a difference's first cause from its
consequences (``bench/face/swh_diff.py``).

Runs in the peer's interpreter (standard library only). Once a face's state differs from the reference's
(after a difference on a write), the harness marks what differs by *scope keys*: ``vt:<visit type>`` and
``lister:<label>`` for the origins' side (listings, visit stats, metrics, queue positions, listers),
``type:<task type>`` for the tasks' side (task types, tasks, runs). A later difference on an operation whose
scope meets a marked key is counted apart, as following from the earlier one; elsewhere the run goes on
being compared as before. ``<prefix>:*`` in a scope stands for every key of that prefix.
"""

from __future__ import annotations

from typing import Any

TASK_OPS = ("task", "schedule_task_run", "mass_schedule_task_runs", "filter_task_to_archive", "delete_archived_tasks")


def _types_of(labels: Any, model: Any) -> set[str]:
    out = set()
    for ref in labels if isinstance(labels, list) else [labels]:
        if isinstance(ref, dict) and ref.get("$task") in model.tasks:
            out.add("type:" + model.tasks[ref["$task"]]["type"])
    return out


def op_scope(op: Any, model: Any) -> set[str]:
    """The scope keys an operation's answer depends on."""
    name, a = op.name, op.args
    if name in ("post", "raw"):
        return {"type:*"} if a.get("endpoint", "").startswith("task") else {"vt:*", "lister:*"}
    if name in ("get_or_create_lister", "get_lister"):
        return {f"lister:{a['name']}/{a.get('instance_name') or ''}"}
    if name in ("update_lister", "get_visit_types_for_listed_origins"):
        return {"lister:" + a["lister"]["$lister_obj"]}
    if name in ("get_listers", "get_listers_by_id"):
        return {"lister:*"}
    if name.startswith("record_listed_origins"):
        return {f"vt:{o['visit_type']}" for o in a["listed_origins"]} | {
            "lister:" + o["lister_id"]["$lister"] for o in a["listed_origins"]}
    if name == "get_listed_origins":
        return {"lister:" + a["lister_id"]["$lister"]} if a.get("lister_id") else {"lister:*"}
    if name == "grab_next_visits":
        return {"vt:" + a["visit_type"]}
    if name == "origin_visit_stats_upsert":
        return {"vt:" + s["visit_type"] for s in a["origin_visit_stats"]}
    if name == "origin_visit_stats_get":
        return {"vt:" + i[1] for i in a["ids"]}
    if name == "visit_scheduler_queue_position_set":
        return {"vt:" + a["visit_type"]}
    if name in ("visit_scheduler_queue_position_get", "update_metrics", "get_metrics"):
        return {"vt:*", "lister:*"}
    if name in ("create_task_type", "get_task_type"):
        return {"type:" + (a["task_type"]["type"] if name == "create_task_type" else a["task_type_name"])}
    if name == "create_tasks":
        return {"type:" + t["type"] for t in a["tasks"]}
    if name in ("peek_ready_tasks", "grab_ready_tasks", "peek_ready_priority_tasks", "grab_ready_priority_tasks"):
        return {"type:" + a["task_type"]}
    if name == "search_tasks":
        wanted = a.get("task_type")
        if wanted:
            return {"type:" + t for t in (wanted if isinstance(wanted, list) else [wanted])}
        return {"type:*"}
    if name in ("get_tasks", "set_status_tasks", "disable_tasks", "get_task_runs"):
        return _types_of(a["task_ids"], model)
    if name == "schedule_task_run":
        return _types_of(a["task_id"], model)
    if name == "mass_schedule_task_runs":
        return _types_of([r["task"] for r in a["task_runs"]], model)
    if name in ("start_task_run", "end_task_run"):
        run = model.runs.get(a["backend_id"])
        return _types_of({"$task": run["task"]}, model) if run else set()
    if name == "delete_archived_tasks":
        return _types_of([e["task_id"] for e in a["task_ids"]], model)
    if name.startswith("state:") or name == "filter_task_to_archive":
        return {"type:*"} if name in ("filter_task_to_archive", "state:tasks", "state:task_runs",
                                      "state:task_types") else {"vt:*", "lister:*"}
    return {"type:*"} if any(part in name for part in TASK_OPS) else {"vt:*", "lister:*"}


def row_keys(section: str, row: Any, model: Any) -> set[str]:
    """The scope keys a row of the state (one that differs) marks."""
    if not isinstance(row, dict):
        return {"vt:*", "lister:*"} if section not in ("tasks", "task_runs", "task_types") else {"type:*"}
    if section in ("listed_origins", "visit_stats", "metrics"):
        keys = {"vt:" + str(row.get("visit_type"))}
        if "lister_id" in row:
            keys.add("lister:" + str(row["lister_id"]))
        return keys
    if section == "listers":
        return {f"lister:{row.get('name')}/{row.get('instance_name')}"}
    if section in ("tasks", "task_types"):
        return {"type:" + str(row.get("type"))}
    if section == "task_runs":
        task = model.tasks.get(row.get("task"))
        return {"type:" + task["type"]} if task else {"type:?"}  # a run of a task only the face has
    return {"vt:*", "lister:*"}


def meets(scope: set[str], marked: dict[str, str]) -> str | None:
    """The cause recorded for the first marked key ``scope`` meets, or None."""
    for key in sorted(scope):
        if key.endswith(":*"):
            for mark, cause in marked.items():
                if mark.startswith(key[:-1]):
                    return cause
        elif key in marked:
            return marked[key]
        elif key.split(":")[0] + ":*" in marked:
            return marked[key.split(":")[0] + ":*"]
    return None
