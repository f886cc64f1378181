"""The servers' states made alike again after a difference that is no bug, for the differential harness
(``bench/face/swh_diff.py``): after a grab that picked other rows among equal keys, and after the deliberate
differences that leave the states apart (``DELIBERATE`` of ``bench/face/swh_diff_compare.py``), so that the rest of
the run stays comparable.

Runs in the peer's interpreter (standard library, swh's packages and psycopg, which the peer's environment
has). A face is changed only through the protocol; a swh-scheduler database, where the protocol cannot say
it (a task's interval, a task made twice), through SQL.
"""

from __future__ import annotations

from typing import Any

from bench.face.swh_diff_compare import from_plain


class Reconciler:
    """What :class:`swh_diff_judge.Judge` does to reconcile; it has the servers, the model and the labels."""

    servers: list[Any]
    peer: Any
    model: Any

    def call_op(self, server: Any, index: int, name: str, args: dict[str, Any]) -> Any:
        from bench.face.swh_diff_ops import Op

        return server.call(index, Op(name, args))

    def reconcile(self, index: int, op: Any, plain: dict[str, Any]) -> None:
        """Give each server the rows the others grabbed among equal keys, so the run stays comparable."""
        if op.args.get("dry_run") or op.name.startswith("peek"):
            return
        if op.name == "grab_next_visits":
            picked = {name: {(r["url"], r["visit_type"]) for r in rows} for name, rows in plain.items()
                      if isinstance(rows, list)}
            union = set().union(*picked.values())
            for server in self.servers:
                missing = sorted(union - picked.get(server.name, set()))
                if not missing:
                    continue
                stats, _ = self.call_op(server, index, "origin_visit_stats_get", {"ids": [list(k) for k in missing]})
                have = {(s.url, s.visit_type): s for s in stats or []}
                ts = server.value(op.args["timestamp"])
                rows = []
                for url, visit_type in missing:
                    old = have.get((url, visit_type))
                    if old is None:
                        from swh.scheduler.model import OriginVisitStats

                        rows.append(OriginVisitStats(url=url, visit_type=visit_type, last_scheduled=ts))
                    else:
                        rows.append(old.evolve(last_scheduled=max(old.last_scheduled or ts, ts)))
                server.client.origin_visit_stats_upsert(rows)
        else:
            picked = {name: set(t["id"] for t in rows) for name, rows in plain.items() if isinstance(rows, list)}
            union = set().union(*picked.values())
            for server in self.servers:
                missing = sorted(union - picked.get(server.name, set()))
                if missing:
                    self.call_op(server, index, "set_status_tasks", {"task_ids": [{"$task": t} for t in missing],
                                                                     "status": "next_run_scheduled"})

    def reconcile_last_seen(self, op: Any, face: Any) -> None:
        """After a deliberate ``last-seen-kept``: every other server is given that face's ``last_seen`` (which
        it labels alike), so that the states stay comparable."""
        for server in self.servers:
            if server is face:
                continue
            rows = {}
            for sent in op.args["listed_origins"]:
                origin = server.value({**sent, "last_seen": None})
                key = (sent["lister_id"]["$lister"], origin.url, origin.visit_type)
                seen = face.side.listing_seen.get(key)
                if seen is not None:
                    rows[key] = origin.evolve(last_seen=seen)
            if rows:
                for origin in server.client.record_listed_origins(list(rows.values()), update_last_seen=False):
                    key = (server.side.lister_label(origin.lister_id), origin.url, origin.visit_type)
                    server.side.listing_seen[key] = origin.last_seen

    def reconcile_dedup(self, labels: list[str]) -> None:
        """After a deliberate ``task-dedup``: the tasks swh's store made twice from one batch are taken out of every
        swh-scheduler database (new, they have no runs), as if it had made them once."""
        import psycopg

        for server in self.servers:
            ids = [i for label, i in server.side.ids("task").items() if label in labels]
            if server.dsn and ids:
                with psycopg.connect(server.dsn, autocommit=True) as conn:
                    conn.execute("DELETE FROM task WHERE id = ANY(%s)", (ids,))
            for i in ids:
                del server.side.tasks[i]
        for label in labels:
            self.model.tasks.pop(label, None)

    def reconcile_made_anew(self, anew: dict[str, list[dict[str, Any]]]) -> None:
        """After a deliberate ``task-dedup`` the other way: the tasks a face made anew (a settled status, which
        swh's store deduplicated) are given to every swh-scheduler database too, through SQL, and each gets one
        label on every server (the faces made them in the same order)."""
        import json

        import psycopg

        first = next(tasks for tasks in anew.values() if tasks)
        labels = []
        for _task in first:
            self.labels["tasks"] += 1
            labels.append(f"t{self.labels['tasks']}")
        for server in self.servers:
            if server.name in anew:  # a face: its ids, in its answer's order
                for task, label in zip(anew[server.name], labels, strict=True):
                    server.side.tasks[int(str(task["id"]).split(":", 1)[1])] = label
            elif server.dsn:
                with psycopg.connect(server.dsn, autocommit=True) as conn:
                    for task, label in zip(first, labels, strict=True):
                        arguments = {"args": task["arguments"]["args"], "kwargs": task["arguments"]["kwargs"]}
                        [(ident,)] = conn.execute(
                            "INSERT INTO task (type, arguments, next_run, status, current_interval, policy, retries_left,"
                            " priority) VALUES (%s, %s::jsonb, %s, %s::task_status, %s, %s::task_policy, %s, %s::task_priority) RETURNING id",
                            (task["type"], json.dumps(arguments), from_plain(task["next_run"]), task["status"],
                             from_plain(task["current_interval"]), task["policy"], task["retries_left"],
                             task["priority"])).fetchall()
                        server.side.tasks[ident] = label
        for task, label in zip(first, labels, strict=True):
            self.model.tasks.setdefault(label, {"type": task["type"], "policy": task["policy"],
                                                "priority": task["priority"]})

    def reconcile_tasks(self, changes: list[tuple[str, Any, Any, Any]]) -> None:
        """After a deliberate difference on a task a run's end moved: every swh-scheduler database is given the
        face's task (its status, next run, interval and retries), so that the run stays comparable."""
        import psycopg

        for server in self.servers:
            ids = server.side.ids("task")
            if not server.dsn:
                continue
            with psycopg.connect(server.dsn, autocommit=True) as conn:
                for label, _swh, face, _before in changes:
                    if label in ids:
                        conn.execute("UPDATE task SET status = %s, next_run = %s, current_interval = %s, "
                                     "retries_left = %s WHERE id = %s",
                                     (face["status"], from_plain(face["next_run"]), from_plain(face["current_interval"]),
                                      face["retries_left"], ids[label]))
