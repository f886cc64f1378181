"""The operations of the differential harness (``bench/face/swh_diff.py``), drawn from a seed.

Runs in the peer's interpreter (standard library only here). :class:`Generator` draws each operation
from ``random.Random(seed)`` and what it knows of the reference's state (:class:`Model`, learnt from the
operations sent and swh-scheduler's own answers), as an :class:`Op`: the name of a ``RemoteScheduler``
method (or ``post``/``raw`` for bad input, or a walk of pages) and its arguments in an abstract, JSON
form that names what each server allocates itself by label:

- ``{"$lister": label}`` a lister's UUID, ``{"$lister_obj": label, "set": {...}, "stale": bool}`` its
  ``Lister`` as that server last answered it (changed, or with an older ``updated``);
- ``{"$task": label}``, ``{"$run": label}`` a task's or a task run's id;
- ``{"$dt": iso}``, ``{"$td": seconds}``, ``{"$bytes": hex}``, ``{"$model": Class, ...fields}``.

The client (``bench/face/swh_diff_client.py``) turns them into each server's values.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

NAMES = ["github", "gitlab", "cgit", "npm", "ñandú"]
INSTANCES = [None, "", "main", "ĉi-2"]
VISIT_TYPES = ["git", "hg", "svn", "tar-ü"]
POLICIES = ["oldest_scheduled_first", "stop_after_success", "never_visited_oldest_update_first",
            "already_visited_order_by_lag", "origins_without_last_update", "first_visits_after_listing"]
TASK_STATUSES = ["next_run_not_scheduled", "next_run_scheduled", "completed", "disabled"]
RUN_END_STATUSES = ["eventful", "uneventful", "failed", "permfailed", "lost"]
PRIORITIES = [None, None, None, "high", "normal", "low"]
LAST_VISIT_STATUSES = [None, "successful", "failed", "not_found"]
ZONES = [UTC, UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-5, minutes=-30))]


def task_type_variants() -> dict[str, dict[str, Any]]:
    """Task types as swh's tools and tests make them, odd ones included (``{"$td": s}`` intervals)."""
    day, hour = 86400, 3600
    return {
        "load-git": {"default_interval": day, "min_interval": 6 * hour, "max_interval": 12 * day,
                     "backoff_factor": 2.0, "num_retries": 3, "retry_delay": hour},
        # what `swh scheduler task-type register` gives a task without a known suffix
        "load-hg": {"default_interval": 2 * day, "min_interval": 2 * day, "max_interval": 2 * day,
                    "backoff_factor": 1.0},
        # and a `*-full` lister
        "list-gh-full": {"default_interval": 90 * day, "min_interval": 90 * day, "max_interval": 90 * day,
                         "backoff_factor": 1.0, "max_queue_length": 0},
        "index-ü": {"default_interval": 0, "min_interval": hour, "max_interval": day, "backoff_factor": 1.5,
                    "num_retries": 2},
        "check-x": {"default_interval": 30 * day, "min_interval": hour, "max_interval": day, "backoff_factor": 0.5,
                    "max_queue_length": None, "num_retries": 0},
        "oneshot-only": {},
    }


TYPE_WEIGHTS = {"load-git": 4, "load-hg": 3, "list-gh-full": 2, "oneshot-only": 1}


@dataclass
class Op:
    name: str
    args: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {"op": self.name, "args": self.args}


@dataclass
class Model:
    """What the harness knows of the reference's state: from the operations sent and swh's answers."""

    listers: list[str] = field(default_factory=list)  # labels "name/instance"
    finished: set[str] = field(default_factory=set)  # listers given a last_listing_finished_at
    listings: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    stats: set[tuple[str, str]] = field(default_factory=set)
    task_types: list[str] = field(default_factory=list)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)  # label → type, policy, priority
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # backend id → task, state
    archived: list[tuple[str, str]] = field(default_factory=list)  # (task label, run label)

    def learn(self, op: Op, peer: Any, failed: bool) -> None:
        """What ``op`` did on the reference (``peer``: its plain answer)."""
        if failed:
            return
        a = op.args
        if op.name == "get_or_create_lister":
            label = f"{a['name']}/{a['instance_name'] or ''}"
            if label not in self.listers:
                self.listers.append(label)
        elif op.name == "update_lister" and a["lister"]["set"].get("last_listing_finished_at"):
            self.finished.add(a["lister"]["$lister_obj"])
        elif op.name == "record_listed_origins":
            for o in a["listed_origins"]:
                self.listings[(o["lister_id"]["$lister"], o["url"], o["visit_type"])] = o
        elif op.name == "origin_visit_stats_upsert":
            self.stats.update((s["url"], s["visit_type"]) for s in a["origin_visit_stats"])
        elif op.name == "grab_next_visits" and isinstance(peer, list):
            self.stats.update((o["url"], o["visit_type"]) for o in peer)
        elif op.name == "create_task_type":
            if a["task_type"]["type"] not in self.task_types:
                self.task_types.append(a["task_type"]["type"])
        elif op.name == "create_tasks" and isinstance(peer, list):
            for t in peer:
                self.tasks.setdefault(t["id"], {"type": t["type"], "policy": t["policy"], "priority": t["priority"]})
        elif op.name in ("schedule_task_run", "mass_schedule_task_runs"):
            runs = [a] if op.name == "schedule_task_run" else a["task_runs"]
            for r in runs:
                task = r.get("task_id", r.get("task"))
                if isinstance(task, dict) and "$task" in task:
                    run = self.runs.setdefault(r["backend_id"], {"task": task["$task"], "state": "scheduled", "tasks": []})
                    run["tasks"].append(task["$task"])  # an executor id given to several runs
        elif op.name in ("start_task_run", "end_task_run") and a["backend_id"] in self.runs:
            self.runs[a["backend_id"]]["state"] = "started" if op.name == "start_task_run" else "ended"
        elif op.name == "filter_task_to_archive" and isinstance(peer, list):
            rows = [(r["task_id"], r["task_run_id"]) for page in peer if isinstance(page, dict)
                    for r in page.get("tasks", [])]
            self.archived = sorted(set(rows))


class Generator:
    """Operations drawn from ``random.Random(seed)`` around the instant ``base``."""

    def __init__(self, seed: int, base: datetime) -> None:
        self.rng = random.Random(seed)
        self.base = base
        self.clock = base - timedelta(days=30)  # the grabs' timestamps move forward from here
        self.model = Model()
        self.backend_ids = 0
        self.sent_tasks: list[dict[str, Any]] = []
        r = self.rng
        hosts = ["github.com", "gitlab.example.org", "ñu.example", "例子.测试"]
        self.urls = []
        for n in range(r.randint(25, 60)):
            host = r.choice(hosts)
            path = r.choice(["repo", "ünïcödé", "プロジェクト", "emoji-🦀", "a b%20c"]) + f"-{n}"
            self.urls.append(f"https://{host}/{path}")
        for n in range(2):  # longer than 2,048 bytes
            self.urls.append(f"https://long.example/{n}/" + "ü" * r.randint(1030, 1500))
        self.visit_types = VISIT_TYPES[: r.randint(2, len(VISIT_TYPES))]
        # half the seeds make only the task types swh's tools make most (the others: odd intervals, backoffs)
        self.odd_types = r.random() < 0.5
        self.ops = {
            "get_or_create_lister": 5, "get_lister": 2, "get_listers": 2, "get_listers_by_id": 2, "update_lister": 4,
            "get_visit_types_for_listed_origins": 2, "record_listed_origins": 12, "get_listed_origins": 5,
            "grab_next_visits": 12, "origin_visit_stats_upsert": 8, "origin_visit_stats_get": 4,
            "visit_scheduler_queue_position_get": 1, "visit_scheduler_queue_position_set": 1, "update_metrics": 3,
            "get_metrics": 2, "create_task_type": 3, "get_task_type": 1, "get_task_types": 1, "create_tasks": 7,
            "search_tasks": 3, "get_tasks": 3, "peek_ready_tasks": 2, "grab_ready_tasks": 3,
            "peek_ready_priority_tasks": 1, "grab_ready_priority_tasks": 2, "set_status_tasks": 3, "disable_tasks": 1,
            "schedule_task_run": 4, "mass_schedule_task_runs": 2, "start_task_run": 3, "end_task_run": 5,
            "get_task_runs": 3, "filter_task_to_archive": 2, "delete_archived_tasks": 1, "bad_input": 4,
        }

    # -- values ----------------------------------------------------------------------
    def dt(self, lo_days: float, hi_days: float, around: datetime | None = None) -> dict[str, str]:
        r = self.rng
        value = (around or self.base) + timedelta(seconds=r.uniform(lo_days, hi_days) * 86400)
        value = value.replace(microsecond=r.randrange(10**6) if r.random() < 0.5 else 0)
        return {"$dt": value.astimezone(r.choice(ZONES)).isoformat()}

    def maybe(self, p: float, value: Any) -> Any:
        return value if self.rng.random() < p else None

    def lister(self) -> str:
        return self.rng.choice(self.model.listers)

    def task(self) -> dict[str, Any]:
        if self.model.tasks and self.rng.random() < 0.93:
            return {"$task": self.rng.choice(sorted(self.model.tasks))}
        return {"$int": 10**8 + self.rng.randrange(1000)}  # an id no server has

    def tasks(self, most: int = 6) -> list[dict[str, Any]]:
        return [self.task() for _ in range(self.rng.randint(0, most))]

    def backend_id(self, known: float = 0.9) -> str:
        if self.model.runs and self.rng.random() < known:
            return self.rng.choice(sorted(self.model.runs))
        return f"unknown-{self.rng.randrange(10**6)}"

    def metadata(self) -> Any:
        r = self.rng.random()
        return None if r < 0.4 else {} if r < 0.5 else {"worker": self.rng.choice(["w1", "wü"]), "n": self.rng.randrange(9)}

    # -- drawing ---------------------------------------------------------------------
    def next(self) -> Op:
        m = self.model
        if not m.listers:
            return self.get_or_create_lister()
        if not m.task_types and self.rng.random() < 0.5:
            return self.create_task_type()
        names, weights = zip(*self.ops.items(), strict=True)
        while True:
            name = self.rng.choices(names, weights)[0]
            op = getattr(self, name)()
            if op is not None:
                return op

    def get_or_create_lister(self) -> Op:
        r = self.rng
        return Op("get_or_create_lister", {"name": r.choice(NAMES), "instance_name": r.choice(INSTANCES),
                                           "first_visits_queue_prefix": self.maybe(0.3, r.choice(["fv", "fvü"]))})

    def get_lister(self) -> Op:
        r = self.rng
        name = r.choice(NAMES + ["never-made"])
        return Op("get_lister", {"name": name, "instance_name": r.choice(INSTANCES)})

    def get_listers(self) -> Op:
        return Op("get_listers", {"with_first_visits_to_schedule": self.rng.random() < 0.4})

    def get_listers_by_id(self) -> Op:
        r = self.rng
        ids: list[Any] = [{"$lister_str": r.choice(self.model.listers)} for _ in range(r.randint(0, 3))]
        if r.random() < 0.3:
            ids.append(f"2f1b5e38-6c7e-4b9e-9d51-6b0c3c0e0a{r.randrange(100):02d}")
        return Op("get_listers_by_id", {"lister_ids": ids})

    def update_lister(self) -> Op:
        r = self.rng
        changes: dict[str, Any] = {"current_state": r.choice([{}, {"page": r.randrange(50)},
                                                             {"cursor": "ü" * r.randint(1, 5), "n": [1, 2]}])}
        if r.random() < 0.6:
            changes["last_listing_finished_at"] = self.dt(-20, 1, self.clock)
        if r.random() < 0.2:
            changes["first_visits_scheduled_at"] = self.dt(-5, 0, self.clock)
        return Op("update_lister", {"lister": {"$lister_obj": self.lister(), "set": changes,
                                               "stale": r.random() < 0.2}})

    def get_visit_types_for_listed_origins(self) -> Op:
        return Op("get_visit_types_for_listed_origins", {"lister": {"$lister_obj": self.lister(), "set": {},
                                                                    "stale": False}})

    def listing(self, lister: str, url: str, visit_type: str) -> dict[str, Any]:
        r = self.rng
        old = self.model.listings.get((lister, url, visit_type))
        fields = {
            "extra_loader_arguments": r.choice([{}, {"branch": "main"}, {"artifacts": [{"v": r.randrange(3)}]}]),
            "last_update": self.maybe(0.75, self.dt(-40, 0, self.clock)),
            "is_fork": r.choice([None, None, True, False]),
            "forked_from_url": self.maybe(0.15, r.choice(self.urls)),
            "enabled": r.random() < 0.85,
        }
        if old is not None and r.random() < 0.5:  # listed again: some fields changed, the others kept
            keep = r.sample(sorted(fields), r.randint(1, len(fields)))
            fields.update({k: old[k] for k in keep})
        return {"$model": "ListedOrigin", "lister_id": {"$lister": lister}, "url": url, "visit_type": visit_type,
                **fields}

    def record_listed_origins(self) -> Op:
        r = self.rng
        lister = self.lister()
        batch = [self.listing(lister, r.choice(self.urls), r.choice(self.visit_types)) for _ in range(r.randint(1, 25))]
        if r.random() < 0.15:
            batch.append(dict(r.choice(batch), enabled=not batch[0]["enabled"]))  # a key twice in one batch
        update_last_seen = r.random() < 0.8
        if not update_last_seen:  # as swh's journal client: the listings as read back, changed, last_seen kept
            for o in batch:
                known = (lister, o["url"], o["visit_type"]) in self.model.listings
                o["last_seen"] = ({"$last_seen": [lister, o["url"], o["visit_type"]]} if known and r.random() < 0.85
                                  else self.dt(-3, 0, self.clock))
            if r.random() < 0.04:
                batch[-1] = dict(batch[-1], last_seen=None)  # swh's store refuses it (last_seen is NOT NULL)
        return Op("record_listed_origins", {"listed_origins": batch, "update_last_seen": update_last_seen})

    def get_listed_origins(self) -> Op:
        r = self.rng
        args: dict[str, Any] = {"lister_id": {"$lister": self.lister()} if r.random() < 0.6 else None,
                                "url": None, "urls": None, "enabled": r.choice([True, True, False, None]),
                                "limit": r.choice([5, 13, 40, 1000]), "page_token": None}
        if args["lister_id"] is None:
            args["limit"] = 1000  # one page: without a lister, pages follow the listers' UUIDs, which differ
        if r.random() < 0.15:
            args["url"] = r.choice(self.urls)
        elif r.random() < 0.2:
            args["urls"] = r.sample(self.urls, r.randint(0, 6))
        if args["lister_id"] is not None and r.random() < 0.25:
            args["page_token"] = [{"$lister_str": args["lister_id"]["$lister"]}, r.choice(self.urls)]
        return Op("get_listed_origins", args)

    def grab_next_visits(self) -> Op:
        r = self.rng
        self.clock += timedelta(hours=r.uniform(0, 60))
        policy = r.choice(POLICIES) if r.random() < 0.98 else "not-a-policy"
        args: dict[str, Any] = {"visit_type": r.choice(self.visit_types), "count": r.randint(1, 30), "policy": policy,
                                "enabled": r.random() < 0.85, "lister_uuid": None, "lister_name": None,
                                "lister_instance_name": None, "timestamp": self.dt(0, 0, self.clock),
                                "tablesample": None, "dry_run": r.random() < 0.25}
        how = r.random()
        label = self.lister()
        name, _, instance = label.partition("/")
        if how < 0.25 or (policy == "first_visits_after_listing" and how < 0.6):
            args["lister_uuid"] = {"$lister_str": label}
        elif how < 0.45:
            args["lister_name"] = name
        elif how < 0.6 or (policy == "first_visits_after_listing" and how < 0.95):
            args["lister_name"], args["lister_instance_name"] = name, instance
        for key, default in (("absolute_cooldown", 12 * 3600), ("scheduled_cooldown", 7 * 86400),
                             ("failed_cooldown", 14 * 86400), ("not_found_cooldown", 31 * 86400)):
            pick = r.random()
            args[key] = None if pick < 0.3 else {"$td": default} if pick < 0.6 else {"$td": r.randint(1, 20) * 3600}
        if r.random() < 0.05:  # a sample of swh's pages: its answer is random, so a dry run only
            args["tablesample"], args["dry_run"] = r.choice([10.0, 50.0]), True
        return Op("grab_next_visits", args)

    def stats_row(self) -> dict[str, Any]:
        r = self.rng
        known = [(u, v) for (_l, u, v) in self.model.listings]
        url, visit_type = r.choice(known) if known and r.random() < 0.9 else (r.choice(self.urls), r.choice(self.visit_types))
        last_visit = self.maybe(0.8, self.dt(-30, 0, self.clock))
        status = r.choice(LAST_VISIT_STATUSES)
        return {"$model": "OriginVisitStats", "url": url, "visit_type": visit_type,
                "last_successful": self.maybe(0.5, self.dt(-60, 0, self.clock)), "last_visit": last_visit,
                "last_visit_status": status, "last_scheduled": self.maybe(0.4, self.dt(-30, 0, self.clock)),
                "last_snapshot": self.maybe(0.5, {"$bytes": bytes(r.randrange(256) for _ in range(20)).hex()}),
                "next_visit_queue_position": self.maybe(0.4, r.randrange(0, 10**6)),
                "next_position_offset": r.randint(0, 10), "successive_visits": r.randint(1, 6)}

    def origin_visit_stats_upsert(self) -> Op:
        rows = [self.stats_row() for _ in range(self.rng.randint(1, 12))]
        return Op("origin_visit_stats_upsert", {"origin_visit_stats": rows})

    def origin_visit_stats_get(self) -> Op:
        r = self.rng
        known = sorted(self.model.stats) or [(r.choice(self.urls), "git")]
        ids = [list(r.choice(known)) for _ in range(r.randint(0, 8))]
        if ids and r.random() < 0.5:
            ids.append(list(ids[0]))  # asked twice
        if r.random() < 0.3:
            ids.append([r.choice(self.urls), "unknown-type"])
        return Op("origin_visit_stats_get", {"ids": ids})

    def visit_scheduler_queue_position_get(self) -> Op:
        return Op("visit_scheduler_queue_position_get", {})

    def visit_scheduler_queue_position_set(self) -> Op:
        return Op("visit_scheduler_queue_position_set", {"visit_type": self.rng.choice(self.visit_types),
                                                         "position": self.rng.randrange(0, 10**6)})

    def update_metrics(self) -> Op:
        r = self.rng
        return Op("update_metrics", {"lister_id": {"$lister": self.lister()} if r.random() < 0.4 else None,
                                     "timestamp": self.dt(-1, 1, self.clock) if r.random() < 0.7 else None})

    def get_metrics(self) -> Op:
        r = self.rng
        return Op("get_metrics", {"lister_id": {"$lister": self.lister()} if r.random() < 0.4 else None,
                                  "visit_type": self.maybe(0.4, r.choice(self.visit_types))})

    def create_task_type(self) -> Op:
        r = self.rng
        variants = task_type_variants()
        if not self.odd_types:
            variants = {n: v for n, v in variants.items() if n in TYPE_WEIGHTS}
        name = r.choices(sorted(variants), [TYPE_WEIGHTS.get(n, 1) for n in sorted(variants)])[0]
        fields = variants[name]
        body: dict[str, Any] = {"$model": "TaskType", "type": name, "description": f"the {name} tasks ü",
                                "backend_name": f"swh.tasks.{name}"}
        for key, value in fields.items():
            body[key] = {"$td": value} if key.endswith("interval") or key == "retry_delay" else value
        return Op("create_task_type", {"task_type": body})

    def get_task_type(self) -> Op:
        pool = self.model.task_types + ["never-made"]
        return Op("get_task_type", {"task_type_name": self.rng.choice(pool)})

    def get_task_types(self) -> Op:
        return Op("get_task_types", {})

    def new_task(self) -> dict[str, Any]:
        r = self.rng
        types = self.model.task_types or ["load-git"]
        task: dict[str, Any] = {"$model": "Task", "type": r.choice(types) if r.random() < 0.97 else "never-made",
                                "arguments": {"$model": "TaskArguments",
                                              "args": r.choice([[], [1], ["ü", 2], [r.randrange(40)]]),
                                              "kwargs": r.choice([{}, {"url": r.choice(self.urls)},
                                                                  {"a": 1, "b": [True, None]}])},
                                "next_run": self.dt(-3, 3, self.clock)}
        if r.random() < 0.7:
            task["policy"] = r.choice(["recurring", "oneshot"])
        priority = r.choice(PRIORITIES)
        if priority:
            task["priority"] = priority
        if r.random() < 0.12:
            task["status"] = r.choice(TASK_STATUSES)
        if r.random() < 0.1:
            task["retries_left"] = r.randint(0, 3)
        return task

    def create_tasks(self) -> Op:
        r = self.rng
        tasks = [self.new_task() for _ in range(r.randint(1, 8))]
        if r.random() < 0.05:
            tasks.append(dict(r.choice(tasks)))  # the same task twice in one batch
        if self.sent_tasks and r.random() < 0.25:  # sent again, as it was or for another next_run
            again = dict(r.choice(self.sent_tasks))
            if r.random() < 0.5:
                again["next_run"] = self.dt(-3, 3, self.clock)
            tasks.append(again)
        self.sent_tasks = (self.sent_tasks + tasks)[-40:]
        return Op("create_tasks", {"tasks": tasks, "policy": r.choice(["recurring", "oneshot"])})

    def search_tasks(self) -> Op:
        r = self.rng
        args: dict[str, Any] = {}
        if r.random() < 0.2:
            args["task_id"] = self.task() if r.random() < 0.5 else self.tasks(4)
        if r.random() < 0.4 and self.model.task_types:
            args["task_type"] = r.choice(self.model.task_types) if r.random() < 0.6 else r.sample(
                self.model.task_types, r.randint(1, len(self.model.task_types)))
        if r.random() < 0.3:
            args["status"] = r.choice(TASK_STATUSES) if r.random() < 0.6 else r.sample(TASK_STATUSES, 2)
        if r.random() < 0.2:
            args["priority"] = r.choice(["high", "normal", "low"]) if r.random() < 0.6 else ["high", "low"]
        if r.random() < 0.2:
            args["policy"] = r.choice(["recurring", "oneshot"])
        if r.random() < 0.2:
            args["before"] = self.dt(-2, 3, self.clock)
        if r.random() < 0.2:
            args["after"] = self.dt(-4, 1, self.clock)
        if r.random() < 0.25:
            args["limit"] = r.randint(1, 6)
        return Op("search_tasks", args)

    def get_tasks(self) -> Op:
        return Op("get_tasks", {"task_ids": self.tasks()})

    def _ready(self, name: str) -> Op:
        r = self.rng
        types = self.model.task_types or ["load-git"]
        self.clock += timedelta(hours=r.uniform(0, 12))
        return Op(name, {"task_type": r.choice(types), "timestamp": self.dt(-1, 2, self.clock),
                         "num_tasks": r.choice([None, 1, 2, 3, 5, 10])})

    def peek_ready_tasks(self) -> Op:
        return self._ready("peek_ready_tasks")

    def grab_ready_tasks(self) -> Op:
        return self._ready("grab_ready_tasks")

    def peek_ready_priority_tasks(self) -> Op:
        return self._ready("peek_ready_priority_tasks")

    def grab_ready_priority_tasks(self) -> Op:
        return self._ready("grab_ready_priority_tasks")

    def set_status_tasks(self) -> Op:
        r = self.rng
        status = r.choice(TASK_STATUSES) if r.random() < 0.9 else "bogus"
        return Op("set_status_tasks", {"task_ids": self.tasks(4) if r.random() < 0.7 else [], "status": status,
                                       "next_run": self.dt(-2, 2, self.clock) if r.random() < 0.3 else None,
                                       "except_completed_tasks": r.random() < 0.3})

    def disable_tasks(self) -> Op:
        return Op("disable_tasks", {"task_ids": self.tasks(3)})

    def new_backend_id(self) -> str:
        self.backend_ids += 1
        return f"celery-{self.backend_ids}-ü"

    def schedule_task_run(self) -> Op:
        r = self.rng
        backend_id = self.new_backend_id() if r.random() < 0.9 else self.backend_id()
        return Op("schedule_task_run", {"task_id": self.task(), "backend_id": backend_id, "metadata": self.metadata(),
                                        "timestamp": self.dt(-1, 1, self.clock) if r.random() < 0.8 else None})

    def mass_schedule_task_runs(self) -> Op:
        r = self.rng
        runs = [{"$model": "TaskRun", "task": self.task(), "backend_id": self.new_backend_id(),
                 "scheduled": self.dt(-1, 1, self.clock), "metadata": self.maybe(0.4, {"m": r.randrange(5)})}
                for _ in range(r.randint(1, 5))]
        return Op("mass_schedule_task_runs", {"task_runs": runs})

    def start_task_run(self) -> Op:
        r = self.rng
        return Op("start_task_run", {"backend_id": self.backend_id(), "metadata": self.metadata(),
                                     "timestamp": self.dt(0, 1, self.clock) if r.random() < 0.85 else None})

    def end_task_run(self) -> Op:
        r = self.rng
        status = r.choice(RUN_END_STATUSES) if r.random() < 0.95 else r.choice(["scheduled", "started"])
        return Op("end_task_run", {"backend_id": self.backend_id(), "status": status, "metadata": self.metadata(),
                                   "timestamp": self.dt(0, 2, self.clock)})

    def get_task_runs(self) -> Op:
        r = self.rng
        return Op("get_task_runs", {"task_ids": self.tasks(6), "limit": r.choice([None, None, 1, 2, 4])})

    def filter_task_to_archive(self) -> Op:
        r = self.rng
        after = self.clock - timedelta(days=r.uniform(2, 10))
        before = self.clock + timedelta(days=r.uniform(0, 5))

        def form(value: datetime) -> Any:
            pick = r.random()
            if pick < 0.35:
                return {"$dt": value.isoformat()}
            if pick < 0.55:
                return value.date().isoformat()
            if pick < 0.8:
                return value.astimezone(r.choice(ZONES)).isoformat()
            return value.replace(tzinfo=None).isoformat(timespec="seconds")

        return Op("filter_task_to_archive", {"after_ts": form(after), "before_ts": form(before),
                                             "limit": r.randint(1, 10)})

    def delete_archived_tasks(self) -> Op | None:
        rows = self.model.archived
        if not rows:
            return None
        picked = self.rng.sample(rows, self.rng.randint(1, min(4, len(rows))))
        return Op("delete_archived_tasks", {"task_ids": [{"task_id": {"$task": t}, "task_run_id": {"$run": run}}
                                                         for t, run in picked]})

    def bad_input(self) -> Op:
        """Bad input through the client's ``_post`` (or raw HTTP): what both must refuse."""
        r = self.rng
        lister = self.lister()
        cases: list[tuple[str, Any]] = [
            ("task_type/create", {"task_type": {"swhtype": "scheduler_model", "d": {
                "__type__": "TaskType", "type": "bad", "description": 3, "backend_name": "x"}}}),
            ("task/create", {"tasks": [{"swhtype": "scheduler_model", "d": {
                "__type__": "Task", "type": "load-git", "arguments": {"args": [], "kwargs": {}},
                "next_run": "tomorrow"}}], "policy": "recurring"}),
            ("task/create", {"tasks": [], "policy": "recurring", "unknown_field": 1}),
            ("task/get", {}),
            ("task/get", {"task_ids": "xy"}),
            ("origins/get", {"url": "https://nowhere.example/x", "limit": "5"}),
            ("task/set_status", {"task_ids": [1], "status": 7}),
            ("task_run/end", {"backend_id": None, "status": "eventful"}),
            ("lister/get_or_create", {"name": ["a"], "instance_name": None}),
            ("origins/record", {"listed_origins": [{"swhtype": "scheduler_model", "d": {
                "__type__": "ListedOrigin", "lister_id": {"$lister": lister}, "url": "https://x.example/a",
                "visit_type": "git", "enabled": "yes"}}]}),
            ("origins/record", {"listed_origins": [{"swhtype": "scheduler_model", "d": {
                "__type__": "Lister", "name": "x", "instance_name": "y"}}]}),
            ("origins/grab_next", {"visit_type": "git", "count": "ten", "policy": "oldest_scheduled_first"}),
            ("origins/grab_next", {"visit_type": "git", "policy": "oldest_scheduled_first"}),
            ("visit_stats/upsert", {"origin_visit_stats": [{"swhtype": "scheduler_model", "d": {
                "__type__": "OriginVisitStats", "url": "https://x.example/a", "visit_type": "git",
                "last_visit_status": "exploded"}}]}),
            ("visit_scheduler/set", {"visit_type": "git", "position": "first"}),
            ("scheduler_metrics/get", {"lister_id": None, "visit_type": None, "bogus": True}),
            ("lister/update", {"lister": {"swhtype": "scheduler_model", "d": {
                "__type__": "Lister", "name": "x", "instance_name": "y", "current_state": [1]}}}),
        ]
        endpoint, data = r.choice(cases)
        if r.random() < 0.15:
            return Op("raw", {"endpoint": endpoint, "body": r.choice(["not msgpack \xff", "{\"task_ids\": [1,"]),
                              "content_type": r.choice(["application/x-msgpack", "application/json"])})
        return Op("post", {"endpoint": endpoint, "data": data})
