"""A differential harness: the same seeded, random operations through swh's own client to swh-scheduler's
server and to Ostinato's ``swh-rpc serve``, every answer compared (``bench/face/swh_diff.py``).

1. makes (or reuses) the peer's virtual environment (``.bench-venvs/swh-scheduler-3.6.0``,
   ``test_servers.swh_peer``) and starts one throwaway PostgreSQL cluster;
2. makes the peer's database with its own tools (``swh db create``, ``swh db init``) and serves it with
   swh-scheduler's own Flask app under gunicorn (one sync worker): the reference;
3. serves Ostinato's face, ``ostinato swh-rpc serve --test-reset`` with an admin token, on a SQLite file
   and on a database of the same cluster (``--stores``);
4. runs ``bench/face/swh_diff_client.py`` in the peer's interpreter: for each seed it empties every database,
   draws ``--ops`` operations from ``random.Random(seed)`` (``bench/face/swh_diff_ops.py``), sends each to
   every server through ``RemoteScheduler`` and compares each face's answer with the reference's
   (``bench/face/swh_diff_judge.py``: plain data ``bench/face/swh_diff_compare.py``, grabs up to ties
   ``bench/face/swh_diff_grabs.py``, states made alike again ``bench/face/swh_diff_reconcile.py``, what a difference
   reaches ``bench/face/swh_diff_scope.py``), and ends each seed comparing the whole states;
5. prints, per store, the operations, those answered alike, those explained by a named deliberate
   difference (``DELIBERATE`` of ``bench/face/swh_diff_compare.py``) and the unexplained ones (apart: those
   following from an earlier difference of state), each kind with a reproduction (seed, operation index,
   arguments, both answers, the command that replays it), and writes all of it as JSON under
   ``bench/results/`` (``swh-diff-<date>-<commit>.json``).

Exit status 1 when a difference is unexplained or a server stops answering. ``--self-test`` adds a second
swh-scheduler server as if it were a face: any difference there is the harness's own.

    .venv/bin/python bench/face/swh_diff.py                                   # 10 seeds × 300 operations
    .venv/bin/python bench/face/swh_diff.py --seeds 3 --ops 150               # what the test suite runs
    .venv/bin/python bench/face/swh_diff.py --seeds 1 --first-seed 7 --ops 34 --base 2026-11-27T12:39:00+00:00 \
        --stores sqlite --trace trace.jsonl                              # a reproduction, every answer kept
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.face.swh_compat import start_server
from bench.face.vs_swh_rpc import start_peer_server
from test_servers import swh_peer

REPO = Path(__file__).resolve().parents[2]
CLIENT = Path(__file__).resolve().parent / "swh_diff_client.py"
PEER_DB = "swh_scheduler"
OSTINATO_DB = "ostinato"


def say(text: str) -> None:
    print(text, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="how many seeds (default 10)")
    parser.add_argument("--first-seed", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--ops", type=int, default=300, help="operations per seed (default 300)")
    parser.add_argument("--stores", default="sqlite,postgresql", help="Ostinato's stores: sqlite, postgresql or both")
    parser.add_argument("--base", help="the instant the generated times are around (ISO, with its zone; default: now, "
                                       "to the minute); a reproduction needs the run's own")
    parser.add_argument("--self-test", action="store_true",
                        help="also compare swh-scheduler with a second swh-scheduler (the harness's own check: "
                             "any difference there is the harness's)")
    parser.add_argument("--trace", type=Path, help="write every operation and every server's plain answer to this "
                                                   "file (JSON lines), to read a reproduction in full")
    parser.add_argument("--peer-venv", type=Path, default=swh_peer.default_peer_venv(REPO),
                        help="the peer's virtual environment (made on first use)")
    parser.add_argument("--json-out", type=Path, help="default: bench/results/swh-diff-<date>-<commit>.json")
    args = parser.parse_args(argv)
    args.store_list = [s.strip() for s in args.stores.split(",") if s.strip()]
    if not args.store_list or set(args.store_list) - {"sqlite", "postgresql"}:
        parser.error("--stores: sqlite, postgresql or both")
    if args.seeds < 1 or args.ops < 1:
        parser.error("--seeds and --ops must be at least 1")
    if args.base is None:
        args.base = datetime.now(UTC).replace(second=0, microsecond=0).isoformat()
    elif datetime.fromisoformat(args.base).tzinfo is None:
        parser.error("--base needs a zone (e.g. +00:00)")
    return args


def run_client(python: Path, config: dict[str, Any], work: Path) -> dict[str, Any]:
    """``bench/face/swh_diff_client.py`` in the peer's interpreter; its progress lines go to our output."""
    config_path, result_path = work / "client-config.json", work / "client-result.json"
    config_path.write_text(json.dumps({**config, "result": str(result_path)}))
    process = subprocess.Popen([str(python), str(CLIENT), str(config_path)], cwd=REPO, env=swh_peer.peer_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    assert process.stdout is not None
    tail: list[str] = []
    for line in process.stdout:
        tail = (tail + [line.rstrip()])[-60:]
        if line.startswith("swh-diff:"):
            say("  " + line.rstrip()[len("swh-diff:"):].strip())
    code = process.wait()
    if code != 0 or not result_path.exists():
        raise SystemExit(f"the harness's client failed (exit {code}):\n" + "\n".join(tail))
    return json.loads(result_path.read_text())


def print_summary(result: dict[str, Any]) -> None:
    names = sorted({n for counts in result["counts"].values() for n in counts["deliberate"]})
    header = ["store", "operations", "equal", "tie reconciled", *names, "unexplained", "after a divergence"]
    rows = []
    for store, counts in result["counts"].items():
        rows.append([store, counts["operations"], counts["equal"], counts["tie_reconciled"],
                     *(counts["deliberate"].get(n, 0) for n in names), counts["unexplained"],
                     counts["after_divergence"]])
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    say("  ".join(str(h).rjust(w) if i else str(h).ljust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True))))
    for row in rows:
        say("  ".join(str(v).rjust(w) if i else str(v).ljust(w) for i, (v, w) in enumerate(zip(row, widths, strict=True))))
    for name in names:
        say(f"  deliberate {name}: {result['deliberate'][name]}")
    kinds: dict[str, list[dict[str, Any]]] = {}
    for diff in result["unexplained"]:
        if not diff.get("after"):
            kinds.setdefault(diff["kind"], []).append(diff)
    for kind, diffs in sorted(kinds.items()):
        first = min(diffs, key=lambda d: (d["seed"], d["index"]))
        stores = "+".join(sorted({d["store"] for d in diffs}))
        say(f"  unexplained ({stores}) ×{len(diffs)}: {kind}")
        say(f"      e.g. seed {first['seed']} op {first['index']}: {first['op']}"
            f"({json.dumps(first['args'], ensure_ascii=False)[:240]})")
        say(f"      swh:  {json.dumps(first['peer'], ensure_ascii=False)[:240]}")
        say(f"      face: {json.dumps(first['ours'], ensure_ascii=False)[:240]}")
        say(f"      where: {'; '.join(first['where'])[:240]}")
        say(f"      replay: .venv/bin/python bench/face/swh_diff.py --seeds 1 --first-seed {first['seed']} --ops "
            f"{first['index'] + 1} --base {result['base']} --stores {first['store']} --trace swh-diff-trace.jsonl")
    after = sum(1 for diff in result["unexplained"] if diff.get("after"))
    if after:
        say(f"  {after} more difference(s) after a face's state had diverged (in the JSON, with the cause: `after`)")
    for note in result["harness_notes"][:5]:
        say(f"  harness note: {note[:400]}")
    for error in result["server_errors"]:
        say(f"  server error: {error}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    began = time.monotonic()
    if shutil.which("psql") is None:
        raise SystemExit("psql is missing (swh db create runs it): scripts/install-system-deps installs it")
    python = swh_peer.ensure_peer_venv(args.peer_venv, log=say)
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "nogit"
    work = Path(tempfile.mkdtemp(prefix="swh-diff-"))
    try:
        with ExitStack() as stack:
            from test_servers.postgres import PostgresCluster

            cluster = stack.enter_context(PostgresCluster())
            peer_dsn = swh_peer.create_peer_database(python, cluster.dsn(), PEER_DB, log=lambda _: None)
            servers: list[dict[str, Any]] = [{"name": "swh", "url": start_peer_server(python, peer_dsn, work, stack),
                                              "dsn": peer_dsn}]
            if args.self_test:
                again = swh_peer.create_peer_database(python, cluster.dsn(), PEER_DB + "_again", log=lambda _: None)
                servers.append({"name": "swh-again", "url": start_peer_server(python, again, work, stack, "again"),
                                "dsn": again})
            for store in args.store_list:
                if store == "sqlite":
                    db = f"sqlite:///{work / 'ostinato.db'}"
                else:
                    cluster.create_database(OSTINATO_DB)
                    db = cluster.dsn(OSTINATO_DB)
                url, token = start_server(db, stack, work)
                servers.append({"name": store, "url": url, "token": token})
            say(f"servers up in {time.monotonic() - began:.0f} s: " + ", ".join(f"{s['name']} {s['url']}" for s in servers))
            seeds = list(range(args.first_seed, args.first_seed + args.seeds))
            config = {"servers": servers, "seeds": seeds, "ops": args.ops, "base": args.base,
                      "trace": str(args.trace.resolve()) if args.trace else None}
            result = {**run_client(python, config, work), "base": args.base}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    seconds = round(time.monotonic() - began, 1)
    out = args.json_out or REPO / "bench" / "results" / f"swh-diff-{date.today()}-{commit}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    document = {"peer": f"swh-scheduler=={swh_peer.PEER_VERSION}", "commit": commit, "seeds": seeds, "ops": args.ops,
                "base": args.base, "stores": args.store_list, "seconds": seconds, **result}
    out.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    print_summary(result)
    unexplained = sum(c["unexplained"] + c["after_divergence"] for c in result["counts"].values())
    say(f"written: {out}")
    say(f"swh-diff: {sum(c['operations'] for c in result['counts'].values())} operations, {unexplained} unexplained, "
        f"{len(result['server_errors'])} server errors in {seconds:.0f} s")
    return 1 if unexplained or result["server_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
