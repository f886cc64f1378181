"""Each operation of the differential harness sent to every server and judged (``bench/face/swh_diff.py``).

Runs in the peer's interpreter (standard library and swh's packages only). :class:`Judge` sends one
operation to the reference (swh-scheduler's own server) then to each face, pairs the ids each server
allocated (:meth:`Judge.learn_ids`), turns the answers into plain data and compares each face's with
the reference's, by what swh-scheduler's SQL defines of its answer:

- as is, where its order is defined (``ORDER BY``, or the caller's order);
- as a multiset where its SQL has no ``ORDER BY`` (``get_tasks``, ``search_tasks``, ``get_task_runs``,
  ``get_listers``, ``get_task_types``, ``origin_visit_stats_get``, metrics, …); with a ``limit`` and
  no order, by size and as a part of the whole answer (asked again without the limit);
- a write answered by ``None`` together with what it left, read back on every server (``READ_BACK``);
- grabs up to ties (``bench/face/swh_diff_grabs.py``), the servers' states reconciled when they picked
  other rows among equal keys: each is given the others' picks (``last_scheduled``, or the status a
  task grab sets);
- ``get_listed_origins`` walked to its last page: ``ORDER BY lister_id, url``, so with a lister page by
  page (the rows of one URL in any order, a full page's last URL possibly cut), without one in a single
  page (the listers' UUIDs, hence the pages, differ between servers);
- errors: both must raise; the same type and HTTP status, or a named deliberate difference.

A difference is explained by a deliberate one (``DELIBERATE``; after some of them the states are
reconciled, as after a tie), or unexplained and kept with its reproduction. After a difference on a write
the whole states are compared; what then differs is marked (``bench/face/swh_diff_scope.py``) and the later
differences it reaches are counted apart, as following from it.
"""

from __future__ import annotations

import json
from typing import Any

from bench.face import swh_diff_grabs as grabs
from bench.face.swh_diff_compare import (
    Difference,
    Side,
    as_multiset,
    canonical,
    dedup_extras,
    differences,
    explain,
    identity_of,
    instant,
    is_error,
    kind_of,
    made_anew,
    task_changes,
    without_grab_runs,
)
from bench.face.swh_diff_reconcile import Reconciler
from bench.face.swh_diff_scope import meets, op_scope, row_keys

MULTISET = {"get_listers", "get_listers_by_id", "get_task_types", "get_tasks", "search_tasks", "get_task_runs",
            "origin_visit_stats_get", "get_visit_types_for_listed_origins", "update_metrics", "get_metrics",
            "create_tasks"}
TASK_GRABS = {"peek_ready_tasks": False, "grab_ready_tasks": False, "peek_ready_priority_tasks": True,
              "grab_ready_priority_tasks": True}
MAX_KEPT = 6000  # characters of an answer kept in the report


READS = {"get_lister", "get_listers", "get_listers_by_id", "get_visit_types_for_listed_origins", "get_listed_origins",
         "origin_visit_stats_get", "visit_scheduler_queue_position_get", "get_metrics", "get_task_type",
         "get_task_types", "search_tasks", "get_tasks", "peek_ready_tasks", "peek_ready_priority_tasks",
         "get_task_runs", "filter_task_to_archive"}


#: writes answered by None: what each left is read back and compared with the answer
READ_BACK = {
    "origin_visit_stats_upsert": lambda a: ("origin_visit_stats_get", {"ids": [[s["url"], s["visit_type"]]
                                                                            for s in a["origin_visit_stats"]]}),
    "visit_scheduler_queue_position_set": lambda a: ("visit_scheduler_queue_position_get", {}),
    "mass_schedule_task_runs": lambda a: ("get_task_runs", {"task_ids": [r["task"] for r in a["task_runs"]],
                                                            "limit": None}),
    "set_status_tasks": lambda a: ("get_tasks", {"task_ids": a["task_ids"]}),
    "disable_tasks": lambda a: ("get_tasks", {"task_ids": a["task_ids"]}),
    "delete_archived_tasks": lambda a: ("get_task_runs", {"task_ids": [e["task_id"] for e in a["task_ids"]],
                                                          "limit": None}),
    "create_task_type": lambda a: ("get_task_type", {"task_type_name": a["task_type"]["type"]}),
}


def read_back_view(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer with what was read back, its lists as multisets."""
    back = answer["read_back"]
    if isinstance(back, dict) and not is_error(back):
        back = {k: as_multiset(v) for k, v in back.items()}
    return {**answer, "read_back": as_multiset(back)}


def writes(op: Any) -> bool:
    return op.name not in READS and not (op.name == "grab_next_visits" and op.args.get("dry_run"))


def models_in(value: Any, kind: str) -> list[Any]:
    """The swh model objects of class ``kind`` in an answer."""
    if type(value).__name__ == kind:
        return [value]
    if isinstance(value, (list, tuple)):
        return [m for v in value for m in models_in(v, kind)]
    if type(value).__name__ == "PagedResult":
        return models_in(value.results, kind)
    return []


def kept(value: Any) -> Any:
    text = canonical(value)
    return value if len(text) <= MAX_KEPT else text[:MAX_KEPT] + "…"


class Judge(Reconciler):
    def __init__(self, run: Any, seed: int, model: Any) -> None:
        self.run, self.seed, self.model = run, seed, model
        self.peer, self.faces = run.peer, run.faces
        self.servers = run.servers
        self.labels = {"tasks": 0, "runs": 0}
        self.grab_runs: set[str] = set()  # the faces whose last state read had runs their grabs recorded
        self.whole: dict[str, Any] = {}  # the whole answer to an operation with a limit, read once for all faces
        self.tainted: dict[str, dict[str, str]] = {f.name: {} for f in self.faces}  # scope key → its first cause

    # -- ids -------------------------------------------------------------------------
    def pair(self, table: str, prefix: str, items: dict[str, list[tuple[int, Any]]]) -> None:
        """Label the reference's new ids in order; give each face's unpaired id the label of the reference's
        item with the same key (what the caller sent), in id order."""
        peer_table = getattr(self.peer.side, table)
        by_key: dict[str, list[str]] = {}
        for ident, key in sorted(items.get(self.peer.name, []), key=lambda x: x[0]):
            if ident not in peer_table:
                self.labels[table] += 1
                peer_table[ident] = f"{prefix}{self.labels[table]}"
            by_key.setdefault(canonical(key), []).append(peer_table[ident])
        for face in self.faces:
            face_table = getattr(face.side, table)
            used = set(face_table.values())
            for ident, key in sorted(items.get(face.name, []), key=lambda x: x[0]):
                if ident in face_table:
                    continue
                for label in by_key.get(canonical(key), []):
                    if label not in used:
                        face_table[ident] = label
                        used.add(label)
                        break

    def learn_ids(self, answers: dict[str, Any]) -> None:
        tasks, runs = {}, {}
        for server in self.servers:
            answer = answers.get(server.name)
            for lister in models_in(answer, "Lister"):
                server.side.see_lister(lister)
            for origin in models_in(answer, "ListedOrigin"):
                label = server.side.lister_label(origin.lister_id)
                server.side.listing_seen[(label, origin.url, origin.visit_type)] = origin.last_seen
            tasks[server.name] = [(t.id, [t.type, canonical(t.arguments.args), canonical(t.arguments.kwargs),
                                          t.policy, t.priority, instant(t.next_run)])
                                  for t in models_in(answer, "Task") if t.id is not None]
        self.pair("tasks", "t", tasks)
        for server in self.servers:
            runs[server.name] = [(r.id, [server.side.task_label(r.task), r.backend_id])
                                 for r in models_in(answers.get(server.name), "TaskRun") if r.id is not None]
        self.pair("runs", "r", runs)

    # -- one operation ----------------------------------------------------------------
    def call_all(self, index: int, op: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        answers, plain = {}, {}
        errors = {}
        for server in self.servers:
            answers[server.name], errors[server.name] = server.call(index, op)
        self.learn_ids(answers)
        for server in self.servers:
            plain[server.name] = errors[server.name] or self.plain(server.side, op.name, answers[server.name])
        return answers, plain

    @staticmethod
    def plain(side: Side, name: str, answer: Any) -> Any:
        if name == "filter_task_to_archive":
            return [side.archive_page(page) for page in answer]
        return side.plain(answer)

    def step(self, index: int, op: Any) -> None:
        pre = None
        if op.name == "grab_next_visits":
            pre = self.visit_state(index)
        elif op.name in TASK_GRABS:
            pre = self.task_state(index, op.args["task_type"])
        run_tasks = self.run_tasks(op)
        before = self.tasks_before(index, run_tasks)
        answers, plain = self.call_all(index, op)
        if (op.name in READ_BACK or run_tasks) and not is_error(plain[self.peer.name]):
            # an answer of None: what the write left, read back; a start or an end: its runs and their tasks
            if run_tasks:
                runs = self.aux(index, "get_task_runs", {"task_ids": run_tasks, "limit": None})
                tasks = self.aux(index, "get_tasks", {"task_ids": run_tasks})
                back = {name: {"runs": runs[name], "tasks": tasks[name]} for name in runs}
            else:
                back = self.aux(index, *READ_BACK[op.name](op.args))
            shared = len(run_tasks) > 1
            plain = {name: value if is_error(value) else {"answer": self.projected(op, value) if shared else value,
                                                          "read_back": back[name]}
                     for name, value in plain.items()}
        if self.run.trace:
            self.run.trace.write(json.dumps({"seed": self.seed, "index": index, **op.as_json(), "answers": plain},
                                            ensure_ascii=False, default=str) + "\n")
        peer = plain[self.peer.name]
        self.model.learn(op, peer, is_error(peer))
        ties, differ, kept_seen, extras, moved = False, False, None, set(), None
        anew: dict[str, list[dict[str, Any]]] = {}
        for face in self.faces:
            ours = plain[face.name]
            outcome, where = self.compare(index, op, peer, ours, pre, face)
            ties = ties or outcome == "tie"
            # a write answered otherwise may have left another state (not when both refused it)
            differ = differ or (outcome == "different" and not (is_error(peer) and is_error(ours)))
            settled = self.settle(face.name, index, op, peer, ours, where, outcome, context={"before": before})
            if settled == "last-seen-kept" and not kept_seen:
                kept_seen = face
            if settled in ("settled-task-stays", "task-rules-after-run") and not moved:
                moved = task_changes(Difference(op.name, op.args, peer, ours, [], {"before": before}))
            if settled == "task-dedup":
                extras |= set(dedup_extras(Difference(op.name, op.args, peer, ours, [])) or [])
                anew[face.name] = made_anew(Difference(op.name, op.args, peer, ours, []))
        if ties:
            self.reconcile(index, op, plain)
        if kept_seen:
            self.reconcile_last_seen(op, kept_seen)
        if extras:
            self.reconcile_dedup(sorted(extras))
        if any(anew.values()):
            self.reconcile_made_anew(anew)
        if moved:
            self.reconcile_tasks(moved)
        if op.name == "record_listed_origins":
            self.record_order(index, op, plain)
        if differ and writes(op):
            self.check_state(index, op.name)
        elif any(self.tainted.values()) and index % 15 == 14:
            self.check_state(index, "a later check")

    def run_tasks(self, op: Any) -> list[dict[str, str]]:
        """For a start or an end: the tasks of the runs of its executor id (several runs may share one: swh's
        backend updates them all and answers the first its cursor gives)."""
        run = self.model.runs.get(op.args.get("backend_id")) if op.name in ("start_task_run", "end_task_run") else None
        return [{"$task": t} for t in sorted(set(run.get("tasks", [run["task"]])))] if run else []

    def tasks_before(self, index: int, run_tasks: list[dict[str, str]]) -> dict[str, Any]:
        """The reference's tasks before a start or an end (what a deliberate difference is judged against)."""
        if not run_tasks:
            return {}
        tasks, _ = self.peer.call(index, _op("get_tasks", {"task_ids": [self.peer.value(t) for t in run_tasks]}))
        return {t["id"]: t for t in self.peer.side.plain(tasks or [])}

    @staticmethod
    def projected(op: Any, answer: Any) -> Any:
        """What a start or end answers that does not depend on which of the runs it is."""
        if not isinstance(answer, dict):
            return answer
        return {k: answer.get(k) for k in ("backend_id", "status", "started" if op.name == "start_task_run" else "ended")}

    def record_order(self, index: int, op: Any, plain: dict[str, Any]) -> None:
        """``record_listed_origins`` answers the listings in the order sent (a listing sent twice at its first
        place): judged apart from their content, as an operation of its own."""
        peer = plain[self.peer.name]
        for face in self.faces:
            ours = plain[face.name]
            if not isinstance(peer, list) or not isinstance(ours, list):
                continue
            order = [[r["url"], r["visit_type"]] for r in peer], [[r["url"], r["visit_type"]] for r in ours]
            if sorted(map(canonical, order[0])) != sorted(map(canonical, order[1])):
                continue  # a difference of content, judged with the operation
            where = [] if order[0] == order[1] else ["order: the listings answered in another order than sent"]
            self.settle(face.name, index, _op("record_listed_origins:order", op.args), order[0], order[1], where,
                        "different" if where else "equal")

    def settle(self, face: str, index: int, op: Any, peer: Any, ours: Any, where: list[str] | None,
               outcome: str, after: str | None = None, context: dict[str, Any] | None = None) -> str:
        """Count one comparison: equal, a tie reconciled, a named deliberate difference, or unexplained."""
        if outcome == "equal":
            self.run.tally(face, op.name, "equal")
            return outcome
        if outcome == "tie":
            self.run.tally(face, op.name, "tie_reconciled")
            return outcome
        if outcome.startswith("deliberate:"):  # recognized by the comparison itself (on a part of the answer)
            self.run.tally(face, op.name, outcome.split(":", 1)[1])
            return outcome.split(":", 1)[1]
        d = Difference(op.name, op.args, peer, ours, where or [], context or {})
        name = explain(d)
        record = {"store": face, "seed": self.seed, "index": index, "op": op.name, "args": op.args,
                  "where": d.where, "peer": kept(peer), "ours": kept(ours), "kind": kind_of(d)}
        if name:
            self.run.tally(face, op.name, name)
            self.run.deliberate_seen.append({**record, "deliberate": name})
        elif (cause := after if after is not None else meets(op_scope(op, self.model), self.tainted[face])):
            self.run.tally(face, op.name, "after_divergence")
            self.run.unexplained.append({**record, "after": cause})
        else:
            self.run.tally(face, op.name, "unexplained")
            self.run.unexplained.append(record)
        return name or "unexplained"

    def aux(self, index: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """A read on every server outside the drawn operations (to pair ids or to read a state)."""
        from bench.face.swh_diff_ops import Op

        _, plain = self.call_all(index, Op(name, args))
        return plain

    # -- comparing ------------------------------------------------------------------
    def compare(self, index: int, op: Any, peer: Any, ours: Any, pre: Any, face: Any) -> tuple[str, list[str] | None]:
        if is_error(peer) or is_error(ours):
            if is_error(peer) and is_error(ours) and (peer["error"], peer["status"]) == (ours["error"], ours["status"]):
                return "equal", None
            if is_error(peer) and is_error(ours) and peer["status"] == ours["status"] and peer["status"] != 400:
                return "equal", None  # both crashed, each in its own words
            return "different", [f"error: {peer.get('error') if is_error(peer) else 'answered'} ≠ "
                                 f"{ours.get('error') if is_error(ours) else 'answered'}"]
        name = op.name
        if name == "grab_next_visits":
            return self.compare_visit_grab(op, peer, ours, pre, face)
        if name in TASK_GRABS:
            return self.compare_task_grab(op, peer, ours, pre, face)
        if name in ("search_tasks", "get_task_runs") and op.args.get("limit"):
            return self.compare_limited(index, op, peer, ours, face)
        if name == "get_listed_origins" and op.args.get("lister_id") is None:  # one page: the listers' UUIDs differ
            peer = as_multiset([r for page in peer for r in page["results"]])
            ours = as_multiset([r for page in ours for r in page["results"]])
        elif name == "get_listed_origins":
            peer, ours = self.listed_view(peer), self.listed_view(ours)
        elif name == "filter_task_to_archive":
            peer, ours = self.archive_view(peer), self.archive_view(ours)
        elif name in MULTISET:
            peer, ours = as_multiset(peer), as_multiset(ours)
        elif isinstance(peer, dict) and "read_back" in peer and isinstance(ours, dict) and "read_back" in ours:
            peer, ours = read_back_view(peer), read_back_view(ours)
        elif name == "record_listed_origins":  # its order is judged apart (Judge.record_order)
            peer, ours = as_multiset(peer), as_multiset(ours)
        where = differences(peer, ours)
        return ("equal", None) if not where else ("different", where)

    @staticmethod
    def listed_view(pages: list[Any]) -> list[Any]:
        """A walk of ``get_listed_origins`` pages as swh's query defines it: ``ORDER BY lister_id, url``, so
        the rows of one lister and URL (several visit types) come in any order, and a full page may end
        within such a group (the next page starts after the group: swh's token is (lister, url))."""
        view = []
        for page in pages:
            rows, token = page["results"], page["next_page_token"]
            last = (rows[-1]["lister_id"], rows[-1]["url"]) if rows and token is not None else None
            whole = [r for r in rows if (r["lister_id"], r["url"]) != last]
            view.append({"keys": [[r["lister_id"], r["url"]] for r in rows], "next_page_token": token,
                         "rows": as_multiset(whole)})
        return view

    @staticmethod
    def archive_view(pages: list[Any]) -> dict[str, Any]:
        """A walk of ``filter_task_to_archive`` as swh's function defines it: ``ORDER BY tr.task, tr.started`` with a
        limit, so the runs of one task started alike come in any order and a page may end among them; the next
        page starts again at the first run of the task after the last answered (a run may come twice)."""
        view: dict[str, Any] = {"pages": [], "runs": set()}
        for page in pages:
            rows = page.get("tasks", [])
            view["pages"].append({"keys": [[r.get("task_id"), r.get("started")] for r in rows],
                                  "next_page_token": page.get("next_page_token"),
                                  **{k: v for k, v in page.items() if k not in ("tasks", "next_page_token")}})
            view["runs"].update(canonical(r) for r in rows)
        view["runs"] = [json.loads(r) for r in sorted(view["runs"])]
        return view

    def compare_limited(self, index: int, op: Any, peer: Any, ours: Any, face: Any) -> tuple[str, list[str] | None]:
        """No ORDER BY and a limit: the same size, each answer a part of its server's whole answer."""
        if self.whole.get("index") != index:
            self.whole = {"index": index, **self.aux(index, op.name, {**op.args, "limit": None})}
        full_peer, full_ours = self.whole[self.peer.name], self.whole[face.name]
        where = differences(as_multiset(full_peer), as_multiset(full_ours), ".whole")
        deliberate = None
        if where and not is_error(full_ours):
            whole = Difference(op.name, op.args, full_peer, full_ours, where)
            deliberate = explain(whole)
            if deliberate == "grab-records-run":  # judged without the face's runs awaiting their executor
                where = differences(as_multiset(full_peer), as_multiset(without_grab_runs(full_ours)), ".whole")
        if len(peer) != len(ours):
            where.append(f"size: {len(peer)} ≠ {len(ours)}")
        pool = [canonical(x) for x in full_ours] if isinstance(full_ours, list) else []
        for row in ours:
            if canonical(row) not in pool:
                where.append(f"{canonical(row)[:200]} is not in the face's whole answer")
                break
            pool.remove(canonical(row))
        if deliberate and not where:
            return f"deliberate:{deliberate}", None
        return ("equal", None) if not where else ("different", where)

    # -- grabs ------------------------------------------------------------------------
    def visit_state(self, index: int) -> dict[str, Any]:
        """The reference's listings, their stats and its listers, read before a grab."""
        peer = self.peer
        listings = []
        pages, error = peer.call(index, _op("get_listed_origins", {"enabled": None, "limit": 1000}))
        for page in pages or []:
            listings.extend(peer.side.plain(page.results))
        keys = sorted({(o["url"], o["visit_type"]) for o in listings})
        stats, _ = peer.call(index, _op("origin_visit_stats_get", {"ids": keys})) if keys else ([], None)
        listers, _ = peer.call(index, _op("get_listers", {}))
        for lister in listers or []:
            peer.side.see_lister(lister)
        return {"rows": grabs.state_rows(listings, peer.side.plain(stats or [])),
                "listers": {f"{x.name}/{x.instance_name}": peer.side.plain(x) for x in listers or []}}

    def task_state(self, index: int, task_type: str) -> dict[str, Any]:
        answer, _ = self.peer.call(index, _op("search_tasks", {"task_type": task_type}))
        self.learn_ids({self.peer.name: answer})
        return {t["id"]: t for t in self.peer.side.plain(answer or [])}

    def compare_visit_grab(self, op: Any, peer: Any, ours: Any, pre: Any, face: Any) -> tuple[str, list[str] | None]:
        a = op.args
        passes = grabs.visit_filter(a, pre["listers"])
        if passes is None:
            return "different", ["the reference answered a grab it must refuse (its lister is unknown)"]
        judged = grabs.judge(pre["rows"], passes, lambda r: grabs.visit_key(r, a["policy"]),
                             {"peer": peer, "ours": ours}, a["count"])
        return self._judged(op, judged, peer, ours, pre["rows"], grabs.identity)

    def compare_task_grab(self, op: Any, peer: Any, ours: Any, pre: Any, face: Any) -> tuple[str, list[str] | None]:
        passes = grabs.task_filter(op.args, TASK_GRABS[op.name])
        judged = grabs.judge(pre, passes, grabs.task_key, {"peer": peer, "ours": ours}, op.args["num_tasks"],
                             ident=lambda t: t["id"])
        rows = pre
        if op.name.startswith("grab"):  # answered after the grab: as the state was, with the grab's status
            rows = {k: {**v, "status": "next_run_scheduled"} for k, v in pre.items()}
            # and in no order: swh's grab is an UPDATE … FROM (the peek) RETURNING, in the update's order
            judged["expected"] = sorted(judged["expected"])
            for side in ("peer", "ours"):
                if judged[side]["keys"] is not None:
                    judged[side]["keys"] = sorted(judged[side]["keys"])
        return self._judged(op, judged, peer, ours, rows, lambda t: t["id"])

    def _judged(self, op: Any, judged: dict[str, Any], peer: Any, ours: Any, rows: dict[Any, Any],
                ident) -> tuple[str, list[str] | None]:
        p, o = judged["peer"], judged["ours"]
        if op.args.get("tablesample"):  # a random share of swh's pages: its answer is no model's
            return "different", [f"a sampled grab: swh answered {len(peer)}, the face {len(ours)}"]
        if p["bad"] or p["keys"] != judged["expected"]:
            self.run.notes.append(f"seed {self.seed} {op.name} {json.dumps(op.args, ensure_ascii=True)[:300]}: the "
                                  f"reference's answer is not the harness's model of its query: {p['bad']} "
                                  f"keys {p['keys']} expected {judged['expected']}")
        where = list(o["bad"])
        if o["keys"] != p["keys"]:
            where.append(f"keys: {canonical(p['keys'])[:300]} ≠ {canonical(o['keys'])[:300]}")
        if not where:  # rows as the state has them (a grab answers each row as it was, or as the grab left it)
            for row in ours:
                expected = {k: v for k, v in rows[ident(row)].items() if k != "stats"}
                where += differences(expected, row, f"[{ident(row)}]")
        if where:
            return "different", where
        if sorted(map(canonical, p["ids"])) == sorted(map(canonical, o["ids"])):
            return "equal", None
        return "tie", None

    # -- the whole state -------------------------------------------------------------
    def state(self, index: int) -> dict[str, dict[str, tuple[Any, Any, list[str]]]]:
        """Every server's whole state, read and compared section by section: face → section → (swh's, the
        face's, where they differ)."""
        reads = {
            "listers": ("get_listers", {}),
            "task_types": ("get_task_types", {}),
            "listed_origins": ("get_listed_origins", {"enabled": None, "limit": 1000}),
            "queue_positions": ("visit_scheduler_queue_position_get", {}),
            "metrics": ("get_metrics", {}),
            "tasks": ("search_tasks", {}),
        }
        keys = sorted(self.model.stats | {(u, v) for (_l, u, v) in self.model.listings})
        reads["visit_stats"] = ("origin_visit_stats_get", {"ids": [list(k) for k in keys]})
        states = {name: self.aux(index, *read) for name, read in reads.items()}
        tasks = states["tasks"].get(self.peer.name)
        labels = sorted({t["id"] for t in tasks}) if isinstance(tasks, list) else []
        states["task_runs"] = self.aux(index, "get_task_runs", {"task_ids": [{"$task": t} for t in labels]})
        out: dict[str, dict[str, tuple[Any, Any, list[str]]]] = {}
        self.grab_runs: set[str] = set()
        for face in self.faces:
            out[face.name] = {}
            for section, plain in states.items():
                peer, ours = plain[self.peer.name], plain[face.name]
                if section == "listed_origins" and not is_error(peer) and not is_error(ours):
                    peer = [r for page in peer for r in page["results"]]
                    ours = [r for page in ours for r in page["results"]]
                if isinstance(peer, list) and isinstance(ours, list):
                    peer, ours = as_multiset(peer), as_multiset(ours)
                if section == "task_runs" and isinstance(ours, list) and without_grab_runs(ours) != ours:
                    # the runs the face's grabs recorded (deliberate) are judged apart: see final_state
                    self.grab_runs.add(face.name)
                    ours = without_grab_runs(ours)
                out[face.name][section] = (peer, ours, differences(peer, ours))
        return out

    def differing_keys(self, section: str, peer: Any, ours: Any, types: dict[str, str]) -> set[str]:
        """The scope keys of the rows of a state section that differ (on one side only, or in content); the runs
        a face's grab recorded (a deliberate difference) left out. ``types``: each task's type, by label."""
        if isinstance(peer, dict) and isinstance(ours, dict):  # queue positions
            return {"vt:" + k for k in set(peer) | set(ours) if peer.get(k) != ours.get(k)}
        if not isinstance(peer, list) or not isinstance(ours, list):
            return row_keys(section, None, self.model)
        rows: dict[str, list[list[str]]] = {}
        for side, values in enumerate((peer, ours)):
            for row in values:
                rows.setdefault(identity_of(row) or canonical(row), [[], []])[side].append(canonical(row))
        keys: set[str] = set()
        for pair in rows.values():
            if sorted(pair[0]) != sorted(pair[1]):
                for row in (json.loads(r) for r in pair[0] + pair[1]):
                    if section == "task_runs" and row.get("task") in types:
                        keys.add("type:" + types[row["task"]])
                    else:
                        keys |= row_keys(section, row, self.model)
        return keys

    @staticmethod
    def task_types_of(sections: dict[str, tuple[Any, Any, list[str]]]) -> dict[str, str]:
        """Each task's type by label, from both sides of a state's tasks."""
        peer, ours, _ = sections["tasks"]
        return {t["id"]: t["type"] for side in (peer, ours) if isinstance(side, list) for t in side}

    def check_state(self, index: int, why: str) -> None:
        """Mark what of a face's state now differs from the reference's (its later differences there follow
        from it), or clear the marks once alike again."""
        for face, sections in self.state(index).items():
            marks: dict[str, str] = {}
            types = self.task_types_of(sections)
            for section, (peer, ours, where) in sections.items():
                if not where or explain(Difference(f"state:{section}", {}, peer, ours, where)):
                    continue
                cause = f"seed {self.seed} op {index} ({why}): {section} differs ({'; '.join(where[:2])[:300]})"
                for key in self.differing_keys(section, peer, ours, types):
                    marks[key] = self.tainted[face].get(key) or cause
            self.tainted[face] = marks

    def final_state(self, index: int) -> None:
        for face, sections in self.state(index).items():
            types = self.task_types_of(sections)
            for section, (peer, ours, where) in sections.items():
                after = ""  # a difference of the state follows from earlier ones only if all its rows do
                if where:
                    keys = self.differing_keys(section, peer, ours, types)
                    causes = [meets({key}, self.tainted[face]) for key in keys]
                    after = causes[0] if causes and all(causes) else ""
                outcome = "different" if where else "equal"
                if section == "task_runs" and face in self.grab_runs and not where:
                    outcome = "deliberate:grab-records-run"
                self.settle(face, index, _op(f"state:{section}", {}), peer, ours, where, outcome, after)


def _op(name: str, args: dict[str, Any]) -> Any:
    from bench.face.swh_diff_ops import Op

    return Op(name, args)
