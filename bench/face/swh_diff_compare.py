"""Answers as plain data, and their comparison, for the differential harness (``bench/face/swh_diff.py``).

Runs in the peer's interpreter (standard library and swh's packages only). Each server's answers are
turned into plain JSON data (:class:`Side.plain`) where what differs between servers by design is
replaced by labels the harness gives:

- a lister's UUID by its ``name/instance_name``; a task's and a task run's id by a label given in the
  order the reference (swh-scheduler's own server) made them, each face's own ids paired with the
  reference's by what the caller sent (:func:`pair`);
- an instant the server stamps itself (a lister's ``created``/``updated``, a listed origin's
  ``first_seen``/``last_seen``, an unstamped metrics ``last_update``, a run's time when none was given)
  by ``@<index>``, the operation during whose call it falls (each server's calls are timed).

:func:`differences` lists where two plain answers differ; :data:`DELIBERATE` names the differences
docs/reference/swh-compat.md states as the face's deliberate choices, each with the function that
recognises one. Anything else is unexplained.
"""

from __future__ import annotations

import bisect
import datetime
import enum
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

UTC = datetime.UTC
#: (model, field) the server stamps with its own clock
STAMPED = {("Lister", "created"), ("Lister", "updated"), ("ListedOrigin", "first_seen"),
           ("ListedOrigin", "last_seen")}
#: (model, field) stamped when the caller gave no time: labelled only when within a call
MAYBE_STAMPED = {("SchedulerMetrics", "last_update"), ("TaskRun", "scheduled"), ("TaskRun", "started"),
                 ("TaskRun", "ended")}
TOLERANCE_S = 0.02


def instant(value: datetime.datetime) -> str:
    if value.tzinfo is None:
        return "naive:" + value.isoformat(timespec="microseconds")
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def from_plain(value: Any) -> Any:
    """An instant or a duration as ``Side.plain`` writes it, back as a datetime or a timedelta."""
    if isinstance(value, str) and value.startswith("Δ") and value.endswith("µs"):
        return datetime.timedelta(microseconds=int(value[1:-2]))
    if isinstance(value, str) and len(value) >= 25 and value[4] == "-" and value[10] == "T":
        return datetime.datetime.fromisoformat(value)
    return value


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, default=str)


@dataclass
class Side:
    """One server as the harness sees it: its ids by label, and the windows of its calls."""

    name: str
    listers: dict[str, str] = field(default_factory=dict)  # uuid → label
    tasks: dict[int, str] = field(default_factory=dict)  # id → label
    runs: dict[int, str] = field(default_factory=dict)
    windows: list[tuple[float, float, int]] = field(default_factory=list)  # (start, end, op index)
    lister_objects: dict[str, Any] = field(default_factory=dict)  # label → the latest Lister answered
    lister_updated: dict[str, list[Any]] = field(default_factory=dict)  # label → every `updated` answered
    listing_seen: dict[tuple[str, str, str], Any] = field(default_factory=dict)  # listing → its last_seen answered

    def ids(self, kind: str) -> dict[str, Any]:
        table = {"lister": self.listers, "task": self.tasks, "run": self.runs}[kind]
        return {label: key for key, label in table.items()}

    def stamp(self, value: datetime.datetime, *, required: bool) -> str:
        """The label of the operation during whose calls ``value`` was stamped (the windows are every
        server's calls, in time order)."""
        t = value.timestamp()
        i = bisect.bisect_right(self.windows, t, key=lambda w: w[0])
        if i and t <= self.windows[i - 1][1]:
            return f"@{self.windows[i - 1][2]}"
        near = [(abs(t - w[1]), w[2]) for w in self.windows[max(0, i - 1):i]]
        near += [(abs(w[0] - t), w[2]) for w in self.windows[i:i + 1]]
        if near and min(near)[0] <= TOLERANCE_S:
            return f"@{min(near)[1]}"
        return ("unstamped:" if required else "") + instant(value)

    def see_lister(self, lister: Any) -> None:
        label = f"{lister.name}/{lister.instance_name}"
        if lister.id is not None:
            self.listers[str(lister.id)] = label
        self.lister_objects[label] = lister
        history = self.lister_updated.setdefault(label, [])
        if lister.updated is not None and lister.updated not in history:
            history.append(lister.updated)

    def lister_label(self, value: Any) -> str:
        return self.listers.get(str(value), f"?lister:{value}")

    def task_label(self, value: Any) -> Any:
        if value is None:
            return None
        return self.tasks.get(int(value), f"?task:{value}") if isinstance(value, (int, str)) else value

    def run_label(self, value: Any) -> Any:
        return None if value is None else self.runs.get(int(value), f"?run:{value}")

    def plain(self, value: Any) -> Any:
        """``value`` (an answer, decoded by swh's client) as plain, comparable data."""
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, datetime.datetime):
            return instant(value)
        if isinstance(value, datetime.timedelta):
            return f"Δ{value // datetime.timedelta(microseconds=1)}µs"
        if isinstance(value, (bytes, bytearray)):
            return "bytes:" + bytes(value).hex()
        if isinstance(value, uuid.UUID):
            return self.lister_label(value)
        if isinstance(value, enum.Enum):
            return value.value
        if hasattr(value, "__attrs_attrs__"):
            return self._model(value)
        if type(value).__name__ == "PagedResult":
            token = value.next_page_token
            if isinstance(token, (tuple, list)) and len(token) == 2:
                token = [self.lister_label(token[0]), token[1]]
            return {"results": [self.plain(v) for v in value.results], "next_page_token": self.plain(token)}
        if isinstance(value, dict):
            return {str(k): self.plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.plain(v) for v in value]
        return f"{type(value).__name__}:{value!r}"

    def _model(self, obj: Any) -> dict[str, Any]:
        kind = type(obj).__name__
        out: dict[str, Any] = {}
        for attribute in obj.__attrs_attrs__:
            name, value = attribute.name, getattr(obj, attribute.name)
            if isinstance(value, datetime.datetime) and (kind, name) in STAMPED:
                out[name] = self.stamp(value, required=True)
            elif isinstance(value, datetime.datetime) and (kind, name) in MAYBE_STAMPED:
                out[name] = self.stamp(value, required=False)
            elif name in ("lister_id",) or (kind == "Lister" and name == "id"):
                out[name] = self.lister_label(value)
            elif kind == "Task" and name == "id":
                out[name] = self.task_label(value)
            elif kind == "TaskRun" and name == "id":
                out[name] = self.run_label(value)
            elif kind == "TaskRun" and name == "task":
                out[name] = self.task_label(value)
            else:
                out[name] = self.plain(value)
        return out

    def archive_page(self, answer: dict[str, Any]) -> dict[str, Any]:
        """A ``filter_task_to_archive`` answer: its ids by label (the page token is the face's own form)."""
        tasks = []
        for row in answer.get("tasks", []):
            row = dict(row)
            row["task_id"] = self.task_label(row.get("task_id"))
            row["task_run_id"] = self.run_label(row.get("task_run_id"))
            for key in ("scheduled", "started", "ended"):
                if isinstance(row.get(key), datetime.datetime):
                    row[key] = self.stamp(row[key], required=False)
            tasks.append(self.plain(row))
        out: dict[str, Any] = {"tasks": tasks}
        if "next_page_token" in answer:
            token = answer["next_page_token"]
            out["next_page_token"] = self.task_label(int(token)) if isinstance(token, str) and token.isdigit() else token
        for key in answer:
            if key not in ("tasks", "next_page_token"):
                out[key] = self.plain(answer[key])
        return out


def error_plain(exc: BaseException) -> dict[str, Any]:
    """An exception raised by swh's client, as plain data: type, HTTP status, message, field."""
    response = getattr(exc, "response", None)
    if response is None and len(exc.args) > 1 and hasattr(exc.args[1], "status_code"):
        response = exc.args[1]  # the client's APIError: a 4xx whose body is not the protocol's
    status = getattr(response, "status_code", None)
    payload = exc.args[0] if exc.args else None
    if isinstance(payload, dict) and "type" in payload:
        return {"error": payload.get("type"), "status": status, "message": str(payload.get("message", ""))[:500],
                "field": payload.get("field")}
    name = type(exc).__name__
    if name in ("StaleData", "UnknownPolicy"):  # raised again by name by the client: a 400
        return {"error": name, "status": 400, "message": str(exc)[:500], "field": None}
    return {"error": name, "status": status, "message": str(exc)[:500], "field": None, "client_side": True}


def is_error(value: Any) -> bool:
    return isinstance(value, dict) and "error" in value and "status" in value


def differences(peer: Any, ours: Any, path: str = "", limit: int = 8) -> list[str]:
    """Where ``ours`` differs from ``peer``: up to ``limit`` paths, each with both values."""
    found: list[str] = []

    def walk(a: Any, b: Any, where: str) -> None:
        if len(found) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                if key not in a or key not in b:
                    found.append(f"{where}.{key}: {'missing' if key not in a else short(a[key])} ≠ "
                                 f"{'missing' if key not in b else short(b[key])}")
                else:
                    walk(a[key], b[key], f"{where}.{key}")
        elif isinstance(a, list) and isinstance(b, list):
            ids_a, ids_b = [identity_of(x) for x in a], [identity_of(y) for y in b]
            if a and b and all(ids_a) and all(ids_b) and len(set(ids_a)) == len(a) and len(set(ids_b)) == len(b) \
                    and set(ids_a) != set(ids_b):  # rows by what names them: those on one side only, then the others
                for i in sorted(set(ids_a) - set(ids_b))[:3]:
                    found.append(f"{where}[{i}]: only in swh's answer")
                for i in sorted(set(ids_b) - set(ids_a))[:3]:
                    found.append(f"{where}[{i}]: only in the face's answer")
                for i in sorted(set(ids_a) & set(ids_b)):
                    walk(a[ids_a.index(i)], b[ids_b.index(i)], f"{where}[{i}]")
                return
            if len(a) != len(b):
                found.append(f"{where}: {len(a)} items ≠ {len(b)} items")
            for i, (x, y) in enumerate(zip(a, b, strict=False)):  # lengths may differ (noted above): the common part
                walk(x, y, f"{where}[{i}]")
        elif a != b or type(a) is not type(b):
            found.append(f"{where}: {short(a)} ≠ {short(b)}")

    walk(peer, ours, path)
    return found


def short(value: Any, width: int = 120) -> str:
    text = canonical(value)
    return text if len(text) <= width else text[:width] + "…"


IDENTITY = (("lister_id", "url", "visit_type"), ("url", "visit_type"), ("lister_id", "visit_type"), ("id",),
            ("task_id", "task_run_id"), ("name", "instance_name"), ("type",))


def identity_of(row: Any) -> str:
    """What names a row of an answer (its id, its listing, …), to line up rows that differ in other fields."""
    if isinstance(row, dict):
        for keys in IDENTITY:
            if all(k in row for k in keys):
                return canonical([row[k] for k in keys])
    return ""


def as_multiset(value: Any) -> Any:
    """A list whose order swh's SQL leaves undefined, sorted (by each row's identity, then all of it)."""
    return sorted(value, key=lambda row: (identity_of(row), canonical(row))) if isinstance(value, list) else value


@dataclass
class Difference:
    """One operation on which a face's answer is not the reference's."""

    op: str
    args: Any
    peer: Any
    ours: Any
    where: list[str]
    context: dict[str, Any] = field(default_factory=dict)


def _error_status_only(d: Difference) -> bool:
    """Both raised; swh's server crashed (5xx), the face answered 400 for what the caller can fix."""
    return (is_error(d.peer) and is_error(d.ours) and (d.peer.get("status") or 500) >= 500
            and d.ours.get("status") == 400)


def _bad_input_refused(d: Difference) -> bool:
    """Input the harness made bad on purpose (a value of the wrong type): swh's backend takes it as it comes,
    the face refuses it with a 400 naming the field."""
    return (d.op in ("post", "raw") and not is_error(d.peer) and is_error(d.ours) and d.ours.get("status") == 400
            and bool(d.ours.get("field")))


def _grab_run(row: Any) -> bool:
    """A run the face's task grab recorded, not yet completed by the executor's ``task_run/schedule``."""
    return (isinstance(row, dict) and "backend_id" in row and row["backend_id"] is None
            and row.get("status", row.get("task_run_status")) == "scheduled" and row.get("started") is None)


def without_grab_runs(value: Any) -> Any:
    if isinstance(value, list):
        return [without_grab_runs(v) for v in value if not _grab_run(v)]
    if isinstance(value, dict):
        return {k: without_grab_runs(v) for k, v in value.items()}
    return value


def _grab_records_run(d: Difference) -> bool:
    """The face's answer has, besides the reference's, runs its task grabs recorded (no executor id yet)."""
    if is_error(d.peer) or is_error(d.ours) or without_grab_runs(d.ours) == d.ours:
        return False
    return not differences(_loose(d.peer), _loose(without_grab_runs(d.ours)))


def _loose(value: Any) -> Any:
    """Every list of objects as a multiset (the answers whose order the recognizer does not judge)."""
    if isinstance(value, dict):
        return {k: _loose(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_loose(v) for v in value]
        return as_multiset(items) if all(isinstance(v, dict) for v in items) else items
    return value


def _last_seen_kept(d: Difference) -> bool:
    """``record_listed_origins(update_last_seen=False)``: the face keeps a listing's ``last_seen`` (stamps a new
    one's) where swh writes the one sent; nothing else differs."""
    if d.op != "record_listed_origins" or d.args.get("update_last_seen", True):
        return False
    if not isinstance(d.peer, list) or not isinstance(d.ours, list) or len(d.peer) != len(d.ours):
        return False
    differ = False
    for p, o in zip(as_multiset(d.peer), as_multiset(d.ours), strict=True):
        if {k: v for k, v in p.items() if k != "last_seen"} != {k: v for k, v in o.items() if k != "last_seen"}:
            return False
        if p["last_seen"] != o["last_seen"]:
            differ = True
            if not str(o["last_seen"]).startswith("@"):
                return False
    return differ


def _twins(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two tasks one dedup stands for: same type, arguments, policy, priority and status (and next_run, one-shot)."""
    keys = ("type", "arguments", "policy", "priority", "status") + (("next_run",) if a["policy"] == "oneshot" else ())
    return all(a.get(k) == b.get(k) for k in keys)


def dedup_extras(d: Difference) -> list[str] | None:
    """``create_tasks`` deduplicated by Ostinato's rules: the labels of the tasks swh made twice from one batch
    (the face made each once), or None when the difference is something else. The face may also answer the
    pending task a task sent stood for, which swh leaves out of its answer when their next_run differ."""
    if d.op != "create_tasks" or not isinstance(d.peer, list) or not isinstance(d.ours, list):
        return None
    peer, ours = {t["id"]: t for t in d.peer}, {t["id"]: t for t in d.ours}
    if any(peer[i] != ours[i] for i in peer.keys() & ours.keys()):
        return None
    extras = []
    new = [ours[i] for i in ours.keys() - peer.keys() if str(i).startswith("?")]
    for label in sorted(peer.keys() - ours.keys()):
        if any(_twins(peer[label], ours[i]) for i in ours if i in peer):
            extras.append(label)  # made twice from one batch by swh, once by the face
        elif not any(_twins(peer[label], task) for task in new):
            return None  # else: a task swh deduplicated against (same status), the face made anew (not pending)
    for label in ours.keys() - peer.keys():  # the pending task standing for one sent, or one made anew
        task = ours[label]
        if not any(s.get("type") == task["type"] and s["arguments"].get("args") == task["arguments"]["args"]
                   and s["arguments"].get("kwargs") == task["arguments"]["kwargs"] for s in d.args["tasks"]):
            return None
    return extras if peer.keys() != ours.keys() else None


def made_anew(d: Difference) -> list[dict[str, Any]]:
    """After a deliberate ``task-dedup``: the tasks the face made anew (sent with a settled status, which swh's
    store deduplicated against a task of that status), as the face answered them."""
    if d.op != "create_tasks" or not isinstance(d.ours, list):
        return []
    return [t for t in d.ours if str(t.get("id", "")).startswith("?task:")]


TASK_MOVES = ("next_run", "current_interval", "retries_left")  # what a run's end sets on its task, by each one's rules


def task_changes(d: Difference) -> list[tuple[str, Any, Any, Any]] | None:
    """After an end answered alike that left its runs alike: (label, swh's task, the face's, the task before) for
    each of its tasks read back otherwise; None if anything else differs."""
    if d.op != "end_task_run" or not all(isinstance(x, dict) and "read_back" in x for x in (d.peer, d.ours)):
        return None
    peer, ours = d.peer["read_back"], d.ours["read_back"]
    if d.peer["answer"] != d.ours["answer"] or not isinstance(peer, dict) or not isinstance(ours, dict):
        return None
    if any(is_error(x) or not isinstance(x, list) for x in (peer["runs"], ours["runs"], peer["tasks"], ours["tasks"])):
        return None
    if differences(as_multiset(peer["runs"]), as_multiset(without_grab_runs(ours["runs"]))):
        return None
    before = d.context.get("before", {})
    swh, face = {t["id"]: t for t in peer["tasks"]}, {t["id"]: t for t in ours["tasks"]}
    if swh.keys() != face.keys():
        return None
    return [(label, swh[label], face[label], before.get(label)) for label in sorted(swh) if swh[label] != face[label]]


def _settled_task_stays(d: Difference) -> bool:
    changes = task_changes(d)
    return bool(changes) and all(b is not None and b["status"] in ("disabled", "completed") and o == b
                                 for _label, _p, o, b in changes)


def _task_rules_after_run(d: Difference) -> bool:
    changes = task_changes(d)
    return bool(changes) and all(p["status"] == o["status"] and all(p[k] == o[k] for k in p if k not in TASK_MOVES)
                                 for _label, p, o, _b in changes)


def _archive_pages(d: Difference) -> bool:
    """``filter_task_to_archive`` walked to its last page: the same runs on both sides, paged otherwise (the face's
    token names the last (task, run) answered; swh's names a task, whose runs its next page answers again)."""
    if d.op != "filter_task_to_archive" or not isinstance(d.peer, list) or not isinstance(d.ours, list):
        return False
    if any(not isinstance(page, dict) or is_error(page) for page in [*d.peer, *d.ours]):
        return False
    peer = {canonical(row) for page in d.peer for row in page.get("tasks", [])}
    ours = {canonical(row) for page in d.ours for row in page.get("tasks", [])}
    if _stuck(d.peer) and not d.ours[-1].get("next_page_token"):
        # swh's walk never ends (a task with more runs than a page: the same token again and again), so it
        # shows only a part of the runs; the face's walk ends and holds all it showed
        return peer <= ours
    return peer == ours


def _stuck(pages: list[dict[str, Any]]) -> bool:
    tokens = [page.get("next_page_token") for page in pages]
    return any(a is not None and a == b for a, b in zip(tokens, tokens[1:], strict=False))


def _not_sampled(d: Difference) -> bool:
    """A grab with ``tablesample``: swh looks at a random share of its pages, the face walks its index."""
    return d.op == "grab_next_visits" and bool(d.args.get("tablesample")) and not is_error(d.ours)


#: name → (reason, recognizer): the differences docs/reference/swh-compat.md states as deliberate
DELIBERATE: dict[str, tuple[str, Callable[[Difference], bool]]] = {
    "archive-pages": (
        "filter_task_to_archive answers the same runs, paged otherwise: the face's page token names the last "
        "(task, run) answered, so no run comes twice nor is lost; swh's names a task, whose runs its next page "
        "answers again, so a task with more runs than a page never ends (swh-compat.md: Deliberate differences).",
        _archive_pages,
    ),
    "tablesample-not-sampled": (
        "A grab's tablesample makes swh look at a random share of its listings' pages, to keep its scan and sort "
        "affordable; the face walks an index whose cost follows the batch and answers the first listings of the "
        "policy's order (swh-compat.md: Deliberate differences).",
        _not_sampled,
    ),
    "caller-error-400": (
        "What the caller can fix (bad input, an unknown task or type) is a 400 naming it on the face where "
        "swh-scheduler's server crashes with a 500; both raise (swh-compat.md: errors, bad input).",
        _error_status_only,
    ),
    "bad-input-refused": (
        "A value of the wrong type (bad input sent on purpose) that swh's backend happens to take is a 400 naming "
        "the field on the face (swh-compat.md: bad input changes nothing, a field of the wrong type is a 400).",
        _bad_input_refused,
    ),
    "task-dedup": (
        "create_tasks dedups by Ostinato's rules (against the pending task) and answers each task sent once: a "
        "task sent twice in one batch is made once (swh's store makes it twice), a recurring task sent again for "
        "another next_run is answered as the pending one (swh's answer leaves it out), a task sent with a settled "
        "status is made anew (swh's store dedups against a task of that status) (swh-compat.md: Tasks).",
        lambda d: dedup_extras(d) is not None,
    ),
    "settled-task-stays": (
        "When a run of a disabled or completed task ends, the face leaves the task as it is, where swh's trigger "
        "moves it (reschedules a disabled recurring task, retries or disables a completed one) "
        "(swh-compat.md: Tasks).",
        _settled_task_stays,
    ),
    "task-rules-after-run": (
        "After a run ends, a task's next run, interval and retries follow Ostinato's rules, not swh's trigger "
        "(which divides the interval by the type's backoff factor whatever the outcome); the status is the "
        "same (swh-compat.md: Tasks).",
        _task_rules_after_run,
    ),
    "grab-records-run": (
        "The face's task grab records a run with no executor id, which the executor's task_run/schedule then "
        "completes (a grab and a schedule make one run); until then that run is answered where swh has none "
        "(swh-compat.md: Tasks).",
        _grab_records_run,
    ),
    "last-seen-kept": (
        "origins/record with update_last_seen=false keeps a listing's last_seen (a new listing's is stamped), "
        "where swh writes the last_seen sent; swh's journal client sends the one it read back "
        "(swh-compat.md: Origins).",
        _last_seen_kept,
    ),
}


def explain(d: Difference) -> str | None:
    """The name of the deliberate difference ``d`` is, or None."""
    for name, (_reason, recognizer) in DELIBERATE.items():
        if recognizer(d):
            return name
    return None


def kind_of(d: Difference) -> str:
    """A short signature of a difference, to group alike ones in the report."""
    if is_error(d.peer) != is_error(d.ours):
        return f"{d.op}: {'swh raised ' + str(d.peer.get('error')) if is_error(d.peer) else 'swh answered'}, " \
               f"{'the face raised ' + str(d.ours.get('error')) + ' ' + str(d.ours.get('status')) if is_error(d.ours) else 'the face answered'}"
    if is_error(d.peer):
        return f"{d.op}: swh raised {d.peer.get('error')} {d.peer.get('status')}, the face {d.ours.get('error')} " \
               f"{d.ours.get('status')}"
    paths = sorted({_generic(w.split(": ")[0]) + _tail(w) for w in d.where})[:3]
    return f"{d.op}: " + ", ".join(paths)


def _tail(where: str) -> str:
    """What a difference's line says beyond its path, when it says it in words (rows on one side only, sizes)."""
    text = where.split(": ", 1)[1] if ": " in where else ""
    if text.startswith("only in"):
        return " " + text
    if "items ≠" in text:
        return " (sizes)"
    return ""


def _generic(path: str) -> str:
    """A path with its indexes and row names left out (``[3].status`` and ``[["t5"]].status`` → ``[].status``)."""
    out, depth = [], 0
    for ch in path:
        if ch == "[":
            if depth == 0:
                out.append("[]")
            depth += 1
        elif ch == "]":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out) or "answer"
