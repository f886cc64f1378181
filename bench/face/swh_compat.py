"""swh-scheduler 3.6.0's own test suite against Ostinato's swh-rpc face (``make swh-compat``).

1. makes (or reuses) the peer's virtual environment, ``.bench-venvs/swh-scheduler-3.6.0``
   (``bench/common/peer.py``), with swh-scheduler's test requirements;
2. for each store (a SQLite file, and a PostgreSQL cluster started here as the tests
   start theirs): ``ostinato db init``, an admin token, then ``ostinato swh-rpc serve
   --test-reset`` on a free loopback port;
3. runs swh-scheduler's own ``test_scheduler.py`` (``TestScheduler``) and
   ``test_journal_client.py`` in the peer's interpreter, through its own
   ``RemoteScheduler`` (``bench/face/swh_compat/conftest.py``), unchanged;
4. prints passed / failed / exempted per file and store, and writes them, with the
   names of the failed tests, as JSON under ``bench/results/``.

Exit status 1 when a test fails: every one must pass (``make test`` runs it on both stores).
A test may only be exempted (``EXEMPTED`` of ``bench/face/swh_compat/conftest.py``, with its
reason) if it inspects swh-scheduler's storage internals rather than its behaviour.

    bench/face/swh_compat.py                       # both stores
    bench/face/swh_compat.py --stores sqlite
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import xml.etree.ElementTree as ET
from contextlib import ExitStack
from datetime import date
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from bench.common import peer as peer_venv
from bench.common.processes import OSTINATO, free_port, ostinato

REPO = Path(__file__).resolve().parents[2]
HARNESS = Path(__file__).resolve().parent / "swh_compat"
REQUIREMENTS = [f"swh-scheduler[journal,pytest]=={peer_venv.PEER_VERSION}", "pytest-mock"]
FILES = {"test_scheduler.py": "test_scheduler_remote.py", "test_journal_client.py": "test_journal_client_remote.py"}

def say(text: str) -> None:
    print(text, flush=True)


def start_server(db: str, stack: ExitStack, log_dir: Path) -> tuple[str, str]:
    """An initialised database, an admin token, and ``swh-rpc serve`` on it; returns (url, token)."""
    ostinato(db, "db", "init")
    token = json.loads(ostinato(db, "token", "add", "swh-compat", "--scope", "admin", "--json"))["secret"]
    port = free_port()
    log = (log_dir / f"server-{port}.log").open("w")
    process = subprocess.Popen([str(OSTINATO), "--db", db, "swh-rpc", "serve", "--host", "127.0.0.1", "--port", str(port),
                                "--test-reset"], stdout=log, stderr=subprocess.STDOUT)

    def stop() -> None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()

    stack.callback(stop)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"swh-rpc serve exited: {(log_dir / f'server-{port}.log').read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return url, token
        except OSError:
            time.sleep(0.2)
    raise SystemExit("swh-rpc serve did not answer within 60 s")


def run_file(python: Path, module: str, url: str, token: str, work: Path) -> dict[str, Any]:
    report = work / f"{module}.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "OSTINATO_"))}
    env.update(OSTINATO_SWH_URL=url, OSTINATO_SWH_TOKEN=token)
    start = time.monotonic()
    subprocess.run([str(python), "-m", "pytest", "-c", "pytest.ini", "-q", "-p", "no:randomly", module,
                    f"--junitxml={report}"], cwd=HARNESS, env=env, stdout=subprocess.DEVNULL, check=False)
    seconds = time.monotonic() - start
    passed, failed, exempted = [], [], []
    for case in ET.parse(report).getroot().iter("testcase"):
        name = case.get("name", "")
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(name)
        elif case.find("skipped") is not None:
            exempted.append(f"{name}: {case.find('skipped').get('message', '')}")  # type: ignore[union-attr]  # checked not None just above
        else:
            passed.append(name)
    return {"passed": len(passed), "failed": len(failed), "exempted": len(exempted), "failed_tests": failed,
            "exempted_tests": exempted, "seconds": round(seconds, 1)}


def run_store(store: str, python: Path, work: Path) -> dict[str, Any]:
    with ExitStack() as stack:
        if store == "sqlite":
            db = f"sqlite:///{work / 'swh-compat.db'}"
        else:
            from test_servers.postgres import PostgresCluster

            cluster = stack.enter_context(PostgresCluster())
            cluster.create_database("swh_compat")
            db = cluster.dsn("swh_compat")
        url, token = start_server(db, stack, work)
        return {source: run_file(python, module, url, token, work) for source, module in FILES.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="sqlite,postgresql", help="comma-separated: sqlite, postgresql")
    parser.add_argument("--peer-venv", type=Path, default=peer_venv.PEER_VENV)
    parser.add_argument("--json-out", type=Path, help="default: bench/results/swh-compat-<date>-<commit>.json")
    args = parser.parse_args(argv)
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if not stores or set(stores) - {"sqlite", "postgresql"}:
        parser.error("--stores: sqlite, postgresql or both")
    began = time.monotonic()
    python = peer_venv.ensure_peer_venv(args.peer_venv, REQUIREMENTS, say=say)
    results: dict[str, Any] = {}
    work = Path(tempfile.mkdtemp(prefix="swh-compat-"))
    try:
        for store in stores:
            say(f"{store}: swh-scheduler {peer_venv.PEER_VERSION}'s tests through its RemoteScheduler")
            results[store] = run_store(store, python, work)
            for source, counts in results[store].items():
                say(f"  {source:<24} {counts['passed']:>4} passed  {counts['failed']:>3} failed  "
                    f"{counts['exempted']:>2} exempted  ({counts['seconds']} s)")
                for name in counts["failed_tests"]:
                    say(f"      failed: {name}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = args.json_out or REPO / "bench" / "results" / f"swh-compat-{date.today()}-{commit or 'nogit'}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"peer": f"swh-scheduler=={peer_venv.PEER_VERSION}", "commit": commit, "results": results,
                               "failed": sorted({n for r in results.values() for c in r.values() for n in c["failed_tests"]}),
                               "seconds": round(time.monotonic() - began, 1)}, indent=2) + "\n")
    total = {k: sum(c[k] for r in results.values() for c in r.values()) for k in ("passed", "failed", "exempted")}
    say(f"written: {out}")
    say(f"swh-compat: {total['passed']} passed, {total['failed']} failed, {total['exempted']} exempted "
        f"in {time.monotonic() - began:.0f} s")
    return 1 if total["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
