"""A client of swh-scheduler 3.6's RPC protocol, for moving an archive from swh-scheduler to Ostinato
(docs/how-to/migrate-from-swh-scheduler.md): ``ostinato swh-rpc compare`` and ``copy-tasks``.

:class:`SwhRpcClient` speaks to any server of the protocol, swh-scheduler's own or Ostinato's face
(``ostinato swh-rpc serve``): a call is a ``POST <url>/<route>`` whose body is the operation's
arguments by name in msgpack, with the face's own codec (:mod:`.wire`), and ``Authorization: Bearer``
when a token is given. The protocol's error shape (``type``, ``message``, …) comes back as a
:class:`SwhRpcError`; a server that cannot be reached as :class:`SwhRpcUnreachable`. It needs only
the standard library (``urllib.request``) and msgpack: no extra.

On top of it:

- :func:`compare_grabs`: the same dry-run ``grab_next_visits`` sent to two servers, policy by
  policy, and what they answered, listing by listing (by URL);
- :func:`tasks_after_cut_over` and :func:`copy_tasks`: the tasks Ostinato's store holds that were
  created after the tasks side moved to Ostinato, and their copy onto swh-scheduler's server
  through its ``create_tasks``. Neither scheduler records when a task was created: those tasks are
  found by their ids, above the last task the swh server still holds as the same task (the import
  keeps swh's ids, and Ostinato numbers the tasks it creates above every id it imported).
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

from ...domain.errors import OstinatoError, ValidationError
from ...domain.tasks import Task, TaskStatus
from . import models
from .wire import JSON, MSGPACK, Model, dumps_msgpack, loads_json, loads_msgpack

#: swh-scheduler's grab policies that need no lister (``first_visits_after_listing`` needs one)
POLICIES = ("already_visited_order_by_lag", "never_visited_oldest_update_first", "origins_without_last_update",
            "oldest_scheduled_first", "stop_after_success")
#: the policies swh's recurrent visit scheduler uses for a visit type visited again and again
RECURRING_POLICIES = ("already_visited_order_by_lag", "never_visited_oldest_update_first", "origins_without_last_update")
#: the visit types swh's recurrent visit scheduler visits until one visit succeeds, and their policy
ONE_SHOT_VISIT_TYPES = frozenset({"content", "tarball-directory", "git-checkout", "hg-checkout", "svn-export"})
ONE_SHOT_POLICIES = ("stop_after_success",)
#: items per call when tasks are read or created
BATCH = 1000
#: how many listings of one side only a comparison keeps, per policy
SHOWN_DIFFERENCES = 100


class SwhRpcError(OstinatoError):
    """A server of the protocol answered an error: its status, its ``type`` and its ``message``."""

    def __init__(self, name: str, url: str, status: int, kind: str, message: str):
        self.name, self.url, self.status, self.kind, self.message = name, url, status, kind, message
        super().__init__(f"{name}: {url} answered {status} {kind}: {message}")


class SwhRpcUnreachable(OstinatoError):
    """A server of the protocol that cannot be reached (refused, unknown host, timed out)."""

    def __init__(self, name: str, url: str, reason: str):
        self.name, self.url, self.reason = name, url, reason
        super().__init__(f"{name}: cannot reach {url}: {reason}")


def check_url(value: Any, name: str, what: str) -> str:
    """``value`` if it is an http(s) URL with a host; else a ValidationError naming ``name``."""
    text = value.strip() if isinstance(value, str) else ""
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError(name, f"the URL of {what}, http://HOST:PORT/", value or None)
    try:
        _ = parts.port  # a port that is not a number raises here
    except ValueError:
        raise ValidationError(name, f"the URL of {what}, http://HOST:PORT/ (a port from 1 to 65535)", value) from None
    return text


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    if isinstance(reason, socket.timeout) or isinstance(exc, TimeoutError):
        return "no answer in time"
    text = getattr(reason, "strerror", None) or str(reason) or type(reason).__name__
    return " ".join(str(text).split())


class SwhRpcClient:
    """The protocol at ``url`` (swh-scheduler's server or Ostinato's face); ``name`` says which in errors."""

    def __init__(self, url: str, token: str | None = None, *, name: str = "server", timeout: float = 300.0):
        self.url = url.rstrip("/") + "/"
        self.token = token
        self.name = name
        self.timeout = timeout

    def call(self, route: str, **arguments: Any) -> Any:
        """POST the arguments to ``<url>/<route>``; the decoded answer."""
        target = self.url + route
        headers = {"Content-Type": MSGPACK, "Accept": MSGPACK}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(target, data=dumps_msgpack(arguments), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return self._decode(target, response.status, response.headers.get("Content-Type", ""), response.read())
        except urllib.error.HTTPError as exc:
            raise self._error(target, exc.code, exc.headers.get("Content-Type", ""), exc.read()) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            raise SwhRpcUnreachable(self.name, self.url, _reason(exc)) from None

    def _decode(self, target: str, status: int, content_type: str, raw: bytes) -> Any:
        kind = content_type.split(";", 1)[0].strip().lower()
        try:
            if kind == MSGPACK:
                return loads_msgpack(raw)
            if kind == JSON:
                return loads_json(raw)
        except ValidationError as exc:
            raise SwhRpcError(self.name, target, status, "BadAnswer", f"an answer that cannot be read ({exc})") from None
        raise SwhRpcError(self.name, target, status, "BadAnswer",
                          f"an answer in {kind or 'no content type'}, not the protocol's msgpack: is it a server of "
                          "swh-scheduler's protocol?")

    def _error(self, target: str, status: int, content_type: str, raw: bytes) -> SwhRpcError:
        try:
            body = self._decode(target, status, content_type, raw)
        except SwhRpcError:
            text = " ".join(raw[:200].decode("utf-8", "replace").split())
            return SwhRpcError(self.name, target, status, "HTTPError", text or "no body")
        if isinstance(body, dict) and "type" in body:
            message = body.get("message") or " ".join(str(a) for a in body.get("args") or [])
            return SwhRpcError(self.name, target, status, str(body["type"]), " ".join(str(message).split()))
        return SwhRpcError(self.name, target, status, "HTTPError", repr(body)[:200])

    # -- the operations used here ------------------------------------------------------------
    def grab_next_visits(self, visit_type: str, count: int, policy: str, *, timestamp: datetime,
                         dry_run: bool = True) -> list[Model]:
        return list(self.call("origins/grab_next", visit_type=visit_type, count=count, policy=policy,
                              timestamp=timestamp, dry_run=dry_run) or [])

    def get_tasks(self, task_ids: Sequence[int]) -> list[Model]:
        return list(self.call("task/get", task_ids=list(task_ids)) or [])

    def create_tasks(self, tasks: Sequence[Model]) -> list[Model]:
        return list(self.call("task/create", tasks=list(tasks)) or [])


# -- comparing grabs --------------------------------------------------------------------------
def default_policies(visit_type: str) -> tuple[str, ...]:
    """The policies swh's recurrent visit scheduler grabs ``visit_type`` with."""
    return ONE_SHOT_POLICIES if visit_type in ONE_SHOT_VISIT_TYPES else RECURRING_POLICIES


@dataclass
class PolicyComparison:
    """One policy's dry-run grab on both servers: the URLs of the listings each answered, in order."""

    policy: str
    peer: list[str]
    ours: list[str]

    @property
    def common(self) -> int:
        """Listings both answered (by URL; an origin two listers list counts twice)."""
        return sum((Counter(self.peer) & Counter(self.ours)).values())

    def only(self, side: str) -> list[str]:
        mine, other = (self.peer, self.ours) if side == "peer" else (self.ours, self.peer)
        return sorted((Counter(mine) - Counter(other)).elements())

    @property
    def same(self) -> bool:
        return Counter(self.peer) == Counter(self.ours)

    @property
    def same_order(self) -> bool:
        return self.peer == self.ours

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "swh": len(self.peer), "ostinato": len(self.ours), "common": self.common,
                "same": self.same, "same_order": self.same_order,
                "only_swh": self.only("peer")[:SHOWN_DIFFERENCES], "only_ostinato": self.only("ours")[:SHOWN_DIFFERENCES]}


def compare_grabs(peer: SwhRpcClient, ours: SwhRpcClient, visit_type: str, policies: Iterable[str], count: int,
                  timestamp: datetime) -> list[PolicyComparison]:
    """For each policy, the same ``grab_next_visits(visit_type, count, policy, timestamp=..., dry_run=True)``
    sent to both servers: nothing is marked scheduled on either."""
    found = []
    for policy in policies:
        answers = [[_url(item) for item in side.grab_next_visits(visit_type, count, policy, timestamp=timestamp)]
                   for side in (peer, ours)]
        found.append(PolicyComparison(policy, answers[0], answers[1]))
    return found


def _url(item: Any) -> str:
    fields = item.fields if isinstance(item, Model) else item if isinstance(item, dict) else {}
    return str(fields.get("url"))


# -- copying tasks back --------------------------------------------------------------------------
class TaskReads(Protocol):
    """The store's reads this needs (any store, the remote one too)."""

    def search_tasks(self, *, after_id: int = 0, limit: int = 100) -> list[Task]: ...


@dataclass
class CopiedTask:
    task: Task
    #: its id on swh's server; None when the server answered none (an equal pending task was there already)
    swh_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        t = self.task
        return {"ostinato_id": t.id, "swh_id": self.swh_id, "type": t.type, "policy": t.policy.value,
                "priority": t.priority.value if t.priority else None, "status": _copied_status(t).value,
                "next_run": t.next_run.isoformat(), "arguments": t.arguments.to_dict()}


@dataclass
class CopyReport:
    #: the last task id the swh server holds as the same task (0: none); the tasks copied are above it
    after_id: int
    tasks: list[CopiedTask] = field(default_factory=list)

    @property
    def copied(self) -> int:
        return sum(1 for t in self.tasks if t.swh_id is not None)


def _max_task_id(store: TaskReads) -> int:
    """The store's highest task id (0 when it has none), by index seeks only."""
    def above(task_id: int) -> bool:
        return bool(store.search_tasks(after_id=task_id, limit=1))

    if not above(0):
        return 0
    low, high = 0, 1
    while above(high):
        low, high = high, high * 2
    while high - low > 1:  # a task above low, none above high
        middle = (low + high) // 2
        low, high = (middle, high) if above(middle) else (low, middle)
    return high


def _tasks_between(store: TaskReads, low: int, high: int) -> list[Task]:
    """The store's tasks with ``low < id <= high``, by id."""
    found: list[Task] = []
    after = low
    while True:
        page = [t for t in store.search_tasks(after_id=after, limit=BATCH) if t.id <= high]
        found.extend(page)
        if len(page) < BATCH:
            return found
        after = page[-1].id


def _same_task(task: Task, held: Any) -> bool:
    fields = held.fields if isinstance(held, Model) else {}
    arguments = fields.get("arguments")
    arguments = arguments.fields if isinstance(arguments, Model) else arguments
    if not isinstance(arguments, dict):
        return False
    return (fields.get("type") == task.type and _canonical(arguments.get("args") or [], arguments.get("kwargs") or {})
            == _canonical(list(task.arguments.args), dict(task.arguments.kwargs)))


def _canonical(args: Any, kwargs: Any) -> str:
    return json.dumps({"args": args, "kwargs": kwargs}, sort_keys=True, default=str)


def tasks_after_cut_over(store: TaskReads, swh: SwhRpcClient) -> CopyReport:
    """The store's tasks above the last one the swh server holds as the same task (same id, type and
    arguments), by id: a walk down from the store's highest id, by windows that double, each asked
    of the server with ``get_tasks``; what the server does not hold above that task is what was
    created in Ostinato after the cut-over."""
    high = _max_task_id(store)
    window = BATCH
    newer: list[Task] = []
    while high > 0:
        low = max(0, high - window)
        tasks = _tasks_between(store, low, high)
        held_ids = []
        for start in range(0, len(tasks), BATCH):
            chunk = tasks[start:start + BATCH]
            by_id: dict[int | None, Task] = {t.id: t for t in chunk}  # looked up by the answer's id, maybe None
            for item in swh.get_tasks([t.id for t in chunk]):
                task = by_id.get(item.fields.get("id")) if isinstance(item, Model) else None
                if task is not None and _same_task(task, item):
                    held_ids.append(task.id)
        if held_ids:
            boundary = max(held_ids)
            newer = [t for t in tasks if t.id > boundary] + newer
            return CopyReport(boundary, [CopiedTask(t) for t in newer])
        newer = tasks + newer
        high, window = low, window * 2
    return CopyReport(0, [CopiedTask(t) for t in newer])


def _copied_status(task: Task) -> TaskStatus:
    """A task whose run is in flight in Ostinato is pending on swh's side: that run ends in Ostinato,
    and swh's runner must run it again (otherwise it would wait on a run swh never hears of)."""
    return TaskStatus.NEXT_RUN_NOT_SCHEDULED if task.status is TaskStatus.NEXT_RUN_SCHEDULED else task.status


def swh_task(task: Task) -> Model:
    """The protocol's Task for a new copy of ``task``: its type, arguments, policy, priority, next run,
    status and retries (no id: the server numbers it; no interval: swh's store gives the type's)."""
    arguments = models.make("TaskArguments", args=list(task.arguments.args), kwargs=dict(task.arguments.kwargs))
    return models.make("Task", type=task.type, arguments=arguments, next_run=task.next_run,
                       status=_copied_status(task).value, policy=task.policy.value, retries_left=task.retries_left,
                       priority=task.priority.value if task.priority else None)


def _key(fields: dict[str, Any]) -> tuple:
    arguments = fields["arguments"]
    arguments = arguments.fields if isinstance(arguments, Model) else arguments
    return (fields["type"], _canonical(arguments.get("args") or [], arguments.get("kwargs") or {}), fields["policy"],
            fields.get("priority"), fields["status"], fields["next_run"])


def copy_tasks(report: CopyReport, swh: SwhRpcClient) -> CopyReport:
    """Create the report's tasks on the swh server (``create_tasks``, a batch a call), and note the id
    each got there. swh's store does not create a task equal to one it holds (same type, arguments,
    policy, priority and status, and for a one-shot task the same next run): running this again
    creates nothing twice."""
    for start in range(0, len(report.tasks), BATCH):
        chunk = report.tasks[start:start + BATCH]
        sent = [swh_task(c.task) for c in chunk]
        answered: dict[tuple, list[int | None]] = {}
        for item in swh.create_tasks(sent):
            if isinstance(item, Model):
                answered.setdefault(_key(item.fields), []).append(item.fields.get("id"))
        for copied, model in zip(chunk, sent, strict=True):
            ids = answered.get(_key(model.fields))
            if ids:
                copied.swh_id = ids.pop(0) if len(ids) > 1 else ids[0]
    return report


__all__ = ["ONE_SHOT_VISIT_TYPES", "POLICIES", "RECURRING_POLICIES", "CopiedTask", "CopyReport", "PolicyComparison",
           "SwhRpcClient", "SwhRpcError", "SwhRpcUnreachable", "check_url", "compare_grabs", "copy_tasks",
           "default_policies", "swh_task", "tasks_after_cut_over"]
