"""The client of the differential harness (``bench/face/swh_diff.py``), in the peer's own interpreter.

Standard library and swh's packages only (``.bench-venvs/swh-scheduler-3.6.0/bin/python``): nothing of
Ostinato is imported. Given a JSON configuration (the servers' URLs, the Ostinato faces' tokens, the
reference's database, the seeds, the operations per seed, the base instant), for each seed it

1. empties every database: the reference's through SQL (its tables truncated, identities restarted,
   its version tables kept; task run ids start at 1,000,001 so that no run id is a task id: swh's
   ``delete_archived_tasks`` passes the two kinds of ids in one list), each face's through
   ``POST /ostinato-test/reset``;
2. draws operations (``bench/face/swh_diff_ops.py``) and sends each to every server through
   ``RemoteScheduler`` (retries off: a retried write would be sent twice), timing each call;
3. compares each face's answer with the reference's (``bench/face/swh_diff_compare.py``; grabs
   ``bench/face/swh_diff_grabs.py``), reconciling the servers' states after a grab that picked other rows
   among equal keys, and ends the seed with a comparison of the whole state of every server.

It writes the counts and every difference as JSON to the configuration's ``result`` path and prints
``swh-diff: …`` progress lines.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.face.swh_diff_compare import DELIBERATE, Side, error_plain
from bench.face.swh_diff_judge import Judge
from bench.face.swh_diff_ops import Generator, Op

UNKNOWN_ID = 2**31 - 7  # what a face is sent for a task or run it never paired
UNKNOWN_LISTER = uuid.UUID("00000000-0000-4000-8000-0000000000ff")
PEER_TABLES = ("task_run", "task", "task_type", "listed_origins", "origin_visit_stats", "visit_scheduler_queue_position",
               "scheduler_metrics", "listers")


class ServerDown(Exception):
    pass


class Server:
    """One server, through swh's own client."""

    def __init__(self, spec: dict[str, Any], windows: list[tuple[float, float, int]]) -> None:
        from swh.scheduler.api.client import RemoteScheduler

        self.windows = windows  # shared by every server: a stamp is labelled by the operation it falls in
        self.name, self.url, self.dsn = spec["name"], spec["url"], spec.get("dsn")
        self.headers = {"Authorization": f"Bearer {spec['token']}"} if spec.get("token") else {}
        self.client = RemoteScheduler(url=self.url, timeout=60, enable_requests_retry=False,
                                      session_kwargs={"headers": self.headers} if self.headers else None)
        self.side = Side(self.name, windows=windows)

    def reset(self) -> None:
        self.windows.clear()
        self.side = Side(self.name, windows=self.windows)
        if self.dsn:
            import psycopg

            with psycopg.connect(self.dsn, autocommit=True) as conn:
                conn.execute(f"TRUNCATE {', '.join(PEER_TABLES)} RESTART IDENTITY CASCADE")
                conn.execute("ALTER SEQUENCE task_run_id_seq RESTART WITH 1000001")
        else:
            import requests

            requests.post(self.url + "ostinato-test/reset", headers=self.headers, timeout=60).raise_for_status()

    # -- materialising the abstract arguments ----------------------------------------
    def value(self, v: Any) -> Any:
        from swh.scheduler import model

        if isinstance(v, list):
            return [self.value(x) for x in v]
        if not isinstance(v, dict):
            return v
        if "$dt" in v:
            return datetime.fromisoformat(v["$dt"])
        if "$td" in v:
            return timedelta(seconds=v["$td"])
        if "$bytes" in v:
            return bytes.fromhex(v["$bytes"])
        if "$int" in v:
            return v["$int"]
        if "$lister" in v or "$lister_str" in v:
            known = self.side.ids("lister").get(v.get("$lister") or v.get("$lister_str"))
            found = uuid.UUID(known) if known else UNKNOWN_LISTER
            return found if "$lister" in v else str(found)
        if "$task" in v:
            return self.side.ids("task").get(v["$task"], UNKNOWN_ID)
        if "$last_seen" in v:
            return self.side.listing_seen.get(tuple(v["$last_seen"]))
        if "$run" in v:
            return self.side.ids("run").get(v["$run"], UNKNOWN_ID)
        if "$lister_obj" in v:
            label = v["$lister_obj"]
            current = self.side.lister_objects.get(label)
            if current is None:
                name, _, instance = label.partition("/")
                current = model.Lister(name=name, instance_name=instance)
            changed = current.evolve(**{k: self.value(x) for k, x in v["set"].items()})
            if v.get("stale"):
                history = self.side.lister_updated.get(label, [])
                older = history[-2] if len(history) > 1 else (current.updated or datetime.now().astimezone()) - timedelta(days=1)
                changed = changed.evolve(updated=older)
            return changed
        if "$model" in v:
            fields = {k: self.value(x) for k, x in v.items() if k != "$model"}
            return getattr(model, v["$model"])(**fields)
        return {k: self.value(x) for k, x in v.items()}

    # -- calls -----------------------------------------------------------------------
    def call(self, index: int, op: Op) -> tuple[Any, dict[str, Any] | None]:
        """``op`` on this server: (answer, None) or (None, the error as plain data)."""
        args = self.value(op.args)
        start = time.time()
        try:
            if op.name == "post":
                answer = self.client._post(op.args["endpoint"], args["data"])
            elif op.name == "raw":
                answer = self.raw(args)
            elif op.name == "get_listed_origins":
                answer = self.walk_listed(args)
            elif op.name == "filter_task_to_archive":
                answer = self.walk_archive(args)
            else:
                answer = getattr(self.client, op.name)(**args)
            return answer, None
        except Exception as exc:
            import requests

            cause = exc.args[0] if exc.args else None
            if isinstance(exc, requests.RequestException) or isinstance(cause, requests.RequestException):
                raise ServerDown(f"{self.name}: {exc!r}") from exc
            return None, error_plain(exc)
        finally:
            self.windows.append((start, time.time(), index))

    def raw(self, args: dict[str, Any]) -> Any:
        import requests

        response = requests.post(self.url + args["endpoint"], data=args["body"].encode("utf-8", "surrogatepass"),
                                 headers={**self.headers, "Content-Type": args["content_type"],
                                          "Accept": "application/x-msgpack"}, timeout=60)
        if response.status_code >= 400:
            from swh.core.api import RemoteException

            raise RemoteException(payload=self.client._decode_response(response, check_status=False)
                                  if response.headers.get("content-type", "").startswith("application/")
                                  else response.text[:200], response=response)
        return self.client._decode_response(response)

    def walk_listed(self, args: dict[str, Any]) -> list[Any]:
        pages = []
        for _ in range(60):
            page = self.client.get_listed_origins(**args)
            pages.append(page)
            if page.next_page_token is None:
                break
            args = {**args, "page_token": page.next_page_token}
        return pages

    def walk_archive(self, args: dict[str, Any]) -> list[Any]:
        pages = []
        for _ in range(12):
            page = self.client.filter_task_to_archive(**args)
            pages.append(page)
            if not page.get("next_page_token"):
                break
            args = {**args, "page_token": page["next_page_token"]}
        return pages


class Run:
    """The seeds, one after the other, over every server."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        windows: list[tuple[float, float, int]] = []
        self.servers = [Server(spec, windows) for spec in config["servers"]]
        self.peer, self.faces = self.servers[0], self.servers[1:]
        self.base = datetime.fromisoformat(config["base"])
        self.counts = {f.name: {"operations": 0, "equal": 0, "tie_reconciled": 0, "deliberate": {}, "unexplained": 0,
                                "after_divergence": 0}
                       for f in self.faces}
        self.per_op: dict[str, dict[str, dict[str, int]]] = {}
        self.unexplained: list[dict[str, Any]] = []
        self.deliberate_seen: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.server_errors: list[str] = []
        self.trace = open(config["trace"], "w", encoding="utf-8") if config.get("trace") else None

    def tally(self, face: str, op: str, outcome: str) -> None:
        counts = self.counts[face]
        counts["operations"] += 1
        if outcome in ("equal", "tie_reconciled", "unexplained", "after_divergence"):
            counts[outcome] += 1
        else:
            counts["deliberate"][outcome] = counts["deliberate"].get(outcome, 0) + 1
        per = self.per_op.setdefault(op, {}).setdefault(face, {})
        per[outcome] = per.get(outcome, 0) + 1

    def seed(self, seed: int) -> None:
        for server in self.servers:
            server.reset()
        gen = Generator(seed, self.base)
        judge = Judge(self, seed, gen.model)
        for index in range(self.config["ops"]):
            op = gen.next()
            judge.step(index, op)
        judge.final_state(self.config["ops"])

    def main(self) -> dict[str, Any]:
        began = time.monotonic()
        for seed in self.config["seeds"]:
            started = time.monotonic()
            try:
                self.seed(seed)
            except ServerDown as exc:
                self.server_errors.append(f"seed {seed}: {exc}")
                print(f"swh-diff: seed {seed}: a server stopped answering: {exc}", flush=True)
                break
            summary = ", ".join(f"{f}: {c['unexplained']} unexplained (+{c['after_divergence']} after a divergence)"
                                for f, c in self.counts.items())
            print(f"swh-diff: seed {seed} done in {time.monotonic() - started:.1f} s (so far {summary})", flush=True)
        if self.trace:
            self.trace.close()
        examples: dict[str, list[dict[str, Any]]] = {}
        for seen in self.deliberate_seen:
            if len(examples.setdefault(seen["deliberate"], [])) < 5:
                examples[seen["deliberate"]].append(seen)
        return {"counts": self.counts, "per_operation": self.per_op, "unexplained": self.unexplained,
                "deliberate": {name: reason for name, (reason, _) in DELIBERATE.items()},
                "deliberate_examples": examples, "harness_notes": self.notes[:200],
                "server_errors": self.server_errors, "client_seconds": round(time.monotonic() - began, 1)}


def main() -> int:
    config = json.loads(Path(sys.argv[1]).read_text())
    run = Run(config)
    try:
        result = run.main()
    except Exception:
        traceback.print_exc()
        return 2
    Path(config["result"]).write_text(json.dumps(result, ensure_ascii=False, default=str, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
